// AF_UNIX sockets: socketpair, bind/listen/connect/accept by path and abstract name,
// stream vs message semantics, shutdown and close, SCM_RIGHTS/SCM_CREDENTIALS, options,
// readiness and ioctls.
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

struct Addr {
  sockaddr_un sa{};
  socklen_t len = 0;
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&sa); }
};

Addr PathAddr(const std::string& path) {
  Addr a;
  a.sa.sun_family = AF_UNIX;
  memcpy(a.sa.sun_path, path.c_str(), path.size() + 1);
  a.len = offsetof(sockaddr_un, sun_path) + path.size() + 1;
  return a;
}

// A name unique to this process (native runs may share the host's abstract namespace).
Addr AbstractAddr(const std::string& name) {
  std::string full = name + "-" + std::to_string(getpid());
  Addr a;
  a.sa.sun_family = AF_UNIX;
  memcpy(a.sa.sun_path + 1, full.data(), full.size());
  a.len = offsetof(sockaddr_un, sun_path) + 1 + full.size();
  return a;
}

struct Pair {
  ScopedFd a, b;
};

Pair MakePair(int type) {
  int sv[2] = {-1, -1};
  if (socketpair(AF_UNIX, type, 0, sv) != 0) abort();
  return Pair{ScopedFd(sv[0]), ScopedFd(sv[1])};
}

// A listening socket bound to `a`.
ScopedFd Listener(const Addr& a, int type = SOCK_STREAM, int backlog = 8) {
  ScopedFd s(socket(AF_UNIX, type, 0));
  if (s.get() < 0 || bind(s.get(), a.get(), a.len) != 0 || listen(s.get(), backlog) != 0) abort();
  return s;
}

ScopedFd Connected(const Addr& a, int type = SOCK_STREAM) {
  ScopedFd c(socket(AF_UNIX, type, 0));
  if (c.get() < 0 || connect(c.get(), a.get(), a.len) != 0) abort();
  return c;
}

int WaitChild(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// --- socket / socketpair ---

TEST(UnixSocket, SocketArgumentErrors) {
  EXPECT_ERRNO(socket(AF_UNIX, SOCK_STREAM, 5), EPROTONOSUPPORT);
  EXPECT_ERRNO(socket(AF_UNIX, SOCK_RDM, 0), ESOCKTNOSUPPORT);
  EXPECT_ERRNO(socket(AF_UNIX, SOCK_STREAM | 0x100, 0), EINVAL);
  EXPECT_ERRNO(socket(12345, SOCK_STREAM, 0), EAFNOSUPPORT);
  int sv[2];
  EXPECT_ERRNO(socketpair(AF_INET, SOCK_STREAM, 0, sv), EOPNOTSUPP);
}

TEST(UnixSocket, SocketFlagsSetNonblockAndCloexec) {
  ScopedFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  ASSERT_SYS_OK(s.get());
  EXPECT_TRUE(fcntl(s.get(), F_GETFL) & O_NONBLOCK);
  EXPECT_EQ(fcntl(s.get(), F_GETFD), FD_CLOEXEC);
}

TEST(UnixSocket, StreamPairMergesWrites) {
  Pair p = MakePair(SOCK_STREAM);
  ASSERT_EQ(write(p.a.get(), "abc", 3), 3);
  ASSERT_EQ(send(p.a.get(), "def", 3, 0), 3);
  char buf[16] = {};
  ASSERT_EQ(read(p.b.get(), buf, sizeof(buf)), 6);
  EXPECT_STREQ(buf, "abcdef");
  // And the other direction.
  ASSERT_EQ(write(p.b.get(), "xy", 2), 2);
  ASSERT_EQ(recv(p.a.get(), buf, 1, 0), 1);
  EXPECT_EQ(buf[0], 'x');
  ASSERT_EQ(recv(p.a.get(), buf, 10, 0), 1);
  EXPECT_EQ(buf[0], 'y');
}

TEST(UnixSocket, DgramPairKeepsBoundaries) {
  Pair p = MakePair(SOCK_DGRAM);
  ASSERT_EQ(send(p.a.get(), "one", 3, 0), 3);
  ASSERT_EQ(send(p.a.get(), "three", 5, 0), 5);
  ASSERT_EQ(send(p.a.get(), "", 0, 0), 0);
  char buf[16] = {};
  ASSERT_EQ(recv(p.b.get(), buf, sizeof(buf), 0), 3);
  EXPECT_EQ(std::string(buf, 3), "one");
  ASSERT_EQ(recv(p.b.get(), buf, sizeof(buf), 0), 5);
  EXPECT_EQ(std::string(buf, 5), "three");
  EXPECT_EQ(recv(p.b.get(), buf, sizeof(buf), MSG_DONTWAIT), 0);  // the empty datagram
  EXPECT_ERRNO(recv(p.b.get(), buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
}

TEST(UnixSocket, SeqpacketTruncatesAndReportsMsgTrunc) {
  Pair p = MakePair(SOCK_SEQPACKET);
  ASSERT_EQ(send(p.a.get(), "0123456789", 10, 0), 10);
  ASSERT_EQ(send(p.a.get(), "next", 4, 0), 4);
  char buf[16] = {};
  iovec iov{buf, 4};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ASSERT_EQ(recvmsg(p.b.get(), &msg, 0), 4);
  EXPECT_EQ(std::string(buf, 4), "0123");
  EXPECT_TRUE(msg.msg_flags & MSG_TRUNC);
  // The rest of the record is gone; the next record is whole.
  ASSERT_EQ(recv(p.b.get(), buf, sizeof(buf), 0), 4);
  EXPECT_EQ(std::string(buf, 4), "next");
}

TEST(UnixSocket, DgramMsgTruncFlagReturnsFullLength) {
  Pair p = MakePair(SOCK_DGRAM);
  ASSERT_EQ(send(p.a.get(), "hello world", 11, 0), 11);
  char buf[4] = {};
  EXPECT_EQ(recv(p.b.get(), buf, 3, MSG_TRUNC), 11);
  EXPECT_EQ(std::string(buf, 3), "hel");
}

TEST(UnixSocket, StreamPeekLeavesDataQueued) {
  Pair p = MakePair(SOCK_STREAM);
  ASSERT_EQ(write(p.a.get(), "peek", 4), 4);
  char buf[8] = {};
  ASSERT_EQ(recv(p.b.get(), buf, sizeof(buf), MSG_PEEK), 4);
  EXPECT_EQ(std::string(buf, 4), "peek");
  memset(buf, 0, sizeof(buf));
  ASSERT_EQ(recv(p.b.get(), buf, sizeof(buf), 0), 4);
  EXPECT_EQ(std::string(buf, 4), "peek");
}

TEST(UnixSocket, StreamWaitAllCollectsSeveralWrites) {
  Pair p = MakePair(SOCK_STREAM);
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    p.b.reset();
    for (const char* part : {"wait", "all!"}) {
      usleep(20000);
      if (write(p.a.get(), part, 4) != 4) _exit(1);
    }
    _exit(0);
  }
  p.a.reset();
  char buf[8] = {};
  ASSERT_EQ(recv(p.b.get(), buf, 8, MSG_WAITALL), 8);
  EXPECT_EQ(std::string(buf, 8), "waitall!");
  EXPECT_EQ(WaitChild(pid), 0);
}

TEST(UnixSocket, NonblockingReadAndWriteGiveEagain) {
  int sv[2];
  ASSERT_SYS_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv));
  ScopedFd a(sv[0]), b(sv[1]);
  char c;
  EXPECT_ERRNO(read(a.get(), &c, 1), EAGAIN);
  std::vector<char> chunk(65536, 'x');
  size_t total = 0;
  while (true) {
    ssize_t n = write(a.get(), chunk.data(), chunk.size());
    if (n < 0) {
      EXPECT_EQ(errno, EAGAIN);
      break;
    }
    total += n;
    ASSERT_LT(total, 64u << 20) << "the socket never filled up";
  }
  EXPECT_GT(total, 0u);
  pollfd pfd{a.get(), POLLOUT, 0};
  EXPECT_EQ(poll(&pfd, 1, 0), 0);  // full: not writable
  // Draining the peer makes room again.
  size_t drained = 0;
  while (drained < total) {
    ssize_t n = read(b.get(), chunk.data(), chunk.size());
    ASSERT_GT(n, 0);
    drained += n;
  }
  EXPECT_EQ(poll(&pfd, 1, 0), 1);
  EXPECT_TRUE(pfd.revents & POLLOUT);
}

