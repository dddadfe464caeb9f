// RunSentry: assembles the kernel (memory file, platform, gofer client, VFS), starts the
// first process and waits for it to end.
#include "sentry/sentry_main.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>

#include "abi/errno.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/cpu_pin.h"
#include "base/phases.h"
#include "gofer/client.h"
#include "sentry/fsimpl/devfs.h"
#include "sentry/fsimpl/host_file.h"
#include "sentry/fsimpl/procfs.h"
#include "sentry/fsimpl/sandbox_vfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/limits.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/task_clone.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_file.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/net/dns_service.h"
#include "sentry/net/inet_stack.h"
#include "sentry/net/netgate/client.h"
#include "sentry/net/policy_egress.h"
#include "sentry/net/sandbox_network.h"
#include "sentry/signal/deliver.h"
#include "sentry/syscalls/strace.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/fs_context.h"
#include "sentry/vfs/task_context.h"

namespace usentry::sentry {

namespace {

constexpr int kExitSetupFailed = 125;
constexpr int kExitNotExecutable = 126;
constexpr int kExitNotFound = 127;
constexpr int kExitTimeout = 124;  // as timeout(1)
// Address space reserved for app memory (sparse: only touched pages cost anything).
constexpr uint64_t kMemoryFileCapacity = 1ull << 40;

// The first process's resource limits. Those the policy sets (docs/limits.md) are also
// ceilings no process may raise (sys_info.cc): --max-fds, --max-tasks, --max-file-size.
void DefaultLimits(ThreadGroup& tg, const policy::Limits& limits) {
  for (rlimit& r : tg.rlimits) r = {RLIM_INFINITY, RLIM_INFINITY};
  tg.rlimits[RLIMIT_STACK] = {8 << 20, RLIM_INFINITY};
  tg.rlimits[RLIMIT_NOFILE] = {std::min<rlim_t>(vfs::FdTable::kDefaultLimit, limits.max_fds),
                               limits.max_fds};
  tg.rlimits[RLIMIT_CORE] = {0, RLIM_INFINITY};
  tg.rlimits[RLIMIT_NPROC] = {limits.max_tasks, limits.max_tasks};
  if (limits.max_file_size != 0) {
    tg.rlimits[RLIMIT_FSIZE] = {limits.max_file_size, limits.max_file_size};
  }
  tg.rlimits[RLIMIT_MEMLOCK] = {8 << 20, 8 << 20};
  tg.rlimits[RLIMIT_SIGPENDING] = {4096, 4096};
  tg.rlimits[RLIMIT_MSGQUEUE] = {819200, 819200};
  // As Linux's init: no nice/real-time headroom without CAP_SYS_NICE (setpriority).
  tg.rlimits[RLIMIT_NICE] = {0, 0};
  tg.rlimits[RLIMIT_RTPRIO] = {0, 0};
}

std::string EnvValue(const std::vector<std::string>& envp, const std::string& key) {
  for (const std::string& e : envp) {
    if (e.size() > key.size() && e.compare(0, key.size(), key) == 0 && e[key.size()] == '=') {
      return e.substr(key.size() + 1);
    }
  }
  return "";
}

// execvp-style lookup of a program name without '/': the first PATH entry that execs.
// Returns the errno of the best failure (EACCES beats ENOENT, as execvp reports).
SysStatus ExecSearchingPath(Task& t, const SentryConfig& cfg) {
  const std::string& prog = cfg.argv[0];
  if (prog.find('/') != std::string::npos) return DoExecve(t, prog, cfg.argv, cfg.envp);
  std::string path = EnvValue(cfg.envp, "PATH");
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  int best = ENOENT;
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    std::string candidate = dir.empty() ? prog : std::string(dir) + "/" + prog;
    SysStatus s = DoExecve(t, candidate, cfg.argv, cfg.envp);
    if (s.ok()) return s;
    if (s.error() != ENOENT && s.error() != ENOTDIR) best = s.error();
  }
  return Errno{best};
}

// --strace: the first execve happens before the task runs, so it is logged here in the
// same form the dispatcher uses for later ones.
void StraceInitialExec(const SentryConfig& cfg, int32_t pid, int err) {
  std::string args;
  for (size_t i = 0; i < cfg.argv.size(); i++) {
    if (i > 0) args += ", ";
    args += QuoteString(cfg.argv[i]);
  }
  std::string result = err == 0 ? "0" : absl::StrCat("-1 ", abi::ErrnoName(err));
  fprintf(stderr, "[pid %5d] execve(%s, [%s], [/* %zu vars */]) = %s\n", pid,
          QuoteString(cfg.argv[0]).c_str(), args.c_str(), cfg.envp.size(), result.c_str());
}

// SIGINT/SIGTERM/SIGHUP reach the sentry from the CLI (the user's ^C or a supervisor).
// They are passed on to every app process, as a terminal delivers ^C to its job; an app
// that ignores them is SIGKILLed by the CLI on the next signal. Every sentry thread
// blocks them except one forwarder, whose handler wakes it through an eventfd (the
// handler itself may not take the kernel lock).
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<int> g_forward_signal{0};
int g_forward_eventfd = -1;

void OnForwardedSignal(int sig) {
  g_forward_signal.store(sig);
  uint64_t one = 1;
  (void)!write(g_forward_eventfd, &one, sizeof(one));
}

sigset_t ForwardedSignalSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kForwardedSignals) sigaddset(&set, sig);
  return set;
}

