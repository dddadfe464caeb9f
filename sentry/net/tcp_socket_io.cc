// TcpSocket data path: send and receive as Linux's tcp_sendmsg/tcp_recvmsg order their
// checks (errors, shutdown, connection state), over a local peer or a donated host
// socket; read(2)/write(2).
#include <poll.h>

#include <algorithm>

#include "sentry/fsimpl/pipe.h"
#include "sentry/kernel/task.h"
#include "sentry/net/socket_wait.h"
#include "sentry/net/tcp_socket.h"

namespace usentry::sentry::net {
namespace {

constexpr EventMask kReadable = kReadableEvents;
constexpr EventMask kWritable = kWritableEvents;

}  // namespace

// --- accounting ---

size_t TcpSocket::PeerRoom(const TcpSocket& peer) const {
  size_t cap = static_cast<size_t>(peer.rcvbuf_) + static_cast<size_t>(sndbuf_);
  return peer.rx_.size() >= cap ? 0 : cap - peer.rx_.size();
}

size_t TcpSocket::Unsent() const {
  auto peer = peer_.lock();
  if (!peer) return 0;
  size_t window = static_cast<size_t>(peer->rcvbuf_);
  return peer->rx_.size() > window ? peer->rx_.size() - window : 0;
}

bool TcpSocket::LocalWritable() const {
  auto peer = peer_.lock();
  if (!peer) return true;  // unconnected or the peer is gone: a write will not wait
  // Linux's sk_stream_is_writeable: free send space at least half of what is queued.
  size_t queued = Unsent();
  size_t space = static_cast<size_t>(sndbuf_) > queued ? sndbuf_ - queued : 0;
  return space >= queued / 2 && PeerRoom(*peer) > 0;
}

int TcpSocket::RcvLowat() const { return std::max(1, flag_option(SO_RCVLOWAT)); }

// --- send ---

SysResult<size_t> TcpSocket::SendMsg(Task* task, SendArgs& args) {
  // Urgent data is not emulated; a connected TCP socket ignores a destination.
  if (args.flags & MSG_OOB) return Errno{EOPNOTSUPP};
  return SendImpl(task, args);
}

SysResult<size_t> TcpSocket::SendImpl(Task* task, SendArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(size_t total, vfs::IovecsLength(args.data));
  size_t sent = 0;
  SysStatus st = WaitLoop(task, nonblocking_for(args.flags),
                          args.use_timeout ? sndtimeo_ : absl::ZeroDuration(), {&wq_}, kWritable,
                          [&]() -> SysStatus {
                            // An error pending after part of the data went stays for the next call.
                            if (error_ != 0)
                              return Errno{sent > 0 ? error_ : std::exchange(error_, 0)};
                            if (shutdown_ & kShutWr) return Errno{EPIPE};
                            if (state_ == kTcpSynSent)
                              return Errno{EAGAIN};  // waits for the connect
                            if (state_ == kTcpClose || state_ == kTcpListen) return Errno{EPIPE};
                            if (egress_ready()) return SendEgressAttempt(args, total, &sent);
                            return SendLocalAttempt(args, total, &sent);
                          });
  if (st.ok() || sent > 0) return sent;
  if (st.error() == EPIPE && task != nullptr && !(args.flags & MSG_NOSIGNAL)) {
    fsimpl::SendSigpipe(*task);
  }
  return Errno{st.error()};
}

SysStatus TcpSocket::SendLocalAttempt(const SendArgs& args, size_t total, size_t* sent) {
  auto peer = peer_.lock();
  if (!peer) {
    // The peer closed: Linux sends the data and the peer's stack answers with a reset,
    // so this write succeeds and the next one fails.
    *sent = total;
    PeerReset();
    return SysOk();
  }
  while (*sent < total) {
    size_t room = PeerRoom(*peer);
    if (room == 0) return Errno{EAGAIN};
    size_t chunk = std::min(total - *sent, room);
    peer->rx_.Append(args.data, *sent, chunk);
    *sent += chunk;
    bytes_acked_ += chunk;
    peer->bytes_received_ += chunk;
    peer->wq_.Notify(kReadable);
  }
  return SysOk();
}

// --- receive ---

SysResult<size_t> TcpSocket::Receive(Task* task, absl::Span<const iovec> dst, int flags,
                                     RecvResult* out, absl::Duration timeout) {
  if (flags & MSG_ERRQUEUE) return Errno{EAGAIN};  // nothing is ever queued there
  if (flags & MSG_OOB) return Errno{EINVAL};       // no urgent data either
  if (state_ == kTcpListen) return Errno{ENOTCONN};
  ASSIGN_OR_RETURN_ERRNO(size_t total, vfs::IovecsLength(dst));
  const bool peek = flags & MSG_PEEK;
  const size_t target =
      (flags & MSG_WAITALL) ? total : std::min(total, static_cast<size_t>(RcvLowat()));
  size_t copied = 0;
  SysStatus st =
      WaitLoop(task, nonblocking_for(flags), timeout, {&wq_}, kReadable, [&]() -> SysStatus {
        if (peek) copied = 0;  // a peek starts over at the head every time
        if (egress_ready()) return RecvEgressAttempt(dst, flags, total, target, &copied);
        return RecvLocalAttempt(dst, flags, total, target, &copied);
      });
  if (!st.ok() && copied == 0) return Errno{st.error()};
  out->copied = copied;
  out->msg_len = copied;
  return copied;
}

SysStatus TcpSocket::RecvLocalAttempt(absl::Span<const iovec> dst, int flags, size_t total,
                                      size_t target, size_t* copied) {
  const bool peek = flags & MSG_PEEK;
  const bool discard = flags & MSG_TRUNC;  // TCP: drop the bytes instead of copying them
  if (!rx_.empty() && *copied < total) {
    size_t n = std::min(rx_.size(), total - *copied);
    if (!discard) rx_.CopyOut(0, dst, *copied, n);
    *copied += n;
    if (!peek) {
      rx_.Consume(n);
      if (auto peer = peer_.lock()) peer->wq_.Notify(kWritable);  // room for the writer
    }
  }
  if (total == 0) {
    // Linux waits for data even to read nothing.
    bool idle =
        rx_.empty() && !fin_in_ && !(shutdown_ & kShutRd) && error_ == 0 && state_ != kTcpClose;
    return idle ? Errno{EAGAIN} : SysOk();
  }
  if (*copied > 0) {
    if (*copied >= target) return SysOk();
    // MSG_WAITALL gives up early at an error or the end of the stream.
    if (error_ != 0 || state_ == kTcpClose || (shutdown_ & kShutRd)) return SysOk();
    return Errno{EAGAIN};
  }
  // Nothing to read, in Linux's order: end of stream, error, shutdown, never connected.
  if (fin_in_) return SysOk();
  if (error_ != 0) return Errno{std::exchange(error_, 0)};
  if (shutdown_ & kShutRd) return SysOk();
  if (state_ == kTcpClose) return Errno{ENOTCONN};
  return Errno{EAGAIN};
}

// --- read(2)/write(2) ---

}  // namespace usentry::sentry::net
