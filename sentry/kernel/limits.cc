#include "sentry/kernel/limits.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "absl/strings/str_cat.h"
#include "base/tick_clock.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_file.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/deliver.h"

namespace usentry::sentry {

namespace {

std::string Mib(uint64_t bytes) { return absl::StrCat(bytes / policy::kMiB, "MiB"); }

// Resident bytes of one address space's VMAs in the memory file, shared mappings too
// when `shared` (copy-on-write pages still shared with another address space count in
// both, as in Linux's RSS). Without them: about what the OOM killer frees by killing its
// owner (shared mappings survive).
uint64_t Resident(int memfd, const mm::MemoryManager& mm, bool shared) {
  uint64_t total = 0;
  for (const auto& [start, v] : mm.vmas()) {
    if (!v.range || (v.shared && !shared)) continue;
    total += ResidentInRange(memfd, v.range->offset() + v.range_off, v.end - v.start);
  }
  return total;
}

}  // namespace

void NoteMaxRss(int memfd, ThreadGroup& tg) {
  if (std::shared_ptr<mm::MemoryManager> m = tg.cpu_mm.lock()) {
    tg.max_rss_bytes = std::max(tg.max_rss_bytes, Resident(memfd, *m, /*shared=*/true));
  }
}

uint64_t ResidentInRange(int memfd, uint64_t offset, uint64_t len) {
  uint64_t total = 0;
  uint64_t pos = offset, end = offset + len;
  while (pos < end) {
    off_t data = lseek(memfd, static_cast<off_t>(pos), SEEK_DATA);
    if (data < 0 || static_cast<uint64_t>(data) >= end) break;
    off_t hole = lseek(memfd, data, SEEK_HOLE);
    if (hole < 0) break;
    uint64_t stop = std::min<uint64_t>(static_cast<uint64_t>(hole), end);
    total += stop - static_cast<uint64_t>(data);
    pos = stop;
  }
  return total;
}

LimitMonitor::LimitMonitor(Kernel& k) : k_(k) {}

// The kernel's timer queue (whose thread runs the watchdog) is stopped before this is
// destroyed, so the armed watchdog can simply be dropped.
LimitMonitor::~LimitMonitor() = default;

void LimitMonitor::Start() {
  if (watchdog_) return;
  watchdog_ = k_.timer_queue().NewTimer([this](uint64_t) {
    Sample();
    return true;
  });
  watchdog_->Arm(absl::Now() + kLimitSamplePeriod, kLimitSamplePeriod);
}

bool LimitMonitor::Hit(absl::string_view limit, nlohmann::json value, int pid,
                       absl::string_view action) {
  uint64_t& n = hits_[std::string(limit)];
  if (++n > kLimitRecordsPerName) return false;
  nlohmann::json fields = {{"limit", std::string(limit)},
                           {"value", std::move(value)},
                           {"pid", pid},
                           {"action", std::string(action)}};
  if (n == kLimitRecordsPerName) fields["note"] = "further hits of this limit are only counted";
  k_.audit().Emit(audit::kLimit, std::move(fields));
  return true;
}

nlohmann::json LimitMonitor::HitCounts() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, n] : hits_) out[name] = n;
  return out;
}

uint64_t LimitMonitor::ResidentBytes() const {
  struct stat st {};
  if (fstat(k_.memory_file().fd(), &st) != 0) return 0;
  const uint64_t bytes = static_cast<uint64_t>(st.st_blocks) * 512;
  peak_memory_ = std::max(peak_memory_, bytes);
  return bytes;
}

uint64_t LimitMonitor::ResidentBytesWithoutFreed() {
  k_.memory_file().ReclaimAll();  // no lock taken when nothing waits
  return ResidentBytes();
}

bool LimitMonitor::MemoryMayGrow(const Task& t, uint64_t len, absl::string_view what) {
  const uint64_t limit = k_.options().limits.memory_bytes;
  if (limit == 0) return true;
  auto fits = [&](uint64_t resident) { return resident < limit && len <= limit - resident; };
  if (fits(ResidentBytes()) || fits(ResidentBytesWithoutFreed())) return true;
  Hit("memory", limit, t.thread_group().pid(),
      absl::StrCat(what, " of ", len, " bytes failed with ENOMEM"));
  return false;
}

