#include "sentry/policy/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sentry/policy/policy_toml.h"

namespace usentry::policy {
namespace {

using ::testing::HasSubstr;

TEST(ParseSizeTest, UnitsArePowersOf1024) {
  EXPECT_EQ(*ParseSize("4096", false), 4096u);
  EXPECT_EQ(*ParseSize("2GiB", false), 2 * kGiB);
  EXPECT_EQ(*ParseSize("512M", false), 512 * kMiB);
  EXPECT_EQ(*ParseSize("1.5g", false), kGiB + kGiB / 2);
  EXPECT_EQ(*ParseSize("none", true), 0u);
  EXPECT_FALSE(ParseSize("none", false).ok());
  EXPECT_FALSE(ParseSize("2 parsecs", false).ok());
  EXPECT_FALSE(ParseSize("GiB", false).ok());
  EXPECT_FALSE(ParseSize("-1", false).ok());
  EXPECT_FALSE(ParseSize("99999999999T", false).ok());
}

TEST(ParseDurationTest, UnitsOrSeconds) {
  EXPECT_EQ(*ParseDurationFlag("15m", false), absl::Minutes(15));
  EXPECT_EQ(*ParseDurationFlag("90", false), absl::Seconds(90));
  EXPECT_EQ(*ParseDurationFlag("1h30m", false), absl::Minutes(90));
  EXPECT_EQ(*ParseDurationFlag("500ms", false), absl::Milliseconds(500));
  EXPECT_EQ(*ParseDurationFlag("none", true), absl::ZeroDuration());
  EXPECT_FALSE(ParseDurationFlag("-5s", false).ok());
  EXPECT_FALSE(ParseDurationFlag("soon", false).ok());
  EXPECT_FALSE(ParseDurationFlag("inf", false).ok());
}

TEST(ExecRulesTest, ExactPathsAndDirectoryWildcards) {
  ExecRules r{.restricted = true, .allow = {"/usr/bin/python3.11", "/bin/*"}};
  EXPECT_TRUE(r.Allows("/usr/bin/python3.11"));
  EXPECT_FALSE(r.Allows("/usr/bin/python3"));
  EXPECT_TRUE(r.Allows("/bin/sh"));
  EXPECT_FALSE(r.Allows("/bin/sub/sh"));
  EXPECT_FALSE(r.Allows("/bin/"));
  EXPECT_FALSE(r.Allows("/binx/sh"));
  EXPECT_TRUE(ExecRules{}.Allows("/anything"));
  EXPECT_TRUE((ExecRules{.restricted = false, .allow = {}}).Allows("/x"));
  EXPECT_FALSE((ExecRules{.restricted = true, .allow = {}}).Allows("/bin/sh"));
}

TEST(ExecPatternTest, Normalized) {
  EXPECT_EQ(*NormalizeExecPattern("/usr//bin/./python3"), "/usr/bin/python3");
  EXPECT_EQ(*NormalizeExecPattern("/usr/bin/*"), "/usr/bin/*");
  EXPECT_FALSE(NormalizeExecPattern("python3").ok());
  EXPECT_FALSE(NormalizeExecPattern("/usr/bin/py*").ok());
  EXPECT_FALSE(NormalizeExecPattern("/usr/../bin/sh").ok());
}

TEST(PolicyTomlTest, EveryKeyIsRead) {
  absl::StatusOr<Policy> p = ParsePolicyToml(R"(
workdir = "/work"
[[mount]]
source = "/tmp"
target = "/data"
mode = "rw"
[env]
set = { PYTHONUNBUFFERED = "1" }
pass = ["HTTP_PROXY"]
[identity]
uid = 1000
gid = 1001
[limits]
memory = "256MiB"
max_tasks = 64
max_fds = 128
timeout = "30s"
cpu_time = 10
disk = "64MiB"
max_file_size = "1MiB"
[exec]
allow = ["/usr/bin/python3", "/bin/*"]
[audit]
file = "run.jsonl"
explain = true
)",
                                             "p.toml", "/base");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->workdir, "/work");
  ASSERT_EQ(p->mounts.size(), 1u);
  EXPECT_EQ(p->mounts[0].target, "/data");
  EXPECT_FALSE(p->mounts[0].read_only);
  EXPECT_EQ(p->env, std::vector<std::string>{"PYTHONUNBUFFERED=1"});
  EXPECT_EQ(p->pass_env, std::vector<std::string>{"HTTP_PROXY"});
  EXPECT_EQ(p->identity.uid, 1000u);
  EXPECT_EQ(p->identity.gid, 1001u);
  EXPECT_EQ(p->limits.memory_bytes, 256 * kMiB);
  EXPECT_EQ(p->limits.max_tasks, 64u);
  EXPECT_EQ(p->limits.max_fds, 128u);
  EXPECT_EQ(p->limits.timeout, absl::Seconds(30));
  EXPECT_EQ(p->limits.cpu_time, absl::Seconds(10));
  EXPECT_EQ(p->limits.disk_bytes, 64 * kMiB);
  EXPECT_EQ(p->limits.max_file_size, kMiB);
  EXPECT_TRUE(p->exec.restricted);
  EXPECT_EQ(p->exec.allow, (std::vector<std::string>{"/usr/bin/python3", "/bin/*"}));
  EXPECT_EQ(p->audit.file, "/base/run.jsonl");
  EXPECT_TRUE(p->audit.explain);
}

