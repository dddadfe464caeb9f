// CpuGate (see cpu_gate.h).
#include "sentry/kernel/cpu_gate.h"

#include <algorithm>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"

namespace usentry::sentry {
namespace {

bool MustStop(const Task& t) { return t.killed || t.exiting || t.thread_group().exiting; }

}  // namespace

CpuGate::CpuGate(int slots, absl::Duration slice)
    : slots_(std::max(slots, 1)), slice_(slice), free_(slots_) {}

bool CpuGate::Enter(Task& t) {
  CpuSlot& s = t.cpu_slot;
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
  // Its stub thread need not spin for the next resume, nor count as a running thread.
  if (t.ctx) t.ctx->WillBlock();
  while (!s.held) {
    if (MustStop(t)) {
      queue_.erase(std::find(queue_.begin(), queue_.end(), &t));
      s.queued = false;
      return false;
    }
    // Task::Interrupt wakes this wait too (a kill); a grant signals it.
    std::optional<absl::Time> end = NextSliceEnd();
    if (!end) {
      t.cv.Wait(&t.kernel().mu);
    } else if (t.cv.WaitWithDeadline(&t.kernel().mu, *end) && !s.held) {
      PreemptExpired(absl::Now());
    }
  }
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

std::optional<absl::Time> CpuGate::NextSliceEnd() const {
  std::optional<absl::Time> end;
  for (const Task* h : holders_) {
    if (h->cpu_slot.yield) continue;
    absl::Time e = h->cpu_slot.since + slice_;
    if (!end || e < *end) end = e;
  }
  return end;
}

void CpuGate::PreemptExpired(absl::Time now) {
  for (Task* h : holders_) {
    if (h->cpu_slot.yield || now - h->cpu_slot.since < slice_) continue;
    h->cpu_slot.yield = true;
    // Out of app code, if it is there; a holder in a handler sees the flag on its way
    // back (Enter).
    h->Interrupt();
  }
}

}  // namespace usentry::sentry
