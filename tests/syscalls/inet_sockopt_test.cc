// Internet socket options: SOL_TCP, SOL_IP and SOL_IPV6 values as Linux stores and
// reports them (defaults, ranges, conversions), TCP_INFO's state, and the errnos of
// levels a socket does not have. Values that depend on the host's sysctls (the
// congestion control default, buffer autotuning, the loopback MTU) are not compared.
#include <netinet/tcp.h>
#include <unistd.h>

#include <string>

#include "tests/syscalls/inet_test_util.h"

namespace syscall_test {
namespace {

class SockoptTest : public ::testing::TestWithParam<int> {
 protected:
  int family() const { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(Family, SockoptTest, ::testing::Values(AF_INET, AF_INET6),
                         [](const auto& info) { return FamilyName(info.param); });

int TcpState(int fd) {
  tcp_info ti{};
  socklen_t len = sizeof(ti);
  if (getsockopt(fd, SOL_TCP, TCP_INFO, &ti, &len) != 0) return -1;
  return ti.tcpi_state;
}

TEST_P(SockoptTest, TcpDefaults) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_NODELAY), 0);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_CORK), 0);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_KEEPIDLE), 7200);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_KEEPINTVL), 75);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_KEEPCNT), 9);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_MAXSEG), 536);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_QUICKACK), 1);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_USER_TIMEOUT), 0);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_DEFER_ACCEPT), 0);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_FASTOPEN), 0);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_LINGER2), 60);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_SYNCNT), 6);
}

TEST_P(SockoptTest, TcpFlagsRoundTrip) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  for (int opt : {TCP_NODELAY, TCP_CORK}) {
    ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, opt, 1));
    EXPECT_EQ(GetInt(s.get(), SOL_TCP, opt), 1);
    ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, opt, 0));
    EXPECT_EQ(GetInt(s.get(), SOL_TCP, opt), 0);
  }
  ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, TCP_QUICKACK, 0));
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_QUICKACK), 0);
}

TEST_P(SockoptTest, KeepaliveTimersAndTheirRanges) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_SOCKET, SO_KEEPALIVE, 1));
  EXPECT_EQ(GetInt(s.get(), SOL_SOCKET, SO_KEEPALIVE), 1);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, TCP_KEEPIDLE, 30));
  ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, TCP_KEEPINTVL, 5));
  ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, TCP_KEEPCNT, 3));
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_KEEPIDLE), 30);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_KEEPINTVL), 5);
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_KEEPCNT), 3);
  EXPECT_ERRNO(SetInt(s.get(), SOL_TCP, TCP_KEEPIDLE, 0), EINVAL);
  EXPECT_ERRNO(SetInt(s.get(), SOL_TCP, TCP_KEEPINTVL, 40000), EINVAL);
  EXPECT_ERRNO(SetInt(s.get(), SOL_TCP, TCP_KEEPCNT, 200), EINVAL);
  char one = 1;
  EXPECT_ERRNO(setsockopt(s.get(), SOL_TCP, TCP_KEEPIDLE, &one, 1), EINVAL);
}

TEST_P(SockoptTest, MaxsegRange) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, TCP_MAXSEG, 1000));
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_MAXSEG), 1000);
  EXPECT_ERRNO(SetInt(s.get(), SOL_TCP, TCP_MAXSEG, 50), EINVAL);
  EXPECT_ERRNO(SetInt(s.get(), SOL_TCP, TCP_MAXSEG, 40000), EINVAL);
}

TEST_P(SockoptTest, DeferAcceptRoundsToRetransmits) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, TCP_DEFER_ACCEPT, 5));
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_DEFER_ACCEPT), 7);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, TCP_DEFER_ACCEPT, 1));
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_DEFER_ACCEPT), 1);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, TCP_DEFER_ACCEPT, -3));
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_DEFER_ACCEPT), 0);
}

TEST_P(SockoptTest, Linger2AndUserTimeout) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, TCP_LINGER2, 500));
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_LINGER2), 120);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, TCP_LINGER2, -5));
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_LINGER2), -1);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, TCP_USER_TIMEOUT, 1500));
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_USER_TIMEOUT), 1500);
  EXPECT_ERRNO(SetInt(s.get(), SOL_TCP, TCP_USER_TIMEOUT, -1), EINVAL);
}

TEST_P(SockoptTest, FastopenOptions) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, TCP_FASTOPEN, 5));
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_FASTOPEN), 5);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_TCP, TCP_FASTOPEN_CONNECT, 1));
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_FASTOPEN_CONNECT), 1);
  EXPECT_ERRNO(SetInt(s.get(), SOL_TCP, TCP_FASTOPEN_CONNECT, 2), EINVAL);
  TcpConn c = Connected(family());
  EXPECT_ERRNO(SetInt(c.client.get(), SOL_TCP, TCP_FASTOPEN, 1), EINVAL);
}