// Call before any other thread exists: threads inherit the blocked set.
void StartSignalForwarder(Kernel& k) {
  g_forward_eventfd = eventfd(0, EFD_CLOEXEC);
  if (g_forward_eventfd < 0) return;  // then signals keep their default effect
  sigset_t set = ForwardedSignalSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([&k, set] {
    struct sigaction sa = {};
    sa.sa_handler = OnForwardedSignal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int sig : kForwardedSignals) sigaction(sig, &sa, nullptr);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    while (true) {
      uint64_t n;
      if (read(g_forward_eventfd, &n, sizeof(n)) != sizeof(n)) continue;
      siginfo_t info{};
      info.si_signo = g_forward_signal.exchange(0);
      info.si_code = SI_KERNEL;  // from outside the sandbox, like a terminal's ^C
      if (info.si_signo == 0) continue;
      absl::MutexLock lock(&k.mu);
      for (auto& tg : k.ThreadGroups()) {
        if (!tg->zombie) SendGroupSignal(*tg, info);
      }
    }
  }).detach();
}

// The exec allowlist names programs as the user knows them ("/usr/bin/python3",
// "/bin/*"); execve checks the file it finally opened ("/usr/bin/python3.11"). Each
// pattern is resolved once here, in the pristine view before the app can change
// anything, and the resolved form is allowed too.
policy::ExecRules ResolveExecRules(vfs::Vfs& vfs, const policy::ExecRules& rules,
                                   const Credentials& creds) {
  policy::ExecRules out = rules;
  vfs::ResolveContext rc;
  rc.creds = &creds;
  rc.root = vfs.root();
  rc.start = vfs.root();
  for (const std::string& pattern : rules.allow) {
    bool dir = absl::EndsWith(pattern, "/*");
    std::string path = dir ? pattern.substr(0, pattern.size() - 2) : pattern;
    auto resolved = vfs.Resolve(rc, path.empty() ? "/" : path, true);
    if (!resolved.ok()) continue;  // absent in this view: nothing to execute anyway
    std::string real = vfs.PathOf(*resolved);
    if (dir) real = real == "/" ? "/*" : absl::StrCat(real, "/*");
    if (real != pattern) out.allow.push_back(real);
  }
  return out;
}

// --disk ran out (the writable layer's budget refused a write, which fails with ENOSPC):
// a rate-limited "limit" record and, with --explain, a line saying why.
void ReportDiskFull(uint64_t limit, uint64_t wanted) {
  Task* t = fsimpl::CurrentTask();
  if (t == nullptr) return;
  const int pid = t->thread_group().pid();
  if (!t->kernel().limits().Hit("disk", limit, pid,
                                absl::StrCat("write needing ", wanted,
                                             " bytes of the writable layer failed with ENOSPC"))) {
    return;
  }
  t->kernel().audit().Denied(pid, "write", "(writable layer)", ENOSPC,
                             absl::StrCat("the writable layer is full (", limit, " bytes)"),
                             "limits.disk");
}

