// Pending-signal queues and default actions.
#include "sentry/signal/signal.h"

#include <poll.h>

#include <algorithm>
#include <cstring>

namespace usentry::sentry {

void PendingSignals::Enqueue(const siginfo_t& info) {
  int sig = info.si_signo;
  if (sig < 1 || sig > kNumSignals) return;
  // Standard signals do not queue: a second instance while one is pending is lost.
  if (sig < SIGRTMIN && Has(sig)) return;
  queue_.push_back(info);
  set_ |= SigBit(sig);
  SignalEnqueueQueue().Notify(POLLIN);
}

siginfo_t* PendingSignals::Find(int sig, absl::FunctionRef<bool(const siginfo_t&)> pred) {
  if (sig < 1 || sig > kNumSignals) return nullptr;
  for (siginfo_t& info : queue_) {
    if (info.si_signo == sig && pred(info)) return &info;
  }
  return nullptr;
}

WaitQueue& SignalEnqueueQueue() {
  static WaitQueue* q = new WaitQueue;  // lives as long as the sentry process
  return *q;
}

siginfo_t PendingSignals::Dequeue(int sig) {
  auto first = std::find_if(queue_.begin(), queue_.end(),
                            [sig](const siginfo_t& i) { return i.si_signo == sig; });
  siginfo_t info = *first;
  auto rest = queue_.erase(first);
  if (std::none_of(rest, queue_.end(), [sig](const siginfo_t& i) { return i.si_signo == sig; })) {
    set_ &= ~SigBit(sig);
  }
  return info;
}

void PendingSignals::Discard(int sig) {
  std::erase_if(queue_, [sig](const siginfo_t& i) { return i.si_signo == sig; });
  set_ &= ~SigBit(sig);
}

}  // namespace usentry::sentry
