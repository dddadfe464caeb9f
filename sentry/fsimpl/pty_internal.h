// Internals of pty.cc and pty_ioctl.cc: the state a pseudo-terminal pair shares and
// the descriptions of its two ends. Not for use elsewhere (see pty.h).
#ifndef USENTRY_SENTRY_FSIMPL_PTY_INTERNAL_H_
#define USENTRY_SENTRY_FSIMPL_PTY_INTERNAL_H_

#include <poll.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "sentry/fsimpl/pty.h"
#include "sentry/fsimpl/pty_line.h"
#include "sentry/kernel/wait_queue.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry {
class ThreadGroup;
}

namespace usentry::sentry::fsimpl {

inline constexpr EventMask kPtyIn = POLLIN | POLLRDNORM;
inline constexpr EventMask kPtyOut = POLLOUT | POLLWRNORM;
// What a hung-up terminal reports to poll (Linux's hung_up_tty_poll).
inline constexpr EventMask kPtyHungUp = kPtyIn | kPtyOut | POLLERR | POLLHUP;

// The state both ends of one pair share.
class Pty {
 public:
  Pty(Kernel* k, std::weak_ptr<Devpts> dir, int index, vfs::Attr attr)
      : kernel(k), dir(std::move(dir)), index(index), attr(attr) {}

  bool replica_closed() const { return replica_opened && replicas == 0; }
  std::string name() const { return absl::StrCat("/dev/pts/", index); }

  // Sends `sig` to every process of group `pgid` (kill_pgrp from the kernel).
  void SignalGroup(int32_t pgid, int sig);
  // The master closed: replicas are hung up, the controlling session loses its terminal
  // and its leader gets SIGHUP then SIGCONT (Linux's tty_vhangup of the replica).
  void HangUp();

  Kernel* kernel;
  std::weak_ptr<Devpts> dir;
  int index;
  vfs::Attr attr;  // of /dev/pts/N
  bool locked = true;
  bool exclusive = false;  // TIOCEXCL: further replica opens need root
  LineDiscipline ld;
  abi::Winsize winsize{};
  int32_t fg_pgrp = 0;  // foreground process group, 0: none
  int32_t sid = 0;      // session this pty controls, 0: none
  bool master_open = true;
  int replicas = 0;  // open replica descriptions
  bool replica_opened = false;
  WaitQueue master_wq;   // readiness of the master end
  WaitQueue replica_wq;  // readiness of the replica end
};

// The caller's session is controlled by `pty` (Linux: current->signal->tty == tty).
bool IsControllingFor(const Pty& pty, const ThreadGroup& tg);

// A session leader without a controlling terminal that opens a free replica without
// O_NOCTTY in `flags` acquires it (Linux's tty_open -> __proc_set_tty).
void MaybeAcquireControlling(Pty& pty, int flags);

class PtyDescription : public vfs::FileDescription {
 public:
  PtyDescription(std::shared_ptr<Pty> pty, vfs::Path path, int flags, bool master)
      : FileDescription(std::move(path), flags), pty_(std::move(pty)), master_(master) {}

  SysResult<uint64_t> Ioctl(Task& task, uint64_t cmd, uint64_t arg) override;
  SysResult<int64_t> Seek(int64_t, int) override { return Errno{ESPIPE}; }
  Pty& pty() { return *pty_; }

 protected:
  // Ioctls that depend on the end (TIOCGPTN...); ENOTTY when not one of them.
  virtual SysResult<uint64_t> EndIoctl(Task& task, uint64_t cmd, uint64_t arg) {
    return Errno{ENOTTY};
  }
  // Which ld queue TCIFLUSH / TCOFLUSH mean from this end.
  void Flush(bool input);

  std::shared_ptr<Pty> pty_;
  bool master_;
};

class ReplicaDescription : public PtyDescription {
 public:
  // `via_dev_tty`: opened as /dev/tty, whose own node fstat shows (5:0), as on Linux.
  ReplicaDescription(std::shared_ptr<Pty> pty, vfs::Path path, int flags, bool via_dev_tty = false)
      : PtyDescription(std::move(pty), std::move(path), flags, false), via_dev_tty_(via_dev_tty) {
    ++pty_->replicas;
    pty_->replica_opened = true;
  }
  ~ReplicaDescription() override {
    if (--pty_->replicas == 0) pty_->master_wq.Notify(POLLHUP | kPtyIn);
  }

  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  SysResult<size_t> Write(Task* task, absl::Span<const iovec> src, int64_t offset) override;
  SysResult<vfs::Attr> Stat() override {
    if (via_dev_tty_ && path_.valid()) return path_.inode()->Stat();
    return pty_->attr;
  }
  EventMask Readiness(EventMask mask) override;
  WaitQueue* wait_queue() override { return &pty_->replica_wq; }
  std::string AnonName() const override { return pty_->name(); }
  // /proc/PID/fd/N of a replica without a path (TIOCGPTPEER): the same terminal.
  SysResult<std::shared_ptr<vfs::FileDescription>> Reopen(int flags) override;

 private:
  SysResult<size_t> ReadNow(absl::Span<const iovec> dst);
  bool via_dev_tty_;
};

class MasterDescription : public PtyDescription {
 public:
  MasterDescription(std::shared_ptr<Pty> pty, vfs::Path path, int flags)
      : PtyDescription(std::move(pty), std::move(path), flags, true) {}
  ~MasterDescription() override {
    pty_->HangUp();
    if (auto dir = pty_->dir.lock()) dir->Remove(pty_->index);
  }

  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  SysResult<size_t> Write(Task* task, absl::Span<const iovec> src, int64_t offset) override;
  EventMask Readiness(EventMask mask) override;
  WaitQueue* wait_queue() override { return &pty_->master_wq; }
  std::string AnonName() const override { return "/dev/ptmx"; }

 protected:
  SysResult<uint64_t> EndIoctl(Task& task, uint64_t cmd, uint64_t arg) override;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_PTY_INTERNAL_H_
