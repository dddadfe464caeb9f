// `usentry run`: turns validated RunOptions into the gofer's and the sentry's
// configuration and runs one sandbox to completion.
#ifndef USENTRY_CLI_RUN_COMMAND_H_
#define USENTRY_CLI_RUN_COMMAND_H_

#include "cli/run_options.h"
#include "gofer/server.h"
#include "sentry/sentry_main.h"

namespace usentry::cli {

// Trees the gofer serves: "root" (default host view or --rootfs), then "mount<i>" for
// the i-th --mount.
gofer::GoferConfig MakeGoferConfig(const RunOptions& options);
sentry::SentryConfig MakeSentryConfig(const RunOptions& options);

// Runs the sandbox and returns `usentry run`'s exit code; setup failures are reported on
// stderr as one "usentry: ..." line and give 125.
int RunCommand(const RunOptions& options);

}  // namespace usentry::cli

#endif  // USENTRY_CLI_RUN_COMMAND_H_
