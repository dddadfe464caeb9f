// The task run loop and syscall dispatch.
//
// Each task owns one host thread. The loop: deliver pending signals, release the kernel
// lock, Switch into app code, retake the lock, handle the trap. The platform address
// space is created lazily here because the ptrace platform requires the thread that
// created a stub to be the one that switches into it.
#include "sentry/kernel/task_run.h"

#include <signal.h>
#include <sys/mman.h>

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/cycle_clock_calibration.h"
#include "base/phases.h"
#include "base/tick_clock.h"
#include "sentry/fsimpl/procfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/limits.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/task_exit.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/deliver.h"
#include "sentry/syscalls/strace.h"
#include "sentry/syscalls/table.h"

namespace usentry::sentry {

namespace {

SyscallArgs ArgsFrom(const user_regs_struct& gp) {
  SyscallArgs a;
  a.nr = static_cast<int>(gp.orig_rax);
  a.a[0] = gp.rdi;
  a.a[1] = gp.rsi;
  a.a[2] = gp.rdx;
  a.a[3] = gp.r10;
  a.a[4] = gp.r8;
  a.a[5] = gp.r9;
  return a;
}

bool IsRestartErrno(int e) {
  return e == kERestartSys || e == kERestartNoIntr || e == kERestartNoHand ||
         e == kERestartRestartBlock;
}

// Syscalls that do not return to the caller on success: strace prints them at entry.
bool NoReturn(int nr) {
  return nr == 59 /*execve*/ || nr == 322 /*execveat*/ || nr == 60 /*exit*/ ||
         nr == 231 /*exit_group*/ || nr == 15 /*rt_sigreturn*/;
}

// Raw app bytes for strace: up to `max`, stopping early at the first unreadable page.
// The formatter decides where a string ends.
std::optional<std::string> ReadAppBytes(Task& t, uint64_t addr, size_t max) {
  std::string out;
  while (out.size() < max) {
    size_t chunk = std::min<size_t>(max - out.size(), mm::kPageSize - (addr & (mm::kPageSize - 1)));
    std::string buf(chunk, '\0');
    if (!t.mm().CopyIn(mm::GuestAddr(addr), buf.data(), chunk).ok()) break;
    out += buf;
    addr += chunk;
  }
  if (out.empty() && max > 0) return std::nullopt;
  return out;
}

void StracePrint(Task& t, const std::string& line) {
  fprintf(stderr, "[pid %5d] %s\n", t.tid(), line.c_str());
}

// Consecutive faults at one address the memory manager found stale (the access was
// allowed) before the fault counts as real: ptrace does not say whether a fault was a
// write, so a write to read-only memory there looks like a stale read fault.
constexpr int kMaxStaleFaults = 3;

// A fault in app code: a copy-on-write write (the app retries the instruction) or the
// matching synchronous signal.
void HandleFault(Task& t, const platform::SwitchResult& r, int& stale) {
  if (r.kind == platform::SwitchKind::kFault &&
      (r.info.si_signo == SIGSEGV || r.info.si_signo == 0)) {
    using FaultResult = mm::MemoryManager::FaultResult;
    switch (t.mm().HandleFault(r.fault_addr, r.fault_write, r.fault_exec)) {
      case FaultResult::kResolved:
        stale = 0;
        return;
      case FaultResult::kStale:
        if (++stale <= kMaxStaleFaults) return;
        break;
      case FaultResult::kNoMemory:
        // Linux's OOM killer: no copy of the page can be made.
        t.kernel().limits().MemoryMayGrow(t, mm::kPageSize, "a copy-on-write copy");
        ExitGroup(t.thread_group(), SIGKILL);
        return;
      case FaultResult::kSignal:
        break;
    }
  }
  stale = 0;
  siginfo_t info = r.info;
  if (info.si_signo == 0) {
    info.si_signo = SIGSEGV;
    info.si_code = SEGV_MAPERR;
  }
  info.si_addr = reinterpret_cast<void*>(r.fault_addr);
  ForceSignal(t, info);
}

}  // namespace

int HandleSyscall(Task& t) {
  user_regs_struct& gp = t.raw_regs().gp;  // the number, arguments and result suffice
  SyscallArgs args = ArgsFrom(gp);
  const SyscallInfo* info = LookupSyscall(args.nr);
  const bool strace = t.kernel().options().strace;
  auto read_mem = [&t](uint64_t addr, size_t max) { return ReadAppBytes(t, addr, max); };

  // Calls that may not return (execve, exit, rt_sigreturn) are formatted before they run:
  // afterwards their argument memory may be gone.
  std::string entry;
  if (strace && info && NoReturn(args.nr)) entry = FormatSyscallEntry(*info, args.a, read_mem);
  t.regs_replaced = false;
  SyscallResult r = Errno{ENOSYS};
  t.kernel().CountSyscall(static_cast<int>(args.nr));
  bool resumed = false;
  if (t.restart_resume_nr >= 0) {  // see Task::restart_block
    const bool resume = t.restart_resume_nr == args.nr && t.restart_block;
    t.restart_resume_nr = -1;
    auto block = std::move(t.restart_block);
    t.restart_block = nullptr;
    if (resume) {
      r = block(t);
      resumed = true;
    }
  }
  if (resumed) {
    // the interrupted sleep went on
  } else if (info && info->handler) {
    r = info->handler(t, args);
  } else {
    t.kernel().NoteUnsupported(t.thread_group().pid(), static_cast<int>(args.nr));
  }
  int64_t raw = r.ok() ? static_cast<int64_t>(r.value()) : -static_cast<int64_t>(r.error());
  if (strace) {
    if (!entry.empty() && (t.regs_replaced || t.killed || t.exiting || t.thread_group().exiting)) {
      // execve succeeded (0), rt_sigreturn restored rax, exit/exit_group never return (?).
      std::string result = !t.regs_replaced ? "?"
                           : args.nr == 15  ? absl::StrCat(static_cast<int64_t>(gp.rax))
                                            : "0";
      StracePrint(t, absl::StrCat(entry, " = ", result));
    } else if (info) {
      StracePrint(t, FormatSyscallExit(*info, args.a, raw, read_mem));
    } else {
      StracePrint(t, absl::StrCat("syscall_", args.nr, "(...) = ", raw));
    }
  }
  if (t.regs_replaced) return 0;
  gp.rax = static_cast<uint64_t>(raw);
  return (!r.ok() && IsRestartErrno(r.error())) ? r.error() : 0;
}

// While this task's app code runs, the platform may spend its wait here (IdleWork):
// filling this task's data segments ahead (MemoryManager::FillAhead), which the app is
// about to touch, else giving back the pages of freed ranges (MemoryFile::ReclaimSome:
// any task's, the file is the sandbox's), which nothing waits for. Used only by the
// task's own thread, inside its Switch: the task's mm is replaced (exec) or dropped
// (exit) on this thread too, never meanwhile, so it may be read here without the kernel
// lock.
class TaskIdleWork final : public platform::IdleWork {
 public:
  explicit TaskIdleWork(Task& t) : t_(t) {}
  bool Pending() const override {
    return t_.mm().fill_ahead_pending() || t_.kernel().memory_file().reclaim_pending();
  }
  bool Step() override {
    if (t_.mm().fill_ahead_pending() && FillAheadStep()) return true;
    // One fault chunk's worth (~15 us): a step holds up the next trap.
    return t_.kernel().memory_file().ReclaimSome(mm::kFaultChunk);
  }

