// inotify(7): an instance is an open file holding watches (on the Vfs's NotifyHub) and
// a queue of events that read(2) returns as struct inotify_event records.
// All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_FSIMPL_INOTIFY_H_
#define USENTRY_SENTRY_FSIMPL_INOTIFY_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "sentry/kernel/wait_queue.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/notify.h"

namespace usentry::sentry::fsimpl {

// Linux's defaults (/proc/sys/fs/inotify/*), which the sentry enforces.
inline constexpr size_t kInotifyMaxQueuedEvents = 16384;
inline constexpr int kInotifyMaxUserInstances = 128;
inline constexpr int kInotifyMaxUserWatches = 65536;

class InotifyDescription : public vfs::FileDescription, public vfs::NotifyWatcher {
 public:
  // `flags`: O_NONBLOCK as a status flag. `hub` is the Vfs's, kept alive by the instance.
  InotifyDescription(std::shared_ptr<vfs::NotifyHub> hub, int flags);
  ~InotifyDescription() override;

  // inotify_add_watch on the file at `p` (already resolved and permission-checked):
  // a new watch descriptor, or the existing one of that inode with its mask replaced
  // (IN_MASK_ADD: or-ed in; IN_MASK_CREATE: EEXIST). ENOSPC past the watch limit.
  SysResult<int> AddWatch(const vfs::Path& p, uint32_t mask);
  // inotify_rm_watch: EINVAL for a descriptor this instance does not have; queues
  // IN_IGNORED.
  SysStatus RemoveWatch(int wd);

  // Whole events only: EINVAL if the first does not fit, EAGAIN when empty (the
  // syscall layer blocks). Offsets: ESPIPE.
  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  SysResult<int64_t> Seek(int64_t, int) override { return int64_t{0}; }  // noop_llseek
  EventMask Readiness(EventMask mask) override;
  WaitQueue* wait_queue() override { return &wq_; }
  // FIONREAD: the bytes read(2) would return with a large enough buffer.
  SysResult<uint64_t> Ioctl(Task& task, uint64_t cmd, uint64_t arg) override;
  std::string AnonName() const override { return "anon_inode:inotify"; }
  std::string FdInfo() override;

  bool Deliver(int wd, uint32_t mask, uint32_t cookie, std::string_view name) override;
  void Dropped(int wd) override;

  // Instances open in the sandbox, for the per-user limit (EMFILE past it).
  static int instances() { return instances_; }

 private:
  struct Event {
    int wd;
    uint32_t mask;
    uint32_t cookie;
    std::string name;
    size_t Size() const;  // bytes as read(2) returns it
  };
  struct Watch {
    const vfs::Inode* inode;
    uint32_t mask;  // as given, flags included
    uint64_t ino, dev;
  };
  void Queue(Event e);

  std::shared_ptr<vfs::NotifyHub> hub_;
  std::map<int, Watch> watches_;
  std::map<const vfs::Inode*, int> by_inode_;
  int next_wd_ = 1;
  std::deque<Event> queue_;
  size_t queued_bytes_ = 0;
  WaitQueue wq_;
  static int instances_;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_INOTIFY_H_
