// ConfineNetgate in a forked child: files are gone, internet sockets and relays work,
// raw/packet/netlink sockets, exec and namespace changes kill.
#include "sentry/confine/netgate_confine.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>

#include "gtest/gtest.h"

namespace usentry::sentry::confine {
namespace {

int RunConfined(const std::function<int()>& body) {
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    absl::StatusOr<ConfineReport> r = ConfineNetgate();
    if (!r.ok()) _exit(101);
    _exit(body());
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return status;
}

void ExpectKilled(int status) {
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

TEST(NetgateConfineTest, NoFilesButInternetSocketsAndRelaysWork) {
  // A listener of the test on 127.0.0.1 the confined child dials.
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(l, 1), 0);
  socklen_t len = sizeof(a);
  getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  int status = RunConfined([a] {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) return 1;
    if (connect(s, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0 && errno != EINPROGRESS)
      return 2;
    if (socket(AF_INET6, SOCK_DGRAM, 0) < 0) return 3;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0) return 4;
    return 0;
  });
  close(l);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Read from outside (capget itself is not on the allowlist): started as root, the
// confined process is host nobody with empty capability sets.
TEST(NetgateConfineTest, RootBecomesNobodyWithoutCapabilities) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root)";
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    close(done[1]);
    if (!ConfineNetgate().ok()) _exit(101);
    char c = 1;
    if (write(ready[1], &c, 1) != 1) _exit(102);
    (void)!read(done[0], &c, 1);  // until the parent has looked
    _exit(0);
  }
  close(ready[1]);
  close(done[0]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line, uid, gid, capeff, capprm, capbnd;
  while (std::getline(status, line)) {
    if (line.rfind("Uid:", 0) == 0) uid = line;
    if (line.rfind("Gid:", 0) == 0) gid = line;
    if (line.rfind("CapEff:", 0) == 0) capeff = line;
    if (line.rfind("CapPrm:", 0) == 0) capprm = line;
    if (line.rfind("CapBnd:", 0) == 0) capbnd = line;
  }
  close(done[1]);
  int st = 0;
  waitpid(pid, &st, 0);
  EXPECT_EQ(uid, "Uid:\t65534\t65534\t65534\t65534");
  EXPECT_EQ(gid, "Gid:\t65534\t65534\t65534\t65534");
  EXPECT_EQ(capeff, "CapEff:\t0000000000000000");
  EXPECT_EQ(capprm, "CapPrm:\t0000000000000000");
  EXPECT_EQ(capbnd, "CapBnd:\t0000000000000000");
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
}

TEST(NetgateConfineTest, OpeningAFileKills) {
  ExpectKilled(RunConfined([] { return open("/etc/passwd", O_RDONLY) >= 0 ? 0 : 1; }));
}

TEST(NetgateConfineTest, RawPacketAndNetlinkSocketsKill) {
  ExpectKilled(RunConfined([] { return socket(AF_INET, SOCK_RAW, IPPROTO_ICMP) >= 0 ? 0 : 1; }));
  ExpectKilled(RunConfined([] { return socket(AF_PACKET, SOCK_RAW, 0) >= 0 ? 0 : 1; }));
  ExpectKilled(
      RunConfined([] { return socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE) >= 0 ? 0 : 1; }));
  ExpectKilled(RunConfined([] { return socket(AF_UNIX, SOCK_STREAM, 0) >= 0 ? 0 : 1; }));
}

TEST(NetgateConfineTest, ExecBindAndNamespacesKill) {
  ExpectKilled(RunConfined([] {
    char* argv[] = {const_cast<char*>("true"), nullptr};
    execve("/bin/true", argv, nullptr);
    return 1;
  }));
  ExpectKilled(RunConfined([] {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    return bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 ? 0 : 1;
  }));
  ExpectKilled(RunConfined([] { return unshare(CLONE_NEWNET) == 0 ? 0 : 1; }));
}

}  // namespace
}  // namespace usentry::sentry::confine
