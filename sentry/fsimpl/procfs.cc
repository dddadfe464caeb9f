// procfs root: "self", "thread-self", process directories, system-wide files and the
// sys/ tree; the current-task hook; mounting.
#include "sentry/fsimpl/procfs.h"

#include <dirent.h>

#include <charconv>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "sentry/fsimpl/inotify.h"
#include "sentry/fsimpl/procfs_gen.h"
#include "sentry/fsimpl/procfs_net.h"
#include "sentry/fsimpl/procfs_nodes.h"
#include "sentry/fsimpl/procfs_pid.h"
#include "sentry/fsimpl/procfs_sysvipc.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/limits.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"

namespace usentry::sentry::fsimpl {
namespace {

using InodePtr = std::shared_ptr<vfs::Inode>;

thread_local Task* current_task = nullptr;

// MemTotal shown to the app when --memory is "none": 8 GiB keeps programs that size
// caches from meminfo modest.
constexpr uint64_t kMemTotalKb = 8ull << 20;

ProcContent Fixed(std::string s) {
  return [s = std::move(s)]() -> SysResult<std::string> { return s; };
}

int32_t ParsePid(std::string_view name) {
  int32_t v = -1;
  if (name.empty() || (name.size() > 1 && name[0] == '0')) return -1;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
  if (ec != std::errc() || p != name.data() + name.size() || v <= 0) return -1;
  return v;
}

// /proc/sys: the handful of sysctls programs and libcs read.
InodePtr NewSysTree(std::shared_ptr<vfs::Filesystem> fs, Kernel& k) {
  Kernel* kp = &k;
  ProcOwner root;
  auto f = [&](const char* key, ProcContent c) { return NewProcFile(fs, key, root, std::move(c)); };
  std::string boot_id = RandomUuid();  // fixed for the kernel's life, like a boot
  auto random = NewProcStaticDir(
      fs, "sys/kernel/random",
      {{"boot_id", f("sys/kernel/random/boot_id", Fixed(boot_id))},
       {"uuid",
        f("sys/kernel/random/uuid", []() -> SysResult<std::string> { return RandomUuid(); })},
       {"entropy_avail", f("sys/kernel/random/entropy_avail", Fixed("256\n"))},
       {"poolsize", f("sys/kernel/random/poolsize", Fixed("256\n"))}});
  std::map<std::string, InodePtr> kernel_files = {
      {"osrelease", f("sys/kernel/osrelease", Fixed(absl::StrCat(kProcOsRelease, "\n")))},
      {"ostype", f("sys/kernel/ostype", Fixed("Linux\n"))},
      {"version", f("sys/kernel/version", Fixed(absl::StrCat(kProcOsVersion, "\n")))},
      {"hostname", f("sys/kernel/hostname",
                     [kp]() -> SysResult<std::string> { return kp->hostname() + "\n"; })},
      {"domainname", f("sys/kernel/domainname", Fixed("(none)\n"))},
      {"pid_max", f("sys/kernel/pid_max", Fixed("4194304\n"))},
      {"threads-max", f("sys/kernel/threads-max", Fixed("63704\n"))},
      {"ngroups_max", f("sys/kernel/ngroups_max", Fixed("65536\n"))},
      {"cap_last_cap", f("sys/kernel/cap_last_cap", Fixed("40\n"))},
      {"random", random}};
  kernel_files.merge(NewShmSysctls(fs));
  auto kernel = NewProcStaticDir(fs, "sys/kernel", std::move(kernel_files));
  auto vm = NewProcStaticDir(fs, "sys/vm",
                             {{"overcommit_memory", f("sys/vm/overcommit_memory", Fixed("0\n"))},
                              {"max_map_count", f("sys/vm/max_map_count", Fixed("65530\n"))},
                              {"mmap_min_addr", f("sys/vm/mmap_min_addr", Fixed("65536\n"))}});
  // The limits the sentry's inotify enforces (sentry/fsimpl/inotify.h).
  auto inotify = NewProcStaticDir(
      fs, "sys/fs/inotify",
      {{"max_queued_events",
        f("sys/fs/inotify/max_queued_events", Fixed(absl::StrCat(kInotifyMaxQueuedEvents, "\n")))},
       {"max_user_instances", f("sys/fs/inotify/max_user_instances",
                                Fixed(absl::StrCat(kInotifyMaxUserInstances, "\n")))},
       {"max_user_watches",
        f("sys/fs/inotify/max_user_watches", Fixed(absl::StrCat(kInotifyMaxUserWatches, "\n")))}});
  auto fsdir = NewProcStaticDir(fs, "sys/fs",
                                {{"nr_open", f("sys/fs/nr_open", Fixed("1048576\n"))},
                                 {"pipe-max-size", f("sys/fs/pipe-max-size", Fixed("1048576\n"))},
                                 {"file-max", f("sys/fs/file-max", Fixed("9223372036854775807\n"))},
                                 {"inotify", inotify}});
  return NewProcStaticDir(
      fs, "sys", {{"kernel", kernel}, {"vm", vm}, {"fs", fsdir}, {"net", NewProcSysNetDir(fs)}});
}

}  // namespace

void SetCurrentTask(Task* t) { current_task = t; }
Task* CurrentTask() { return current_task; }

std::shared_ptr<vfs::Inode> NewProcfsRoot(Kernel& k) {
  auto fs = std::make_shared<ProcFilesystem>();
  Kernel* kp = &k;
  ProcOwner root;
  int ncpus = HostCpuCount();
  auto f = [&](const char* key, ProcContent c) { return NewProcFile(fs, key, root, std::move(c)); };
  std::map<std::string, InodePtr> fixed = {
      {"self", NewProcSymlink(fs, "self", root,
                              []() -> SysResult<std::string> {
                                Task* t = CurrentTask();
                                if (t == nullptr) return Errno{ENOENT};
                                return std::to_string(t->thread_group().pid());
                              })},
      {"thread-self", NewProcSymlink(fs, "thread-self", root,
                                     []() -> SysResult<std::string> {
                                       Task* t = CurrentTask();
                                       if (t == nullptr) return Errno{ENOENT};
                                       return absl::StrCat(t->thread_group().pid(), "/task/",
                                                           t->tid());
                                     })},
      {"mounts", NewProcSymlink(fs, "mounts", root, Fixed("self/mounts"))},
      {"net", NewProcSymlink(fs, "net", root, Fixed("self/net"))},
      {"cpuinfo",
       f("cpuinfo", [ncpus]() -> SysResult<std::string> { return GenerateCpuinfo(ncpus); })},
      {"stat", f("stat",
                 [kp, ncpus]() -> SysResult<std::string> {
                   int running = static_cast<int>(kp->tasks().size());
                   return GenerateProcStat(ncpus, absl::ToUnixSeconds(kp->boot_time()),
                                           static_cast<int>(kp->ThreadGroups().size()), running);
                 })},
      {"meminfo", f("meminfo",
                    [kp]() -> SysResult<std::string> {
                      // Total: the sandbox's --memory; used: resident app memory, what
                      // that limit counts (sentry/kernel/limits.h).
                      const uint64_t limit = kp->options().limits.memory_bytes;
                      const uint64_t total_kb = limit != 0 ? limit / 1024 : kMemTotalKb;
                      return GenerateMeminfo(total_kb, kp->limits().ResidentBytes() / 1024);
                    })},
      {"uptime", f("uptime",
                   [kp, ncpus]() -> SysResult<std::string> {
                     return GenerateUptime(absl::ToDoubleSeconds(absl::Now() - kp->boot_time()),
                                           ncpus);
                   })},
      {"loadavg", f("loadavg",
                    [kp]() -> SysResult<std::string> {
                      int32_t last = kp->tasks().empty() ? 0 : kp->tasks().rbegin()->first;
                      return GenerateLoadavg(1, static_cast<int>(kp->tasks().size()), last);
                    })},
      {"version", f("version", Fixed(GenerateVersion()))},
      {"filesystems", f("filesystems", Fixed(GenerateFilesystems()))},
      {"sys", NewSysTree(fs, k)},
      {"sysvipc", NewSysvipcDir(fs, k)},
  };
  auto shared_fixed = std::make_shared<std::map<std::string, InodePtr>>(std::move(fixed));
  auto lookup = [fs, kp, shared_fixed](std::string_view name) -> SysResult<InodePtr> {
    auto it = shared_fixed->find(std::string(name));
    if (it != shared_fixed->end()) return it->second;
    int32_t pid = ParsePid(name);
    if (pid <= 0) return Errno{ENOENT};
    auto dir = NewPidDir(fs, *kp, pid, 0);
    if (!dir.ok()) return Errno{ENOENT};
    return dir;
  };
  auto list = [kp, shared_fixed]() -> SysResult<std::vector<vfs::DirEntry>> {
    std::vector<vfs::DirEntry> out;
    for (const auto& tg : kp->ThreadGroups()) {
      if (tg->reaped) continue;
      std::string n = std::to_string(tg->pid());
      out.push_back({n, ProcIno(n), DT_DIR});
    }
    for (const auto& [name, inode] : *shared_fixed) {
      auto a = inode->Stat();
      out.push_back({name, a.ok() ? a->ino : 0, vfs::DirentTypeOf(inode->FileType())});
    }
    return out;
  };
  return NewProcDir(fs, "", root, lookup, list);
}

absl::Status MountProcfs(vfs::Vfs& vfs, Kernel& kernel) {
  std::shared_ptr<vfs::Inode> root = NewProcfsRoot(kernel);
  // The mount wants the Filesystem as a shared_ptr; the root inode owns it.
  std::shared_ptr<vfs::Filesystem> fs(root, &root->fs());
  auto m = vfs.MountAt("/proc", fs, root, vfs::kMountNoExec);
  if (!m.ok()) return absl::ErrnoToStatus(m.error(), "MountAt(/proc, proc)");
  return absl::OkStatus();
}

}  // namespace usentry::sentry::fsimpl
