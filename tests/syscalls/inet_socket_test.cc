// AF_INET/AF_INET6 sockets: creation errnos, bind rules (ephemeral ports, conflicts,
// SO_REUSEADDR/SO_REUSEPORT, dual stack and IPV6_V6ONLY, non-local addresses, privileged
// ports), address lengths and families. Loopback only; every port is kernel-chosen.
#include <fcntl.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cstdio>

#include "tests/syscalls/inet_test_util.h"

namespace syscall_test {
namespace {

class InetSocketTest : public ::testing::TestWithParam<int> {
 protected:
  int family() const { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(Family, InetSocketTest, ::testing::Values(AF_INET, AF_INET6),
                         [](const auto& info) { return FamilyName(info.param); });

// --- socket(2) ---

TEST_P(InetSocketTest, StreamAndDgramReportTypeAndProtocol) {
  ScopedFd t = Sock(family(), SOCK_STREAM);
  ScopedFd u = Sock(family(), SOCK_DGRAM);
  EXPECT_EQ(GetInt(t.get(), SOL_SOCKET, SO_TYPE), SOCK_STREAM);
  EXPECT_EQ(GetInt(t.get(), SOL_SOCKET, SO_PROTOCOL), IPPROTO_TCP);
  EXPECT_EQ(GetInt(t.get(), SOL_SOCKET, SO_DOMAIN), family());
  EXPECT_EQ(GetInt(u.get(), SOL_SOCKET, SO_TYPE), SOCK_DGRAM);
  EXPECT_EQ(GetInt(u.get(), SOL_SOCKET, SO_PROTOCOL), IPPROTO_UDP);
  EXPECT_EQ(GetInt(t.get(), SOL_SOCKET, SO_ACCEPTCONN), 0);
}

TEST_P(InetSocketTest, ExplicitProtocolsAndBadOnes) {
  ScopedFd t(socket(family(), SOCK_STREAM, IPPROTO_TCP));
  ASSERT_SYS_OK(t.get());
  ScopedFd u(socket(family(), SOCK_DGRAM, IPPROTO_UDP));
  ASSERT_SYS_OK(u.get());
  EXPECT_ERRNO(socket(family(), SOCK_STREAM, IPPROTO_UDP), EPROTONOSUPPORT);
  EXPECT_ERRNO(socket(family(), SOCK_DGRAM, IPPROTO_TCP), EPROTONOSUPPORT);
  EXPECT_ERRNO(socket(family(), SOCK_STREAM, 300), EINVAL);
  EXPECT_ERRNO(socket(family(), SOCK_STREAM, -1), EINVAL);
}

TEST_P(InetSocketTest, SocketFlagsSetNonblockAndCloexec) {
  ScopedFd s(socket(family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  ASSERT_SYS_OK(s.get());
  EXPECT_TRUE(fcntl(s.get(), F_GETFL) & O_NONBLOCK);
  EXPECT_EQ(fcntl(s.get(), F_GETFD), FD_CLOEXEC);
}

TEST_P(InetSocketTest, SocketpairIsNotSupported) {
  int sv[2];
  EXPECT_ERRNO(socketpair(family(), SOCK_STREAM, 0, sv), EOPNOTSUPP);
  EXPECT_ERRNO(socketpair(family(), SOCK_DGRAM, 0, sv), EOPNOTSUPP);
}

TEST_P(InetSocketTest, FstatShowsASocket) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  struct stat st;
  ASSERT_SYS_OK(fstat(s.get(), &st));
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
}

// --- bind(2) ---

TEST_P(InetSocketTest, BindPortZeroPicksAnEphemeralPort) {
  for (int type : {SOCK_STREAM, SOCK_DGRAM}) {
    ScopedFd s = Sock(family(), type);
    SockAddr before = SockName(s.get());
    EXPECT_EQ(before.port(), 0);
    EXPECT_EQ(before.len, family() == AF_INET ? 16u : 28u);
    SockAddr a = Loopback(family());
    ASSERT_SYS_OK(bind(s.get(), a.get(), a.len));
    SockAddr got = SockName(s.get());
    EXPECT_GE(got.port(), 1024);
    EXPECT_EQ(got.ip(), family() == AF_INET ? "127.0.0.1" : "::1");
  }
}

TEST_P(InetSocketTest, BindTwiceIsEinval) {
  ScopedFd s = Bound(family(), SOCK_STREAM);
  SockAddr a = Loopback(family());
  EXPECT_ERRNO(bind(s.get(), a.get(), a.len), EINVAL);
  ScopedFd u = Bound(family(), SOCK_DGRAM);
  EXPECT_ERRNO(bind(u.get(), a.get(), a.len), EINVAL);
}

TEST_P(InetSocketTest, BindTakenPortIsEaddrinuse) {
  for (int type : {SOCK_STREAM, SOCK_DGRAM}) {
    ScopedFd a = Bound(family(), type);
    ScopedFd b = Sock(family(), type);
    SockAddr taken = SockName(a.get());
    EXPECT_ERRNO(bind(b.get(), taken.get(), taken.len), EADDRINUSE);
    // The wildcard address overlaps the loopback one.
    SockAddr any = AnyAddr(family(), taken.port());
    EXPECT_ERRNO(bind(b.get(), any.get(), any.len), EADDRINUSE);
  }
}

TEST_P(InetSocketTest, ClosingTheSocketFreesItsPort) {
  uint16_t port;
  {
    ScopedFd a = Bound(family(), SOCK_DGRAM);
    port = SockName(a.get()).port();
  }
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  SockAddr again = Loopback(family(), port);
  ASSERT_SYS_OK(bind(b.get(), again.get(), again.len));
}

TEST_P(InetSocketTest, ReuseaddrSharesAPortBetweenBoundTcpSockets) {
  ScopedFd a = Sock(family(), SOCK_STREAM);
  ScopedFd b = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(SetInt(a.get(), SOL_SOCKET, SO_REUSEADDR, 1));
  ASSERT_SYS_OK(SetInt(b.get(), SOL_SOCKET, SO_REUSEADDR, 1));
  SockAddr l = Loopback(family());
  ASSERT_SYS_OK(bind(a.get(), l.get(), l.len));
  SockAddr taken = SockName(a.get());
  ASSERT_SYS_OK(bind(b.get(), taken.get(), taken.len));
  // Only one of them may listen.
  ASSERT_SYS_OK(listen(a.get(), 1));
  EXPECT_ERRNO(listen(b.get(), 1), EADDRINUSE);
  EXPECT_EQ(GetInt(a.get(), SOL_SOCKET, SO_REUSEADDR), 1);
}

TEST_P(InetSocketTest, ReuseaddrDoesNotShareWithAListener) {
  ScopedFd a = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(SetInt(a.get(), SOL_SOCKET, SO_REUSEADDR, 1));
  SockAddr l = Loopback(family());
  ASSERT_SYS_OK(bind(a.get(), l.get(), l.len));
  ASSERT_SYS_OK(listen(a.get(), 1));
  ScopedFd b = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(SetInt(b.get(), SOL_SOCKET, SO_REUSEADDR, 1));
  SockAddr taken = SockName(a.get());
  EXPECT_ERRNO(bind(b.get(), taken.get(), taken.len), EADDRINUSE);
}

TEST_P(InetSocketTest, ReuseaddrSharesUdpPorts) {
  ScopedFd a = Sock(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  ASSERT_SYS_OK(SetInt(a.get(), SOL_SOCKET, SO_REUSEADDR, 1));
  ASSERT_SYS_OK(SetInt(b.get(), SOL_SOCKET, SO_REUSEADDR, 1));
  SockAddr l = Loopback(family());
  ASSERT_SYS_OK(bind(a.get(), l.get(), l.len));
  SockAddr taken = SockName(a.get());
  ASSERT_SYS_OK(bind(b.get(), taken.get(), taken.len));
}

TEST_P(InetSocketTest, ReuseportListenersShareAPort) {
  ScopedFd a = Sock(family(), SOCK_STREAM);
  ScopedFd b = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(SetInt(a.get(), SOL_SOCKET, SO_REUSEPORT, 1));
  ASSERT_SYS_OK(SetInt(b.get(), SOL_SOCKET, SO_REUSEPORT, 1));
  EXPECT_EQ(GetInt(a.get(), SOL_SOCKET, SO_REUSEPORT), 1);
  SockAddr l = Loopback(family());
  ASSERT_SYS_OK(bind(a.get(), l.get(), l.len));
  SockAddr taken = SockName(a.get());
  ASSERT_SYS_OK(bind(b.get(), taken.get(), taken.len));
  ASSERT_SYS_OK(listen(a.get(), 4));
  ASSERT_SYS_OK(listen(b.get(), 4));
  // A connection reaches one of the two.
  ScopedFd c = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(connect(c.get(), taken.get(), taken.len));
  short ra = PollOnce(a.get(), POLLIN, 1000), rb = PollOnce(b.get(), POLLIN, 0);
  EXPECT_TRUE((ra & POLLIN) || (rb & POLLIN));
}

TEST_P(InetSocketTest, ListenWithoutBindPicksAPort) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(listen(s.get(), 1));
  SockAddr a = SockName(s.get());
  EXPECT_GE(a.port(), 1024);
  EXPECT_EQ(a.ip(), family() == AF_INET ? "0.0.0.0" : "::");
  EXPECT_EQ(GetInt(s.get(), SOL_SOCKET, SO_ACCEPTCONN), 1);
}

TEST_P(InetSocketTest, BindNonLocalAddressIsEaddrnotavail) {
  // Documentation addresses (TEST-NET-1, 2001:db8::/32): never local. Nothing is sent.
  SockAddr a = Addr(family() == AF_INET ? "192.0.2.1" : "2001:db8::1");
  for (int type : {SOCK_STREAM, SOCK_DGRAM}) {
    ScopedFd s = Sock(family(), type);
    EXPECT_ERRNO(bind(s.get(), a.get(), a.len), EADDRNOTAVAIL);
  }
}

TEST_P(InetSocketTest, FreebindAllowsANonLocalAddress) {
  ScopedFd s = Sock(family(), SOCK_DGRAM);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_IP, IP_FREEBIND, 1));
  EXPECT_EQ(GetInt(s.get(), SOL_IP, IP_FREEBIND), 1);
  SockAddr a = Addr(family() == AF_INET ? "192.0.2.1" : "2001:db8::1");
  ASSERT_SYS_OK(bind(s.get(), a.get(), a.len));
  EXPECT_EQ(SockName(s.get()).ip(), a.ip());
}

TEST_P(InetSocketTest, BindShortAddressIsEinval) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  SockAddr a = Loopback(family());
  EXPECT_ERRNO(bind(s.get(), a.get(), family() == AF_INET ? 15 : 23), EINVAL);
  EXPECT_ERRNO(bind(s.get(), a.get(), 1), EINVAL);
}

TEST_P(InetSocketTest, BindOtherFamilyIsEafnosupport) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  SockAddr a = Loopback(family());
  a.ss.ss_family = family() == AF_INET ? AF_INET6 : AF_INET;
  EXPECT_ERRNO(bind(s.get(), a.get(), sizeof(sockaddr_in6)), EAFNOSUPPORT);
}

TEST_P(InetSocketTest, PrivilegedPortNeedsRoot) {
  FILE* f = fopen("/proc/sys/net/ipv4/ip_unprivileged_port_start", "r");
  int start = 1024;
  if (f != nullptr) {
    if (fscanf(f, "%d", &start) != 1) start = 1024;
    fclose(f);
  }
  if (start != 1024) GTEST_SKIP() << "ip_unprivileged_port_start is " << start;
  pid_t pid = fork();
  if (pid == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    int s = socket(family(), SOCK_STREAM, 0);
    SockAddr a = Loopback(family(), 80);
    int r = bind(s, a.get(), a.len);
    _exit(r == -1 && errno == EACCES ? 0 : 1);
  }
  EXPECT_EQ(WaitChild(pid), 0);
}

TEST_P(InetSocketTest, GetsocknameLengthIsTheFamilysSockaddr) {
  ScopedFd s = Bound(family(), SOCK_DGRAM);
  SockAddr a;
  a.len = 8;  // too short: truncated, but the full length is reported
  ASSERT_SYS_OK(getsockname(s.get(), a.get(), &a.len));
  EXPECT_EQ(a.len, family() == AF_INET ? 16u : 28u);
  EXPECT_EQ(a.family(), family());
}

TEST_P(InetSocketTest, GetpeernameUnconnectedIsEnotconn) {
  for (int type : {SOCK_STREAM, SOCK_DGRAM}) {
    ScopedFd s = Sock(family(), type);
    SockAddr a;
    a.len = sizeof(a.ss);
    EXPECT_ERRNO(getpeername(s.get(), a.get(), &a.len), ENOTCONN);
  }
}

// --- dual stack (AF_INET6 only) ---

TEST(DualStackTest, V6onlyDefaultsOffAndIsFixedByBind) {
  ScopedFd s = Sock(AF_INET6, SOCK_STREAM);
  EXPECT_EQ(GetInt(s.get(), SOL_IPV6, IPV6_V6ONLY), 0);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_IPV6, IPV6_V6ONLY, 1));
  EXPECT_EQ(GetInt(s.get(), SOL_IPV6, IPV6_V6ONLY), 1);
  SockAddr a = Loopback(AF_INET6);
  ASSERT_SYS_OK(bind(s.get(), a.get(), a.len));
  EXPECT_ERRNO(SetInt(s.get(), SOL_IPV6, IPV6_V6ONLY, 0), EINVAL);
}

