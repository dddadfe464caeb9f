// The usentry binary: `usentry run`, `usentry policy check`, `usentry syscalls --markdown`,
// `usentry version`.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "base/phases.h"
#include "cli/run_command.h"
#include "cli/run_options.h"

#if __has_include("sentry/syscalls/syscalls_doc.h")
#include "sentry/syscalls/syscalls_doc.h"
#else
namespace usentry::sentry {
// Markdown of the syscall table (docs/syscalls.md); defined in usentry_sentry.
std::string SyscallsMarkdown();
}  // namespace usentry::sentry
#endif

namespace {

constexpr char kVersion[] = "usentry 0.1.0 (platforms: systrap, ptrace)";

// Exit code of usentry itself failing (bad flag, setup error), as documented.
constexpr int kUsageError = 125;

}  // namespace

int main(int argc, char** argv) {
  usentry::EnablePhasesFromEnv();
  usentry::Phase("cli-main");
  // Debian builds Abseil without NDEBUG, which turns on absl::Mutex's lock-order graph:
  // every Lock then takes a global lock and updates the graph, on the sentry's path of
  // every syscall (~30 ns of a ~430 ns patched getpid). Runs skip it; unit tests keep
  // it, and so does the suite's use of this binary (test.sh sets USENTRY_DEBUG_LOCKS=1),
  // where a lock-order cycle aborts the sentry with both stacks.
  const char* debug_locks = getenv("USENTRY_DEBUG_LOCKS");
  if (debug_locks == nullptr || strcmp(debug_locks, "1") != 0) {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<usentry::cli::Command> command =
      usentry::cli::ParseCommandLine(args, getenv("TERM"));
  if (!command.ok()) {
    fprintf(stderr, "usentry: %s\n", std::string(command.status().message()).c_str());
    return kUsageError;
  }
  using Kind = usentry::cli::Command::Kind;
  switch (command->kind) {
    case Kind::kHelp:
      fputs(command->help.c_str(), stdout);
      return 0;
    case Kind::kVersion:
      printf("%s\n", kVersion);
      return 0;
    case Kind::kSyscalls:
      fputs(usentry::sentry::SyscallsMarkdown().c_str(), stdout);
      return 0;
    case Kind::kRun: {
      const int rc = usentry::cli::RunCommand(command->run);
      usentry::Phase("cli-exit");
      // The sandbox is gone and every file the run wrote is closed; what is left is this
      // process's static destructors (~0.1 ms), which write nothing. stdio is flushed.
      fflush(nullptr);
      _exit(rc);
    }
    case Kind::kPolicyCheck:
      if (command->print_policy) {
        printf("%s\n", command->checked.ToJson().c_str());
      } else {
        printf("%s: ok (%s)\n", command->policy_file.c_str(), command->checked.Digest().c_str());
      }
      return 0;
  }
  return kUsageError;
}
