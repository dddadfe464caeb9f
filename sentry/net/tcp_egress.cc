// TcpSocket through Egress: a connect to an address outside the sandbox asks Egress, waits
// for netgate's connected host socket, then moves the app's bytes with non-blocking host
// sendmsg/recvmsg on it. Readiness comes from the kernel's HostPoller (armed on EAGAIN).
// The sentry never connects, binds or listens on a host socket itself.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>

#include "sentry/fsimpl/host_poller.h"
#include "sentry/kernel/task.h"
#include "sentry/net/tcp_socket.h"

namespace usentry::sentry::net {
namespace {

// Distinguishes connect attempts of one socket (a disconnect may start another before
// the first one's `done` arrives).
std::atomic<uint64_t> next_egress_serial{1};

}  // namespace

SysStatus TcpSocket::ConnectEgress(Task& task, const InetAddr& dst) {
  Egress* egress = stack_->egress();
  if (egress == nullptr) return Errno{ENETUNREACH};  // no way out of this sandbox
  const Endpoint ep{dst.ip, dst.port};
  egress_ = std::make_unique<TcpEgressLink>();
  egress_->dst = ep;
  egress_->serial = next_egress_serial++;
  peer_addr_ = InetAddr{dst.ip, dst.port};
  conn_ = Conn::kConnecting;
  state_ = kTcpSynSent;
  std::weak_ptr<TcpSocket> weak = self();
  InetStack* stack = stack_.get();
  const uint64_t serial = egress_->serial;
  SysStatus st = egress->Connect(
      task, Transport::kTcp, ep, [weak, stack, ep, serial](SysResult<EgressConnection> r) {
        auto s = weak.lock();
        if (s && s->egress_ && s->egress_->serial == serial && s->egress_->pending) {
          s->EgressDone(std::move(r));
          return;
        }
        // The socket let go before the dial finished: the connection is nobody's.
        if (r.ok() && stack->egress() != nullptr) {
          uint64_t id = r.value().id;
          r.value().fd.reset();
          stack->egress()->Closed(id, Transport::kTcp, ep, 0, 0);
        }
      });
  if (!st.ok()) {
    egress_.reset();
    conn_ = Conn::kUnconnected;
    state_ = kTcpClose;
    return st;
  }
  wq_.Notify(kAllEvents);
  if (state_ != kTcpSynSent) return nonblocking() ? Errno{EINPROGRESS} : ConnectOutcome();
  return FinishConnect(task);
}

void TcpSocket::EgressDone(SysResult<EgressConnection> r) {
  if (!r.ok()) {
    egress_.reset();
    ConnectFailed(r.error());
    return;
  }
  egress_->conn = std::move(r).value();
  egress_->pending = false;
  egress_->poller = stack_->poller();
  if (egress_->poller) {
    egress_->poller->Subscribe(egress_->conn.fd.get(), this,
                               [this](EventMask ev) { wq_.Notify(ev); });
  }
  state_ = kTcpEstablished;
  PassOptionsToHost();
  wq_.Notify(kAllEvents);
}

std::string TcpSocket::SockName() {
  if (!egress_ready()) return InetSocket::SockName();
  const Endpoint& l = egress_->conn.local;
  return FormatInetSockaddr(family_, InetAddr{l.ip, l.port});
}

void TcpSocket::ReleaseEgress() {
  if (!egress_) return;
  std::unique_ptr<TcpEgressLink> link = std::move(egress_);
  // Still dialing: `done` will find the link gone, close what it gets and tell Egress.
  if (link->pending) return;
  if (link->poller) link->poller->Unsubscribe(link->conn.fd.get(), this);
  const uint64_t id = link->conn.id;
  link->conn.fd.reset();
  if (Egress* e = stack_->egress()) {
    e->Closed(id, Transport::kTcp, link->dst, link->bytes_in, link->bytes_out);
  }
}

bool TcpSocket::ArmEgress(EventMask events) {
  if (!egress_->poller) return false;
  return egress_->poller->Arm(egress_->conn.fd.get(), events & (POLLIN | POLLOUT)).ok();
}

void TcpSocket::PassOptionsToHost() {
  if (!egress_ready()) return;
  // Only the options that change what the real connection does on the wire. The host
  // socket may refuse them (netgate's choice of socket, or a test's AF_UNIX pair): the
  // app keeps the emulated values either way.
  const int fd = egress_->conn.fd.get();
  int v = tcp_.nodelay;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v));
  v = flag_option(SO_KEEPALIVE);
  (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &tcp_.keepidle, sizeof(int));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &tcp_.keepintvl, sizeof(int));
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &tcp_.keepcnt, sizeof(int));
}