TEST(UnixSocket, MsgDontwaitOnBlockingSocket) {
  Pair p = MakePair(SOCK_SEQPACKET);
  char c;
  EXPECT_ERRNO(recv(p.a.get(), &c, 1, MSG_DONTWAIT), EAGAIN);
}

// --- names ---

TEST(UnixSocket, BindListenConnectAcceptByPath) {
  TempDir dir;
  Addr a = PathAddr(dir.Child("sock"));
  ScopedFd srv = Listener(a);
  struct stat st;
  ASSERT_SYS_OK(stat(a.sa.sun_path, &st));
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  ScopedFd cli = Connected(a);
  ScopedFd conn(accept(srv.get(), nullptr, nullptr));
  ASSERT_SYS_OK(conn.get());
  ASSERT_EQ(write(cli.get(), "ping", 4), 4);
  char buf[8] = {};
  ASSERT_EQ(read(conn.get(), buf, sizeof(buf)), 4);
  EXPECT_STREQ(buf, "ping");
  ASSERT_EQ(write(conn.get(), "pong", 4), 4);
  ASSERT_EQ(read(cli.get(), buf, sizeof(buf)), 4);
  EXPECT_STREQ(buf, "pong");
}

TEST(UnixSocket, ClientMayWriteBeforeAccept) {
  TempDir dir;
  Addr a = PathAddr(dir.Child("s"));
  ScopedFd srv = Listener(a);
  ScopedFd cli = Connected(a);
  ASSERT_EQ(write(cli.get(), "early", 5), 5);
  ScopedFd conn(accept(srv.get(), nullptr, nullptr));
  ASSERT_SYS_OK(conn.get());
  char buf[8] = {};
  ASSERT_EQ(read(conn.get(), buf, sizeof(buf)), 5);
  EXPECT_STREQ(buf, "early");
}

TEST(UnixSocket, BindErrors) {
  TempDir dir;
  Addr a = PathAddr(dir.Child("s"));
  ScopedFd s1(socket(AF_UNIX, SOCK_STREAM, 0));
  ASSERT_SYS_OK(bind(s1.get(), a.get(), a.len));
  ScopedFd s2(socket(AF_UNIX, SOCK_STREAM, 0));
  EXPECT_ERRNO(bind(s2.get(), a.get(), a.len), EADDRINUSE);
  // A bound socket cannot be bound again.
  Addr b = PathAddr(dir.Child("t"));
  EXPECT_ERRNO(bind(s1.get(), b.get(), b.len), EINVAL);
  EXPECT_ERRNO(access(b.sa.sun_path, F_OK), ENOENT);
  // Bad family / length.
  sockaddr_un bad{};
  bad.sun_family = AF_INET;
  EXPECT_ERRNO(bind(s2.get(), reinterpret_cast<sockaddr*>(&bad), sizeof(bad)), EINVAL);
  EXPECT_ERRNO(bind(s2.get(), a.get(), 1), EINVAL);
  Addr missing = PathAddr(dir.Child("nodir/s"));
  EXPECT_ERRNO(bind(s2.get(), missing.get(), missing.len), ENOENT);
}

TEST(UnixSocket, ConnectErrors) {
  TempDir dir;
  ScopedFd c(socket(AF_UNIX, SOCK_STREAM, 0));
  Addr none = PathAddr(dir.Child("none"));
  EXPECT_ERRNO(connect(c.get(), none.get(), none.len), ENOENT);
  // A regular file is not a socket.
  std::string file = dir.Child("file");
  ScopedFd f(open(file.c_str(), O_CREAT | O_WRONLY, 0644));
  Addr fa = PathAddr(file);
  EXPECT_ERRNO(connect(c.get(), fa.get(), fa.len), ECONNREFUSED);
  // Bound but not listening.
  Addr a = PathAddr(dir.Child("s"));
  ScopedFd s(socket(AF_UNIX, SOCK_STREAM, 0));
  ASSERT_SYS_OK(bind(s.get(), a.get(), a.len));
  EXPECT_ERRNO(connect(c.get(), a.get(), a.len), ECONNREFUSED);
  // A datagram socket cannot connect to a stream listener.
  ASSERT_SYS_OK(listen(s.get(), 1));
  ScopedFd d(socket(AF_UNIX, SOCK_DGRAM, 0));
  EXPECT_ERRNO(connect(d.get(), a.get(), a.len), EPROTOTYPE);
  EXPECT_ERRNO(connect(c.get(), a.get(), offsetof(sockaddr_un, sun_path)), EINVAL);
}

