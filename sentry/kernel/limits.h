// LimitMonitor: enforcement and reporting of the run's hard limits (--memory,
// --max-tasks, --cpu-time, ...; semantics in docs/limits.md) that are not a simple check
// at one syscall: the sandbox-wide counters, the watchdog that samples resident memory
// and app CPU time, and the rate-limited "limit" audit records.
//
// All methods require Kernel::mu.
#ifndef USENTRY_SENTRY_KERNEL_LIMITS_H_
#define USENTRY_SENTRY_KERNEL_LIMITS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace usentry::sentry {

class Kernel;
class Task;
class Timer;
class ThreadGroup;
namespace mm {
class MemoryManager;
}

// How often the watchdog samples memory and CPU: the overshoot bound of both limits.
inline constexpr absl::Duration kLimitSamplePeriod = absl::Milliseconds(20);
// "limit" records written per limit name; later hits are only counted (run_end).
inline constexpr uint64_t kLimitRecordsPerName = 5;
// The exit status of a run killed for --cpu-time: 128 + SIGXCPU, as a shell reports a
// process that RLIMIT_CPU killed.
inline constexpr int kExitCpuTime = 128 + 24;

class LimitMonitor {
 public:
  explicit LimitMonitor(Kernel& k);
  ~LimitMonitor();

  // Arms the watchdog (memory and CPU sampling). Called once the first task exists.
  void Start();

  // Records that `limit` was hit: an audit "limit" record {limit, value, pid, action} for
  // the first kLimitRecordsPerName hits of each limit, a count of all (HitCounts).
  // Returns whether this hit was recorded (callers add their own lines on the same terms).
  bool Hit(absl::string_view limit, nlohmann::json value, int pid, absl::string_view action);
  // {limit: hits} for run_end.
  nlohmann::json HitCounts() const;

  // --- memory ---
  // Bytes of app memory resident now (allocated pages of the memory file). Every call
  // also updates the peak (so short runs that end between samples have one).
  uint64_t ResidentBytes() const;
  uint64_t peak_memory_bytes() const { return peak_memory_; }
  // Whether `len` more bytes of accountable memory can ever fit under --memory; on
  // false the caller fails with ENOMEM (and this records the hit).
  bool MemoryMayGrow(const Task& t, uint64_t len, absl::string_view what);

  // --- tasks ---
  // Whether one more task may be created (threads count); records the hit when not.
  bool TaskMayStart(const Task& parent);

  // --- CPU ---
  // App CPU time so far: time app threads spent running app code (finished stretches
  // plus those in progress), live and exited tasks.
  absl::Duration AppCpuTime() const;
  void AddAppTime(absl::Duration d) { app_time_ += d; }
  // Set when --cpu-time killed the sandbox (the run exits kExitCpuTime).
  bool cpu_time_exceeded() const { return cpu_exceeded_; }
  // SIGKILLs every process of the sandbox (--cpu-time, --timeout). Kernel lock held.
  void KillAll();

 private:
  void Sample();
  void KillForMemory(uint64_t resident);
  // ResidentBytes once the freed pages that wait to go back (MemoryFile::ReclaimSome)
  // are gone: they are the app's no more, so a limit is compared against this.
  uint64_t ResidentBytesWithoutFreed();

  Kernel& k_;
  std::shared_ptr<Timer> watchdog_;
  std::map<std::string, uint64_t> hits_;
  mutable uint64_t peak_memory_ = 0;
  int oom_victim_ = 0;  // PID being killed for memory, until it is gone
  absl::Duration app_time_;
  bool cpu_exceeded_ = false;
};

// Bytes of the memory file allocated in [offset, offset+len) (holes skipped).
uint64_t ResidentInRange(int memfd, uint64_t offset, uint64_t len);
// Raises tg.max_rss_bytes to the resident bytes of its own address space now (what its
// VMAs hold in the memory file, shared pages included, as Linux's RSS; host-file pages
// mapped straight from the page cache are not seen). Called where a figure is reported
// (getrusage), before exec replaces the image and when the group's last thread exits,
// so the maximum is of those moments: it can miss a peak freed again in between.
void NoteMaxRss(int memfd, ThreadGroup& tg);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_LIMITS_H_
