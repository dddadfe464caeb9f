// Text generators for procfs files, as pure functions of plain data so that their
// formats (the ones programs parse: stat's 52 fields, maps, mounts, status) are unit
// tested without a running kernel. See proc(5).
#ifndef USENTRY_SENTRY_FSIMPL_PROCFS_GEN_H_
#define USENTRY_SENTRY_FSIMPL_PROCFS_GEN_H_

#include <cstdint>
#include <string>
#include <vector>

namespace usentry::sentry::fsimpl {

// Kernel release and version shown by /proc/version and /proc/sys/kernel/{osrelease,
// version}: must match uname(2) (sys_info.cc's kRelease/kVersion).
inline constexpr const char* kProcOsRelease = "6.1.0";
inline constexpr const char* kProcOsVersion = "#1 SMP usentry";

// /proc/PID/stat fields (proc(5) numbering in comments), the ones we can know.
struct ProcStatInfo {
  int32_t pid = 0;                                                  // 1
  std::string comm;                                                 // 2
  char state = 'S';                                                 // 3
  int32_t ppid = 0;                                                 // 4
  int32_t pgrp = 0;                                                 // 5
  int32_t session = 0;                                              // 6
  int32_t tty_nr = 0;                                               // 7
  int32_t tpgid = -1;                                               // 8
  uint64_t utime = 0;                                               // 14, clock ticks
  uint64_t stime = 0;                                               // 15
  int64_t cutime = 0;                                               // 16
  int64_t cstime = 0;                                               // 17
  int64_t num_threads = 1;                                          // 20
  uint64_t starttime = 0;                                           // 22, ticks since boot
  uint64_t vsize = 0;                                               // 23, bytes
  int64_t rss = 0;                                                  // 24, pages
  uint64_t startstack = 0;                                          // 28
  uint64_t signal = 0;                                              // 31
  uint64_t blocked = 0;                                             // 32
  uint64_t sigignore = 0;                                           // 33
  uint64_t sigcatch = 0;                                            // 34
  int32_t exit_signal = 17;                                         // 38
  uint64_t start_brk = 0;                                           // 47
  uint64_t arg_start = 0, arg_end = 0, env_start = 0, env_end = 0;  // 48-51
  int32_t exit_code = 0;                                            // 52
};
std::string FormatStat(const ProcStatInfo& s);

struct ProcStatusInfo {
  std::string name;
  char state = 'S';
  uint32_t umask = 022;
  int32_t tgid = 0, pid = 0, ppid = 0;
  uint32_t uid[4] = {}, gid[4] = {};  // real, effective, saved, fs
  std::vector<uint32_t> groups;
  uint64_t fd_size = 64;
  uint64_t vm_size_kb = 0, vm_rss_kb = 0, vm_data_kb = 0, vm_stk_kb = 0, vm_exe_kb = 0;
  int64_t threads = 1;
  uint64_t sig_pnd = 0, shd_pnd = 0, sig_blk = 0, sig_ign = 0, sig_cgt = 0;
  bool root_caps = false;  // euid 0 inside the sandbox: show a full capability set
  int ncpus = 1;
};
std::string FormatStatus(const ProcStatusInfo& s);

// /proc/PID/limits from the process's rlimits (RLIM_INFINITY prints "unlimited").
struct ProcLimit {
  uint64_t cur, max;
};
std::string FormatLimits(const std::vector<ProcLimit>& rlimits);  // RLIMIT_* order

// /proc/PID/smaps_rollup: the sums over all VMAs, in bytes (printed in kB).
struct ProcSmapsRollup {
  uint64_t start = 0, end = 0;  // first VMA's start, last VMA's end
  uint64_t rss = 0, pss = 0, pss_anon = 0, pss_file = 0, pss_shmem = 0;
  uint64_t shared_clean = 0, shared_dirty = 0, private_clean = 0, private_dirty = 0;
  uint64_t anonymous = 0;
};
std::string FormatSmapsRollup(const ProcSmapsRollup& r);

// One line of /proc/PID/maps.
struct ProcMapsEntry {
  uint64_t start = 0, end = 0;
  int prot = 0;
  bool shared = false;
  uint64_t offset = 0;
  uint64_t dev = 0, ino = 0;
  std::string name;
};
std::string FormatMapsLine(const ProcMapsEntry& e);

// One mount for /proc/PID/mounts and mountinfo.
struct ProcMountEntry {
  uint64_t id = 0, parent_id = 0;
  uint64_t dev = 0;
  std::string mount_point;
  std::string fstype;
  bool read_only = false;
  bool no_exec = false;
};
std::string FormatMountsLine(const ProcMountEntry& m);
std::string FormatMountinfoLine(const ProcMountEntry& m);

// System-wide files. `ncpus` processors; times in seconds.
std::string GenerateCpuinfo(int ncpus);
std::string GenerateProcStat(int ncpus, int64_t boot_time_sec, int processes, int running);
std::string GenerateMeminfo(uint64_t total_kb, uint64_t used_kb);
std::string GenerateUptime(double uptime_sec, int ncpus);
std::string GenerateLoadavg(int running, int total, int32_t last_pid);
std::string GenerateVersion();
std::string GenerateFilesystems();
// Host CPUs this sentry may run on (sched_getaffinity), at least 1.
int HostCpuCount();
// A random RFC 4122 version-4 UUID string (boot_id, uuid).
std::string RandomUuid();

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_PROCFS_GEN_H_
