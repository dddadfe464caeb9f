// UnixSocket data path: send and receive for streams (bytes, no boundaries) and for
// datagrams/seqpackets (one message per call, truncation), with SCM_RIGHTS and
// SCM_CREDENTIALS riding on the messages.
#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cstring>

#include "sentry/fsimpl/pipe.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/net/socket_wait.h"
#include "sentry/net/unix_socket.h"

namespace usentry::sentry::net {
namespace {

constexpr EventMask kReadable = kReadableEvents;
constexpr EventMask kWritable = kWritableEvents;
// Charged per message on top of its data, like an skb's truesize: floods of tiny
// messages run out of send buffer too.
constexpr size_t kMessageOverhead = 512;

}  // namespace

Message UnixSocket::MakeMessage(Task* task, const SendArgs& args, size_t offset, size_t len) {
  Message m;
  m.data = GatherSpans(args.data, offset, len);
  if (args.creds) {
    m.creds = *args.creds;
  } else if (task != nullptr) {
    // SCM_CREDENTIALS defaults to the sender's pid and real ids, as Linux.
    m.creds = Ucred{task->thread_group().pid(), task->creds().ruid, task->creds().rgid};
  }
  m.from = addr_;
  m.charged_to = send_buf_;
  m.charge = len + kMessageOverhead;
  send_buf_->charged += m.charge;
  send_buf_->bytes += len;
  return m;
}

void UnixSocket::Enqueue(Message m) {
  rx_bytes_ += m.remaining();
  rx_.push_back(std::move(m));
  wq_.Notify(kReadable);
}

// --- send ---

SysResult<size_t> UnixSocket::SendMsg(Task* task, SendArgs& args) {
  return type_ == SOCK_STREAM ? SendStream(task, args) : SendDatagram(task, args);
}

SysResult<size_t> UnixSocket::SendStream(Task* task, SendArgs& args) {
  if (args.flags & MSG_OOB) return Errno{EOPNOTSUPP};
  if (args.name) return Errno{state_ == State::kConnected ? EISCONN : EOPNOTSUPP};
  if (state_ != State::kConnected) return Errno{ENOTCONN};
  ASSIGN_OR_RETURN_ERRNO(size_t total, vfs::IovecsLength(args.data));
  size_t sent = 0;
  SysStatus st = WaitLoop(
      task, nonblocking_for(args.flags), args.use_timeout ? sndtimeo_ : absl::ZeroDuration(),
      {&wq_}, kWritable, [&]() -> SysStatus {
        if (shutdown_ & kShutWr) return Errno{EPIPE};
        auto peer = peer_.lock();
        if (!peer || (peer->shutdown_ & kShutRd)) return Errno{EPIPE};
        while (sent < total) {
          size_t limit = static_cast<size_t>(sndbuf_);
          if (send_buf_->charged >= limit) return Errno{EAGAIN};
          size_t chunk = std::min(total - sent, limit - send_buf_->charged);
          Message m = MakeMessage(task, args, sent, chunk);
          if (sent == 0) m.rights = std::move(args.rights);  // the fds ride on the first byte
          peer->Enqueue(std::move(m));
          sent += chunk;
        }
        return SysOk();
      });
  if (st.ok() || sent > 0) return sent;
  if (st.error() == EPIPE && task != nullptr && !(args.flags & MSG_NOSIGNAL)) {
    fsimpl::SendSigpipe(*task);
  }
  return Errno{st.error()};
}

SysResult<size_t> UnixSocket::SendDatagram(Task* task, SendArgs& args) {
  if (args.flags & MSG_OOB) return Errno{EOPNOTSUPP};
  std::optional<UnixAddress> to;
  if (type_ == SOCK_SEQPACKET) {
    if (error_) return Errno{std::exchange(error_, 0)};
    if (state_ != State::kConnected) return Errno{ENOTCONN};
    // A seqpacket socket ignores a destination, like Linux.
  } else if (args.name) {
    ASSIGN_OR_RETURN_ERRNO(to, ParseUnixSockaddr(args.name->data(), args.name->size()));
  } else if (state_ != State::kConnected) {
    return Errno{ENOTCONN};
  }
  if (passcred_) RETURN_IF_ERRNO(Autobind());
  ASSIGN_OR_RETURN_ERRNO(size_t total, vfs::IovecsLength(args.data));
  if (total > static_cast<size_t>(sndbuf_) - 32) return Errno{EMSGSIZE};
  if (error_) return Errno{std::exchange(error_, 0)};
  if (shutdown_ & kShutWr) return Errno{EPIPE};

  std::shared_ptr<UnixSocket> found;
  if (to) {
    if (task == nullptr) return Errno{EINVAL};
    ASSIGN_OR_RETURN_ERRNO(found, LookupUnixAddress(*task, *to, type_));
  } else {
    found = peer_.lock();
    if (!found) {
      if (type_ == SOCK_SEQPACKET) return Errno{EPIPE};
      // The peer we were connected to is gone: forget it, once.
      peer_.reset();
      state_ = State::kUnconnected;
      return Errno{ECONNREFUSED};
    }
  }
  if (found->type_ != type_) return Errno{EPROTOTYPE};
  // Held weakly while we wait: the receiver may close meanwhile.
  std::weak_ptr<UnixSocket> weak_target = found;
  found.reset();
  SysStatus st = WaitLoop(task, nonblocking_for(args.flags),
                          args.use_timeout ? sndtimeo_ : absl::ZeroDuration(), {&wq_}, kWritable,
                          [&]() -> SysStatus {
                            if (send_buf_->charged >= static_cast<size_t>(sndbuf_))
                              return Errno{EAGAIN};
                            auto target = weak_target.lock();
                            if (!target) {
                              if (type_ == SOCK_SEQPACKET) return Errno{EPIPE};
                              if (!to) {  // our connected peer died while we waited
                                peer_.reset();
                                state_ = State::kUnconnected;
                              }
                              return Errno{ECONNREFUSED};
                            }
                            auto target_peer = target->peer_.lock();
                            bool connected_back = target_peer.get() == this;
                            if (type_ == SOCK_DGRAM && target_peer && !connected_back)
                              return Errno{EPERM};
                            if (target->shutdown_ & kShutRd) return Errno{EPIPE};
                            if (!connected_back && target->rx_.size() > kMaxDgramQlen) {
                              target->AddPeerWaiter(self());
                              return Errno{EAGAIN};
                            }
                            Message m = MakeMessage(task, args, 0, total);
                            m.rights = std::move(args.rights);
                            target->Enqueue(std::move(m));
                            return SysOk();
                          });
  if (!st.ok()) return Errno{st.error()};
  return total;
}

// --- receive ---

SysResult<size_t> UnixSocket::Receive(Task* task, absl::Span<const iovec> dst, int flags,
                                      RecvResult* out, absl::Duration timeout) {
  auto r = type_ == SOCK_STREAM ? RecvStream(task, dst, flags, out, timeout)
                                : RecvDatagram(task, dst, flags, out, timeout);
  if (r.ok()) out->has_creds = passcred_;
  return r;
}

SysResult<size_t> UnixSocket::RecvStream(Task* task, absl::Span<const iovec> dst, int flags,
                                         RecvResult* out, absl::Duration timeout) {
  if (flags & MSG_OOB) return Errno{EINVAL};  // no out-of-band data is ever queued
  if (state_ != State::kConnected) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(size_t total, vfs::IovecsLength(dst));
  if (total == 0) return size_t{0};
  const bool peek = flags & MSG_PEEK;
  const size_t target = (flags & MSG_WAITALL) ? total : 1;
  size_t copied = 0;
  bool have_creds = false;
  SysStatus st =
      WaitLoop(task, nonblocking_for(flags), timeout, {&wq_}, kReadable, [&]() -> SysStatus {
        if (peek) {  // a peek starts over at the head every time
          copied = 0;
          have_creds = false;
          out->rights.clear();
        }
        bool stop = false;
        size_t i = 0;
        while (copied < total && i < rx_.size() && !stop) {
          Message& m = rx_[i];
          // With SO_PASSCRED a read never mixes data of different senders.
          if (passcred_ && have_creds && !(m.creds == out->creds)) break;
          if (!have_creds) {
            out->creds = m.creds;
            out->from = m.from.unnamed() ? "" : m.from.ToSockaddr();
            have_creds = true;
          }
          size_t n = std::min(m.remaining(), total - copied);
          CopyToSpans(dst, copied, m.data.data() + m.offset, n);
          copied += n;
          bool has_rights = !m.rights.empty();
          if (peek) {
            if (has_rights) {
              out->rights = m.rights;  // a peek passes duplicates
              stop = true;
            }
            ++i;
            continue;
          }
          m.offset += n;
          rx_bytes_ -= n;
          m.Uncharge(n);
          // The fds come with the first byte of their message and end this read.
          if (has_rights) {
            out->rights = std::move(m.rights);
            m.rights.clear();
            stop = true;
          }
          if (m.remaining() > 0) break;
          rx_.pop_front();
        }
        if (copied >= target || (stop && copied > 0)) return SysOk();
        if (error_) {
          int e = std::exchange(error_, 0);
          if (copied > 0) return SysOk();
          return Errno{e};
        }
        if (shutdown_ & kShutRd) return SysOk();  // EOF (or what arrived before it)
        return Errno{EAGAIN};
      });
  if (!st.ok() && !(copied > 0 && !peek)) return Errno{st.error()};
  out->copied = copied;
  out->msg_len = copied;
  return copied;
}

SysResult<size_t> UnixSocket::RecvDatagram(Task* task, absl::Span<const iovec> dst, int flags,
                                           RecvResult* out, absl::Duration timeout) {
  if (flags & MSG_OOB) return Errno{EOPNOTSUPP};
  if (type_ == SOCK_SEQPACKET && state_ != State::kConnected) return Errno{ENOTCONN};
  ASSIGN_OR_RETURN_ERRNO(size_t total, vfs::IovecsLength(dst));
  const bool peek = flags & MSG_PEEK;
  SysStatus st =
      WaitLoop(task, nonblocking_for(flags), timeout, {&wq_}, kReadable, [&]() -> SysStatus {
        if (rx_.empty()) {
          if (error_) return Errno{std::exchange(error_, 0)};
          if (shutdown_ & kShutRd) return SysOk();  // EOF: 0 bytes, no message
          return Errno{EAGAIN};
        }
        Message& m = rx_.front();
        size_t n = std::min(total, m.data.size());
        CopyToSpans(dst, 0, m.data.data(), n);
        out->copied = n;
        out->msg_len = m.data.size();
        if (n < m.data.size()) out->msg_flags |= MSG_TRUNC;
        out->from = m.from.unnamed() ? "" : m.from.ToSockaddr();
        out->creds = m.creds;
        if (peek) {
          out->rights = m.rights;
          return SysOk();
        }
        out->rights = std::move(m.rights);
        rx_bytes_ -= m.remaining();
        rx_.pop_front();
        wq_.Notify(kWritable);  // room for senders held back by the queue length
        return SysOk();
      });
  if (!st.ok()) return Errno{st.error()};
  return (flags & MSG_TRUNC) ? out->msg_len : out->copied;
}

// --- read(2)/write(2) ---

}  // namespace usentry::sentry::net