TEST(UnixSocket, ConnectAfterListenerClosedIsRefused) {
  TempDir dir;
  Addr a = PathAddr(dir.Child("s"));
  { ScopedFd srv = Listener(a); }
  ScopedFd c(socket(AF_UNIX, SOCK_STREAM, 0));
  EXPECT_ERRNO(connect(c.get(), a.get(), a.len), ECONNREFUSED);
}

TEST(UnixSocket, ConnectTwiceIsEisconn) {
  TempDir dir;
  Addr a = PathAddr(dir.Child("s"));
  ScopedFd srv = Listener(a);
  ScopedFd c = Connected(a);
  EXPECT_ERRNO(connect(c.get(), a.get(), a.len), EISCONN);
}

TEST(UnixSocket, AbstractNamesBindConnectAndCollide) {
  Addr a = AbstractAddr("usentry-abs");
  ScopedFd srv = Listener(a);
  ScopedFd other(socket(AF_UNIX, SOCK_STREAM, 0));
  EXPECT_ERRNO(bind(other.get(), a.get(), a.len), EADDRINUSE);
  ScopedFd cli = Connected(a);
  sockaddr_un got{};
  socklen_t len = sizeof(got);
  ASSERT_SYS_OK(getsockname(srv.get(), reinterpret_cast<sockaddr*>(&got), &len));
  EXPECT_EQ(len, a.len);
  EXPECT_EQ(memcmp(&got, &a.sa, a.len), 0);
  len = sizeof(got);
  ASSERT_SYS_OK(getpeername(cli.get(), reinterpret_cast<sockaddr*>(&got), &len));
  EXPECT_EQ(len, a.len);
  srv.reset();
  ScopedFd c2(socket(AF_UNIX, SOCK_STREAM, 0));
  EXPECT_ERRNO(connect(c2.get(), a.get(), a.len), ECONNREFUSED);
  // The name is free again once its socket is gone.
  ScopedFd again(socket(AF_UNIX, SOCK_STREAM, 0));
  ASSERT_SYS_OK(bind(again.get(), a.get(), a.len));
}

TEST(UnixSocket, AutobindGivesFiveHexDigitAbstractName) {
  ScopedFd s(socket(AF_UNIX, SOCK_DGRAM, 0));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  ASSERT_SYS_OK(bind(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa_family_t)));
  sockaddr_un got{};
  socklen_t len = sizeof(got);
  ASSERT_SYS_OK(getsockname(s.get(), reinterpret_cast<sockaddr*>(&got), &len));
  EXPECT_EQ(len, offsetof(sockaddr_un, sun_path) + 6);
  EXPECT_EQ(got.sun_path[0], '\0');
  for (int i = 1; i < 6; ++i) EXPECT_TRUE(isxdigit(got.sun_path[i])) << i;
}

TEST(UnixSocket, GetsocknameLengths) {
  TempDir dir;
  ScopedFd s(socket(AF_UNIX, SOCK_STREAM, 0));
  sockaddr_un got{};
  socklen_t len = sizeof(got);
  ASSERT_SYS_OK(getsockname(s.get(), reinterpret_cast<sockaddr*>(&got), &len));
  EXPECT_EQ(len, sizeof(sa_family_t));
  EXPECT_EQ(got.sun_family, AF_UNIX);
  Addr a = PathAddr(dir.Child("named"));
  ASSERT_SYS_OK(bind(s.get(), a.get(), a.len));
  len = sizeof(got);
  ASSERT_SYS_OK(getsockname(s.get(), reinterpret_cast<sockaddr*>(&got), &len));
  EXPECT_EQ(len, offsetof(sockaddr_un, sun_path) + strlen(a.sa.sun_path) + 1);
  EXPECT_STREQ(got.sun_path, a.sa.sun_path);
  // A short buffer gets a truncated address but the full length.
  len = 4;
  memset(&got, 0, sizeof(got));
  ASSERT_SYS_OK(getsockname(s.get(), reinterpret_cast<sockaddr*>(&got), &len));
  EXPECT_EQ(len, a.len);
  EXPECT_EQ(got.sun_path[2], '\0');
}

TEST(UnixSocket, PeerNamesOfConnectedAndAcceptedSockets) {
  TempDir dir;
  Addr a = PathAddr(dir.Child("srv"));
  ScopedFd srv = Listener(a);
  ScopedFd cli(socket(AF_UNIX, SOCK_STREAM, 0));
  sockaddr_un got{};
  socklen_t len = sizeof(got);
  EXPECT_ERRNO(getpeername(cli.get(), reinterpret_cast<sockaddr*>(&got), &len), ENOTCONN);
  ASSERT_SYS_OK(connect(cli.get(), a.get(), a.len));
  len = sizeof(got);
  ASSERT_SYS_OK(getpeername(cli.get(), reinterpret_cast<sockaddr*>(&got), &len));
  EXPECT_EQ(len, a.len);
  EXPECT_STREQ(got.sun_path, a.sa.sun_path);
  len = sizeof(got);
  ScopedFd conn(accept(srv.get(), reinterpret_cast<sockaddr*>(&got), &len));
  ASSERT_SYS_OK(conn.get());
  EXPECT_EQ(len, sizeof(sa_family_t));  // the client is unnamed
  len = sizeof(got);
  ASSERT_SYS_OK(getsockname(conn.get(), reinterpret_cast<sockaddr*>(&got), &len));
  EXPECT_EQ(len, a.len);
  EXPECT_STREQ(got.sun_path, a.sa.sun_path);
}

