// Unit tests of the inet stack without a way out: address parsing, the port table's
// conflict rules, bind(2) rules against an in-process kernel (eth0's address, privileged
// ports), routing without Egress (ENETUNREACH, dropped DNS), the listen backlog holding
// connects back, and the Notify discipline edge-triggered epoll relies on.
#include "sentry/net/inet_stack.h"

#include <netinet/in.h>
#include <poll.h>

#include <set>

#include "gtest/gtest.h"
#include "sentry/kernel/test_kernel.h"
#include "sentry/net/inet_test_fakes.h"
#include "sentry/net/port_table.h"
#include "sentry/net/tcp_socket.h"
#include "sentry/net/udp_socket.h"

namespace usentry::sentry::net {
namespace {

// --- addresses ---

TEST(InetAddressTest, BindChecksLengthAndFamily) {
  std::string v4 = SockaddrOf(AF_INET, "127.0.0.1", 80);
  ASSERT_EQ(v4.size(), kSockaddrInLen);
  EXPECT_EQ(ParseBindAddress(AF_INET, v4.substr(0, 15)).error(), EINVAL);
  auto a = ParseBindAddress(AF_INET, v4);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->ip.ToString(), "127.0.0.1");
  EXPECT_EQ(a->port, 80);
  std::string v6 = SockaddrOf(AF_INET6, "::1", 8080);
  ASSERT_EQ(v6.size(), kSockaddrIn6Len);
  EXPECT_EQ(ParseBindAddress(AF_INET, v6).error(), EAFNOSUPPORT);
  EXPECT_EQ(ParseBindAddress(AF_INET6, v4).error(), EINVAL);  // 16 < 24 bytes
  EXPECT_TRUE(ParseBindAddress(AF_INET6, v6.substr(0, kSockaddrIn6MinLen)).ok());
  // AF_UNSPEC is accepted with INADDR_ANY only.
  std::string unspec_any = SockaddrOf(AF_INET, "0.0.0.0", 5);
  unspec_any[0] = AF_UNSPEC;
  EXPECT_TRUE(ParseBindAddress(AF_INET, unspec_any).ok());
  std::string unspec_lo = v4;
  unspec_lo[0] = AF_UNSPEC;
  EXPECT_EQ(ParseBindAddress(AF_INET, unspec_lo).error(), EAFNOSUPPORT);
}

TEST(InetAddressTest, ScopeIdCountsOnlyInAFullSockaddr) {
  std::string v6 = SockaddrOf(AF_INET6, "fe80::1", 1);
  uint32_t scope = 7;
  memcpy(v6.data() + 24, &scope, sizeof(scope));
  EXPECT_EQ(ParseBindAddress(AF_INET6, v6)->scope_id, 7u);
  EXPECT_EQ(ParseBindAddress(AF_INET6, v6.substr(0, 24))->scope_id, 0u);
}

TEST(InetAddressTest, FormatMapsIpv4ForIpv6Sockets) {
  InetAddr a{*IpAddress::Parse("10.1.2.3"), 53};
  std::string s = FormatInetSockaddr(AF_INET6, a);
  ASSERT_EQ(s.size(), kSockaddrIn6Len);
  auto back = ParseBindAddress(AF_INET6, s);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->ip.ToString(), "::ffff:10.1.2.3");
  EXPECT_EQ(FormatInetSockaddr(AF_INET, InetAddr{back->ip, 53}).size(), kSockaddrInLen);
}

TEST(InetAddressTest, DatagramDestinations) {
  std::string v4 = SockaddrOf(AF_INET, "127.0.0.1", 9);
  auto mapped = ParseDgramSendAddress(AF_INET6, false, v4);
  ASSERT_TRUE(mapped.ok());
  EXPECT_EQ((*mapped)->ip.ToString(), "::ffff:127.0.0.1");
  EXPECT_EQ(ParseDgramSendAddress(AF_INET6, true, v4).error(), ENETUNREACH);
  EXPECT_EQ(ParseDgramSendAddress(AF_INET, false, SockaddrOf(AF_INET, "127.0.0.1", 0)).error(),
            EINVAL);
  std::string unspec6 = SockaddrOf(AF_INET6, "::1", 9);
  unspec6[0] = AF_UNSPEC;
  auto none = ParseDgramSendAddress(AF_INET6, false, unspec6);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());  // the connected peer
  EXPECT_EQ(ParseDgramConnectAddress(AF_INET6, true, v4).error(), EAFNOSUPPORT);
}

// --- port table ---

BindingInfo V4(const char* ip) {
  BindingInfo b;
  b.v4 = *IpAddress::Parse(ip);
  return b;
}

