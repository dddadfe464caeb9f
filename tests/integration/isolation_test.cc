// What the sandbox must not let through: writes reaching host files, masked secrets,
// writes to read-only mounts, symlinks and ".." escaping a mount. Every check is on the
// host's bytes or on a unique marker, never on a message alone.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "tests/integration/runner.h"

namespace usentry::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Isolation is checked with the strongest program the sandbox can hold: root inside.
class IsolationTest : public SandboxTest {
 protected:
  IsolationTest() { root_inside_ = true; }
};

std::string UniqueName(const std::string& prefix) {
  return absl::StrCat(prefix, getpid(), "-", ::testing::UnitTest::GetInstance()->random_seed(), "-",
                      time(nullptr));
}

TEST_P(IsolationTest, NewFileInEtcStaysInTheSandbox) {
  const std::string probe = "/etc/" + UniqueName("usentry-probe-");
  ASSERT_FALSE(HostPathExists(probe)) << "leftover " << probe;
  RunResult r = Sandboxed({kBusybox, "sh", "-c", "echo x > " + probe + " && cat " + probe});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "x\n") << r.Describe();
  EXPECT_FALSE(HostPathExists(probe)) << "the sandbox created " << probe << " on the host";
}

TEST_P(IsolationTest, OverwritingAHostFileChangesOnlyTheSandboxCopy) {
  const std::string before = ReadHostFile("/etc/hostname");
  RunResult r =
      Sandboxed({kBusybox, "sh", "-c", "echo overwritten > /etc/hostname && cat /etc/hostname"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "overwritten\n") << r.Describe();
  EXPECT_EQ(ReadHostFile("/etc/hostname"), before);
}

TEST_P(IsolationTest, ShadowIsMasked) {
  RunResult r = Sandboxed({"/bin/cat", "/etc/shadow"});
  EXPECT_NE(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("No such file or directory"));
}

TEST_P(IsolationTest, ReadOnlyMountRefusesWrites) {
  TempDir host;
  for (const std::string& spec : {host.path() + ":/data:ro", host.path() + ":/data"}) {
    RunResult r = Sandboxed({kBusybox, "touch", "/data/x"}, {"--mount", spec});
    EXPECT_NE(r.exit_code, 0) << spec << "\n" << r.Describe();
    EXPECT_THAT(r.err, HasSubstr("Read-only file system")) << spec;
    EXPECT_FALSE(HostPathExists(host.path() + "/x")) << spec;
  }
}

TEST_P(IsolationTest, ReadWriteMountWritesLandOnTheHost) {
  TempDir host;
  RunResult r = Sandboxed(
      {kBusybox, "sh", "-c", "echo landed > /data/out && mkdir /data/sub && echo y > /data/sub/f"},
      {"--mount", host.path() + ":/data:rw"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(ReadHostFile(host.path() + "/out"), "landed\n");
  EXPECT_EQ(ReadHostFile(host.path() + "/sub/f"), "y\n");
}

// The caller's gofer gives up host root too (host nobody with file-access capabilities),
// but what the sandbox creates in a rw mount is the caller's, as if the caller made it.
TEST_P(IsolationTest, WhatTheSandboxCreatesInAMountIsTheCallers) {
  TempDir host;
  RunResult r =
      Sandboxed({kBusybox, "sh", "-c", "echo x > /data/f && mkdir /data/d && ln -s f /data/l"},
                {"--mount", host.path() + ":/data:rw"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  for (const char* name : {"f", "d", "l"}) {
    struct stat st;
    ASSERT_EQ(lstat((host.path() + "/" + name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_uid, geteuid()) << name;
    EXPECT_EQ(st.st_gid, getegid()) << name;
  }
}

TEST_P(IsolationTest, SymlinkInAMountResolvesInTheSandboxView) {
  TempDir host;
  ASSERT_EQ(symlink("/etc/hostname", (host.path() + "/link").c_str()), 0);
  // The sandbox's /etc/hostname is changed first, so the host's content cannot match.
  RunResult r =
      Sandboxed({kBusybox, "sh", "-c", "echo sandbox-view > /etc/hostname && cat /data/link"},
                {"--mount", host.path() + ":/data:ro"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "sandbox-view\n") << r.Describe();
}

// A marker file next to (outside) the mounted directory, reached by every trick we know:
// "..", relative and absolute symlinks, deep "../" chains. Its content must never show.
TEST_P(IsolationTest, NothingOutsideTheMountsIsReachable) {
  TempDir host;
  const std::string mnt = host.path() + "/mnt";
  const std::string secret = host.path() + "/secret";
  const std::string marker = UniqueName("usentry-marker-");
  ASSERT_EQ(mkdir(mnt.c_str(), 0777), 0);
  ASSERT_EQ(mkdir(secret.c_str(), 0777), 0);
  WriteHostFile(secret + "/marker", marker + "\n");
  std::string deep = "../../../../../../../../../.." + secret;
  ASSERT_EQ(symlink("../secret", (mnt + "/esc").c_str()), 0);
  ASSERT_EQ(symlink(deep.c_str(), (mnt + "/deep").c_str()), 0);
  ASSERT_EQ(symlink((secret + "/marker").c_str(), (mnt + "/abs").c_str()), 0);
  ASSERT_EQ(symlink("../../../../../../root", (mnt + "/root").c_str()), 0);
  ASSERT_EQ(symlink("..", (mnt + "/up").c_str()), 0);

  const std::string script = absl::StrCat(
      "for p in /data/esc/marker /data/deep/marker /data/abs /data/../secret/marker "
      "/data/up/secret/marker /data/up/up/secret/marker /data/../../../..",
      secret, "/marker ", secret, "/marker /data/root/.bashrc; do cat \"$p\"; done; ",
      "ls -la /data/esc/ /data/deep/ /data/root/ /data/up/ 2>&1; ls -laR /data 2>&1; true");
  RunResult r = Sandboxed({kBusybox, "sh", "-c", script}, {"--mount", mnt + ":/data:rw"});
  EXPECT_FALSE(r.timed_out) << r.Describe();
  EXPECT_THAT(r.out, Not(HasSubstr(marker))) << r.Describe();
  EXPECT_THAT(r.err, Not(HasSubstr(marker))) << r.Describe();
  EXPECT_THAT(r.out + r.err, HasSubstr("No such file or directory")) << r.Describe();
  // The host's /root/.bashrc (if any) is not what the sandbox shows.
  const std::string bashrc = ReadHostFile("/root/.bashrc");
  if (bashrc.size() > 16) {
    EXPECT_THAT(r.out, Not(HasSubstr(bashrc)));
  }
  // And a rw mount gives no way to create files outside it either.
  RunResult w = Sandboxed({kBusybox, "sh", "-c",
                           "echo pwned > /data/esc/new; echo pwned > /data/up/new; "
                           "echo pwned > /data/deep/new; true"},
                          {"--mount", mnt + ":/data:rw"});
  EXPECT_FALSE(HostPathExists(secret + "/new")) << w.Describe();
  EXPECT_FALSE(HostPathExists(host.path() + "/new")) << w.Describe();
}

// A host file only root may read, in the default view and not masked, or "".
std::string RootOnlyHostFile() {
  for (const char* dir : {"/etc", "/etc/default", "/usr/lib"}) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      struct stat st;
      if (lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      const std::string name = e.path().filename();
      if (name.find("shadow") != std::string::npos || name == "sudoers") continue;  // masked
      if (st.st_uid == 0 && (st.st_mode & 0044) == 0) return e.path();
    }
  }
  return "";
}

// The default view is served by a gofer that has given up host root: even root inside
// the sandbox (and a sentry taken over by the program) can read only what any host user
// may. The caller's own --mount trees keep the caller's host permissions.
TEST_P(IsolationTest, RootInsideReadsOnlyWhatEveryHostUserMay) {
  if (geteuid() != 0) GTEST_SKIP() << "as a host user the gofer has no more than that user";
  const std::string closed = RootOnlyHostFile();
  if (closed.empty()) GTEST_SKIP() << "no root-only file in this host's /etc";
  RunResult r = Sandboxed({"/bin/cat", closed});
  EXPECT_NE(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("Permission denied")) << closed << "\n" << r.Describe();
  TempDir host;
  WriteHostFile(host.path() + "/mine", "the caller's\n");
  ASSERT_EQ(chmod((host.path() + "/mine").c_str(), 0600), 0);
  RunResult m = Sandboxed({"/bin/cat", "/data/mine", "/etc/os-release"},
                          {"--mount", host.path() + ":/data:ro"});
  EXPECT_EQ(m.exit_code, 0) << m.Describe();
  EXPECT_EQ(m.out, "the caller's\n" + ReadHostFile("/etc/os-release")) << m.Describe();
}

// The pids of `root` and every process below it.
std::set<pid_t> ProcessTree(pid_t root) {
  std::set<pid_t> tree = {root};
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      pid_t pid = atoi(entry.path().filename().c_str());
      if (pid <= 0 || tree.count(pid)) continue;
      std::string stat = ReadHostFile(absl::StrCat("/proc/", pid, "/stat"));
      size_t paren = stat.rfind(')');
      if (paren == std::string::npos) continue;
      pid_t ppid = 0;
      char state = 0;
      if (sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) == 2 && tree.count(ppid)) {
        tree.insert(pid);
        grew = true;
      }
    }
  }
  return tree;
}

// Whether `pid` still exists as a live (not zombie) process.
bool Alive(pid_t pid) {
  std::string stat = ReadHostFile(absl::StrCat("/proc/", pid, "/stat"));
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// `usentry run --platform P -- busybox sh -c SCRIPT`, forked with pipes on its stdin and
// stdout, read until the script printed "ready" (or 60 s passed).
struct ReadyCli {
  pid_t pid = -1;
  int in = -1;   // the CLI's stdin, ours to write and close
  int out = -1;  // the CLI's stdout
  std::string got;
};
ReadyCli StartUntilReady(const std::string& platform, const char* script) {
  int out[2], in[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(in, O_CLOEXEC) != 0) return {};
  ReadyCli cli;
  cli.pid = fork();
  if (cli.pid == 0) {
    dup2(out[1], 1);
    dup2(in[0], 0);
    const char* argv[] = {USENTRY_BIN, "run", "--platform", platform.c_str(), "--",
                          kBusybox,    "sh",  "-c",         script,           nullptr};
    const char* envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", nullptr};
    execve(USENTRY_BIN, const_cast<char**>(argv), const_cast<char**>(envp));
    _exit(127);
  }
  close(out[1]);
  close(in[0]);
  cli.in = in[1];
  cli.out = out[0];
  char buf[64];
  pollfd pfd{cli.out, POLLIN, 0};
  while (cli.got.find("ready\n") == std::string::npos && poll(&pfd, 1, 60000) == 1) {
    ssize_t n = read(cli.out, buf, sizeof buf);
    if (n <= 0) break;
    cli.got.append(buf, n);
  }
  return cli;
}

// A supervisor that SIGKILLs `usentry run` (a timeout, an OOM kill) must not leave the
// sentry, gofer or stubs behind running the app unsupervised.
TEST_P(IsolationTest, KillingTheCliEndsTheWholeSandbox) {
  ReadyCli started = StartUntilReady(GetParam(), "echo ready; exec sleep 100");
  ASSERT_GE(started.pid, 0);
  const pid_t cli = started.pid;
  const std::string got = started.got;
  close(started.in);
  close(started.out);
  std::set<pid_t> tree = ProcessTree(cli);
  // Each is named for ps, top and perf.
  std::set<std::string> names;
  for (pid_t pid : tree) {
    names.insert(std::string(
        absl::StripTrailingAsciiWhitespace(ReadHostFile(absl::StrCat("/proc/", pid, "/comm")))));
  }
  kill(cli, SIGKILL);
  waitpid(cli, nullptr, 0);
  ASSERT_EQ(got, "ready\n") << "the sandboxed shell did not start";
  EXPECT_GE(tree.size(), 3u) << "expected the CLI, the gofer and the sentry";
  EXPECT_TRUE(names.count("usentry-gofer")) << absl::StrJoin(names, " ");
  EXPECT_TRUE(names.count("usentry-sentry")) << absl::StrJoin(names, " ");
  std::vector<pid_t> left;
  for (int tries = 0; tries < 100; ++tries) {
    left.clear();
    for (pid_t pid : tree) {
      if (pid != cli && Alive(pid)) left.push_back(pid);
    }
    if (left.empty()) break;
    usleep(100 * 1000);
  }
  for (pid_t pid : left) kill(pid, SIGKILL);  // do not leave them to the next test
  EXPECT_TRUE(left.empty()) << left.size() << " sandbox processes outlived the CLI by 10 s, e.g. "
                            << ReadHostFile(
                                   absl::StrCat("/proc/", left.empty() ? 0 : left[0], "/cmdline"));
}

// The start time of a process (/proc/PID/stat field 22), "" once it is gone: with the
// pid it names one process even if the pid is used again.
std::string StartTime(pid_t pid) {
  std::string stat = ReadHostFile(absl::StrCat("/proc/", pid, "/stat"));
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return "";
  std::vector<std::string> fields = absl::StrSplit(stat.substr(paren + 2), ' ');
  return fields.size() > 19 ? fields[19] : "";
}

// When `usentry run` returns, no process of the sandbox is left, not even a zombie: the
// app's other processes (killed with init), their stubs, the sentry and the gofer.
TEST_P(IsolationTest, AnEndedRunLeavesNoProcessBehind) {
  ReadyCli started =
      StartUntilReady(GetParam(), "sleep 100 & sleep 100 & echo ready; read x; exit 0");
  ASSERT_GE(started.pid, 0);
  const pid_t cli = started.pid;
  std::map<pid_t, std::string> tree;
  for (pid_t pid : ProcessTree(cli)) {
    if (pid != cli) tree[pid] = StartTime(pid);
  }
  close(started.in);  // the shell's read ends, and with it the run
  int status = 0;
  ASSERT_EQ(waitpid(cli, &status, 0), cli);
  std::vector<pid_t> left;
  for (const auto& [pid, start] : tree) {
    if (!start.empty() && StartTime(pid) == start) left.push_back(pid);
  }
  for (pid_t pid : left) kill(pid, SIGKILL);  // do not leave them to the next test
  close(started.out);
  ASSERT_EQ(started.got, "ready\n") << "the sandboxed shell did not start";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // The gofer, the sentry and a stub for each of the three app processes at least.
  EXPECT_GE(tree.size(), 4u);
  EXPECT_TRUE(left.empty()) << left.size() << " sandbox processes outlived the CLI, e.g. "
                            << ReadHostFile(
                                   absl::StrCat("/proc/", left.empty() ? 0 : left[0], "/comm"));
}

// AF_UNIX sockets live in the sentry: a host socket inside a rw mount cannot be
// connected to, and binding there makes no host socket (EPERM, noted in the table).
TEST_P(IsolationTest, UnixSocketsNeverReachTheHost) {
  TempDir host;
  const std::string mnt = host.path() + "/mnt";
  ASSERT_EQ(mkdir(mnt.c_str(), 0777), 0);
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  const std::string host_sock = mnt + "/host.sock";
  ASSERT_LT(host_sock.size(), sizeof(sa.sun_path));
  memcpy(sa.sun_path, host_sock.c_str(), host_sock.size() + 1);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  constexpr char kScript[] = R"py(
import errno, socket
for op, path in (("connect", "/data/host.sock"), ("bind", "/data/new.sock")):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        getattr(s, op)(path)
        print(op, "ok")
    except OSError as e:
        print(op, errno.errorcode[e.errno])
)py";
  RunResult r = Sandboxed({"/usr/bin/python3", "-c", kScript}, {"--mount", mnt + ":/data:rw"});
  EXPECT_EQ(r.out, "connect ECONNREFUSED\nbind EPERM\n") << r.Describe();
  EXPECT_LT(accept(listener, nullptr, nullptr), 0);  // nobody knocked
  close(listener);
  EXPECT_FALSE(HostPathExists(mnt + "/new.sock"));
}

INSTANTIATE_TEST_SUITE_P(Platforms, IsolationTest, ::testing::ValuesIn(kTestPlatforms));

}  // namespace
}  // namespace usentry::testing
