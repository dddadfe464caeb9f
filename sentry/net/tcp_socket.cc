// TcpSocket life cycle and connections: listen, accept, connect (local; egress in
// tcp_egress.cc), shutdown, close; getpeername, readiness and ioctls.
#include "sentry/net/tcp_socket.h"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>

#include <algorithm>

#include "sentry/kernel/task.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/net/socket_wait.h"

namespace usentry::sentry::net {
namespace {

constexpr EventMask kReadable = kReadableEvents;
constexpr EventMask kWritable = kWritableEvents;
// Linux's TCP defaults: net.ipv4.tcp_wmem[1] and tcp_rmem[1].
constexpr int kTcpDefaultSndbuf = 16384;
constexpr int kTcpDefaultRcvbuf = 131072;

bool IsMulticastOrBroadcast(const IpAddress& ip) {
  if (ip.is_v4()) return (ip.v4_host_order() >> 28) == 0xe || ip.v4_host_order() == 0xffffffff;
  return ip.bytes()[0] == 0xff;
}

}  // namespace

std::shared_ptr<TcpSocket> TcpSocket::New(std::shared_ptr<InetStack> stack, int family,
                                          int status_flags, uint32_t uid, uint32_t gid) {
  return std::make_shared<TcpSocket>(std::move(stack), family, status_flags, uid, gid);
}

TcpSocket::TcpSocket(std::shared_ptr<InetStack> stack, int family, int status_flags, uint32_t uid,
                     uint32_t gid)
    : InetSocket(std::move(stack), family, SOCK_STREAM, IPPROTO_TCP, status_flags, uid, gid) {
  sndbuf_ = kTcpDefaultSndbuf;
  rcvbuf_ = kTcpDefaultRcvbuf;
}

TcpSocket::~TcpSocket() {
  if (state_ == kTcpListen) StopListening();
  // Our weak pointer has expired: the peer sees us gone from now on.
  if (auto peer = peer_.lock()) {
    bool reset = !rx_.empty() || (linger_.l_onoff && linger_.l_linger == 0) || embryo_;
    if (reset) {
      peer->PeerReset();
    } else if (!fin_out_) {
      peer->PeerFin();
    } else {
      peer->wq_.Notify(kAllEvents);  // a writer waiting for room meets the closed socket
    }
  }
  ReleaseEgress();
  // Destroyed last: queued connections reset their clients in their own destructors.
  auto queued = std::move(accept_queue_);
  accept_queue_.clear();
}

// --- state changes ---

void TcpSocket::PeerFin() {
  fin_in_ = true;
  shutdown_ |= kShutRd;
  if (state_ == kTcpEstablished) {
    state_ = kTcpCloseWait;
  } else if (state_ == kTcpFinWait2) {
    state_ = kTcpClose;  // TIME_WAIT belongs to the kernel; the socket reads CLOSE
  }
  wq_.Notify(kAllEvents);
}

void TcpSocket::PeerReset() {
  // Linux: a reset in CLOSE_WAIT reads as a broken pipe, else as a reset.
  error_ = state_ == kTcpCloseWait ? EPIPE : ECONNRESET;
  shutdown_ = kShutBoth;
  state_ = kTcpClose;
  wq_.Notify(kAllEvents);
}

void TcpSocket::ConnectFailed(int err) {
  state_ = kTcpClose;
  error_ = err;
  ForgetAutomaticBinding();
  wq_.Notify(kAllEvents);
}

// --- listening ---

SysStatus TcpSocket::Listen(Task& task, int backlog) {
  if (conn_ != Conn::kUnconnected || (state_ != kTcpClose && state_ != kTcpListen)) {
    return Errno{EINVAL};
  }
  if (static_cast<unsigned>(backlog) > static_cast<unsigned>(kSomaxconn)) backlog = kSomaxconn;
  if (state_ != kTcpListen) {
    if (local_.port == 0) {
      RETURN_IF_ERRNO(AutobindPort(EADDRINUSE));
    } else {
      // A listener shares its port with fewer sockets (SO_REUSEADDR does not count).
      BindingInfo b = binding();
      b.listening = true;
      if (ports().ConflictsOnPort(this, b, local_.port)) return Errno{EADDRINUSE};
    }
    state_ = kTcpListen;
  }
  backlog_ = backlog;
  wq_.Notify(kAllEvents);
  AdmitWaitingConnects();
  return SysOk();
}

void TcpSocket::StopListening() {
  state_ = kTcpClose;
  auto waiting = std::move(waiting_connects_);
  waiting_connects_.clear();
  for (const auto& w : waiting) {
    if (auto c = w.lock(); c && c->state_ == kTcpSynSent && !c->is_egress()) {
      c->ConnectFailed(ECONNREFUSED);
    }
  }
  auto queued = std::move(accept_queue_);
  accept_queue_.clear();
  queued.clear();  // each one resets its client
  wq_.Notify(kAllEvents);
}

void TcpSocket::Establish(const std::shared_ptr<TcpSocket>& client, const IpAddress& target) {
  auto server = New(stack_, family_, 0, uid_, gid_);
  server->InheritOptions(*this);
  server->tcp_ = tcp_;
  server->local_ = InetAddr{InFamily(target), local_.port};
  server->addr_locked_ = server->port_locked_ = true;
  stack_->tcp_ports().Share(server.get(), local_.port);
  server->peer_addr_ = InetAddr{InFamily(client->local_.ip.Unmapped()), client->local_.port};
  server->state_ = kTcpEstablished;
  server->conn_ = Conn::kConnected;
  server->embryo_ = true;
  server->peer_ = client;
  server->had_peer_ = true;
  client->peer_ = server;
  client->had_peer_ = true;
  client->state_ = kTcpEstablished;
  accept_queue_.push_back(std::move(server));
  wq_.Notify(kReadable);
  client->wq_.Notify(kAllEvents);
}

void TcpSocket::AdmitWaitingConnects() {
  while (state_ == kTcpListen && !BacklogFull() && !waiting_connects_.empty()) {
    auto c = waiting_connects_.front().lock();
    waiting_connects_.pop_front();
    if (c && c->state_ == kTcpSynSent && !c->is_egress()) Establish(c, c->waiting_target_);
  }
}

SysResult<std::shared_ptr<Socket>> TcpSocket::Accept(Task& task, std::string* peer) {
  if (state_ != kTcpListen) return Errno{EINVAL};
  RETURN_IF_ERRNO(WaitLoop(&task, nonblocking(), rcvtimeo_, {&wq_}, kReadable, [&]() -> SysStatus {
    if (state_ != kTcpListen) return Errno{EINVAL};
    if (accept_queue_.empty()) return Errno{EAGAIN};
    return SysOk();
  }));
  std::shared_ptr<TcpSocket> s = std::move(accept_queue_.front());
  accept_queue_.pop_front();
  s->embryo_ = false;
  AdmitWaitingConnects();
  *peer = FormatInetSockaddr(s->family_, s->peer_addr_);
  return std::shared_ptr<Socket>(std::move(s));
}

// --- connecting ---

SysStatus TcpSocket::Connect(Task& task, const std::string& sockaddr) {
  ASSIGN_OR_RETURN_ERRNO(sa_family_t f, SockaddrFamily(sockaddr));
  if (f == AF_UNSPEC) return Disconnect();
  switch (conn_) {
    case Conn::kConnected:
      return Errno{EISCONN};
    case Conn::kConnecting:
      if (state_ == kTcpSynSent) return nonblocking() ? Errno{EALREADY} : FinishConnect(task);
      return ConnectOutcome();
    case Conn::kUnconnected:
      if (state_ != kTcpClose) return Errno{EISCONN};  // listening
      break;
  }
  ASSIGN_OR_RETURN_ERRNO(InetAddr dst, ParseStreamConnectAddress(family_, sockaddr));
  IpAddress target = RouteTarget(dst.ip);
  if (family_ == AF_INET6 && target.is_v4() && v6only_) return Errno{ENETUNREACH};
  if (IsMulticastOrBroadcast(target)) return Errno{ENETUNREACH};
  if (stack_->IsLocal(target)) return ConnectLocal(task, dst, target);
  return ConnectEgress(task, dst);
}

SysStatus TcpSocket::ConnectLocal(Task& task, const InetAddr& dst, const IpAddress& target) {
  RETURN_IF_ERRNO(AutobindPort(EADDRNOTAVAIL));
  ChooseSourceAddress(stack_->LocalSourceFor(target));
  peer_addr_ = InetAddr{InFamily(target), dst.port};
  auto listener = stack_->FindListener(target, dst.port, local_.port);
  if (listener == nullptr) {
    // Linux answers the SYN with a reset at once; a non-blocking connect still says
    // EINPROGRESS and reports the refusal through SO_ERROR.
    if (nonblocking()) {
      conn_ = Conn::kConnecting;
      ConnectFailed(ECONNREFUSED);
      return Errno{EINPROGRESS};
    }
    ForgetAutomaticBinding();
    return Errno{ECONNREFUSED};
  }
  conn_ = Conn::kConnecting;
  if (listener->BacklogFull()) {
    // Linux drops the SYN and the client retries: wait for room in the backlog.
    state_ = kTcpSynSent;
    waiting_target_ = target;
    listener->waiting_connects_.push_back(self());
    wq_.Notify(kAllEvents);
    return FinishConnect(task);
  }
  listener->Establish(self(), target);
  if (nonblocking()) return Errno{EINPROGRESS};
  conn_ = Conn::kConnected;
  return SysOk();
}

SysStatus TcpSocket::FinishConnect(Task& task) {
  if (nonblocking()) return Errno{EINPROGRESS};
  SysStatus st = WaitLoop(&task, false, sndtimeo_, {&wq_}, kWritable, [&]() -> SysStatus {
    return state_ == kTcpSynSent ? Errno{EAGAIN} : SysOk();
  });
  // A timeout leaves the connect running, as SO_SNDTIMEO does on Linux; so does a signal.
  if (!st.ok()) return Errno{st.error() == EAGAIN ? EINPROGRESS : st.error()};
  return ConnectOutcome();
}

SysStatus TcpSocket::ConnectOutcome() {
  if (state_ == kTcpClose && !had_peer_ && !egress_ready()) {
    conn_ = Conn::kUnconnected;
    int e = std::exchange(error_, 0);
    return Errno{e != 0 ? e : ECONNABORTED};
  }
  if (state_ == kTcpClose) {  // connected, then reset before connect(2) looked again
    int e = std::exchange(error_, 0);
    if (e != 0) return Errno{e};
  }
  conn_ = Conn::kConnected;
  return SysOk();
}

SysStatus TcpSocket::Disconnect() {
  if (state_ == kTcpListen) {
    StopListening();
    return SysOk();
  }
  if (state_ != kTcpClose) error_ = ECONNRESET;
  if (auto peer = peer_.lock()) peer->PeerReset();
  peer_.reset();
  had_peer_ = false;
  ReleaseEgress();
  state_ = kTcpClose;
  conn_ = Conn::kUnconnected;
  shutdown_ = 0;
  fin_in_ = fin_out_ = false;
  rx_.Clear();
  ForgetAutomaticBinding();
  wq_.Notify(kAllEvents);
  return SysOk();
}

SysStatus TcpSocket::Shutdown(int how) {
  if (how < SHUT_RD || how > SHUT_RDWR) return Errno{EINVAL};
  const int mode = how + 1;  // SHUT_RD -> kShutRd, SHUT_WR -> kShutWr, SHUT_RDWR -> both
  switch (state_) {
    case kTcpClose:
      // Linux records the flags (pollers see them) and still says ENOTCONN.
      shutdown_ |= mode;
      wq_.Notify(kAllEvents);
      return Errno{ENOTCONN};
    case kTcpListen:
      if (mode & kShutRd) StopListening();
      return SysOk();
    case kTcpSynSent:
      // Linux disconnects a connect in progress.
      ReleaseEgress();
      conn_ = Conn::kUnconnected;
      ConnectFailed(ECONNRESET);
      return SysOk();
    default:
      break;
  }
  shutdown_ |= mode;
  if ((mode & kShutWr) && !fin_out_) {
    fin_out_ = true;
    state_ = state_ == kTcpCloseWait ? kTcpClose : kTcpFinWait2;
    if (auto peer = peer_.lock()) peer->PeerFin();
  }
  if (egress_ready()) {
    // The host socket carries the half-close to the real peer; its answer (ENOTCONN
    // after a reset) changes nothing the app sees here.
    (void)::shutdown(egress_->conn.fd.get(), how);
  }
  wq_.Notify(kAllEvents);
  return SysOk();
}

SysResult<std::string> TcpSocket::PeerName() {
  if (state_ == kTcpClose || state_ == kTcpSynSent || state_ == kTcpListen) {
    return Errno{ENOTCONN};
  }
  return FormatInetSockaddr(family_, peer_addr_);
}

SysResult<int> TcpSocket::PathMtu() const {
  if (state_ == kTcpClose || state_ == kTcpSynSent || state_ == kTcpListen) {
    return Errno{ENOTCONN};
  }
  return is_egress() ? kEthMtu : kLoopbackMtu;
}

// --- readiness, ioctl ---

EventMask TcpSocket::Readiness(EventMask mask) {
  EventMask r = error_ ? POLLERR : 0;
  if (state_ == kTcpListen) {
    if (!accept_queue_.empty()) r |= kReadable;
    return r & (mask | POLLERR | POLLHUP);
  }
  if (egress_ready()) return r | EgressReadiness(mask);
  if (shutdown_ == kShutBoth || state_ == kTcpClose) r |= POLLHUP;
  if (shutdown_ & kShutRd) r |= kReadable | POLLRDHUP;
  if (state_ != kTcpSynSent) {
    if (!rx_.empty() && rx_.size() >= static_cast<size_t>(RcvLowat())) r |= kReadable;
    if ((shutdown_ & kShutWr) || LocalWritable()) r |= kWritable;
  }
  return r & (mask | POLLERR | POLLHUP);
}

SysResult<uint64_t> TcpSocket::Ioctl(Task& task, uint64_t cmd, uint64_t arg) {
  int amount = 0;
  switch (cmd) {
    case SIOCINQ:
      if (state_ == kTcpListen) return Errno{EINVAL};
      if (egress_ready()) {
        if (ioctl(egress_->conn.fd.get(), FIONREAD, &amount) != 0) return Errno{errno};
      } else {
        amount = static_cast<int>(std::min(rx_.size(), static_cast<size_t>(rcvbuf_)));
      }
      break;
    case SIOCOUTQ:
    case SIOCOUTQNSD:
      if (state_ == kTcpListen) return Errno{EINVAL};
      // A donated socket's queue is the host's; the sentry does not ask (netgate's
      // socket buffers are not the app's business), so it reads as empty.
      amount = egress_ready() ? 0 : static_cast<int>(Unsent());
      break;
    case SIOCATMARK:
      amount = 0;  // no urgent data is ever queued
      break;
    default:
      return Socket::Ioctl(task, cmd, arg);
  }
  RETURN_IF_ERRNO(task.mm().CopyOutObj(mm::GuestAddr(arg), amount));
  return uint64_t{0};
}

}  // namespace usentry::sentry::net
