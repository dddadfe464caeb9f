// The sentry's default seccomp programs, compiled at build time (sentry_bpf_gen runs
// BuildSentryFilter and ExportBpf and writes them out as data). libseccomp took ~0.9 ms
// of CPU in every run to build and export the same program, on a machine whose two
// vCPUs the sentry, the gofer and the zygote are all starting on; the program never
// depends on the run. seccomp_policy_test checks the built-in copy against libseccomp.
#ifndef USENTRY_SENTRY_CONFINE_SENTRY_BPF_PROGRAM_H_
#define USENTRY_SENTRY_CONFINE_SENTRY_BPF_PROGRAM_H_

#include <linux/filter.h>

#include "absl/types/span.h"

namespace usentry::sentry::confine {

// BuildSentryFilter(SCMP_ACT_KILL_PROCESS, allow_ptrace), exported to classic BPF.
absl::Span<const sock_filter> SentryBpfProgram(bool allow_ptrace);

}  // namespace usentry::sentry::confine

#endif  // USENTRY_SENTRY_CONFINE_SENTRY_BPF_PROGRAM_H_