TEST_P(SockoptTest, CongestionControlNames) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(setsockopt(s.get(), SOL_TCP, TCP_CONGESTION, "reno", 4));
  char name[16] = {};
  socklen_t len = sizeof(name);
  ASSERT_SYS_OK(getsockopt(s.get(), SOL_TCP, TCP_CONGESTION, name, &len));
  EXPECT_STREQ(name, "reno");
  EXPECT_EQ(len, 16u);
  EXPECT_ERRNO(setsockopt(s.get(), SOL_TCP, TCP_CONGESTION, "no-such-cc", 10), ENOENT);
}

TEST_P(SockoptTest, TcpInfoFollowsTheState) {
  ScopedFd fresh = Sock(family(), SOCK_STREAM);
  EXPECT_EQ(TcpState(fresh.get()), TCP_CLOSE);
  TcpConn c = Connected(family());
  EXPECT_EQ(TcpState(c.listener.get()), TCP_LISTEN);
  EXPECT_EQ(TcpState(c.client.get()), TCP_ESTABLISHED);
  EXPECT_EQ(TcpState(c.server.get()), TCP_ESTABLISHED);
  ASSERT_SYS_OK(shutdown(c.client.get(), SHUT_WR));
  PollOnce(c.server.get(), POLLRDHUP, 2000);
  EXPECT_EQ(TcpState(c.server.get()), TCP_CLOSE_WAIT);
  tcp_info ti{};
  socklen_t len = 8;  // a caller gets what fits
  ASSERT_SYS_OK(getsockopt(c.server.get(), SOL_TCP, TCP_INFO, &ti, &len));
  EXPECT_EQ(len, 8u);
}

TEST_P(SockoptTest, ConnectedMssIsLargerThanTheDefault) {
  TcpConn c = Connected(family());
  EXPECT_GT(GetInt(c.client.get(), SOL_TCP, TCP_MAXSEG), 536);
  ScopedFd s = Sock(family(), SOCK_STREAM);
  int mtu = 0;
  socklen_t len = sizeof(mtu);
  EXPECT_ERRNO(getsockopt(s.get(), SOL_IP, IP_MTU, &mtu, &len), ENOTCONN);
}

TEST_P(SockoptTest, BufferSizesAreDoubled) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_SOCKET, SO_SNDBUF, 32768));
  EXPECT_EQ(GetInt(s.get(), SOL_SOCKET, SO_SNDBUF), 65536);
  ASSERT_SYS_OK(SetInt(s.get(), SOL_SOCKET, SO_RCVBUF, 1));
  EXPECT_EQ(GetInt(s.get(), SOL_SOCKET, SO_RCVBUF), 2304);
  ScopedFd u = Sock(family(), SOCK_DGRAM);
  EXPECT_EQ(GetInt(u.get(), SOL_SOCKET, SO_SNDBUF), 212992);
}

TEST_P(SockoptTest, IpTosTtlAndPmtuDiscovery) {
  ScopedFd t = Sock(family(), SOCK_STREAM);
  ScopedFd u = Sock(family(), SOCK_DGRAM);
  EXPECT_EQ(GetInt(t.get(), SOL_IP, IP_TOS), 0);
  // TCP keeps its own ECN bits.
  ASSERT_SYS_OK(SetInt(t.get(), SOL_IP, IP_TOS, 0xff));
  EXPECT_EQ(GetInt(t.get(), SOL_IP, IP_TOS), 0xfc);
  ASSERT_SYS_OK(SetInt(u.get(), SOL_IP, IP_TOS, 0xff));
  EXPECT_EQ(GetInt(u.get(), SOL_IP, IP_TOS), 0xff);
  EXPECT_EQ(GetInt(t.get(), SOL_IP, IP_TTL), 64);
  ASSERT_SYS_OK(SetInt(t.get(), SOL_IP, IP_TTL, 12));
  EXPECT_EQ(GetInt(t.get(), SOL_IP, IP_TTL), 12);
  ASSERT_SYS_OK(SetInt(t.get(), SOL_IP, IP_TTL, -1));
  EXPECT_EQ(GetInt(t.get(), SOL_IP, IP_TTL), 64);
  EXPECT_ERRNO(SetInt(t.get(), SOL_IP, IP_TTL, 0), EINVAL);
  EXPECT_ERRNO(SetInt(t.get(), SOL_IP, IP_TTL, 256), EINVAL);
  EXPECT_EQ(GetInt(t.get(), SOL_IP, IP_MTU_DISCOVER), IP_PMTUDISC_WANT);
  ASSERT_SYS_OK(SetInt(t.get(), SOL_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO));
  EXPECT_EQ(GetInt(t.get(), SOL_IP, IP_MTU_DISCOVER), IP_PMTUDISC_DO);
  EXPECT_ERRNO(SetInt(t.get(), SOL_IP, IP_MTU_DISCOVER, 17), EINVAL);
}

