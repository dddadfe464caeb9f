// UDP over the loopback, IPv4 and IPv6: addresses on send and receive, message
// boundaries and truncation, connect filtering and AF_UNSPEC, errors (EMSGSIZE,
// EDESTADDRREQ, EACCES for broadcast, ECONNREFUSED after a datagram to a closed port),
// the SO_RCVBUF bound, readiness, ioctls, sendmmsg/recvmmsg.
#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/syscalls/inet_test_util.h"

namespace syscall_test {
namespace {

class UdpTest : public ::testing::TestWithParam<int> {
 protected:
  int family() const { return GetParam(); }
  size_t max_payload() const { return family() == AF_INET ? 65507 : 65527; }
};

INSTANTIATE_TEST_SUITE_P(Family, UdpTest, ::testing::Values(AF_INET, AF_INET6),
                         [](const auto& info) { return FamilyName(info.param); });

// A datagram and where it came from.
struct Received {
  std::string data;
  SockAddr from;
  int err = 0;
};

Received RecvFrom(int fd, size_t n = 256, int flags = MSG_DONTWAIT) {
  PollOnce(fd, POLLIN, 2000);
  Received r;
  r.data.resize(n);
  r.from.len = sizeof(r.from.ss);
  ssize_t got = recvfrom(fd, r.data.data(), n, flags, r.from.get(), &r.from.len);
  if (got < 0) {
    r.err = errno;
    r.data.clear();
    return r;
  }
  r.data.resize(std::min<size_t>(got, n));
  return r;
}

ssize_t SendTo(int fd, const std::string& data, const SockAddr& to, int flags = 0) {
  return sendto(fd, data.data(), data.size(), flags, to.get(), to.len);
}

TEST_P(UdpTest, FreshSocketPollsWritableOnly) {
  ScopedFd s = Sock(family(), SOCK_DGRAM);
  EXPECT_EQ(PollOnce(s.get(), POLLIN | POLLOUT), POLLOUT);
}

TEST_P(UdpTest, SendtoRecvfromCarryAddresses) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Bound(family(), SOCK_DGRAM);
  ASSERT_EQ(SendTo(b.get(), "hello", SockName(a.get())), 5);
  Received r = RecvFrom(a.get());
  EXPECT_EQ(r.data, "hello");
  EXPECT_EQ(r.from.len, family() == AF_INET ? 16u : 28u);
  EXPECT_EQ(r.from.ip(), SockName(b.get()).ip());
  EXPECT_EQ(r.from.port(), SockName(b.get()).port());
}

TEST_P(UdpTest, FirstSendBindsAnEphemeralPort) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  EXPECT_EQ(SockName(b.get()).port(), 0);
  ASSERT_EQ(SendTo(b.get(), "x", SockName(a.get())), 1);
  uint16_t port = SockName(b.get()).port();
  EXPECT_GE(port, 1024);
  EXPECT_EQ(SockName(b.get()).ip(), family() == AF_INET ? "0.0.0.0" : "::");
  Received r = RecvFrom(a.get());
  EXPECT_EQ(r.from.port(), port);
  EXPECT_EQ(r.from.ip(), family() == AF_INET ? "127.0.0.1" : "::1");
}

TEST_P(UdpTest, DatagramsKeepTheirBoundaries) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  SockAddr to = SockName(a.get());
  ASSERT_EQ(SendTo(b.get(), "one", to), 3);
  ASSERT_EQ(SendTo(b.get(), "", to), 0);
  ASSERT_EQ(SendTo(b.get(), "three", to), 5);
  EXPECT_EQ(RecvFrom(a.get()).data, "one");
  Received empty = RecvFrom(a.get());
  EXPECT_EQ(empty.err, 0);
  EXPECT_EQ(empty.data, "");
  EXPECT_EQ(RecvFrom(a.get()).data, "three");
  EXPECT_EQ(RecvFrom(a.get()).err, EAGAIN);
}

TEST_P(UdpTest, ShortBufferTruncatesTheDatagram) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  ASSERT_EQ(SendTo(b.get(), "0123456789", SockName(a.get())), 10);
  ASSERT_EQ(SendTo(b.get(), "next", SockName(a.get())), 4);
  PollOnce(a.get(), POLLIN, 2000);
  char buf[4];
  iovec iov{buf, sizeof(buf)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  EXPECT_EQ(recvmsg(a.get(), &msg, 0), 4);
  EXPECT_TRUE(msg.msg_flags & MSG_TRUNC);
  EXPECT_EQ(std::string(buf, 4), "0123");
  EXPECT_EQ(RecvFrom(a.get()).data, "next");  // the rest of the first one is gone
}

