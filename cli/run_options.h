// Command-line parsing and validation for `usentry`: turns argv into a validated
// Command. No processes are created here, so all of it is unit-testable.
#ifndef USENTRY_CLI_RUN_OPTIONS_H_
#define USENTRY_CLI_RUN_OPTIONS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace usentry::cli {

// The environment every sandboxed program starts from (plus TERM if set, plus --env).
inline constexpr char kDefaultPath[] =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
inline constexpr char kDefaultHome[] = "/root";
inline constexpr char kDefaultLang[] = "C.UTF-8";
inline constexpr char kDefaultWorkdir[] = "/workspace";

// A validated --mount: `source` is an existing host path, canonical (realpath);
// `target` an absolute, normalized sandbox path.
struct MountFlag {
  std::string source;
  std::string target;
  bool read_only = true;
};

struct RunOptions {
  std::optional<std::string> rootfs;  // canonical host directory
  std::vector<MountFlag> mounts;
  std::string workdir = kDefaultWorkdir;
  std::vector<std::string> env;  // the complete environment, "K=V"
  bool strace = false;
  bool report_unsupported = false;
  bool syscall_patching = true;  // systrap: rewrite hot syscall sites (--no-syscall-patching)
  std::string platform = "auto";
  std::vector<std::string> argv;  // PROGRAM ARGS...
};

struct Command {
  enum class Kind { kRun, kSyscalls, kVersion, kHelp };
  Kind kind = Kind::kHelp;
  RunOptions run;         // kRun
  bool markdown = false;  // kSyscalls
  std::string help;       // kHelp: text to print on stdout (exit 0)
};

// Parses `args` (without argv[0]). `term` is the caller's $TERM or nullptr. An error's
// message is the one-line reason (without the "usentry: " prefix); exit code 125.
absl::StatusOr<Command> ParseCommandLine(const std::vector<std::string>& args, const char* term);

// "SRC:DST[:ro|rw]" -> MountFlag. Checks that SRC exists (and canonicalizes it).
absl::StatusOr<MountFlag> ParseMountSpec(absl::string_view spec);

// Absolute sandbox path, normalized ("//a/./b/" -> "/a/b"); ".." and relative paths are
// refused because the sandbox's view is not the host's and a guess would be wrong.
absl::StatusOr<std::string> NormalizeSandboxPath(absl::string_view path);

// PATH, HOME, LANG, TERM (only if `term` is set), then each "K=V" of `extra`, a later
// value replacing an earlier one of the same name. Nothing else of the host.
absl::StatusOr<std::vector<std::string>> BuildEnvironment(const std::vector<std::string>& extra,
                                                          const char* term);

}  // namespace usentry::cli

#endif  // USENTRY_CLI_RUN_OPTIONS_H_