TEST(UnixSocket, Accept4FlagsAndErrors) {
  TempDir dir;
  Addr a = PathAddr(dir.Child("s"));
  ScopedFd srv = Listener(a);
  ScopedFd cli = Connected(a);
  EXPECT_ERRNO(accept4(srv.get(), nullptr, nullptr, 0x1234), EINVAL);
  ScopedFd conn(accept4(srv.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  ASSERT_SYS_OK(conn.get());
  EXPECT_TRUE(fcntl(conn.get(), F_GETFL) & O_NONBLOCK);
  EXPECT_EQ(fcntl(conn.get(), F_GETFD), FD_CLOEXEC);
  EXPECT_ERRNO(accept(cli.get(), nullptr, nullptr), EINVAL);  // not listening
  ScopedFd d(socket(AF_UNIX, SOCK_DGRAM, 0));
  EXPECT_ERRNO(accept(d.get(), nullptr, nullptr), EOPNOTSUPP);
  int fds[2];
  ASSERT_SYS_OK(pipe(fds));
  ScopedFd r(fds[0]), w(fds[1]);
  EXPECT_ERRNO(accept(r.get(), nullptr, nullptr), ENOTSOCK);
}

TEST(UnixSocket, ListenErrors) {
  ScopedFd d(socket(AF_UNIX, SOCK_DGRAM, 0));
  EXPECT_ERRNO(listen(d.get(), 1), EOPNOTSUPP);
  ScopedFd s(socket(AF_UNIX, SOCK_STREAM, 0));
  EXPECT_ERRNO(listen(s.get(), 1), EINVAL);  // unbound
}

TEST(UnixSocket, UnconnectedStreamErrors) {
  ScopedFd s(socket(AF_UNIX, SOCK_STREAM, 0));
  char c = 'x';
  EXPECT_ERRNO(send(s.get(), &c, 1, MSG_NOSIGNAL), ENOTCONN);
  EXPECT_ERRNO(recv(s.get(), &c, 1, 0), EINVAL);
  Addr a = AbstractAddr("nowhere");
  EXPECT_ERRNO(sendto(s.get(), &c, 1, MSG_NOSIGNAL, a.get(), a.len), EOPNOTSUPP);
  Pair p = MakePair(SOCK_STREAM);
  EXPECT_ERRNO(sendto(p.a.get(), &c, 1, MSG_NOSIGNAL, a.get(), a.len), EISCONN);
}

TEST(UnixSocket, NonblockingConnectToFullBacklogIsEagain) {
  Addr a = AbstractAddr("backlog");
  ScopedFd srv = Listener(a, SOCK_STREAM, 0);
  ScopedFd c1(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0));
  ASSERT_SYS_OK(connect(c1.get(), a.get(), a.len));
  ScopedFd c2(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0));
  EXPECT_ERRNO(connect(c2.get(), a.get(), a.len), EAGAIN);
  ScopedFd conn(accept(srv.get(), nullptr, nullptr));
  ASSERT_SYS_OK(conn.get());
  ASSERT_SYS_OK(connect(c2.get(), a.get(), a.len));
}

TEST(UnixSocket, BlockingAcceptWakesOnConnect) {
  Addr a = AbstractAddr("blockaccept");
  ScopedFd srv = Listener(a);
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    usleep(50000);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(c, a.get(), a.len) != 0) _exit(1);
    _exit(write(c, "k", 1) == 1 ? 0 : 2);
  }
  ScopedFd conn(accept(srv.get(), nullptr, nullptr));
  ASSERT_SYS_OK(conn.get());
  char c = 0;
  EXPECT_EQ(read(conn.get(), &c, 1), 1);
  EXPECT_EQ(c, 'k');
  EXPECT_EQ(WaitChild(pid), 0);
}

// --- shutdown and close ---

TEST(UnixSocket, ShutdownWriteGivesPeerEofAndUsEpipe) {
  Pair p = MakePair(SOCK_STREAM);
  ASSERT_EQ(write(p.a.get(), "last", 4), 4);
  ASSERT_SYS_OK(shutdown(p.a.get(), SHUT_WR));
  char buf[8];
  EXPECT_EQ(read(p.b.get(), buf, sizeof(buf)), 4);
  EXPECT_EQ(read(p.b.get(), buf, sizeof(buf)), 0);
  EXPECT_ERRNO(send(p.a.get(), "x", 1, MSG_NOSIGNAL), EPIPE);
  // The other direction still works.
  ASSERT_EQ(write(p.b.get(), "back", 4), 4);
  EXPECT_EQ(read(p.a.get(), buf, sizeof(buf)), 4);
  EXPECT_ERRNO(shutdown(p.a.get(), 7), EINVAL);
}

TEST(UnixSocket, PeerCloseGivesEofThenEpipe) {
  Pair p = MakePair(SOCK_STREAM);
  ASSERT_EQ(write(p.b.get(), "bye", 3), 3);
  p.b.reset();
  char buf[8];
  EXPECT_EQ(read(p.a.get(), buf, sizeof(buf)), 3);  // queued data survives the close
  EXPECT_EQ(read(p.a.get(), buf, sizeof(buf)), 0);
  EXPECT_ERRNO(send(p.a.get(), "x", 1, MSG_NOSIGNAL), EPIPE);
}

TEST(UnixSocket, ClosingWithUnreadDataResetsThePeer) {
  Pair p = MakePair(SOCK_STREAM);
  ASSERT_EQ(write(p.a.get(), "unread", 6), 6);
  p.b.reset();
  char buf[8];
  EXPECT_ERRNO(read(p.a.get(), buf, sizeof(buf)), ECONNRESET);
  EXPECT_EQ(read(p.a.get(), buf, sizeof(buf)), 0);
}

volatile sig_atomic_t sigpipes = 0;

TEST(UnixSocket, WriteToClosedPeerRaisesSigpipe) {
  struct sigaction sa {
  }, old{};
  sa.sa_handler = [](int) { sigpipes = sigpipes + 1; };
  ASSERT_SYS_OK(sigaction(SIGPIPE, &sa, &old));
  Pair p = MakePair(SOCK_STREAM);
  p.b.reset();
  sigpipes = 0;
  EXPECT_ERRNO(write(p.a.get(), "x", 1), EPIPE);
  EXPECT_EQ(sigpipes, 1);
  EXPECT_ERRNO(send(p.a.get(), "x", 1, MSG_NOSIGNAL), EPIPE);
  EXPECT_EQ(sigpipes, 1);
  sigaction(SIGPIPE, &old, nullptr);
}

TEST(UnixSocket, SeqpacketPeerCloseIsEofWithoutSigpipe) {
  Pair p = MakePair(SOCK_SEQPACKET);
  p.b.reset();
  char buf[4];
  EXPECT_EQ(recv(p.a.get(), buf, sizeof(buf), 0), 0);
  struct sigaction sa {
  }, old{};
  sa.sa_handler = [](int) { sigpipes = sigpipes + 1; };
  ASSERT_SYS_OK(sigaction(SIGPIPE, &sa, &old));
  sigpipes = 0;
  EXPECT_ERRNO(send(p.a.get(), "x", 1, 0), EPIPE);
  EXPECT_EQ(sigpipes, 0);
  sigaction(SIGPIPE, &old, nullptr);
}