TEST_P(UdpTest, MsgTruncReturnsTheWholeLength) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  ASSERT_EQ(SendTo(b.get(), "0123456789", SockName(a.get())), 10);
  PollOnce(a.get(), POLLIN, 2000);
  char buf[2];
  EXPECT_EQ(recv(a.get(), buf, sizeof(buf), MSG_TRUNC), 10);
}

TEST_P(UdpTest, MsgPeekLeavesTheDatagram) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  ASSERT_EQ(SendTo(b.get(), "again", SockName(a.get())), 5);
  EXPECT_EQ(RecvFrom(a.get(), 256, MSG_PEEK).data, "again");
  EXPECT_EQ(RecvFrom(a.get()).data, "again");
}

TEST_P(UdpTest, LargestPayloadAndOneMore) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ASSERT_SYS_OK(SetInt(a.get(), SOL_SOCKET, SO_RCVBUF, 1 << 20));
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  std::string big(max_payload() + 1, 'p');
  EXPECT_ERRNO(SendTo(b.get(), big, SockName(a.get())), EMSGSIZE);
  big.pop_back();
  EXPECT_EQ(SendTo(b.get(), big, SockName(a.get())), static_cast<ssize_t>(big.size()));
  EXPECT_EQ(RecvFrom(a.get(), 70000).data.size(), big.size());
  EXPECT_ERRNO(SendTo(b.get(), std::string(70000, 'q'), SockName(a.get())), EMSGSIZE);
}

TEST_P(UdpTest, ConnectSetsTheDefaultDestination) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  SockAddr to = SockName(a.get());
  ASSERT_SYS_OK(connect(b.get(), to.get(), to.len));
  EXPECT_EQ(PeerName(b.get()).port(), to.port());
  EXPECT_EQ(SockName(b.get()).ip(), family() == AF_INET ? "127.0.0.1" : "::1");
  ASSERT_EQ(send(b.get(), "viasend", 7, 0), 7);
  ASSERT_EQ(write(b.get(), "viawrite", 8), 8);
  EXPECT_EQ(RecvFrom(a.get()).data, "viasend");
  EXPECT_EQ(RecvFrom(a.get()).data, "viawrite");
}

TEST_P(UdpTest, ConnectedSocketIgnoresOtherSenders) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd peer = Bound(family(), SOCK_DGRAM);
  ScopedFd stranger = Bound(family(), SOCK_DGRAM);
  SockAddr p = SockName(peer.get());
  ASSERT_SYS_OK(connect(a.get(), p.get(), p.len));
  ASSERT_EQ(SendTo(stranger.get(), "no", SockName(a.get())), 2);
  ASSERT_EQ(SendTo(peer.get(), "yes", SockName(a.get())), 3);
  EXPECT_EQ(RecvFrom(a.get()).data, "yes");
  EXPECT_EQ(RecvFrom(a.get()).err, EAGAIN);
}

TEST_P(UdpTest, SendWithoutADestinationIsEdestaddrreq) {
  ScopedFd s = Sock(family(), SOCK_DGRAM);
  EXPECT_ERRNO(send(s.get(), "x", 1, 0), EDESTADDRREQ);
  EXPECT_ERRNO(write(s.get(), "x", 1), EDESTADDRREQ);
}

TEST_P(UdpTest, AfUnspecConnectDissolvesTheAssociation) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  SockAddr to = SockName(a.get());
  ASSERT_SYS_OK(connect(b.get(), to.get(), to.len));
  EXPECT_GE(SockName(b.get()).port(), 1024);
  sockaddr_storage un{};
  un.ss_family = AF_UNSPEC;
  ASSERT_SYS_OK(connect(b.get(), reinterpret_cast<sockaddr*>(&un), sizeof(sa_family_t)));
  EXPECT_EQ(PeerName(b.get()).len, 0u);
  // The automatic binding went with it.
  EXPECT_EQ(SockName(b.get()).port(), 0);
  EXPECT_ERRNO(send(b.get(), "x", 1, 0), EDESTADDRREQ);
  EXPECT_ERRNO(connect(b.get(), reinterpret_cast<sockaddr*>(&un), 1), EINVAL);
}

