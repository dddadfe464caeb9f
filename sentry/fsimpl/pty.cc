// Pseudo-terminal pairs: the devpts directory, the ptmx and /dev/pts/N nodes, master and
// replica descriptions, and the terminal ioctls on them (see pty.h).
#include "sentry/fsimpl/pty.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>

#include <charconv>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "sentry/fsimpl/procfs.h"
#include "sentry/fsimpl/pty_line.h"
#include "sentry/fsimpl/tty.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/deliver.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry::fsimpl {
namespace {

constexpr uint32_t kPtsMajor = 136;
constexpr EventMask kIn = POLLIN | POLLRDNORM;
constexpr EventMask kOut = POLLOUT | POLLWRNORM;
// What a hung-up terminal reports to poll (Linux's hung_up_tty_poll).
constexpr EventMask kHungUp = kIn | kOut | POLLERR | POLLHUP;
// Linux keeps at most this many pty pairs by default (/proc/sys/kernel/pty/max).
constexpr int kMaxPtys = 4096;

}  // namespace

// The state both ends of one pair share.
class Pty {
 public:
  Pty(Kernel* k, std::weak_ptr<Devpts> dir, int index, vfs::Attr attr)
      : kernel(k), dir(std::move(dir)), index(index), attr(attr) {}

  bool replica_closed() const { return replica_opened && replicas == 0; }
  std::string name() const { return absl::StrCat("/dev/pts/", index); }

  // Sends `sig` to every process of group `pgid` (kill_pgrp from the kernel).
  void SignalGroup(int32_t pgid, int sig) {
    if (kernel == nullptr || pgid <= 0) return;
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    info.si_signo = sig;
    info.si_code = SI_KERNEL;
    for (auto& tg : kernel->ThreadGroups()) {
      if (tg->pgid == pgid && !tg->zombie && !tg->exiting) SendGroupSignal(*tg, info);
    }
  }

  // The master closed: replicas are hung up, the controlling session loses its terminal
  // and its leader gets SIGHUP then SIGCONT (Linux's tty_vhangup of the replica).
  void HangUp() {
    master_open = false;
    replica_wq.Notify(kHungUp);
    if (kernel != nullptr && sid > 0) {
      auto leader = kernel->FindThreadGroup(sid);
      if (leader && leader->sid == sid && !leader->zombie && !leader->exiting) {
        siginfo_t info;
        memset(&info, 0, sizeof(info));
        info.si_code = SI_KERNEL;
        info.si_signo = SIGHUP;
        SendGroupSignal(*leader, info);
        info.si_signo = SIGCONT;
        SendGroupSignal(*leader, info);
      }
    }
    sid = 0;
    fg_pgrp = 0;
  }

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

namespace {

// The caller's session is controlled by `pty` (Linux: current->signal->tty == tty).
bool IsControllingFor(const Pty& pty, const ThreadGroup& tg) {
  return pty.sid != 0 && pty.sid == tg.sid;
}

// Runs `fn` over the iovecs in order until one is not filled; returns the total.
size_t ForEachIovec(absl::Span<const iovec> iovs, absl::FunctionRef<size_t(uint8_t*, size_t)> fn) {
  size_t done = 0;
  for (const iovec& v : iovs) {
    size_t k = fn(static_cast<uint8_t*>(v.iov_base), v.iov_len);
    done += k;
    if (k < v.iov_len) break;
  }
  return done;
}

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
    if (--pty_->replicas == 0) pty_->master_wq.Notify(POLLHUP | kIn);
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

// A session leader without a controlling terminal that opens a free replica without
// O_NOCTTY acquires it (Linux's tty_open -> __proc_set_tty).
void MaybeAcquireControlling(Pty& pty, int flags) {
  Task* t = CurrentTask();
  if (t == nullptr || (flags & O_NOCTTY) || pty.sid != 0) return;
  ThreadGroup& tg = t->thread_group();
  if (tg.sid != tg.pid()) return;
  if (auto dir = pty.dir.lock(); dir && dir->ControllingPty(tg.sid)) return;
  pty.sid = tg.sid;
  pty.fg_pgrp = tg.pgid;
}

SysResult<std::shared_ptr<vfs::FileDescription>> OpenReplica(const std::shared_ptr<Pty>& pty,
                                                             const vfs::Path& path, int flags) {
  if (!pty->master_open || pty->locked) return Errno{EIO};
  if (pty->exclusive) {
    Task* t = CurrentTask();
    if (t == nullptr || !t->creds().IsRoot()) return Errno{EBUSY};
  }
  auto d = std::make_shared<ReplicaDescription>(pty, path, flags & ~O_NOCTTY);
  MaybeAcquireControlling(*pty, flags);
  return std::shared_ptr<vfs::FileDescription>(d);
}

// /dev/ptmx and /dev/pts/ptmx.
class PtmxInode : public vfs::Inode {
 public:
  PtmxInode(std::shared_ptr<vfs::Filesystem> fs, vfs::Attr attr, std::weak_ptr<Devpts> devpts)
      : fs_(std::move(fs)), attr_(attr), devpts_(std::move(devpts)) {}
  vfs::Filesystem& fs() override { return *fs_; }
  SysResult<vfs::Attr> Stat() override { return attr_; }
  uint32_t FileType() override { return S_IFCHR; }
  SysStatus SetAttr(const vfs::SetAttrRequest& req) override {
    if (req.mask & vfs::kSetMode) attr_.mode = S_IFCHR | (req.mode & 07777);
    if (req.mask & vfs::kSetUid) attr_.uid = req.uid;
    if (req.mask & vfs::kSetGid) attr_.gid = req.gid;
    attr_.ctime = vfs::NowTimespec();
    return SysOk();
  }
  SysResult<std::shared_ptr<vfs::FileDescription>> Open(const vfs::Path& path, int flags) override {
    auto d = devpts_.lock();
    if (!d) return Errno{ENODEV};
    return d->OpenMaster(path, flags);
  }