TEST(UnixSocket, DgramPeerCloseIsRefusedThenNotConnected) {
  Pair p = MakePair(SOCK_DGRAM);
  p.b.reset();
  EXPECT_ERRNO(send(p.a.get(), "x", 1, 0), ECONNREFUSED);
  EXPECT_ERRNO(send(p.a.get(), "x", 1, 0), ENOTCONN);
}

// --- datagrams by name ---

TEST(UnixSocket, DgramSendtoPathWithoutConnecting) {
  TempDir dir;
  Addr srv_addr = PathAddr(dir.Child("dsrv"));
  ScopedFd srv(socket(AF_UNIX, SOCK_DGRAM, 0));
  ASSERT_SYS_OK(bind(srv.get(), srv_addr.get(), srv_addr.len));
  ScopedFd anon(socket(AF_UNIX, SOCK_DGRAM, 0));
  ASSERT_EQ(sendto(anon.get(), "anon", 4, 0, srv_addr.get(), srv_addr.len), 4);
  Addr cli_addr = PathAddr(dir.Child("dcli"));
  ScopedFd named(socket(AF_UNIX, SOCK_DGRAM, 0));
  ASSERT_SYS_OK(bind(named.get(), cli_addr.get(), cli_addr.len));
  ASSERT_EQ(sendto(named.get(), "named", 5, 0, srv_addr.get(), srv_addr.len), 5);

  char buf[8] = {};
  sockaddr_un from{};
  socklen_t len = sizeof(from);
  ASSERT_EQ(recvfrom(srv.get(), buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &len), 4);
  EXPECT_EQ(len, 0u);  // unnamed sender
  len = sizeof(from);
  ASSERT_EQ(recvfrom(srv.get(), buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &len), 5);
  EXPECT_EQ(len, cli_addr.len);
  EXPECT_STREQ(from.sun_path, cli_addr.sa.sun_path);
  // Answer by name.
  ASSERT_EQ(sendto(srv.get(), "reply", 5, 0, reinterpret_cast<sockaddr*>(&from), len), 5);
  ASSERT_EQ(recv(named.get(), buf, sizeof(buf), 0), 5);
}

TEST(UnixSocket, DgramSendErrors) {
  ScopedFd s(socket(AF_UNIX, SOCK_DGRAM, 0));
  EXPECT_ERRNO(send(s.get(), "x", 1, 0), ENOTCONN);
  Addr none = AbstractAddr("no-such-dgram");
  EXPECT_ERRNO(sendto(s.get(), "x", 1, 0, none.get(), none.len), ECONNREFUSED);
  Addr missing = PathAddr("/nonexistent-dir/sock");
  EXPECT_ERRNO(sendto(s.get(), "x", 1, 0, missing.get(), missing.len), ENOENT);
  // A socket connected elsewhere refuses strangers.
  Addr target = AbstractAddr("dgram-target");
  ScopedFd t(socket(AF_UNIX, SOCK_DGRAM, 0));
  ASSERT_SYS_OK(bind(t.get(), target.get(), target.len));
  Addr other = AbstractAddr("dgram-other");
  ScopedFd o(socket(AF_UNIX, SOCK_DGRAM, 0));
  ASSERT_SYS_OK(bind(o.get(), other.get(), other.len));
  ASSERT_SYS_OK(connect(t.get(), other.get(), other.len));
  EXPECT_ERRNO(sendto(s.get(), "x", 1, 0, target.get(), target.len), EPERM);
}

TEST(UnixSocket, SendmmsgAndRecvmmsg) {
  Pair p = MakePair(SOCK_DGRAM);
  char out[3][4] = {{'a'}, {'b', 'b'}, {'c', 'c', 'c'}};
  iovec oiov[3];
  mmsghdr omsg[3] = {};
  for (int i = 0; i < 3; ++i) {
    oiov[i] = {out[i], static_cast<size_t>(i + 1)};
    omsg[i].msg_hdr.msg_iov = &oiov[i];
    omsg[i].msg_hdr.msg_iovlen = 1;
  }
  ASSERT_EQ(sendmmsg(p.a.get(), omsg, 3, 0), 3);
  EXPECT_EQ(omsg[2].msg_len, 3u);
  char in[4][8];
  iovec iiov[4];
  mmsghdr imsg[4] = {};
  for (int i = 0; i < 4; ++i) {
    iiov[i] = {in[i], sizeof(in[i])};
    imsg[i].msg_hdr.msg_iov = &iiov[i];
    imsg[i].msg_hdr.msg_iovlen = 1;
  }
  ASSERT_EQ(recvmmsg(p.b.get(), imsg, 4, MSG_DONTWAIT, nullptr), 3);
  EXPECT_EQ(imsg[0].msg_len, 1u);
  EXPECT_EQ(imsg[1].msg_len, 2u);
  EXPECT_EQ(imsg[2].msg_len, 3u);
  EXPECT_EQ(in[2][2], 'c');
}

// --- ancillary data ---

void SendFds(int sock, const std::vector<int>& fds, const char* data = "F") {
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  iovec iov{const_cast<char*>(data), strlen(data)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  if (sendmsg(sock, &msg, 0) < 0) abort();
}

TEST(UnixSocket, ScmRightsPassesPipeToForkedChild) {
  Pair p = MakePair(SOCK_STREAM);
  int pfd[2];
  ASSERT_SYS_OK(pipe(pfd));
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    close(pfd[0]);
    close(pfd[1]);
    char data;
    char control[CMSG_SPACE(sizeof(int))];
    iovec iov{&data, 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    if (recvmsg(p.b.get(), &msg, 0) != 1) _exit(1);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    if (c == nullptr || c->cmsg_type != SCM_RIGHTS) _exit(2);
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof(fd));
    char buf[16] = {};
    if (read(fd, buf, sizeof(buf)) != 5 || strcmp(buf, "hello") != 0) _exit(3);
    _exit(0);
  }
  ASSERT_EQ(write(pfd[1], "hello", 5), 5);
  SendFds(p.a.get(), {pfd[0]});
  close(pfd[0]);
  close(pfd[1]);
  EXPECT_EQ(WaitChild(pid), 0);
}

