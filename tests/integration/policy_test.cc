// The run's policy as a user meets it: a TOML file and flags over it, the exec
// allowlist, --timeout, --user, and the errors for bad input.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "nlohmann/json.hpp"
#include "tests/integration/runner.h"

namespace usentry::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class PolicyTest : public SandboxTest {};

TEST_P(PolicyTest, ExecAllowlistRefusesOtherProgramsAndExplains) {
  TempDir dir;
  std::string audit = dir.path() + "/audit.jsonl";
  RunResult r = Sandboxed(
      {"/bin/sh", "-c", "echo allowed; ls /"},
      {"--allow-exec", "/bin/sh", "--allow-exec", "/bin/echo", "--explain", "--audit", audit});
  EXPECT_EQ(r.exit_code, 126) << r.Describe();
  EXPECT_EQ(r.out, "allowed\n");
  EXPECT_THAT(r.err, HasSubstr("usentry: exec /usr/bin/ls denied: not in the exec allowlist "
                               "(policy: exec.allow)\n"));
  std::vector<nlohmann::json> denied = RecordsOfEvent(ReadAuditRecords(audit), "denied");
  ASSERT_FALSE(denied.empty());
  EXPECT_EQ(denied[0]["op"], "exec");
  EXPECT_EQ(denied[0]["path"], "/usr/bin/ls");
  EXPECT_EQ(denied[0]["errno"], "EACCES");
  EXPECT_EQ(denied[0]["policy"], "exec.allow");
}

// Patterns are resolved in the pristine view: /usr/bin/python3 allows the python3.11
// it points to; a copy of another binary over it does not run.
TEST_P(PolicyTest, ExecAllowlistNeverRunsAFileWrittenInTheSandbox) {
  RunResult r = Sandboxed({"/usr/bin/python3", "-c",
                           "import shutil, subprocess\n"
                           "print(subprocess.run(['/usr/bin/python3', '-c', 'print(7)'],"
                           " capture_output=True).stdout.decode().strip())\n"
                           "shutil.copy('/bin/ls', '/usr/bin/python3.11')\n"
                           "try:\n"
                           "  subprocess.run(['/usr/bin/python3', '/'])\n"
                           "  print('ran')\n"
                           "except PermissionError:\n"
                           "  print('refused')\n"},
                          // Root inside, who may overwrite /usr/bin in the overlay: the
                          // allowlist still refuses what was written there.
                          {"--user", "0", "--allow-exec", "/usr/bin/python3", "--explain"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "7\nrefused\n");
  EXPECT_THAT(r.err, HasSubstr("the file was written in the sandbox (policy: exec.allow)"));
}

TEST_P(PolicyTest, TimeoutKillsEveryProcessWithExit124) {
  TempDir dir;
  std::string audit = dir.path() + "/audit.jsonl";
  RunResult r = Sandboxed({"/bin/sh", "-c", "sleep 100 & while :; do :; done"},
                          {"--timeout", "1s", "--audit", audit});
  EXPECT_EQ(r.exit_code, 124) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("usentry: timeout: the run exceeded 1s; killed"));
  std::vector<nlohmann::json> records = ReadAuditRecords(audit);
  std::vector<nlohmann::json> limits = RecordsOfEvent(records, "limit");
  ASSERT_EQ(limits.size(), 1u) << ReadHostFile(audit);
  EXPECT_EQ(limits[0]["limit"], "timeout");
  std::vector<nlohmann::json> ends = RecordsOfEvent(records, "run_end");
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0]["exit_code"], 124);
  EXPECT_EQ(ends[0]["how"], "timeout");
}

