// spin_wait: the main thread spins, making no syscall, until a second thread has made
// one and set a flag. On one CPU that finishes only if a thread that never enters the
// kernel is still preempted at the end of its time slice, as the host's scheduler does
// and the sentry's CpuGate must (compat_test.cc, ThreadsOnOneCpuTakeTurns). Prints
// "pid N" (the other thread's getpid) and exits 0.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

int main() {
  // A sleep first: the spin below then starts early in this thread's time slice, so
  // only preemption at the slice's end lets the other thread run.
  usleep(1000);
  std::atomic<int> pid{0};
  std::thread other([&pid] { pid.store(static_cast<int>(getpid()), std::memory_order_release); });
  while (pid.load(std::memory_order_acquire) == 0) {
  }
  other.join();
  printf("pid %d\n", pid.load() == static_cast<int>(getpid()) ? 1 : 0);
  return 0;
}
