// Pending-signal queues and default actions.
#include "sentry/signal/signal.h"

#include <poll.h>

#include <cstring>

namespace usentry::sentry {

void PendingSignals::Enqueue(const siginfo_t& info) {
  int sig = info.si_signo;
  if (sig < 1 || sig > kNumSignals) return;
  // Standard signals do not queue: a second instance while one is pending is lost.
  if (sig < SIGRTMIN && Has(sig)) return;
  queues_[sig].push_back(info);
  set_ |= SigBit(sig);
  SignalEnqueueQueue().Notify(POLLIN);
}

siginfo_t* PendingSignals::Find(int sig, absl::FunctionRef<bool(const siginfo_t&)> pred) {
  if (sig < 1 || sig > kNumSignals) return nullptr;
  for (siginfo_t& info : queues_[sig]) {
    if (pred(info)) return &info;
  }
  return nullptr;
}

WaitQueue& SignalEnqueueQueue() {
  static WaitQueue* q = new WaitQueue;  // lives as long as the sentry process
  return *q;
}

siginfo_t PendingSignals::Dequeue(int sig) {
  siginfo_t info = queues_[sig].front();
  queues_[sig].pop_front();
  if (queues_[sig].empty()) set_ &= ~SigBit(sig);
  return info;
}

void PendingSignals::Discard(int sig) {
  queues_[sig].clear();
  set_ &= ~SigBit(sig);
}

}  // namespace usentry::sentry