TEST_P(UdpTest, ConnectedToAClosedPortReportsConnectionRefused) {
  SockAddr closed = ClosedPort(family(), SOCK_DGRAM);
  ScopedFd s = Sock(family(), SOCK_DGRAM);
  ASSERT_SYS_OK(connect(s.get(), closed.get(), closed.len));
  ASSERT_EQ(send(s.get(), "x", 1, 0), 1);
  EXPECT_TRUE(PollOnce(s.get(), POLLIN, 2000) & POLLERR);
  EXPECT_ERRNO(send(s.get(), "x", 1, 0), ECONNREFUSED);
  ASSERT_EQ(send(s.get(), "x", 1, 0), 1);
  PollOnce(s.get(), POLLIN, 2000);
  char c;
  EXPECT_ERRNO(recv(s.get(), &c, 1, MSG_DONTWAIT), ECONNREFUSED);
  EXPECT_ERRNO(recv(s.get(), &c, 1, MSG_DONTWAIT), EAGAIN);
}

TEST_P(UdpTest, UnconnectedSendToAClosedPortSeesNoError) {
  SockAddr closed = ClosedPort(family(), SOCK_DGRAM);
  ScopedFd s = Sock(family(), SOCK_DGRAM);
  ASSERT_EQ(SendTo(s.get(), "x", closed), 1);
  usleep(10000);
  EXPECT_EQ(GetInt(s.get(), SOL_SOCKET, SO_ERROR), 0);
  EXPECT_EQ(SendTo(s.get(), "x", closed), 1);
}

TEST_P(UdpTest, DestinationErrors) {
  ScopedFd s = Sock(family(), SOCK_DGRAM);
  SockAddr zero = Loopback(family(), 0);
  EXPECT_ERRNO(SendTo(s.get(), "x", zero), EINVAL);  // port 0
  SockAddr to = Loopback(family(), 9);
  EXPECT_ERRNO(sendto(s.get(), "x", 1, 0, to.get(), family() == AF_INET ? 15 : 23), EINVAL);
  if (family() == AF_INET) {
    SockAddr six = Addr("::1", 9);
    EXPECT_ERRNO(SendTo(s.get(), "x", six), EAFNOSUPPORT);
  } else {
    SockAddr bad = to;
    bad.ss.ss_family = 99;
    EXPECT_ERRNO(SendTo(s.get(), "x", bad), EINVAL);
  }
}

TEST_P(UdpTest, ConnectToTheWildcardAddressMeansTheLoopback) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  SockAddr any = AnyAddr(family(), SockName(a.get()).port());
  ASSERT_SYS_OK(connect(b.get(), any.get(), any.len));
  EXPECT_EQ(PeerName(b.get()).ip(), family() == AF_INET ? "127.0.0.1" : "::1");
  ASSERT_EQ(send(b.get(), "lo", 2, 0), 2);
  EXPECT_EQ(RecvFrom(a.get()).data, "lo");
}

TEST_P(UdpTest, SmallReceiveBufferDropsDatagrams) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ASSERT_SYS_OK(SetInt(a.get(), SOL_SOCKET, SO_RCVBUF, 4096));
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  SockAddr to = SockName(a.get());
  std::string payload(100, 'd');
  for (int i = 0; i < 200; ++i) ASSERT_EQ(SendTo(b.get(), payload, to), 100);
  int got = 0;
  char buf[200];
  while (recv(a.get(), buf, sizeof(buf), MSG_DONTWAIT) == 100) ++got;
  EXPECT_GT(got, 0);
  EXPECT_LT(got, 200);
}

TEST_P(UdpTest, FionreadIsTheNextDatagramsSize) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  int n = -1;
  ASSERT_SYS_OK(ioctl(a.get(), FIONREAD, &n));
  EXPECT_EQ(n, 0);
  ASSERT_EQ(SendTo(b.get(), "abc", SockName(a.get())), 3);
  ASSERT_EQ(SendTo(b.get(), "defgh", SockName(a.get())), 5);
  PollOnce(a.get(), POLLIN, 2000);
  ASSERT_SYS_OK(ioctl(a.get(), FIONREAD, &n));
  EXPECT_EQ(n, 3);
  ASSERT_SYS_OK(ioctl(a.get(), SIOCOUTQ, &n));
  EXPECT_EQ(n, 0);
}

