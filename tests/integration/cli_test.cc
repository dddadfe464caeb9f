// `usentry` as a user meets it: exit codes (app status, 128+N, 125/126/127), the clean
// environment, --strace, --workdir, stdin passthrough, and refusals of bad flags.
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "tests/integration/runner.h"

namespace usentry::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class CliTest : public SandboxTest {};

TEST_P(CliTest, ExitStatusOfTheAppIsUsentrysExitStatus) {
  for (const char* script : {"exit 0", "exit 7", "exit 255", "kill -9 $$", "kill -TERM $$"}) {
    RunResult native = Native({kBusybox, "sh", "-c", script});
    RunResult sandboxed = Sandboxed({kBusybox, "sh", "-c", script});
    EXPECT_EQ(sandboxed.exit_code, native.exit_code) << script << "\n" << sandboxed.Describe();
  }
  EXPECT_EQ(Sandboxed({kBusybox, "sh", "-c", "exit 7"}).exit_code, 7);
  EXPECT_EQ(Sandboxed({kBusybox, "sh", "-c", "kill -9 $$"}).exit_code, 137);
}

// Without address-space randomization (setarch -R, gdb's default, randomize_va_space=0)
// the sentry's large mappings used to land on the addresses the stub code needs.
TEST_P(CliTest, RunsWithAddressSpaceRandomizationOff) {
  // setarch is util-linux's (in every Debian install); only a host without it skips.
  if (access("/usr/bin/setarch", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/setarch";
  RunRequest req;
  req.argv = {"/usr/bin/setarch", "x86_64", "-R",     USENTRY_BIN, "run", "--platform",
              GetParam(),         "--",     kBusybox, "echo",      "hi"};
  req.env = {"PATH=/usr/bin:/bin"};
  RunResult r = RunProcess(req);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "hi\n") << r.Describe();
}

// A root filesystem whose /etc/resolv.conf and /etc/hosts are symlinks to files the
// view lacks (systemd-resolved's stub in /run, as on Ubuntu hosts) still starts: the
// sandbox's own files replace the links in the writable layer instead of following
// them (it used to exit 125, "create(/etc/resolv.conf) failed: No such file or
// directory"). The host's links stay as they were.
TEST_P(CliTest, SandboxFilesReplaceDanglingSymlinksOfTheView) {
  TempDir root;
  ASSERT_EQ(mkdir((root.path() + "/bin").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root.path() + "/etc").c_str(), 0755), 0);
  WriteHostFile(root.path() + "/bin/busybox", ReadHostFile(kBusybox));
  ASSERT_EQ(chmod((root.path() + "/bin/busybox").c_str(), 0755), 0);
  const std::string resolv_target = "/run/systemd/resolve/stub-resolv.conf";
  ASSERT_EQ(symlink(resolv_target.c_str(), (root.path() + "/etc/resolv.conf").c_str()), 0);
  ASSERT_EQ(symlink("../run/hosts", (root.path() + "/etc/hosts").c_str()), 0);
  RunResult r = Sandboxed({"/bin/busybox", "sh", "-c",
                           "cat /etc/resolv.conf /etc/hosts; test -L /etc/hosts && echo IS-LINK; "
                           "test -e /run && echo HAS-RUN; true"},
                          {"--rootfs", root.path()});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("nameserver ")) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("127.0.0.1\tlocalhost")) << r.Describe();
  EXPECT_THAT(r.out, Not(HasSubstr("IS-LINK"))) << r.Describe();
  EXPECT_THAT(r.out, Not(HasSubstr("HAS-RUN"))) << r.Describe();
  char target[256] = {};
  ASSERT_GT(readlink((root.path() + "/etc/resolv.conf").c_str(), target, sizeof(target) - 1), 0);
  EXPECT_EQ(std::string(target), resolv_target);
  EXPECT_FALSE(HostPathExists(root.path() + "/run"));
}

TEST_P(CliTest, NotFoundIs127AndNotExecutableIs126) {
  RunResult missing = Sandboxed({"/nonexistent/program"});
  EXPECT_EQ(missing.exit_code, 127) << missing.Describe();
  // /etc/hostname exists in the default view and is not executable.
  RunResult not_exec = Sandboxed({"/etc/hostname"});
  EXPECT_EQ(not_exec.exit_code, 126) << not_exec.Describe();
}

