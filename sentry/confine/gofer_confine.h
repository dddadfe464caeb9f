// ConfineGofer: the gofer's last setup step, after it opened its tree roots and before
// it serves the sentry. The gofer is the only process that touches host files, so a
// compromised gofer must reach nothing but the trees it was given: no new privileges,
// only the file-access capabilities, and a seccomp allowlist of the *at() calls it
// makes on FDs it holds (no socket, no exec, no namespace changes, no ptrace).
#ifndef USENTRY_SENTRY_CONFINE_GOFER_CONFINE_H_
#define USENTRY_SENTRY_CONFINE_GOFER_CONFINE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "sentry/confine/confine.h"
#include "sentry/confine/seccomp_policy.h"

namespace usentry::sentry::confine {

// Builds the gofer's allowlist (docs/security.md lists each entry and why).
// Whose host permissions the gofer serves its trees with.
enum class GoferIdentity {
  // The caller's (its --rootfs and --mount trees): a gofer started as root keeps only
  // CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER and CAP_FSETID, so it
  // still reads and writes those host files as root does.
  kCaller,
  // An ordinary host user's (the default host view): started as root it becomes host
  // nobody with no capability at all, so it can only ever serve what every host user
  // may read; a compromised sentry asking it for a root-only file gets EACCES.
  kHostNobody,
};

// Drops capabilities as `identity` says, sets no_new_privs and installs the allowlist
// (violations kill; USENTRY_DEBUG_SECCOMP=1 traps and names them). Irreversible.
absl::StatusOr<ConfineReport> ConfineGofer(GoferIdentity identity = GoferIdentity::kCaller);

}  // namespace usentry::sentry::confine

#endif  // USENTRY_SENTRY_CONFINE_GOFER_CONFINE_H_