TEST_P(UdpTest, ShutdownErrorsAndEndOfStream) {
  ScopedFd s = Sock(family(), SOCK_DGRAM);
  EXPECT_ERRNO(shutdown(s.get(), SHUT_RD), ENOTCONN);
  EXPECT_ERRNO(shutdown(s.get(), 7), EINVAL);
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  SockAddr to = SockName(a.get());
  ASSERT_SYS_OK(connect(b.get(), to.get(), to.len));
  ASSERT_SYS_OK(shutdown(b.get(), SHUT_RD));
  char c;
  EXPECT_EQ(recv(b.get(), &c, 1, 0), 0);
  EXPECT_TRUE(PollOnce(b.get(), POLLIN | POLLRDHUP) & POLLRDHUP);
}

TEST_P(UdpTest, ListenAndAcceptAreNotSupported) {
  ScopedFd s = Bound(family(), SOCK_DGRAM);
  EXPECT_ERRNO(listen(s.get(), 1), EOPNOTSUPP);
  EXPECT_ERRNO(accept(s.get(), nullptr, nullptr), EOPNOTSUPP);
}

TEST_P(UdpTest, ReuseportSocketsShareAPort) {
  ScopedFd a = Sock(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  ASSERT_SYS_OK(SetInt(a.get(), SOL_SOCKET, SO_REUSEPORT, 1));
  ASSERT_SYS_OK(SetInt(b.get(), SOL_SOCKET, SO_REUSEPORT, 1));
  SockAddr l = Loopback(family());
  ASSERT_SYS_OK(bind(a.get(), l.get(), l.len));
  SockAddr taken = SockName(a.get());
  ASSERT_SYS_OK(bind(b.get(), taken.get(), taken.len));
  ScopedFd c = Sock(family(), SOCK_DGRAM);
  ASSERT_EQ(SendTo(c.get(), "rp", taken), 2);
  short ra = PollOnce(a.get(), POLLIN, 2000), rb = PollOnce(b.get(), POLLIN, 0);
  EXPECT_TRUE((ra & POLLIN) || (rb & POLLIN));
}

TEST_P(UdpTest, RecvmsgReportsTheSendersAddress) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Bound(family(), SOCK_DGRAM);
  ASSERT_EQ(SendTo(b.get(), "m", SockName(a.get())), 1);
  PollOnce(a.get(), POLLIN, 2000);
  char buf[4];
  sockaddr_storage from{};
  iovec iov{buf, sizeof(buf)};
  msghdr msg{};
  msg.msg_name = &from;
  msg.msg_namelen = sizeof(from);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ASSERT_EQ(recvmsg(a.get(), &msg, 0), 1);
  EXPECT_EQ(msg.msg_namelen, family() == AF_INET ? 16u : 28u);
  EXPECT_EQ(from.ss_family, family());
}

TEST_P(UdpTest, SendmmsgAndRecvmmsg) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  SockAddr to = SockName(a.get());
  ASSERT_SYS_OK(connect(b.get(), to.get(), to.len));
  char d0[] = "first", d1[] = "second", d2[] = "3";
  iovec out[3] = {{d0, 5}, {d1, 6}, {d2, 1}};
  mmsghdr msgs[3] = {};
  for (int i = 0; i < 3; ++i) {
    msgs[i].msg_hdr.msg_iov = &out[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  ASSERT_EQ(sendmmsg(b.get(), msgs, 3, 0), 3);
  EXPECT_EQ(msgs[1].msg_len, 6u);
  PollOnce(a.get(), POLLIN, 2000);
  char bufs[3][16];
  iovec in[3];
  mmsghdr rmsgs[3] = {};
  for (int i = 0; i < 3; ++i) {
    in[i] = {bufs[i], sizeof(bufs[i])};
    rmsgs[i].msg_hdr.msg_iov = &in[i];
    rmsgs[i].msg_hdr.msg_iovlen = 1;
  }
  ASSERT_EQ(recvmmsg(a.get(), rmsgs, 3, MSG_DONTWAIT, nullptr), 3);
  EXPECT_EQ(std::string(bufs[1], rmsgs[1].msg_len), "second");
  EXPECT_EQ(rmsgs[2].msg_len, 1u);
}

TEST_P(UdpTest, EdgeTriggeredEpollSeesEveryDatagram) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  ScopedFd b = Sock(family(), SOCK_DGRAM);
  ScopedFd ep(epoll_create1(0));
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ASSERT_SYS_OK(epoll_ctl(ep.get(), EPOLL_CTL_ADD, a.get(), &ev));
  epoll_event out;
  ASSERT_EQ(SendTo(b.get(), "1", SockName(a.get())), 1);
  EXPECT_EQ(epoll_wait(ep.get(), &out, 1, 2000), 1);
  EXPECT_EQ(epoll_wait(ep.get(), &out, 1, 0), 0);
  ASSERT_EQ(SendTo(b.get(), "2", SockName(a.get())), 1);
  EXPECT_EQ(epoll_wait(ep.get(), &out, 1, 2000), 1);
}