TEST(UnixSocket, ScmRightsShortControlBufferTruncates) {
  Pair p = MakePair(SOCK_DGRAM);
  int pfd[2];
  ASSERT_SYS_OK(pipe(pfd));
  ScopedFd r(pfd[0]), w(pfd[1]);
  SendFds(p.a.get(), {r.get(), w.get(), r.get()});
  char data;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];  // room for two of the three
  iovec iov{&data, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ASSERT_EQ(recvmsg(p.b.get(), &msg, MSG_CMSG_CLOEXEC), 1);
  EXPECT_TRUE(msg.msg_flags & MSG_CTRUNC);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cmsg_len, CMSG_LEN(2 * sizeof(int)));
  int fd[2];
  memcpy(fd, CMSG_DATA(c), sizeof(fd));
  EXPECT_EQ(fcntl(fd[0], F_GETFD), FD_CLOEXEC);
  struct stat a, b;
  ASSERT_SYS_OK(fstat(fd[0], &a));
  ASSERT_SYS_OK(fstat(r.get(), &b));
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(fcntl(fd[1], F_GETFL) & O_ACCMODE, O_WRONLY);  // the pipe's write end
  close(fd[0]);
  close(fd[1]);
}

TEST(UnixSocket, NoControlBufferDropsFdsWithCtrunc) {
  Pair p = MakePair(SOCK_SEQPACKET);
  int pfd[2];
  ASSERT_SYS_OK(pipe(pfd));
  ScopedFd r(pfd[0]), w(pfd[1]);
  SendFds(p.a.get(), {r.get()});
  char data;
  iovec iov{&data, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ASSERT_EQ(recvmsg(p.b.get(), &msg, 0), 1);
  EXPECT_TRUE(msg.msg_flags & MSG_CTRUNC);
  EXPECT_EQ(msg.msg_controllen, 0u);
}

TEST(UnixSocket, ScmRightsBadFdIsEbadf) {
  Pair p = MakePair(SOCK_STREAM);
  char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{const_cast<char*>("x"), 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  int bad = 9999;
  memcpy(CMSG_DATA(c), &bad, sizeof(bad));
  EXPECT_ERRNO(sendmsg(p.a.get(), &msg, 0), EBADF);
}

TEST(UnixSocket, SoPeercredNamesTheConnectingProcess) {
  Pair p = MakePair(SOCK_STREAM);
  ucred cred{};
  socklen_t len = sizeof(cred);
  ASSERT_SYS_OK(getsockopt(p.a.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len));
  EXPECT_EQ(len, sizeof(cred));
  EXPECT_EQ(cred.pid, getpid());
  EXPECT_EQ(cred.uid, geteuid());
  EXPECT_EQ(cred.gid, getegid());

  Addr a = AbstractAddr("peercred");
  ScopedFd srv = Listener(a);
  len = sizeof(cred);
  ASSERT_SYS_OK(getsockopt(srv.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len));
  EXPECT_EQ(cred.pid, getpid());  // a listener reports the process that called listen()
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(c, a.get(), a.len) != 0) _exit(1);
    ucred mine{};
    socklen_t l = sizeof(mine);
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &mine, &l) != 0) _exit(2);
    char ch;
    if (read(c, &ch, 1) != 1) _exit(3);
    _exit(mine.pid == getppid() ? 0 : 4);  // the listener's process
  }
  ScopedFd conn(accept(srv.get(), nullptr, nullptr));
  ASSERT_SYS_OK(conn.get());
  len = sizeof(cred);
  ASSERT_SYS_OK(getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len));
  EXPECT_EQ(cred.pid, pid);
  ASSERT_EQ(write(conn.get(), "g", 1), 1);
  EXPECT_EQ(WaitChild(pid), 0);
}

TEST(UnixSocket, SoPasscredDeliversCredentials) {
  Pair p = MakePair(SOCK_DGRAM);
  int one = 1;
  ASSERT_SYS_OK(setsockopt(p.b.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)));
  int v = 0;
  socklen_t vl = sizeof(v);
  ASSERT_SYS_OK(getsockopt(p.b.get(), SOL_SOCKET, SO_PASSCRED, &v, &vl));
  EXPECT_EQ(v, 1);
  ASSERT_EQ(send(p.a.get(), "c", 1, 0), 1);
  char data;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  iovec iov{&data, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ASSERT_EQ(recvmsg(p.b.get(), &msg, 0), 1);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cmsg_level, SOL_SOCKET);
  EXPECT_EQ(c->cmsg_type, SCM_CREDENTIALS);
  ucred cred;
  memcpy(&cred, CMSG_DATA(c), sizeof(cred));
  EXPECT_EQ(cred.pid, getpid());
  EXPECT_EQ(cred.uid, getuid());
  EXPECT_EQ(cred.gid, getgid());
}

TEST(UnixSocket, ExplicitScmCredentialsAreChecked) {
  Pair p = MakePair(SOCK_DGRAM);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))] = {};
  iovec iov{const_cast<char*>("x"), 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_CREDENTIALS;
  c->cmsg_len = CMSG_LEN(sizeof(ucred));
  ucred cred{getpid(), getuid(), getgid()};
  memcpy(CMSG_DATA(c), &cred, sizeof(cred));
  EXPECT_EQ(sendmsg(p.a.get(), &msg, 0), 1);
  c->cmsg_type = 77;  // unknown SOL_SOCKET control message
  EXPECT_ERRNO(sendmsg(p.a.get(), &msg, 0), EINVAL);
}

// --- options ---