 private:
  std::shared_ptr<vfs::Filesystem> fs_;
  vfs::Attr attr_;
  std::weak_ptr<Devpts> devpts_;
};

SysResult<std::shared_ptr<vfs::FileDescription>> ReplicaDescription::Reopen(int flags) {
  return OpenReplica(pty_, vfs::Path{}, flags);
}

// --- I/O ---

SysResult<size_t> MasterDescription::Read(Task*, absl::Span<const iovec> dst, int64_t offset) {
  if (offset != -1) return Errno{ESPIPE};
  ASSIGN_OR_RETURN_ERRNO(size_t want, vfs::IovecsLength(dst));
  Pty& p = *pty_;
  if (p.ld.OutputAvailable() == 0) {
    // Linux: EIO once every replica has closed (after the data is drained).
    if (p.replica_closed()) return Errno{EIO};
    if (want == 0) return size_t{0};
    return Errno{EAGAIN};
  }
  const bool was_full = p.ld.OutputRoom() < 2;
  size_t n = ForEachIovec(dst, [&](uint8_t* b, size_t len) { return p.ld.ReadOutput(b, len); });
  if (was_full && p.ld.OutputRoom() >= 2) p.replica_wq.Notify(kOut);
  return n;
}

SysResult<size_t> MasterDescription::Write(Task*, absl::Span<const iovec> src, int64_t offset) {
  if (offset != -1) return Errno{ESPIPE};
  ASSIGN_OR_RETURN_ERRNO(size_t want, vfs::IovecsLength(src));
  if (want == 0) return size_t{0};
  Pty& p = *pty_;
  std::vector<int> signals;
  const size_t echoed_before = p.ld.OutputAvailable();
  const size_t input_before = p.ld.InputAvailable();
  size_t n = ForEachIovec(
      src, [&](uint8_t* b, size_t len) { return p.ld.ReceiveInput(b, len, &signals); });
  if (n == 0) return Errno{EAGAIN};
  // Readers and edge-triggered watchers hear about every arrival.
  if (p.ld.InputAvailable() != input_before || p.ld.InputReady(1)) p.replica_wq.Notify(kIn);
  if (p.ld.OutputAvailable() != echoed_before) p.master_wq.Notify(kIn);
  for (int sig : signals) p.SignalGroup(p.fg_pgrp, sig);
  return n;
}

EventMask MasterDescription::Readiness(EventMask mask) {
  Pty& p = *pty_;
  EventMask r = 0;
  if (p.ld.OutputAvailable() > 0) r |= kIn;
  if (p.replica_closed()) r |= POLLHUP;
  if (p.ld.InputRoom() > 0) r |= kOut;
  return r & (mask | POLLHUP | POLLERR);
}

SysResult<size_t> ReplicaDescription::ReadNow(absl::Span<const iovec> dst) {
  Pty& p = *pty_;
  LineDiscipline& ld = p.ld;
  ASSIGN_OR_RETURN_ERRNO(size_t want, vfs::IovecsLength(dst));
  if (want == 0) return size_t{0};
  const bool was_full = ld.InputRoom() == 0;
  auto read = [&]() -> size_t {
    size_t n;
    if (ld.canonical()) {
      // At most one line; a VEOF line at the front reads as 0 (end of file).
      std::vector<uint8_t> line(want);
      n = ld.ReadInput(line.data(), want);
      vfs::CopyToIovecs(dst, line.data(), n);
    } else {
      n = ForEachIovec(dst, [&](uint8_t* b, size_t len) { return ld.ReadInput(b, len); });
    }
    if (was_full && ld.InputRoom() > 0) p.master_wq.Notify(kOut);
    return n;
  };
  if (ld.canonical()) {
    if (!ld.InputReady(1)) return Errno{EAGAIN};
    return read();
  }
  const size_t vmin = ld.termios().cc[VMIN];
  const size_t vtime = ld.termios().cc[VTIME];
  const size_t avail = ld.InputAvailable();
  if (vmin == 0 && vtime == 0) return read();  // polling read: whatever is there, maybe 0
  if (avail == 0) return Errno{EAGAIN};
  // MIN > 0 without TIME: wait for MIN bytes (or the request), unless non-blocking.
  if (vtime == 0 && avail < std::min(vmin, want) && !nonblocking()) return Errno{EAGAIN};
  return read();
}

SysResult<size_t> ReplicaDescription::Read(Task* task, absl::Span<const iovec> dst,
                                           int64_t offset) {
  if (offset != -1) return Errno{ESPIPE};
  Pty& p = *pty_;
  if (!p.master_open) return size_t{0};  // hung up: end of file
  auto r = ReadNow(dst);
  const abi::Termios& t = p.ld.termios();
  // MIN == 0, TIME > 0: wait up to TIME tenths of a second for a byte, then return 0.
  if (r.ok() || r.error() != EAGAIN || nonblocking() || task == nullptr || p.ld.canonical() ||
      t.cc[VMIN] != 0 || t.cc[VTIME] == 0) {
    return r;
  }
  absl::Time deadline = absl::Now() + absl::Milliseconds(100) * t.cc[VTIME];
  Waiter w(task);
  ScopedWait scoped(p.replica_wq, w, kIn | POLLHUP);
  while (true) {
    SysStatus st = task->Block(w, deadline);
    if (!p.master_open) return size_t{0};
    r = ReadNow(dst);
    if (r.ok() || r.error() != EAGAIN) return r;
    if (!st.ok()) {
      if (st.error() == ETIMEDOUT) return size_t{0};
      return Errno{st.error() == EINTR ? kERestartSys : st.error()};
    }
    w.clear();
  }
}

SysResult<size_t> ReplicaDescription::Write(Task*, absl::Span<const iovec> src, int64_t offset) {
  if (offset != -1) return Errno{ESPIPE};
  Pty& p = *pty_;
  if (!p.master_open) return Errno{EIO};
  ASSIGN_OR_RETURN_ERRNO(size_t want, vfs::IovecsLength(src));
  if (want == 0) return size_t{0};
  size_t n = ForEachIovec(src, [&](uint8_t* b, size_t len) { return p.ld.WriteOutput(b, len); });
  if (n == 0) return Errno{EAGAIN};
  p.master_wq.Notify(kIn);
  return n;
}

EventMask ReplicaDescription::Readiness(EventMask mask) {
  Pty& p = *pty_;
  if (!p.master_open) return kHungUp;
  EventMask r = 0;
  const abi::Termios& t = p.ld.termios();
  // Like Linux's poll: with MIN > 0 and no TIME, readable once MIN bytes are queued.
  size_t min = (t.cc[VTIME] == 0 && t.cc[VMIN] > 0) ? t.cc[VMIN] : 1;
  if (p.ld.InputReady(min)) r |= kIn;
  if (p.ld.OutputRoom() >= 2) r |= kOut;
  return r & (mask | POLLHUP | POLLERR);
}

// --- ioctls ---

void PtyDescription::Flush(bool input) {
  Pty& p = *pty_;
  // The replica's input is the master's output and the other way round.
  if (input == master_) {
    p.ld.FlushOutput();
    p.replica_wq.Notify(kOut);
  } else {
    p.ld.FlushInput();
    p.master_wq.Notify(kOut);
  }
}

SysResult<uint64_t> MasterDescription::EndIoctl(Task& task, uint64_t cmd, uint64_t arg) {
  mm::MemoryManager& mm = task.mm();
  mm::GuestAddr addr(arg);
  Pty& p = *pty_;
  switch (cmd) {
    case TIOCGPTN: {
      uint32_t n = p.index;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, n));
      return uint64_t{0};
    }
    case TIOCSPTLCK: {
      ASSIGN_OR_RETURN_ERRNO(int32_t lock, mm.CopyInObj<int32_t>(addr));
      p.locked = lock != 0;
      return uint64_t{0};
    }
    case TIOCGPTLCK: {
      int32_t lock = p.locked ? 1 : 0;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, lock));
      return uint64_t{0};
    }
    case TIOCGPTPEER: {
      int flags = static_cast<int>(arg);
      if (flags & ~(O_ACCMODE | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)) return Errno{EINVAL};
      if (!p.master_open) return Errno{EIO};
      auto d =
          std::make_shared<ReplicaDescription>(pty_, vfs::Path{}, flags & ~(O_NOCTTY | O_CLOEXEC));
      MaybeAcquireControlling(p, flags);
      ASSIGN_OR_RETURN_ERRNO(int fd, task.fds().Install(d, flags & O_CLOEXEC));
      return uint64_t(fd);
    }
    case TIOCPKT: {
      // Packet mode is not emulated: only "off" is accepted.
      ASSIGN_OR_RETURN_ERRNO(int32_t on, mm.CopyInObj<int32_t>(addr));
      if (on != 0) return Errno{EINVAL};
      return uint64_t{0};
    }
    case TIOCGPKT: {
      int32_t off = 0;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, off));
      return uint64_t{0};
    }
  }
  return Errno{ENOTTY};
}

