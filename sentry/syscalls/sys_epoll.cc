// epoll syscalls: argument checks in Linux's order (fs/eventpoll.c), then the epoll
// description (sentry/fsimpl/epoll.h) does the work. epoll_wait blocks on the epoll's
// own wait queue, which its items notify.
#include "sentry/syscalls/sys_epoll.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>

#include <climits>
#include <memory>
#include <optional>
#include <vector>

#include "abi/misc.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sentry/fsimpl/epoll.h"
#include "sentry/kernel/wait_queue.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/signal.h"
#include "sentry/syscalls/sys_poll.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry {
namespace {

using fsimpl::EpollDescription;
using fsimpl::EpollEvent;

// EP_MAX_EVENTS: the most events one call may ask for.
constexpr int kMaxEvents = INT_MAX / sizeof(EpollEvent);
// Bits EPOLLEXCLUSIVE may be combined with (EPOLLEXCLUSIVE_OK_BITS).
constexpr uint32_t kExclusiveOkBits = EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP |
                                      fsimpl::kEpollWakeup | fsimpl::kEpollEt |
                                      fsimpl::kEpollExclusive;

SyscallResult CreateEpoll(Task& task, int flags) {
  auto ep = std::make_shared<EpollDescription>(0);
  ASSIGN_OR_RETURN_ERRNO(int fd, task.fds().Install(ep, flags & O_CLOEXEC));
  return static_cast<uint64_t>(fd);
}

// A descriptor epoll may use: O_PATH descriptions count as closed (Linux's fdget).
SysResult<std::shared_ptr<vfs::FileDescription>> GetFile(Task& task, int fd) {
  ASSIGN_OR_RETURN_ERRNO(auto file, task.fds().Get(fd));
  if (file->is_path_only()) return Errno{EBADF};
  return file;
}

SysResult<int> DoWait(Task& task, int epfd, mm::GuestAddr events, int maxevents,
                      std::optional<absl::Time> deadline) {
  if (maxevents <= 0 || maxevents > kMaxEvents) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(auto file, GetFile(task, epfd));
  auto* ep = dynamic_cast<EpollDescription*>(file.get());
  if (ep == nullptr) return Errno{EINVAL};
  auto deliver = [&](const std::vector<EpollEvent>& evs) -> SysResult<int> {
    RETURN_IF_ERRNO(task.mm().CopyOut(events, evs.data(), evs.size() * sizeof(EpollEvent)));
    return static_cast<int>(evs.size());
  };
  std::vector<EpollEvent> evs = ep->Collect(maxevents);
  if (!evs.empty()) return deliver(evs);
  if (deadline && *deadline <= absl::Now()) return 0;
  // Register, re-check, sleep: an item becoming ready after the check notifies our
  // queue, which needs the kernel lock we hold until Block releases it.
  Waiter w(&task);
  ScopedWait scoped(*ep->wait_queue(), w, POLLIN);
  while (true) {
    evs = ep->Collect(maxevents);
    if (!evs.empty()) return deliver(evs);
    SysStatus st = task.Block(w, deadline);
    w.clear();
    if (st.ok()) continue;
    if (st.error() == ETIMEDOUT) {
      evs = ep->Collect(maxevents);
      return evs.empty() ? SysResult<int>(0) : deliver(evs);
    }
    // Linux never restarts epoll_wait, handler or not.
    return Errno{EINTR};
  }
}

std::optional<absl::Time> DeadlineFromMillis(int timeout_ms) {
  if (timeout_ms < 0) return std::nullopt;
  return absl::Now() + absl::Milliseconds(timeout_ms);
}

// epoll_pwait/epoll_pwait2 around DoWait: the temporary mask stays installed when the
// wait was interrupted (signal delivery puts the old one back after the handler).
SyscallResult WaitWithMask(Task& task, const SyscallArgs& args,
                           std::optional<absl::Time> deadline) {
  mm::GuestAddr mask_addr = args.ptr(4);
  RETURN_IF_ERRNO(SwapInMask(task, mask_addr, args.u64(5)));
  SysResult<int> r = DoWait(task, args.i32(0), args.ptr(1), args.i32(2), deadline);
  bool interrupted = !r.ok() && r.error() == EINTR;
  if (!mask_addr.IsNull() && task.sig->has_saved_mask && !interrupted) {
    task.sig->mask = task.sig->saved_mask;
    task.sig->has_saved_mask = false;
  }
  if (!r.ok()) return Errno{r.error()};
  return static_cast<uint64_t>(r.value());
}

}  // namespace