TEST_P(UdpTest, BlockedReceiverWakesForADatagram) {
  ScopedFd a = Bound(family(), SOCK_DGRAM);
  SockAddr to = SockName(a.get());
  pid_t pid = fork();
  if (pid == 0) {
    usleep(50000);
    int s = socket(family(), SOCK_DGRAM, 0);
    _exit(sendto(s, "wake", 4, 0, to.get(), to.len) == 4 ? 0 : 1);
  }
  char buf[8];
  EXPECT_EQ(recv(a.get(), buf, sizeof(buf), 0), 4);
  EXPECT_EQ(WaitChild(pid), 0);
}

TEST(UdpV4Test, BroadcastNeedsSoBroadcast) {
  // EACCES comes before anything is sent.
  ScopedFd s = Sock(AF_INET, SOCK_DGRAM);
  SockAddr bcast = Addr("255.255.255.255", 9);
  EXPECT_ERRNO(SendTo(s.get(), "x", bcast), EACCES);
  EXPECT_ERRNO(connect(s.get(), bcast.get(), bcast.len), EACCES);
  EXPECT_EQ(GetInt(s.get(), SOL_SOCKET, SO_BROADCAST), 0);
}

TEST(UdpV6Test, SockaddrInReachesAnIpv4SocketAndRepliesAreMapped) {
  ScopedFd four = Bound(AF_INET, SOCK_DGRAM);
  ScopedFd six = Sock(AF_INET6, SOCK_DGRAM);
  ASSERT_EQ(SendTo(six.get(), "46", SockName(four.get())), 2);
  Received r = RecvFrom(four.get());
  EXPECT_EQ(r.data, "46");
  EXPECT_EQ(r.from.ip(), "127.0.0.1");
  ASSERT_EQ(SendTo(four.get(), "64", r.from), 2);
  Received back = RecvFrom(six.get());
  EXPECT_EQ(back.data, "64");
  EXPECT_EQ(back.from.ip(), "::ffff:127.0.0.1");
  EXPECT_EQ(back.from.len, 28u);
}

TEST(UdpV6Test, V6onlySocketCannotSendToIpv4) {
  ScopedFd four = Bound(AF_INET, SOCK_DGRAM);
  ScopedFd six = Sock(AF_INET6, SOCK_DGRAM);
  ASSERT_SYS_OK(SetInt(six.get(), SOL_IPV6, IPV6_V6ONLY, 1));
  EXPECT_ERRNO(SendTo(six.get(), "x", SockName(four.get())), ENETUNREACH);
  SockAddr mapped = Addr("::ffff:127.0.0.1", SockName(four.get()).port());
  EXPECT_ERRNO(SendTo(six.get(), "x", mapped), ENETUNREACH);
}

TEST(UdpV6Test, ConnectWithASockaddrIn) {
  ScopedFd four = Bound(AF_INET, SOCK_DGRAM);
  ScopedFd six = Sock(AF_INET6, SOCK_DGRAM);
  SockAddr to = SockName(four.get());
  ASSERT_SYS_OK(connect(six.get(), to.get(), to.len));
  EXPECT_EQ(PeerName(six.get()).ip(), "::ffff:127.0.0.1");
  ASSERT_EQ(send(six.get(), "c", 1, 0), 1);
  EXPECT_EQ(RecvFrom(four.get()).data, "c");
}

}  // namespace
}  // namespace syscall_test
