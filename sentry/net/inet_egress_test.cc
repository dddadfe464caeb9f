// Unit tests of the netstack's way out with fakes of Egress and DnsService: TCP through a
// "donated" host socket (one end of a host socketpair the test holds), its readiness
// through the kernel's HostPoller, shutdown, EOF, byte counts in Closed(), sockets closed
// while connecting; UDP flows over host datagram socketpairs; DNS datagrams and the
// source address of their answers.
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "sentry/fsimpl/host_file.h"
#include "sentry/kernel/test_kernel.h"
#include "sentry/net/inet_stack.h"
#include "sentry/net/inet_test_fakes.h"
#include "sentry/net/tcp_socket.h"
#include "sentry/net/udp_socket.h"

namespace usentry::sentry::net {
namespace {

const Endpoint kLocalEnd{*IpAddress::Parse("10.0.2.15"), 40001};

// A callback waiter: how the test sees what the HostPoller tells the socket.
class Flag : public Waiter {
 public:
  Flag() : Waiter(nullptr) {}
  void Notify(EventMask events) override { seen |= events; }
  EventMask seen = 0;
};

class EgressTest : public ::testing::Test {
 protected:
  EgressTest() : tk_(Options()) {
    auto egress = std::make_unique<FakeEgress>();
    auto dns = std::make_unique<FakeDns>();
    egress_ = egress.get();
    dns_ = dns.get();
    absl::MutexLock l(&tk_.kernel().mu);
    tk_.kernel().inet_stack()->Configure(std::move(egress), std::move(dns));
  }
  ~EgressTest() override { fsimpl::ShutdownHostFiles(tk_.kernel()); }
  static KernelOptions Options() {
    KernelOptions o;
    o.network.egress = true;
    return o;
  }
  Kernel& k() { return tk_.kernel(); }
  Task& task() { return tk_.task(); }
  std::shared_ptr<TcpSocket> Tcp(int family = AF_INET, int flags = O_NONBLOCK) {
    return TcpSocket::New(k().inet_stack(), family, flags, 0, 0);
  }
  std::shared_ptr<UdpSocket> Udp(int family = AF_INET) {
    return UdpSocket::New(k().inet_stack(), family, 0, 0, 0);
  }
  // Waits (lock released) until `f` saw one of `events`.
  bool WaitFor(Flag& f, EventMask events) {
    absl::Time until = absl::Now() + absl::Seconds(5);
    while (absl::Now() < until) {
      {
        absl::MutexLock l(&k().mu);
        if (f.seen & events) return true;
      }
      absl::SleepFor(absl::Milliseconds(2));
    }
    return false;
  }