SyscallResult SysEpollCreate(Task& task, const SyscallArgs& args) {
  if (args.i32(0) <= 0) return Errno{EINVAL};
  return CreateEpoll(task, 0);
}

SyscallResult SysEpollCreate1(Task& task, const SyscallArgs& args) {
  int flags = args.i32(0);
  if (flags & ~EPOLL_CLOEXEC) return Errno{EINVAL};
  return CreateEpoll(task, flags);
}

SyscallResult SysEpollCtl(Task& task, const SyscallArgs& args) {
  int op = args.i32(1);
  int fd = args.i32(2);
  EpollEvent ev{};
  const bool has_event = op != EPOLL_CTL_DEL;
  if (has_event) {
    ASSIGN_OR_RETURN_ERRNO(ev, task.mm().CopyInObj<EpollEvent>(args.ptr(3)));
  }
  ASSIGN_OR_RETURN_ERRNO(auto epfile, GetFile(task, args.i32(0)));
  ASSIGN_OR_RETURN_ERRNO(auto target, GetFile(task, fd));
  // Files without a poll operation (regular files, directories, /dev/null...).
  if (target->wait_queue() == nullptr) return Errno{EPERM};
  // EPOLLWAKEUP needs CAP_BLOCK_SUSPEND, which sandboxed tasks never have: Linux then
  // drops the flag silently.
  if (has_event) ev.events &= ~fsimpl::kEpollWakeup;
  auto* ep = dynamic_cast<EpollDescription*>(epfile.get());
  if (ep == nullptr || epfile == target) return Errno{EINVAL};
  if (has_event && (ev.events & fsimpl::kEpollExclusive)) {
    if (op == EPOLL_CTL_MOD) return Errno{EINVAL};
    if (op == EPOLL_CTL_ADD && (dynamic_cast<EpollDescription*>(target.get()) != nullptr ||
                                (ev.events & ~kExclusiveOkBits))) {
      return Errno{EINVAL};
    }
  }
  switch (op) {
    case EPOLL_CTL_ADD:
      RETURN_IF_ERRNO(ep->Add(target, fd, ev));
      return uint64_t{0};
    case EPOLL_CTL_MOD:
      RETURN_IF_ERRNO(ep->Modify(target.get(), fd, ev));
      return uint64_t{0};
    case EPOLL_CTL_DEL:
      RETURN_IF_ERRNO(ep->Delete(target.get(), fd));
      return uint64_t{0};
    default:
      return Errno{EINVAL};
  }
}

SyscallResult SysEpollWait(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(
      int n, DoWait(task, args.i32(0), args.ptr(1), args.i32(2), DeadlineFromMillis(args.i32(3))));
  return static_cast<uint64_t>(n);
}

SyscallResult SysEpollPwait(Task& task, const SyscallArgs& args) {
  return WaitWithMask(task, args, DeadlineFromMillis(args.i32(3)));
}

SyscallResult SysEpollPwait2(Task& task, const SyscallArgs& args) {
  std::optional<absl::Time> deadline;
  if (!args.ptr(3).IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(abi::Timespec ts, task.mm().CopyInObj<abi::Timespec>(args.ptr(3)));
    if (ts.sec < 0 || ts.nsec < 0 || ts.nsec >= 1000000000) return Errno{EINVAL};
    deadline = absl::Now() + absl::Seconds(ts.sec) + absl::Nanoseconds(ts.nsec);
  }
  return WaitWithMask(task, args, deadline);
}

}  // namespace usentry::sentry