// The run_start audit record: who runs what under which policy, and which defense
// layers are in force on this host.
void EmitRunStart(const SentryConfig& cfg, Kernel& k) {
  if (!k.audit().enabled()) return;
  nlohmann::json layers = nlohmann::json::array();
  for (const SentryConfig::Layer& l : cfg.layers) {
    layers.push_back({{"name", l.name}, {"applied", l.applied}, {"detail", l.detail}});
  }
  nlohmann::json policy = nlohmann::json::parse(cfg.policy_json, nullptr, false);
  k.audit().Emit(audit::kRunStart, {{"argv", cfg.argv},
                                    {"workdir", cfg.workdir},
                                    {"policy_digest", cfg.policy_digest},
                                    {"policy", policy},
                                    {"platform", std::string(k.platform().Name())},
                                    {"layers", layers}});
}

// The gofers' round trips by operation, both clients together: what the app's file
// lookups cost beyond the sentry (docs/benchmarks.md counts them).
std::map<std::string, uint64_t> GoferRoundTrips(const gofer::Client& root,
                                                const gofer::Client* mounts) {
  std::map<std::string, uint64_t> out = root.RoundTripsByOp();
  if (mounts != nullptr) {
    for (const auto& [op, n] : mounts->RoundTripsByOp()) out[op] += n;
  }
  return out;
}

// The run_end audit record. `how`: exited, signaled, timeout, not_found, not_executable.
void EmitRunEnd(Kernel& k, absl::Time start, int exit_code, const char* how,
                const std::map<std::string, uint64_t>& gofer_round_trips)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(k.mu) {
  if (!k.audit().enabled()) return;
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  auto ms = [](const timeval& tv) { return tv.tv_sec * 1000 + tv.tv_usec / 1000; };
  k.audit().Emit(
      audit::kRunEnd,
      {{"exit_code", exit_code},
       {"how", how},
       {"wall_ms", absl::ToInt64Milliseconds(absl::Now() - start)},
       {"sentry_cpu_ms", ms(self.ru_utime) + ms(self.ru_stime)},
       {"cpu_ms", absl::ToInt64Milliseconds(k.limits().AppCpuTime())},
       {"peak_memory_bytes", std::max(k.limits().peak_memory_bytes(), k.limits().ResidentBytes())},
       {"limit_hits", k.limits().HitCounts()},
       {"tasks_created", k.tasks_created},
       {"syscalls", k.SyscallCounts()},
       {"gofer_round_trips", gofer_round_trips}});
}

// Waits for the init process to exit; at the --timeout deadline kills every process
// (as SIGKILL would) and records it. Returns whether the deadline struck.
bool WaitForInitOrTimeout(Kernel& k, absl::Time start, absl::Duration timeout)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(k.mu) {
  const absl::Time deadline =
      timeout == absl::ZeroDuration() ? absl::InfiniteFuture() : start + timeout;
  ReleaseThreadCpu();  // held by the set-up's gofer calls (base/cpu_pin.h); it sleeps now
  while (!k.init_exited) {
    if (!k.init_exit_cv.WaitWithDeadline(&k.mu, deadline) || k.init_exited) continue;
    if (absl::Now() < deadline) continue;
    k.audit().Emit(audit::kLimit, {{"limit", "timeout"},
                                   {"value_ms", absl::ToInt64Milliseconds(timeout)},
                                   {"action", "killed all processes"}});
    fprintf(stderr, "usentry: timeout: the run exceeded %s; killed\n",
            absl::FormatDuration(timeout).c_str());
    k.limits().KillAll();
    while (!k.init_exited) k.init_exit_cv.Wait(&k.mu);
    return true;
  }
  return false;
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  return 128 + WTERMSIG(wait_status);
}

}  // namespace

