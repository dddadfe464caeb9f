// ConfineSentry: empty root, no privileges, seccomp allowlist.
#include "sentry/confine/confine.h"

#include <execinfo.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <malloc.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/internal/sysinfo.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "base/cycle_clock_calibration.h"
#include "base/status_macros.h"
#include "sentry/confine/bpf_programs.h"
#include "sentry/confine/seccomp_policy.h"

namespace usentry::sentry::confine {
namespace {

std::string ErrnoText(const std::string& call, int err = errno) {
  return absl::StrCat(call, ": ", strerrorname_np(err) ? strerrorname_np(err) : "?");
}

// The thread StartCalibration started and FinishCalibration has not settled yet, and
// what the thread says once it tried to filter itself.
struct CalibrationState {
  absl::Notification settled;
  bool filtered = false;  // written before `settled` is notified
};
absl::Mutex g_calibration_mu;
std::optional<std::thread> g_calibration ABSL_GUARDED_BY(g_calibration_mu);
std::shared_ptr<CalibrationState> g_calibration_state ABSL_GUARDED_BY(g_calibration_mu);

bool Calibrating() {
  absl::MutexLock lock(&g_calibration_mu);
  return g_calibration.has_value();
}

// Libraries that read /proc or /sys lazily on first use would be killed by the filter
// later; make them do it now. (absl::Mutex consults NumCPUs and the cycle-clock
// frequency when it first blocks; the frequency is StartCalibration's thread's job if it
// runs: asking here would wait for it.)
void WarmUpLazyCaches() {
  (void)absl::base_internal::NumCPUs();
  if (!Calibrating()) (void)absl::base_internal::NominalCPUFrequency();
  // glibc's malloc reads /proc/sys/vm/overcommit_memory the first time it shrinks a
  // thread arena's heap (free -> heap_trim -> shrink_heap): the sentry died of SIGSYS
  // (openat) in free() on a sentry thread. One arena means no such heaps; the main arena
  // trims with brk.
  mallopt(M_ARENA_MAX, 1);
}

// Replaces "/" with an empty read-only tmpfs. Returns the layer; an error only when the
// process is left half-pivoted.
absl::StatusOr<ConfineLayer> PivotToEmptyRoot(const ConfineOptions& options) {
  ConfineLayer layer{"empty-root", false, ""};
  if (!options.pivot_root) {
    layer.detail = "disabled";
    return layer;
  }
  if (!options.own_mount_namespace) {
    layer.detail = "no mount namespace";
    return layer;
  }
  // Our mount events must not propagate back to the host (or the gofer).
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    layer.detail = ErrnoText("mount(/, MS_REC|MS_PRIVATE)");
    return layer;
  }
  const char* dir = options.new_root_dir.c_str();
  // Big enough for nothing: the sentry never creates files in its root.
  if (mount("usentry-root", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
            "size=16k,nr_inodes=4,mode=0555") != 0) {
    layer.detail = ErrnoText(absl::StrCat("mount(tmpfs, ", dir, ")"));
    return layer;
  }
  if (chdir(dir) != 0) return ErrnoStatus(absl::StrCat("chdir(", dir, ")"));
  // pivot_root(".", ".") stacks the old root on top of the new one; detaching it leaves
  // only the tmpfs, with no directory needed to park the old root in.
  if (syscall(SYS_pivot_root, ".", ".") != 0) {
    layer.detail = ErrnoText("pivot_root(., .)");
    return layer;
  }
  if (umount2(".", MNT_DETACH) != 0) return ErrnoStatus("umount2(old root, MNT_DETACH)");
  if (chdir("/") != 0) return ErrnoStatus("chdir(/)");
  if (mount(nullptr, "/", nullptr,
            MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    layer.applied = true;
    layer.detail = ErrnoText("empty root left writable: mount(/, MS_REMOUNT|MS_RDONLY)");
    return layer;
  }
  layer.applied = true;
  layer.detail = "tmpfs, read-only";
  return layer;
}

// Names for the debug SIGSYS handler, computed before the filter (resolving allocates).
constexpr int kMaxSyscallNr = 512;
const char* g_syscall_names[kMaxSyscallNr];

void FillSyscallNames() {
  for (int nr = 0; nr < kMaxSyscallNr; ++nr) {
    // Leaked on purpose: the handler may run at any time until the process exits.
    g_syscall_names[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
  }
}

void WriteAll(const char* s, size_t n) {
  while (n > 0) {
    ssize_t w = write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

// Async-signal-safe: only write(2) and abort().
void OnSeccompViolation(int, siginfo_t* info, void*) {
  char buf[160];
  size_t len = 0;
  auto append = [&](const char* s) {
    while (*s && len < sizeof(buf) - 1) buf[len++] = *s++;
  };
  append("usentry: sentry seccomp violation: syscall ");
  int nr = info->si_syscall;
  char digits[16];
  int nd = 0;
  unsigned v = nr < 0 ? 0u - static_cast<unsigned>(nr) : static_cast<unsigned>(nr);
  do {
    digits[nd++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && nd < 15);
  if (nr < 0) append("-");
  while (nd > 0 && len < sizeof(buf) - 1) buf[len++] = digits[--nd];
  append(" (");
  const char* name = (nr >= 0 && nr < kMaxSyscallNr) ? g_syscall_names[nr] : nullptr;
  append(name ? name : "unknown");
  append(")\n");
  WriteAll(buf, len);
  // Where the call came from (backtrace was primed before the filter: its first use
  // loads libgcc_s, which would open files).
  void* frames[32];
  int n = backtrace(frames, 32);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  abort();
}

absl::Status InstallDebugHandler() {
  FillSyscallNames();
  void* frames[4];
  (void)backtrace(frames, 4);
  struct sigaction sa = {};
  sa.sa_sigaction = OnSeccompViolation;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSYS, &sa, nullptr) != 0) return ErrnoStatus("sigaction(SIGSYS)");
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGSYS);
  if (sigprocmask(SIG_UNBLOCK, &set, nullptr) != 0) return ErrnoStatus("sigprocmask(SIGSYS)");
  return absl::OkStatus();
}

}  // namespace

static_assert(kSetIdCapabilities ==
              ((1ull << CAP_SETGID) | (1ull << CAP_SETUID) | (1ull << CAP_SETPCAP)));

namespace {
// Host ids a helper becomes when started as root.
constexpr uid_t kNobodyUid = 65534;
constexpr gid_t kNogroupGid = 65534;
}  // namespace

// As host root: nobody. Runs after DropCapabilities kept only CAP_SETUID, CAP_SETGID
// and CAP_SETPCAP (and locked the securebits, so the uid change does not drop them by
// itself); drops those from every set last.
ConfineLayer BecomeHostNobody(bool host_root, uint64_t keep) {
  ConfineLayer layer{"host-identity", false, ""};
  if (!host_root) {
    layer.applied = true;
    layer.detail = "the caller's own uid";
    return layer;
  }
  if (setgroups(0, nullptr) != 0 || setresgid(kNogroupGid, kNogroupGid, kNogroupGid) != 0 ||
      setresuid(kNobodyUid, kNobodyUid, kNobodyUid) != 0) {
    layer.detail = absl::StrCat("setresuid(nobody): ", strerror(errno));
    return layer;
  }
  for (int cap : {CAP_SETUID, CAP_SETGID, CAP_SETPCAP}) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      layer.detail = absl::StrCat("prctl(PR_CAPBSET_DROP, ", cap, ") as nobody: ", strerror(errno));
      return layer;
    }
  }
  keep &= ~kSetIdCapabilities;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
  for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; ++i) {
    caps[i].permitted = caps[i].effective = static_cast<uint32_t>(keep >> (32 * i));
  }
  if (syscall(SYS_capset, &header, caps) != 0) {
    layer.detail = absl::StrCat("capset as nobody: ", strerror(errno));
    return layer;
  }
  // A credential change clears the parent-death signal: the helper dies with the CLI.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  layer.applied = true;
  layer.detail = keep == 0 ? "host nobody (65534), no capabilities"
                           : "host nobody (65534), file-access capabilities only";
  return layer;
}

