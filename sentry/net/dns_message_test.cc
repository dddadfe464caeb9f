// ParseQuery: what the app's queries become, and what hostile ones are answered with.
#include "sentry/net/dns_message.h"

#include <string>

#include "gtest/gtest.h"
#include "sentry/net/dns_test_util.h"

namespace usentry::sentry::net::dns {
namespace {

using testing::Header;
using testing::MakeQuery;
using testing::Opt;
using testing::Put16;
using testing::Wire;

TEST(DnsParseQuery, StandardQuery) {
  ParseResult r = ParseQuery(MakeQuery(0xBEEF, "WWW.Example.com", kTypeAaaa));
  ASSERT_EQ(r.status, ParseStatus::kOk) << r.reason;
  EXPECT_EQ(r.query.id, 0xBEEF);
  EXPECT_TRUE(r.query.rd);
  EXPECT_EQ(r.query.opcode, 0);
  ASSERT_TRUE(r.query.question);
  EXPECT_EQ(r.query.question->name, "www.example.com");
  EXPECT_EQ(r.query.question->wire_name, Wire("www.example.com"));
  EXPECT_EQ(r.query.question->type, kTypeAaaa);
  EXPECT_EQ(r.query.question->qclass, kClassIn);
  EXPECT_TRUE(r.query.question->is_hostname);
  EXPECT_FALSE(r.query.edns);
  EXPECT_EQ(MaxResponseSize(r.query), 512u);
}

TEST(DnsParseQuery, RdClearIsKept) {
  std::string q = MakeQuery(7, "a.b", kTypeA);
  q[2] = 0;  // flags: RD off
  ParseResult r = ParseQuery(q);
  ASSERT_EQ(r.status, ParseStatus::kOk);
  EXPECT_FALSE(r.query.rd);
}

TEST(DnsParseQuery, NonHostnamesAreParsedAndFlagged) {
  ParseResult r = ParseQuery(MakeQuery(1, "_dmarc.example.com", 16));
  ASSERT_EQ(r.status, ParseStatus::kOk);
  EXPECT_EQ(r.query.question->name, "_dmarc.example.com");
  EXPECT_FALSE(r.query.question->is_hostname);
  // The root.
  r = ParseQuery(MakeQuery(1, "", 2));
  ASSERT_EQ(r.status, ParseStatus::kOk);
  EXPECT_EQ(r.query.question->name, "");
  EXPECT_FALSE(r.query.question->is_hostname);
}

TEST(DnsParseQuery, EdnsSizeIsClamped) {
  struct Case {
    uint16_t sent;
    size_t kept;
  } cases[] = {{1232, 1232}, {4096, 4096}, {65535, 4096}, {100, 512}, {0, 512}, {512, 512}};
  for (const Case& c : cases) {
    ParseResult r = ParseQuery(MakeQuery(9, "example.com", kTypeA, c.sent));
    ASSERT_EQ(r.status, ParseStatus::kOk) << c.sent;
    ASSERT_TRUE(r.query.edns);
    EXPECT_EQ(r.query.edns->udp_size, c.kept) << c.sent;
    EXPECT_EQ(MaxResponseSize(r.query), c.kept);
  }
}

TEST(DnsParseQuery, EdnsOptionsAndDoBit) {
  std::string opts;
  Put16(opts, 10);  // COOKIE
  Put16(opts, 8);
  opts += "12345678";
  std::string q = Header(3, 0x0100, 1, 0, 0, 1) + Wire("example.com");
  Put16(q, kTypeA);
  Put16(q, kClassIn);
  std::string opt = Opt(1400, 0, opts);
  opt[7] = static_cast<char>(0x80);  // DO
  ParseResult r = ParseQuery(q + opt);
  ASSERT_EQ(r.status, ParseStatus::kOk) << r.reason;
  EXPECT_TRUE(r.query.edns->dnssec_ok);
  // An option whose length runs past the rdata.
  std::string bad;
  Put16(bad, 10);
  Put16(bad, 9);
  bad += "12345678";
  r = ParseQuery(q + Opt(1400, 0, bad));
  EXPECT_EQ(r.status, ParseStatus::kAnswerError);
  EXPECT_EQ(r.rcode, Rcode::kFormErr);
  // Three stray bytes of options.
  r = ParseQuery(q + Opt(1400, 0, "abc"));
  EXPECT_EQ(r.rcode, Rcode::kFormErr);
}

TEST(DnsParseQuery, EdnsVersionOneIsBadVers) {
  ParseResult r = ParseQuery(Header(4, 0x0100, 1, 0, 0, 1) + Wire("a.com") +
                             std::string("\0\1\0\1", 4) + Opt(1232, 1));
  EXPECT_EQ(r.status, ParseStatus::kAnswerError);
  EXPECT_EQ(r.rcode, Rcode::kBadVers);
  EXPECT_EQ(r.query.id, 4);
  ASSERT_TRUE(r.query.edns);
}

// Hostile datagrams: each is either answered with an error (id and RD kept) or dropped.
struct Hostile {
  const char* what;
  std::string bytes;
  ParseStatus status;
  Rcode rcode;
};

std::vector<Hostile> HostileCases() {
  const std::string q = MakeQuery(0x1234, "example.com", kTypeA);
  std::string question = Wire("example.com") + std::string("\0\1\0\1", 4);
  auto with_header = [](uint16_t flags, uint16_t qd, uint16_t an, uint16_t ns, uint16_t ar,
                        const std::string& body) {
    return Header(0x1234, flags, qd, an, ns, ar) + body;
  };
  std::string label64 = "\x40" + std::string(64, 'a') + std::string(1, '\0') + "\0\1\0\1";
  std::string name256;
  for (int i = 0; i < 4; ++i) name256 += "\x3F" + std::string(63, 'b');
  name256 += std::string(1, '\0') + "\0\1\0\1";
  std::string qr = q;
  qr[2] = static_cast<char>(qr[2] | 0x80);
  std::string opcode2 = q;
  opcode2[2] = static_cast<char>(0x10 | 0x01);  // opcode 2 (STATUS), RD
  const ParseStatus E = ParseStatus::kAnswerError;
  const ParseStatus D = ParseStatus::kDrop;
  const Rcode F = Rcode::kFormErr;
  return {
      {"empty", "", D, Rcode::kNoError},
      {"truncated header", q.substr(0, 11), D, Rcode::kNoError},
      {"header only", q.substr(0, 12), E, F},
      {"label past the end", q.substr(0, 15), E, F},
      {"no qtype/qclass", q.substr(0, q.size() - 3), E, F},
      {"pointer loop", with_header(0x0100, 1, 0, 0, 0, std::string("\xC0\x0C\0\1\0\1", 6)), E, F},
      {"forward pointer", with_header(0x0100, 1, 0, 0, 0, std::string("\xC0\x0E\1a\0\0\1\0\1", 9)),
       E, F},
      {"pointer into header", with_header(0x0100, 1, 0, 0, 0, std::string("\xC0\x04\0\1\0\1", 6)),
       E, F},
      {"64-byte label", with_header(0x0100, 1, 0, 0, 0, label64), E, F},
      {"256-byte name", with_header(0x0100, 1, 0, 0, 0, name256), E, F},
      {"qdcount 0", with_header(0x0100, 0, 0, 0, 0, ""), E, F},
      {"qdcount 2", with_header(0x0100, 2, 0, 0, 0, question + question), E, F},
      {"ancount 1", with_header(0x0100, 1, 1, 0, 0, question), E, F},
      {"nscount 1", with_header(0x0100, 1, 0, 1, 0, question), E, F},
      {"arcount 2", with_header(0x0100, 1, 0, 0, 2, question + Opt(512) + Opt(512)), E, F},
      {"additional not OPT",
       with_header(0x0100, 1, 0, 0, 1, question + question.substr(0, 13) + std::string(6, '\0')), E,
       F},
      {"OPT with a name", with_header(0x0100, 1, 0, 0, 1, question + "\1x" + Opt(512)), E, F},
      {"OPT cut short", with_header(0x0100, 1, 0, 0, 1, question + Opt(512).substr(0, 7)), E, F},
      {"arcount 1 no record", with_header(0x0100, 1, 0, 0, 1, question), E, F},
      {"trailing garbage", q + "x", E, F},
      {"QR set", qr, D, Rcode::kNoError},
      {"QR set, short", qr.substr(0, 12), D, Rcode::kNoError},
      {"opcode 2", opcode2, E, Rcode::kNotImp},
      {"opcode 2, header only", opcode2.substr(0, 12), E, Rcode::kNotImp},
  };
}

TEST(DnsParseQuery, HostileInputs) {
  for (const Hostile& h : HostileCases()) {
    SCOPED_TRACE(h.what);
    ParseResult r = ParseQuery(h.bytes);
    EXPECT_EQ(r.status, h.status) << r.reason;
    EXPECT_NE(std::string(r.reason), "");
    if (r.status == ParseStatus::kAnswerError) {
      EXPECT_EQ(r.rcode, h.rcode) << r.reason;
      EXPECT_EQ(r.query.id, 0x1234);
      EXPECT_TRUE(r.query.rd);
      EXPECT_FALSE(r.query.question);
    }
  }
}

TEST(DnsParseQuery, HugeEdnsSizeIsClampedNotRefused) {
  ParseResult r = ParseQuery(MakeQuery(5, "x.example", kTypeA, 0xFFFF));
  ASSERT_EQ(r.status, ParseStatus::kOk);
  EXPECT_EQ(MaxResponseSize(r.query), kMaxUdpSize);
}

TEST(DnsParseQuery, ErrorResultsBuildHeaderOnlyResponses) {
  ParseResult r = ParseQuery(MakeQuery(0x4242, "example.com", kTypeA) + "junk");
  ASSERT_EQ(r.status, ParseStatus::kAnswerError);
  std::string resp = BuildResponse(r.query, r.rcode, {}, MaxResponseSize(r.query));
  EXPECT_EQ(resp, Header(0x4242, 0x8181, 0, 0, 0, 0));  // QR RD RA FORMERR
  std::string opcode2 = MakeQuery(0x4243, "example.com", kTypeA);
  opcode2[2] = 0x11;
  r = ParseQuery(opcode2);
  resp = BuildResponse(r.query, r.rcode, {}, MaxResponseSize(r.query));
  EXPECT_EQ(resp, Header(0x4243, 0x9184, 0, 0, 0, 0));  // opcode echoed, NOTIMP
}

}  // namespace
}  // namespace usentry::sentry::net::dns
