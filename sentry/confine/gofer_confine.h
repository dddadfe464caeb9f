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
absl::StatusOr<ScmpFilter> BuildGoferFilter(uint32_t default_action = SCMP_ACT_KILL_PROCESS);

// Drops capabilities except CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
// CAP_FOWNER and CAP_FSETID (a gofer started as root still reads and writes the host
// files of the trees as root does), sets no_new_privs and installs the allowlist
// (violations kill; USENTRY_DEBUG_SECCOMP=1 traps and names them). Irreversible.
absl::StatusOr<ConfineReport> ConfineGofer();

}  // namespace usentry::sentry::confine

#endif  // USENTRY_SENTRY_CONFINE_GOFER_CONFINE_H_
