// poll/ppoll/select/pselect6. One core (DoPoll) over an array of (fd, events) pairs:
// scan every file's Readiness(); if nothing is ready, register one Waiter on every
// file's wait queue, re-scan and Task::Block until notified, timed out or interrupted.
// select's fd_sets are converted to that array and back.
#include "sentry/syscalls/sys_poll.h"

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "abi/misc.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sentry/kernel/wait_queue.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/signal.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry {
namespace {

// Events always reported by poll whether requested or not.
constexpr EventMask kAlwaysPolled = POLLHUP | POLLERR;
// select(2)'s mapping from sets to poll bits (Linux fs/select.c).
constexpr EventMask kSelectIn = POLLRDNORM | POLLRDBAND | POLLIN | POLLHUP | POLLERR;
constexpr EventMask kSelectOut = POLLWRBAND | POLLWRNORM | POLLOUT | POLLERR;
constexpr EventMask kSelectEx = POLLPRI;

struct PollEntry {
  int fd;
  EventMask events;     // requested (poll: plus kAlwaysPolled)
  EventMask revents;    // result
  int select_sets = 0;  // select: bit s set if the fd is in set s (read, write, except)
};

// Scans once. Returns how many entries have non-zero revents. With `w`, also registers
// it on each file's queue (the registrations live in `waits`).
int Scan(Task& task, std::vector<PollEntry>& entries, Waiter* w,
         std::vector<std::shared_ptr<vfs::FileDescription>>& files,
         std::vector<std::unique_ptr<ScopedWait>>& waits) {
  int count = 0;
  for (PollEntry& e : entries) {
    e.revents = 0;
    if (e.fd < 0) continue;
    auto file = task.fds().Get(e.fd);
    if (!file.ok()) {
      e.revents = POLLNVAL;
      ++count;
      continue;
    }
    vfs::FileDescription& f = *file.value();
    if (w != nullptr) {
      if (WaitQueue* q = f.wait_queue()) {
        waits.push_back(std::make_unique<ScopedWait>(*q, *w, e.events));
      }
      files.push_back(file.value());  // keeps the queue alive while we sleep
    }
    e.revents = f.Readiness(e.events) & e.events;
    if (e.revents != 0) ++count;
  }
  return count;
}

// The shared loop. deadline: nullopt = forever; <= now = don't block. EINTR becomes
// ERESTARTNOHAND (restarted only if no handler runs, like Linux).
SysResult<int> DoPoll(Task& task, std::vector<PollEntry>& entries,
                      std::optional<absl::Time> deadline) {
  std::vector<std::shared_ptr<vfs::FileDescription>> no_files;
  std::vector<std::unique_ptr<ScopedWait>> no_waits;
  int n = Scan(task, entries, nullptr, no_files, no_waits);
  if (n > 0 || (deadline && *deadline <= absl::Now())) return n;
  while (true) {
    // Declaration order matters: the registrations (waits) are removed first, while the
    // files that own the queues and the waiter they point to are still alive.
    Waiter w(&task);
    std::vector<std::shared_ptr<vfs::FileDescription>> files;
    std::vector<std::unique_ptr<ScopedWait>> waits;
    // Registering and scanning together under the kernel lock: a change after the scan
    // must Notify, which needs the lock we hold until Block releases it.
    n = Scan(task, entries, &w, files, waits);
    if (n > 0) return n;
    SysStatus st = task.Block(w, deadline);
    if (st.ok()) continue;
    if (st.error() == ETIMEDOUT) return Scan(task, entries, nullptr, no_files, no_waits);
    return Errno{kERestartNoHand};
  }
}

std::optional<absl::Time> DeadlineFromMillis(int timeout_ms) {
  if (timeout_ms < 0) return std::nullopt;
  return absl::Now() + absl::Milliseconds(timeout_ms);
}

SysResult<std::optional<absl::Time>> DeadlineFromTimespec(Task& task, mm::GuestAddr addr) {
  if (addr.IsNull()) return std::optional<absl::Time>();
  ASSIGN_OR_RETURN_ERRNO(abi::Timespec ts, task.mm().CopyInObj<abi::Timespec>(addr));
  if (ts.sec < 0 || ts.nsec < 0 || ts.nsec >= 1000000000) return Errno{EINVAL};
  return std::optional<absl::Time>(absl::Now() + absl::Seconds(ts.sec) +
                                   absl::Nanoseconds(ts.nsec));
}

// Linux writes the unslept time back for ppoll/pselect6/select (poll_select_finish). A
// fault there turns a restart into EINTR, since the restart could not resume correctly.
template <typename Result>
Result WriteBackRemaining(Task& task, mm::GuestAddr addr, std::optional<absl::Time> deadline,
                          bool timeval, Result r) {
  if (addr.IsNull() || !deadline) return r;
  absl::Duration left = std::max(*deadline - absl::Now(), absl::ZeroDuration());
  int64_t sec = absl::IDivDuration(left, absl::Seconds(1), &left);
  SysStatus st;
  if (timeval) {
    st = task.mm().CopyOutObj(addr, abi::Timeval{sec, absl::ToInt64Microseconds(left)});
  } else {
    st = task.mm().CopyOutObj(addr, abi::Timespec{sec, absl::ToInt64Nanoseconds(left)});
  }
  if (!st.ok() && !r.ok() && r.error() == kERestartNoHand) return Errno{EINTR};
  return r;
}

}  // namespace

