// Kernel: registries, PID allocation and task threads.
#include "sentry/kernel/kernel.h"

#include <cstdio>
#include <thread>

#include "abi/errno.h"
#include "absl/strings/str_cat.h"
#include "sentry/kernel/limits.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/task_run.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_file.h"
#include "sentry/syscalls/table.h"
#include "sentry/vfs/task_context.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry {

Kernel::Kernel(KernelOptions opts, std::unique_ptr<platform::Platform> platform,
               std::unique_ptr<mm::MemoryFile> mf, std::unique_ptr<vfs::Vfs> vfs)
    : opts_(std::move(opts)),
      platform_(std::move(platform)),
      mf_(std::move(mf)),
      vfs_(std::move(vfs)),
      boot_time_(absl::Now()),
      hostname_(opts_.hostname),
      limits_(std::make_unique<LimitMonitor>(*this)) {
  if (audit().enabled() || audit().explain()) {
    fs_observer_ = vfs::NewAuditObserver(audit(), opts_.masked_paths);
  }
}

Kernel::~Kernel() = default;

int32_t Kernel::AllocatePid() {
  // PIDs are not reused until the space wraps, like Linux (pid_max 4194304).
  for (int tries = 0; tries < (1 << 22); tries++) {
    int32_t pid = next_pid_++;
    if (next_pid_ >= (1 << 22)) next_pid_ = 2;
    if (!tasks_.contains(pid) && !groups_.contains(pid)) return pid;
  }
  return -1;
}

Task* Kernel::FindTask(int32_t tid) {
  auto it = tasks_.find(tid);
  return it == tasks_.end() ? nullptr : it->second;
}

std::shared_ptr<ThreadGroup> Kernel::FindThreadGroup(int32_t pid) {
  auto it = groups_.find(pid);
  return it == groups_.end() ? nullptr : it->second;
}

void Kernel::RegisterTask(Task* t) { tasks_[t->tid()] = t; }
void Kernel::UnregisterTask(Task* t) { tasks_.erase(t->tid()); }

void Kernel::RegisterThreadGroup(std::shared_ptr<ThreadGroup> tg) {
  groups_[tg->pid()] = std::move(tg);
}
void Kernel::UnregisterThreadGroup(int32_t pid) { groups_.erase(pid); }

std::shared_ptr<ThreadGroup> Kernel::init() { return FindThreadGroup(1); }

std::vector<std::shared_ptr<ThreadGroup>> Kernel::ThreadGroups() {
  std::vector<std::shared_ptr<ThreadGroup>> out;
  for (auto& [pid, tg] : groups_) out.push_back(tg);
  return out;
}

void Kernel::StartTask(Task* t) {
  running_threads++;
  std::thread([this, t] { RunTask(t); }).detach();
}

void Kernel::NoteUnsupported(int pid, int nr) {
  if (!unsupported_reported_.insert(nr).second) return;
  const SyscallInfo* info = LookupSyscall(nr);
  std::string name = info ? info->name : absl::StrCat("syscall_", nr);
  audit().Emit(
      audit::kSyscall,
      {{"pid", pid}, {"nr", nr}, {"name", name}, {"status", "unimplemented"}, {"errno", "ENOSYS"}});
  if (!opts_.strace && !opts_.report_unsupported) return;
  fprintf(stderr, "usentry: unsupported syscall %s (%d): returned ENOSYS\n", name.c_str(), nr);
}

void Kernel::NoteBlocked(int pid, int nr, int err) {
  if (!blocked_reported_.insert(nr).second) return;
  const SyscallInfo* info = LookupSyscall(nr);
  std::string name = info ? info->name : absl::StrCat("syscall_", nr);
  audit().Emit(audit::kSyscall, {{"pid", pid},
                                 {"nr", nr},
                                 {"name", name},
                                 {"status", "blocked"},
                                 {"errno", abi::ErrnoName(err)}});
  audit().Explain(name, "", "privileged syscall blocked in the sandbox", "syscalls");
}

std::map<std::string, uint64_t> Kernel::SyscallCounts() {
  std::map<std::string, uint64_t> out;
  for (int nr = 0; nr < kSyscallCountSlots; nr++) {
    if (syscall_counts_[nr] == 0) continue;
    const SyscallInfo* info = LookupSyscall(nr);
    out[info ? std::string(info->name) : absl::StrCat("syscall_", nr)] += syscall_counts_[nr];
  }
  return out;
}

}  // namespace usentry::sentry
