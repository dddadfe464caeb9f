// ConfineSentry: the sentry's last setup step before it runs the app. Pivots to an empty
// read-only root, drops every privilege and installs the seccomp allowlist, so that a
// compromised sentry reaches nothing but the FDs it already holds.
#ifndef USENTRY_SENTRY_CONFINE_CONFINE_H_
#define USENTRY_SENTRY_CONFINE_CONFINE_H_

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "sentry/confine/seccomp_policy.h"

namespace usentry::sentry::confine {

struct ConfineOptions {
  // The caller runs in a mount namespace of its own (clone(CLONE_NEWMOUNT) succeeded).
  // Without one the root is left alone: making "/" private or pivoting would change the
  // host's mount table.
  bool own_mount_namespace = true;
  // Existing directory the empty root (a tiny tmpfs) is mounted on before pivot_root.
  std::string new_root_dir = "/tmp";
  bool pivot_root = true;
  bool drop_capabilities = true;
  bool seccomp = true;
  // The ptrace requests the ptrace platform drives its stubs with; the systrap platform
  // needs none, so the allowlist leaves ptrace out entirely when it runs.
  bool allow_ptrace = true;
  // SCMP_ACT_TRAP + a SIGSYS handler naming the syscall, instead of killing silently.
  // ConfineSentry also turns it on when USENTRY_DEBUG_SECCOMP=1.
  bool debug_seccomp = false;
};

// One defense layer and whether it is in force.
struct ConfineLayer {
  std::string name;  // "empty-root", "capabilities", "no-new-privs", "seccomp"...
  bool applied = false;
  std::string detail;  // why not applied, or a note on what was done
};

struct ConfineReport {
  std::vector<ConfineLayer> layers;
  // Layers that could not be applied, as "name (detail)" strings.
  std::vector<std::string> Missing() const;
  std::string ToString() const;
};

// Confines the calling process, which must be single-threaded but for StartCalibration's
// thread (seccomp is installed with TSYNC when that thread is not running: it has a
// filter of its own).
// Irreversible. Layers the host does not permit (no mount namespace, no CAP_SETPCAP) are
// skipped and reported; a failure that leaves the process in an unknown state
// (no_new_privs, installing the filter) is an error and the caller must exit.
// After it returns OK with the seccomp layer applied, opening files, sockets, exec and
// namespace changes kill the process.
absl::StatusOr<ConfineReport> ConfineSentry(const ConfineOptions& options);

// Building blocks shared with the gofer's confinement (gofer_confine.h).
// Locks the securebits and clears every capability except those in `keep` (bit N =
// capability N) from the bounding, permitted and effective sets; ambient is cleared.
// Missing CAP_SETPCAP (no user namespace, not root) means the bounding set stays.
ConfineLayer DropCapabilities(bool enabled, uint64_t keep);
// The capabilities BecomeHostNobody needs DropCapabilities to have kept.
inline constexpr uint64_t kSetIdCapabilities = (1ull << 6) | (1ull << 7) | (1ull << 8);
// As host root (`host_root`): setresgid/setresuid to nobody (65534), supplementary
// groups cleared, then CAP_SETUID/SETGID/SETPCAP dropped from every set, so that only
// the capabilities in `keep` (kept by DropCapabilities too) are left; the parent-death
// signal is re-armed. Otherwise nothing to do.
ConfineLayer BecomeHostNobody(bool host_root, uint64_t keep = 0);
// SIGSYS handler naming the offending syscall (USENTRY_DEBUG_SECCOMP=1), then abort.
absl::Status InstallSeccompDebugHandler();
// The last two layers of the gofer's and netgate's confinement: no_new_privs, then the
// allowlist: `built_in`, its program compiled at build time (bpf_programs.h), or, when
// USENTRY_DEBUG_SECCOMP=1, the one `build` makes now for SCMP_ACT_TRAP, with the naming
// handler. `what` names the allowlist in errors. Either failing leaves the process
// half-confined: the caller must exit.
absl::Status LockDown(ConfineReport& report, absl::string_view what,
                      absl::Span<const sock_filter> built_in,
                      const std::function<absl::StatusOr<ScmpFilter>(uint32_t)>& build);

// Starts Abseil's CPU-frequency calibration on a thread of its own: absl::Mutex needs
// the frequency the first time a thread queues on it, and finding it reads /sys (which
// the sentry's filter forbids) and, on a VM without tsc_freq_khz, then measures the TSC
// by sleeping 3-7 ms. The thread first confines itself with a filter of its own
// (ConfineCalibrationThread): it can then only read files, sleep and exit, so the
// sentry waits for it neither before confining itself (ConfineSentry filters the
// caller only, and later threads inherit that) nor before the app runs.
void StartCalibration();
// Before any app input is read: waits until StartCalibration's thread has filtered
// itself (it does so first thing), and joins it if that failed; a filtered thread is
// left to finish by itself. Idempotent.
void FinishCalibration();
// The calibration thread's filter, for the calling thread only: openat read-only, read,
// close, sleeping, clock reads, futex, signal masks and exit are allowed, anything else
// fails with EPERM. Once the sentry has pivoted to its empty root (ConfineSentry), a
// read-only openat reaches no host file.
absl::Status ConfineCalibrationThread();

}  // namespace usentry::sentry::confine

#endif  // USENTRY_SENTRY_CONFINE_CONFINE_H_
