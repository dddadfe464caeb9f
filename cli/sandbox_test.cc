// RunSandbox with fake gofer and sentry bodies: process shape (PID 1, namespaces, id
// maps, FDs), exit codes, crash reporting, namespace fallback warnings and signal
// forwarding.
#include "cli/sandbox.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"

namespace usentry::cli {
namespace {

constexpr int kAllNamespaces =
    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;

// A gofer that answers each message with the same bytes until EOF.
int EchoGofer(UniqueFd sock) {
  char buf[256];
  while (true) {
    ssize_t n = recv(sock.get(), buf, sizeof(buf), 0);
    if (n <= 0) return 0;
    if (send(sock.get(), buf, n, MSG_NOSIGNAL) != n) return 1;
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Which of fds 0..255 are open.
std::vector<int> OpenFds() {
  std::vector<int> fds;
  for (int fd = 0; fd < 256; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0) fds.push_back(fd);
  }
  return fds;
}

// Sends `text` to the echo gofer on fd 3 and checks it comes back.
bool RoundTrip(int fd, const std::string& text) {
  if (send(fd, text.data(), text.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(text.size())) {
    return false;
  }
  char buf[256];
  ssize_t n = recv(fd, buf, sizeof(buf), 0);
  return n == static_cast<ssize_t>(text.size()) && std::string(buf, n) == text;
}

TEST(SandboxTest, ExitCodeOfTheSentryIsTheResult) {
  absl::StatusOr<SandboxResult> r =
      RunSandbox({}, EchoGofer, [](const SentryProcess&) { return 42; });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 42);
}

TEST(SandboxTest, SentryIsPid1OfItsNamespacesWithOnlyItsFds) {
  if (geteuid() != 0) GTEST_SKIP() << "checks the root-to-nobody mapping";
  absl::StatusOr<SandboxResult> r = RunSandbox({}, EchoGofer, [](const SentryProcess& p) {
    if (getpid() != 1) return 10;
    if (p.namespaces != kAllNamespaces) return 11;
    if (getuid() != 0 || geteuid() != 0 || getgid() != 0) return 12;
    // Host root became host nobody: "0 65534 1".
    std::string map = ReadFile("/proc/self/uid_map");
    if (map.find("65534") == std::string::npos) return 13;
    if (getgroups(0, nullptr) != 0) return 14;  // root's supplementary groups are gone
    if (OpenFds() != std::vector<int>{0, 1, 2, 3} || p.gofer_fd != 3) return 15;
    int type = 0;
    socklen_t len = sizeof(type);
    if (getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET) return 16;
    if (!RoundTrip(3, "ping")) return 17;
    return 0;
  });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_TRUE(r->warnings.empty());
}

TEST(SandboxTest, GoferHasOnlyItsSocketAndNoHostNetwork) {
  std::string host_net = std::filesystem::read_symlink("/proc/self/ns/net");
  absl::StatusOr<SandboxResult> r = RunSandbox(
      {},
      [host_net](UniqueFd sock) {
        // Report the findings as the first message.
        std::string verdict = "ok";
        if (OpenFds() != std::vector<int>{0, 1, 2, 3}) verdict = "fds";
        if (std::filesystem::read_symlink("/proc/self/ns/net") == host_net) verdict = "net";
        send(sock.get(), verdict.data(), verdict.size(), MSG_NOSIGNAL);
        return EchoGofer(std::move(sock));
      },
      [](const SentryProcess& p) {
        char buf[16];
        ssize_t n = recv(p.gofer_fd, buf, sizeof(buf), 0);
        if (n <= 0) return 20;
        std::string verdict(buf, n);
        if (verdict == "fds") return 21;
        if (verdict == "net") return 22;
        return verdict == "ok" ? 0 : 23;
      });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
}

// One new network namespace per run, not two: each costs ~1 ms of CPU to make and as
// much to tear down. As root the gofer joins the sentry's network and IPC namespaces.
TEST(SandboxTest, GoferJoinsTheSentrysNetworkAndIpcNamespacesAsRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "as another user the gofer makes namespaces of its own";
  const std::string host_net = std::filesystem::read_symlink("/proc/self/ns/net");
  absl::StatusOr<SandboxResult> r = RunSandbox(
      {},
      [](UniqueFd sock) {
        std::string links = std::string(std::filesystem::read_symlink("/proc/self/ns/net")) + " " +
                            std::string(std::filesystem::read_symlink("/proc/self/ns/ipc"));
        send(sock.get(), links.data(), links.size(), MSG_NOSIGNAL);
        return EchoGofer(std::move(sock));
      },
      [host_net](const SentryProcess& p) {
        char buf[128];
        ssize_t n = recv(p.gofer_fd, buf, sizeof(buf), 0);
        if (n <= 0) return 20;
        const std::string own = std::string(std::filesystem::read_symlink("/proc/self/ns/net")) +
                                " " +
                                std::string(std::filesystem::read_symlink("/proc/self/ns/ipc"));
        if (own.rfind(host_net, 0) == 0) return 21;  // the sentry itself got no network ns
        return std::string(buf, n) == own ? 0 : 22;
      });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
}

TEST(SandboxTest, SentryCrashIs125) {
  absl::StatusOr<SandboxResult> r = RunSandbox({}, EchoGofer, [](const SentryProcess&) {
    volatile int* p = nullptr;
    *p = 1;  // a real fault is delivered even to a PID-namespace init
    return 0;
  });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 125);
}

TEST(SandboxTest, GoferThatNeverExitsIsKilled) {
  absl::StatusOr<SandboxResult> r = RunSandbox(
      {},
      [](UniqueFd) {
        while (true) pause();
        return 0;
      },
      [](const SentryProcess&) { return 3; });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 3);
}

TEST(SandboxTest, RefusedNamespacesAreReportedAndDropped) {
  SandboxOptions options;
  options.refused_namespaces = CLONE_NEWUSER;
  absl::StatusOr<SandboxResult> r = RunSandbox(options, EchoGofer, [](const SentryProcess& p) {
    return p.namespaces == (kAllNamespaces & ~CLONE_NEWUSER) ? 0 : 1;
  });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, geteuid() == 0 ? 0 : 1);
  ASSERT_FALSE(r->warnings.empty());
  EXPECT_EQ(r->warnings[0], "user namespaces unavailable (clone: EPERM); running without them");

