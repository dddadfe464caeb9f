// TestKernel: an in-process kernel with one registered task and 64 KiB of app memory,
// for unit tests of code that needs a Task (files, /proc, poll). There is no platform:
// the task never runs app code. Test-only.
#ifndef USENTRY_SENTRY_KERNEL_TEST_KERNEL_H_
#define USENTRY_SENTRY_KERNEL_TEST_KERNEL_H_

#include <memory>
#include <string>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/guest_addr.h"

namespace usentry::sentry {

class TestKernel {
 public:
  // "/" is an empty tmpfs; the task's root and cwd are "/". `mem_name` names the app
  // memory mapping in /proc/PID/maps. Call without the kernel lock.
  explicit TestKernel(const std::string& mem_name = "");
  // Same, with the kernel's options (e.g. KernelOptions::network).
  explicit TestKernel(KernelOptions opts, const std::string& mem_name = "");
  // Closes the task's FDs and unregisters it (takes the kernel lock).
  ~TestKernel();
  TestKernel(const TestKernel&) = delete;
  TestKernel& operator=(const TestKernel&) = delete;

  Kernel& kernel() { return *kernel_; }
  Task& task() { return *task_; }
  ThreadGroup& thread_group() { return *tg_; }
  // Start of the task's read-write app memory (64 KiB).
  mm::GuestAddr mem() const { return mem_; }

 private:
  std::unique_ptr<Kernel> kernel_;
  std::shared_ptr<ThreadGroup> tg_;
  std::unique_ptr<Task> task_;
  mm::GuestAddr mem_;
};

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_TEST_KERNEL_H_