TEST_P(CliTest, UsageErrorsAre125WithOneLine) {
  TempDir dir;
  const std::vector<std::vector<std::string>> cases = {
      {"run", "--no-such-flag", "--", "/bin/true"},
      {"run", "--mount", dir.path() + "/absent:/data", "--", "/bin/true"},
      {"run", "--mount", dir.path() + ":relative", "--", "/bin/true"},
      {"run", "--mount", dir.path() + ":/data:rx", "--", "/bin/true"},
      {"run", "--rootfs", dir.path() + "/absent", "--", "/bin/true"},
      {"run", "--platform", "nosuch", "--", "/bin/true"},
      {"run"},
      {"frobnicate"},
  };
  for (const auto& args : cases) {
    RunResult r = Usentry(args);
    EXPECT_EQ(r.exit_code, 125) << ::testing::PrintToString(args) << r.Describe();
    EXPECT_THAT(r.err, StartsWith("usentry: ")) << ::testing::PrintToString(args);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST_P(CliTest, VersionAndHelp) {
  RunResult v = Usentry({"version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_THAT(v.out, StartsWith("usentry "));
  RunResult dv = Usentry({"--version"});
  EXPECT_EQ(dv.exit_code, 0) << dv.err;
  EXPECT_EQ(dv.out, v.out);
  RunResult h = Usentry({"run", "--help"});
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_THAT(h.out, HasSubstr("--mount"));
}

TEST_P(CliTest, EnvironmentIsCleanPlusTermAndEnvFlags) {
  const std::string leak = absl::StrCat("USENTRY_IT_LEAK_", getpid());
  RunResult r = Sandboxed({"/usr/bin/env"}, {"--env", "FOO=bar", "--env", "HOME=/home/x"},
                          {leak + "=must-not-appear", "TERM=xterm-usentry-test"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.out, Not(HasSubstr(leak)));
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  std::set<std::string> got(lines.begin(), lines.end());
  std::set<std::string> want = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                "HOME=/home/x", "LANG=C.UTF-8", "TERM=xterm-usentry-test",
                                "FOO=bar"};
  EXPECT_EQ(got, want) << r.out;
}

TEST_P(CliTest, StraceShowsSyscallsOnStderr) {
  RunResult r = Sandboxed({"/bin/true"}, {"--strace"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("execve("));
  EXPECT_THAT(r.err, HasSubstr("exit_group(0)"));
}

// bench/phases.py reads these lines; without the variable a run prints none.
TEST_P(CliTest, DebugPhasesPrintTheRunsMilestonesInOrder) {
  RunResult quiet = Sandboxed({kBusybox, "echo", "hi"}, {}, {"USENTRY_DEBUG_PHASES=0"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.Describe();
  EXPECT_THAT(quiet.err, Not(HasSubstr("usentry: phase")));

  RunResult r = Sandboxed({kBusybox, "echo", "hi"}, {}, {"USENTRY_DEBUG_PHASES=1"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "hi\n");
  std::map<std::string, double> at;
  for (absl::string_view line : absl::StrSplit(r.err, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    ASSERT_EQ(f.size(), 4u) << line;
    ASSERT_EQ(absl::StrCat(f[0], " ", f[1]), "usentry: phase") << line;
    double seconds = 0;
    ASSERT_TRUE(absl::SimpleAtod(f[2], &seconds)) << line;
    EXPECT_TRUE(at.emplace(f[3], seconds).second) << "twice: " << line;
  }
  // Each step happens after the one it waits for (the gofer's runs beside them).
  const std::vector<std::string> chain = {"cli-main",
                                          "sentry-cloned",
                                          "id-maps-written",
                                          "sentry-credentials",
                                          "platform-ready",
                                          "sentry-confined",
                                          "filesystem-ready",
                                          "program-loaded",
                                          "address-space-ready",
                                          "init-exited",
                                          "sentry-exit",
                                          "sentry-reaped",
                                          "cli-exit"};
  for (size_t i = 0; i < chain.size(); ++i) {
    ASSERT_TRUE(at.count(chain[i])) << chain[i] << " missing in:\n" << r.err;
    if (i > 0) {
      EXPECT_LE(at[chain[i - 1]], at[chain[i]]) << chain[i - 1] << " after " << chain[i];
    }
  }
  // These run beside the chain: the new sentry may print sentry-start before the CLI,
  // back from clone(), prints sentry-cloned.
  for (const char* other : {"sentry-start", "helpers-started", "gofer-serving"}) {
    ASSERT_TRUE(at.count(other)) << other << " missing in:\n" << r.err;
    EXPECT_LE(at["cli-main"], at[other]) << other;
    EXPECT_LE(at[other], at["init-exited"]) << other;
  }
  EXPECT_EQ(at.size(), chain.size() + 3) << r.err;
}

TEST_P(CliTest, WorkdirDefaultsToWorkspace) {
  RunResult r = Sandboxed({kBusybox, "pwd"});
  EXPECT_EQ(r.out, "/workspace\n") << r.Describe();
  r = Sandboxed({kBusybox, "pwd"}, {"--workdir", "/tmp"});
  EXPECT_EQ(r.out, "/tmp\n") << r.Describe();
}

TEST_P(CliTest, StdinAndStdoutPassThrough) {
  RunResult r = Sandboxed({kBusybox, "tr", "a-z", "A-Z"}, {}, {}, "hello from stdin\n");
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "HELLO FROM STDIN\n");
}

INSTANTIATE_TEST_SUITE_P(Platforms, CliTest, ::testing::ValuesIn(kTestPlatforms));

}  // namespace
}  // namespace usentry::testing