BindingInfo V6(const char* ip, bool v6only = false) {
  BindingInfo b;
  b.v6_socket = true;
  b.v6 = *IpAddress::Parse(ip);
  IpAddress u = b.v6.Unmapped();
  b.v4 = u.is_v4() ? u : b.v6.IsUnspecified() ? IpAddress() : IpAddress::V4(0x7f000006);
  b.v6only = v6only;
  return b;
}

TEST(PortTableTest, WildcardAndSpecificAddresses) {
  PortTable t(/*tcp=*/true);
  EXPECT_TRUE(t.Conflict(V4("0.0.0.0"), V4("127.0.0.1")));
  EXPECT_TRUE(t.Conflict(V4("127.0.0.1"), V4("0.0.0.0")));
  EXPECT_FALSE(t.Conflict(V4("127.0.0.1"), V4("127.0.0.2")));
  EXPECT_TRUE(t.Conflict(V6("::"), V6("::1")));
  EXPECT_FALSE(t.Conflict(V6("::1"), V4("127.0.0.1")));
}

TEST(PortTableTest, DualStackAndV6only) {
  PortTable t(/*tcp=*/false);
  EXPECT_TRUE(t.Conflict(V4("127.0.0.1"), V6("::")));
  EXPECT_TRUE(t.Conflict(V6("::"), V4("127.0.0.1")));
  EXPECT_FALSE(t.Conflict(V4("127.0.0.1"), V6("::", /*v6only=*/true)));
  EXPECT_FALSE(t.Conflict(V6("::", true), V4("127.0.0.1")));
  // Two IPv6 wildcards conflict whatever V6ONLY says.
  EXPECT_TRUE(t.Conflict(V6("::", true), V6("::")));
  EXPECT_TRUE(t.Conflict(V6("::ffff:127.0.0.1"), V4("0.0.0.0")));
  // Linux's placeholder: 0.0.0.0 after [::1] conflicts, [::1] after 0.0.0.0 does not.
  EXPECT_TRUE(t.Conflict(V4("0.0.0.0"), V6("::1")));
  EXPECT_FALSE(t.Conflict(V6("::1"), V4("0.0.0.0")));
}

TEST(PortTableTest, ReuseFlags) {
  PortTable tcp(/*tcp=*/true), udp(/*tcp=*/false);
  BindingInfo a = V4("127.0.0.1"), b = V4("127.0.0.1");
  a.reuseaddr = b.reuseaddr = true;
  EXPECT_FALSE(tcp.Conflict(a, b));
  b.listening = true;
  EXPECT_TRUE(tcp.Conflict(a, b));  // never with a listener
  EXPECT_FALSE(udp.Conflict(a, b));
  BindingInfo c = V4("127.0.0.1"), d = V4("127.0.0.1");
  c.reuseport = d.reuseport = true;
  d.listening = true;
  EXPECT_FALSE(tcp.Conflict(c, d));
  d.uid = 1000;  // SO_REUSEPORT shares only within one user
  EXPECT_TRUE(tcp.Conflict(c, d));
  EXPECT_TRUE(udp.Conflict(c, d));
}

class FakeUser : public PortUser {
 public:
  BindingInfo binding() const override { return b; }
  BindingInfo b = V4("127.0.0.1");
};

TEST(PortTableTest, EphemeralPortsAreFreeAndInRange) {
  PortTable t(/*tcp=*/true);
  std::vector<FakeUser> users(200);
  std::set<uint16_t> ports;
  for (FakeUser& u : users) {
    auto p = t.Bind(&u, u.b, 0);
    ASSERT_TRUE(p.ok());
    EXPECT_GE(p.value(), kEphemeralLow);
    EXPECT_LE(p.value(), kEphemeralHigh);
    ports.insert(p.value());
  }
  EXPECT_EQ(ports.size(), users.size());
  FakeUser late;
  EXPECT_EQ(t.Bind(&late, late.b, *ports.begin()).error(), EADDRINUSE);
  t.Unbind(&users[0], *ports.begin());
  t.Unbind(&users[0], *ports.begin());  // idempotent
}

// --- against a kernel ---

class InetStackTest : public ::testing::Test {
 protected:
  explicit InetStackTest(bool egress = false) : tk_(Options(egress)) {}
  static KernelOptions Options(bool egress) {
    KernelOptions o;
    o.network.egress = egress;
    return o;
  }
  Task& task() { return tk_.task(); }
  std::shared_ptr<InetStack> stack() { return tk_.kernel().inet_stack(); }
  std::shared_ptr<TcpSocket> Tcp(int family = AF_INET, int flags = 0) {
    return TcpSocket::New(stack(), family, flags, 0, 0);
  }
  std::shared_ptr<UdpSocket> Udp(int family = AF_INET) {
    return UdpSocket::New(stack(), family, 0, 0, 0);
  }
  TestKernel tk_;
};