// ppoll/pselect6 (and epoll_pwait): installs the temporary mask; the saved one is
// restored by signal delivery if we are interrupted, or by the caller otherwise
// (Linux's restore_saved_sigmask_unless).
SysStatus SwapInMask(Task& task, mm::GuestAddr mask_addr, uint64_t size) {
  if (mask_addr.IsNull()) return SysOk();
  if (size != sizeof(uint64_t)) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(uint64_t mask, task.mm().CopyInObj<uint64_t>(mask_addr));
  task.sig->saved_mask = task.sig->mask;
  task.sig->has_saved_mask = true;
  task.sig->mask = mask & ~kUnblockable;
  return SysOk();
}

namespace {

void RestoreMaskUnlessInterrupted(Task& task, mm::GuestAddr mask_addr, const SysResult<int>& r) {
  if (mask_addr.IsNull() || !task.sig->has_saved_mask) return;
  if (!r.ok() && r.error() == kERestartNoHand) return;
  task.sig->mask = task.sig->saved_mask;
  task.sig->has_saved_mask = false;
}

SysResult<int> PollArray(Task& task, mm::GuestAddr addr, uint64_t nfds,
                         std::optional<absl::Time> deadline) {
  if (nfds > task.fds().limit()) return Errno{EINVAL};
  std::vector<abi::Pollfd> pfds(nfds);
  if (nfds > 0) RETURN_IF_ERRNO(task.mm().CopyIn(addr, pfds.data(), nfds * sizeof(abi::Pollfd)));
  std::vector<PollEntry> entries(nfds);
  for (uint64_t i = 0; i < nfds; ++i) {
    entries[i] = {pfds[i].fd, static_cast<uint16_t>(pfds[i].events) | kAlwaysPolled, 0, 0};
  }
  ASSIGN_OR_RETURN_ERRNO(int n, DoPoll(task, entries, deadline));
  for (uint64_t i = 0; i < nfds; ++i) pfds[i].revents = static_cast<int16_t>(entries[i].revents);
  if (nfds > 0) RETURN_IF_ERRNO(task.mm().CopyOut(addr, pfds.data(), nfds * sizeof(abi::Pollfd)));
  return n;
}

// --- select ---

constexpr int kBitsPerWord = 64;

SysResult<int> SelectSets(Task& task, int nfds, mm::GuestAddr in_addr, mm::GuestAddr out_addr,
                          mm::GuestAddr ex_addr, std::optional<absl::Time> deadline) {
  if (nfds < 0) return Errno{EINVAL};
  // Linux clamps to the FD table's size; ours is bounded by the limit.
  if (static_cast<uint64_t>(nfds) > task.fds().limit()) nfds = static_cast<int>(task.fds().limit());
  size_t words = (static_cast<size_t>(nfds) + kBitsPerWord - 1) / kBitsPerWord;
  std::vector<uint64_t> sets[3];
  const mm::GuestAddr addrs[3] = {in_addr, out_addr, ex_addr};
  const EventMask masks[3] = {kSelectIn, kSelectOut, kSelectEx};
  for (int s = 0; s < 3; ++s) {
    sets[s].assign(words, 0);
    if (!addrs[s].IsNull() && words > 0) {
      RETURN_IF_ERRNO(task.mm().CopyIn(addrs[s], sets[s].data(), words * sizeof(uint64_t)));
    }
  }
  std::vector<PollEntry> entries;
  for (int fd = 0; fd < nfds; ++fd) {
    EventMask ev = 0;
    int in_sets = 0;
    for (int s = 0; s < 3; ++s) {
      if (sets[s][fd / kBitsPerWord] & (1ull << (fd % kBitsPerWord))) {
        ev |= masks[s];
        in_sets |= 1 << s;
      }
    }
    if (ev == 0) continue;
    // A closed FD in any set is EBADF for select (poll reports POLLNVAL instead).
    if (!task.fds().Get(fd).ok()) return Errno{EBADF};
    entries.push_back({fd, ev, 0, in_sets});
  }
  ASSIGN_OR_RETURN_ERRNO(int ignored, DoPoll(task, entries, deadline));
  (void)ignored;
  for (auto& s : sets) std::fill(s.begin(), s.end(), 0);
  int total = 0;
  for (const PollEntry& e : entries) {
    for (int s = 0; s < 3; ++s) {
      // Report an fd only in the sets it was in (POLLERR belongs to two masks).
      if (!(e.select_sets & (1 << s)) || (e.revents & masks[s]) == 0) continue;
      sets[s][e.fd / kBitsPerWord] |= 1ull << (e.fd % kBitsPerWord);
      ++total;
    }
  }
  for (int s = 0; s < 3; ++s) {
    if (!addrs[s].IsNull() && words > 0) {
      RETURN_IF_ERRNO(task.mm().CopyOut(addrs[s], sets[s].data(), words * sizeof(uint64_t)));
    }
  }
  return total;
}

}  // namespace

