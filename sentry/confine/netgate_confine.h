// ConfineNetgate: netgate's last setup step, after its resolver read the host's resolver
// configuration and before it serves the sentry. netgate is the only process that can
// reach the host network, so a compromised netgate must reach nothing else: no files
// (its root becomes an empty, deleted directory), no identity (host nobody when started
// as root), no capabilities, no new privileges, and a seccomp allowlist of what a dialer
// needs: internet sockets (TCP/UDP only, no raw or packet sockets), the AF_UNIX
// socketpairs of its UDP relays, I/O and poll (docs/security.md lists every entry).
#ifndef USENTRY_SENTRY_CONFINE_NETGATE_CONFINE_H_
#define USENTRY_SENTRY_CONFINE_NETGATE_CONFINE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "sentry/confine/confine.h"
#include "sentry/confine/seccomp_policy.h"

namespace usentry::sentry::confine {

// Single-threaded callers only. Irreversible. Layers the host refuses (no CAP_SYS_CHROOT
// and no user namespace for it) are reported; failing to set no_new_privs or to load
// the filter is an error and the caller must exit.
absl::StatusOr<ConfineReport> ConfineNetgate();

}  // namespace usentry::sentry::confine

#endif  // USENTRY_SENTRY_CONFINE_NETGATE_CONFINE_H_
