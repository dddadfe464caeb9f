#include "base/ip_address.h"

#include "gtest/gtest.h"

namespace usentry {
namespace {

TEST(IpAddress, ParsesAndFormatsBothFamilies) {
  auto v4 = IpAddress::Parse("203.0.113.7");
  ASSERT_TRUE(v4);
  EXPECT_TRUE(v4->is_v4());
  EXPECT_EQ(v4->ToString(), "203.0.113.7");
  EXPECT_EQ(v4->v4_host_order(), 0xCB007107u);
  auto v6 = IpAddress::Parse("2001:DB8::1");
  ASSERT_TRUE(v6);
  EXPECT_TRUE(v6->is_v6());
  EXPECT_EQ(v6->ToString(), "2001:db8::1");
  for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "[::1]", "fe80::1%eth0", "x"}) {
    EXPECT_FALSE(IpAddress::Parse(bad)) << bad;
  }
}

TEST(IpAddress, MappedAddressesUnmapToIpv4) {
  auto m = IpAddress::Parse("::ffff:10.1.2.3");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->IsV4Mapped());
  EXPECT_EQ(m->Unmapped(), *IpAddress::Parse("10.1.2.3"));
  EXPECT_EQ(IpAddress::FromIn6(IpAddress::Parse("10.1.2.3")->ToIn6Mapped()), *m);
  EXPECT_TRUE(IpAddress::Parse("::ffff:127.0.0.1")->IsLoopback());
  EXPECT_TRUE(IpAddress::Parse("::1")->IsLoopback());
  EXPECT_TRUE(IpAddress::Parse("127.255.0.9")->IsLoopback());
  EXPECT_FALSE(IpAddress::Parse("::2")->IsLoopback());
  EXPECT_TRUE(IpAddress::Parse("::")->IsUnspecified());
  EXPECT_TRUE(IpAddress().IsUnspecified());
}

TEST(Cidr, ContainsByPrefixAndFamily) {
  auto c = Cidr::Parse("10.0.0.0/8");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->Contains(*IpAddress::Parse("10.255.1.2")));
  EXPECT_FALSE(c->Contains(*IpAddress::Parse("11.0.0.1")));
  EXPECT_FALSE(c->Contains(*IpAddress::Parse("::ffff:10.0.0.1")));  // callers unmap first
  auto odd = Cidr::Parse("100.64.0.0/10");
  ASSERT_TRUE(odd);
  EXPECT_TRUE(odd->Contains(*IpAddress::Parse("100.127.255.255")));
  EXPECT_FALSE(odd->Contains(*IpAddress::Parse("100.128.0.0")));
  auto v6 = Cidr::Parse("fc00::/7");
  ASSERT_TRUE(v6);
  EXPECT_TRUE(v6->Contains(*IpAddress::Parse("fd00:ec2::254")));
  EXPECT_FALSE(v6->Contains(*IpAddress::Parse("fe00::1")));
  auto all = Cidr::Parse("0.0.0.0/0");
  ASSERT_TRUE(all);
  EXPECT_TRUE(all->Contains(*IpAddress::Parse("1.2.3.4")));
  EXPECT_TRUE(all->Covers(*c));
  EXPECT_FALSE(c->Covers(*all));
}

TEST(Cidr, BareAddressIsAHostPrefixAndHostBitsAreRefused) {
  auto host = Cidr::Parse("198.51.100.7");
  ASSERT_TRUE(host);
  EXPECT_EQ(host->prefix_len(), 32);
  EXPECT_EQ(host->ToString(), "198.51.100.7/32");
  EXPECT_EQ(Cidr::Parse("2001:db8::1")->prefix_len(), 128);
  for (const char* bad :
       {"10.0.0.1/8", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/-1", "::/129", "a/8"}) {
    EXPECT_FALSE(Cidr::Parse(bad)) << bad;
  }
  EXPECT_EQ(Cidr(*IpAddress::Parse("10.9.8.7"), 8).ToString(), "10.0.0.0/8");
}

}  // namespace
}  // namespace usentry
