// Timers that expire asynchronously: one sentry thread per kernel sleeps until the
// earliest armed deadline and runs the expired timers' callbacks under Kernel::mu.
// alarm/setitimer, POSIX timers and timerfds are built on it.
//
// Ownership: owners hold a shared_ptr<Timer>; while armed the queue holds one too, so a
// timer never disappears under the timer thread. Callbacks must reach their owner
// through weak pointers and return false when it is gone (the timer is then disarmed).
// All methods require Kernel::mu except the TimerQueue constructor/destructor.
//
// Times are absl::Time (the host's realtime clock as absl reads it): the sandbox cannot
// set clocks, so CLOCK_MONOTONIC/BOOTTIME deadlines are converted once when armed.
#ifndef USENTRY_SENTRY_KERNEL_TIMERS_H_
#define USENTRY_SENTRY_KERNEL_TIMERS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace usentry::sentry {

class TimerQueue;

// Periodic intervals are raised to this so a tiny interval cannot make the timer thread
// spin; expirations are still counted from elapsed time.
inline constexpr absl::Duration kMinTimerInterval = absl::Microseconds(50);

class Timer : public std::enable_shared_from_this<Timer> {
 public:
  // Runs on the timer thread with Kernel::mu held; `expirations` >= 1 counts the periods
  // that elapsed since the last call. Returning false disarms the timer.
  using Callback = std::function<bool(uint64_t expirations)>;

  Timer(TimerQueue& queue, Callback cb);
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Arms the timer to expire at `deadline`, then every `interval` (zero: once).
  // Replaces any previous setting.
  void Arm(absl::Time deadline, absl::Duration interval);
  void Disarm();
  bool armed() const { return armed_; }
  // Time until the next expiry (zero when disarmed; at least 1ns while armed).
  absl::Duration Remaining(absl::Time now) const;
  absl::Duration interval() const { return armed_ ? interval_ : absl::ZeroDuration(); }

 private:
  friend class TimerQueue;
  TimerQueue& queue_;
  Callback cb_;
  uint64_t id_;
  bool armed_ = false;
  absl::Time deadline_;
  absl::Duration interval_;
};

class TimerQueue {
 public:
  // `mu` is Kernel::mu; the thread starts at the first Arm.
  explicit TimerQueue(absl::Mutex* mu);
  // Stops and joins the thread. Call without `mu` held.
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  std::shared_ptr<Timer> NewTimer(Timer::Callback cb);

 private:
  friend class Timer;
  void Insert(Timer& t);
  void Remove(Timer& t);
  void Run();
  // Fires every timer whose deadline is <= now.
  void FireExpired(absl::Time now);

  absl::Mutex* mu_;
  absl::CondVar cv_;
  uint64_t next_id_ = 1;
  // Armed timers by deadline (id breaks ties), and the references that keep them alive.
  std::set<std::pair<absl::Time, uint64_t>> order_;
  std::map<uint64_t, std::shared_ptr<Timer>> armed_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_TIMERS_H_
