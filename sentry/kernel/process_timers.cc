// Interval timers and POSIX timers of a process: expiry sends signals.
#include "sentry/kernel/process_timers.h"

#include <sys/time.h>

#include <climits>
#include <vector>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/signal/deliver.h"
#include "sentry/signal/signal.h"

namespace usentry::sentry {

namespace {

// Linux's default limit is RLIMIT_SIGPENDING-bound; a fixed cap keeps a runaway app
// from filling the sentry with timers.
constexpr size_t kMaxPosixTimers = 4096;
constexpr int kItimerSignals[3] = {SIGALRM, SIGVTALRM, SIGPROF};

ProcessTimers& TimersOf(ThreadGroup& tg) {
  if (!tg.timers) tg.timers = std::make_shared<ProcessTimers>();
  return *tg.timers;
}

bool Alive(const std::shared_ptr<ThreadGroup>& tg) { return tg && !tg->exiting && !tg->zombie; }

// The pending queue a timer's signal went to (null if that thread is gone).
PendingSignals* QueueOf(Kernel& k, ThreadGroup& tg, int32_t tid) {
  if (tid == 0) return &tg.pending;
  Task* t = k.FindTask(tid);
  if (!t || &t->thread_group() != &tg) return nullptr;
  return &t->sig->pending;
}

// If the timer's last signal has left the queue (delivered, or discarded), it was
// delivered with queued_overrun: that becomes the value timer_getoverrun reports.
siginfo_t* RefreshQueued(Kernel& k, ThreadGroup& tg, PosixTimer& pt) {
  if (!pt.queued) return nullptr;
  siginfo_t* q = nullptr;
  if (PendingSignals* p = QueueOf(k, tg, pt.queued_to_tid)) {
    q = p->Find(pt.signo,
                [&](const siginfo_t& i) { return i.si_code == SI_TIMER && i.si_timerid == pt.id; });
  }
  if (!q) {
    pt.queued = false;
    pt.last_overrun = pt.queued_overrun;
  }
  return q;
}

// A deleted or re-armed timer's pending signal is not delivered any more (Linux drops
// it at dequeue; here it leaves the queue at once, order of the others kept).
void DropQueued(Kernel& k, ThreadGroup& tg, PosixTimer& pt) {
  if (!RefreshQueued(k, tg, pt)) return;
  PendingSignals* p = QueueOf(k, tg, pt.queued_to_tid);
  std::vector<siginfo_t> keep;
  bool dropped = false;
  while (p->Has(pt.signo)) {
    siginfo_t i = p->Dequeue(pt.signo);
    if (!dropped && i.si_code == SI_TIMER && i.si_timerid == pt.id) {
      dropped = true;
    } else {
      keep.push_back(i);
    }
  }
  for (const siginfo_t& i : keep) p->Enqueue(i);
  pt.queued = false;
}

int32_t SaturatingAdd(int32_t a, uint64_t b) {
  uint64_t sum = static_cast<uint64_t>(a) + b;
  return sum > INT_MAX ? INT_MAX : static_cast<int32_t>(sum);
}

// Expiry of a POSIX timer: queue its signal, or count an overrun into the pending one.
bool PosixTimerExpired(Kernel& k, const std::weak_ptr<ThreadGroup>& weak_tg, int32_t id,
                       uint64_t expirations) {
  std::shared_ptr<ThreadGroup> tg = weak_tg.lock();
  if (!Alive(tg)) return false;
  PosixTimer* pt = FindPosixTimer(*tg, id);
  if (!pt) return false;
  if (pt->notify == SIGEV_NONE) return true;
  if (siginfo_t* q = RefreshQueued(k, *tg, *pt)) {
    q->si_overrun = SaturatingAdd(q->si_overrun, expirations);
    pt->queued_overrun = q->si_overrun;
    return true;
  }
  siginfo_t info{};
  info.si_signo = pt->signo;
  info.si_code = SI_TIMER;
  info.si_timerid = pt->id;
  info.si_overrun = SaturatingAdd(0, expirations - 1);
  info.si_value = pt->value;
  if (pt->notify & SIGEV_THREAD_ID) {
    Task* t = k.FindTask(pt->target_tid);
    if (!t || &t->thread_group() != tg.get()) return true;  // the thread is gone
    SendTaskSignal(*t, info);
    pt->queued_to_tid = pt->target_tid;
  } else {
    SendGroupSignal(*tg, info);
    pt->queued_to_tid = 0;
  }
  pt->queued = true;
  pt->queued_overrun = info.si_overrun;
  return true;
}

}  // namespace

TimerSetting GetItimer(ThreadGroup& tg, int which) {
  if (!tg.timers || !tg.timers->itimers[which]) return {};
  const Timer& t = *tg.timers->itimers[which];
  return {t.Remaining(absl::Now()), t.interval()};
}

TimerSetting SetItimer(Kernel& k, ThreadGroup& tg, int which, const TimerSetting& s) {
  TimerSetting old = GetItimer(tg, which);
  std::shared_ptr<Timer>& timer = TimersOf(tg).itimers[which];
  if (!timer) {
    std::weak_ptr<ThreadGroup> weak = tg.weak_from_this();
    int sig = kItimerSignals[which];
    timer = k.timer_queue().NewTimer([weak, sig](uint64_t) {
      std::shared_ptr<ThreadGroup> g = weak.lock();
      if (!Alive(g)) return false;
      // As Linux, SI_KERNEL: the signal comes from the kernel, not from a timer_create
      // timer. A standard signal: missed periods are not counted.
      siginfo_t info{};
      info.si_signo = sig;
      info.si_code = SI_KERNEL;
      SendGroupSignal(*g, info);
      return true;
    });
  }
  if (s.value <= absl::ZeroDuration()) {
    timer->Disarm();
  } else {
    timer->Arm(absl::Now() + s.value, s.interval);
  }
  return old;
}

SysResult<int32_t> CreatePosixTimer(Kernel& k, ThreadGroup& tg, PosixTimer pt) {
  ProcessTimers& timers = TimersOf(tg);
  if (timers.posix.size() >= kMaxPosixTimers) return Errno{EAGAIN};
  int32_t id = 0;
  while (timers.posix.contains(id)) id++;
  pt.id = id;
  std::weak_ptr<ThreadGroup> weak = tg.weak_from_this();
  pt.timer = k.timer_queue().NewTimer(
      [&k, weak, id](uint64_t n) { return PosixTimerExpired(k, weak, id, n); });
  timers.posix[id] = std::make_shared<PosixTimer>(std::move(pt));
  return id;
}

PosixTimer* FindPosixTimer(ThreadGroup& tg, int32_t id) {
  if (!tg.timers) return nullptr;
  auto it = tg.timers->posix.find(id);
  return it == tg.timers->posix.end() ? nullptr : it->second.get();
}

void ArmPosixTimer(Kernel& k, ThreadGroup& tg, PosixTimer& pt, absl::Time deadline,
                   absl::Duration interval) {
  DropQueued(k, tg, pt);
  pt.last_overrun = 0;  // as Linux: a new setting forgets the old overrun count
  if (deadline == absl::InfinitePast()) {
    pt.timer->Disarm();
    return;
  }
  pt.timer->Arm(deadline, interval);
}

int32_t PosixTimerOverrun(Kernel& k, ThreadGroup& tg, PosixTimer& pt) {
  (void)RefreshQueued(k, tg, pt);
  return pt.last_overrun;
}

SysStatus DeletePosixTimer(Kernel& k, ThreadGroup& tg, int32_t id) {
  if (!tg.timers) return Errno{EINVAL};
  auto it = tg.timers->posix.find(id);
  if (it == tg.timers->posix.end()) return Errno{EINVAL};
  DropQueued(k, tg, *it->second);
  it->second->timer->Disarm();
  tg.timers->posix.erase(it);
  return SysOk();
}

void ProcessTimersOnExec(ThreadGroup& tg) {
  if (!tg.timers) return;
  for (auto& [id, pt] : tg.timers->posix) pt->timer->Disarm();
  tg.timers->posix.clear();
}

void ProcessTimersOnExit(ThreadGroup& tg) {
  if (!tg.timers) return;
  ProcessTimersOnExec(tg);
  for (auto& t : tg.timers->itimers) {
    if (t) t->Disarm();
  }
}

}  // namespace usentry::sentry
