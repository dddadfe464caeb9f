// Signal state: dispositions (shared per thread group), per-thread masks and alternate
// stacks, and pending sets (per thread and per group). Delivery and frames are in
// deliver.cc / frame_unsafe.cc.
#ifndef USENTRY_SENTRY_SIGNAL_SIGNAL_H_
#define USENTRY_SENTRY_SIGNAL_SIGNAL_H_

#include <signal.h>

#include <array>
#include <cstdint>
#include <vector>

#include "abi/signal.h"
#include "absl/functional/function_ref.h"
#include "sentry/kernel/wait_queue.h"

namespace usentry::sentry {

inline constexpr int kNumSignals = 64;
inline uint64_t SigBit(int sig) { return 1ull << (sig - 1); }
// SIGKILL and SIGSTOP can be neither blocked, caught nor ignored.
inline constexpr uint64_t kUnblockable = (1ull << (SIGKILL - 1)) | (1ull << (SIGSTOP - 1));

// rt_sigaction's kernel struct (x86-64).
using KSigAction = abi::KernelSigaction;

struct SignalHandlers {
  std::array<KSigAction, kNumSignals + 1> actions{};  // indexed by signal number
};

// Pending signals with their siginfo. Standard signals keep one instance, real-time
// signals queue. One list for all signals, in arrival order (as Linux keeps its
// sigqueue): a process has two of these (its own and its thread group's), mostly empty,
// and an array of 65 std::deques allocated ~39 KB for each at creation, ~20 pages that
// every new task then faulted in.
class PendingSignals {
 public:
  uint64_t set() const { return set_; }
  bool Has(int sig) const { return set_ & SigBit(sig); }
  void Enqueue(const siginfo_t& info);
  // Removes and returns the first instance of `sig` (must be pending).
  siginfo_t Dequeue(int sig);
  void Discard(int sig);
  // The first queued instance of `sig` that `pred` accepts, or null. POSIX timers use it
  // to count overruns into the si_overrun of their still-pending signal.
  siginfo_t* Find(int sig, absl::FunctionRef<bool(const siginfo_t&)> pred);

 private:
  uint64_t set_ = 0;
  std::vector<siginfo_t> queue_;
};

struct SignalState {
  uint64_t mask = 0;
  PendingSignals pending;
  stack_t altstack{nullptr, SS_DISABLE, 0};
  // sigsuspend/ppoll/pselect: mask to restore after the handler frame is set up.
  bool has_saved_mask = false;
  uint64_t saved_mask = 0;
};

// Every signal enqueued anywhere notifies this queue with POLLIN: signalfd readiness and
// rt_sigtimedwait wait here for signals that are blocked (and so wake no task).
WaitQueue& SignalEnqueueQueue();

using DefaultAction = abi::SignalDefault;
inline DefaultAction DefaultActionOf(int sig) { return abi::kSignalDefaults[sig]; }

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SIGNAL_SIGNAL_H_