EventMask TcpSocket::EgressReadiness(EventMask mask) {
  pollfd p{egress_->conn.fd.get(), POLLIN | POLLOUT | POLLRDHUP, 0};
  if (poll(&p, 1, 0) < 0) p.revents = 0;
  EventMask r = 0;
  if (p.revents & POLLIN) r |= kReadableEvents;
  if (p.revents & POLLOUT) r |= kWritableEvents;
  if (p.revents & POLLRDHUP) r |= kReadableEvents | POLLRDHUP;
  if (p.revents & POLLERR) r |= POLLERR;
  if (p.revents & POLLHUP) r |= POLLHUP;
  if (shutdown_ & kShutRd) r |= kReadableEvents | POLLRDHUP;
  if (shutdown_ & kShutWr) r |= kWritableEvents;
  if (shutdown_ == kShutBoth) r |= POLLHUP;
  // Arm for what is missing, so an edge-triggered watcher hears of it later.
  EventMask missing = mask & (POLLIN | POLLOUT) & ~r;
  if (missing != 0 && !ArmEgress(missing)) {
    r |= missing;  // no poller: never leave a waiter without a wake-up
  }
  return r & (mask | POLLERR | POLLHUP);
}

SysStatus TcpSocket::SendEgressAttempt(const SendArgs& args, size_t total, size_t* sent) {
  const int fd = egress_->conn.fd.get();
  while (*sent < total) {
    std::vector<iovec> iov = SpansFrom(args.data, *sent);
    msghdr m{};
    m.msg_iov = iov.data();
    m.msg_iovlen = iov.size();
    ssize_t n = sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL | (args.flags & MSG_MORE));
    if (n >= 0) {
      *sent += n;
      egress_->bytes_out += n;
      continue;
    }
    int e = errno;
    if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR) {
      ArmEgress(POLLOUT);  // without a poller, readiness says always ready instead
      return Errno{EAGAIN};
    }
    if (e == EPIPE || e == ECONNRESET) {
      shutdown_ = kShutBoth;
      state_ = kTcpClose;
    }
    return Errno{e};
  }
  return SysOk();
}

SysStatus TcpSocket::RecvEgressAttempt(absl::Span<const iovec> dst, int flags, size_t total,
                                       size_t target, size_t* copied) {
  if (total == 0) return SysOk();
  const bool peek = flags & MSG_PEEK;
  const int fd = egress_->conn.fd.get();
  while (*copied < total) {
    std::vector<iovec> iov = SpansFrom(dst, *copied);
    msghdr m{};
    m.msg_iov = iov.data();
    m.msg_iovlen = iov.size();
    ssize_t n = recvmsg(fd, &m, MSG_DONTWAIT | (flags & (MSG_PEEK | MSG_TRUNC)));
    if (n > 0) {
      *copied += n;
      if (!peek) egress_->bytes_in += n;
      // A peek sees what is there now: waiting for more (MSG_WAITALL) would spin on a
      // host socket that stays readable.
      if (peek) return SysOk();
      continue;
    }
    if (n == 0) {
      fin_in_ = true;
      shutdown_ |= kShutRd;
      if (state_ == kTcpEstablished) state_ = kTcpCloseWait;
      if (state_ == kTcpFinWait2) state_ = kTcpClose;
      return SysOk();
    }
    int e = errno;
    if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR) {
      if (*copied >= target && *copied > 0) return SysOk();
      ArmEgress(POLLIN);
      return Errno{EAGAIN};
    }
    if (*copied > 0) return SysOk();
    if (e == ECONNRESET) {
      shutdown_ = kShutBoth;
      state_ = kTcpClose;
    }
    return Errno{e};
  }
  return SysOk();
}

}  // namespace usentry::sentry::net
