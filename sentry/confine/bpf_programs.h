// The seccomp programs usentry's processes load, compiled at build time: bpf_programs_gen
// runs each allowlist's builder (seccomp_policy.h) through libseccomp and writes the
// BPF out as data. Building one at run time cost 0.4-1.7 ms of CPU (the gofer's) and
// ~0.5 ms (the calibration thread's), on a machine whose two vCPUs the sentry, the gofer
// and the zygote are all starting on; the sentry's had cost ~0.9 ms. No program depends
// on the run. seccomp_policy_test checks every built-in copy against libseccomp.
#ifndef USENTRY_SENTRY_CONFINE_BPF_PROGRAMS_H_
#define USENTRY_SENTRY_CONFINE_BPF_PROGRAMS_H_

#include <linux/filter.h>

#include "absl/types/span.h"

namespace usentry::sentry::confine {

// BuildSentryFilter(SCMP_ACT_KILL_PROCESS, allow_ptrace), exported to classic BPF.
absl::Span<const sock_filter> SentryBpfProgram(bool allow_ptrace);
// BuildGoferFilter(SCMP_ACT_KILL_PROCESS).
absl::Span<const sock_filter> GoferBpfProgram();
// BuildNetgateFilter(SCMP_ACT_KILL_PROCESS).
absl::Span<const sock_filter> NetgateBpfProgram();
// BuildCalibrationFilter().
absl::Span<const sock_filter> CalibrationBpfProgram();

}  // namespace usentry::sentry::confine

#endif  // USENTRY_SENTRY_CONFINE_BPF_PROGRAMS_H_