TEST_P(SockoptTest, IpOptionsTakeAByte) {
  ScopedFd u = Sock(family(), SOCK_DGRAM);
  unsigned char ttl = 33;
  ASSERT_SYS_OK(setsockopt(u.get(), SOL_IP, IP_TTL, &ttl, 1));
  EXPECT_EQ(GetInt(u.get(), SOL_IP, IP_TTL), 33);
  EXPECT_ERRNO(setsockopt(u.get(), SOL_IP, IP_TTL, &ttl, 0), EINVAL);
}

TEST_P(SockoptTest, IpFlagsRoundTrip) {
  ScopedFd u = Sock(family(), SOCK_DGRAM);
  for (int opt : {IP_RECVERR, IP_PKTINFO, IP_RECVTOS, IP_RECVTTL, IP_BIND_ADDRESS_NO_PORT}) {
    EXPECT_EQ(GetInt(u.get(), SOL_IP, opt), 0) << opt;
    ASSERT_SYS_OK(SetInt(u.get(), SOL_IP, opt, 1));
    EXPECT_EQ(GetInt(u.get(), SOL_IP, opt), 1) << opt;
  }
  EXPECT_EQ(GetInt(u.get(), SOL_IP, IP_MULTICAST_LOOP), 1);
  EXPECT_EQ(GetInt(u.get(), SOL_IP, IP_MULTICAST_TTL), 1);
  ScopedFd t = Sock(family(), SOCK_STREAM);
  EXPECT_ERRNO(SetInt(t.get(), SOL_IP, IP_MULTICAST_TTL, 2), EINVAL);
}

TEST_P(SockoptTest, UnknownOptionsAndLevels) {
  ScopedFd t = Sock(family(), SOCK_STREAM);
  ScopedFd u = Sock(family(), SOCK_DGRAM);
  int v = 1;
  socklen_t len = sizeof(v);
  EXPECT_ERRNO(getsockopt(t.get(), SOL_TCP, 250, &v, &len), ENOPROTOOPT);
  EXPECT_ERRNO(setsockopt(t.get(), SOL_TCP, 250, &v, sizeof(v)), ENOPROTOOPT);
  EXPECT_ERRNO(getsockopt(t.get(), SOL_IP, 250, &v, &len), ENOPROTOOPT);
  EXPECT_ERRNO(setsockopt(u.get(), SOL_TCP, TCP_NODELAY, &v, sizeof(v)), ENOPROTOOPT);
  EXPECT_ERRNO(setsockopt(t.get(), 999, 1, &v, sizeof(v)), ENOPROTOOPT);
  // Linux's IPv4 getsockopt answers EOPNOTSUPP for a level it does not know.
  int unknown_level = family() == AF_INET ? EOPNOTSUPP : ENOPROTOOPT;
  EXPECT_ERRNO(getsockopt(t.get(), 999, 1, &v, &len), unknown_level);
  EXPECT_ERRNO(getsockopt(u.get(), SOL_TCP, TCP_NODELAY, &v, &len), unknown_level);
}

TEST_P(SockoptTest, PeerCredentialsOfAnInternetSocketAreEmpty) {
  TcpConn c = Connected(family());
  ucred cred{};
  socklen_t len = sizeof(cred);
  ASSERT_SYS_OK(getsockopt(c.client.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len));
  EXPECT_EQ(cred.pid, 0);
  EXPECT_EQ(cred.uid, ~0u);
}

