// `usentry run`: turns validated RunOptions into the gofer's and the sentry's
// configuration and runs one sandbox to completion.
#ifndef USENTRY_CLI_RUN_COMMAND_H_
#define USENTRY_CLI_RUN_COMMAND_H_

#include <optional>

#include "cli/run_options.h"
#include "gofer/server.h"
#include "sentry/confine/gofer_confine.h"
#include "sentry/sentry_main.h"

namespace usentry::cli {

// The gofers and the trees each serves. With --rootfs one gofer, with the caller's host
// permissions, serves "root" (the image) and "mount<i>" for the i-th --mount. The default
// host view is served by a gofer of its own that gives up the caller's identity (as
// root: host nobody, no capabilities), and the --mount trees, if any, by a second one
// with the caller's.
struct GoferPlan {
  gofer::GoferConfig view;
  sentry::confine::GoferIdentity view_identity;
  std::optional<gofer::GoferConfig> mounts;  // the second gofer's, when there is one
};
GoferPlan MakeGoferPlan(const RunOptions& options);
sentry::SentryConfig MakeSentryConfig(const RunOptions& options);

// Runs the sandbox and returns `usentry run`'s exit code; setup failures are reported on
// stderr as one "usentry: ..." line and give 125.
int RunCommand(const RunOptions& options);

}  // namespace usentry::cli

#endif  // USENTRY_CLI_RUN_COMMAND_H_
