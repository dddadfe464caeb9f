#include "sentry/policy/net_rules.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace usentry::policy {
namespace {

using ::testing::HasSubstr;

NetRule Rule(const char* text, bool private_ok = false) {
  absl::StatusOr<NetRule> r = ParseNetRule(text, private_ok);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status();
  return r.ok() ? *r : NetRule{};
}

IpAddress Ip(const char* text) { return *IpAddress::Parse(text); }

TEST(NetRule, ParsesEveryFormAndPrintsItCanonically) {
  struct {
    const char* in;
    const char* out;
  } cases[] = {
      {"PyPI.org.", "pypi.org"},
      {"*.pythonhosted.org:443", "*.pythonhosted.org:443"},
      {"*", "*"},
      {"203.0.113.0/24:80-89", "203.0.113.0/24:80-89"},
      {"198.51.100.7", "198.51.100.7"},
      {"198.51.100.7/32:8080/tcp", "198.51.100.7:8080"},
      {"2001:db8::1", "2001:db8::1"},
      {"[2001:db8::/32]:443", "[2001:db8::/32]:443"},
      {"time.example.com:123/udp", "time.example.com:123/udp"},
      {"_srv.example.com", "_srv.example.com"},
  };
  for (const auto& c : cases) EXPECT_EQ(Rule(c.in).ToString(), c.out) << c.in;
  EXPECT_EQ(Rule("pypi.org").kind, NetRule::Kind::kHost);
  EXPECT_EQ(Rule("*.pypi.org").kind, NetRule::Kind::kWildcard);
  EXPECT_EQ(Rule("10.0.0.0/8", true).kind, NetRule::Kind::kCidr);
}

TEST(NetRule, RejectsMalformedTextWithAReason) {
  for (const char* bad :
       {"", ":443", "pypi.org:", "pypi.org:0", "pypi.org:65536", "pypi.org:443-80", "pypi.org:x",
        "a..b", "-bad.example/24", "10.0.0.1/8", "[2001:db8::1", "[2001:db8::1]x", "[1.2.3.4]:80",
        "foo*.example.com", "*.*.example.com", "ex ample.com", "2001:db8::1/129"}) {
    absl::StatusOr<NetRule> r = ParseNetRule(bad, false);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_THAT(std::string(ParseNetRule("pypi.org", true).status().message()),
              HasSubstr("not a name"));
}

TEST(NetRule, WildcardsMatchNamesBelowTheDomainOnly) {
  NetRule w = Rule("*.pypi.org");
  EXPECT_TRUE(w.MatchesName("files.pypi.org"));
  EXPECT_TRUE(w.MatchesName("a.b.pypi.org"));
  EXPECT_FALSE(w.MatchesName("pypi.org"));
  EXPECT_FALSE(w.MatchesName("evilpypi.org"));
  EXPECT_FALSE(w.MatchesName("pypi.org.evil.com"));
  EXPECT_TRUE(Rule("*").MatchesName("anything.example"));
  NetRule h = Rule("pypi.org:443");
  EXPECT_TRUE(h.MatchesName("pypi.org"));
  EXPECT_TRUE(h.MatchesPort(443, NetProto::kTcp));
  EXPECT_FALSE(h.MatchesPort(80, NetProto::kTcp));
  EXPECT_FALSE(h.MatchesPort(443, NetProto::kUdp));
}

TEST(BlockedRange, CoversTheIssuesRangesAndNotPublicOnes) {
  for (const char* ip : {"127.0.0.1",
                         "10.1.2.3",
                         "172.16.0.1",
                         "172.31.255.255",
                         "192.168.1.1",
                         "169.254.169.254",
                         "100.64.0.1",
                         "100.127.255.254",
                         "224.0.0.251",
                         "255.255.255.255",
                         "0.0.0.0",
                         "::",
                         "::1",
                         "fe80::1",
                         "fc00::1",
                         "fd00:ec2::254",
                         "ff02::1",
                         "::ffff:10.0.0.1",
                         "::ffff:169.254.169.254",
                         "64:ff9b::a00:1"}) {
    EXPECT_TRUE(BlockedRange(Ip(ip))) << ip;
  }
  for (const char* ip : {"203.0.113.10", "198.51.100.7", "8.8.8.8", "172.32.0.1", "100.128.0.1",
                         "2001:db8::1", "2606:4700::1111", "::ffff:203.0.113.10"}) {
    EXPECT_FALSE(BlockedRange(Ip(ip))) << ip;
  }
  EXPECT_THAT(*BlockedRange(Ip("169.254.169.254")), HasSubstr("metadata"));
}

TEST(ValidateNetPolicy, APlainRuleInsideABlockedRangeNamesAllowPrivate) {
  NetPolicy p;
  p.allow.push_back(Rule("10.1.2.3:5432"));
  absl::Status st = ValidateNetPolicy(p);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("allow_private"));
  p.allow[0] = Rule("10.1.2.3:5432", true);
  EXPECT_TRUE(ValidateNetPolicy(p).ok());
  // Wider than a blocked range: allowed; the blocked parts stay blocked.
  p.allow = {Rule("0.0.0.0/0")};
  EXPECT_TRUE(ValidateNetPolicy(p).ok());
}

TEST(CheckDestination, NameBindingDecidesAndBlocksWinOverNames) {
  NetPolicy p;
  p.allow = {Rule("pypi.org:443"), Rule("*.example.com"), Rule("203.0.113.0/24:80"),
             Rule("10.9.9.9:5432", true)};
  NameBindings b;
  b.Bind("pypi.org", Ip("151.101.0.223"));
  b.Bind("www.example.com", Ip("::ffff:198.51.100.5"));
  b.Bind("www.example.com", Ip("10.0.0.7"));  // a rebinding answer: still blocked

  EXPECT_TRUE(CheckDestination(p, b, Ip("151.101.0.223"), 443, NetProto::kTcp).allowed);
  NetVerdict wrong_port = CheckDestination(p, b, Ip("151.101.0.223"), 22, NetProto::kTcp);
  EXPECT_FALSE(wrong_port.allowed);
  EXPECT_THAT(wrong_port.reason, HasSubstr("pypi.org"));
  EXPECT_FALSE(CheckDestination(p, b, Ip("151.101.0.223"), 443, NetProto::kUdp).allowed);
  NetVerdict via_mapped = CheckDestination(p, b, Ip("198.51.100.5"), 8443, NetProto::kTcp);
  EXPECT_TRUE(via_mapped.allowed);
  EXPECT_EQ(via_mapped.name, "www.example.com");
  NetVerdict rebound = CheckDestination(p, b, Ip("10.0.0.7"), 80, NetProto::kTcp);
  EXPECT_FALSE(rebound.allowed);
  EXPECT_THAT(rebound.reason, HasSubstr("always-blocked"));
  NetVerdict unbound = CheckDestination(p, b, Ip("198.51.100.6"), 443, NetProto::kTcp);
  EXPECT_FALSE(unbound.allowed);
  EXPECT_THAT(unbound.reason, HasSubstr("not resolved from an allowed name"));
  EXPECT_TRUE(CheckDestination(p, b, Ip("203.0.113.99"), 80, NetProto::kTcp).allowed);
  EXPECT_FALSE(CheckDestination(p, b, Ip("203.0.113.99"), 81, NetProto::kTcp).allowed);
  EXPECT_TRUE(CheckDestination(p, b, Ip("10.9.9.9"), 5432, NetProto::kTcp).allowed);
  EXPECT_FALSE(CheckDestination(p, b, Ip("10.9.9.8"), 5432, NetProto::kTcp).allowed);
  EXPECT_FALSE(CheckDestination(p, b, Ip("169.254.169.254"), 80, NetProto::kTcp).allowed);

  NetPolicy none;
  EXPECT_THAT(CheckDestination(none, b, Ip("151.101.0.223"), 443, NetProto::kTcp).reason,
              HasSubstr("no network"));
}

TEST(CheckDestination, MetadataStaysBlockedUnderAnyWildcardOrWideRange) {
  NetPolicy p;
  p.allow = {Rule("*"), Rule("0.0.0.0/0"), Rule("::/0")};
  NameBindings b;
  b.Bind("metadata.google.internal", Ip("169.254.169.254"));
  for (const char* ip :
       {"169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254", "127.0.0.1"}) {
    EXPECT_FALSE(CheckDestination(p, b, Ip(ip), 80, NetProto::kTcp).allowed) << ip;
  }
  EXPECT_TRUE(CheckDestination(p, b, Ip("203.0.113.1"), 80, NetProto::kTcp).allowed);
}

TEST(CheckName, OnlyNamesARuleMatches) {
  NetPolicy p;
  p.allow = {Rule("pypi.org"), Rule("*.pythonhosted.org"), Rule("203.0.113.0/24")};
  EXPECT_TRUE(CheckName(p, "pypi.org").allowed);
  EXPECT_TRUE(CheckName(p, "files.pythonhosted.org").allowed);
  EXPECT_FALSE(CheckName(p, "evil.com").allowed);
  EXPECT_FALSE(CheckName(p, "pythonhosted.org").allowed);
}

TEST(NameBindings, AreBoundedAndUnmapped) {
  NameBindings b;
  b.Bind("a.example", Ip("::ffff:203.0.113.1"));
  EXPECT_EQ(b.NamesOf(Ip("203.0.113.1")).size(), 1u);
  for (int i = 0; i < 40; ++i) b.Bind("n" + std::to_string(i) + ".example", Ip("203.0.113.2"));
  EXPECT_EQ(b.NamesOf(Ip("203.0.113.2")).size(), NameBindings::kMaxNamesPerAddress);
  EXPECT_TRUE(b.NamesOf(Ip("203.0.113.3")).empty());
}

TEST(ParseDnsServer, AddsThePortAndBracketsIpv6) {
  EXPECT_EQ(*ParseDnsServer("192.0.2.53"), "192.0.2.53:53");
  EXPECT_EQ(*ParseDnsServer("192.0.2.53:5353"), "192.0.2.53:5353");
  EXPECT_EQ(*ParseDnsServer("[2001:db8::53]:53"), "[2001:db8::53]:53");
  EXPECT_EQ(*ParseDnsServer("2001:db8::53"), "[2001:db8::53]:53");
  for (const char* bad : {"", "dns.example", "1.2.3.4:", "1.2.3.4:0", "[::1", "1.2.3.4:99999"}) {
    EXPECT_FALSE(ParseDnsServer(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace usentry::policy