TEST_P(SockoptTest, AcceptedSocketInheritsListenerOptions) {
  ScopedFd l = Sock(family(), SOCK_STREAM);
  ASSERT_SYS_OK(SetInt(l.get(), SOL_TCP, TCP_NODELAY, 1));
  ASSERT_SYS_OK(SetInt(l.get(), SOL_SOCKET, SO_KEEPALIVE, 1));
  SockAddr a = Loopback(family());
  ASSERT_SYS_OK(bind(l.get(), a.get(), a.len));
  ASSERT_SYS_OK(listen(l.get(), 1));
  ScopedFd c = Sock(family(), SOCK_STREAM);
  SockAddr dst = SockName(l.get());
  ASSERT_SYS_OK(connect(c.get(), dst.get(), dst.len));
  ScopedFd s(accept(l.get(), nullptr, nullptr));
  ASSERT_SYS_OK(s.get());
  EXPECT_EQ(GetInt(s.get(), SOL_TCP, TCP_NODELAY), 1);
  EXPECT_EQ(GetInt(s.get(), SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(GetInt(c.get(), SOL_TCP, TCP_NODELAY), 0);
}

TEST(SockoptV4Test, Ipv6LevelOnAnIpv4Socket) {
  ScopedFd s = Sock(AF_INET, SOCK_STREAM);
  int v = 1;
  socklen_t len = sizeof(v);
  EXPECT_ERRNO(getsockopt(s.get(), SOL_IPV6, IPV6_V6ONLY, &v, &len), EOPNOTSUPP);
  EXPECT_ERRNO(setsockopt(s.get(), SOL_IPV6, IPV6_V6ONLY, &v, sizeof(v)), ENOPROTOOPT);
}

TEST(SockoptV6Test, HopLimitsAndTrafficClass) {
  ScopedFd t = Sock(AF_INET6, SOCK_STREAM);
  ScopedFd u = Sock(AF_INET6, SOCK_DGRAM);
  EXPECT_EQ(GetInt(t.get(), SOL_IPV6, IPV6_UNICAST_HOPS), 64);
  ASSERT_SYS_OK(SetInt(t.get(), SOL_IPV6, IPV6_UNICAST_HOPS, 7));
  EXPECT_EQ(GetInt(t.get(), SOL_IPV6, IPV6_UNICAST_HOPS), 7);
  ASSERT_SYS_OK(SetInt(t.get(), SOL_IPV6, IPV6_UNICAST_HOPS, -1));
  EXPECT_EQ(GetInt(t.get(), SOL_IPV6, IPV6_UNICAST_HOPS), 64);
  EXPECT_ERRNO(SetInt(t.get(), SOL_IPV6, IPV6_UNICAST_HOPS, 256), EINVAL);
  EXPECT_EQ(GetInt(u.get(), SOL_IPV6, IPV6_MULTICAST_HOPS), 1);
  EXPECT_EQ(GetInt(t.get(), SOL_IPV6, IPV6_TCLASS), 0);
  ASSERT_SYS_OK(SetInt(u.get(), SOL_IPV6, IPV6_TCLASS, 0x2d));
  EXPECT_EQ(GetInt(u.get(), SOL_IPV6, IPV6_TCLASS), 0x2d);
  ASSERT_SYS_OK(SetInt(u.get(), SOL_IPV6, IPV6_TCLASS, -1));
  EXPECT_EQ(GetInt(u.get(), SOL_IPV6, IPV6_TCLASS), 0);
  ASSERT_SYS_OK(SetInt(t.get(), SOL_IPV6, IPV6_TCLASS, 0xff));
  EXPECT_EQ(GetInt(t.get(), SOL_IPV6, IPV6_TCLASS), 0xfc);
  EXPECT_ERRNO(SetInt(t.get(), SOL_IPV6, IPV6_TCLASS, 300), EINVAL);
}

TEST(SockoptV6Test, Ipv6FlagsNeedAnInt) {
  ScopedFd u = Sock(AF_INET6, SOCK_DGRAM);
  for (int opt : {IPV6_RECVERR, IPV6_RECVPKTINFO, IPV6_RECVTCLASS, IPV6_RECVHOPLIMIT}) {
    EXPECT_EQ(GetInt(u.get(), SOL_IPV6, opt), 0) << opt;
    ASSERT_SYS_OK(SetInt(u.get(), SOL_IPV6, opt, 1));
    EXPECT_EQ(GetInt(u.get(), SOL_IPV6, opt), 1) << opt;
  }
  char one = 1;
  EXPECT_ERRNO(setsockopt(u.get(), SOL_IPV6, IPV6_RECVERR, &one, 1), EINVAL);
  EXPECT_EQ(GetInt(u.get(), SOL_IPV6, IPV6_MTU_DISCOVER), IPV6_PMTUDISC_WANT);
  EXPECT_ERRNO(SetInt(u.get(), SOL_IPV6, IPV6_MULTICAST_LOOP, 2), EINVAL);
  // IPv4-level options work on IPv6 sockets too.
  ASSERT_SYS_OK(SetInt(u.get(), SOL_IP, IP_TOS, 0x20));
  EXPECT_EQ(GetInt(u.get(), SOL_IP, IP_TOS), 0x20);
}

}  // namespace
}  // namespace syscall_test