  TestKernel tk_;
  FakeEgress* egress_;
  FakeDns* dns_;
};

// --- TCP ---

TEST_F(EgressTest, RefusedConnectReturnsTheErrnoAtOnce) {
  absl::MutexLock l(&k().mu);
  egress_->refuse = EACCES;
  auto s = Tcp(AF_INET, 0);
  EXPECT_EQ(s->Connect(task(), SockaddrOf(AF_INET, "93.184.216.34", 443)).error(), EACCES);
  EXPECT_TRUE(egress_->calls.empty());
  EXPECT_EQ(s->state(), kTcpClose);
}

TEST_F(EgressTest, TcpDataBothWaysThenShutdownEofAndCounts) {
  std::shared_ptr<TcpSocket> s;
  UniqueFd remote;
  Flag flag;
  std::unique_ptr<ScopedWait> wait;
  {
    absl::MutexLock l(&k().mu);
    s = Tcp();
    std::string dst = SockaddrOf(AF_INET, "93.184.216.34", 443);
    EXPECT_EQ(s->Connect(task(), dst).error(), EINPROGRESS);
    ASSERT_EQ(egress_->calls.size(), 1u);
    EXPECT_EQ(egress_->calls[0].transport, Transport::kTcp);
    EXPECT_EQ(egress_->calls[0].dst.ip.ToString(), "93.184.216.34");
    EXPECT_EQ(egress_->calls[0].dst.port, 443);
    EXPECT_EQ(s->Connect(task(), dst).error(), EALREADY);
    EXPECT_EQ(s->Readiness(POLLOUT), 0u);
    remote = egress_->Complete(0, SOCK_STREAM, 77, kLocalEnd);
    EXPECT_EQ(s->Readiness(POLLOUT), static_cast<EventMask>(POLLOUT));
    EXPECT_TRUE(s->Connect(task(), dst).ok());
    EXPECT_EQ(s->Connect(task(), dst).error(), EISCONN);
    EXPECT_EQ(s->PeerName().value(), dst);
    EXPECT_EQ(s->SockName(), SockaddrOf(AF_INET, "10.0.2.15", 40001));
    EXPECT_EQ(SendTo(task(), *s, "request").value(), 7u);
    EXPECT_EQ(RecvFrom(task(), *s, 16).error(), EAGAIN);
    EXPECT_EQ(s->Readiness(POLLIN), 0u);  // arms the poller
    wait = std::make_unique<ScopedWait>(*s->wait_queue(), flag, POLLIN);
  }
  char buf[16];
  ASSERT_EQ(read(remote.get(), buf, sizeof(buf)), 7);
  EXPECT_EQ(std::string(buf, 7), "request");
  ASSERT_EQ(write(remote.get(), "response!", 9), 9);
  ASSERT_TRUE(WaitFor(flag, POLLIN)) << "the poller never reported the host socket readable";
  {
    absl::MutexLock l(&k().mu);
    EXPECT_TRUE(s->Readiness(POLLIN) & POLLIN);
    EXPECT_EQ(RecvFrom(task(), *s, 16).value(), "response!");
    EXPECT_EQ(RecvFrom(task(), *s, 16).error(), EAGAIN);  // re-arms, as a reader would
    ASSERT_TRUE(s->Shutdown(SHUT_WR).ok());
  }
  EXPECT_EQ(read(remote.get(), buf, sizeof(buf)), 0);  // the half-close reached the host
  {
    absl::MutexLock l(&k().mu);
    flag.seen = 0;
  }
  remote.reset();
  ASSERT_TRUE(WaitFor(flag, POLLIN));
  {
    absl::MutexLock l(&k().mu);
    EXPECT_EQ(RecvFrom(task(), *s, 16).value(), "");  // EOF
    EXPECT_TRUE(s->Readiness(POLLIN | POLLRDHUP) & POLLRDHUP);
    wait.reset();
    s.reset();
    ASSERT_EQ(egress_->closed.size(), 1u);
    EXPECT_EQ(egress_->closed[0].id, 77u);
    EXPECT_EQ(egress_->closed[0].bytes_out, 7u);
    EXPECT_EQ(egress_->closed[0].bytes_in, 9u);
    EXPECT_EQ(egress_->closed[0].dst.port, 443);
  }
}

TEST_F(EgressTest, FailedDialIsReportedThroughSoError) {
  absl::MutexLock l(&k().mu);
  auto s = Tcp();
  EXPECT_EQ(s->Connect(task(), SockaddrOf(AF_INET, "93.184.216.34", 81)).error(), EINPROGRESS);
  egress_->calls[0].done(Errno{ECONNREFUSED});
  EXPECT_TRUE(s->Readiness(POLLOUT) & POLLERR);
  auto err = s->GetOption(task(), SOL_SOCKET, SO_ERROR);
  ASSERT_TRUE(err.ok());
  int e;
  memcpy(&e, err->data(), sizeof(e));
  EXPECT_EQ(e, ECONNREFUSED);
  EXPECT_TRUE(egress_->closed.empty());  // no connection was ever made
}

TEST_F(EgressTest, SocketClosedWhileConnectingClosesTheDonatedSocket) {
  absl::MutexLock l(&k().mu);
  auto s = Tcp();
  EXPECT_EQ(s->Connect(task(), SockaddrOf(AF_INET, "93.184.216.34", 80)).error(), EINPROGRESS);
  s.reset();
  UniqueFd remote = egress_->Complete(0, SOCK_STREAM, 5, kLocalEnd);
  char c;
  EXPECT_EQ(read(remote.get(), &c, 1), 0);  // the sentry closed its end
  ASSERT_EQ(egress_->closed.size(), 1u);
  EXPECT_EQ(egress_->closed[0].id, 5u);
  EXPECT_EQ(egress_->closed[0].bytes_in + egress_->closed[0].bytes_out, 0u);
}

TEST_F(EgressTest, BlockingConnectWaitsForTheDial) {
  UniqueFd remote;
  std::thread netgate([&] {
    while (true) {
      absl::SleepFor(absl::Milliseconds(5));
      absl::MutexLock l(&k().mu);
      if (egress_->calls.empty()) continue;
      remote = egress_->Complete(0, SOCK_STREAM, 9, kLocalEnd);
      return;
    }
  });
  {
    absl::MutexLock l(&k().mu);
    auto s = Tcp(AF_INET, 0);
    EXPECT_TRUE(s->Connect(task(), SockaddrOf(AF_INET, "93.184.216.34", 22)).ok());
    EXPECT_EQ(s->state(), kTcpEstablished);
  }
  netgate.join();
}

TEST_F(EgressTest, Ipv6SocketNamesAMappedDestination) {
  absl::MutexLock l(&k().mu);
  auto s = Tcp(AF_INET6);
  std::string dst = SockaddrOf(AF_INET6, "::ffff:93.184.216.34", 443);
  EXPECT_EQ(s->Connect(task(), dst).error(), EINPROGRESS);
  EXPECT_EQ(egress_->calls[0].dst.ip.ToString(), "::ffff:93.184.216.34");
  UniqueFd remote = egress_->Complete(0, SOCK_STREAM, 1, kLocalEnd);
  EXPECT_EQ(s->PeerName().value(), dst);
  EXPECT_EQ(s->SockName(), SockaddrOf(AF_INET6, "::ffff:10.0.2.15", 40001));
}

TEST_F(EgressTest, NodelayIsKeptWhenTheHostSocketRefusesIt) {
  absl::MutexLock l(&k().mu);
  auto s = Tcp();
  EXPECT_EQ(s->Connect(task(), SockaddrOf(AF_INET, "93.184.216.34", 443)).error(), EINPROGRESS);
  UniqueFd remote = egress_->Complete(0, SOCK_STREAM, 1, kLocalEnd);
  int one = 1;
  std::string v(reinterpret_cast<char*>(&one), sizeof(one));
  ASSERT_TRUE(s->SetOption(task(), IPPROTO_TCP, TCP_NODELAY, v).ok());
  EXPECT_EQ(s->GetOption(task(), IPPROTO_TCP, TCP_NODELAY).value(), v);
}

// --- UDP ---

TEST_F(EgressTest, UdpDatagramsWaitForTheFlowThenFlow) {
  absl::MutexLock l(&k().mu);
  auto u = Udp();
  std::string dst = SockaddrOf(AF_INET, "198.51.100.7", 4433);
  EXPECT_EQ(SendTo(task(), *u, "first", dst).value(), 5u);
  EXPECT_EQ(SendTo(task(), *u, "second", dst).value(), 6u);
  ASSERT_EQ(egress_->calls.size(), 1u);  // one Connect per destination
  EXPECT_EQ(egress_->calls[0].transport, Transport::kUdp);
  UniqueFd remote = egress_->Complete(0, SOCK_DGRAM, 31, kLocalEnd);
  char buf[16];
  EXPECT_EQ(recv(remote.get(), buf, sizeof(buf), MSG_DONTWAIT), 5);
  EXPECT_EQ(recv(remote.get(), buf, sizeof(buf), MSG_DONTWAIT), 6);
  EXPECT_EQ(SendTo(task(), *u, "third", dst).value(), 5u);
  EXPECT_EQ(recv(remote.get(), buf, sizeof(buf), MSG_DONTWAIT), 5);
  EXPECT_EQ(egress_->calls.size(), 1u);
  ASSERT_EQ(send(remote.get(), "reply", 5, 0), 5);
  RecvResult out;
  EXPECT_EQ(RecvFrom(task(), *u, 16, &out).value(), "reply");
  EXPECT_EQ(out.from, dst);
  u.reset();
  ASSERT_EQ(egress_->closed.size(), 1u);
  EXPECT_EQ(egress_->closed[0].id, 31u);
  EXPECT_EQ(egress_->closed[0].bytes_out, 16u);
  EXPECT_EQ(egress_->closed[0].bytes_in, 5u);
}

TEST_F(EgressTest, UdpRefusalIsTheSendtoErrno) {
  absl::MutexLock l(&k().mu);
  egress_->refuse = EACCES;
  auto u = Udp();
  EXPECT_EQ(SendTo(task(), *u, "x", SockaddrOf(AF_INET, "198.51.100.7", 9)).error(), EACCES);
}

TEST_F(EgressTest, UdpFlowsPerSocketAreBounded) {
  absl::MutexLock l(&k().mu);
  auto u = Udp();
  for (size_t i = 0; i < kMaxEgressFlows; ++i) {
    ASSERT_TRUE(SendTo(task(), *u, "x", SockaddrOf(AF_INET, "198.51.100.7", 1000 + i)).ok());
  }
  EXPECT_EQ(SendTo(task(), *u, "x", SockaddrOf(AF_INET, "198.51.100.7", 999)).error(), ENOBUFS);
}

TEST_F(EgressTest, UdpFlowReadinessComesFromThePoller) {
  std::shared_ptr<UdpSocket> u;
  UniqueFd remote;
  Flag flag;
  std::unique_ptr<ScopedWait> wait;
  {
    absl::MutexLock l(&k().mu);
    u = Udp(AF_INET6);
    ASSERT_TRUE(SendTo(task(), *u, "q", SockaddrOf(AF_INET6, "2001:db8::5", 7)).ok());
    remote = egress_->Complete(0, SOCK_DGRAM, 2, kLocalEnd);
    EXPECT_EQ(u->Readiness(POLLIN), 0u);
    wait = std::make_unique<ScopedWait>(*u->wait_queue(), flag, POLLIN);
  }
  ASSERT_EQ(send(remote.get(), "a", 1, 0), 1);
  ASSERT_TRUE(WaitFor(flag, POLLIN));
  absl::MutexLock l(&k().mu);
  RecvResult out;
  EXPECT_EQ(RecvFrom(task(), *u, 4, &out).value(), "a");
  EXPECT_EQ(out.from, SockaddrOf(AF_INET6, "2001:db8::5", 7));
  wait.reset();
  u.reset();  // under the kernel lock, as every release of a socket
}

// --- DNS ---

TEST_F(EgressTest, DnsAnswerComesFromTheResolverAddress) {
  absl::MutexLock l(&k().mu);
  auto u = Udp();
  std::string resolver = SockaddrOf(AF_INET, "127.0.0.11", 53);
  EXPECT_EQ(SendTo(task(), *u, "q1", resolver).value(), 2u);
  ASSERT_EQ(dns_->queries.size(), 1u);
  EXPECT_EQ(dns_->queries[0], "q1");
  RecvResult out;
  EXPECT_EQ(RecvFrom(task(), *u, 64, &out).value(), "answer:q1");
  EXPECT_EQ(out.from, resolver);
  EXPECT_TRUE(egress_->calls.empty());
}

TEST_F(EgressTest, DnsToAnOutsideServerIsAnsweredByTheSandbox) {
  absl::MutexLock l(&k().mu);
  auto u = Udp();
  std::string server = SockaddrOf(AF_INET, "8.8.8.8", 53);
  ASSERT_TRUE(u->Connect(task(), server).ok());  // glibc's resolver connects first
  EXPECT_EQ(SendTo(task(), *u, "q2").value(), 2u);
  RecvResult out;
  EXPECT_EQ(RecvFrom(task(), *u, 64, &out).value(), "answer:q2");
  EXPECT_EQ(out.from, server);
  EXPECT_TRUE(egress_->calls.empty());
}

TEST_F(EgressTest, Ipv6SocketSeesTheAnswerFromAMappedAddress) {
  absl::MutexLock l(&k().mu);
  dns_->defer = true;
  auto u = Udp(AF_INET6);
  std::string resolver = SockaddrOf(AF_INET6, "::ffff:127.0.0.11", 53);
  EXPECT_EQ(SendTo(task(), *u, "q3", resolver).value(), 2u);
  EXPECT_EQ(RecvFrom(task(), *u, 64).error(), EAGAIN);
  ASSERT_EQ(dns_->pending.size(), 1u);
  dns_->pending[0]("late answer");
  RecvResult out;
  EXPECT_EQ(RecvFrom(task(), *u, 64, &out).value(), "late answer");
  EXPECT_EQ(out.from, resolver);
  EXPECT_EQ(out.from.size(), kSockaddrIn6Len);
}

TEST_F(EgressTest, AnswerAfterTheSocketClosedIsDropped) {
  absl::MutexLock l(&k().mu);
  dns_->defer = true;
  auto u = Udp();
  ASSERT_TRUE(SendTo(task(), *u, "q4", SockaddrOf(AF_INET, "127.0.0.11", 53)).ok());
  u.reset();
  dns_->pending[0]("nobody listens");  // must not crash
}

}  // namespace
}  // namespace usentry::sentry::net