bool LimitMonitor::TaskMayStart(const Task& parent) {
  const uint64_t limit = k_.options().limits.max_tasks;
  if (limit == 0 || k_.tasks().size() < limit) return true;
  Hit("max_tasks", limit, parent.thread_group().pid(), "clone failed with EAGAIN");
  return false;
}

absl::Duration LimitMonitor::AppCpuTime() const {
  absl::Duration total = app_time_;
  const int64_t now = TickNow();
  for (const auto& [tid, t] : k_.tasks()) {
    // t->ctx stays while in_app: only the task's thread replaces it, under Kernel::mu.
    if (!t->in_app.load() || !t->ctx) continue;
    const int64_t since = t->ctx->running_since();
    if (since != 0 && now > since) total += TicksToDuration(now - since);
  }
  return total;
}

void LimitMonitor::Sample() {
  const policy::Limits& l = k_.options().limits;
  uint64_t resident = ResidentBytes();
  if (l.memory_bytes != 0 && resident > l.memory_bytes) resident = ResidentBytesWithoutFreed();
  if (l.memory_bytes != 0 && resident > l.memory_bytes) KillForMemory(resident);
  if (l.cpu_time != absl::ZeroDuration() && !cpu_exceeded_ && AppCpuTime() > l.cpu_time) {
    cpu_exceeded_ = true;
    Hit("cpu_time", absl::ToInt64Milliseconds(l.cpu_time), 0, "killed all processes (SIGKILL)");
    fprintf(stderr, "usentry: cpu time limit %s exceeded: killed all processes\n",
            absl::FormatDuration(l.cpu_time).c_str());
    KillAll();
  }
}

// As the Linux OOM killer: the process whose death frees the most memory dies.
void LimitMonitor::KillForMemory(uint64_t resident) {
  if (oom_victim_ != 0) {
    std::shared_ptr<ThreadGroup> v = k_.FindThreadGroup(oom_victim_);
    if (v && !v->zombie) return;  // still dying: its pages are freed when it is gone
    oom_victim_ = 0;
  }
  const int memfd = k_.memory_file().fd();
  std::set<const mm::MemoryManager*> seen;
  std::shared_ptr<ThreadGroup> victim;
  uint64_t victim_bytes = 0;
  std::string victim_name;
  for (const std::shared_ptr<ThreadGroup>& tg : k_.ThreadGroups()) {
    if (tg->zombie || tg->tasks.empty()) continue;
    Task* leader = tg->tasks.front();
    if (!leader->mm_ptr() || !seen.insert(leader->mm_ptr().get()).second) continue;
    uint64_t bytes = Resident(memfd, leader->mm(), /*shared=*/false);
    if (!victim || bytes > victim_bytes) {
      victim = tg;
      victim_bytes = bytes;
      victim_name = leader->comm;
    }
  }
  if (!victim) return;
  const uint64_t limit = k_.options().limits.memory_bytes;
  oom_victim_ = victim->pid();
  Hit("memory", limit, victim->pid(),
      absl::StrCat("killed pid ", victim->pid(), " (OOM): ", resident,
                   " bytes resident, its share ", victim_bytes));
  fprintf(stderr, "usentry: memory limit %s exceeded: killed pid %d (%s)\n", Mib(limit).c_str(),
          victim->pid(), victim_name.c_str());
  siginfo_t info{};
  info.si_signo = SIGKILL;
  info.si_code = SI_KERNEL;
  SendGroupSignal(*victim, info);
}

void LimitMonitor::KillAll() {
  siginfo_t info{};
  info.si_signo = SIGKILL;
  info.si_code = SI_KERNEL;
  for (const std::shared_ptr<ThreadGroup>& tg : k_.ThreadGroups()) {
    if (!tg->zombie) SendGroupSignal(*tg, info);
  }
}

}  // namespace usentry::sentry