absl::StatusOr<SentryHost> PrepareSentry(const SentryConfig& cfg) {
  const auto prefixed = [](const char* what, const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
  };
  SentryHost host;
  // App FDs backed by host FDs (host files, inet sockets) are the sentry's own: take the
  // whole hard limit, so that many processes each at --max-fds do not exhaust the
  // sentry before them (docs/limits.md).
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &nofile);
  }
  auto mf = mm::MemoryFile::Create(kMemoryFileCapacity);
  if (!mf.ok()) return prefixed("memory file", mf.status());
  host.memory_file = std::move(mf).value();
  const platform::MemoryFileInfo info{host.memory_file->fd()};
  const platform::PlatformOptions popts{.syscall_patching = cfg.syscall_patching};
  std::string name = cfg.platform;
  if (name == "auto") {
    auto systrap = platform::NewPlatform("systrap", info, popts);
    if (systrap.ok()) {
      host.platform = std::move(systrap).value();
      return host;
    }
    fprintf(stderr, "usentry: notice: systrap platform unavailable here (%s); using ptrace\n",
            std::string(systrap.status().message()).c_str());
    name = "ptrace";
  }
  auto p = platform::NewPlatform(name, info, popts);
  if (!p.ok()) return prefixed("platform", p.status());
  host.platform = std::move(p).value();
  return host;
}