 private:
  bool FillAheadStep() {
    Kernel& k = t_.kernel();
    if (!k.mu.TryLock()) return false;  // a handler of another task: try again later
    // Pages filled ahead count as resident: under a --memory limit, only while a whole
    // budget of them still fits, so that they never bring the app to it.
    const uint64_t limit = k.options().limits.memory_bytes;
    const bool room = limit == 0 || k.limits().ResidentBytes() + mm::kFillAheadBudget <= limit;
    const bool did = room && t_.mm().FillAhead();
    k.mu.Unlock();
    return did;
  }

  Task& t_;
};

void RunTask(Task* t) {
  Kernel& k = t->kernel();
  TaskIdleWork idle_work(*t);
  fsimpl::SetCurrentTask(t);  // /proc/self resolves to the task of this host thread
  // A clone's context comes made; the others are made below (first run, and again after
  // an exec dropped a shared one).
  if (t->ctx) t->ctx->SetIdleWork(&idle_work);
  // Early in a run another sentry thread may wait for Kernel::mu too; queueing behind it
  // would wait for Abseil's clock calibration (base/cycle_clock_calibration.h).
  LockWithoutCalibrationWait(k.mu);
  int restart = 0;
  int stale_faults = 0;  // see HandleFault
  while (true) {
    if (t->killed || t->exiting || t->thread_group().exiting) break;
    if (!k.cpu_gate().Enter(*t)) break;
    DeliverSignals(*t, restart);
    restart = 0;
    if (t->killed || t->exiting || t->thread_group().exiting) break;
    if (t->thread_group().stopped) {
      ParkWhileStopped(*t);
      continue;  // deliver what arrived meanwhile
    }

    if (!t->ctx) {
      auto ctx = k.platform().NewContext();
      if (!ctx.ok()) {
        fprintf(stderr, "usentry: platform context: %s\n", ctx.status().ToString().c_str());
        ExitGroup(t->thread_group(), SIGKILL);
        break;
      }
      t->ctx = std::move(ctx).value();
      t->ctx->SetIdleWork(&idle_work);
    }
    mm::MemoryManager& mm = t->mm();
    if (!mm.address_space()) {
      auto as = k.platform().NewAddressSpace();
      absl::Status s = as.ok() ? mm.Activate(std::move(as).value()) : as.status();
      if (!s.ok()) {
        fprintf(stderr, "usentry: creating address space: %s\n", s.ToString().c_str());
        ExitGroup(t->thread_group(), SIGKILL);
        break;
      }
      Phase("address-space-ready");
    }
    platform::AddressSpace* as = mm.address_space();
    // Release, not seq_cst: its readers hold Kernel::mu too, and an exchange here and
    // below sat on the path from a trap to the resume.
    t->in_app.store(true, std::memory_order_release);
    k.mu.Unlock();
    absl::StatusOr<platform::SwitchResult> sw = t->ctx->Switch(*as, t->raw_regs());
    LockWithoutCalibrationWait(k.mu);
    t->in_app.store(false, std::memory_order_release);
    if (!sw.ok()) {
      fprintf(stderr, "usentry: task %d: %s\n", t->tid(), sw.status().ToString().c_str());
      ExitGroup(t->thread_group(), SIGKILL);
      break;
    }
    // App CPU time is the time app code ran between traps (--cpu-time, getrusage).
    const absl::Duration ran = TicksToDuration(sw->ran_ticks);
    k.limits().AddAppTime(ran);
    t->thread_group().app_wall_us += absl::ToInt64Microseconds(ran);
    t->app_time += ran;
    switch (sw->kind) {
      case platform::SwitchKind::kSyscall:
        stale_faults = 0;
        if (sw->unpatchable_site != 0) mm.FillForPatching(sw->unpatchable_site);
        restart = HandleSyscall(*t);
        break;
      case platform::SwitchKind::kFault:
      case platform::SwitchKind::kSignal:
        HandleFault(*t, *sw, stale_faults);
        break;
      case platform::SwitchKind::kInterrupted:
        break;
    }
  }
  k.cpu_gate().Leave(*t);
  TaskExited(*t);  // unregisters and frees t; the lock stays held
  fsimpl::SetCurrentTask(nullptr);
  k.running_threads--;
  k.threads_cv.SignalAll();
  k.mu.Unlock();
}

}  // namespace usentry::sentry
