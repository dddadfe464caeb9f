// The timer thread and timer arming.
#include "sentry/kernel/timers.h"

#include <algorithm>

namespace usentry::sentry {

Timer::Timer(TimerQueue& queue, Callback cb) : queue_(queue), cb_(std::move(cb)) {
  id_ = queue_.next_id_++;
}

void Timer::Arm(absl::Time deadline, absl::Duration interval) {
  if (armed_) queue_.Remove(*this);
  deadline_ = deadline;
  interval_ = interval > absl::ZeroDuration() ? std::max(interval, kMinTimerInterval)
                                              : absl::ZeroDuration();
  queue_.Insert(*this);
}

void Timer::Disarm() {
  if (armed_) queue_.Remove(*this);
}

absl::Duration Timer::Remaining(absl::Time now) const {
  if (!armed_) return absl::ZeroDuration();
  return std::max(deadline_ - now, absl::Nanoseconds(1));
}

TimerQueue::TimerQueue(absl::Mutex* mu) : mu_(mu) {}

TimerQueue::~TimerQueue() {
  {
    absl::MutexLock l(mu_);
    stop_ = true;
    cv_.Signal();
  }
  if (thread_.joinable()) thread_.join();
  // Dropping the references may run owners' destructors: no lock is needed any more.
  armed_.clear();
}

std::shared_ptr<Timer> TimerQueue::NewTimer(Timer::Callback cb) {
  return std::make_shared<Timer>(*this, std::move(cb));
}

void TimerQueue::Insert(Timer& t) {
  t.armed_ = true;
  armed_[t.id_] = t.shared_from_this();
  bool earliest = order_.empty() || t.deadline_ < order_.begin()->first;
  order_.insert({t.deadline_, t.id_});
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { Run(); });
  } else if (earliest) {
    cv_.Signal();
  }
}

void TimerQueue::Remove(Timer& t) {
  t.armed_ = false;
  order_.erase({t.deadline_, t.id_});
  // Keep `t` alive until the caller is done with it: erase moves the reference out.
  std::shared_ptr<Timer> ref;
  auto it = armed_.find(t.id_);
  if (it != armed_.end()) {
    ref = std::move(it->second);
    armed_.erase(it);
  }
}

void TimerQueue::Run() {
  absl::MutexLock l(mu_);
  while (!stop_) {
    if (order_.empty()) {
      cv_.Wait(mu_);
      continue;
    }
    absl::Time next = order_.begin()->first;
    absl::Time now = absl::Now();
    if (next > now) {
      cv_.WaitWithDeadline(mu_, next);
      continue;
    }
    FireExpired(now);
  }
}

void TimerQueue::FireExpired(absl::Time now) {
  while (!order_.empty() && order_.begin()->first <= now) {
    uint64_t id = order_.begin()->second;
    std::shared_ptr<Timer> t = armed_[id];
    uint64_t expirations = 1;
    if (t->interval_ > absl::ZeroDuration()) {
      // Re-arm first, counting whole periods missed since the deadline.
      int64_t missed = (now - t->deadline_) / t->interval_;
      expirations += static_cast<uint64_t>(missed);
      t->Arm(t->deadline_ + t->interval_ * (missed + 1), t->interval_);
    } else {
      Remove(*t);
    }
    if (!t->cb_(expirations)) t->Disarm();
  }
}

}  // namespace usentry::sentry
