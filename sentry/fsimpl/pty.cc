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
#include "sentry/fsimpl/pty_internal.h"
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
// Linux keeps at most this many pty pairs by default (/proc/sys/kernel/pty/max).
constexpr int kMaxPtys = 4096;

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

}  // namespace

void Pty::SignalGroup(int32_t pgid, int sig) {
  if (kernel == nullptr || pgid <= 0) return;
  siginfo_t info;
  memset(&info, 0, sizeof(info));
  info.si_signo = sig;
  info.si_code = SI_KERNEL;
  for (auto& tg : kernel->ThreadGroups()) {
    if (tg->pgid == pgid && !tg->zombie && !tg->exiting) SendGroupSignal(*tg, info);
  }
}

void Pty::HangUp() {
  master_open = false;
  replica_wq.Notify(kPtyHungUp);
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

bool IsControllingFor(const Pty& pty, const ThreadGroup& tg) {
  return pty.sid != 0 && pty.sid == tg.sid;
}

void MaybeAcquireControlling(Pty& pty, int flags) {
  Task* t = CurrentTask();
  if (t == nullptr || (flags & O_NOCTTY) || pty.sid != 0) return;
  ThreadGroup& tg = t->thread_group();
  if (tg.sid != tg.pid()) return;
  if (auto dir = pty.dir.lock(); dir && dir->ControllingPty(tg.sid)) return;
  pty.sid = tg.sid;
  pty.fg_pgrp = tg.pgid;
}

namespace {

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

}  // namespace

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
  if (was_full && p.ld.OutputRoom() >= 2) p.replica_wq.Notify(kPtyOut);
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
  if (p.ld.InputAvailable() != input_before || p.ld.InputReady(1)) p.replica_wq.Notify(kPtyIn);
  if (p.ld.OutputAvailable() != echoed_before) p.master_wq.Notify(kPtyIn);
  for (int sig : signals) p.SignalGroup(p.fg_pgrp, sig);
  return n;
}

EventMask MasterDescription::Readiness(EventMask mask) {
  Pty& p = *pty_;
  EventMask r = 0;
  if (p.ld.OutputAvailable() > 0) r |= kPtyIn;
  if (p.replica_closed()) r |= POLLHUP;
  if (p.ld.InputRoom() > 0) r |= kPtyOut;
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
    if (was_full && ld.InputRoom() > 0) p.master_wq.Notify(kPtyOut);
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
  ScopedWait scoped(p.replica_wq, w, kPtyIn | POLLHUP);
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
  p.master_wq.Notify(kPtyIn);
  return n;
}

EventMask ReplicaDescription::Readiness(EventMask mask) {
  Pty& p = *pty_;
  if (!p.master_open) return kPtyHungUp;
  EventMask r = 0;
  const abi::Termios& t = p.ld.termios();
  // Like Linux's poll: with MIN > 0 and no TIME, readable once MIN bytes are queued.
  size_t min = (t.cc[VTIME] == 0 && t.cc[VMIN] > 0) ? t.cc[VMIN] : 1;
  if (p.ld.InputReady(min)) r |= kPtyIn;
  if (p.ld.OutputRoom() >= 2) r |= kPtyOut;
  return r & (mask | POLLHUP | POLLERR);
}

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