SysResult<uint64_t> PtyDescription::Ioctl(Task& task, uint64_t cmd, uint64_t arg) {
  mm::MemoryManager& mm = task.mm();
  mm::GuestAddr addr(arg);
  Pty& p = *pty_;
  ThreadGroup& tg = task.thread_group();
  // A hung-up replica answers nothing (Linux's hung_up_tty_ioctl).
  if (!master_ && !p.master_open) return Errno{cmd == TIOCSPGRP ? ENOTTY : EIO};
  // Job-control queries on the replica need it to be the caller's controlling tty; on
  // the master they are about the replica.
  const bool controlling = IsControllingFor(p, tg);
  switch (cmd) {
    case TCGETS: {
      abi::Termios t = p.ld.termios();
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, t));
      return uint64_t{0};
    }
    case TCSETSF:
    case TCSETSW:
    case TCSETS: {
      ASSIGN_OR_RETURN_ERRNO(abi::Termios t, mm.CopyInObj<abi::Termios>(addr));
      // TCSETSW would wait for the master to read pending output; it is applied at once.
      if (cmd == TCSETSF) p.ld.FlushInput();
      p.ld.SetTermios(t);
      // A mode change may make input readable (raw bytes, pushed lines).
      p.replica_wq.Notify(kIn);
      return uint64_t{0};
    }
    case TIOCGWINSZ:
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, p.winsize));
      return uint64_t{0};
    case TIOCSWINSZ: {
      ASSIGN_OR_RETURN_ERRNO(abi::Winsize w, mm.CopyInObj<abi::Winsize>(addr));
      if (memcmp(&w, &p.winsize, sizeof(w)) == 0) return uint64_t{0};
      p.winsize = w;
      p.SignalGroup(p.fg_pgrp, SIGWINCH);
      return uint64_t{0};
    }
    case FIONREAD: {
      int32_t n = static_cast<int32_t>(master_ ? p.ld.OutputAvailable() : p.ld.InputAvailable());
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, n));
      return uint64_t{0};
    }
    case TIOCOUTQ: {
      int32_t n = static_cast<int32_t>(master_ ? p.ld.InputAvailable() : p.ld.OutputAvailable());
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, n));
      return uint64_t{0};
    }
    case TCFLSH:
      if (arg == TCIFLUSH || arg == TCIOFLUSH) Flush(true);
      if (arg == TCOFLUSH || arg == TCIOFLUSH) Flush(false);
      if (arg > TCIOFLUSH) return Errno{EINVAL};
      return uint64_t{0};
    case TCSBRK:
    case TCSBRKP:
      return uint64_t{0};  // tcdrain / break: nothing to wait for
    case TCXONC:
      if (arg > TCION) return Errno{EINVAL};
      return uint64_t{0};  // no IXON flow control is emulated
    case TIOCGETD: {
      int32_t n_tty = 0;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, n_tty));
      return uint64_t{0};
    }
    case TIOCSETD: {
      ASSIGN_OR_RETURN_ERRNO(int32_t ldisc, mm.CopyInObj<int32_t>(addr));
      if (ldisc != 0) return Errno{EINVAL};  // only N_TTY
      return uint64_t{0};
    }
    case TIOCEXCL:
    case TIOCNXCL:
      p.exclusive = cmd == TIOCEXCL;
      return uint64_t{0};
    case TIOCSTI:
      // Injecting input is how a sandboxed program would type into someone's shell.
      return Errno{EPERM};
    case TIOCGPGRP: {
      if (!master_ && !controlling) return Errno{ENOTTY};
      int32_t pg = p.fg_pgrp;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, pg));
      return uint64_t{0};
    }
    case TIOCGSID: {
      if (!master_ && !controlling) return Errno{ENOTTY};
      if (p.sid == 0) return Errno{ENOTTY};
      int32_t sid = p.sid;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, sid));
      return uint64_t{0};
    }
    case TIOCSPGRP: {
      if (!controlling) return Errno{ENOTTY};
      ASSIGN_OR_RETURN_ERRNO(int32_t pgrp, mm.CopyInObj<int32_t>(addr));
      if (pgrp < 0) return Errno{EINVAL};
      bool found = false;
      for (auto& g : task.kernel().ThreadGroups()) {
        if (g->pgid != pgrp || g->zombie) continue;
        if (g->sid != tg.sid) return Errno{EPERM};
        found = true;
      }
      if (!found) return Errno{ESRCH};
      p.fg_pgrp = pgrp;
      return uint64_t{0};
    }
    case TIOCSCTTY: {
      if (controlling && tg.sid == tg.pid()) return uint64_t{0};  // already ours
      if (tg.sid != tg.pid()) return Errno{EPERM};                // not a session leader
      if (auto dir = p.dir.lock(); dir && dir->ControllingPty(tg.sid)) return Errno{EPERM};
      if (!readable() && !task.creds().IsRoot()) return Errno{EPERM};
      if (p.sid != 0) {
        // Stealing another session's terminal: arg 1 and privilege (Linux).
        if (arg != 1 || !task.creds().IsRoot()) return Errno{EPERM};
      }
      p.sid = tg.sid;
      p.fg_pgrp = tg.pgid;
      return uint64_t{0};
    }
    case TIOCNOTTY: {
      if (master_ || !controlling) return Errno{ENOTTY};
      if (tg.sid == tg.pid()) {
        // The session leader gives the terminal up: its foreground group hears SIGHUP
        // and SIGCONT, as on Linux.
        int32_t fg = p.fg_pgrp;
        p.sid = 0;
        p.fg_pgrp = 0;
        p.SignalGroup(fg, SIGHUP);
        p.SignalGroup(fg, SIGCONT);
      }
      return uint64_t{0};
    }
  }
  return EndIoctl(task, cmd, arg);
}

}  // namespace