namespace {
// What seccomp_load does, with CTL_TSYNC when `tsync` (no_new_privs is already set).
// `what` names the allowlist in errors.
absl::Status LoadFilter(absl::Span<const sock_filter> prog, bool tsync, absl::string_view what) {
  const sock_fprog fprog{.len = static_cast<unsigned short>(prog.size()),
                         .filter = const_cast<sock_filter*>(prog.data())};
  const long rc =
      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, tsync ? SECCOMP_FILTER_FLAG_TSYNC : 0, &fprog);
  if (rc < 0) {
    return ErrnoStatus(absl::StrCat("seccomp(SECCOMP_SET_MODE_FILTER", tsync ? ", TSYNC" : "", ", ",
                                    what, " allowlist)"));
  }
  if (rc > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("seccomp TSYNC: thread ", rc, " could not take the ", what, " allowlist"));
  }
  return absl::OkStatus();
}
}  // namespace

absl::Status LockDown(ConfineReport& report, absl::string_view what,
                      absl::Span<const sock_filter> built_in,
                      const std::function<absl::StatusOr<ScmpFilter>(uint32_t)>& build) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return ErrnoStatus("prctl(PR_SET_NO_NEW_PRIVS, 1)");
  }
  report.layers.push_back({"no-new-privs", true, "set"});
  const char* env = getenv("USENTRY_DEBUG_SECCOMP");
  bool debug = env != nullptr && strcmp(env, "1") == 0;
  if (!debug) {
    RETURN_IF_ERROR(LoadFilter(built_in, /*tsync=*/false, what));
    report.layers.push_back({"seccomp", true, "allowlist, kill (built in)"});
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(InstallSeccompDebugHandler());
  // Only the default action differs from the built-in program: libseccomp builds it now.
  ASSIGN_OR_RETURN(ScmpFilter filter, build(SCMP_ACT_TRAP));
  int rc = seccomp_load(filter.get());
  if (rc < 0) return ErrnoStatus(absl::StrCat("seccomp_load(", what, " allowlist)"), -rc);
  report.layers.push_back({"seccomp", true, "allowlist, violations trap (debug)"});
  return absl::OkStatus();
}

