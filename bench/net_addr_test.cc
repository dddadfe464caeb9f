// net_bench's --target rule: loopback peers only, the sandbox's host alias only from a
// hosts file, never a name looked up elsewhere.
#include "bench/net_addr.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace usentry::bench {
namespace {

using ::testing::HasSubstr;

class ParseTargetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/net_addr_test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    hosts_ = dir_ + "/hosts";
  }
  void TearDown() override {
    unlink(hosts_.c_str());
    rmdir(dir_.c_str());
  }
  void WriteHosts(const std::string& text) { std::ofstream(hosts_) << text; }

  std::string dir_, hosts_;
};

TEST_F(ParseTargetTest, LoopbackLiterals) {
  auto a = ParseTarget("127.0.0.1:5000", hosts_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->text, "127.0.0.1:5000");
  EXPECT_EQ(a->ss.ss_family, AF_INET);
  a = ParseTarget("127.1.2.3:7", hosts_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->text, "127.1.2.3:7");
  a = ParseTarget("[::1]:80", hosts_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->text, "[::1]:80");
  EXPECT_EQ(a->ss.ss_family, AF_INET6);
  a = ParseTarget("LocalHost:9", hosts_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->text, "127.0.0.1:9");
}

TEST_F(ParseTargetTest, OtherAddressesAndNamesAreRefused) {
  for (const char* t : {"10.0.2.2:80", "8.8.8.8:53", "[2001:db8::1]:443", "example.com:80",
                        "0.0.0.0:80", "[::]:80"}) {
    auto a = ParseTarget(t, hosts_);
    EXPECT_FALSE(a.ok()) << t;
    EXPECT_THAT(a.status().message(), HasSubstr("must be a loopback address")) << t;
  }
}

TEST_F(ParseTargetTest, HostAliasComesFromTheHostsFile) {
  WriteHosts(
      "127.0.0.1 localhost\n# 10.9.9.9 host.usentry.internal\n"
      "10.0.2.2\thost.usentry.internal  # with host ports\n");
  auto a = ParseTarget("host.usentry.internal:8080", hosts_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->text, "10.0.2.2:8080");
  a = ParseTarget("HOST.usentry.internal:1", hosts_);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->text, "10.0.2.2:1");
}

TEST_F(ParseTargetTest, HostAliasMissingIsAnErrorNotALookup) {
  WriteHosts("127.0.0.1 localhost\n");
  auto a = ParseTarget("host.usentry.internal:8080", hosts_);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(a.status().message(), HasSubstr("--allow-host-port"));
  unlink(hosts_.c_str());  // no file at all: the same
  EXPECT_EQ(ParseTarget("host.usentry.internal:8080", hosts_).status().code(),
            absl::StatusCode::kNotFound);
  WriteHosts("not-an-address host.usentry.internal\n");
  EXPECT_EQ(ParseTarget("host.usentry.internal:8080", hosts_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ParseTargetTest, BadSyntax) {
  for (const char* t : {"127.0.0.1", ":80", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
                        "127.0.0.1:http", "[::1:80"}) {
    EXPECT_EQ(ParseTarget(t, hosts_).status().code(), absl::StatusCode::kInvalidArgument) << t;
  }
}

}  // namespace
}  // namespace usentry::bench