TEST(DualStackTest, WildcardV6CoversIpv4) {
  ScopedFd six = Sock(AF_INET6, SOCK_DGRAM);
  SockAddr any = AnyAddr(AF_INET6);
  ASSERT_SYS_OK(bind(six.get(), any.get(), any.len));
  uint16_t port = SockName(six.get()).port();
  ScopedFd four = Sock(AF_INET, SOCK_DGRAM);
  SockAddr v4 = Loopback(AF_INET, port);
  EXPECT_ERRNO(bind(four.get(), v4.get(), v4.len), EADDRINUSE);
}

TEST(DualStackTest, V6onlyWildcardLeavesIpv4Free) {
  ScopedFd six = Sock(AF_INET6, SOCK_DGRAM);
  ASSERT_SYS_OK(SetInt(six.get(), SOL_IPV6, IPV6_V6ONLY, 1));
  SockAddr any = AnyAddr(AF_INET6);
  ASSERT_SYS_OK(bind(six.get(), any.get(), any.len));
  uint16_t port = SockName(six.get()).port();
  ScopedFd four = Sock(AF_INET, SOCK_DGRAM);
  SockAddr v4 = Loopback(AF_INET, port);
  ASSERT_SYS_OK(bind(four.get(), v4.get(), v4.len));
}

