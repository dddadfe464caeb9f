// ParseCommandLine / ParseMountSpec / BuildEnvironment: what `usentry ...` accepts and
// refuses, before any process is created.
#include "cli/run_options.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace usentry::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/usentry-cli-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

absl::StatusOr<Command> Parse(std::vector<std::string> args, const char* term = nullptr) {
  return ParseCommandLine(args, term);
}

TEST(ParseCommandLineTest, RunWithDashDash) {
  absl::StatusOr<Command> c = Parse({"run", "--", "python3", "script.py", "--flag"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, Command::Kind::kRun);
  EXPECT_THAT(c->run.argv, ElementsAre("python3", "script.py", "--flag"));
  EXPECT_EQ(c->run.policy.workdir, "/workspace");
  EXPECT_EQ(c->run.platform, "auto");
  EXPECT_TRUE(c->run.syscall_patching);
  EXPECT_FALSE(c->run.strace);
  EXPECT_FALSE(c->run.policy.rootfs.has_value());
  EXPECT_THAT(c->run.env,
              ElementsAre("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                          "HOME=/home/user", "LANG=C.UTF-8"));
  // An ordinary user inside by default, root only when asked.
  EXPECT_EQ(c->run.policy.identity.uid, 1000u);
  EXPECT_EQ(c->run.policy.identity.gid, 1000u);
  c = Parse({"run", "--user", "0", "--", "true"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->run.env, ::testing::Contains("HOME=/root"));
}

TEST(ParseCommandLineTest, ProgramArgumentsThatLookLikeFlagsOrSubcommands) {
  absl::StatusOr<Command> c = Parse({"run", "/bin/ls", "-l", "--strace"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->run.argv, ElementsAre("/bin/ls", "-l", "--strace"));
  EXPECT_FALSE(c->run.strace);

  c = Parse({"run", "--", "version"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, Command::Kind::kRun);
  EXPECT_THAT(c->run.argv, ElementsAre("version"));

  c = Parse({"run", "--strace", "--", "--", "x"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->run.strace);
  EXPECT_THAT(c->run.argv, ElementsAre("--", "x"));
}

TEST(ParseCommandLineTest, AllRunFlags) {
  TempDir src, rootfs;
  absl::StatusOr<Command> c = Parse({"run",
                                     "--rootfs",
                                     rootfs.path(),
                                     "--mount",
                                     src.path() + ":/data:rw",
                                     "--mount",
                                     src.path() + ":/data2",
                                     "--workdir",
                                     "/data/",
                                     "--env",
                                     "A=1",
                                     "--env",
                                     "B=x=y",
                                     "--strace",
                                     "--report-unsupported",
                                     "--platform",
                                     "ptrace",
                                     "--no-syscall-patching",
                                     "--",
                                     "/bin/true"},
                                    "xterm-256color");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->run.syscall_patching);
  EXPECT_EQ(c->run.policy.rootfs, rootfs.path());
  ASSERT_EQ(c->run.policy.mounts.size(), 2u);
  EXPECT_EQ(c->run.policy.mounts[0].source, src.path());
  EXPECT_EQ(c->run.policy.mounts[0].target, "/data");
  EXPECT_FALSE(c->run.policy.mounts[0].read_only);
  EXPECT_EQ(c->run.policy.mounts[1].target, "/data2");
  EXPECT_TRUE(c->run.policy.mounts[1].read_only);
  EXPECT_EQ(c->run.policy.workdir, "/data");
  EXPECT_TRUE(c->run.strace);
  EXPECT_TRUE(c->run.report_unsupported);
  EXPECT_THAT(c->run.env, ElementsAre(::testing::StartsWith("PATH="), "HOME=/home/user",
                                      "LANG=C.UTF-8", "TERM=xterm-256color", "A=1", "B=x=y"));
}

TEST(ParseCommandLineTest, Refusals) {
  TempDir dir;
  std::string file = dir.path() + "/file";
  std::ofstream(file) << "x";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"run", "--no-such-flag", "--", "/bin/true"}, "unknown flag --no-such-flag"},
      {{"run", "--no-such-flag", "/bin/true"}, "unknown flag --no-such-flag"},
      {{"run"}, "no program"},
      {{"run", "--platform", "kvm", "--", "/bin/true"}, "kvm"},
      {{"run", "--rootfs", dir.path() + "/absent", "--", "/bin/true"}, "--rootfs"},
      {{"run", "--rootfs", file, "--", "/bin/true"}, "not a directory"},
      {{"run", "--mount", dir.path() + "/absent:/data", "--", "/bin/true"}, "No such file"},
      {{"run", "--mount", dir.path() + ":data", "--", "/bin/true"}, "absolute"},
      {{"run", "--mount", dir.path() + ":/data:rx", "--", "/bin/true"}, "unknown mode"},
      {{"run", "--mount", file + ":/data", "--", "/bin/true"}, "not a directory"},
      {{"run", "--mount", dir.path(), "--", "/bin/true"}, "SRC:DST"},
      {{"run", "--mount", dir.path() + ":/a/../b", "--", "/bin/true"}, ".."},
      {{"run", "--mount", dir.path() + ":/", "--", "/bin/true"}, "sandbox root"},
      {{"run", "--mount", dir.path() + ":/d", "--mount", dir.path() + ":/d/", "--", "/bin/true"},
       "twice"},
      {{"run", "--workdir", "rel", "--", "/bin/true"}, "--workdir"},
      {{"run", "--env", "NOVALUE", "--", "/bin/true"}, "NAME=VALUE"},
      {{"run", "--env", "=x", "--", "/bin/true"}, "NAME=VALUE"},
      {{"run", "--strace", "stray", "--", "/bin/true"}, "stray"},
      {{"nosuchcommand"}, "nosuchcommand"},
      {{}, "subcommand"},
      {{"syscalls"}, "--markdown"},
      {{"version", "--", "x"}, "--"},
      {{"--version", "run", "--", "/bin/true"}, "--version takes no other arguments"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Command> r = Parse(c.args);
    ASSERT_FALSE(r.ok()) << ::testing::PrintToString(c.args);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.message))
        << ::testing::PrintToString(c.args);
    EXPECT_EQ(std::string(r.status().message()).find('\n'), std::string::npos);
  }
}

TEST(ParseCommandLineTest, OtherCommands) {
  absl::StatusOr<Command> c = Parse({"version"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, Command::Kind::kVersion);
  c = Parse({"--version"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, Command::Kind::kVersion);
  c = Parse({"syscalls", "--markdown"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, Command::Kind::kSyscalls);
  c = Parse({"--help"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, Command::Kind::kHelp);
  EXPECT_THAT(c->help, HasSubstr("run"));
  EXPECT_THAT(c->help, HasSubstr("--version"));
  c = Parse({"run", "--help"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, Command::Kind::kHelp);
  EXPECT_THAT(c->help, HasSubstr("--mount"));
}

TEST(ParseMountSpecTest, CanonicalizesSource) {
  TempDir dir;
  std::filesystem::create_directory(dir.path() + "/sub");
  std::filesystem::create_directory_symlink(dir.path() + "/sub", dir.path() + "/link");
  absl::StatusOr<policy::Mount> m = policy::ParseMountSpec(dir.path() + "/link/.:/x//y/./");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->source, dir.path() + "/sub");
  EXPECT_EQ(m->target, "/x/y");
  EXPECT_TRUE(m->read_only);
}

TEST(BuildEnvironmentTest, LaterValuesReplaceEarlierOnes) {
  absl::StatusOr<std::vector<std::string>> env =
      BuildEnvironment({"PATH=/opt/bin", "X=1", "X=2", "XY=3"}, nullptr);
  ASSERT_TRUE(env.ok());
  EXPECT_THAT(*env, ElementsAre("HOME=/root", "LANG=C.UTF-8", "PATH=/opt/bin", "X=2", "XY=3"));
}

}  // namespace
}  // namespace usentry::cli

namespace usentry::cli {
namespace {

TEST(ParseCommandLineTest, NetworkFlagsBuildTheNetPolicy) {
  absl::StatusOr<Command> c =
      Parse({"run", "--allow-net", "pypi.org", "--allow-net", "*.pythonhosted.org:443",
             "--allow-net-private", "10.1.2.3:5432", "--allow-host-port", "8080", "--dns",
             "192.0.2.53:5353", "--net-log", "net.jsonl", "--", "true"});
  ASSERT_TRUE(c.ok()) << c.status();
  const policy::NetPolicy& net = c->run.policy.net;
  ASSERT_EQ(net.allow.size(), 3u);
  EXPECT_EQ(net.allow[1].ToString(), "*.pythonhosted.org:443");
  EXPECT_TRUE(net.allow[2].private_ok);
  EXPECT_EQ(net.host_ports, (std::vector<uint16_t>{8080}));
  EXPECT_EQ(net.dns_servers, (std::vector<std::string>{"192.0.2.53:5353"}));
  EXPECT_EQ(net.log_file, "net.jsonl");
  EXPECT_TRUE(net.egress());
  c = Parse({"run", "--", "true"});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->run.policy.net.egress());
}

TEST(ParseCommandLineTest, BadNetworkFlagsAreOneLineErrors) {
  auto err = [](std::vector<std::string> args) {
    absl::StatusOr<Command> c = ParseCommandLine(args, nullptr);
    return c.ok() ? std::string("ok") : std::string(c.status().message());
  };
  EXPECT_THAT(err({"run", "--net", "host", "--", "true"}), HasSubstr("--net host: expected none"));
  EXPECT_THAT(err({"run", "--net", "none", "--allow-net", "pypi.org", "--", "true"}),
              HasSubstr("contradicts"));
  EXPECT_THAT(err({"run", "--allow-net", "pypi.org:99999", "--", "true"}),
              HasSubstr("--allow-net \"pypi.org:99999\": port"));
  EXPECT_THAT(err({"run", "--allow-net", "192.168.1.10", "--", "true"}),
              HasSubstr("--allow-net-private"));
  EXPECT_THAT(err({"run", "--allow-net-private", "db.internal", "--", "true"}),
              HasSubstr("not a name"));
  EXPECT_THAT(err({"run", "--allow-host-port", "0", "--", "true"}),
              HasSubstr("--allow-host-port 0"));
  EXPECT_THAT(err({"run", "--dns", "resolver.example", "--", "true"}), HasSubstr("--dns"));
}

TEST(ParseCommandLineTest, NetNoneDropsThePolicyFilesRules) {
  TempDir dir;
  std::string file = dir.path() + "/p.toml";
  std::ofstream(file) << "[net]\nallow = [\"pypi.org\"]\nhost_ports = [80]\n";
  absl::StatusOr<Command> c = Parse({"run", "--policy", file, "--", "true"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->run.policy.net.egress());
  c = Parse({"run", "--policy", file, "--net", "none", "--", "true"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->run.policy.net.egress());
}

}  // namespace
}  // namespace usentry::cli