TEST(PolicyTomlTest, EmptyFileIsTheDefaults) {
  absl::StatusOr<Policy> p = ParsePolicyToml("", "p.toml", "/");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Digest(), Policy{}.Digest());
  EXPECT_EQ(p->limits.memory_bytes, 2 * kGiB);
  EXPECT_EQ(p->limits.max_tasks, 512u);
  EXPECT_EQ(p->limits.timeout, absl::Minutes(15));
  EXPECT_FALSE(p->exec.restricted);
}

// Errors name the file, the line and the key.
TEST(PolicyTomlTest, ErrorsNameFileLineAndKey) {
  auto err = [](const char* text) {
    absl::StatusOr<Policy> p = ParsePolicyToml(text, "p.toml", "/");
    return p.ok() ? std::string("ok") : std::string(p.status().message());
  };
  EXPECT_EQ(err("[limits]\nmemroy = \"1GiB\"\n"), "p.toml:2: limits.memroy: unknown key");
  EXPECT_THAT(err("[limits]\n\nmemory = \"lots\"\n"),
              HasSubstr("p.toml:3: limits.memory: \"lots\" is not a size"));
  EXPECT_THAT(err("[limits]\nmax_tasks = -3\n"), HasSubstr("p.toml:2: limits.max_tasks"));
  EXPECT_THAT(err("[limits]\ntimeout = true\n"),
              HasSubstr("p.toml:2: limits.timeout: expected a string"));
  EXPECT_THAT(err("[exec]\nallow = [\"python3\"]\n"), HasSubstr("p.toml:2: exec.allow"));
  EXPECT_THAT(err("[[mount]]\nsource = \"/nonexistent-usentry\"\ntarget = \"/x\"\n"),
              HasSubstr("p.toml:1: mount"));
  EXPECT_THAT(err("[[mount]]\nsource = \"/tmp\"\ntarget = \"/x\"\nmode = \"wr\"\n"),
              HasSubstr("unknown mode"));
  EXPECT_THAT(err("limits = 3\n"), HasSubstr("p.toml:1: limits: expected a table"));
  EXPECT_THAT(err("[limits\n"), HasSubstr("p.toml:1:"));
  EXPECT_EQ(err("[net]\nallow = [\"pypi.org\", \"bad host\"]\n"),
            "p.toml:2: net.allow: \"bad host\": not a hostname, *.domain, address or CIDR");
  EXPECT_THAT(err("[net]\nallow = [\"10.0.0.5\"]\n"), HasSubstr("allow_private"));
  EXPECT_THAT(err("[net]\nallow_private = [\"db.internal\"]\n"), HasSubstr("not a name"));
  EXPECT_THAT(err("[net]\nhost_ports = [0]\n"), HasSubstr("p.toml:2: net.host_ports"));
  EXPECT_THAT(err("[net]\ndns = [\"resolver\"]\n"), HasSubstr("p.toml:2: net.dns"));
  EXPECT_EQ(err("[net]\nproxy = 1\n"), "p.toml:2: net.proxy: unknown key");
  EXPECT_THAT(err("[limits]\nmemory = \"1MiB\"\n"), HasSubstr("at least 16MiB"));
  EXPECT_THAT(err("[[mount]]\nsource = \"/tmp\"\ntarget = \"/x\"\n[[mount]]\nsource = "
                  "\"/tmp\"\ntarget = \"/x/\"\n"),
              HasSubstr("mounted twice"));
}