TEST(DualStackTest, DualStackListenerAcceptsIpv4Clients) {
  ScopedFd l = Sock(AF_INET6, SOCK_STREAM);
  SockAddr any = AnyAddr(AF_INET6);
  ASSERT_SYS_OK(bind(l.get(), any.get(), any.len));
  ASSERT_SYS_OK(listen(l.get(), 4));
  ScopedFd c = Sock(AF_INET, SOCK_STREAM);
  SockAddr dst = Loopback(AF_INET, SockName(l.get()).port());
  ASSERT_SYS_OK(connect(c.get(), dst.get(), dst.len));
  SockAddr peer;
  peer.len = sizeof(peer.ss);
  ScopedFd s(accept(l.get(), peer.get(), &peer.len));
  ASSERT_SYS_OK(s.get());
  EXPECT_EQ(peer.len, 28u);
  EXPECT_EQ(peer.ip(), "::ffff:127.0.0.1");
  EXPECT_EQ(peer.port(), SockName(c.get()).port());
  EXPECT_EQ(SockName(s.get()).ip(), "::ffff:127.0.0.1");
}

TEST(DualStackTest, V6onlyListenerRefusesIpv4) {
  ScopedFd l = Sock(AF_INET6, SOCK_STREAM);
  ASSERT_SYS_OK(SetInt(l.get(), SOL_IPV6, IPV6_V6ONLY, 1));
  SockAddr any = AnyAddr(AF_INET6);
  ASSERT_SYS_OK(bind(l.get(), any.get(), any.len));
  ASSERT_SYS_OK(listen(l.get(), 4));
  ScopedFd c = Sock(AF_INET, SOCK_STREAM);
  SockAddr dst = Loopback(AF_INET, SockName(l.get()).port());
  EXPECT_ERRNO(connect(c.get(), dst.get(), dst.len), ECONNREFUSED);
}

