// UnixSocket life cycle, names and connections: bind, listen, accept, connect,
// shutdown, close; readiness, fstat and ioctl.
#include "sentry/net/unix_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/net/socket_wait.h"

namespace usentry::sentry::net {
namespace {

constexpr EventMask kReadable = kReadableEvents;
constexpr EventMask kWritable = kWritableEvents;

Ucred CredsOf(Task& task) {
  return Ucred{task.thread_group().pid(), task.creds().euid, task.creds().egid};
}

}  // namespace

// --- Message ---

Message::~Message() {
  if (!charged_to) return;
  charged_to->bytes -= remaining();
  charged_to->charged -= charge;
  if (charged_to->owner) charged_to->owner->Notify(kWritable);
}

void Message::Uncharge(size_t n) {
  if (!charged_to || n == 0) return;
  charged_to->bytes -= n;
  charged_to->charged -= n;
  charge -= n;
  if (charged_to->owner) charged_to->owner->Notify(kWritable);
}

// --- creation and close ---

UnixSocket::UnixSocket(std::shared_ptr<UnixNamespace> ns, int type, int status_flags, uint32_t uid,
                       uint32_t gid)
    : Socket(AF_UNIX, type, 0, status_flags, uid, gid),
      ns_(std::move(ns)),
      send_buf_(std::make_shared<SendBuffer>()) {
  send_buf_->owner = &wq_;
}

std::shared_ptr<UnixSocket> UnixSocket::New(std::shared_ptr<UnixNamespace> ns, int type,
                                            int status_flags, uint32_t uid, uint32_t gid) {
  return std::make_shared<UnixSocket>(std::move(ns), type, status_flags, uid, gid);
}

std::pair<std::shared_ptr<UnixSocket>, std::shared_ptr<UnixSocket>> UnixSocket::NewPair(
    std::shared_ptr<UnixNamespace> ns, int type, int status_flags, const Ucred& creds, uint32_t uid,
    uint32_t gid) {
  auto a = New(ns, type, status_flags, uid, gid);
  auto b = New(ns, type, status_flags, uid, gid);
  a->peer_ = b;
  b->peer_ = a;
  a->state_ = b->state_ = State::kConnected;
  a->peer_cred_ = b->peer_cred_ = creds;
  return {a, b};
}

UnixSocket::~UnixSocket() {
  send_buf_->owner = nullptr;
  // Accepted sockets carry a copy of the listener's name; only the owner's entry goes.
  if (addr_.kind == UnixAddress::Kind::kAbstract) ns_->UnbindAbstract(type_, addr_.name, this);
  if (bound_inode_) ns_->UnbindInode(*bound_inode_, this);
  if (connection_oriented()) {
    if (auto peer = peer_.lock()) {
      peer->shutdown_ = kShutBoth;
      // Unread data or a never-accepted connection: the peer sees a reset, as on Linux.
      if (!rx_.empty() || embryo_) peer->error_ = ECONNRESET;
      peer->wq_.Notify(kAllEvents);
    }
  }
  // Destroyed last, after our own state is settled: queued connections and in-flight
  // SCM_RIGHTS may hold the last references of other sockets, whose destructors run now.
  WakePeerWaiters();  // blocked connects and senders find us gone
  auto pending = std::move(accept_queue_);
  auto queued = std::move(rx_);
  accept_queue_.clear();
  rx_.clear();
}

// --- names ---

SysStatus UnixSocket::Autobind() {
  if (!addr_.unnamed()) return SysOk();
  ASSIGN_OR_RETURN_ERRNO(std::string name, ns_->AutobindName(type_));
  RETURN_IF_ERRNO(ns_->BindAbstract(type_, name, self()));
  addr_.kind = UnixAddress::Kind::kAbstract;
  addr_.name = std::move(name);
  return SysOk();
}

SysStatus UnixSocket::Bind(Task& task, const std::string& sockaddr) {
  if (sockaddr.size() < sizeof(sa_family_t)) return Errno{EINVAL};
  sa_family_t family;
  memcpy(&family, sockaddr.data(), sizeof(family));
  if (family != AF_UNIX) return Errno{EINVAL};
  // bind() with only the family: an automatic abstract name (a no-op when already bound).
  if (sockaddr.size() == kUnixFamilyLen) return Autobind();
  ASSIGN_OR_RETURN_ERRNO(UnixAddress a, ParseUnixSockaddr(sockaddr.data(), sockaddr.size()));
  if (a.kind == UnixAddress::Kind::kAbstract) {
    if (!addr_.unnamed()) return Errno{EINVAL};
    RETURN_IF_ERRNO(ns_->BindAbstract(type_, a.name, self()));
    addr_ = std::move(a);
    return SysOk();
  }
  // Like Linux, the node is made first; a socket already bound removes it again.
  ASSIGN_OR_RETURN_ERRNO(InodeKey key, CreateSocketNode(task, a.name));
  if (!addr_.unnamed()) {
    RemoveSocketNode(task, a.name);
    return Errno{EINVAL};
  }
  ns_->BindInode(key, self());
  bound_inode_ = key;
  addr_ = std::move(a);
  return SysOk();
}

SysResult<std::string> UnixSocket::PeerName() {
  ASSIGN_OR_RETURN_ERRNO(UnixAddress peer, PeerAddress());
  return peer.ToSockaddr();
}

SysResult<UnixAddress> UnixSocket::PeerAddress() const {
  if (state_ != State::kConnected) return Errno{ENOTCONN};
  if (auto p = peer_.lock()) return p->addr_;
  if (type_ == SOCK_DGRAM) return Errno{ENOTCONN};
  return peer_addr_;
}

// --- connections ---

SysStatus UnixSocket::Listen(Task& task, int backlog) {
  if (type_ == SOCK_DGRAM) return Errno{EOPNOTSUPP};
  if (addr_.unnamed()) return Errno{EINVAL};
  if (state_ == State::kConnected) return Errno{EINVAL};
  if (static_cast<unsigned>(backlog) > static_cast<unsigned>(kSomaxconn)) backlog = kSomaxconn;
  // Linux also makes the listener's own SO_PEERCRED the listening process.
  listen_cred_ = peer_cred_ = CredsOf(task);
  state_ = State::kListening;
  backlog_ = backlog;
  wq_.Notify(kAllEvents);
  WakePeerWaiters();  // a larger backlog may let waiting connects in
  return SysOk();
}

SysResult<std::shared_ptr<Socket>> UnixSocket::Accept(Task& task, std::string* peer) {
  if (type_ == SOCK_DGRAM) return Errno{EOPNOTSUPP};
  if (state_ != State::kListening) return Errno{EINVAL};
  RETURN_IF_ERRNO(WaitLoop(&task, nonblocking(), rcvtimeo_, {&wq_}, kReadable, [&]() -> SysStatus {
    if (state_ != State::kListening) return Errno{EINVAL};
    if (accept_queue_.empty()) return Errno{EAGAIN};
    return SysOk();
  }));
  std::shared_ptr<UnixSocket> s = std::move(accept_queue_.front());
  accept_queue_.pop_front();
  s->embryo_ = false;
  s->passcred_ = passcred_;  // inherited at accept time, like Linux's SOCK_PASSCRED
  WakePeerWaiters();         // room in the backlog for a waiting connect
  auto p = s->PeerAddress();
  *peer = p.ok() ? p->ToSockaddr() : UnixAddress{}.ToSockaddr();
  return std::shared_ptr<Socket>(std::move(s));
}

SysStatus UnixSocket::Connect(Task& task, const std::string& sockaddr) {
  if (type_ == SOCK_DGRAM) return ConnectDgram(task, sockaddr);
  ASSIGN_OR_RETURN_ERRNO(UnixAddress a, ParseUnixSockaddr(sockaddr.data(), sockaddr.size()));
  return ConnectStream(task, a);
}

SysStatus UnixSocket::ConnectStream(Task& task, const UnixAddress& a) {
  if (passcred_) RETURN_IF_ERRNO(Autobind());
  ASSIGN_OR_RETURN_ERRNO(std::shared_ptr<UnixSocket> found, LookupUnixAddress(task, a, type_));
  if (found->type_ != type_) return Errno{EPROTOTYPE};
  // Linux looks at the listener's backlog before at our own state: a connected socket
  // connecting to a full listener gets EAGAIN, not EISCONN. While we wait the listener
  // may close: we hold it only weakly.
  std::weak_ptr<UnixSocket> weak_listener = found;
  found.reset();
  std::shared_ptr<UnixSocket> listener;
  RETURN_IF_ERRNO(WaitLoop(&task, nonblocking(), sndtimeo_, {&wq_}, kWritable, [&]() -> SysStatus {
    listener = weak_listener.lock();
    if (!listener || listener->state_ != State::kListening) return Errno{ECONNREFUSED};
    if (listener->accept_queue_.size() > static_cast<size_t>(listener->backlog_)) {
      listener->AddPeerWaiter(self());
      listener.reset();
      return Errno{EAGAIN};
    }
    return SysOk();
  }));
  if (state_ == State::kConnected) return Errno{EISCONN};
  if (state_ == State::kListening) return Errno{EINVAL};
  auto server = New(ns_, type_, 0, listener->uid_, listener->gid_);
  server->addr_ = listener->addr_;  // getsockname of an accepted socket: the listener's name
  server->embryo_ = true;
  server->passcred_ = listener->passcred_;
  server->state_ = State::kConnected;
  server->peer_ = self();
  server->peer_addr_ = addr_;
  server->peer_cred_ = CredsOf(task);
  state_ = State::kConnected;
  peer_ = server;
  peer_addr_ = listener->addr_;
  peer_cred_ = listener->listen_cred_;
  listener->accept_queue_.push_back(std::move(server));
  listener->wq_.Notify(kReadable);
  wq_.Notify(kAllEvents);
  return SysOk();
}

SysStatus UnixSocket::ConnectDgram(Task& task, const std::string& sockaddr) {
  if (sockaddr.size() < sizeof(sa_family_t)) return Errno{EINVAL};
  sa_family_t family;
  memcpy(&family, sockaddr.data(), sizeof(family));
  if (family == AF_UNSPEC) {  // dissolve the association
    peer_.reset();
    state_ = State::kUnconnected;
    wq_.Notify(kAllEvents);
    return SysOk();
  }
  ASSIGN_OR_RETURN_ERRNO(UnixAddress a, ParseUnixSockaddr(sockaddr.data(), sockaddr.size()));
  if (passcred_) RETURN_IF_ERRNO(Autobind());
  ASSIGN_OR_RETURN_ERRNO(std::shared_ptr<UnixSocket> target, LookupUnixAddress(task, a, type_));
  if (target->type_ != type_) return Errno{EPROTOTYPE};
  auto target_peer = target->peer_.lock();
  if (target_peer && target_peer.get() != this) return Errno{EPERM};
  peer_ = target;
  peer_addr_ = target->addr_;
  state_ = State::kConnected;
  wq_.Notify(kAllEvents);
  return SysOk();
}

SysStatus UnixSocket::Shutdown(int how) {
  if (how < SHUT_RD || how > SHUT_RDWR) return Errno{EINVAL};
  int mode = how + 1;  // SHUT_RD -> kShutRd, SHUT_WR -> kShutWr, SHUT_RDWR -> both
  shutdown_ |= mode;
  wq_.Notify(kAllEvents);
  WakePeerWaiters();  // senders waiting for room now get EPIPE
  if (connection_oriented()) {
    if (auto peer = peer_.lock()) {
      int peer_mode = ((mode & kShutRd) ? kShutWr : 0) | ((mode & kShutWr) ? kShutRd : 0);
      peer->shutdown_ |= peer_mode;
      peer->wq_.Notify(kAllEvents);
    }
  }
  return SysOk();
}

// --- readiness, fstat, ioctl ---

bool UnixSocket::Writable() {
  if (state_ == State::kListening) return false;
  if (send_buf_->charged * 4 > static_cast<size_t>(sndbuf_)) return false;
  if (type_ == SOCK_DGRAM) {
    // A connected datagram socket whose peer's queue is full (and who is not connected
    // back to us) cannot send either; pollers hear from the peer when that changes.
    auto peer = peer_.lock();
    if (peer && peer->peer_.lock().get() != this && peer->rx_.size() > kMaxDgramQlen) {
      peer->AddPeerWaiter(self());
      return false;
    }
  }
  return true;
}

void UnixSocket::AddPeerWaiter(const std::shared_ptr<UnixSocket>& s) {
  for (const auto& w : peer_waiters_) {
    if (w.lock() == s) return;
  }
  peer_waiters_.push_back(s);
}

void UnixSocket::WakePeerWaiters() {
  auto waiters = std::move(peer_waiters_);
  peer_waiters_.clear();
  for (const auto& w : waiters) {
    if (auto s = w.lock()) s->wq_.Notify(kWritable);
  }
}

EventMask UnixSocket::Readiness(EventMask mask) {
  EventMask r = 0;
  if (error_) r |= POLLERR;
  if (shutdown_ & kShutRd) r |= POLLRDHUP | kReadable;
  if (shutdown_ == kShutBoth) r |= POLLHUP;
  if (state_ == State::kListening ? !accept_queue_.empty() : !rx_.empty()) r |= kReadable;
  if (connection_oriented() && state_ == State::kUnconnected) r |= POLLHUP;
  if (Writable()) r |= kWritable;
  return r & (mask | POLLERR | POLLHUP);
}

SysResult<uint64_t> UnixSocket::Ioctl(Task& task, uint64_t cmd, uint64_t arg) {
  int amount;
  switch (cmd) {
    case FIONREAD:  // == SIOCINQ
      if (state_ == State::kListening) return Errno{EINVAL};
      if (type_ == SOCK_DGRAM) {
        amount = rx_.empty() ? 0 : static_cast<int>(rx_.front().remaining());
      } else {
        amount = static_cast<int>(rx_bytes_);
      }
      break;
    case TIOCOUTQ:  // == SIOCOUTQ
      amount = static_cast<int>(send_buf_->bytes);
      break;
    default:
      return Socket::Ioctl(task, cmd, arg);  // the interface ioctls, as on any socket
  }
  RETURN_IF_ERRNO(task.mm().CopyOutObj(mm::GuestAddr(arg), amount));
  return uint64_t{0};
}

}  // namespace usentry::sentry::net
