// Host-FD-backed files; the per-kernel poller and terminal registry.
#include "sentry/fsimpl/host_file.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "sentry/fsimpl/pipe.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/memory_manager.h"

namespace usentry::sentry::fsimpl {
namespace {

constexpr uint64_t kHostFileDev = 0xe;  // st_dev shown for non-tty host files
// Writes to pipes/ttys/sockets go in PIPE_BUF pieces, each preceded by a readiness
// check: POLLOUT guarantees room for that much, so the blocking host FD never blocks us.
constexpr size_t kPolledWriteChunk = kPipeBuf;

// Per-kernel host-file state. Kernels are few and live for the whole sentry; a side
// table keeps kernel.h free of fsimpl types.
struct KernelHostState {
  std::shared_ptr<HostPoller> poller;
  bool poller_failed = false;
  std::map<uint64_t, std::shared_ptr<Terminal>> terminals;  // by host st_rdev
};
absl::Mutex registry_mu;
std::map<const Kernel*, KernelHostState>& Registry() {
  static auto* r = new std::map<const Kernel*, KernelHostState>();
  return *r;
}

std::shared_ptr<HostPoller> PollerOf(Kernel& k, KernelHostState& st) {
  if (st.poller || st.poller_failed) return st.poller;
  auto p = std::make_shared<HostPoller>(&k.mu);
  absl::Status s = p->Start();
  if (!s.ok()) {
    // Without a poller, host FDs are treated as always ready (a read may then block
    // the sentry): degraded, but never a hang with nobody to wake us.
    fprintf(stderr, "usentry: host poller unavailable (%s); stdio may block\n",
            s.ToString().c_str());
    st.poller_failed = true;
    return nullptr;
  }
  st.poller = std::move(p);
  return st.poller;
}

bool PollableType(uint32_t type) { return type == S_IFIFO || type == S_IFSOCK || type == S_IFCHR; }

}  // namespace

std::shared_ptr<vfs::FileDescription> NewHostFile(Kernel& k, int host_fd, int open_flags) {
  // A write to a host pipe whose reader left must become EPIPE (and an emulated SIGPIPE
  // for the app), not kill the sentry.
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { signal(SIGPIPE, SIG_IGN); });
  absl::MutexLock lock(&registry_mu);
  KernelHostState& st = Registry()[&k];
  std::shared_ptr<Terminal> term;
  struct termios t;
  struct stat s;
  if (ioctl(host_fd, TCGETS, &t) == 0 && fstat(host_fd, &s) == 0) {
    auto& slot = st.terminals[s.st_rdev];
    if (!slot) slot = std::make_shared<Terminal>();
    term = slot;
  }
  const Credentials& c = k.options().initial_creds;
  return std::make_shared<HostFileDescription>(PollerOf(k, st), host_fd, open_flags,
                                               std::move(term), c.euid, c.egid);
}

std::shared_ptr<HostPoller> KernelHostPoller(Kernel& k) {
  absl::MutexLock lock(&registry_mu);
  return PollerOf(k, Registry()[&k]);
}

void ShutdownHostFiles(Kernel& k) {
  std::shared_ptr<HostPoller> poller;
  {
    absl::MutexLock lock(&registry_mu);
    auto it = Registry().find(&k);
    if (it == Registry().end()) return;
    poller = std::move(it->second.poller);
    Registry().erase(it);
  }
  if (poller) poller->Stop();  // joins the thread; it may be waiting for Kernel::mu
}

HostFileDescription::HostFileDescription(std::shared_ptr<HostPoller> poller, int host_fd,
                                         int open_flags, std::shared_ptr<Terminal> term,
                                         uint32_t uid, uint32_t gid)
    : FileDescription(vfs::Path{}, open_flags),
      poller_(std::move(poller)),
      fd_(host_fd),
      host_type_(S_IFREG),
      host_ino_(0),
      term_(std::move(term)),
      uid_(uid),
      gid_(gid) {
  struct stat s;
  if (fstat(fd_, &s) == 0) {
    host_type_ = s.st_mode & S_IFMT;
    host_ino_ = s.st_ino;
  }
  always_ready_ = poller_ == nullptr || !PollableType(host_type_);
  if (!always_ready_) {
    poller_->Subscribe(fd_, this, [this](EventMask ev) { wq_.Notify(ev); });
  }
}