  options.refused_namespaces = CLONE_NEWPID | CLONE_NEWNET;
  r = RunSandbox(options, EchoGofer, [](const SentryProcess& p) {
    return p.namespaces == (kAllNamespaces & ~(CLONE_NEWPID | CLONE_NEWNET)) ? 0 : 1;
  });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
  ASSERT_EQ(r->warnings.size(), 2u);
  EXPECT_EQ(r->warnings[0], "PID namespaces unavailable (clone: EPERM); running without them");
  EXPECT_EQ(r->warnings[1], "network namespaces unavailable (clone: EPERM); running without them");
}

// The test process plays the CLI: once the sentry says it is ready (a file), a thread
// signals the test process, whose RunSandbox handler forwards to the sentry.
class SignalForwardingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/usentry-sandbox-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    // The sentry runs as host nobody when the test runs as root.
    chmod(dir_.c_str(), 0777);
    ready_ = dir_ + "/ready";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // RunSandbox requires a single-threaded caller (a clone()d child of a multi-threaded
  // process can inherit locks held by threads that do not exist in it, and hang), so
  // the signals come from a helper process, not a thread: it waits for the sentry's
  // ready file, then signals the test process `count` times.
  pid_t SignalWhenReady(int count) {
    const char* ready = ready_.c_str();
    pid_t test = getpid();
    pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < 600 && access(ready, F_OK) != 0; ++i) usleep(50000);
      for (int i = 0; i < count; ++i) {
        kill(test, SIGTERM);
        usleep(100000);
      }
      _exit(0);
    }
    return pid;
  }
  static void Join(pid_t pid) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }

  std::string dir_, ready_;
};

volatile sig_atomic_t g_got = 0;

TEST_F(SignalForwardingTest, FirstSignalReachesTheSentry) {
  pid_t signaler = SignalWhenReady(1);
  std::string ready = ready_;
  absl::StatusOr<SandboxResult> r = RunSandbox({}, EchoGofer, [ready](const SentryProcess&) {
    signal(SIGTERM, [](int sig) { g_got = sig; });
    // Raw calls only: this child is a clone() of a multi-threaded process, so malloc's
    // locks may be held by a thread that no longer exists here.
    close(open(ready.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    for (int i = 0; i < 300 && g_got == 0; ++i) usleep(20000);
    return g_got == SIGTERM ? 33 : 34;
  });
  Join(signaler);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 33);
}

TEST_F(SignalForwardingTest, SecondSignalKillsTheSentry) {
  pid_t signaler = SignalWhenReady(2);
  std::string ready = ready_;
  absl::StatusOr<SandboxResult> r = RunSandbox({}, EchoGofer, [ready](const SentryProcess&) {
    signal(SIGTERM, [](int) {});  // a sentry that does not stop
    close(open(ready.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    for (int i = 0; i < 300; ++i) usleep(20000);
    return 0;
  });
  Join(signaler);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 125);  // "sentry crashed (signal 9)"
}

}  // namespace
}  // namespace usentry::cli