ConfineLayer DropCapabilities(bool enabled, uint64_t keep) {
  ConfineLayer layer{"capabilities", false, ""};
  if (!enabled) {
    layer.detail = "disabled";
    return layer;
  }
  std::vector<std::string> problems;
  // Root in our namespace must not regain capabilities on a (forbidden anyway) execve.
  if (prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                   SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_NOROOT |
                                   SECBIT_NOROOT_LOCKED) != 0) {
    problems.push_back(ErrnoText("prctl(PR_SET_SECUREBITS)"));
  }
  for (int cap = 0; cap < 64; ++cap) {
    if (keep & (1ull << cap)) continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) continue;
    if (errno == EINVAL) break;  // past the kernel's last capability
    problems.push_back(ErrnoText(absl::StrCat("prctl(PR_CAPBSET_DROP, ", cap, ")")));
    break;
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    problems.push_back(ErrnoText("prctl(PR_CAP_AMBIENT_CLEAR_ALL)"));
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  // Only capabilities the process holds can stay (capset cannot add any).
  __user_cap_data_struct held[_LINUX_CAPABILITY_U32S_3] = {};
  if (keep != 0 && syscall(SYS_capget, &header, held) == 0) {
    for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; ++i) {
      uint32_t k = static_cast<uint32_t>(keep >> (32 * i)) & held[i].permitted;
      data[i].permitted = data[i].effective = k;
    }
  }
  if (syscall(SYS_capset, &header, data) != 0) {
    layer.detail = ErrnoText("capset");
    return layer;
  }
  layer.applied = problems.empty();
  layer.detail = !problems.empty() ? absl::StrJoin(problems, "; ")
                 : keep == 0       ? "all sets empty, bounding set empty, securebits locked"
                                   : "only the file-access capabilities kept, securebits locked";
  return layer;
}

absl::Status InstallSeccompDebugHandler() { return InstallDebugHandler(); }

std::vector<std::string> ConfineReport::Missing() const {
  std::vector<std::string> out;
  for (const ConfineLayer& l : layers) {
    if (!l.applied) out.push_back(absl::StrCat(l.name, " (", l.detail, ")"));
  }
  return out;
}

