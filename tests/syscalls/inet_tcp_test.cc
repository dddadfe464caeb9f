// TCP over the loopback, IPv4 and IPv6: connect/accept (blocking, non-blocking, refused),
// data in both directions with the recv flags, shutdown and close (EOF, reset, EPIPE and
// SIGPIPE), readiness for poll and edge-triggered epoll, ioctls.
#include <fcntl.h>
#include <linux/sockios.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/syscalls/inet_test_util.h"

namespace syscall_test {
namespace {

class TcpTest : public ::testing::TestWithParam<int> {
 protected:
  int family() const { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(Family, TcpTest, ::testing::Values(AF_INET, AF_INET6),
                         [](const auto& info) { return FamilyName(info.param); });

volatile sig_atomic_t sigpipes = 0;

// Counts SIGPIPE instead of dying of it, for the scope.
class SigpipeCounter {
 public:
  SigpipeCounter() {
    sigpipes = 0;
    struct sigaction sa {};
    sa.sa_handler = [](int) { sigpipes = sigpipes + 1; };
    sigaction(SIGPIPE, &sa, &old_);
  }
  ~SigpipeCounter() { sigaction(SIGPIPE, &old_, nullptr); }

 private:
  struct sigaction old_ {};
};

std::string RecvString(int fd, size_t n, int flags = 0) {
  std::string buf(n, '\0');
  ssize_t got = recv(fd, buf.data(), n, flags);
  if (got < 0) return "errno:" + std::string(strerrorname_np(errno));
  buf.resize(got);
  return buf;
}

// --- connecting ---

TEST_P(TcpTest, FreshSocketPollsWritableAndHungUp) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  EXPECT_EQ(PollOnce(s.get(), POLLIN | POLLOUT), POLLOUT | POLLHUP);
}

TEST_P(TcpTest, ConnectAcceptAndExchangeBothWays) {
  TcpConn c = Connected(family());
  ASSERT_EQ(write(c.client.get(), "ping", 4), 4);
  EXPECT_EQ(RecvString(c.server.get(), 16), "ping");
  ASSERT_EQ(send(c.server.get(), "pong!", 5, 0), 5);
  EXPECT_EQ(RecvString(c.client.get(), 16), "pong!");
}

TEST_P(TcpTest, AcceptReportsTheClientsAddress) {
  ScopedFd l = Listener(family());
  ScopedFd c = Sock(family(), SOCK_STREAM);
  SockAddr dst = SockName(l.get());
  ASSERT_SYS_OK(connect(c.get(), dst.get(), dst.len));
  SockAddr peer;
  peer.len = sizeof(peer.ss);
  ScopedFd s(accept(l.get(), peer.get(), &peer.len));
  ASSERT_SYS_OK(s.get());
  SockAddr me = SockName(c.get());
  EXPECT_EQ(peer.len, me.len);
  EXPECT_EQ(peer.ip(), me.ip());
  EXPECT_EQ(peer.port(), me.port());
  EXPECT_EQ(PeerName(c.get()).port(), dst.port());
  EXPECT_EQ(SockName(s.get()).port(), dst.port());
  EXPECT_EQ(PeerName(s.get()).port(), me.port());
}

TEST_P(TcpTest, ConnectBindsTheClientToTheLoopback) {
  TcpConn c = Connected(family());
  SockAddr me = SockName(c.client.get());
  EXPECT_GE(me.port(), 1024);
  EXPECT_EQ(me.ip(), family() == AF_INET ? "127.0.0.1" : "::1");
}

TEST_P(TcpTest, ConnectToTheWildcardAddressReachesTheLoopback) {
  ScopedFd l = Listener(family());
  ScopedFd c = Sock(family(), SOCK_STREAM);
  SockAddr dst = AnyAddr(family(), SockName(l.get()).port());
  ASSERT_SYS_OK(connect(c.get(), dst.get(), dst.len));
  EXPECT_EQ(PeerName(c.get()).ip(), family() == AF_INET ? "127.0.0.1" : "::1");
}

TEST_P(TcpTest, ConnectWithNobodyListeningIsRefused) {
  SockAddr dst = ClosedPort(family(), SOCK_STREAM);
  ScopedFd c = Sock(family(), SOCK_STREAM);
  EXPECT_ERRNO(connect(c.get(), dst.get(), dst.len), ECONNREFUSED);
  // The socket may try again.
  ScopedFd l = Listener(family());
  SockAddr good = SockName(l.get());
  EXPECT_SYS_OK(connect(c.get(), good.get(), good.len));
}

TEST_P(TcpTest, NonblockingConnectIsInProgressThenConnected) {
  ScopedFd l = Listener(family());
  ScopedFd c = Sock(family(), SOCK_STREAM, SOCK_NONBLOCK);
  SockAddr dst = SockName(l.get());
  EXPECT_ERRNO(connect(c.get(), dst.get(), dst.len), EINPROGRESS);
  EXPECT_TRUE(PollOnce(c.get(), POLLOUT, 5000) & POLLOUT);
  EXPECT_EQ(GetInt(c.get(), SOL_SOCKET, SO_ERROR), 0);
  EXPECT_SYS_OK(connect(c.get(), dst.get(), dst.len));  // confirms the connection
  EXPECT_ERRNO(connect(c.get(), dst.get(), dst.len), EISCONN);
  EXPECT_TRUE(PollOnce(l.get(), POLLIN, 5000) & POLLIN);
}

TEST_P(TcpTest, NonblockingConnectRefusedReportsSoError) {
  SockAddr dst = ClosedPort(family(), SOCK_STREAM);
  ScopedFd c = Sock(family(), SOCK_STREAM, SOCK_NONBLOCK);
  EXPECT_ERRNO(connect(c.get(), dst.get(), dst.len), EINPROGRESS);
  short r = PollOnce(c.get(), POLLOUT, 5000);
  EXPECT_EQ(r & (POLLERR | POLLHUP), POLLERR | POLLHUP);
  EXPECT_EQ(GetInt(c.get(), SOL_SOCKET, SO_ERROR), ECONNREFUSED);
  EXPECT_EQ(GetInt(c.get(), SOL_SOCKET, SO_ERROR), 0);
}

TEST_P(TcpTest, SecondConnectAfterARefusalReportsIt) {
  SockAddr dst = ClosedPort(family(), SOCK_STREAM);
  ScopedFd c = Sock(family(), SOCK_STREAM, SOCK_NONBLOCK);
  EXPECT_ERRNO(connect(c.get(), dst.get(), dst.len), EINPROGRESS);
  PollOnce(c.get(), POLLOUT, 5000);
  EXPECT_ERRNO(connect(c.get(), dst.get(), dst.len), ECONNREFUSED);
}

TEST_P(TcpTest, ConnectWhenConnectedOrListeningIsEisconn) {
  TcpConn c = Connected(family());
  SockAddr dst = SockName(c.listener.get());
  EXPECT_ERRNO(connect(c.client.get(), dst.get(), dst.len), EISCONN);
  EXPECT_ERRNO(connect(c.listener.get(), dst.get(), dst.len), EISCONN);
}

TEST_P(TcpTest, ConnectAddressErrors) {
  ScopedFd c = Sock(family(), SOCK_STREAM);
  SockAddr dst = Loopback(family(), 1);
  EXPECT_ERRNO(connect(c.get(), dst.get(), family() == AF_INET ? 15 : 23), EINVAL);
  EXPECT_ERRNO(connect(c.get(), dst.get(), 1), EINVAL);
  dst.ss.ss_family = family() == AF_INET ? AF_INET6 : AF_INET;
  EXPECT_ERRNO(connect(c.get(), dst.get(), sizeof(sockaddr_in6)), EAFNOSUPPORT);
}

TEST_P(TcpTest, ListenOnAConnectedSocketIsEinval) {
  TcpConn c = Connected(family());
  EXPECT_ERRNO(listen(c.client.get(), 1), EINVAL);
  EXPECT_ERRNO(listen(c.server.get(), 1), EINVAL);
}

TEST_P(TcpTest, AcceptErrors) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  EXPECT_ERRNO(accept(s.get(), nullptr, nullptr), EINVAL);
  ScopedFd l = Listener(family());
  ASSERT_SYS_OK(fcntl(l.get(), F_SETFL, O_NONBLOCK));
  EXPECT_ERRNO(accept(l.get(), nullptr, nullptr), EAGAIN);
  EXPECT_ERRNO(accept4(l.get(), nullptr, nullptr, 0x4000), EINVAL);
}

TEST_P(TcpTest, Accept4SetsFlagsOnTheNewSocket) {
  ScopedFd l = Listener(family());
  ScopedFd c = Sock(family(), SOCK_STREAM);
  SockAddr dst = SockName(l.get());
  ASSERT_SYS_OK(connect(c.get(), dst.get(), dst.len));
  ScopedFd s(accept4(l.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  ASSERT_SYS_OK(s.get());
  EXPECT_TRUE(fcntl(s.get(), F_GETFL) & O_NONBLOCK);
  EXPECT_EQ(fcntl(s.get(), F_GETFD), FD_CLOEXEC);
  EXPECT_ERRNO(recv(s.get(), nullptr, 0, 0), EAGAIN);
}

TEST_P(TcpTest, ListenerIsReadableWhenAConnectionWaits) {
  ScopedFd l = Listener(family());
  EXPECT_EQ(PollOnce(l.get(), POLLIN | POLLOUT), 0);
  ScopedFd c = Sock(family(), SOCK_STREAM);
  SockAddr dst = SockName(l.get());
  ASSERT_SYS_OK(connect(c.get(), dst.get(), dst.len));
  EXPECT_EQ(PollOnce(l.get(), POLLIN | POLLOUT, 5000), POLLIN);
}

TEST_P(TcpTest, ConnectionAcceptedAfterTheClientClosedKeepsItsData) {
  ScopedFd l = Listener(family());
  {
    ScopedFd c = Sock(family(), SOCK_STREAM);
    SockAddr dst = SockName(l.get());
    ASSERT_SYS_OK(connect(c.get(), dst.get(), dst.len));
    ASSERT_EQ(write(c.get(), "early", 5), 5);
  }
  ScopedFd s(accept(l.get(), nullptr, nullptr));
  ASSERT_SYS_OK(s.get());
  EXPECT_EQ(RecvString(s.get(), 16), "early");
  EXPECT_EQ(RecvString(s.get(), 16), "");
}

TEST_P(TcpTest, ClosingTheListenerResetsQueuedConnections) {
  ScopedFd l = Listener(family());
  ScopedFd c = Sock(family(), SOCK_STREAM);
  SockAddr dst = SockName(l.get());
  ASSERT_SYS_OK(connect(c.get(), dst.get(), dst.len));
  PollOnce(l.get(), POLLIN, 5000);
  l.reset();
  PollOnce(c.get(), POLLIN, 5000);
  EXPECT_EQ(RecvString(c.get(), 4), "errno:ECONNRESET");
}

// --- data ---

TEST_P(TcpTest, ReadvAndWritevScatter) {
  TcpConn c = Connected(family());
  char a[] = "abc", b[] = "defg";
  iovec out[2] = {{a, 3}, {b, 4}};
  ASSERT_EQ(writev(c.client.get(), out, 2), 7);
  PollOnce(c.server.get(), POLLIN, 5000);
  char x[2], y[10] = {};
  iovec in[2] = {{x, 2}, {y, sizeof(y)}};
  ASSERT_EQ(readv(c.server.get(), in, 2), 7);
  EXPECT_EQ(std::string(x, 2) + std::string(y, 5), "abcdefg");
}

TEST_P(TcpTest, RecvmsgHasNoSourceAddress) {
  TcpConn c = Connected(family());
  ASSERT_EQ(send(c.client.get(), "m", 1, 0), 1);
  char buf[4];
  sockaddr_storage from;
  iovec iov{buf, sizeof(buf)};
  msghdr msg{};
  msg.msg_name = &from;
  msg.msg_namelen = sizeof(from);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ASSERT_EQ(recvmsg(c.server.get(), &msg, 0), 1);
  EXPECT_EQ(msg.msg_namelen, 0u);
}

TEST_P(TcpTest, MsgPeekLeavesTheData) {
  TcpConn c = Connected(family());
  ASSERT_EQ(send(c.client.get(), "peekaboo", 8, 0), 8);
  PollOnce(c.server.get(), POLLIN, 5000);
  EXPECT_EQ(RecvString(c.server.get(), 4, MSG_PEEK), "peek");
  EXPECT_EQ(RecvString(c.server.get(), 16, MSG_PEEK), "peekaboo");
  EXPECT_EQ(RecvString(c.server.get(), 16), "peekaboo");
}

TEST_P(TcpTest, MsgDontwaitWithNothingIsEagain) {
  TcpConn c = Connected(family());
  EXPECT_EQ(RecvString(c.server.get(), 4, MSG_DONTWAIT), "errno:EAGAIN");
}

TEST_P(TcpTest, MsgTruncDiscardsBytes) {
  TcpConn c = Connected(family());
  ASSERT_EQ(send(c.client.get(), "0123456789", 10, 0), 10);
  PollOnce(c.server.get(), POLLIN, 5000);
  char buf[4];
  EXPECT_EQ(recv(c.server.get(), buf, 4, MSG_TRUNC), 4);
  EXPECT_EQ(RecvString(c.server.get(), 16), "456789");
}

TEST_P(TcpTest, MsgWaitallCollectsSeveralWrites) {
  TcpConn c = Connected(family());
  pid_t pid = fork();
  if (pid == 0) {
    for (const char* piece : {"aa", "bbb", "c"}) {
      usleep(20000);
      if (write(c.client.get(), piece, strlen(piece)) < 0) _exit(1);
    }
    _exit(0);
  }
  EXPECT_EQ(RecvString(c.server.get(), 6, MSG_WAITALL), "aabbbc");
  EXPECT_EQ(WaitChild(pid), 0);
}

TEST_P(TcpTest, MsgWaitallStopsAtEndOfStream) {
  TcpConn c = Connected(family());
  ASSERT_EQ(send(c.client.get(), "abc", 3, 0), 3);
  ASSERT_SYS_OK(shutdown(c.client.get(), SHUT_WR));
  EXPECT_EQ(RecvString(c.server.get(), 10, MSG_WAITALL), "abc");
}

TEST_P(TcpTest, BulkTransferThroughAChildProcess) {
  TcpConn c = Connected(family());
  const size_t kTotal = 4 << 20;
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char> chunk(65536);
    for (size_t sent = 0; sent < kTotal; sent += chunk.size()) {
      for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>((sent + i) % 251);
      if (send(c.client.get(), chunk.data(), chunk.size(), 0) !=
          static_cast<ssize_t>(chunk.size())) {
        _exit(1);
      }
    }
    _exit(0);
  }
  c.client.reset();
  size_t got = 0;
  bool ok = true;
  std::vector<char> buf(100000);
  while (true) {
    ssize_t n = read(c.server.get(), buf.data(), buf.size());
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) ok = ok && buf[i] == static_cast<char>((got + i) % 251);
    got += n;
  }
  EXPECT_EQ(got, kTotal);
  EXPECT_TRUE(ok);
  EXPECT_EQ(WaitChild(pid), 0);
}

TEST_P(TcpTest, NonblockingWriterFillsTheBuffersThenWaitsForTheReader) {
  TcpConn c = Connected(family());
  ASSERT_SYS_OK(fcntl(c.client.get(), F_SETFL, O_NONBLOCK));
  std::vector<char> chunk(65536, 'z');
  size_t sent = 0;
  while (true) {
    ssize_t n = send(c.client.get(), chunk.data(), chunk.size(), 0);
    if (n < 0) {
      EXPECT_EQ(errno, EAGAIN);
      break;
    }
    sent += n;
    ASSERT_LT(sent, size_t{256} << 20) << "the buffers never filled";
  }
  EXPECT_GT(sent, 0u);
  EXPECT_EQ(PollOnce(c.client.get(), POLLOUT), 0);
  // Draining the reader makes room again.
  std::vector<char> buf(sent);
  size_t got = 0;
  while (got < sent) {
    ssize_t n = recv(c.server.get(), buf.data(), buf.size(), MSG_DONTWAIT);
    if (n <= 0) {
      PollOnce(c.server.get(), POLLIN, 1000);
      continue;
    }
    got += n;
  }
  EXPECT_TRUE(PollOnce(c.client.get(), POLLOUT, 5000) & POLLOUT);
}

TEST_P(TcpTest, IoctlsCountQueuedBytes) {
  TcpConn c = Connected(family());
  ASSERT_EQ(send(c.client.get(), "12345", 5, 0), 5);
  PollOnce(c.server.get(), POLLIN, 5000);
  int n = -1;
  ASSERT_SYS_OK(ioctl(c.server.get(), FIONREAD, &n));
  EXPECT_EQ(n, 5);
  ASSERT_SYS_OK(ioctl(c.server.get(), SIOCINQ, &n));
  EXPECT_EQ(n, 5);
  ASSERT_SYS_OK(ioctl(c.server.get(), SIOCATMARK, &n));
  EXPECT_EQ(n, 0);
  EXPECT_EQ(RecvString(c.server.get(), 5), "12345");
  ASSERT_SYS_OK(ioctl(c.server.get(), FIONREAD, &n));
  EXPECT_EQ(n, 0);
  ASSERT_SYS_OK(ioctl(c.client.get(), SIOCOUTQ, &n));
  EXPECT_EQ(n, 0);
  EXPECT_ERRNO(ioctl(c.listener.get(), SIOCINQ, &n), EINVAL);
}

TEST_P(TcpTest, ReceiveTimeoutGivesEagain) {
  TcpConn c = Connected(family());
  timeval tv{0, 50000};
  ASSERT_SYS_OK(setsockopt(c.server.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
  EXPECT_EQ(RecvString(c.server.get(), 4), "errno:EAGAIN");
}

// --- unconnected errors ---

TEST_P(TcpTest, SendOnAnUnconnectedSocketIsEpipe) {
  SigpipeCounter counter;
  ScopedFd s = Sock(family(), SOCK_STREAM);
  EXPECT_ERRNO(send(s.get(), "x", 1, MSG_NOSIGNAL), EPIPE);
  EXPECT_EQ(sigpipes, 0);
  EXPECT_ERRNO(write(s.get(), "x", 1), EPIPE);
  EXPECT_EQ(sigpipes, 1);
}

TEST_P(TcpTest, RecvOnAnUnconnectedSocketIsEnotconn) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  char c;
  EXPECT_ERRNO(recv(s.get(), &c, 1, MSG_DONTWAIT), ENOTCONN);
  EXPECT_ERRNO(read(s.get(), &c, 1), ENOTCONN);
  ScopedFd l = Listener(family());
  EXPECT_ERRNO(recv(l.get(), &c, 1, MSG_DONTWAIT), ENOTCONN);
}

TEST_P(TcpTest, ShutdownErrors) {
  ScopedFd s = Sock(family(), SOCK_STREAM);
  EXPECT_ERRNO(shutdown(s.get(), SHUT_WR), ENOTCONN);
  TcpConn c = Connected(family());
  EXPECT_ERRNO(shutdown(c.client.get(), 3), EINVAL);
  EXPECT_ERRNO(shutdown(c.client.get(), -1), EINVAL);
}

// --- shutdown and close ---

TEST_P(TcpTest, ShutdownWrGivesThePeerEndOfStreamAfterTheData) {
  TcpConn c = Connected(family());
  ASSERT_EQ(send(c.client.get(), "last", 4, 0), 4);
  ASSERT_SYS_OK(shutdown(c.client.get(), SHUT_WR));
  EXPECT_EQ(PollOnce(c.server.get(), POLLIN | POLLRDHUP, 5000) & (POLLIN | POLLRDHUP),
            POLLIN | POLLRDHUP);
  EXPECT_EQ(RecvString(c.server.get(), 16), "last");
  EXPECT_EQ(RecvString(c.server.get(), 16), "");
  // The other direction still works.
  ASSERT_EQ(send(c.server.get(), "back", 4, 0), 4);
  EXPECT_EQ(RecvString(c.client.get(), 16), "back");
}

TEST_P(TcpTest, WriteAfterShutdownWrIsEpipe) {
  TcpConn c = Connected(family());
  ASSERT_SYS_OK(shutdown(c.client.get(), SHUT_WR));
  EXPECT_ERRNO(send(c.client.get(), "x", 1, MSG_NOSIGNAL), EPIPE);
  EXPECT_TRUE(PollOnce(c.client.get(), POLLOUT) & POLLOUT);
}

TEST_P(TcpTest, ShutdownRdReadsEndOfStream) {
  TcpConn c = Connected(family());
  ASSERT_SYS_OK(shutdown(c.server.get(), SHUT_RD));
  EXPECT_EQ(RecvString(c.server.get(), 4), "");
  EXPECT_TRUE(PollOnce(c.server.get(), POLLIN | POLLRDHUP) & POLLRDHUP);
}

TEST_P(TcpTest, BothDirectionsShutIsHangUp) {
  TcpConn c = Connected(family());
  ASSERT_SYS_OK(shutdown(c.client.get(), SHUT_WR));
  ASSERT_SYS_OK(shutdown(c.server.get(), SHUT_WR));
  EXPECT_TRUE(PollOnce(c.client.get(), POLLIN, 5000) & POLLHUP);
  EXPECT_TRUE(PollOnce(c.server.get(), POLLIN, 5000) & POLLHUP);
  EXPECT_EQ(RecvString(c.client.get(), 4), "");
}

TEST_P(TcpTest, CloseGivesThePeerEndOfStream) {
  TcpConn c = Connected(family());
  ASSERT_EQ(send(c.client.get(), "bye", 3, 0), 3);
  c.client.reset();
  EXPECT_EQ(RecvString(c.server.get(), 16), "bye");
  EXPECT_EQ(RecvString(c.server.get(), 16), "");
  EXPECT_TRUE(PollOnce(c.server.get(), POLLIN | POLLRDHUP) & POLLRDHUP);
}

TEST_P(TcpTest, CloseWithUnreadDataResetsThePeer) {
  TcpConn c = Connected(family());
  ASSERT_EQ(send(c.client.get(), "unread", 6, 0), 6);
  PollOnce(c.server.get(), POLLIN, 5000);
  c.server.reset();
  EXPECT_TRUE(PollOnce(c.client.get(), POLLIN, 5000) & POLLERR);
  EXPECT_EQ(RecvString(c.client.get(), 4), "errno:ECONNRESET");
  EXPECT_EQ(RecvString(c.client.get(), 4), "");
  EXPECT_ERRNO(send(c.client.get(), "x", 1, MSG_NOSIGNAL), EPIPE);
}

TEST_P(TcpTest, LingerZeroResetsThePeer) {
  TcpConn c = Connected(family());
  linger lg{1, 0};
  ASSERT_SYS_OK(setsockopt(c.server.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
  linger back{};
  socklen_t len = sizeof(back);
  ASSERT_SYS_OK(getsockopt(c.server.get(), SOL_SOCKET, SO_LINGER, &back, &len));
  EXPECT_EQ(back.l_onoff, 1);
  c.server.reset();
  PollOnce(c.client.get(), POLLIN, 5000);
  EXPECT_EQ(GetInt(c.client.get(), SOL_SOCKET, SO_ERROR), ECONNRESET);
}

TEST_P(TcpTest, WriteAfterThePeerClosedFailsWithEpipeAndSigpipe) {
  SigpipeCounter counter;
  TcpConn c = Connected(family());
  c.server.reset();
  PollOnce(c.client.get(), POLLIN, 5000);
  // The first write still goes out; the peer's reset answers it.
  EXPECT_EQ(write(c.client.get(), "x", 1), 1);
  EXPECT_TRUE(PollOnce(c.client.get(), POLLOUT, 5000) & POLLERR);
  EXPECT_ERRNO(write(c.client.get(), "x", 1), EPIPE);
  EXPECT_EQ(sigpipes, 1);
  EXPECT_ERRNO(send(c.client.get(), "x", 1, MSG_NOSIGNAL), EPIPE);
  EXPECT_EQ(sigpipes, 1);
  EXPECT_EQ(RecvString(c.client.get(), 4), "");
}

TEST_P(TcpTest, GetpeernameAfterBothSidesShutIsEnotconn) {
  TcpConn c = Connected(family());
  EXPECT_EQ(PeerName(c.client.get()).port(), SockName(c.listener.get()).port());
  ASSERT_SYS_OK(shutdown(c.client.get(), SHUT_WR));
  ASSERT_SYS_OK(shutdown(c.server.get(), SHUT_WR));
  PollOnce(c.client.get(), POLLIN, 5000);
  SockAddr a;
  a.len = sizeof(a.ss);
  EXPECT_ERRNO(getpeername(c.client.get(), a.get(), &a.len), ENOTCONN);
}

// --- readiness ---

TEST_P(TcpTest, EdgeTriggeredEpollSeesEveryWrite) {
  TcpConn c = Connected(family());
  ScopedFd ep(epoll_create1(0));
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ASSERT_SYS_OK(epoll_ctl(ep.get(), EPOLL_CTL_ADD, c.server.get(), &ev));
  epoll_event out;
  EXPECT_EQ(epoll_wait(ep.get(), &out, 1, 0), 0);
  ASSERT_EQ(send(c.client.get(), "a", 1, 0), 1);
  EXPECT_EQ(epoll_wait(ep.get(), &out, 1, 5000), 1);
  EXPECT_EQ(epoll_wait(ep.get(), &out, 1, 0), 0);
  ASSERT_EQ(send(c.client.get(), "b", 1, 0), 1);
  EXPECT_EQ(epoll_wait(ep.get(), &out, 1, 5000), 1);
}

TEST_P(TcpTest, ConnectedSocketsPollWritable) {
  TcpConn c = Connected(family());
  EXPECT_EQ(PollOnce(c.client.get(), POLLIN | POLLOUT), POLLOUT);
  EXPECT_EQ(PollOnce(c.server.get(), POLLIN | POLLOUT), POLLOUT);
  ASSERT_EQ(send(c.client.get(), "r", 1, 0), 1);
  EXPECT_EQ(PollOnce(c.server.get(), POLLIN | POLLOUT, 5000), POLLIN | POLLOUT);
}

TEST_P(TcpTest, BlockedReaderWakesWhenDataArrives) {
  TcpConn c = Connected(family());
  pid_t pid = fork();
  if (pid == 0) {
    usleep(50000);
    _exit(write(c.client.get(), "late", 4) == 4 ? 0 : 1);
  }
  EXPECT_EQ(RecvString(c.server.get(), 8), "late");
  EXPECT_EQ(WaitChild(pid), 0);
}

TEST_P(TcpTest, BlockedAcceptWakesForAConnection) {
  ScopedFd l = Listener(family());
  SockAddr dst = SockName(l.get());
  pid_t pid = fork();
  if (pid == 0) {
    usleep(50000);
    int c = socket(family(), SOCK_STREAM, 0);
    _exit(connect(c, dst.get(), dst.len) == 0 ? 0 : 1);
  }
  ScopedFd s(accept(l.get(), nullptr, nullptr));
  EXPECT_GE(s.get(), 0);
  EXPECT_EQ(WaitChild(pid), 0);
}

}  // namespace
}  // namespace syscall_test