class InetStackEgressTest : public InetStackTest {
 protected:
  InetStackEgressTest() : InetStackTest(/*egress=*/true) {}
};

TEST_F(InetStackTest, SandboxAddressIsLocalOnlyWithEgress) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto s = Udp();
  EXPECT_EQ(s->Bind(task(), SockaddrOf(AF_INET, "10.0.2.15", 0)).error(), EADDRNOTAVAIL);
  EXPECT_TRUE(s->Bind(task(), SockaddrOf(AF_INET, "127.0.0.5", 0)).ok());
}

TEST_F(InetStackEgressTest, SandboxAddressIsLocalOnlyWithEgress) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto srv = Tcp();
  ASSERT_TRUE(srv->Bind(task(), SockaddrOf(AF_INET, "10.0.2.15", 0)).ok());
  ASSERT_TRUE(srv->Listen(task(), 1).ok());
  auto cli = Tcp();
  const InetAddr where = srv->local();
  ASSERT_TRUE(cli->Connect(task(), FormatInetSockaddr(AF_INET, where)).ok());
  // The source of a connection to eth0's address is eth0's address.
  EXPECT_EQ(cli->local().ip.ToString(), "10.0.2.15");
}

TEST_F(InetStackTest, PrivilegedPortsNeedEuidZero) {
  absl::MutexLock l(&tk_.kernel().mu);
  task().creds().euid = 1000;
  auto s = Tcp(AF_INET6);
  EXPECT_EQ(s->Bind(task(), SockaddrOf(AF_INET6, "::1", 80)).error(), EACCES);
  task().creds().euid = 0;
  EXPECT_TRUE(s->Bind(task(), SockaddrOf(AF_INET6, "::1", 80)).ok());
  EXPECT_EQ(s->local().port, 80);
}

TEST_F(InetStackTest, WithoutEgressOutsideIsUnreachable) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto t = Tcp();
  EXPECT_EQ(t->Connect(task(), SockaddrOf(AF_INET, "93.184.216.34", 80)).error(), ENETUNREACH);
  auto u = Udp();
  EXPECT_EQ(SendTo(task(), *u, "x", SockaddrOf(AF_INET, "93.184.216.34", 123)).error(),
            ENETUNREACH);
  EXPECT_EQ(u->Connect(task(), SockaddrOf(AF_INET, "93.184.216.34", 123)).error(), ENETUNREACH);
}

TEST_F(InetStackTest, WithoutDnsServiceQueriesAreLost) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto u = Udp();
  std::string resolver = SockaddrOf(AF_INET, "127.0.0.11", 53);
  EXPECT_EQ(SendTo(task(), *u, "query", resolver).value(), 5u);
  EXPECT_EQ(RecvFrom(task(), *u, 64).error(), EAGAIN);
  // glibc connects its resolver socket first: allowed to any port 53.
  EXPECT_TRUE(u->Connect(task(), SockaddrOf(AF_INET, "8.8.8.8", 53)).ok());
}

TEST_F(InetStackTest, FullBacklogHoldsConnectsBackUntilAccept) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto srv = Tcp();
  ASSERT_TRUE(srv->Bind(task(), SockaddrOf(AF_INET, "127.0.0.1", 0)).ok());
  ASSERT_TRUE(srv->Listen(task(), 0).ok());  // room for one connection (backlog + 1)
  std::string to = FormatInetSockaddr(AF_INET, srv->local());
  auto a = Tcp(AF_INET, O_NONBLOCK), b = Tcp(AF_INET, O_NONBLOCK);
  EXPECT_EQ(a->Connect(task(), to).error(), EINPROGRESS);
  EXPECT_EQ(b->Connect(task(), to).error(), EINPROGRESS);
  EXPECT_EQ(a->state(), kTcpEstablished);
  EXPECT_EQ(b->state(), kTcpSynSent);
  EXPECT_EQ(b->Connect(task(), to).error(), EALREADY);
  EXPECT_EQ(b->Readiness(POLLOUT), 0u);
  std::string peer;
  ASSERT_TRUE(srv->Accept(task(), &peer).ok());
  EXPECT_EQ(b->state(), kTcpEstablished);  // admitted when accept made room
  EXPECT_EQ(b->Readiness(POLLOUT), static_cast<EventMask>(POLLOUT));
  EXPECT_TRUE(b->Connect(task(), to).ok());
  EXPECT_EQ(b->Connect(task(), to).error(), EISCONN);
}

