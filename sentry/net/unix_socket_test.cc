// Unit tests of UnixSocket against an in-process kernel: the parts a syscall test sees
// only indirectly (send-buffer accounting, readiness bits, what a close does to queued
// connections and in-flight descriptors, the name registry).
#include "sentry/net/unix_socket.h"

#include <fcntl.h>
#include <poll.h>

#include <string>

#include "gtest/gtest.h"
#include "sentry/kernel/test_kernel.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry::net {
namespace {

std::string Sockaddr(const UnixAddress& a) { return a.ToSockaddr(); }

UnixAddress Path(const std::string& p) { return UnixAddress{UnixAddress::Kind::kPath, p}; }
UnixAddress Abstract(const std::string& n) { return UnixAddress{UnixAddress::Kind::kAbstract, n}; }

SysResult<size_t> Send(Task& t, UnixSocket& s, std::string data, int flags = MSG_DONTWAIT) {
  iovec v{data.data(), data.size()};
  SendArgs args;
  args.data = absl::MakeConstSpan(&v, 1);
  args.flags = flags | MSG_NOSIGNAL;
  return s.SendMsg(&t, args);
}

SysResult<std::string> Recv(Task& t, UnixSocket& s, size_t n, RecvResult* out = nullptr) {
  std::string buf(n, '\0');
  iovec v{buf.data(), buf.size()};
  RecvResult local;
  ASSIGN_OR_RETURN_ERRNO(
      size_t got, s.RecvMsg(&t, absl::MakeConstSpan(&v, 1), MSG_DONTWAIT, out ? out : &local));
  buf.resize(got);
  return buf;
}

class UnixSocketTest : public ::testing::Test {
 protected:
  TestKernel tk_;
  Task& task() { return tk_.task(); }
  std::shared_ptr<UnixNamespace> ns() { return tk_.kernel().unix_namespace(); }
};

TEST_F(UnixSocketTest, SendBufferIsChargedUntilRead) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto [a, b] = UnixSocket::NewPair(ns(), SOCK_STREAM, 0, Ucred{}, 0, 0);
  EXPECT_EQ(b->Readiness(POLLIN | POLLOUT), static_cast<EventMask>(POLLOUT));
  ASSERT_EQ(Send(task(), *a, "hello").value(), 5u);
  EXPECT_TRUE(b->Readiness(POLLIN) & POLLIN);
  // Partial reads return the bytes read; the rest stays charged.
  EXPECT_EQ(Recv(task(), *b, 2).value(), "he");
  EXPECT_EQ(Recv(task(), *b, 10).value(), "llo");
  EXPECT_EQ(b->Readiness(POLLIN), 0u);
  EXPECT_EQ(Recv(task(), *b, 10).error(), EAGAIN);
}

TEST_F(UnixSocketTest, StreamStopsWhenTheSendBufferIsFull) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto [a, b] = UnixSocket::NewPair(ns(), SOCK_STREAM, 0, Ucred{}, 0, 0);
  std::string big(1 << 20, 'x');
  auto n = Send(task(), *a, big);
  ASSERT_TRUE(n.ok());
  EXPECT_LE(n.value(), static_cast<size_t>(kDefaultSockBuf));
  EXPECT_GT(n.value(), 0u);
  EXPECT_EQ(Send(task(), *a, "more").error(), EAGAIN);
  EXPECT_EQ(a->Readiness(POLLOUT), 0u);
  ASSERT_TRUE(Recv(task(), *b, n.value()).ok());
  EXPECT_EQ(a->Readiness(POLLOUT), static_cast<EventMask>(POLLOUT));
}

TEST_F(UnixSocketTest, PeerCloseShutsDownAndResetsWithUnreadData) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto [a, b] = UnixSocket::NewPair(ns(), SOCK_STREAM, 0, Ucred{}, 0, 0);
  ASSERT_TRUE(Send(task(), *a, "unread").ok());
  b.reset();
  EventMask r = a->Readiness(POLLIN | POLLRDHUP);
  EXPECT_EQ(r, static_cast<EventMask>(POLLIN | POLLRDHUP | POLLHUP | POLLERR));
  EXPECT_EQ(Recv(task(), *a, 4).error(), ECONNRESET);
  EXPECT_EQ(Recv(task(), *a, 4).value(), "");
  EXPECT_EQ(Send(task(), *a, "x").error(), EPIPE);
}

