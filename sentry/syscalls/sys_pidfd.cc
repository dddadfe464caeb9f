// pidfd_open(2) and pidfd_send_signal(2). The description is in sentry/fsimpl/pidfd.h.
#include "sentry/syscalls/sys_pidfd.h"

#include <fcntl.h>
#include <signal.h>

#include "sentry/fsimpl/pidfd.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/deliver.h"
#include "sentry/signal/signal.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry {

namespace {
constexpr int kPidfdNonblock = O_NONBLOCK;  // PIDFD_NONBLOCK
}  // namespace

SyscallResult SysPidfdOpen(Task& t, const SyscallArgs& a) {
  int32_t pid = a.i32(0);
  int flags = a.i32(1);
  if (flags & ~kPidfdNonblock) return Errno{EINVAL};
  if (pid <= 0) return Errno{EINVAL};
  std::shared_ptr<ThreadGroup> tg = t.kernel().FindThreadGroup(pid);
  if (!tg || tg->reaped) {
    // A thread that is not a group leader: EINVAL, as Linux without PIDFD_THREAD.
    return t.kernel().FindTask(pid) ? Errno{EINVAL} : Errno{ESRCH};
  }
  auto file = std::make_shared<fsimpl::PidfdDescription>(std::move(tg), flags);
  ASSIGN_OR_RETURN_ERRNO(int fd, t.fds().Install(file, /*cloexec=*/true));
  return static_cast<uint64_t>(fd);
}

SysResult<int32_t> PidOfPidfd(Task& t, int fd) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetFile(t, fd));
  auto pidfd = std::dynamic_pointer_cast<fsimpl::PidfdDescription>(file);
  if (!pidfd) return Errno{EBADF};
  return pidfd->thread_group().pid();
}

SyscallResult SysPidfdSendSignal(Task& t, const SyscallArgs& a) {
  int sig = a.i32(1);
  if (a.u32(3) != 0) return Errno{EINVAL};  // PIDFD_SIGNAL_* scopes are not supported
  ASSIGN_OR_RETURN_ERRNO(auto file, GetFile(t, a.i32(0)));
  auto pidfd = std::dynamic_pointer_cast<fsimpl::PidfdDescription>(file);
  if (!pidfd) return Errno{EBADF};
  ThreadGroup& tg = pidfd->thread_group();
  siginfo_t info{};
  if (!a.ptr(2).IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(info, t.mm().CopyInObj<siginfo_t>(a.ptr(2)));
    if (info.si_signo != sig) return Errno{EINVAL};
    // As rt_sigqueueinfo: no forged kernel or kill()-style info for another process.
    if (&tg != &t.thread_group() && (info.si_code >= 0 || info.si_code == SI_TKILL)) {
      return Errno{EPERM};
    }
  } else {
    info.si_signo = sig;
    info.si_code = SI_USER;
    info.si_pid = t.thread_group().pid();
    info.si_uid = t.creds().ruid;
  }
  if (sig < 0 || sig > kNumSignals) return Errno{EINVAL};
  if (tg.reaped) return Errno{ESRCH};
  if (sig != 0 && !tg.zombie) SendGroupSignal(tg, info);
  return 0;
}

}  // namespace usentry::sentry
