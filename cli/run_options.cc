// Command-line parsing (CLI11) and validation of run options.
#include "cli/run_options.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace usentry::cli {
namespace {

absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

// Canonical host path of an existing file or directory.
absl::StatusOr<std::string> RealPath(const std::string& path, absl::string_view what) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) {
    return Invalid(absl::StrCat(what, ": ", path, ": ", strerror(errno)));
  }
  return std::string(buf);
}

// Raw flag values as CLI11 fills them; validated by ToRunOptions.
struct RawRunFlags {
  std::string rootfs;
  std::vector<std::string> mounts;
  std::string workdir = kDefaultWorkdir;
  std::vector<std::string> env;
  bool strace = false;
  bool report_unsupported = false;
  bool no_syscall_patching = false;
  std::string platform = "auto";
};

absl::StatusOr<RunOptions> ToRunOptions(const RawRunFlags& raw, std::vector<std::string> argv,
                                        const char* term) {
  RunOptions run;
  if (!raw.rootfs.empty()) {
    ASSIGN_OR_RETURN(std::string rootfs, RealPath(raw.rootfs, "--rootfs"));
    struct stat st;
    if (stat(rootfs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Invalid(absl::StrCat("--rootfs ", raw.rootfs, ": not a directory"));
    }
    run.rootfs = rootfs;
  }
  for (const std::string& spec : raw.mounts) {
    ASSIGN_OR_RETURN(MountFlag mount, ParseMountSpec(spec));
    for (const MountFlag& other : run.mounts) {
      if (other.target == mount.target) {
        return Invalid(absl::StrCat("--mount ", spec, ": ", mount.target, " is mounted twice"));
      }
    }
    run.mounts.push_back(std::move(mount));
  }
  absl::StatusOr<std::string> workdir = NormalizeSandboxPath(raw.workdir);
  if (!workdir.ok()) {
    return Invalid(absl::StrCat("--workdir ", raw.workdir, ": ", workdir.status().message()));
  }
  run.workdir = *workdir;
  ASSIGN_OR_RETURN(run.env, BuildEnvironment(raw.env, term));
  run.strace = raw.strace;
  run.report_unsupported = raw.report_unsupported;
  run.syscall_patching = !raw.no_syscall_patching;
  run.platform = raw.platform;
  if (argv.empty())
    return Invalid("run: no program given (usage: usentry run [FLAGS] -- PROGRAM [ARGS...])");
  if (argv[0].empty()) return Invalid("run: empty program name");
  run.argv = std::move(argv);
  return run;
}

}  // namespace

absl::StatusOr<std::string> NormalizeSandboxPath(absl::string_view path) {
  if (path.empty() || path[0] != '/') return Invalid("must be an absolute path");
  std::vector<absl::string_view> parts;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") return Invalid("must not contain \"..\"");
    parts.push_back(part);
  }
  return absl::StrCat("/", absl::StrJoin(parts, "/"));
}

absl::StatusOr<MountFlag> ParseMountSpec(absl::string_view spec) {
  std::vector<std::string> parts = absl::StrSplit(spec, ':');
  auto error = [&](absl::string_view why) {
    return Invalid(absl::StrCat("--mount ", spec, ": ", why));
  };
  if (parts.size() < 2 || parts.size() > 3) return error("expected SRC:DST[:ro|rw]");
  MountFlag mount;
  if (parts.size() == 3) {
    if (parts[2] == "ro") {
      mount.read_only = true;
    } else if (parts[2] == "rw") {
      mount.read_only = false;
    } else {
      return error(absl::StrCat("unknown mode \"", parts[2], "\" (expected ro or rw)"));
    }
  }
  if (parts[0].empty()) return error("empty source");
  char buf[PATH_MAX];
  if (realpath(parts[0].c_str(), buf) == nullptr) {
    return error(absl::StrCat("source ", parts[0], ": ", strerror(errno)));
  }
  mount.source = buf;
  absl::StatusOr<std::string> target = NormalizeSandboxPath(parts[1]);
  if (!target.ok()) {
    return error(absl::StrCat("destination ", parts[1], " ", target.status().message()));
  }
  if (*target == "/") return error("cannot mount over the sandbox root (use --rootfs)");
  mount.target = *target;
  return mount;
}

