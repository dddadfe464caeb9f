// ThreadGroup helpers.
#include "sentry/kernel/thread_group.h"

#include "sentry/kernel/limits.h"
#include "sentry/mm/memory_manager.h"

namespace usentry::sentry {

int32_t ThreadGroup::ppid() const {
  std::shared_ptr<ThreadGroup> p = parent.lock();
  return p ? p->pid() : 0;
}

absl::Duration ThreadGroup::CpuTime() const {
  std::optional<absl::Duration> live;
  if (std::shared_ptr<mm::MemoryManager> m = cpu_mm.lock()) live = m->AppCpuTime();
  if (!live && !cpu_known) return absl::Microseconds(app_wall_us);
  return cpu_done + live.value_or(absl::ZeroDuration());
}

void ThreadGroup::AccountImage(int memfd, bool note_rss) {
  if (note_rss) NoteMaxRss(memfd, *this);
  std::shared_ptr<mm::MemoryManager> m = cpu_mm.lock();
  cpu_mm.reset();
  if (!m) return;
  if (std::optional<absl::Duration> d = m->AppCpuTime()) {
    cpu_done += *d;
    cpu_known = true;
  }
}

}  // namespace usentry::sentry
