// Socket: sockfs identity, the shared SOL_SOCKET options, the ioctl fallback, span helpers.
#include "sentry/net/socket.h"

#include <poll.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "sentry/kernel/task.h"
#include "sentry/net/interface_ioctl.h"

namespace usentry::sentry::net {
namespace {

std::atomic<uint64_t> next_socket_ino{1};
constexpr uint64_t kSockfsDev = 0x8;

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
    case SO_NO_CHECK:
    case SO_BUSY_POLL:
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
  return OptionBytes(tv);
}

SysResult<absl::Duration> ParseTimeval(const std::string& v) {
  if (v.size() < sizeof(struct timeval)) return Errno{EINVAL};
  struct timeval tv;
  memcpy(&tv, v.data(), sizeof(tv));
  if (tv.tv_usec < 0 || tv.tv_usec >= 1000000) return Errno{EDOM};
  if (tv.tv_sec < 0) return absl::ZeroDuration();  // Linux: a negative time means forever
  return absl::Seconds(tv.tv_sec) + absl::Microseconds(tv.tv_usec);
}

// Linux clamps (as unsigned) to {w,r}mem_max unless forced, then doubles for its
// bookkeeping overhead.
int BufferSize(int v, bool force, int minimum) {
  uint32_t u = static_cast<uint32_t>(v);
  if (!force) u = std::min<uint32_t>(u, kSockBufMax);
  return std::max<int>(static_cast<int>(std::min<uint64_t>(uint64_t{u} * 2, INT32_MAX)), minimum);
}

}  // namespace

Socket::Socket(int family, int type, int protocol, int status_flags, uint32_t uid, uint32_t gid)
    : vfs::FileDescription(vfs::Path{}, O_RDWR | (status_flags & O_NONBLOCK)),
      family_(family),
      type_(type),
      protocol_(protocol),
      ino_(next_socket_ino++),
      uid_(uid),
      gid_(gid),
      ctime_(vfs::NowTimespec()) {}

Socket::~Socket() = default;

SysResult<std::string> Socket::GetOption(Task& task, int level, int name) {
  if (level != SOL_SOCKET) return Errno{EOPNOTSUPP};
  return GetCommonOption(name);
}

SysStatus Socket::SetOption(Task& task, int level, int name, const std::string& value) {
  if (level != SOL_SOCKET) return Errno{EOPNOTSUPP};
  return SetCommonOption(task, name, value);
}

int Socket::flag_option(int name) const {
  int v = 0;
  IsFlagOption(name, &v);
  if (auto it = flag_opts_.find(name); it != flag_opts_.end()) v = it->second;
  return v;
}

SysResult<std::string> Socket::GetCommonOption(int name) {
  int v;
  switch (name) {
    case SO_TYPE:
      return OptionBytes(type_);
    case SO_DOMAIN:
      return OptionBytes(family_);
    case SO_PROTOCOL:
      return OptionBytes(protocol_);
    case SO_ERROR:
      return OptionBytes(std::exchange(error_, 0));
    case SO_ACCEPTCONN:
      return OptionBytes(int{listening()});
    case SO_SNDBUF:
      return OptionBytes(sndbuf_);
    case SO_RCVBUF:
      return OptionBytes(rcvbuf_);
    case SO_LINGER:
      return OptionBytes(linger_);
    case SO_RCVTIMEO_OLD:
      return TimevalBytes(rcvtimeo_);
    case SO_SNDTIMEO_OLD:
      return TimevalBytes(sndtimeo_);
    default:
      if (!IsFlagOption(name, &v)) return Errno{ENOPROTOOPT};
      return OptionBytes(flag_option(name));
  }
}

SysStatus Socket::SetCommonOption(Task& task, int name, const std::string& value) {
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
  ASSIGN_OR_RETURN_ERRNO(int v, OptionInt(value));
  switch (name) {
    case SO_SNDBUF:
    case SO_SNDBUFFORCE:
      if (name == SO_SNDBUFFORCE && !task.creds().IsRoot()) return Errno{EPERM};
      sndbuf_ = BufferSize(v, name == SO_SNDBUFFORCE, kMinSndbuf);
      wq_.Notify(kWritableEvents);
      return SysOk();
    case SO_RCVBUF:
    case SO_RCVBUFFORCE:
      if (name == SO_RCVBUFFORCE && !task.creds().IsRoot()) return Errno{EPERM};
      rcvbuf_ = BufferSize(v, name == SO_RCVBUFFORCE, kMinRcvbuf);
      return SysOk();
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

SysResult<uint64_t> Socket::Ioctl(Task& task, uint64_t cmd, uint64_t arg) {
  return InterfaceIoctl(task, family_, cmd, arg);
}

SysResult<size_t> Socket::Read(Task* task, absl::Span<const iovec> dst, int64_t offset) {
  if (offset != -1) return Errno{ESPIPE};
  ASSIGN_OR_RETURN_ERRNO(size_t total, vfs::IovecsLength(dst));
  if (total == 0) return size_t{0};
  RecvResult out;
  return Receive(task, dst, 0, &out, absl::ZeroDuration());
}

SysResult<size_t> Socket::Write(Task* task, absl::Span<const iovec> src, int64_t offset) {
  if (offset != -1) return Errno{ESPIPE};
  SendArgs args;
  args.data = src;
  args.use_timeout = false;
  return SendMsg(task, args);
}

SysResult<vfs::Attr> Socket::Stat() {
  vfs::Attr a;
  a.dev = kSockfsDev;
  a.ino = ino_;
  a.mode = S_IFSOCK | 0777;
  a.uid = uid_;
  a.gid = gid_;
  a.blksize = 4096;
  a.atime = a.mtime = a.ctime = ctime_;
  return a;
}

std::string Socket::AnonName() const { return absl::StrCat("socket:[", ino_, "]"); }

SysResult<int> OptionInt(const std::string& value) {
  if (value.size() < sizeof(int)) return Errno{EINVAL};
  int v;
  memcpy(&v, value.data(), sizeof(v));
  return v;
}

void CopyToSpans(absl::Span<const iovec> dst, size_t off, const uint8_t* src, size_t n) {
  for (const iovec& v : dst) {
    if (n == 0) return;
    if (off >= v.iov_len) {
      off -= v.iov_len;
      continue;
    }
    size_t run = std::min(v.iov_len - off, n);
    memcpy(static_cast<uint8_t*>(v.iov_base) + off, src, run);
    src += run;
    n -= run;
    off = 0;
  }
}

std::vector<uint8_t> GatherSpans(absl::Span<const iovec> src, size_t off, size_t n) {
  std::vector<uint8_t> out(n);
  size_t done = 0;
  for (const iovec& v : src) {
    if (done == n) break;
    if (off >= v.iov_len) {
      off -= v.iov_len;
      continue;
    }
    size_t run = std::min(v.iov_len - off, n - done);
    memcpy(out.data() + done, static_cast<const uint8_t*>(v.iov_base) + off, run);
    done += run;
    off = 0;
  }
  return out;
}

}  // namespace usentry::sentry::net