TEST_F(InetStackTest, ClosingAListenerRefusesHeldBackConnects) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto srv = Tcp();
  ASSERT_TRUE(srv->Listen(task(), 0).ok());
  std::string to = SockaddrOf(AF_INET, "127.0.0.1", srv->local().port);
  auto a = Tcp(AF_INET, O_NONBLOCK), b = Tcp(AF_INET, O_NONBLOCK);
  EXPECT_EQ(a->Connect(task(), to).error(), EINPROGRESS);
  EXPECT_EQ(b->Connect(task(), to).error(), EINPROGRESS);
  srv.reset();
  EXPECT_EQ(b->Connect(task(), to).error(), ECONNREFUSED);
  EXPECT_EQ(RecvFrom(task(), *a, 4).error(), ECONNRESET);  // a was queued, never accepted
}

// A callback waiter that counts the events it was told of (epoll's view).
class CountingWaiter : public Waiter {
 public:
  CountingWaiter() : Waiter(nullptr) {}
  void Notify(EventMask events) override {
    ++count;
    seen |= events;
  }
  int count = 0;
  EventMask seen = 0;
};

TEST_F(InetStackTest, EveryArrivalNotifiesTheReceiver) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto srv = Tcp();
  ASSERT_TRUE(srv->Listen(task(), 4).ok());
  CountingWaiter on_listener;
  ScopedWait lw(*srv->wait_queue(), on_listener, POLLIN);
  auto cli = Tcp();
  ASSERT_TRUE(cli->Connect(task(), SockaddrOf(AF_INET, "127.0.0.1", srv->local().port)).ok());
  EXPECT_EQ(on_listener.count, 1);
  std::string peer;
  auto accepted = srv->Accept(task(), &peer);
  ASSERT_TRUE(accepted.ok());
  CountingWaiter on_server;
  ScopedWait sw(*accepted.value()->wait_queue(), on_server, POLLIN | POLLRDHUP);
  ASSERT_TRUE(SendTo(task(), *cli, "a").ok());
  ASSERT_TRUE(SendTo(task(), *cli, "b").ok());
  EXPECT_EQ(on_server.count, 2);  // also the second write to an already readable socket
  ASSERT_TRUE(cli->Shutdown(SHUT_WR).ok());
  EXPECT_EQ(on_server.count, 3);
  EXPECT_TRUE(on_server.seen & POLLRDHUP);
}

TEST_F(InetStackTest, ReaderFreeingRoomNotifiesTheWriter) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto srv = Tcp();
  ASSERT_TRUE(srv->Listen(task(), 4).ok());
  auto cli = Tcp();
  ASSERT_TRUE(cli->Connect(task(), SockaddrOf(AF_INET, "127.0.0.1", srv->local().port)).ok());
  std::string peer;
  auto server = srv->Accept(task(), &peer).value();
  std::string big(1 << 20, 'x');
  auto n = SendTo(task(), *cli, big);
  ASSERT_TRUE(n.ok());
  EXPECT_LT(n.value(), big.size());  // bounded by the receiver's SO_RCVBUF + our SO_SNDBUF
  EXPECT_EQ(cli->Readiness(POLLOUT), 0u);
  CountingWaiter on_client;
  ScopedWait cw(*cli->wait_queue(), on_client, POLLOUT);
  ASSERT_TRUE(RecvFrom(task(), *server, n.value()).ok());
  EXPECT_GE(on_client.count, 1);
  EXPECT_EQ(cli->Readiness(POLLOUT), static_cast<EventMask>(POLLOUT));
}

TEST_F(InetStackTest, UdpDeliveryPrefersTheMostSpecificSocket) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto wild = Udp(AF_INET6), exact = Udp();
  int one = 1;
  std::string on(reinterpret_cast<char*>(&one), sizeof(one));
  ASSERT_TRUE(wild->SetOption(task(), SOL_SOCKET, SO_REUSEADDR, on).ok());
  ASSERT_TRUE(exact->SetOption(task(), SOL_SOCKET, SO_REUSEADDR, on).ok());
  ASSERT_TRUE(wild->Bind(task(), SockaddrOf(AF_INET6, "::", 0)).ok());
  ASSERT_TRUE(exact->Bind(task(), SockaddrOf(AF_INET, "127.0.0.1", wild->local().port)).ok());
  auto sender = Udp();
  ASSERT_TRUE(
      SendTo(task(), *sender, "v4", SockaddrOf(AF_INET, "127.0.0.1", wild->local().port)).ok());
  EXPECT_EQ(RecvFrom(task(), *exact, 8).value(), "v4");
  EXPECT_EQ(RecvFrom(task(), *wild, 8).error(), EAGAIN);
}

}  // namespace
}  // namespace usentry::sentry::net
