// Command-line parsing and validation for `usentry`: turns argv into a validated
// Command. No processes are created here, so all of it is unit-testable.
#ifndef USENTRY_CLI_RUN_OPTIONS_H_
#define USENTRY_CLI_RUN_OPTIONS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sentry/policy/policy.h"

namespace usentry::cli {

// The environment every sandboxed program starts from (plus TERM if set, plus --env).
inline constexpr char kDefaultPath[] =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
inline constexpr char kDefaultHome[] = "/root";           // root's (--user 0)
inline constexpr char kDefaultUserHome[] = "/home/user";  // everyone else's, made for the run
inline constexpr char kDefaultLang[] = "C.UTF-8";
inline constexpr char kDefaultWorkdir[] = "/workspace";

// A validated `usentry run`: the run's Policy (what the app may reach and use) and how
// to run it (platform, tracing), kept apart as ARCHITECTURE.md asks.
struct RunOptions {
  policy::Policy policy;
  std::vector<std::string> env;  // the complete environment, "K=V" (from the policy)
  bool strace = false;
  bool report_unsupported = false;
  bool syscall_patching = true;  // systrap: rewrite hot syscall sites (--no-syscall-patching)
  std::string platform = "auto";
  std::vector<std::string> argv;  // PROGRAM ARGS...
};

struct Command {
  enum class Kind { kRun, kSyscalls, kVersion, kHelp, kPolicyCheck };
  Kind kind = Kind::kHelp;
  RunOptions run;             // kRun
  bool markdown = false;      // kSyscalls
  std::string help;           // kHelp: text to print on stdout (exit 0)
  policy::Policy checked;     // kPolicyCheck: the policy file, loaded and validated
  std::string policy_file;    // kPolicyCheck
  bool print_policy = false;  // kPolicyCheck --print: the canonical JSON on stdout
};

// Parses `args` (without argv[0]). `term` is the caller's $TERM or nullptr. An error's
// message is the one-line reason (without the "usentry: " prefix); exit code 125.
absl::StatusOr<Command> ParseCommandLine(const std::vector<std::string>& args, const char* term);

// PATH, HOME (`home`), LANG, TERM (only if `term` is set), then each "K=V" of `extra`,
// a later value replacing an earlier one of the same name. Nothing else of the host.
absl::StatusOr<std::vector<std::string>> BuildEnvironment(const std::vector<std::string>& extra,
                                                          const char* term,
                                                          const std::string& home = kDefaultHome);
// The home directory of an identity: /root for uid 0, kDefaultUserHome otherwise.
std::string HomeOf(const policy::Identity& id);

}  // namespace usentry::cli

#endif  // USENTRY_CLI_RUN_OPTIONS_H_