TEST_P(PolicyTest, PolicyFileWithFlagsOverIt) {
  TempDir dir;
  WriteHostFile(dir.path() + "/data.txt", "from the host\n");
  WriteHostFile(dir.path() + "/p.toml",
                "workdir = \"/data\"\n"
                "[[mount]]\nsource = \".\"\ntarget = \"/data\"\n"
                "[env]\nset = { GREETING = \"hello\", OTHER = \"file\" }\n"
                "pass = [\"USENTRY_TEST_PASSED\"]\n"
                "[audit]\nfile = \"audit.jsonl\"\n");
  RunResult r = Usentry({"run", "--platform", GetParam(), "--policy", dir.path() + "/p.toml",
                         "--env", "OTHER=flag", "--", "/bin/sh", "-c",
                         "pwd; cat data.txt; echo $GREETING $OTHER $USENTRY_TEST_PASSED "
                         "$USENTRY_TEST_NOT_PASSED"},
                        {"USENTRY_TEST_PASSED=yes", "USENTRY_TEST_NOT_PASSED=leak"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "/data\nfrom the host\nhello flag yes\n");
  std::vector<nlohmann::json> starts =
      RecordsOfEvent(ReadAuditRecords(dir.path() + "/audit.jsonl"), "run_start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_THAT(starts[0]["policy_digest"].get<std::string>(), ::testing::StartsWith("sha256:"));
  EXPECT_EQ(starts[0]["policy"]["workdir"], "/data");
  RunResult check = Usentry({"policy", "check", dir.path() + "/p.toml"});
  EXPECT_EQ(check.exit_code, 0) << check.Describe();
  EXPECT_THAT(check.out, HasSubstr(": ok (sha256:"));
}

TEST_P(PolicyTest, BadPolicyIsOneLineAndExit125) {
  TempDir dir;
  WriteHostFile(dir.path() + "/p.toml", "[limits]\nmemory = \"2GiB\"\nmax_taks = 3\n");
  RunResult r = Usentry(
      {"run", "--platform", GetParam(), "--policy", dir.path() + "/p.toml", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(r.err,
            absl::StrCat("usentry: ", dir.path(), "/p.toml:3: limits.max_taks: unknown key\n"));
  RunResult check = Usentry({"policy", "check", dir.path() + "/p.toml"});
  EXPECT_EQ(check.exit_code, 125);
  RunResult flag = Sandboxed({"/bin/true"}, {"--memory", "lots"});
  EXPECT_EQ(flag.exit_code, 125);
  EXPECT_EQ(flag.err, "usentry: --memory lots: \"lots\" is not a size (e.g. 2GiB, 512MiB, 4096)\n");
  RunResult audit = Sandboxed({"/bin/true"}, {"--audit", dir.path() + "/no/such/dir/a.jsonl"});
  EXPECT_EQ(audit.exit_code, 125);
  EXPECT_THAT(audit.err, HasSubstr("--audit"));
}

TEST_P(PolicyTest, UserFlagMakesAnOrdinaryUserInside) {
  RunResult r = Sandboxed({"/bin/sh", "-c", "id -u; id -g; echo x > /etc/usentry-x; echo rc=$?"},
                          {"--user", "1000:1001"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("1000\n1001\n"));
  EXPECT_THAT(r.out, HasSubstr("rc=2"));
  EXPECT_THAT(r.err, HasSubstr("Permission denied"));
}

// Without --user the program is an ordinary user: its workdir and home are its own and
// writable, the system's files are not, root's home is closed, and the refusal says
// which policy key decides it. The identity is in the policy the audit records.
TEST_P(PolicyTest, TheDefaultIdentityIsAnOrdinaryUserWithItsOwnWorkdirAndHome) {
  TempDir dir;
  std::string audit = dir.path() + "/audit.jsonl";
  RunResult r = Sandboxed(
      {"/bin/sh", "-c",
       "id -u; id -g; echo $HOME; pwd; echo a > a && echo workdir-ok; "
       "echo b > $HOME/b && echo home-ok; echo x > /etc/usentry-x; echo etc-rc=$?; "
       "ls /root >/dev/null 2>&1; echo root-home-rc=$?; stat -c '%u:%g %a' /workspace $HOME"},
      {"--audit", audit, "--explain"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out,
            "1000\n1000\n/home/user\n/workspace\nworkdir-ok\nhome-ok\netc-rc=2\nroot-home-rc=2\n"
            "1000:1000 755\n1000:1000 755\n")
      << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("usentry: create /etc/usentry-x denied: permission denied for uid "
                               "1000 (policy: identity)"))
      << r.Describe();
  std::vector<nlohmann::json> records = ReadAuditRecords(audit);
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records[0]["policy"]["identity"], (nlohmann::json{{"gid", 1000}, {"uid", 1000}}));
  // Root inside only when asked.
  RunResult root = Sandboxed({"/bin/sh", "-c", "id -u; echo $HOME"}, {"--user", "0"});
  EXPECT_EQ(root.out, "0\n/root\n") << root.Describe();
}

// A read-write mount of the caller's own directory is the program's own inside (as in a
// rootless container): it may write there, and what it writes is the caller's on the
// host. A file of another host owner stays foreign: not writable, its owner unchanged.
TEST_P(PolicyTest, TheCallersMountedFilesAreTheProgramsOwn) {
  TempDir host;
  const std::string foreign = host.path() + "/foreign";
  WriteHostFile(foreign, "not yours\n");
  ASSERT_EQ(chmod(foreign.c_str(), 0644), 0);
  const bool root = geteuid() == 0;
  if (root) ASSERT_EQ(chown(foreign.c_str(), 4242, 4242), 0);
  RunResult r = Sandboxed({"/bin/sh", "-c",
                           "stat -c '%u:%g' /out; echo new > /out/new && echo wrote; "
                           "stat -c '%u:%g' /out/new; stat -c '%u' /out/foreign; "
                           "echo x >> /out/foreign; echo foreign-rc=$?"},
                          {"--mount", host.path() + ":/out:rw"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  std::string expected = "1000:1000\nwrote\n1000:1000\n";
  if (root) expected += "4242\nforeign-rc=2\n";
  EXPECT_THAT(r.out, ::testing::StartsWith(expected)) << r.Describe();
  struct stat st;
  ASSERT_EQ(stat((host.path() + "/new").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, geteuid());  // the caller's on the host
  EXPECT_EQ(ReadHostFile(host.path() + "/new"), "new\n");
  EXPECT_EQ(ReadHostFile(foreign), "not yours\n");
}

// On a host that refuses namespaces (inside an unprivileged container, whose seccomp
// profile forbids creating them) the run goes on with syscall emulation, and both stderr
// and run_start say which layers are missing.
TEST_P(PolicyTest, WithoutNamespacesTheRunStillEmulatesAndSaysWhatIsMissing) {
  TempDir dir;
  std::string audit = dir.path() + "/audit.jsonl";
  RunRequest req;
  req.argv = {NO_NAMESPACES_BIN,
              USENTRY_BIN,
              "run",
              "--platform",
              GetParam(),
              "--audit",
              audit,
              "--",
              "/bin/sh",
              "-c",
              "echo hi; id -u; uname -s"};
  req.env = SandboxDefaultEnv();
  RunResult r = RunProcess(req);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "hi\n1000\nLinux\n") << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("usentry: warning: user namespaces unavailable")) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("gofer network isolation unavailable")) << r.Describe();
  std::vector<nlohmann::json> records = ReadAuditRecords(audit);
  ASSERT_FALSE(records.empty()) << r.Describe();
  std::map<std::string, bool> layers;
  for (const auto& l : records[0]["layers"]) layers[l.value("name", "")] = l.value("applied", true);
  EXPECT_FALSE(layers["user-namespace"]) << records[0].dump();
  EXPECT_FALSE(layers["PID-namespace"]) << records[0].dump();
  EXPECT_FALSE(layers["mount-namespace"]) << records[0].dump();
  EXPECT_TRUE(layers["syscall-emulation"]) << records[0].dump();
  EXPECT_TRUE(layers["sentry-seccomp"]) << records[0].dump();
  EXPECT_EQ(records.back().value("event", ""), "run_end");
}

// The audit stream is opened by the CLI; the sandbox cannot see it or its directory.
TEST_P(PolicyTest, AppCannotReachTheAuditFile) {
  TempDir dir;
  std::string audit = dir.path() + "/audit.jsonl";
  RunResult r = Sandboxed({"/bin/sh", "-c",
                           absl::StrCat("for f in /proc/self/fd/* /proc/1/fd/*; do "
                                        "echo FORG\"\"ED >> $f 2>/dev/null; done; "
                                        "echo FORG\"\"ED >> ",
                                        audit, " ; true")},
                          {"--audit", audit});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  std::string text = ReadHostFile(audit);
  EXPECT_THAT(text, Not(HasSubstr("FORGED")));
  for (const auto& rec : ReadAuditRecords(audit)) EXPECT_TRUE(rec.contains("event"));
}

// Started by an ordinary user (here: root dropping to nobody with setpriv), usentry
// still builds every layer through user namespaces, and says so in run_start.
TEST_P(PolicyTest, AnOrdinaryUserGetsEveryLayer) {
  if (geteuid() != 0 || !HostPathExists("/usr/bin/setpriv")) GTEST_SKIP() << "needs root + setpriv";
  TempDir dir;
  std::filesystem::permissions(dir.path(), std::filesystem::perms::all);
  std::string audit = dir.path() + "/audit.jsonl";
  RunRequest req;
  req.argv = {"/usr/bin/setpriv",
              "--reuid=65534",
              "--regid=65534",
              "--clear-groups",
              USENTRY_BIN,
              "run",
              "--platform",
              GetParam(),
              "--audit",
              audit,
              "--",
              "/bin/sh",
              "-c",
              "id -u; echo ok"};  // the default identity: an ordinary user
  req.env = SandboxDefaultEnv();
  req.cwd = "/tmp";
  RunResult probe = RunProcess({{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                 "--clear-groups", USENTRY_BIN, "version"},
                                SandboxDefaultEnv(),
                                "",
                                "/tmp",
                                30});
  if (probe.exit_code != 0) GTEST_SKIP() << "usentry is not reachable by nobody here";
  RunResult r = RunProcess(req);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "1000\nok\n");
  EXPECT_THAT(r.err, Not(HasSubstr("warning")));
  std::vector<nlohmann::json> starts = RecordsOfEvent(ReadAuditRecords(audit), "run_start");
  ASSERT_EQ(starts.size(), 1u);
  for (const auto& layer : starts[0]["layers"]) {
    EXPECT_TRUE(layer["applied"].get<bool>()) << layer.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Platforms, PolicyTest, ::testing::ValuesIn(kTestPlatforms));

}  // namespace
}  // namespace usentry::testing