absl::StatusOr<std::vector<std::string>> BuildEnvironment(const std::vector<std::string>& extra,
                                                          const char* term) {
  std::vector<std::string> env = {absl::StrCat("PATH=", kDefaultPath),
                                  absl::StrCat("HOME=", kDefaultHome),
                                  absl::StrCat("LANG=", kDefaultLang)};
  if (term != nullptr) env.push_back(absl::StrCat("TERM=", term));
  for (const std::string& kv : extra) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Invalid(absl::StrCat("--env ", kv, ": expected NAME=VALUE"));
    }
    absl::string_view name(kv.data(), eq + 1);  // including '='
    auto same = [&](const std::string& e) {
      return absl::string_view(e).substr(0, eq + 1) == name;
    };
    env.erase(std::remove_if(env.begin(), env.end(), same), env.end());
    env.push_back(kv);
  }
  return env;
}

absl::StatusOr<Command> ParseCommandLine(const std::vector<std::string>& args, const char* term) {
  CLI::App app("usentry: run programs in a user-space kernel sandbox", "usentry");
  app.require_subcommand(1);

  RawRunFlags raw;
  CLI::App* run = app.add_subcommand("run", "Run PROGRAM in a fresh sandbox");
  run->add_option("--rootfs", raw.rootfs, "Directory used as the sandbox's root (read-only)");
  run->add_option("--mount", raw.mounts, "SRC:DST[:ro|rw] host path shown at DST (default ro)")
      ->type_name("SRC:DST[:MODE]");
  run->add_option("--workdir", raw.workdir, "Working directory in the sandbox")
      ->capture_default_str();
  run->add_option("--env", raw.env, "K=V added to the (otherwise clean) environment")
      ->type_name("K=V");
  run->add_flag("--strace", raw.strace, "Print each syscall of the program on stderr");
  run->add_flag("--report-unsupported", raw.report_unsupported,
                "Report unimplemented syscalls the program used");
  run->add_option("--platform", raw.platform,
                  "How app code runs: systrap (fast), ptrace (portable), or auto (systrap, "
                  "falling back to ptrace with a notice)")
      ->check(CLI::IsMember({"auto", "systrap", "ptrace"}))
      ->capture_default_str();
  run->add_flag("--no-syscall-patching", raw.no_syscall_patching,
                "systrap: never rewrite the program's syscall instructions (each call then "
                "costs a host signal)");
  // Everything from PROGRAM on belongs to the program, even if it looks like a flag.
  run->prefix_command();

  bool markdown = false;
  CLI::App* syscalls = app.add_subcommand("syscalls", "Print the syscall support table");
  syscalls->add_flag("--markdown", markdown, "As the markdown of docs/syscalls.md");
  CLI::App* version = app.add_subcommand("version", "Print the version");

  if (!args.empty() && !args[0].empty() && args[0][0] != '-' && args[0] != "run" &&
      args[0] != "syscalls" && args[0] != "version") {
    return Invalid(
        absl::StrCat("unknown command \"", args[0], "\" (expected run, syscalls or version)"));
  }
  // Split at the first "--" ourselves: CLI11 would hand a "--" in a subcommand back to
  // the parent app, which could take the program's name for a subcommand.
  auto dashdash = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> program(dashdash == args.end() ? dashdash : dashdash + 1, args.end());
  std::vector<std::string> reversed(std::make_reverse_iterator(dashdash), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    std::ostringstream out, err;
    app.exit(e, out, err);
    Command command;
    command.help = out.str();
    return command;
  } catch (const CLI::CallForAllHelp& e) {
    std::ostringstream out, err;
    app.exit(e, out, err);
    Command command;
    command.help = out.str();
    return command;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    return Invalid(what);
  }

  Command command;
  if (run->parsed()) {
    std::vector<std::string> argv = run->remaining();
    // prefix_command() hands an unknown flag over as if it were the program.
    if (!argv.empty() && argv[0].size() > 1 && argv[0][0] == '-') {
      return Invalid(absl::StrCat("run: unknown flag ", argv[0]));
    }
    if (dashdash != args.end()) {
      if (!argv.empty()) {
        return Invalid(absl::StrCat("run: unexpected argument \"", argv[0], "\" before --"));
      }
      argv = std::move(program);
    }
    command.kind = Command::Kind::kRun;
    ASSIGN_OR_RETURN(command.run, ToRunOptions(raw, std::move(argv), term));
  } else if (dashdash != args.end()) {
    return Invalid("\"--\" is only valid after \"run\"");
  } else if (syscalls->parsed()) {
    if (!markdown) return Invalid("syscalls: only --markdown output exists");
    command.kind = Command::Kind::kSyscalls;
    command.markdown = true;
  } else if (version->parsed()) {
    command.kind = Command::Kind::kVersion;
  }
  return command;
}

}  // namespace usentry::cli
