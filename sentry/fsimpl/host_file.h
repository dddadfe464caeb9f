// Host-FD-backed files: the app's stdin/stdout/stderr wrap the host FDs the sentry was
// given (SentryConfig::stdio_fds); /dev/tty reopens the host tty the same way. I/O uses
// the host read/write syscalls on that FD, but never blocks the sentry while it holds
// the kernel lock: pipes, ttys and sockets are polled (0 timeout) first and, when not
// ready, answer EAGAIN and arm the kernel's HostPoller, which notifies the description's
// wait queue once the host FD is ready. Regular files are always ready. The host FD's
// O_NONBLOCK flag is never changed (it is shared with the user's terminal).
#ifndef USENTRY_SENTRY_FSIMPL_HOST_FILE_H_
#define USENTRY_SENTRY_FSIMPL_HOST_FILE_H_

#include <memory>
#include <string>

#include "sentry/fsimpl/host_poller.h"
#include "sentry/fsimpl/tty.h"
#include "sentry/kernel/wait_queue.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry {
class Kernel;
}

namespace usentry::sentry::fsimpl {

// A description of `host_fd` with open flags `open_flags` (access mode + O_NONBLOCK /
// O_APPEND as the app should see them). The host FD is borrowed, not owned: it must
// stay open for the kernel's lifetime. Requires Kernel::mu (the description subscribes
// to the kernel's host poller, which is started on first use).
std::shared_ptr<vfs::FileDescription> NewHostFile(Kernel& k, int host_fd, int open_flags);

// The kernel's host poller (started on first use), or null when it could not start.
// Requires Kernel::mu. For other descriptions of host FDs (donated inet sockets).
std::shared_ptr<HostPoller> KernelHostPoller(Kernel& k);

// Stops the kernel's host poller thread (if one was started) and forgets the kernel's
// terminal state. Call once at shutdown before destroying the Kernel, without holding
// Kernel::mu (the thread may be waiting for it). Host files still alive keep the
// (stopped) poller object alive.
void ShutdownHostFiles(Kernel& k);

class HostFileDescription : public vfs::FileDescription {
 public:
  // `poller` may be null (then pollable FDs are treated as always ready); `term` is
  // non-null iff host_fd is a tty. uid/gid: the owner shown by fstat.
  HostFileDescription(std::shared_ptr<HostPoller> poller, int host_fd, int open_flags,
                      std::shared_ptr<Terminal> term, uint32_t uid, uint32_t gid);
  ~HostFileDescription() override;

  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  SysResult<size_t> Write(Task* task, absl::Span<const iovec> src, int64_t offset) override;
  SysResult<int64_t> Seek(int64_t offset, int whence) override;
  SysResult<vfs::Attr> Stat() override;
  SysResult<uint64_t> Ioctl(Task& task, uint64_t cmd, uint64_t arg) override;
  SysStatus Sync() override;
  EventMask Readiness(EventMask mask) override;
  WaitQueue* wait_queue() override { return always_ready_ ? nullptr : &wq_; }
  std::string AnonName() const override;

  // A new description of the same host FD with `flags` (/proc/PID/fd/N reopen).
  SysResult<std::shared_ptr<vfs::FileDescription>> Reopen(int flags) override;
  int host_fd() const { return fd_; }
  bool is_tty() const { return term_ != nullptr; }

 private:
  // Arms the poller for `events`; if the FD cannot be polled, it is always ready from
  // now on (returns false).
  bool Arm(EventMask events);
  SysResult<size_t> WritePolled(Task* task, absl::Span<const iovec> src);
  SysResult<size_t> SocketIo(Task* task, absl::Span<const iovec> iov, bool write);

  std::shared_ptr<HostPoller> poller_;
  int fd_;
  uint32_t host_type_;  // S_IFMT of the host FD
  uint64_t host_ino_;
  bool always_ready_;
  std::shared_ptr<Terminal> term_;
  uint32_t uid_, gid_;
  WaitQueue wq_;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_HOST_FILE_H_