HostFileDescription::~HostFileDescription() {
  if (poller_ != nullptr) poller_->Unsubscribe(fd_, this);
}

bool HostFileDescription::Arm(EventMask events) {
  if (always_ready_) return false;
  SysStatus st = poller_->Arm(fd_, events);
  if (st.ok()) return true;
  // Not pollable (e.g. /dev/null as stdin): always ready; wake anyone already waiting.
  always_ready_ = true;
  poller_->Unsubscribe(fd_, this);
  poller_ = nullptr;
  wq_.Notify(kAllEvents);
  return false;
}

EventMask HostFileDescription::Readiness(EventMask mask) {
  EventMask allowed = 0;
  if (readable()) allowed |= POLLIN | POLLRDNORM | POLLPRI;
  if (writable()) allowed |= POLLOUT | POLLWRNORM;
  if (always_ready_) return allowed & ~POLLPRI & mask;
  pollfd p{fd_, static_cast<short>(mask & allowed & (POLLIN | POLLOUT | POLLPRI)), 0};
  if (poll(&p, 1, 0) < 0) return 0;
  EventMask ready =
      static_cast<uint16_t>(p.revents) & (POLLIN | POLLOUT | POLLPRI | POLLERR | POLLHUP);
  if (ready & POLLIN) ready |= POLLRDNORM;
  if (ready & POLLOUT) ready |= POLLWRNORM;
  ready &= mask | POLLERR | POLLHUP;
  if (ready == 0 && !Arm(mask & allowed)) return allowed & ~POLLPRI & mask;
  return ready;
}

SysResult<size_t> HostFileDescription::Read(Task*, absl::Span<const iovec> dst, int64_t offset) {
  int cnt = static_cast<int>(std::min<size_t>(dst.size(), IOV_MAX));
  if (offset != -1) {
    if (host_type_ != S_IFREG) return Errno{ESPIPE};
    ssize_t n = preadv(fd_, dst.data(), cnt, offset);
    if (n < 0) return Errno{errno};
    return static_cast<size_t>(n);
  }
  ASSIGN_OR_RETURN_ERRNO(size_t want, vfs::IovecsLength(dst));
  if (want == 0) return size_t{0};
  if (host_type_ == S_IFSOCK) return SocketIo(nullptr, dst, /*write=*/false);
  if (!always_ready_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 0) < 0) return Errno{errno};
    if (p.revents == 0) {
      // Not ready: arm, unless it turns out the FD cannot be polled (then just read).
      if (Arm(POLLIN)) return Errno{EAGAIN};
    }
  }
  ssize_t n = readv(fd_, dst.data(), cnt);
  if (n < 0) {
    int e = errno;
    if (e == EAGAIN || e == EINTR) {
      Arm(POLLIN);
      return Errno{EAGAIN};
    }
    return Errno{e};
  }
  return static_cast<size_t>(n);
}

SysResult<size_t> HostFileDescription::SocketIo(Task* task, absl::Span<const iovec> iov,
                                                bool write) {
  // Sockets take per-call MSG_DONTWAIT: no readiness guess, and the shared host FD's
  // flags stay untouched. MSG_NOSIGNAL: SIGPIPE is the app's, emulated below.
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov.data());
  msg.msg_iovlen = std::min<size_t>(iov.size(), IOV_MAX);
  ssize_t n =
      write ? sendmsg(fd_, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) : recvmsg(fd_, &msg, MSG_DONTWAIT);
  if (n >= 0) return static_cast<size_t>(n);
  int e = errno;
  if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR) {
    Arm(write ? POLLOUT : POLLIN);
    return Errno{EAGAIN};
  }
  if (e == EPIPE && task != nullptr) SendSigpipe(*task);
  return Errno{e};
}

SysResult<size_t> HostFileDescription::WritePolled(Task* task, absl::Span<const iovec> src) {
  size_t done = 0;
  for (const iovec& v : src) {
    size_t off = 0;
    while (off < v.iov_len) {
      pollfd p{fd_, POLLOUT, 0};
      if (poll(&p, 1, 0) < 0) return done > 0 ? SysResult<size_t>(done) : Errno{errno};
      if (p.revents == 0) {
        if (done > 0) return done;
        if (Arm(POLLOUT)) return Errno{EAGAIN};
      }
      size_t chunk = std::min(v.iov_len - off, kPolledWriteChunk);
      ssize_t n = write(fd_, static_cast<const uint8_t*>(v.iov_base) + off, chunk);
      if (n < 0) {
        int e = errno;
        if (done > 0) return done;
        if (e == EPIPE && task != nullptr) SendSigpipe(*task);
        if (e == EAGAIN || e == EINTR) {
          Arm(POLLOUT);
          return Errno{EAGAIN};
        }
        return Errno{e};
      }
      done += n;
      off += n;
      if (static_cast<size_t>(n) < chunk) return done;
    }
  }
  return done;
}