TEST(DualStackTest, V6SocketConnectsToAMappedIpv4Address) {
  ScopedFd l = Listener(AF_INET);
  ScopedFd c = Sock(AF_INET6, SOCK_STREAM);
  SockAddr dst = Addr("::ffff:127.0.0.1", SockName(l.get()).port());
  ASSERT_SYS_OK(connect(c.get(), dst.get(), dst.len));
  EXPECT_EQ(SockName(c.get()).ip(), "::ffff:127.0.0.1");
  EXPECT_EQ(PeerName(c.get()).ip(), "::ffff:127.0.0.1");
  SockAddr peer;
  peer.len = sizeof(peer.ss);
  ScopedFd s(accept(l.get(), peer.get(), &peer.len));
  ASSERT_SYS_OK(s.get());
  EXPECT_EQ(peer.len, 16u);
  EXPECT_EQ(peer.ip(), "127.0.0.1");
}

TEST(DualStackTest, V6onlySocketCannotReachIpv4) {
  ScopedFd l = Listener(AF_INET);
  ScopedFd c = Sock(AF_INET6, SOCK_STREAM);
  ASSERT_SYS_OK(SetInt(c.get(), SOL_IPV6, IPV6_V6ONLY, 1));
  SockAddr dst = Addr("::ffff:127.0.0.1", SockName(l.get()).port());
  EXPECT_ERRNO(connect(c.get(), dst.get(), dst.len), ENETUNREACH);
}

TEST(DualStackTest, MappedBindOnV6onlySocketIsEinval) {
  ScopedFd s = Sock(AF_INET6, SOCK_DGRAM);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_IPV6, IPV6_V6ONLY, 1));
  SockAddr a = Addr("::ffff:127.0.0.1");
  EXPECT_ERRNO(bind(s.get(), a.get(), a.len), EINVAL);
}

TEST(DualStackTest, AfUnspecAnyBindsAnIpv4Socket) {
  // Linux accepts AF_UNSPEC with INADDR_ANY from old programs; any other address is
  // EAFNOSUPPORT.
  ScopedFd s = Sock(AF_INET, SOCK_STREAM);
  SockAddr a = Addr("0.0.0.0");
  a.ss.ss_family = AF_UNSPEC;
  ASSERT_SYS_OK(bind(s.get(), a.get(), a.len));
  ScopedFd t = Sock(AF_INET, SOCK_STREAM);
  SockAddr b = Addr("127.0.0.1");
  b.ss.ss_family = AF_UNSPEC;
  EXPECT_ERRNO(bind(t.get(), b.get(), b.len), EAFNOSUPPORT);
}

}  // namespace
}  // namespace syscall_test