// /dev/pts/N.
class PtsNodeInode : public vfs::Inode {
 public:
  PtsNodeInode(std::shared_ptr<vfs::Filesystem> fs, std::shared_ptr<Pty> pty)
      : fs_(std::move(fs)), pty_(std::move(pty)) {}
  vfs::Filesystem& fs() override { return *fs_; }
  SysResult<vfs::Attr> Stat() override { return pty_->attr; }
  uint32_t FileType() override { return S_IFCHR; }
  SysStatus SetAttr(const vfs::SetAttrRequest& req) override {
    vfs::Attr& a = pty_->attr;
    struct timespec now = vfs::NowTimespec();
    if (req.mask & vfs::kSetMode) a.mode = S_IFCHR | (req.mode & 07777);
    if (req.mask & vfs::kSetUid) a.uid = req.uid;
    if (req.mask & vfs::kSetGid) a.gid = req.gid;
    if (req.mask & vfs::kSetAtime) a.atime = req.atime.tv_nsec == UTIME_NOW ? now : req.atime;
    if (req.mask & vfs::kSetMtime) a.mtime = req.mtime.tv_nsec == UTIME_NOW ? now : req.mtime;
    a.ctime = now;
    return SysOk();
  }
  SysResult<std::shared_ptr<vfs::FileDescription>> Open(const vfs::Path& path, int flags) override {
    return OpenReplica(pty_, path, flags);
  }
  const std::shared_ptr<Pty>& pty() const { return pty_; }

