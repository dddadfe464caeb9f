// inotify syscalls: instances are files (read/poll/close go through the generic paths);
// watches name files of the sandbox's view, with Linux's argument checks and order.
#include "sentry/syscalls/sys_inotify.h"

#include <fcntl.h>
#include <sys/inotify.h>

#include <memory>

#include "sentry/fsimpl/inotify.h"
#include "sentry/kernel/kernel.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/permissions.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry {
namespace {

// Every bit inotify_add_watch accepts: the events and the watch flags.
constexpr uint32_t kAllInotifyBits = IN_ALL_EVENTS | IN_UNMOUNT | IN_Q_OVERFLOW | IN_IGNORED |
                                     IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK | IN_MASK_ADD |
                                     IN_MASK_CREATE | IN_ISDIR | IN_ONESHOT;

SyscallResult CreateInstance(Task& task, int flags) {
  if (flags & ~(IN_CLOEXEC | IN_NONBLOCK)) return Errno{EINVAL};
  if (fsimpl::InotifyDescription::instances() >= fsimpl::kInotifyMaxUserInstances) {
    return Errno{EMFILE};
  }
  auto file = std::make_shared<fsimpl::InotifyDescription>(task.kernel().vfs().notify(),
                                                           flags & IN_NONBLOCK);
  ASSIGN_OR_RETURN_ERRNO(int fd, task.fds().Install(file, (flags & IN_CLOEXEC) != 0));
  return static_cast<uint64_t>(fd);
}

SysResult<fsimpl::InotifyDescription*> Instance(Task& task, int fd) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetFile(task, fd));
  auto* instance = dynamic_cast<fsimpl::InotifyDescription*>(file.get());
  if (!instance) return Errno{EINVAL};
  return instance;  // the FD table keeps it alive for the rest of the call
}

}  // namespace

SyscallResult SysInotifyInit(Task& task, const SyscallArgs&) { return CreateInstance(task, 0); }

SyscallResult SysInotifyInit1(Task& task, const SyscallArgs& args) {
  return CreateInstance(task, args.i32(0));
}

SyscallResult SysInotifyAddWatch(Task& task, const SyscallArgs& args) {
  uint32_t mask = args.u32(2);
  if ((mask & ~kAllInotifyBits) || !(mask & kAllInotifyBits)) return Errno{EINVAL};
  // EBADF first; not an instance and IN_MASK_ADD|IN_MASK_CREATE are both EINVAL.
  ASSIGN_OR_RETURN_ERRNO(fsimpl::InotifyDescription * instance, Instance(task, args.i32(0)));
  if ((mask & IN_MASK_ADD) && (mask & IN_MASK_CREATE)) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(
      Target t, ResolveTarget(task, AT_FDCWD, args.ptr(1), !(mask & IN_DONT_FOLLOW), false));
  // A magic link to a pipe or socket names no file of the view that events could reach.
  if (!t.path.valid()) return Errno{EINVAL};
  if ((mask & IN_ONLYDIR) && !t.path.inode()->IsDir()) return Errno{ENOTDIR};
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr a, t.path.inode()->Stat());
  RETURN_IF_ERRNO(vfs::CheckPermission(*vfs::TaskContext(task).creds, a, vfs::kMayRead));
  ASSIGN_OR_RETURN_ERRNO(int wd, instance->AddWatch(t.path, mask));
  return static_cast<uint64_t>(wd);
}

SyscallResult SysInotifyRmWatch(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(fsimpl::InotifyDescription * instance, Instance(task, args.i32(0)));
  RETURN_IF_ERRNO(instance->RemoveWatch(args.i32(1)));
  return uint64_t{0};
}

}  // namespace usentry::sentry
