// A fuzz-style loop over the DNS codec: valid queries mutated at random (fixed seed, so
// failures reproduce) must never crash or read out of bounds, and whatever parses must
// give a response that glibc can read. Pure computation: no I/O of any kind. Each input
// lives in a heap block of exactly its size, so that ASan or valgrind flags a read one
// byte past the end (a std::string's spare capacity would hide it).
#include <arpa/nameser.h>
#include <resolv.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/net/dns_message.h"
#include "sentry/net/dns_name.h"
#include "sentry/net/dns_test_util.h"

namespace usentry::sentry::net::dns {
namespace {

using testing::Header;
using testing::MakeQuery;
using testing::Opt;
using testing::Put16;
using testing::Wire;

std::vector<std::string> Seeds() {
  std::vector<std::string> seeds = {
      MakeQuery(1, "www.example.com", kTypeA),
      MakeQuery(2, "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p", kTypeAaaa, 1232),
      MakeQuery(3, "", kTypeA, 4096),
      MakeQuery(4, "1.0.0.127.in-addr.arpa", kTypePtr),
      MakeQuery(5, std::string(63, 'x') + "." + std::string(63, 'y'), kTypeA),
  };
  std::string opts;
  Put16(opts, 10);
  Put16(opts, 8);
  opts += "cookie!!";
  std::string q = Header(6, 0x0100, 1, 0, 0, 1) + Wire("opt.example");
  Put16(q, kTypeA);
  Put16(q, kClassIn);
  seeds.push_back(q + Opt(1400, 0, opts));
  // A response with compression pointers, to give the mutator pointers to bend.
  ParseResult r = ParseQuery(MakeQuery(7, "www.example.com", kTypeA));
  seeds.push_back(
      BuildResponse(r.query, Rcode::kNoError,
                    {ResourceRecord::Cname("", "edge.example.com", 1),
                     ResourceRecord::Address("edge.example.com", IpAddress::V4(0x01020304), 1)},
                    512));
  // The same bytes with QR cleared: a "query" that carries pointers.
  std::string as_query = seeds.back();
  as_query[2] = static_cast<char>(as_query[2] & 0x7F);
  seeds.push_back(as_query);
  return seeds;
}

std::string Mutate(std::string s, std::mt19937& rng) {
  auto pick = [&](size_t n) {
    return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng) : 0;
  };
  const int rounds = 1 + static_cast<int>(pick(4));
  for (int i = 0; i < rounds; ++i) {
    switch (pick(8)) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1 << pick(8));
        break;
      case 1:  // random byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(pick(256));
        break;
      case 2:  // a compression pointer to a random (often bad) place
        if (s.size() > 1) {
          size_t at = pick(s.size() - 1);
          size_t target = pick(s.size() + 16);
          s[at] = static_cast<char>(0xC0 | (target >> 8 & 0x3F));
          s[at + 1] = static_cast<char>(target);
        }
        break;
      case 3:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 4:  // insert random bytes
        s.insert(pick(s.size() + 1), std::string(1 + pick(8), static_cast<char>(pick(256))));
        break;
      case 5:  // delete a range
        if (!s.empty()) {
          size_t at = pick(s.size());
          s.erase(at, 1 + pick(s.size() - at));
        }
        break;
      case 6:  // a count field in the header
        if (s.size() >= kHeaderSize) {
          size_t field = 4 + 2 * pick(4);
          s[field] = static_cast<char>(pick(3) == 0 ? pick(256) : 0);
          s[field + 1] = static_cast<char>(pick(4));
        }
        break;
      case 7:  // a label length byte
        if (s.size() > kHeaderSize)
          s[kHeaderSize + pick(s.size() - kHeaderSize)] = static_cast<char>(pick(70));
        break;
    }
  }
  return s;
}

TEST(DnsFuzz, MutatedQueriesNeverBreakTheCodec) {
  const std::vector<std::string> seeds = Seeds();
  std::mt19937 rng(20261201);
  const std::vector<ResourceRecord> answers = {
      ResourceRecord::Cname("", "target.example", 60),
      ResourceRecord::Address("target.example", IpAddress::V4(0x7F000001), 60),
      ResourceRecord::Address("", *IpAddress::Parse("2001:db8::1"), 60)};
  int ok = 0, errors = 0, drops = 0;
  constexpr int kIterations = 200000;
  for (int i = 0; i < kIterations; ++i) {
    const std::string mutated = Mutate(seeds[i % seeds.size()], rng);
    // Exactly-sized copy: no slack for an over-read to land in.
    std::unique_ptr<char[]> exact(new char[mutated.size() + (mutated.empty() ? 1 : 0)]);
    std::copy(mutated.begin(), mutated.end(), exact.get());
    absl::string_view input(exact.get(), mutated.size());

    ParseResult r = ParseQuery(input);
    // Names at arbitrary offsets, too.
    if (!input.empty())
      (void)ReadName(input, std::uniform_int_distribution<size_t>(0, input.size())(rng));

    if (r.status == ParseStatus::kDrop) {
      ++drops;
      ASSERT_TRUE(input.size() < kHeaderSize || (input[2] & 0x80)) << testing::Hex(mutated);
      continue;
    }
    r.status == ParseStatus::kOk ? ++ok : ++errors;
    if (r.status == ParseStatus::kOk) {
      ASSERT_TRUE(r.query.question);
      ASSERT_LE(r.query.question->wire_name.size(), kMaxNameWireLength);
      ASSERT_EQ(TextToWire(r.query.question->name), r.query.question->wire_name)
          << r.query.question->name;
    }
    const size_t max = MaxResponseSize(r.query);
    ASSERT_GE(max, kMinUdpSize);
    ASSERT_LE(max, kMaxUdpSize);
    std::string resp = BuildResponse(r.query, r.rcode, answers, max);
    ASSERT_LE(resp.size(), max);
    ns_msg msg;
    ASSERT_EQ(ns_initparse(reinterpret_cast<const unsigned char*>(resp.data()),
                           static_cast<int>(resp.size()), &msg),
              0)
        << testing::Hex(resp);
    ASSERT_EQ(ns_msg_id(msg), r.query.id);
  }
  // The mutator must reach all three outcomes, or the loop tests little.
  EXPECT_GT(ok, kIterations / 50);
  EXPECT_GT(errors, kIterations / 50);
  EXPECT_GT(drops, kIterations / 200);
  std::printf("fuzz: %d ok, %d answered with an error, %d dropped\n", ok, errors, drops);
}

}  // namespace
}  // namespace usentry::sentry::net::dns