 private:
  std::shared_ptr<vfs::Filesystem> fs_;
  std::shared_ptr<Pty> pty_;
};

// --- Devpts ---

Devpts::Devpts(std::shared_ptr<vfs::Filesystem> fs, Kernel* kernel, vfs::Attr dir_attr,
               std::shared_ptr<vfs::Inode> host_tty_node)
    : fs_(std::move(fs)), kernel_(kernel), attr_(dir_attr), host_tty_(std::move(host_tty_node)) {}

std::shared_ptr<Devpts> Devpts::Create(std::shared_ptr<vfs::Filesystem> fs, Kernel* kernel,
                                       vfs::Attr dir_attr, vfs::Attr ptmx_attr,
                                       std::shared_ptr<vfs::Inode> host_tty_node) {
  auto d = std::make_shared<Devpts>(fs, kernel, dir_attr, std::move(host_tty_node));
  d->ptmx_ = std::make_shared<PtmxInode>(fs, ptmx_attr, d);
  return d;
}

SysResult<std::shared_ptr<vfs::Inode>> Devpts::Lookup(std::string_view name) {
  if (name == "ptmx") return ptmx_;
  if (name == "0" && host_tty_) return host_tty_;
  int index = -1;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), index);
  if (ec != std::errc() || end != name.data() + name.size() || absl::StrCat(index) != name) {
    return Errno{ENOENT};
  }
  auto it = nodes_.find(index);
  if (it == nodes_.end()) return Errno{ENOENT};
  return std::shared_ptr<vfs::Inode>(it->second);
}

