// What every allowlist builder of the policy library (seccomp_policy.cc,
// gofer_filter.cc, netgate_filter.cc) starts from and adds with. Internal to it.
#ifndef USENTRY_SENTRY_CONFINE_FILTER_RULES_H_
#define USENTRY_SENTRY_CONFINE_FILTER_RULES_H_

#include <seccomp.h>

#include <cstdint>
#include <initializer_list>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sentry/confine/seccomp_policy.h"

namespace usentry::sentry::confine {

// An empty filter: `default_action` for every syscall not added, `badarch_action` for
// every syscall of another ABI (i386 int 0x80, x32). It compiles to a binary tree of
// syscall numbers (libseccomp's optimization level 2).
absl::StatusOr<ScmpFilter> NewFilter(uint32_t default_action, uint32_t badarch_action);

// `action` for syscall `nr` when all of `args`' comparisons hold. Errors name the call.
absl::Status AddRule(scmp_filter_ctx ctx, int nr, std::initializer_list<scmp_arg_cmp> args = {},
                     uint32_t action = SCMP_ACT_ALLOW);

}  // namespace usentry::sentry::confine

#endif  // USENTRY_SENTRY_CONFINE_FILTER_RULES_H_
