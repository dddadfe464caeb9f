// fcntl, ioctl (generic part), fsync family, fadvise64, flock.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/ioctl.h>

#include "abi/signal.h"
#include "sentry/fsimpl/dnotify.h"
#include "sentry/fsimpl/memfd.h"
#include "sentry/fsimpl/pipe.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/sys_file.h"
#include "sentry/syscalls/sys_file_lock.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry {

SyscallResult SysFcntl(Task& task, const SyscallArgs& args) {
  int fd = args.i32(0);
  int cmd = args.i32(1);
  vfs::FdTable& fds = task.fds();
  ASSIGN_OR_RETURN_ERRNO(vfs::FdEntry entry, fds.GetEntry(fd));
  vfs::FileDescription& file = *entry.file;
  switch (cmd) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC: {
      int64_t min = args.i64(2);
      if (min < 0 || static_cast<uint64_t>(min) >= fds.limit()) return Errno{EINVAL};
      ASSIGN_OR_RETURN_ERRNO(
          int nfd, fds.Install(entry.file, cmd == F_DUPFD_CLOEXEC, static_cast<int>(min)));
      return static_cast<uint64_t>(nfd);
    }
    case F_GETFD:
      return uint64_t{entry.cloexec ? FD_CLOEXEC : 0u};
    case F_SETFD:
      RETURN_IF_ERRNO(fds.SetCloexec(fd, args.i32(2) & FD_CLOEXEC));
      return uint64_t{0};
    case F_GETFL:
      return static_cast<uint64_t>(file.flags());
    case F_SETFL:
      if (file.is_path_only()) return Errno{EBADF};
      RETURN_IF_ERRNO(file.SetStatusFlags(args.i32(2)));
      return uint64_t{0};
    case F_GETLK:
    case F_SETLK:
    case F_SETLKW:
    case F_OFD_GETLK:
    case F_OFD_SETLK:
    case F_OFD_SETLKW:
      if (file.is_path_only()) return Errno{EBADF};
      return FcntlLock(task, file, cmd, args.ptr(2));
    case F_GETOWN:
      return static_cast<uint64_t>(file.owner_pid);  // set by F_NOTIFY only
    case F_GETOWN_EX: {
      // glibc's fcntl(F_GETOWN) asks this. Without an owner Linux reports a zeroed one
      // (type F_OWNER_TID); F_NOTIFY makes the caller's process the owner.
      f_owner_ex owner{F_OWNER_TID, 0};
      if (file.owner_pid != 0) owner = {F_OWNER_PID, file.owner_pid};
      RETURN_IF_ERRNO(task.mm().CopyOutObj(args.ptr(2), owner));
      return uint64_t{0};
    }
    case F_GETSIG:
      return static_cast<uint64_t>(file.notify_signal);
    case F_SETSIG: {
      int sig = args.i32(2);
      if (sig < 0 || sig > abi::kNumSignals) return Errno{EINVAL};
      file.notify_signal = sig;
      return uint64_t{0};
    }
    case F_NOTIFY:
      if (file.is_path_only()) return Errno{EBADF};
      RETURN_IF_ERRNO(fsimpl::SetDirNotify(task, fd, entry.file, args.u32(2)));
      return uint64_t{0};
    case F_GETPIPE_SZ:
    case F_SETPIPE_SZ:
      return fsimpl::PipeFcntl(file, cmd, args.u64(2));
    case F_ADD_SEALS:
    case F_GET_SEALS:
      return fsimpl::MemfdSealFcntl(file, cmd, args.u64(2));
    default:
      // F_SETOWN (SIGIO on I/O readiness), leases: not supported.
      return Errno{EINVAL};
  }
}

SyscallResult SysIoctl(Task& task, const SyscallArgs& args) {
  int fd = args.i32(0);
  uint64_t cmd = args.u32(1);
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, fd));
  switch (cmd) {
    case FIOCLEX:
    case FIONCLEX:
      RETURN_IF_ERRNO(task.fds().SetCloexec(fd, cmd == FIOCLEX));
      return uint64_t{0};
    case FIONBIO: {
      ASSIGN_OR_RETURN_ERRNO(int on, task.mm().CopyInObj<int>(args.ptr(2)));
      int flags = file->flags();
      RETURN_IF_ERRNO(file->SetStatusFlags(on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK));
      return uint64_t{0};
    }
    case FIOASYNC: {
      ASSIGN_OR_RETURN_ERRNO(int on, task.mm().CopyInObj<int>(args.ptr(2)));
      // SIGIO delivery is not implemented: accept turning it off only.
      if (on) return Errno{EINVAL};
      return uint64_t{0};
    }
    case FIONREAD:
      if (file->inode() && file->inode()->IsRegular()) {
        ASSIGN_OR_RETURN_ERRNO(int64_t size, file->inode()->Size());
        int avail = static_cast<int>(std::clamp<int64_t>(size - file->offset(), 0, INT32_MAX));
        RETURN_IF_ERRNO(task.mm().CopyOutObj(args.ptr(2), avail));
        return uint64_t{0};
      }
      break;
    default:
      break;
  }
  return file->Ioctl(task, cmd, args.u64(2));
}

SyscallResult SysFsync(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, args.i32(0)));
  if (!file->path().valid()) return Errno{EINVAL};  // pipes, sockets
  RETURN_IF_ERRNO(file->Sync());
  return uint64_t{0};
}

SyscallResult SysFdatasync(Task& task, const SyscallArgs& args) { return SysFsync(task, args); }

SyscallResult SysSync(Task& task, const SyscallArgs& args) {
  return uint64_t{0};  // sentry-held data has nowhere to go; gofer writes are pwrite()s
}

SyscallResult SysSyncfs(Task& task, const SyscallArgs& args) {
  RETURN_IF_ERRNO(GetFile(task, args.i32(0)));
  return uint64_t{0};
}

SyscallResult SysFadvise64(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, args.i32(0)));
  int advice = args.i32(3);
  if (advice < 0 || advice > 5) return Errno{EINVAL};  // POSIX_FADV_NORMAL..NOREUSE
  if (args.i64(2) < 0) return Errno{EINVAL};
  if (!file->path().valid()) return Errno{ESPIPE};
  return uint64_t{0};  // advisory: nothing to prefetch or drop
}

SyscallResult SysFlock(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, args.i32(0)));
  return FlockOp(task, *file, args.i32(1));
}

}  // namespace usentry::sentry
