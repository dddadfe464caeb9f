// rt_sigtimedwait(2) (sigwaitinfo/sigtimedwait), rt_sigqueueinfo(2) and
// rt_tgsigqueueinfo(2) (sigqueue, pthread_sigqueue), signalfd(2)/signalfd4(2).
#include "sentry/syscalls/sys_signal_wait.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>

#include <bit>

#include "sentry/fsimpl/signalfd.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/deliver.h"
#include "sentry/signal/signal.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/syscalls/time_args.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry {

namespace {

constexpr uint64_t kSigSetSize = 8;

// Dequeues the lowest pending signal of `set`: the thread's own first, then the
// process's (Linux's dequeue_signal).
bool DequeueIn(Task& t, uint64_t set, siginfo_t* out) {
  for (PendingSignals* p : {&t.sig->pending, &t.thread_group().pending}) {
    uint64_t ready = p->set() & set;
    if (ready == 0) continue;
    *out = p->Dequeue(std::countr_zero(ready) + 1);
    return true;
  }
  return false;
}

// Linux refuses to let a process forge kernel or kill()-style siginfo for another
// process: only negative codes other than SI_TKILL may be sent elsewhere.
bool ForgedInfo(const siginfo_t& info) { return info.si_code >= 0 || info.si_code == SI_TKILL; }

SyscallResult DoSignalfd(Task& t, int fd, mm::GuestAddr mask_addr, uint64_t size, int flags) {
  if (size != kSigSetSize) return Errno{EINVAL};
  if (flags & ~(SFD_CLOEXEC | SFD_NONBLOCK)) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(uint64_t mask, t.mm().CopyInObj<uint64_t>(mask_addr));
  mask &= ~kUnblockable;
  if (fd != -1) {
    ASSIGN_OR_RETURN_ERRNO(auto file, GetFile(t, fd));
    auto sfd = std::dynamic_pointer_cast<fsimpl::SignalfdDescription>(file);
    if (!sfd) return Errno{EINVAL};
    sfd->set_mask(mask);
    return static_cast<uint64_t>(fd);
  }
  auto file = std::make_shared<fsimpl::SignalfdDescription>(mask, flags & SFD_NONBLOCK);
  ASSIGN_OR_RETURN_ERRNO(int nfd, t.fds().Install(file, flags & SFD_CLOEXEC));
  return static_cast<uint64_t>(nfd);
}

}  // namespace

SyscallResult SysRtSigtimedwait(Task& t, const SyscallArgs& a) {
  if (a.u64(3) != kSigSetSize) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(uint64_t set, t.mm().CopyInObj<uint64_t>(a.ptr(0)));
  set &= ~kUnblockable;
  std::optional<absl::Time> deadline;
  if (!a.ptr(2).IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(timespec ts, t.mm().CopyInObj<timespec>(a.ptr(2)));
    if (!ValidTimespec(ts)) return Errno{EINVAL};
    deadline = absl::Now() + absl::DurationFromTimespec(ts);
  }
  siginfo_t info;
  bool got = DequeueIn(t, set, &info);
  if (!got) {
    // The waited-for signals are normally blocked, so their arrival wakes no task: wait
    // on the queue every enqueue notifies, and re-check.
    Waiter w(&t);
    ScopedWait sw(SignalEnqueueQueue(), w, POLLIN);
    while (!(got = DequeueIn(t, set, &info))) {
      SysStatus st = t.Block(w, deadline);
      w.clear();
      if (st.ok()) continue;
      if (DequeueIn(t, set, &info)) {
        got = true;
        break;
      }
      // Not restarted, as in Linux: a handler runs and the call fails with EINTR.
      return Errno{st.error() == ETIMEDOUT ? EAGAIN : EINTR};
    }
  }
  if (!a.ptr(1).IsNull()) RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), info));
  return static_cast<uint64_t>(info.si_signo);
}

SyscallResult SysRtSigqueueinfo(Task& t, const SyscallArgs& a) {
  int32_t pid = a.i32(0);
  int sig = a.i32(1);
  ASSIGN_OR_RETURN_ERRNO(siginfo_t info, t.mm().CopyInObj<siginfo_t>(a.ptr(2)));
  if (sig < 0 || sig > kNumSignals) return Errno{EINVAL};
  ThreadGroup& self = t.thread_group();
  if (ForgedInfo(info) && pid != self.pid()) return Errno{EPERM};
  std::shared_ptr<ThreadGroup> tg = pid > 0 ? t.kernel().FindThreadGroup(pid) : nullptr;
  if (!tg || tg->zombie) return Errno{ESRCH};
  info.si_signo = sig;
  if (sig != 0) SendGroupSignal(*tg, info);
  return 0;
}

SyscallResult SysRtTgsigqueueinfo(Task& t, const SyscallArgs& a) {
  int32_t tgid = a.i32(0);
  int32_t tid = a.i32(1);
  int sig = a.i32(2);
  if (tgid <= 0 || tid <= 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(siginfo_t info, t.mm().CopyInObj<siginfo_t>(a.ptr(3)));
  if (sig < 0 || sig > kNumSignals) return Errno{EINVAL};
  if (ForgedInfo(info) && tid != t.tid()) return Errno{EPERM};
  Task* target = t.kernel().FindTask(tid);
  if (!target || target->thread_group().pid() != tgid) return Errno{ESRCH};
  info.si_signo = sig;
  if (sig != 0) SendTaskSignal(*target, info);
  return 0;
}

SyscallResult SysSignalfd(Task& t, const SyscallArgs& a) {
  return DoSignalfd(t, a.i32(0), a.ptr(1), a.u64(2), 0);
}

SyscallResult SysSignalfd4(Task& t, const SyscallArgs& a) {
  return DoSignalfd(t, a.i32(0), a.ptr(1), a.u64(2), a.i32(3));
}

}  // namespace usentry::sentry
