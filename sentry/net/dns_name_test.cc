#include "sentry/net/dns_name.h"

#include <string>

#include "gtest/gtest.h"
#include "sentry/net/dns_test_util.h"

namespace usentry::sentry::net::dns {
namespace {

using testing::Wire;

// A message whose bytes from offset 12 are `body` (the header content does not matter
// to ReadName, only that pointers below 12 are refused).
std::string Msg(absl::string_view body) {
  return std::string(kHeaderSize, '\0') + std::string(body);
}

TEST(DnsReadName, PlainNameLowercasedWithItsEnd) {
  std::string m = Msg(Wire("WWW.Example.COM") + "tail");
  auto n = ReadName(m, kHeaderSize);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->text, "www.example.com");
  EXPECT_EQ(n->wire, Wire("www.example.com"));
  EXPECT_EQ(n->next, kHeaderSize + Wire("www.example.com").size());
}

TEST(DnsReadName, RootIsEmptyText) {
  std::string m = Msg(std::string(1, '\0'));
  auto n = ReadName(m, kHeaderSize);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->text, "");
  EXPECT_EQ(n->wire, std::string(1, '\0'));
  EXPECT_EQ(n->next, kHeaderSize + 1);
}

TEST(DnsReadName, BackwardPointerIsFollowedAndNextIsAfterThePointer) {
  // example.com at 12, then "www" + pointer to 12 at 25.
  std::string m = Msg(Wire("example.com") + "\3www\xC0\x0C");
  const size_t second = kHeaderSize + Wire("example.com").size();
  auto n = ReadName(m, second);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->text, "www.example.com");
  EXPECT_EQ(n->next, second + 6);
}

TEST(DnsReadName, PointerChainsAreFollowedWhileStrictlyDecreasing) {
  // com at 12; "example" + ptr(12) at 17; "www" + ptr(17) at 27.
  std::string m = Msg(Wire("com") + "\7example\xC0\x0C" + "\3www\xC0\x11");
  auto n = ReadName(m, 27);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->text, "www.example.com");
}

TEST(DnsReadName, RefusesHostileForms) {
  // Label running past the end.
  EXPECT_FALSE(ReadName(Msg("\7exa"), kHeaderSize));
  // No terminating root.
  EXPECT_FALSE(ReadName(Msg("\3www"), kHeaderSize));
  // Pointer to itself, and a two-pointer loop.
  EXPECT_FALSE(ReadName(Msg("\xC0\x0C"), kHeaderSize));
  EXPECT_FALSE(ReadName(Msg("\1a\xC0\x0C"), kHeaderSize));
  EXPECT_FALSE(ReadName(Msg(std::string("\1a\xC0\x10", 4) + "\1b\xC0\x0C"), 16));
  // Forward pointer.
  EXPECT_FALSE(ReadName(Msg(std::string("\xC0\x0E\1a\0", 5)), kHeaderSize));
  // Pointer into the header.
  EXPECT_FALSE(ReadName(Msg("\xC0\x02"), kHeaderSize));
  // Half a pointer.
  EXPECT_FALSE(ReadName(Msg("\xC0"), kHeaderSize));
  // 64-byte label: its length byte is 0x40, an obsolete label type.
  EXPECT_FALSE(ReadName(Msg("\x40" + std::string(64, 'a') + std::string(1, '\0')), kHeaderSize));
  EXPECT_FALSE(ReadName(Msg("\x80\x01"), kHeaderSize));
  // Empty input and an offset past the end.
  EXPECT_FALSE(ReadName("", 0));
  EXPECT_FALSE(ReadName(Msg(""), kHeaderSize + 5));
}

TEST(DnsReadName, LengthLimits) {
  // 63-byte label is fine.
  std::string label63(63, 'x');
  auto n = ReadName(Msg("\x3F" + label63 + std::string(1, '\0')), kHeaderSize);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->text, label63);
  // Four 63-byte labels: 4*64 + 1 = 257 wire bytes > 255.
  std::string too_long;
  for (int i = 0; i < 4; ++i) too_long += "\x3F" + label63;
  too_long.push_back('\0');
  EXPECT_FALSE(ReadName(Msg(too_long), kHeaderSize));
  // Exactly 255: three 63-byte labels (192) + one 61-byte label (62) + root (1).
  std::string max_name;
  for (int i = 0; i < 3; ++i) max_name += "\x3F" + label63;
  max_name += "\x3D" + std::string(61, 'y');
  max_name.push_back('\0');
  ASSERT_EQ(max_name.size(), 255u);
  n = ReadName(Msg(max_name), kHeaderSize);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->wire.size(), 255u);
  // 256 through compression: the limit is on the expanded name.
  std::string base;
  for (int i = 0; i < 3; ++i) base += "\x3F" + label63;
  base += "\x3C" + std::string(60, 'z');
  base.push_back('\0');  // 254 bytes at 12
  std::string m = Msg(base + "\1q\xC0\x0C");
  EXPECT_TRUE(ReadName(m, kHeaderSize));
  EXPECT_FALSE(ReadName(m, kHeaderSize + base.size()));
}

