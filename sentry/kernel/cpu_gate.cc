// CpuGate (see cpu_gate.h).
#include "sentry/kernel/cpu_gate.h"

#include <algorithm>

#include "base/cpu_pin.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"

namespace usentry::sentry {
namespace {

bool MustStop(const Task& t) { return t.killed || t.exiting || t.thread_group().exiting; }

}  // namespace

CpuGate::CpuGate(int slots, absl::Duration slice, absl::Duration wakeup_granularity)
    : slots_(std::max(slots, 1)),
      slice_(slice),
      wakeup_granularity_(wakeup_granularity),
      free_(slots_) {}

bool CpuGate::Enter(Task& t) {
  CpuSlot& s = t.cpu_slot;
  const bool woke = !s.held;  // from a sleep (or its first run), not back from app code
  if (s.held) {
    if (queue_.empty()) {
      s.yield = false;  // nobody to yield to (a waiter that asked was killed)
      return true;
    }
    if (!s.yield && absl::Now() - s.since < slice_) return true;
    Leave(t);  // the first waiter runs; this task queues behind the others
  }
  if (free_ > 0 && queue_.empty()) {
    --free_;
    Grant(t);
    return true;
  }
  s.queued = true;
  queue_.push_back(&t);
  // Its stub thread need not spin for the next resume, nor count as a running thread;
  // its own thread, held for its gofer calls (base/cpu_pin.h), may wake on any CPU.
  if (t.ctx) t.ctx->WillBlock();
  ReleaseThreadCpu();
  if (woke) PreemptLongestRunning(absl::Now(), wakeup_granularity_);
  while (!s.held) {
    if (MustStop(t)) {
      queue_.erase(std::find(queue_.begin(), queue_.end(), &t));
      s.queued = false;
      return false;
    }
    // Task::Interrupt wakes this wait too (a kill); a grant signals it.
    if (t.cv.WaitWithDeadline(&t.kernel().mu, NextDeadline()) && !s.held) {
      PreemptExpired(absl::Now());
    }
  }
  // Its slice begins now, not at the grant: on a busy host the wake-up may take longer
  // than a slice, and a request to yield made meanwhile found no app code to interrupt.
  s.since = absl::Now();
  s.yield = false;
  return true;
}

void CpuGate::Leave(Task& t) {
  CpuSlot& s = t.cpu_slot;
  if (!s.held) return;
  s.held = false;
  s.yield = false;
  holders_.erase(std::find(holders_.begin(), holders_.end(), &t));
  if (queue_.empty()) {
    ++free_;
    return;
  }
  Task* next = queue_.front();
  queue_.pop_front();
  Grant(*next);
  next->cv.Signal();
}

void CpuGate::Yield(Task& t) {
  if (t.cpu_slot.held && !queue_.empty()) t.cpu_slot.yield = true;
}

void CpuGate::Grant(Task& t) {
  CpuSlot& s = t.cpu_slot;
  s.held = true;
  s.queued = false;
  s.yield = false;
  s.since = absl::Now();
  holders_.push_back(&t);
}

absl::Time CpuGate::NextDeadline() const {
  absl::Time end = absl::InfiniteFuture();
  for (const Task* h : holders_) {
    const CpuSlot& s = h->cpu_slot;
    end = std::min(end, (s.yield ? s.asked : s.since) + slice_);
  }
  return end;
}

void CpuGate::PreemptLongestRunning(absl::Time now, absl::Duration ran) {
  Task* longest = nullptr;
  for (Task* h : holders_) {
    if (h->cpu_slot.yield) return;  // one already on its way out
    if (longest == nullptr || h->cpu_slot.since < longest->cpu_slot.since) longest = h;
  }
  if (longest == nullptr || now - longest->cpu_slot.since < ran) return;
  longest->cpu_slot.yield = true;
  longest->cpu_slot.asked = now;
  longest->Interrupt();
}

void CpuGate::PreemptExpired(absl::Time now) {
  for (Task* h : holders_) {
    CpuSlot& s = h->cpu_slot;
    if (now - (s.yield ? s.asked : s.since) < slice_) continue;
    s.yield = true;
    s.asked = now;
    // Out of app code, if it is there; a holder in a handler sees the flag on its way
    // back (Enter).
    h->Interrupt();
  }
}

}  // namespace usentry::sentry
