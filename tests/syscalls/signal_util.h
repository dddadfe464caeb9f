// Signal helpers shared by the signal_wait and timer test programs: scoped masks and
// handlers that leave no signal pending and no disposition changed behind them (all
// cases of a program run in one process).
#ifndef USENTRY_TESTS_SYSCALLS_SIGNAL_UTIL_H_
#define USENTRY_TESTS_SYSCALLS_SIGNAL_UTIL_H_

#include <signal.h>
#include <time.h>

#include <initializer_list>

namespace syscall_test {

// Blocks `sigs` for the scope; at the end discards any of them still pending, then
// restores the previous mask.
class ScopedBlock {
 public:
  explicit ScopedBlock(std::initializer_list<int> sigs) {
    sigemptyset(&set_);
    for (int s : sigs) sigaddset(&set_, s);
    sigprocmask(SIG_BLOCK, &set_, &old_);
  }
  ~ScopedBlock() {
    timespec zero{0, 0};
    while (sigtimedwait(&set_, nullptr, &zero) > 0) {
    }
    sigprocmask(SIG_SETMASK, &old_, nullptr);
  }
  const sigset_t& set() const { return set_; }

 private:
  sigset_t set_, old_;
};

// Installs an SA_SIGINFO handler for the scope.
class ScopedHandler {
 public:
  ScopedHandler(int sig, void (*fn)(int, siginfo_t*, void*), int flags = 0) : sig_(sig) {
    struct sigaction sa = {};
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, &old_);
  }
  ~ScopedHandler() { sigaction(sig_, &old_, nullptr); }

 private:
  int sig_;
  struct sigaction old_;
};

inline double MonotonicSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

inline sigset_t SetOf(std::initializer_list<int> sigs) {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : sigs) sigaddset(&s, sig);
  return s;
}

}  // namespace syscall_test

#endif  // USENTRY_TESTS_SYSCALLS_SIGNAL_UTIL_H_