int RunSentry(const SentryConfig& cfg, SentryHost host) {
  auto fail = [](const std::string& what, const absl::Status& s) {
    fprintf(stderr, "usentry: %s: %s\n", what.c_str(), std::string(s.message()).c_str());
    return kExitSetupFailed;
  };
  if (cfg.argv.empty()) {
    fprintf(stderr, "usentry: no program to run\n");
    return kExitSetupFailed;
  }
  auto gofer = std::make_unique<gofer::Client>(UniqueFd(cfg.gofer_fd));
  std::unique_ptr<gofer::Client> mounts_gofer;
  if (cfg.mounts_gofer_fd >= 0)
    mounts_gofer = std::make_unique<gofer::Client>(UniqueFd(cfg.mounts_gofer_fd));
  fsimpl::VfsConfig vcfg;
  vcfg.mounts = cfg.mounts;
  vcfg.workdir = cfg.workdir;
  vcfg.tmpfs_limit_bytes = cfg.tmpfs_limit_bytes;
  vcfg.memory_file = host.memory_file.get();
  vcfg.on_disk_full = ReportDiskFull;
  vcfg.files = net::SandboxNetworkFiles(cfg.hostname, !cfg.net.host_ports.empty());
  vcfg.app_uid = cfg.uid;
  vcfg.app_gid = cfg.gid;
  vcfg.home = cfg.home;
  vcfg.host_uid = cfg.host_uid;
  vcfg.host_gid = cfg.host_gid;
  auto vfs = fsimpl::BuildSandboxVfs(*gofer, vcfg, mounts_gofer.get());
  if (!vfs.ok()) return fail("filesystem", vfs.status());
  Phase("filesystem-ready");

  KernelOptions opts;
  Credentials& c = opts.initial_creds;
  c.ruid = c.euid = c.suid = c.fsuid = cfg.uid;
  c.rgid = c.egid = c.sgid = c.fsgid = cfg.gid;
  opts.limits = cfg.limits;
  opts.exec_rules = ResolveExecRules(**vfs, cfg.exec_rules, opts.initial_creds);
  opts.audit = cfg.audit;
  opts.masked_paths = cfg.masked_paths;
  opts.strace = cfg.strace;
  opts.report_unsupported = cfg.report_unsupported;
  opts.hostname = cfg.hostname;
  opts.network.egress = cfg.net.egress();
  // The kernel is deliberately never destroyed, on any return path: the sentry process
  // exits right after RunSentry returns, while the signal forwarder, host-file poller or
  // a detached task thread leaving its final Mutex::Unlock may still be using it.
  Kernel& k = *new Kernel(opts, std::move(host.platform), std::move(host.memory_file),
                          std::move(vfs).value());
  StartSignalForwarder(k);
  // The network: the policy's first check, the sandbox resolver and (with egress) the
  // netgate client whose reader thread delivers netgate's answers under the kernel lock.
  {
    auto net_ctx = std::make_shared<net::NetContext>();
    net_ctx->policy = cfg.net;
    net_ctx->audit = cfg.audit;
    net_ctx->net_log = cfg.net_log;
    net_ctx->hostname = cfg.hostname;
    if (cfg.netgate_fd >= 0) {
      // Never destroyed: its reader thread runs until the sentry exits.
      net_ctx->netgate = new netgate::Client(UniqueFd(cfg.netgate_fd), &k.mu);
      net_ctx->netgate->Start();
    }
    absl::MutexLock lock(&k.mu);
    k.inet_stack()->Configure(net::NewPolicyEgress(net_ctx), net::NewSandboxResolver(net_ctx));
  }
  const absl::Time start = absl::Now();
  EmitRunStart(cfg, k);
  if (absl::Status s = fsimpl::MountDevfs(k.vfs(), k, absl::MakeConstSpan(cfg.stdio_fds)); !s.ok())
    return fail("/dev", s);
  if (absl::Status s = fsimpl::MountProcfs(k.vfs(), k); !s.ok()) return fail("/proc", s);

  int exit_code;
  {
    absl::MutexLock lock(&k.mu);
    int32_t pid = k.AllocatePid();
    auto tg = std::make_shared<ThreadGroup>(pid);
    tg->pgid = tg->sid = pid;
    DefaultLimits(*tg, cfg.limits);
    auto* task = new Task(&k, tg, pid);
    task->creds() = opts.initial_creds;
    vfs::Path root = k.vfs().root();
    vfs::ResolveContext rc;
    rc.creds = &task->creds();
    rc.root = root;
    rc.start = root;
    auto cwd = k.vfs().Resolve(rc, cfg.workdir, true);
    task->set_fs(std::make_shared<vfs::FsContext>(root, cwd.ok() ? *cwd : root));
    auto fds = std::make_shared<vfs::FdTable>();
    fds->set_limit(tg->rlimits[RLIMIT_NOFILE].rlim_cur);
    for (int i = 0; i < 3; i++) {
      int flags = i == 0 ? O_RDONLY : O_WRONLY;
      (void)fds->Install(fsimpl::NewHostFile(k, cfg.stdio_fds[i], flags), false, i);
    }
    task->set_fds(std::move(fds));
    // The first image is loaded before the task runs so that "not found" and "not
    // executable" become usentry's exit codes 127/126, as in a shell.
    task->set_mm(std::make_shared<mm::MemoryManager>(&k.memory_file(), 1ull << 40));
    // Before the first byte of the program is read (its ELF headers are the first input
    // the app controls).
    if (cfg.before_app) cfg.before_app();
    fsimpl::SetCurrentTask(task);
    SysStatus s = ExecSearchingPath(*task, cfg);
    fsimpl::SetCurrentTask(nullptr);
    if (cfg.strace) StraceInitialExec(cfg, pid, s.ok() ? 0 : s.error());
    if (!s.ok()) {
      fprintf(stderr, "usentry: %s: %s\n", cfg.argv[0].c_str(),
              s.error() == ENOENT ? "command not found" : strerror(s.error()));
      task->set_mm(nullptr);
      delete task;
      int code = s.error() == ENOENT ? kExitNotFound : kExitNotExecutable;
      EmitRunEnd(k, start, code, s.error() == ENOENT ? "not_found" : "not_executable",
                 GoferRoundTrips(*gofer, mounts_gofer.get()));
      return code;
    }
    Phase("program-loaded");
    tg->tasks.push_back(task);
    k.RegisterThreadGroup(tg);
    k.RegisterTask(task);
    k.limits().Start();
    k.StartTask(task);  // last: the task's thread takes Kernel::mu once this thread waits
    bool timed_out = WaitForInitOrTimeout(k, start, cfg.limits.timeout);
    Phase("init-exited");
    // Every other process was killed with init; let their threads finish (bounded).
    absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (k.running_threads > 0 && absl::Now() < give_up) {
      k.threads_cv.WaitWithDeadline(&k.mu, give_up);
    }
    const bool cpu_killed = k.limits().cpu_time_exceeded();
    exit_code = timed_out    ? kExitTimeout
                : cpu_killed ? kExitCpuTime
                             : ExitCodeOf(k.init_wait_status);
    EmitRunEnd(k, start, exit_code,
               timed_out                         ? "timeout"
               : cpu_killed                      ? "cpu_time"
               : WIFSIGNALED(k.init_wait_status) ? "signaled"
                                                 : "exited",
               GoferRoundTrips(*gofer, mounts_gofer.get()));
    if (k.running_threads > 0) {
      // A task thread is stuck in a host call; exiting the sentry kills its stubs.
      fflush(stderr);
      _exit(exit_code);
    }
  }
  fsimpl::ShutdownHostFiles(k);
  return exit_code;
}

}  // namespace usentry::sentry
