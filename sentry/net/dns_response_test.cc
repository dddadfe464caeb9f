// BuildResponse: byte-for-byte against hand-written packets, and read back with glibc's
// own parser (libresolv ns_initparse/ns_parserr), which is what the app's libc uses.
#include <arpa/nameser.h>
#include <resolv.h>

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "sentry/net/dns_message.h"
#include "sentry/net/dns_name.h"
#include "sentry/net/dns_test_util.h"

namespace usentry::sentry::net::dns {
namespace {

using testing::Hex;
using testing::MakeQuery;

// "12 34 ab" -> bytes; words of other characters are literal text ("example").
std::string Packet(absl::string_view spec) {
  std::string out;
  for (absl::string_view word : absl::StrSplit(spec, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    if (word.size() == 2 && absl::ascii_isxdigit(word[0]) && absl::ascii_isxdigit(word[1])) {
      out.push_back(static_cast<char>(std::stoi(std::string(word), nullptr, 16)));
    } else {
      out.append(word.data(), word.size());
    }
  }
  return out;
}

Query Parsed(const std::string& datagram) {
  ParseResult r = ParseQuery(datagram);
  EXPECT_EQ(r.status, ParseStatus::kOk) << r.reason;
  return r.query;
}

IpAddress Ip(const char* s) { return *IpAddress::Parse(s); }

TEST(DnsBuildResponse, TwoAddressesWithEdnsByteForByte) {
  Query q = Parsed(MakeQuery(0x1234, "Example.COM", kTypeA, 1232));
  std::vector<ResourceRecord> answers = {ResourceRecord::Address("", Ip("93.184.216.34"), 300),
                                         ResourceRecord::Address("", Ip("1.2.3.4"), 60)};
  std::string got = BuildResponse(q, Rcode::kNoError, answers, MaxResponseSize(q));
  std::string want = Packet(R"(
      12 34 81 80 00 01 00 02 00 00 00 01
      07 example 03 com 00 00 01 00 01
      c0 0c 00 01 00 01 00 00 01 2c 00 04 5d b8 d8 22
      c0 0c 00 01 00 01 00 00 00 3c 00 04 01 02 03 04
      00 00 29 10 00 00 00 00 00 00 00)");
  EXPECT_EQ(got, want) << "got:\n" << Hex(got) << "\nwant:\n" << Hex(want);
}

TEST(DnsBuildResponse, CnameChainCompressesOwnerAndTarget) {
  Query q = Parsed(MakeQuery(0xABCD, "www.example.com", kTypeA));
  std::vector<ResourceRecord> answers = {
      ResourceRecord::Cname("www.example.com", "edge.example.net", 100),
      ResourceRecord::Address("edge.example.net", Ip("1.2.3.4"), 20),
      ResourceRecord::Cname("", "www.example.net", 5)};  // "example.net" is at 50 by now
  std::string got = BuildResponse(q, Rcode::kNoError, answers, 512);
  std::string want = Packet(R"(
      ab cd 81 80 00 01 00 03 00 00 00 00
      03 www 07 example 03 com 00 00 01 00 01
      c0 0c 00 05 00 01 00 00 00 64 00 12 04 edge 07 example 03 net 00
      c0 2d 00 01 00 01 00 00 00 14 00 04 01 02 03 04
      c0 0c 00 05 00 01 00 00 00 05 00 06 03 www c0 32)");
  EXPECT_EQ(got, want) << "got:\n" << Hex(got) << "\nwant:\n" << Hex(want);
}

TEST(DnsBuildResponse, NxDomainKeepsQuestionAndRdClear) {
  std::string datagram = MakeQuery(0x0101, "nope.example", kTypeAaaa);
  datagram[2] = 0;  // RD clear
  Query q = Parsed(datagram);
  std::string got = BuildResponse(q, Rcode::kNxDomain, {}, 512);
  std::string want = Packet(R"(
      01 01 80 83 00 01 00 00 00 00 00 00
      04 nope 07 example 00 00 1c 00 01)");
  EXPECT_EQ(got, want) << "got:\n" << Hex(got) << "\nwant:\n" << Hex(want);
}

TEST(DnsBuildResponse, BadVersPutsTheUpperRcodeBitsInOpt) {
  ParseResult r = ParseQuery(testing::Header(4, 0x0100, 1, 0, 0, 1) + testing::Wire("a.com") +
                             std::string("\0\1\0\1", 4) + testing::Opt(1232, 1));
  ASSERT_EQ(r.rcode, Rcode::kBadVers);
  std::string got = BuildResponse(r.query, r.rcode, {}, MaxResponseSize(r.query));
  EXPECT_EQ(got, Packet("00 04 81 80 00 00 00 00 00 00 00 01 00 00 29 10 00 01 00 00 00 00 00"))
      << Hex(got);
  // Without EDNS there is nowhere to put it: SERVFAIL.
  Query no_edns = r.query;
  no_edns.edns.reset();
  got = BuildResponse(no_edns, Rcode::kBadVers, {}, 512);
  EXPECT_EQ(got, Packet("00 04 81 82 00 00 00 00 00 00 00 00"));
}

TEST(DnsBuildResponse, UnencodableAnswersAreSkipped) {
  Query q = Parsed(MakeQuery(1, "example.com", kTypeA));
  ResourceRecord mx = ResourceRecord::Address("", Ip("1.1.1.1"), 1);
  mx.type = 15;
  ResourceRecord wrong_family = ResourceRecord::Address("", Ip("::1"), 1);
  wrong_family.type = kTypeA;
  std::vector<ResourceRecord> answers = {
      ResourceRecord::Address("a..b", Ip("1.1.1.1"), 1), mx, wrong_family,
      ResourceRecord::Cname("", std::string(64, 'x') + ".com", 1),
      ResourceRecord::Address("", Ip("9.9.9.9"), 1)};
  std::string got = BuildResponse(q, Rcode::kNoError, answers, 512);
  EXPECT_EQ(got, Packet(R"(
      00 01 81 80 00 01 00 01 00 00 00 00
      07 example 03 com 00 00 01 00 01
      c0 0c 00 01 00 01 00 00 00 01 00 04 09 09 09 09)"))
      << Hex(got);
}

TEST(DnsBuildResponse, HandBuiltQuestionNeedsOnlyItsTextName) {
  Query q;
  q.id = 0x0102;
  q.question = Question{};
  q.question->name = "a.example";
  q.question->type = kTypeA;
  q.question->qclass = kClassIn;
  std::string got =
      BuildResponse(q, Rcode::kNoError, {ResourceRecord::Address("", Ip("1.2.3.4"), 1)}, 512);
  EXPECT_EQ(got, Packet(R"(
      01 02 80 80 00 01 00 01 00 00 00 00
      01 a 07 example 00 00 01 00 01
      c0 0c 00 01 00 01 00 00 00 01 00 04 01 02 03 04)"))
      << Hex(got);
  // A name that cannot be encoded: no question, and no answer that would need it.
  q.question->name = "a..example";
  got = BuildResponse(q, Rcode::kServFail, {ResourceRecord::Address("", Ip("1.2.3.4"), 1)}, 512);
  EXPECT_EQ(got, Packet("01 02 80 82 00 00 00 00 00 00 00 00"));
}

TEST(DnsBuildResponse, TtlAboveTwoToThe31IsCapped) {
  Query q = Parsed(MakeQuery(1, "a.b", kTypeA));
  std::string got = BuildResponse(q, Rcode::kNoError,
                                  {ResourceRecord::Address("", Ip("1.2.3.4"), 0xFFFFFFFF)}, 512);
  EXPECT_EQ(got.substr(got.size() - 10, 4), Packet("7f ff ff ff"));
}

// What glibc's parser reads back from a response.
struct GlibcRecord {
  std::string name;
  int type;
  uint32_t ttl;
  std::string data;  // address text, or the expanded target name
};
struct GlibcView {
  int id, rcode, qdcount, ancount, arcount;
  bool qr, rd, ra, tc, aa;
  std::string qname;
  int qtype;
  std::vector<GlibcRecord> answers;
};

GlibcView ReadWithGlibc(const std::string& resp) {
  GlibcView v{};
  ns_msg msg;
  const auto* p = reinterpret_cast<const unsigned char*>(resp.data());
  EXPECT_EQ(ns_initparse(p, static_cast<int>(resp.size()), &msg), 0) << Hex(resp);
  v.id = ns_msg_id(msg);
  v.rcode = ns_msg_getflag(msg, ns_f_rcode);
  v.qr = ns_msg_getflag(msg, ns_f_qr);
  v.rd = ns_msg_getflag(msg, ns_f_rd);
  v.ra = ns_msg_getflag(msg, ns_f_ra);
  v.tc = ns_msg_getflag(msg, ns_f_tc);
  v.aa = ns_msg_getflag(msg, ns_f_aa);
  v.qdcount = ns_msg_count(msg, ns_s_qd);
  v.ancount = ns_msg_count(msg, ns_s_an);
  v.arcount = ns_msg_count(msg, ns_s_ar);
  ns_rr rr;
  if (v.qdcount == 1 && ns_parserr(&msg, ns_s_qd, 0, &rr) == 0) {
    v.qname = ns_rr_name(rr);
    v.qtype = ns_rr_type(rr);
  }
  for (int i = 0; i < v.ancount; ++i) {
    EXPECT_EQ(ns_parserr(&msg, ns_s_an, i, &rr), 0);
    GlibcRecord g{ns_rr_name(rr), ns_rr_type(rr), ns_rr_ttl(rr), ""};
    char buf[NS_MAXDNAME];
    if (g.type == ns_t_a && ns_rr_rdlen(rr) == 4) {
      in_addr a;
      memcpy(&a, ns_rr_rdata(rr), 4);
      g.data = IpAddress::FromIn(a).ToString();
    } else if (g.type == ns_t_aaaa && ns_rr_rdlen(rr) == 16) {
      in6_addr a;
      memcpy(&a, ns_rr_rdata(rr), 16);
      g.data = IpAddress::FromIn6(a).ToString();
    } else if (g.type == ns_t_cname || g.type == ns_t_ptr) {
      EXPECT_GT(
          ns_name_uncompress(ns_msg_base(msg), ns_msg_end(msg), ns_rr_rdata(rr), buf, sizeof(buf)),
          0);
      g.data = buf;
    }
    v.answers.push_back(g);
  }
  if (v.arcount == 1) {
    EXPECT_EQ(ns_parserr(&msg, ns_s_ar, 0, &rr), 0);
    EXPECT_EQ(ns_rr_type(rr), ns_t_opt);
  }
  return v;
}

TEST(DnsBuildResponseGlibc, AAndAaaaAndCname) {
  Query q = Parsed(MakeQuery(77, "www.example.com", kTypeAaaa, 4096));
  std::vector<ResourceRecord> answers = {
      ResourceRecord::Cname("", "cdn.example.net", 30),
      ResourceRecord::Cname("cdn.example.net", "edge.cdn.example.net", 40),
      ResourceRecord::Address("edge.cdn.example.net", Ip("2001:db8::1"), 50),
      ResourceRecord::Address("edge.cdn.example.net", Ip("2001:db8::2"), 60)};
  GlibcView v = ReadWithGlibc(BuildResponse(q, Rcode::kNoError, answers, MaxResponseSize(q)));
  EXPECT_EQ(v.id, 77);
  EXPECT_TRUE(v.qr);
  EXPECT_TRUE(v.rd);
  EXPECT_TRUE(v.ra);
  EXPECT_FALSE(v.aa);
  EXPECT_FALSE(v.tc);
  EXPECT_EQ(v.rcode, ns_r_noerror);
  EXPECT_EQ(v.qname, "www.example.com");
  EXPECT_EQ(v.qtype, ns_t_aaaa);
  EXPECT_EQ(v.arcount, 1);
  ASSERT_EQ(v.answers.size(), 4u);
  EXPECT_EQ(v.answers[0].name, "www.example.com");
  EXPECT_EQ(v.answers[0].type, ns_t_cname);
  EXPECT_EQ(v.answers[0].data, "cdn.example.net");
  EXPECT_EQ(v.answers[0].ttl, 30u);
  EXPECT_EQ(v.answers[1].name, "cdn.example.net");
  EXPECT_EQ(v.answers[1].data, "edge.cdn.example.net");
  EXPECT_EQ(v.answers[2].name, "edge.cdn.example.net");
  EXPECT_EQ(v.answers[2].type, ns_t_aaaa);
  EXPECT_EQ(v.answers[2].data, "2001:db8::1");
  EXPECT_EQ(v.answers[3].data, "2001:db8::2");
  EXPECT_EQ(v.answers[3].ttl, 60u);

  q = Parsed(MakeQuery(78, "host.example", kTypeA));
  v = ReadWithGlibc(
      BuildResponse(q, Rcode::kNoError, {ResourceRecord::Address("", Ip("192.0.2.7"), 9)}, 512));
  ASSERT_EQ(v.answers.size(), 1u);
  EXPECT_EQ(v.answers[0].name, "host.example");
  EXPECT_EQ(v.answers[0].type, ns_t_a);
  EXPECT_EQ(v.answers[0].data, "192.0.2.7");
  EXPECT_EQ(v.arcount, 0);
}

TEST(DnsBuildResponseGlibc, NxDomain) {
  Query q = Parsed(MakeQuery(5, "missing.example", kTypeA, 1232));
  GlibcView v = ReadWithGlibc(BuildResponse(q, Rcode::kNxDomain, {}, MaxResponseSize(q)));
  EXPECT_EQ(v.rcode, ns_r_nxdomain);
  EXPECT_EQ(v.qname, "missing.example");
  EXPECT_EQ(v.ancount, 0);
  EXPECT_EQ(v.arcount, 1);
}

TEST(DnsBuildResponseGlibc, PtrForLocalhost) {
  Query q = Parsed(MakeQuery(6, ReverseName(Ip("127.0.0.1")), kTypePtr));
  ASSERT_EQ(ParseReverseName(q.question->name), Ip("127.0.0.1"));
  GlibcView v = ReadWithGlibc(BuildResponse(
      q, Rcode::kNoError, {ResourceRecord::Ptr("", "localhost", 0)}, MaxResponseSize(q)));
  ASSERT_EQ(v.answers.size(), 1u);
  EXPECT_EQ(v.answers[0].name, "1.0.0.127.in-addr.arpa");
  EXPECT_EQ(v.answers[0].type, ns_t_ptr);
  EXPECT_EQ(v.answers[0].data, "localhost");
}

// Answers that do not fit are dropped from the end; TC is never set.
TEST(DnsBuildResponseGlibc, TruncationDropsAnswersWithoutTc) {
  std::vector<ResourceRecord> v4, v6;
  for (uint32_t i = 0; i < 300; ++i) {
    v4.push_back(ResourceRecord::Address("", IpAddress::V4(0x0A000000 + i), i));
    in6_addr a{};
    a.s6_addr[0] = 0x20;
    a.s6_addr[15] = static_cast<uint8_t>(i);
    a.s6_addr[14] = static_cast<uint8_t>(i >> 8);
    v6.push_back(ResourceRecord::Address("", IpAddress::FromIn6(a), i));
  }
  struct Case {
    std::optional<uint16_t> edns;
    bool v6;
    size_t limit;
    int expected;  // header+question 29 bytes (+11 OPT); A records 16, AAAA 28
  } cases[] = {
      {std::nullopt, false, 512, 30}, {std::nullopt, true, 512, 17}, {1232, false, 1232, 74},
      {4096, true, 4096, 144},        {100, false, 512, 29},  // EDNS below 512 counts as 512
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    Query q = Parsed(MakeQuery(9, "example.com", c.v6 ? kTypeAaaa : kTypeA, c.edns));
    std::string resp = BuildResponse(q, Rcode::kNoError, c.v6 ? v6 : v4, MaxResponseSize(q));
    EXPECT_LE(resp.size(), c.limit);
    GlibcView v = ReadWithGlibc(resp);
    EXPECT_FALSE(v.tc);
    EXPECT_EQ(v.ancount, c.expected);
    ASSERT_EQ(static_cast<int>(v.answers.size()), c.expected);
    // The ones kept are the first ones, in order.
    EXPECT_EQ(v.answers.back().ttl, static_cast<uint32_t>(c.expected - 1));
    EXPECT_EQ(v.arcount, c.edns ? 1 : 0);
  }
  // max_size below 512 still allows 512.
  Query q = Parsed(MakeQuery(9, "example.com", kTypeA));
  EXPECT_EQ(ReadWithGlibc(BuildResponse(q, Rcode::kNoError, v4, 100)).ancount, 30);
}

}  // namespace
}  // namespace usentry::sentry::net::dns
