// Kernel: the sandbox-wide state of the user-space kernel: the big kernel lock, the
// task and thread-group registry (one PID namespace), the VFS, the memory file, the
// platform, and run options.
//
// Lock order: Kernel::mu is the only kernel lock. It is held by every syscall handler
// and released only while a task runs app code, sleeps in Task::Block, or waits on a
// host call that may take unbounded time. MemoryFile::mu_ nests inside it.
#ifndef USENTRY_SENTRY_KERNEL_KERNEL_H_
#define USENTRY_SENTRY_KERNEL_KERNEL_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/usable_cpus.h"
#include "platform/platform.h"
#include "sentry/audit/audit_log.h"
#include "sentry/kernel/cpu_gate.h"
#include "sentry/kernel/credentials.h"
#include "sentry/kernel/futex.h"
#include "sentry/kernel/timers.h"
#include "sentry/net/sandbox_network.h"
#include "sentry/policy/policy.h"

namespace usentry::gofer {
class Client;
}

namespace usentry::sentry {

namespace mm {
class MemoryFile;
}
namespace vfs {
class Vfs;
class FsObserver;
}  // namespace vfs
namespace net {
class UnixNamespace;
class NetlinkPorts;
class InetStack;
}  // namespace net

class Task;
class ThreadGroup;
class LimitMonitor;
class ShmRegistry;

struct KernelOptions {
  bool strace = false;
  bool report_unsupported = false;
  std::string hostname = "usentry";
  Credentials initial_creds;  // identity of the first task
  policy::Limits limits;
  policy::ExecRules exec_rules;
  // The run's audit stream (never null; a disabled log when there is no --audit).
  std::shared_ptr<const audit::AuditLog> audit = std::make_shared<audit::AuditLog>(-1, "", false);
  // Masked host secrets (sandbox glob patterns): their absence is explained as a denial.
  std::vector<std::string> masked_paths;
  // The network the app sees: loopback always, eth0 when the policy allows egress.
  net::SandboxNetwork network;
};

// Syscall numbers counted per run (the x86-64 table ends below 512).
inline constexpr int kSyscallCountSlots = 512;

class Kernel {
 public:
  Kernel(KernelOptions opts, std::unique_ptr<platform::Platform> platform,
         std::unique_ptr<mm::MemoryFile> mf, std::unique_ptr<vfs::Vfs> vfs);
  ~Kernel();

  // The big kernel lock. See the lock order above.
  absl::Mutex mu;

  const KernelOptions& options() const { return opts_; }
  const audit::AuditLog& audit() const { return *opts_.audit; }
  // Reports file changes and denials to audit() (null when neither --audit nor
  // --explain is on, so the VFS does no extra work).
  const vfs::FsObserver* fs_observer() const { return fs_observer_.get(); }
  platform::Platform& platform() const { return *platform_; }
  mm::MemoryFile& memory_file() const { return *mf_; }
  vfs::Vfs& vfs() const { return *vfs_; }
  // AF_UNIX names of this sandbox (made on first use; defined in sentry/net).
  const std::shared_ptr<net::UnixNamespace>& unix_namespace();
  // Port ids of the sandbox's netlink sockets (made on first use; sentry/net).
  const std::shared_ptr<net::NetlinkPorts>& netlink_ports();
  // The internet stack: port tables, local delivery, Egress/DnsService (made on first
  // use; defined in sentry/net).
  const std::shared_ptr<net::InetStack>& inet_stack();
  // System V shared memory segments (made on first use; sentry/kernel/shm_registry.h).
  ShmRegistry& shm();
  absl::Time boot_time() const { return boot_time_; }
  FutexTable& futexes() { return futexes_; }
  // Asynchronous timers (alarm, itimers, POSIX timers, timerfd): sentry/kernel/timers.h.
  TimerQueue& timer_queue() { return *timer_queue_; }
  const std::string& hostname() const { return hostname_; }
  // Enforcement and reporting of the run's hard limits (sentry/kernel/limits.h).
  LimitMonitor& limits() { return *limits_; }
  // Which app threads may run app code now (sentry/kernel/cpu_gate.h). Kernel lock.
  CpuGate& cpu_gate() { return cpu_gate_; }
  void set_hostname(std::string h) { hostname_ = std::move(h); }

  // Allocates the next free PID (for a thread group leader or a thread).
  int32_t AllocatePid() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  Task* FindTask(int32_t tid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  std::shared_ptr<ThreadGroup> FindThreadGroup(int32_t pid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void RegisterTask(Task* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void UnregisterTask(Task* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  const std::map<int32_t, Task*>& tasks() const { return tasks_; }
  std::vector<std::shared_ptr<ThreadGroup>> ThreadGroups() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void RegisterThreadGroup(std::shared_ptr<ThreadGroup> tg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void UnregisterThreadGroup(int32_t pid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The init process (PID 1): orphans are reparented to it; its exit ends the run.
  std::shared_ptr<ThreadGroup> init() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Starts the host thread that runs `t` (already registered). Kernel lock held.
  void StartTask(Task* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Host threads of tasks still running (for shutdown).
  int running_threads = 0;
  absl::CondVar threads_cv;

  // Records that the app made a syscall the table does not implement (reported once,
  // on stderr with --strace/--report-unsupported, and in the audit stream).
  void NoteUnsupported(int pid, int nr) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Records that the app made a syscall the sandbox refuses by policy (privileged:
  // mount, bpf, ...) and that it got `err`: a "syscall" record with status "blocked" and
  // an --explain line, once per syscall name.
  void NoteBlocked(int pid, int nr, int err) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Counts one syscall by number (the run_end audit record lists them by name).
  void CountSyscall(int nr) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (static_cast<unsigned>(nr) < kSyscallCountSlots) syscall_counts_[nr]++;
  }
  // {name: count} of the syscalls made so far.
  std::map<std::string, uint64_t> SyscallCounts() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Processes and threads created by fork/clone in this run (run_end's "tasks_created").
  uint64_t tasks_created = 0;

  // Set once the init process (first task's group) has exited: its status is the run's.
  bool init_exited = false;
  int init_wait_status = 0;  // wait(2)-style status of the init process
  absl::CondVar init_exit_cv;

 private:
  KernelOptions opts_;
  std::unique_ptr<platform::Platform> platform_;
  std::unique_ptr<mm::MemoryFile> mf_;
  std::unique_ptr<vfs::Vfs> vfs_;
  std::unique_ptr<vfs::FsObserver> fs_observer_;
  std::shared_ptr<net::UnixNamespace> unix_ns_;
  std::shared_ptr<net::NetlinkPorts> netlink_ports_;
  std::shared_ptr<net::InetStack> inet_stack_;
  std::shared_ptr<ShmRegistry> shm_;
  absl::Time boot_time_;
  std::string hostname_;
  FutexTable futexes_;
  int32_t next_pid_ = 1;
  std::map<int32_t, Task*> tasks_;
  std::map<int32_t, std::shared_ptr<ThreadGroup>> groups_;  // live and zombie
  std::set<int> unsupported_reported_;
  std::set<int> blocked_reported_;
  uint64_t syscall_counts_[kSyscallCountSlots] = {};
  std::unique_ptr<LimitMonitor> limits_;
  CpuGate cpu_gate_{UsableCpus(), CpuGate::kSlice};  // base/usable_cpus.h
  // Last member: its thread is stopped first when the kernel is destroyed.
  std::unique_ptr<TimerQueue> timer_queue_ = std::make_unique<TimerQueue>(&mu);
};

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_KERNEL_H_
