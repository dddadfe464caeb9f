// The gofer's confinement (its allowlist is gofer_filter.cc; docs/security.md, "Gofer").
#include "sentry/confine/gofer_confine.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "base/status_macros.h"
#include "sentry/confine/bpf_programs.h"

namespace usentry::sentry::confine {
namespace {

// Capabilities a root gofer keeps: reading and writing host files as root would.
constexpr uint64_t kFileCapabilities = (1ull << CAP_CHOWN) | (1ull << CAP_DAC_OVERRIDE) |
                                       (1ull << CAP_DAC_READ_SEARCH) | (1ull << CAP_FOWNER) |
                                       (1ull << CAP_FSETID);

}  // namespace

absl::StatusOr<ConfineReport> ConfineGofer(GoferIdentity identity) {
  ConfineReport report;
  // As root both become host nobody: the view's gofer with no capability, the caller's
  // with the file-access ones (what it creates is chowned back to the caller,
  // GoferConfig::new_owner). The process stays non-dumpable after the uid change, so a
  // process of that uid (a sentry is host nobody too) cannot ptrace it; its own
  // /proc/self/fd stays open to it (Linux lets a task into its own fd directory).
  const bool host_root = geteuid() == 0;
  const uint64_t keep = identity == GoferIdentity::kHostNobody ? 0 : kFileCapabilities;
  report.layers.push_back(DropCapabilities(true, keep | (host_root ? kSetIdCapabilities : 0)));
  report.layers.push_back(BecomeHostNobody(host_root, keep));
  RETURN_IF_ERROR(LockDown(report, "gofer", GoferBpfProgram(),
                           [](uint32_t action) { return BuildGoferFilter(action); }));
  return report;
}

}  // namespace usentry::sentry::confine