TEST(DnsReadName, OtherBytesAreEscapedInText) {
  std::string m = Msg(std::string("\5a.b\\ \3_x-\2\xFF\0\0", 14));
  auto n = ReadName(m, kHeaderSize);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->text, "a\\046b\\092\\032._x-.\\255\\000");
  // And the text form maps back to the same wire name.
  EXPECT_EQ(TextToWire(n->text), n->wire);
}

TEST(DnsTextToWire, PlainEscapedAndRefused) {
  EXPECT_EQ(TextToWire("www.example.com"), Wire("www.example.com"));
  EXPECT_EQ(TextToWire("www.example.com."), Wire("www.example.com"));
  EXPECT_EQ(TextToWire(""), std::string(1, '\0'));
  EXPECT_EQ(TextToWire("."), std::string(1, '\0'));
  EXPECT_EQ(TextToWire("a\\.b.c"), std::string("\3a.b\1c\0", 7));
  EXPECT_EQ(TextToWire("\\065"), std::string("\1A\0", 3));
  EXPECT_EQ(TextToWire("Mixed.Case"), Wire("Mixed.Case"));
  for (const char* bad : {"a..b", ".a", "a.b..", "\\", "a\\25", "\\256", "\\2x5"}) {
    EXPECT_FALSE(TextToWire(bad)) << bad;
  }
  EXPECT_FALSE(TextToWire(std::string(64, 'a')));
  EXPECT_TRUE(TextToWire(std::string(63, 'a')));
  std::string long_name;
  for (int i = 0; i < 4; ++i) long_name += std::string(63, 'a') + ".";
  EXPECT_FALSE(TextToWire(long_name));
}

TEST(DnsHostname, Rfc1123Rules) {
  for (const char* good : {"example.com", "a", "a-b.c0", "1.2.3.4", "xn--bcher-kva.example"}) {
    EXPECT_TRUE(IsValidHostname(good)) << good;
  }
  for (const char* bad : {"", "-a.com", "a-.com", "a..com", "a.com.", "_dmarc.example.com",
                          "a\\032b.com", "a b.com", "a*.com"}) {
    EXPECT_FALSE(IsValidHostname(bad)) << bad;
  }
  EXPECT_FALSE(IsValidHostname(std::string(64, 'a') + ".com"));
  std::string n254 = std::string(63, 'a') + "." + std::string(63, 'a') + "." +
                     std::string(63, 'a') + "." + std::string(62, 'a');
  ASSERT_EQ(n254.size(), 254u);
  EXPECT_FALSE(IsValidHostname(n254));
  EXPECT_TRUE(IsValidHostname(n254.substr(1)));
}

TEST(DnsReverseName, Ipv4AndIpv6BothWays) {
  EXPECT_EQ(ParseReverseName("1.0.0.127.in-addr.arpa"), IpAddress::Parse("127.0.0.1"));
  EXPECT_EQ(ParseReverseName("4.3.2.1.IN-ADDR.ARPA"), IpAddress::Parse("1.2.3.4"));
  EXPECT_EQ(ReverseName(*IpAddress::Parse("127.0.0.1")), "1.0.0.127.in-addr.arpa");
  const std::string v6 = "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa";
  EXPECT_EQ(ParseReverseName(v6), IpAddress::Parse("::1"));
  EXPECT_EQ(ReverseName(*IpAddress::Parse("::1")), v6);
  auto odd = IpAddress::Parse("2001:db8::abcd:ef01");
  EXPECT_EQ(ParseReverseName(ReverseName(*odd)), odd);
  for (const char* bad :
       {"127.in-addr.arpa", "0.0.127.in-addr.arpa", "1.0.0.0.127.in-addr.arpa",
        "01.0.0.127.in-addr.arpa", "256.0.0.127.in-addr.arpa", "a.0.0.127.in-addr.arpa",
        ".0.0.127.in-addr.arpa", "1.0.0.127.in-addr.arpa.evil", "0.ip6.arpa", "in-addr.arpa",
        "localhost"}) {
    EXPECT_FALSE(ParseReverseName(bad)) << bad;
  }
  std::string bad6 = v6;
  bad6[0] = 'g';
  EXPECT_FALSE(ParseReverseName(bad6));
  bad6 = "10" + v6.substr(1);
  EXPECT_FALSE(ParseReverseName(bad6));
}

}  // namespace
}  // namespace usentry::sentry::net::dns
