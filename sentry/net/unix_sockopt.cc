// UnixSocket options (getsockopt/setsockopt at SOL_SOCKET). Options Linux accepts on any
// socket without effect here (SO_REUSEADDR, SO_KEEPALIVE, ...) are stored and reported
// back; unknown ones fail with ENOPROTOOPT, other levels with EOPNOTSUPP, as Linux does
// for AF_UNIX.
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cstring>

#include "sentry/kernel/task.h"
#include "sentry/net/unix_socket.h"

namespace usentry::sentry::net {
namespace {

template <typename T>
std::string Bytes(const T& v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof(v));
}

// Accepted, stored, otherwise without effect; the value is the default.
bool IsFlagOption(int name, int* default_value) {
  switch (name) {
    case SO_REUSEADDR:
    case SO_KEEPALIVE:
    case SO_BROADCAST:
    case SO_DONTROUTE:
    case SO_OOBINLINE:
    case SO_PRIORITY:
    case SO_PASSSEC:
    case SO_TIMESTAMP:
    case SO_TIMESTAMPNS:
      *default_value = 0;
      return true;
    case SO_RCVLOWAT:
    case SO_SNDLOWAT:
      *default_value = 1;
      return true;
    default:
      return false;
  }
}

std::string TimevalBytes(absl::Duration d) {
  struct timeval tv;
  tv.tv_sec = absl::IDivDuration(d, absl::Seconds(1), &d);
  tv.tv_usec = absl::ToInt64Microseconds(d);
  return Bytes(tv);
}

SysResult<absl::Duration> ParseTimeval(const std::string& v) {
  if (v.size() < sizeof(struct timeval)) return Errno{EINVAL};
  struct timeval tv;
  memcpy(&tv, v.data(), sizeof(tv));
  if (tv.tv_usec < 0 || tv.tv_usec >= 1000000) return Errno{EDOM};
  if (tv.tv_sec < 0) return absl::ZeroDuration();  // Linux: a negative time means forever
  return absl::Seconds(tv.tv_sec) + absl::Microseconds(tv.tv_usec);
}

}  // namespace

SysResult<std::string> UnixSocket::GetOption(int level, int name) {
  if (level != SOL_SOCKET) return Errno{EOPNOTSUPP};
  int v;
  switch (name) {
    case SO_TYPE:
      return Bytes(type_);
    case SO_DOMAIN:
      return Bytes(int{AF_UNIX});
    case SO_PROTOCOL:
      return Bytes(int{0});
    case SO_ERROR:
      return Bytes(std::exchange(error_, 0));
    case SO_ACCEPTCONN:
      return Bytes(int{state_ == State::kListening});
    case SO_PASSCRED:
      return Bytes(int{passcred_});
    case SO_SNDBUF:
      return Bytes(sndbuf_);
    case SO_RCVBUF:
      return Bytes(rcvbuf_);
    case SO_PEERCRED: {
      struct ucred c {
        peer_cred_.pid, peer_cred_.uid, peer_cred_.gid
      };
      return Bytes(c);
    }
    case SO_LINGER:
      return Bytes(linger_);
    case SO_RCVTIMEO_OLD:
      return TimevalBytes(rcvtimeo_);
    case SO_SNDTIMEO_OLD:
      return TimevalBytes(sndtimeo_);
    default:
      if (!IsFlagOption(name, &v)) return Errno{ENOPROTOOPT};
      if (auto it = flag_opts_.find(name); it != flag_opts_.end()) v = it->second;
      return Bytes(v);
  }
}

SysStatus UnixSocket::SetOption(Task& task, int level, int name, const std::string& value) {
  if (level != SOL_SOCKET) return Errno{EOPNOTSUPP};
  switch (name) {
    case SO_LINGER:
      if (value.size() < sizeof(struct linger)) return Errno{EINVAL};
      memcpy(&linger_, value.data(), sizeof(linger_));
      linger_.l_onoff = linger_.l_onoff != 0;
      return SysOk();
    case SO_RCVTIMEO_OLD: {
      ASSIGN_OR_RETURN_ERRNO(rcvtimeo_, ParseTimeval(value));
      return SysOk();
    }
    case SO_SNDTIMEO_OLD: {
      ASSIGN_OR_RETURN_ERRNO(sndtimeo_, ParseTimeval(value));
      return SysOk();
    }
    default:
      break;
  }
  if (value.size() < sizeof(int)) return Errno{EINVAL};
  int v;
  memcpy(&v, value.data(), sizeof(v));
  switch (name) {
    case SO_PASSCRED:
      passcred_ = v != 0;
      return SysOk();
    case SO_SNDBUF:
    case SO_SNDBUFFORCE: {
      if (name == SO_SNDBUFFORCE && !task.creds().IsRoot()) return Errno{EPERM};
      // Linux clamps (as unsigned) to wmem_max, then doubles for bookkeeping overhead.
      uint32_t u = static_cast<uint32_t>(v);
      if (name == SO_SNDBUF) u = std::min<uint32_t>(u, kSockBufMax);
      sndbuf_ = std::max<int>(static_cast<int>(std::min<uint64_t>(uint64_t{u} * 2, INT32_MAX)),
                              kMinSndbuf);
      wq_.Notify(POLLOUT | POLLWRNORM | POLLWRBAND);
      return SysOk();
    }
    case SO_RCVBUF:
    case SO_RCVBUFFORCE: {
      if (name == SO_RCVBUFFORCE && !task.creds().IsRoot()) return Errno{EPERM};
      uint32_t u = static_cast<uint32_t>(v);
      if (name == SO_RCVBUF) u = std::min<uint32_t>(u, kSockBufMax);
      rcvbuf_ = std::max<int>(static_cast<int>(std::min<uint64_t>(uint64_t{u} * 2, INT32_MAX)),
                              kMinRcvbuf);
      return SysOk();
    }
    case SO_RCVLOWAT:
      flag_opts_[name] = v < 1 ? 1 : v;
      return SysOk();
    case SO_PRIORITY:
      if ((v < 0 || v > 6) && !task.creds().IsRoot()) return Errno{EPERM};
      flag_opts_[name] = v;
      return SysOk();
    case SO_SNDLOWAT:
      return Errno{ENOPROTOOPT};  // read-only on Linux
    default: {
      int unused;
      if (!IsFlagOption(name, &unused)) return Errno{ENOPROTOOPT};
      flag_opts_[name] = v != 0;
      return SysOk();
    }
  }
}

}  // namespace usentry::sentry::net