SysResult<std::vector<vfs::DirEntry>> Devpts::ReadDir() {
  std::vector<vfs::DirEntry> out;
  out.push_back({"ptmx", 2, DT_CHR});
  if (host_tty_) out.push_back({"0", kHostTtyIno, DT_CHR});
  for (const auto& [index, node] : nodes_) {
    out.push_back({absl::StrCat(index), static_cast<uint64_t>(index) + 3, DT_CHR});
  }
  return out;
}

SysResult<std::shared_ptr<vfs::FileDescription>> Devpts::OpenMaster(const vfs::Path& path,
                                                                    int flags) {
  if (kernel_ == nullptr) return Errno{EIO};
  // The host terminal keeps index 0; the lowest free index after it, as Linux's IDA.
  int index = host_tty_ ? 1 : 0;
  while (nodes_.count(index)) ++index;
  if (index >= kMaxPtys) return Errno{ENOSPC};
  vfs::Attr a;
  a.dev = kDevptsDev;
  a.ino = static_cast<uint64_t>(index) + 3;  // devpts: root 1, ptmx 2, pts N at N + 3
  a.mode = S_IFCHR | 0620;
  Task* t = CurrentTask();
  a.uid = t ? t->creds().fsuid : 0;
  a.gid = t ? t->creds().fsgid : 0;
  a.rdev = LinuxMakedev(kPtsMajor + index / 256, index % 256);
  a.blksize = 1024;
  a.atime = a.mtime = a.ctime = vfs::NowTimespec();
  auto pty = std::make_shared<Pty>(kernel_, std::static_pointer_cast<Devpts>(shared_from_this()),
                                   index, a);
  nodes_[index] = std::make_shared<PtsNodeInode>(fs_, pty);
  // The master's own flags; O_NOCTTY means nothing for it.
  return std::shared_ptr<vfs::FileDescription>(
      std::make_shared<MasterDescription>(pty, path, flags & ~O_NOCTTY));
}

std::shared_ptr<Pty> Devpts::ControllingPty(int32_t sid) const {
  if (sid <= 0) return nullptr;
  for (const auto& [index, node] : nodes_) {
    if (node->pty()->sid == sid) return node->pty();
  }
  return nullptr;
}

std::shared_ptr<vfs::FileDescription> Devpts::OpenControlling(Task& task, const vfs::Path& path,
                                                              int flags) {
  std::shared_ptr<Pty> pty = ControllingPty(task.thread_group().sid);
  if (!pty) return nullptr;
  return std::make_shared<ReplicaDescription>(pty, path, flags & ~O_NOCTTY, true);
}

void Devpts::Remove(int index) { nodes_.erase(index); }

}  // namespace usentry::sentry::fsimpl