TEST(PolicyTomlTest, NetTableBuildsTheRules) {
  absl::StatusOr<Policy> p = ParsePolicyToml(
      "[net]\nallow = [\"pypi.org\", \"*.pythonhosted.org:443\", \"203.0.113.0/24\"]\n"
      "allow_private = [\"10.1.2.3:5432\"]\nhost_ports = [8080]\ndns = [\"192.0.2.53\"]\n"
      "log = \"net.jsonl\"\n",
      "p.toml", "/base");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->net.allow.size(), 4u);
  EXPECT_EQ(p->net.allow[1].ToString(), "*.pythonhosted.org:443");
  EXPECT_TRUE(p->net.allow[3].private_ok);
  EXPECT_EQ(p->net.host_ports, (std::vector<uint16_t>{8080}));
  EXPECT_EQ(p->net.dns_servers, (std::vector<std::string>{"192.0.2.53:53"}));
  EXPECT_EQ(p->net.log_file, "/base/net.jsonl");
  EXPECT_TRUE(p->net.egress());
  EXPECT_THAT(p->ToJson(), HasSubstr("\"allow_private\":[\"10.1.2.3:5432\"]"));
}

// What the audit record promises: anyone can check the digest with sha256sum(1) over
// the canonical JSON (`usentry policy check` prints it).
TEST(PolicyTest, DigestIsTheSha256OfTheCanonicalJson) {
  Policy p;
  p.limits.max_fds = 77;
  p.net.allow.push_back(*ParseNetRule("pypi.org", false));
  char path[] = "/tmp/usentry-digest-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string json = p.ToJson();
  ASSERT_EQ(write(fd, json.data(), json.size()), static_cast<ssize_t>(json.size()));
  close(fd);
  FILE* out = popen((std::string("sha256sum ") + path).c_str(), "r");
  ASSERT_NE(out, nullptr);
  char hex[65] = {};
  ASSERT_EQ(fread(hex, 1, 64, out), 64u);
  pclose(out);
  unlink(path);
  EXPECT_EQ(p.Digest(), std::string("sha256:") + hex);
}

TEST(PolicyTest, DigestChangesWithAnyField) {
  Policy a, b;
  EXPECT_EQ(a.Digest(), b.Digest());
  EXPECT_THAT(a.Digest(), ::testing::StartsWith("sha256:"));
  EXPECT_EQ(a.Digest().size(), 7u + 64u);
  b.limits.max_fds = 2048;
  EXPECT_NE(a.Digest(), b.Digest());
  b = a;
  b.exec.restricted = true;
  EXPECT_NE(a.Digest(), b.Digest());
  b = a;
  b.net.allow.push_back(*ParseNetRule("pypi.org", false));
  EXPECT_NE(a.Digest(), b.Digest());
}

TEST(PolicyTomlTest, LoadsAFileWithRelativePaths) {
  char dir[] = "/tmp/usentry-policy-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/p.toml";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("[[mount]]\nsource = \".\"\ntarget = \"/cfg\"\n", f);
  fclose(f);
  absl::StatusOr<Policy> p = LoadPolicyFile(path);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->mounts.size(), 1u);
  EXPECT_EQ(p->mounts[0].source, dir);
  EXPECT_FALSE(LoadPolicyFile(std::string(dir) + "/missing.toml").ok());
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace usentry::policy
