// dnotify registrations (see dnotify.h): Linux fs/notify/dnotify behaviour.
#include "sentry/fsimpl/dnotify.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>

#include <unordered_map>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/signal/deliver.h"
#include "sentry/vfs/notify.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry::fsimpl {
namespace {

constexpr uint32_t kDnAll = DN_ACCESS | DN_MODIFY | DN_CREATE | DN_DELETE | DN_RENAME | DN_ATTRIB;
// The one watch descriptor a registration has on the hub.
constexpr int kDnWd = 1;

// The DN_* bits an inotify-style event stands for.
uint32_t DnBits(uint32_t ev) {
  uint32_t dn = 0;
  if (ev & IN_ACCESS) dn |= DN_ACCESS;
  if (ev & IN_MODIFY) dn |= DN_MODIFY;
  if (ev & IN_ATTRIB) dn |= DN_ATTRIB;
  if (ev & (IN_CREATE | IN_MOVED_TO)) dn |= DN_CREATE;
  if (ev & (IN_DELETE | IN_MOVED_FROM)) dn |= DN_DELETE;
  if (ev & vfs::kRenameInDir) dn |= DN_RENAME;
  return dn;
}

// The inotify events that can produce `dn`.
uint32_t EventsFor(uint32_t dn) {
  uint32_t ev = 0;
  if (dn & DN_ACCESS) ev |= IN_ACCESS;
  if (dn & DN_MODIFY) ev |= IN_MODIFY;
  if (dn & DN_ATTRIB) ev |= IN_ATTRIB;
  if (dn & DN_CREATE) ev |= IN_CREATE | IN_MOVED_TO;
  if (dn & (DN_DELETE | DN_RENAME)) ev |= IN_DELETE | IN_MOVED_FROM;
  return ev;
}

class DirNotify final : public vfs::NotifyWatcher, public vfs::FileDescription::ReleaseWatcher {
 public:
  DirNotify(Kernel* kernel, vfs::FileDescription* file) : kernel_(kernel), file_(file) {
    file_->AddReleaseWatcher(this);
  }

  // Adds `dn` (DN_* bits, DN_MULTISHOT included) for `fd`.
  void Add(uint32_t dn, int fd) {
    dn_ |= dn;
    fd_ = fd;
    const vfs::Path& p = file_->path();
    std::shared_ptr<vfs::NotifyHub> hub = p.mount->notify;
    if (on_hub_) {
      hub->SetMask(p.inode(), this, kDnWd, EventsFor(dn_));
    } else {
      hub->Add(p.dentry, this, kDnWd, EventsFor(dn_));
      on_hub_ = true;
    }
  }
  // Ends the registration (F_NOTIFY 0).
  void Clear() {
    if (on_hub_) file_->path().mount->notify->Remove(file_->path().inode(), this, kDnWd);
    on_hub_ = false;
    dn_ = 0;
  }

  bool Deliver(int, uint32_t mask, uint32_t, std::string_view) override {
    if (!(DnBits(mask) & dn_)) return false;
    Signal();
    if (dn_ & DN_MULTISHOT) return false;
    dn_ = 0;
    return true;  // one shot: the hub drops the watch
  }
  void Dropped(int) override { on_hub_ = false; }
  void DescriptionReleased(vfs::FileDescription*) override;

 private:
  // Linux's send_sigio: F_SETSIG's signal with POLL_MSG and the FD, else a plain SIGIO.
  void Signal() {
    std::shared_ptr<ThreadGroup> tg = kernel_->FindThreadGroup(file_->owner_pid);
    if (!tg) return;
    siginfo_t info{};
    if (file_->notify_signal == 0) {
      info.si_signo = SIGIO;
      info.si_code = SI_KERNEL;
    } else {
      info.si_signo = file_->notify_signal;
      info.si_code = POLL_MSG;
      info.si_band = POLLIN | POLLRDNORM | POLLMSG;
      info.si_fd = fd_;
    }
    SendGroupSignal(*tg, info);
  }

  Kernel* kernel_;
  vfs::FileDescription* file_;
  uint32_t dn_ = 0;
  int fd_ = -1;
  bool on_hub_ = false;
};

// Registrations by description (a description has at most one).
std::unordered_map<const vfs::FileDescription*, DirNotify*>& Registrations() {
  static auto* map = new std::unordered_map<const vfs::FileDescription*, DirNotify*>();
  return *map;
}

void DirNotify::DescriptionReleased(vfs::FileDescription*) {
  // The description is being destroyed: its path (and the hub) are still valid.
  Clear();
  Registrations().erase(file_);
  delete this;
}

}  // namespace

SysStatus SetDirNotify(Task& task, int fd, const std::shared_ptr<vfs::FileDescription>& file,
                       uint32_t arg) {
  auto& regs = Registrations();
  auto it = regs.find(file.get());
  if ((arg & ~DN_MULTISHOT) == 0) {
    if (it != regs.end()) it->second->Clear();
    return SysOk();
  }
  if (!file->path().valid() || !file->inode()->IsDir()) return Errno{ENOTDIR};
  if (arg & ~(kDnAll | DN_MULTISHOT)) arg &= kDnAll | DN_MULTISHOT;  // Linux ignores the rest
  if (it == regs.end()) {
    it = regs.emplace(file.get(), new DirNotify(&task.kernel(), file.get())).first;
  }
  file->owner_pid = task.thread_group().pid();
  it->second->Add(arg, fd);
  return SysOk();
}

}  // namespace usentry::sentry::fsimpl