TEST_F(UnixSocketTest, ClosingAListenerResetsQueuedClients) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto srv = UnixSocket::New(ns(), SOCK_STREAM, 0, 0, 0);
  ASSERT_TRUE(srv->Bind(task(), Sockaddr(Abstract("unit-listener"))).ok());
  ASSERT_TRUE(srv->Listen(task(), 4).ok());
  auto cli = UnixSocket::New(ns(), SOCK_STREAM, O_NONBLOCK, 0, 0);
  ASSERT_TRUE(cli->Connect(task(), Sockaddr(Abstract("unit-listener"))).ok());
  EXPECT_EQ(srv->Readiness(POLLIN), static_cast<EventMask>(POLLIN));
  srv.reset();
  EXPECT_EQ(Recv(task(), *cli, 1).error(), ECONNRESET);
  // The name went with the listener.
  auto again = UnixSocket::New(ns(), SOCK_STREAM, 0, 0, 0);
  EXPECT_TRUE(again->Bind(task(), Sockaddr(Abstract("unit-listener"))).ok());
}

TEST_F(UnixSocketTest, InFlightDescriptorsDieWithTheQueue) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto [a, b] = UnixSocket::NewPair(ns(), SOCK_DGRAM, 0, Ucred{}, 0, 0);
  auto [c, d] = UnixSocket::NewPair(ns(), SOCK_STREAM, 0, Ucred{}, 0, 0);
  std::weak_ptr<UnixSocket> watch_c = c;
  std::string one = "f";
  iovec v{one.data(), 1};
  SendArgs args;
  args.data = absl::MakeConstSpan(&v, 1);
  args.rights.push_back(c);
  args.flags = MSG_DONTWAIT;
  ASSERT_TRUE(a->SendMsg(&task(), args).ok());
  c.reset();
  EXPECT_FALSE(watch_c.expired());  // held by b's queue
  b.reset();                        // the queue goes, and with it the last reference
  EXPECT_TRUE(watch_c.expired());
  EXPECT_EQ(Recv(task(), *d, 1).value(), "");  // d saw its peer close
}

TEST_F(UnixSocketTest, PathBindMakesASocketNodeAndLookupFindsIt) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto srv = UnixSocket::New(ns(), SOCK_DGRAM, 0, 0, 0);
  ASSERT_TRUE(srv->Bind(task(), Sockaddr(Path("/s"))).ok());
  {
    auto found = LookupUnixAddress(task(), Path("/s"), SOCK_DGRAM);
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(found.value(), srv);
  }
  EXPECT_EQ(LookupUnixAddress(task(), Path("/s"), SOCK_STREAM).error(), EPROTOTYPE);
  auto other = UnixSocket::New(ns(), SOCK_DGRAM, 0, 0, 0);
  EXPECT_EQ(other->Bind(task(), Sockaddr(Path("/s"))).error(), EADDRINUSE);
  srv.reset();
  EXPECT_EQ(LookupUnixAddress(task(), Path("/s"), SOCK_DGRAM).error(), ECONNREFUSED);
  EXPECT_EQ(LookupUnixAddress(task(), Path("/missing"), SOCK_DGRAM).error(), ENOENT);
}

TEST(UnixAddressTest, ParseAndFormat) {
  auto p = ParseUnixSockaddr(Path("rel/x").ToSockaddr().data(), Path("rel/x").ToSockaddr().size());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->kind, UnixAddress::Kind::kPath);
  EXPECT_EQ(p->name, "rel/x");
  EXPECT_EQ(Path("rel/x").ToSockaddr().size(), kUnixFamilyLen + 6);
  std::string abs = Abstract(std::string("a\0b", 3)).ToSockaddr();
  EXPECT_EQ(abs.size(), kUnixFamilyLen + 4);
  auto a = ParseUnixSockaddr(abs.data(), abs.size());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->name, std::string("a\0b", 3));
  EXPECT_EQ(UnixAddress{}.ToSockaddr().size(), kUnixFamilyLen);
  EXPECT_EQ(ParseUnixSockaddr(abs.data(), kUnixFamilyLen).error(), EINVAL);
  std::string bad = abs;
  bad[0] = 2;  // AF_INET
  EXPECT_EQ(ParseUnixSockaddr(bad.data(), bad.size()).error(), EINVAL);
}

}  // namespace
}  // namespace usentry::sentry::net