SyscallResult SysPoll(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(
      int n, PollArray(task, args.ptr(0), args.u32(1), DeadlineFromMillis(args.i32(2))));
  return static_cast<uint64_t>(n);
}

SyscallResult SysPpoll(Task& task, const SyscallArgs& args) {
  mm::GuestAddr ts_addr = args.ptr(2), mask_addr = args.ptr(3);
  ASSIGN_OR_RETURN_ERRNO(std::optional<absl::Time> deadline, DeadlineFromTimespec(task, ts_addr));
  RETURN_IF_ERRNO(SwapInMask(task, mask_addr, args.u64(4)));
  SysResult<int> r = PollArray(task, args.ptr(0), args.u32(1), deadline);
  r = WriteBackRemaining(task, ts_addr, deadline, /*timeval=*/false, std::move(r));
  RestoreMaskUnlessInterrupted(task, mask_addr, r);
  if (!r.ok()) return Errno{r.error()};
  return static_cast<uint64_t>(r.value());
}

SyscallResult SysSelect(Task& task, const SyscallArgs& args) {
  mm::GuestAddr tv_addr = args.ptr(4);
  std::optional<absl::Time> deadline;
  if (!tv_addr.IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(abi::Timeval tv, task.mm().CopyInObj<abi::Timeval>(tv_addr));
    if (tv.sec < 0 || tv.usec < 0) return Errno{EINVAL};
    // Linux normalizes usec >= 1e6 into seconds rather than failing.
    deadline = absl::Now() + absl::Seconds(tv.sec) + absl::Microseconds(tv.usec);
  }
  SysResult<int> r = SelectSets(task, args.i32(0), args.ptr(1), args.ptr(2), args.ptr(3), deadline);
  r = WriteBackRemaining(task, tv_addr, deadline, /*timeval=*/true, std::move(r));
  if (!r.ok()) return Errno{r.error()};
  return static_cast<uint64_t>(r.value());
}

SyscallResult SysPselect6(Task& task, const SyscallArgs& args) {
  mm::GuestAddr ts_addr = args.ptr(4);
  ASSIGN_OR_RETURN_ERRNO(std::optional<absl::Time> deadline, DeadlineFromTimespec(task, ts_addr));
  // The 6th argument points at {const sigset_t* ss; size_t ss_len;}.
  mm::GuestAddr mask_addr;
  uint64_t mask_size = 0;
  if (!args.ptr(5).IsNull()) {
    struct {
      uint64_t ss;
      uint64_t len;
    } ssd;
    RETURN_IF_ERRNO(task.mm().CopyIn(args.ptr(5), &ssd, sizeof(ssd)));
    mask_addr = mm::GuestAddr(ssd.ss);
    mask_size = ssd.len;
  }
  RETURN_IF_ERRNO(SwapInMask(task, mask_addr, mask_size));
  SysResult<int> r = SelectSets(task, args.i32(0), args.ptr(1), args.ptr(2), args.ptr(3), deadline);
  r = WriteBackRemaining(task, ts_addr, deadline, /*timeval=*/false, std::move(r));
  RestoreMaskUnlessInterrupted(task, mask_addr, r);
  if (!r.ok()) return Errno{r.error()};
  return static_cast<uint64_t>(r.value());
}

}  // namespace usentry::sentry