std::string ConfineReport::ToString() const {
  std::vector<std::string> parts;
  for (const ConfineLayer& l : layers) {
    parts.push_back(absl::StrCat(l.name, l.applied ? "=on" : "=off", " (", l.detail, ")"));
  }
  return absl::StrJoin(parts, ", ");
}

void StartCalibration() {
  // Before the thread exists: a second thread's first malloc may otherwise create the
  // arena whose trimming WarmUpLazyCaches is there to prevent.
  mallopt(M_ARENA_MAX, 1);
  absl::MutexLock lock(&g_calibration_mu);
  if (g_calibration) return;
  auto state = std::make_shared<CalibrationState>();
  g_calibration_state = state;
  NoteCycleClockCalibrationStarted();
  g_calibration.emplace([state] {
    state->filtered = ConfineCalibrationThread().ok();
    state->settled.Notify();
    (void)absl::base_internal::NominalCPUFrequency();
    NoteCycleClockCalibrationDone();
  });
}

void FinishCalibration() {
  std::optional<std::thread> t;
  std::shared_ptr<CalibrationState> state;
  {
    absl::MutexLock lock(&g_calibration_mu);
    t.swap(g_calibration);
    state.swap(g_calibration_state);
  }
  if (!t) return;
  state->settled.WaitForNotification();
  if (state->filtered) {
    t->detach();  // it holds `state`; the process's exit ends it if it still sleeps
  } else {
    t->join();  // unfiltered: it may not run while app input is read
  }
}

absl::Status ConfineCalibrationThread() {
  // For this thread alone (no TSYNC): no_new_privs, then the built-in program.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return ErrnoStatus("prctl(PR_SET_NO_NEW_PRIVS, 1)");
  }
  return LoadFilter(CalibrationBpfProgram(), /*tsync=*/false, "calibration");
}

absl::StatusOr<ConfineReport> ConfineSentry(const ConfineOptions& options) {
  ConfineReport report;
  WarmUpLazyCaches();
  // The calibration thread stays outside the filter (it may not have read /sys yet): the
  // filter goes on this thread only, and every thread started later inherits it.
  const bool tsync = !Calibrating();

  ASSIGN_OR_RETURN(ConfineLayer root, PivotToEmptyRoot(options));
  report.layers.push_back(std::move(root));
  report.layers.push_back(DropCapabilities(options.drop_capabilities, 0));

  // Changing credentials resets dumpability; the sentry must stay ptrace-able by itself
  // (its stubs inherit the flag, and PTRACE_ATTACH to a non-dumpable stub is refused).
  if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return ErrnoStatus("prctl(PR_SET_DUMPABLE, 1)");

  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return ErrnoStatus("prctl(PR_SET_NO_NEW_PRIVS, 1)");
  }
  report.layers.push_back({"no-new-privs", true, "set"});

  if (!options.seccomp) {
    report.layers.push_back({"seccomp", false, "disabled"});
    return report;
  }
  const char* env = getenv("USENTRY_DEBUG_SECCOMP");
  bool debug = options.debug_seccomp || (env != nullptr && strcmp(env, "1") == 0);
  if (debug) RETURN_IF_ERROR(InstallDebugHandler());
  if (!debug) {
    RETURN_IF_ERROR(LoadFilter(SentryBpfProgram(options.allow_ptrace), tsync, "sentry"));
    report.layers.push_back({"seccomp", true, "allowlist, kill (built in)"});
    return report;
  }
  // Violations trap into the naming handler: a program libseccomp builds now, since only
  // the default action differs from the built-in one.
  ASSIGN_OR_RETURN(ScmpFilter filter, BuildSentryFilter(SCMP_ACT_TRAP, options.allow_ptrace));
  int rc = seccomp_attr_set(filter.get(), SCMP_FLTATR_CTL_TSYNC, tsync ? 1 : 0);
  if (rc < 0) return ErrnoStatus("seccomp_attr_set(SCMP_FLTATR_CTL_TSYNC)", -rc);
  rc = seccomp_load(filter.get());
  if (rc < 0) return ErrnoStatus("seccomp_load(sentry allowlist)", -rc);
  report.layers.push_back({"seccomp", true, "allowlist, violations trap (debug)"});
  return report;
}

}  // namespace usentry::sentry::confine