TEST(UnixSocket, BasicSocketOptions) {
  Addr a = AbstractAddr("opts");
  ScopedFd srv = Listener(a, SOCK_SEQPACKET);
  int v = -1;
  socklen_t len = sizeof(v);
  ASSERT_SYS_OK(getsockopt(srv.get(), SOL_SOCKET, SO_TYPE, &v, &len));
  EXPECT_EQ(v, SOCK_SEQPACKET);
  ASSERT_SYS_OK(getsockopt(srv.get(), SOL_SOCKET, SO_DOMAIN, &v, &len));
  EXPECT_EQ(v, AF_UNIX);
  ASSERT_SYS_OK(getsockopt(srv.get(), SOL_SOCKET, SO_PROTOCOL, &v, &len));
  EXPECT_EQ(v, 0);
  ASSERT_SYS_OK(getsockopt(srv.get(), SOL_SOCKET, SO_ACCEPTCONN, &v, &len));
  EXPECT_EQ(v, 1);
  ASSERT_SYS_OK(getsockopt(srv.get(), SOL_SOCKET, SO_ERROR, &v, &len));
  EXPECT_EQ(v, 0);
  int one = 1;
  ASSERT_SYS_OK(setsockopt(srv.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
  ASSERT_SYS_OK(getsockopt(srv.get(), SOL_SOCKET, SO_REUSEADDR, &v, &len));
  EXPECT_EQ(v, 1);
  EXPECT_ERRNO(getsockopt(srv.get(), SOL_SOCKET, 9999, &v, &len), ENOPROTOOPT);
  EXPECT_ERRNO(setsockopt(srv.get(), SOL_SOCKET, 9999, &one, sizeof(one)), ENOPROTOOPT);
  EXPECT_ERRNO(setsockopt(srv.get(), SOL_SOCKET, SO_REUSEADDR, &one, 2), EINVAL);
  EXPECT_ERRNO(setsockopt(srv.get(), IPPROTO_TCP, 1, &one, sizeof(one)), EOPNOTSUPP);
  linger lg{1, 5};
  ASSERT_SYS_OK(setsockopt(srv.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
  linger got{};
  socklen_t gl = sizeof(got);
  ASSERT_SYS_OK(getsockopt(srv.get(), SOL_SOCKET, SO_LINGER, &got, &gl));
  EXPECT_EQ(got.l_onoff, 1);
  EXPECT_EQ(got.l_linger, 5);
}

TEST(UnixSocket, BufferSizesAreDoubled) {
  ScopedFd s(socket(AF_UNIX, SOCK_STREAM, 0));
  int v = 10000;
  ASSERT_SYS_OK(setsockopt(s.get(), SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)));
  socklen_t len = sizeof(v);
  ASSERT_SYS_OK(getsockopt(s.get(), SOL_SOCKET, SO_SNDBUF, &v, &len));
  EXPECT_EQ(v, 20000);
  v = 100;
  ASSERT_SYS_OK(setsockopt(s.get(), SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)));
  ASSERT_SYS_OK(getsockopt(s.get(), SOL_SOCKET, SO_RCVBUF, &v, &len));
  EXPECT_EQ(v, 2304);  // SOCK_MIN_RCVBUF
  // A short optlen gets a short answer.
  char c = 0;
  socklen_t one = 1;
  ASSERT_SYS_OK(getsockopt(s.get(), SOL_SOCKET, SO_TYPE, &c, &one));
  EXPECT_EQ(one, 1u);
  EXPECT_EQ(c, SOCK_STREAM);
}

TEST(UnixSocket, RcvtimeoTimesOutWithEagain) {
  Pair p = MakePair(SOCK_STREAM);
  timeval tv{0, 50000};
  ASSERT_SYS_OK(setsockopt(p.a.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
  timeval got{};
  socklen_t len = sizeof(got);
  ASSERT_SYS_OK(getsockopt(p.a.get(), SOL_SOCKET, SO_RCVTIMEO, &got, &len));
  EXPECT_GE(got.tv_usec, 50000);  // Linux rounds up to whole jiffies
  EXPECT_LT(got.tv_usec, 60000);
  timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  char c;
  EXPECT_ERRNO(recv(p.a.get(), &c, 1, 0), EAGAIN);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
  EXPECT_GE(ms, 40);
  tv.tv_usec = 2000000;
  EXPECT_ERRNO(setsockopt(p.a.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), EDOM);
}

// --- readiness, ioctls, fstat ---

TEST(UnixSocket, ListenerPollsReadableWithPendingConnection) {
  Addr a = AbstractAddr("pollsrv");
  ScopedFd srv = Listener(a);
  pollfd pfd{srv.get(), POLLIN | POLLOUT, 0};
  EXPECT_EQ(poll(&pfd, 1, 0), 0);
  ScopedFd cli = Connected(a);
  ASSERT_EQ(poll(&pfd, 1, 0), 1);
  EXPECT_EQ(pfd.revents, POLLIN);
}

TEST(UnixSocket, PollSeesPeerCloseAndWakesBlockedPoll) {
  Pair p = MakePair(SOCK_STREAM);
  pollfd pfd{p.a.get(), POLLIN | POLLRDHUP, 0};
  EXPECT_EQ(poll(&pfd, 1, 0), 0);
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    usleep(50000);
    _exit(0);  // closes the child's copies; the parent's b goes below
  }
  p.b.reset();
  ASSERT_EQ(WaitChild(pid), 0);
  ASSERT_EQ(poll(&pfd, 1, 1000), 1);
  EXPECT_EQ(pfd.revents, POLLIN | POLLRDHUP | POLLHUP);
}

TEST(UnixSocket, BlockedReadWakesOnWriteFromChild) {
  Pair p = MakePair(SOCK_SEQPACKET);
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    usleep(30000);
    _exit(write(p.b.get(), "wake", 4) == 4 ? 0 : 1);
  }
  pollfd pfd{p.a.get(), POLLIN, 0};
  ASSERT_EQ(poll(&pfd, 1, 2000), 1);
  char buf[8];
  EXPECT_EQ(read(p.a.get(), buf, sizeof(buf)), 4);
  EXPECT_EQ(WaitChild(pid), 0);
}

TEST(UnixSocket, FionreadCountsStreamBytesAndNextDatagram) {
  Pair s = MakePair(SOCK_STREAM);
  ASSERT_EQ(write(s.a.get(), "abc", 3), 3);
  ASSERT_EQ(write(s.a.get(), "de", 2), 2);
  int n = -1;
  ASSERT_SYS_OK(ioctl(s.b.get(), FIONREAD, &n));
  EXPECT_EQ(n, 5);
  Pair d = MakePair(SOCK_DGRAM);
  ASSERT_EQ(write(d.a.get(), "abc", 3), 3);
  ASSERT_EQ(write(d.a.get(), "de", 2), 2);
  ASSERT_SYS_OK(ioctl(d.b.get(), FIONREAD, &n));
  EXPECT_EQ(n, 3);
  // SIOCOUTQ: what we sent that the peer has not read yet.
  Pair o = MakePair(SOCK_STREAM);
  ASSERT_EQ(write(o.a.get(), "0123456789", 10), 10);
  ASSERT_SYS_OK(ioctl(o.a.get(), SIOCOUTQ, &n));
  EXPECT_GE(n, 10);
  char buf[16];
  ASSERT_EQ(read(o.b.get(), buf, sizeof(buf)), 10);
  ASSERT_SYS_OK(ioctl(o.a.get(), SIOCOUTQ, &n));
  EXPECT_EQ(n, 0);
  ASSERT_SYS_OK(ioctl(o.b.get(), SIOCINQ, &n));
  EXPECT_EQ(n, 0);
  Addr a = AbstractAddr("fionread");
  ScopedFd srv = Listener(a);
  EXPECT_ERRNO(ioctl(srv.get(), FIONREAD, &n), EINVAL);
}

TEST(UnixSocket, FstatAndProcFdShowASocket) {
  Pair p = MakePair(SOCK_STREAM);
  struct stat st;
  ASSERT_SYS_OK(fstat(p.a.get(), &st));
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  char link[64] = {};
  std::string path = "/proc/self/fd/" + std::to_string(p.a.get());
  ASSERT_SYS_OK(readlink(path.c_str(), link, sizeof(link) - 1));
  EXPECT_EQ(std::string(link), "socket:[" + std::to_string(st.st_ino) + "]");
  EXPECT_ERRNO(lseek(p.a.get(), 0, SEEK_SET), ESPIPE);
}

TEST(UnixSocket, SocketCallsOnOtherFiles) {
  int fds[2];
  ASSERT_SYS_OK(pipe(fds));
  ScopedFd r(fds[0]), w(fds[1]);
  sockaddr_un sa{};
  socklen_t len = sizeof(sa);
  EXPECT_ERRNO(getsockname(r.get(), reinterpret_cast<sockaddr*>(&sa), &len), ENOTSOCK);
  EXPECT_ERRNO(shutdown(r.get(), SHUT_RD), ENOTSOCK);
  EXPECT_ERRNO(getsockname(999, reinterpret_cast<sockaddr*>(&sa), &len), EBADF);
}

TEST(UnixSocket, ReadvWritevKeepOneRecord) {
  Pair p = MakePair(SOCK_SEQPACKET);
  char a[] = "ab", b[] = "cde";
  iovec out[2] = {{a, 2}, {b, 3}};
  ASSERT_EQ(writev(p.a.get(), out, 2), 5);
  char x[3] = {}, y[8] = {};
  iovec in[2] = {{x, 3}, {y, sizeof(y)}};
  ASSERT_EQ(readv(p.b.get(), in, 2), 5);
  EXPECT_EQ(std::string(x, 3), "abc");
  EXPECT_EQ(std::string(y, 2), "de");
}

TEST(UnixSocket, DgramReceiverQueueFillsForStrangers) {
  Addr a = AbstractAddr("dgram-queue");
  ScopedFd srv(socket(AF_UNIX, SOCK_DGRAM, 0));
  ASSERT_SYS_OK(bind(srv.get(), a.get(), a.len));
  ScopedFd cli(socket(AF_UNIX, SOCK_DGRAM, 0));
  int sent = 0;
  while (sent < 1000) {
    if (sendto(cli.get(), "q", 1, MSG_DONTWAIT, a.get(), a.len) < 0) {
      EXPECT_EQ(errno, EAGAIN);
      break;
    }
    ++sent;
  }
  EXPECT_GT(sent, 0);
  EXPECT_LT(sent, 1000);  // net.unix.max_dgram_qlen bounds the queue
  char c;
  ASSERT_EQ(recv(srv.get(), &c, 1, 0), 1);
  EXPECT_EQ(sendto(cli.get(), "q", 1, MSG_DONTWAIT, a.get(), a.len), 1);
}

TEST(UnixSocket, DgramShutdownReadGivesZero) {
  Pair p = MakePair(SOCK_DGRAM);
  ASSERT_SYS_OK(shutdown(p.a.get(), SHUT_RD));
  char c;
  EXPECT_EQ(recv(p.a.get(), &c, 1, 0), 0);
  EXPECT_ERRNO(send(p.b.get(), "x", 1, 0), EPIPE);
  pollfd pfd{p.a.get(), POLLIN | POLLRDHUP, 0};
  ASSERT_EQ(poll(&pfd, 1, 0), 1);
  EXPECT_EQ(pfd.revents, POLLIN | POLLRDHUP);
}

TEST(UnixSocket, PathLookupFollowsTheInode) {
  TempDir dir;
  Addr a = PathAddr(dir.Child("first"));
  ScopedFd srv = Listener(a);
  Addr b = PathAddr(dir.Child("renamed"));
  ASSERT_SYS_OK(rename(a.sa.sun_path, b.sa.sun_path));
  ScopedFd c(socket(AF_UNIX, SOCK_STREAM, 0));
  EXPECT_ERRNO(connect(c.get(), a.get(), a.len), ENOENT);
  ASSERT_SYS_OK(connect(c.get(), b.get(), b.len));
  ASSERT_SYS_OK(unlink(b.sa.sun_path));
  ScopedFd c2(socket(AF_UNIX, SOCK_STREAM, 0));
  EXPECT_ERRNO(connect(c2.get(), b.get(), b.len), ENOENT);
  // The established connection does not care.
  ScopedFd conn(accept(srv.get(), nullptr, nullptr));
  ASSERT_SYS_OK(conn.get());
  ASSERT_EQ(write(c.get(), "z", 1), 1);
  char z;
  EXPECT_EQ(read(conn.get(), &z, 1), 1);
  // A socket node nobody is bound to (mknod) refuses connections.
  std::string node = dir.Child("node");
  ASSERT_SYS_OK(mknod(node.c_str(), S_IFSOCK | 0777, 0));
  Addr n = PathAddr(node);
  ScopedFd c3(socket(AF_UNIX, SOCK_STREAM, 0));
  EXPECT_ERRNO(connect(c3.get(), n.get(), n.len), ECONNREFUSED);
}

TEST(UnixSocket, BlockedConnectFailsWhenTheListenerCloses) {
  Addr a = AbstractAddr("closing-listener");
  ScopedFd srv = Listener(a, SOCK_STREAM, 0);
  ScopedFd first = Connected(a);  // fills the backlog
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    close(srv.get());
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    int r = connect(c, a.get(), a.len);  // sleeps: the backlog is full
    _exit(r == -1 && errno == ECONNREFUSED ? 0 : 1);
  }
  usleep(100000);
  srv.reset();
  EXPECT_EQ(WaitChild(pid), 0);
}

TEST(UnixSocket, BlockedDgramSendFailsWhenTheReceiverCloses) {
  Addr a = AbstractAddr("closing-dgram");
  ScopedFd srv(socket(AF_UNIX, SOCK_DGRAM, 0));
  ASSERT_SYS_OK(bind(srv.get(), a.get(), a.len));
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    close(srv.get());
    int c = socket(AF_UNIX, SOCK_DGRAM, 0);
    for (int i = 0; i < 1000; ++i) {  // the queue fills, then a send sleeps
      if (sendto(c, "q", 1, 0, a.get(), a.len) < 0) _exit(errno == ECONNREFUSED ? 0 : 1);
    }
    _exit(2);
  }
  usleep(100000);
  srv.reset();
  EXPECT_EQ(WaitChild(pid), 0);
}

}  // namespace
}  // namespace syscall_test