SysResult<size_t> HostFileDescription::Write(Task* task, absl::Span<const iovec> src,
                                             int64_t offset) {
  int cnt = static_cast<int>(std::min<size_t>(src.size(), IOV_MAX));
  if (offset != -1) {
    if (host_type_ != S_IFREG) return Errno{ESPIPE};
    ssize_t n = pwritev(fd_, src.data(), cnt, offset);
    if (n < 0) return Errno{errno};
    return static_cast<size_t>(n);
  }
  ASSIGN_OR_RETURN_ERRNO(size_t want, vfs::IovecsLength(src));
  if (want == 0) return size_t{0};
  if (host_type_ == S_IFSOCK) return SocketIo(task, src, /*write=*/true);
  if (!always_ready_) return WritePolled(task, src);
  ssize_t n = writev(fd_, src.data(), cnt);
  if (n < 0) {
    int e = errno;
    if (e == EPIPE && task != nullptr) SendSigpipe(*task);
    return Errno{e};
  }
  return static_cast<size_t>(n);
}

SysResult<std::shared_ptr<vfs::FileDescription>> HostFileDescription::Reopen(int flags) {
  return std::shared_ptr<vfs::FileDescription>(
      std::make_shared<HostFileDescription>(poller_, fd_, flags, term_, uid_, gid_));
}

SysResult<int64_t> HostFileDescription::Seek(int64_t offset, int whence) {
  if (host_type_ != S_IFREG) return Errno{ESPIPE};
  off_t r = lseek(fd_, offset, whence);
  if (r < 0) return Errno{errno};
  return static_cast<int64_t>(r);
}

SysResult<vfs::Attr> HostFileDescription::Stat() {
  if (term_) return HostTtyAttr(uid_, gid_);
  struct stat s;
  if (fstat(fd_, &s) != 0) return Errno{errno};
  // The host file's type, size and times; identity is synthetic except the inode number
  // (harmless, and it lets pipe:[N] names match between stdio FDs).
  vfs::Attr a;
  a.dev = kHostFileDev;
  a.ino = s.st_ino;
  a.mode = s.st_mode;
  a.nlink = s.st_nlink;
  a.uid = uid_;
  a.gid = gid_;
  a.rdev = s.st_rdev;
  a.size = s.st_size;
  a.blocks = s.st_blocks;
  a.blksize = s.st_blksize;
  a.atime = s.st_atim;
  a.mtime = s.st_mtim;
  a.ctime = s.st_ctim;
  return a;
}

SysResult<uint64_t> HostFileDescription::Ioctl(Task& task, uint64_t cmd, uint64_t arg) {
  if (cmd == FIONREAD) {
    int n = 0;
    if (ioctl(fd_, FIONREAD, &n) < 0) return Errno{errno};
    RETURN_IF_ERRNO(task.mm().CopyOutObj(mm::GuestAddr(arg), n));
    return uint64_t{0};
  }
  if (cmd == TIOCSTI) return Errno{EPERM};
  if (term_ == nullptr) return Errno{ENOTTY};
  return TtyIoctl(task, fd_, *term_, cmd, arg);
}

SysStatus HostFileDescription::Sync() {
  // Like Linux: pipes, sockets and terminals cannot be synced.
  if (host_type_ != S_IFREG) return Errno{EINVAL};
  if (fsync(fd_) != 0) return Errno{errno};
  return SysOk();
}

std::string HostFileDescription::AnonName() const {
  if (term_) return kHostTtyPath;
  switch (host_type_) {
    case S_IFIFO:
      return absl::StrCat("pipe:[", host_ino_, "]");
    case S_IFSOCK:
      return absl::StrCat("socket:[", host_ino_, "]");
    case S_IFCHR:
      return "/dev/null";  // the usual non-tty character device on stdio
  }
  // A redirected regular file: its host path is none of the app's business.
  return "anon_inode:[usentry-host-file]";
}

}  // namespace usentry::sentry::fsimpl
