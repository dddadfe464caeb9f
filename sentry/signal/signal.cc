// Pending-signal queues and default actions.
#include "sentry/signal/signal.h"

#include <cstring>

namespace usentry::sentry {

void PendingSignals::Enqueue(const siginfo_t& info) {
  int sig = info.si_signo;
  if (sig < 1 || sig > kNumSignals) return;
  // Standard signals do not queue: a second instance while one is pending is lost.
  if (sig < SIGRTMIN && Has(sig)) return;
  queues_[sig].push_back(info);
  set_ |= SigBit(sig);
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
