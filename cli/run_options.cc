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
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "sentry/policy/policy_toml.h"

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

// Raw flag values as CLI11 fills them; validated by ToRunOptions. An empty string is a
// flag not given: the policy file's value (or the default) stands.
struct RawRunFlags {
  std::string policy_file;
  std::string rootfs;
  std::vector<std::string> mounts;
  std::string workdir;
  std::vector<std::string> env;
  std::vector<std::string> pass_env;
  std::string user;
  std::string memory, max_tasks, max_fds, timeout, cpu_time, disk, max_file_size;
  std::vector<std::string> allow_exec;
  std::string net;  // "none" or empty
  std::vector<std::string> allow_net, allow_net_private, allow_host_port, dns;
  std::string net_log;
  std::string audit;
  bool explain = false;
  bool strace = false;
  bool report_unsupported = false;
  bool no_syscall_patching = false;
  std::string platform = "auto";
};

// `FLAG VALUE: reason`, the one-line form of every flag error.
absl::Status FlagError(absl::string_view flag, absl::string_view value, const absl::Status& st) {
  return Invalid(absl::StrCat(flag, " ", value, ": ", st.message()));
}

absl::StatusOr<uint32_t> ParseCount(absl::string_view flag, const std::string& text) {
  uint32_t v;
  if (!absl::SimpleAtoi(text, &v)) {
    return Invalid(absl::StrCat(flag, " ", text, ": expected a non-negative integer"));
  }
  return v;
}

// Applies the limit flags over `l`.
absl::Status ApplyLimitFlags(const RawRunFlags& raw, policy::Limits& l) {
  auto size = [](absl::string_view flag, const std::string& text, uint64_t& out) -> absl::Status {
    if (text.empty()) return absl::OkStatus();
    absl::StatusOr<uint64_t> v = policy::ParseSize(text, true);
    if (!v.ok()) return FlagError(flag, text, v.status());
    out = *v;
    return absl::OkStatus();
  };
  auto duration = [](absl::string_view flag, const std::string& text,
                     absl::Duration& out) -> absl::Status {
    if (text.empty()) return absl::OkStatus();
    absl::StatusOr<absl::Duration> v = policy::ParseDurationFlag(text, true);
    if (!v.ok()) return FlagError(flag, text, v.status());
    out = *v;
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(size("--memory", raw.memory, l.memory_bytes));
  RETURN_IF_ERROR(size("--disk", raw.disk, l.disk_bytes));
  RETURN_IF_ERROR(size("--max-file-size", raw.max_file_size, l.max_file_size));
  RETURN_IF_ERROR(duration("--timeout", raw.timeout, l.timeout));
  RETURN_IF_ERROR(duration("--cpu-time", raw.cpu_time, l.cpu_time));
  if (!raw.max_tasks.empty()) {
    ASSIGN_OR_RETURN(l.max_tasks, ParseCount("--max-tasks", raw.max_tasks));
  }
  if (!raw.max_fds.empty()) {
    ASSIGN_OR_RETURN(l.max_fds, ParseCount("--max-fds", raw.max_fds));
  }
  return absl::OkStatus();
}

// "UID[:GID]" (GID defaults to UID).
absl::Status ApplyUser(const std::string& text, policy::Identity& id) {
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  uint32_t uid = 0, gid = 0;
  if (parts.size() > 2 || !absl::SimpleAtoi(parts[0], &uid) || uid == UINT32_MAX ||
      (parts.size() == 2 && (!absl::SimpleAtoi(parts[1], &gid) || gid == UINT32_MAX))) {
    return Invalid(absl::StrCat("--user ", text, ": expected UID[:GID] (numbers)"));
  }
  id.uid = uid;
  id.gid = parts.size() == 2 ? gid : uid;
  return absl::OkStatus();
}

// The network flags over the file's [net]: --net none drops every rule (and may not be
// combined with a flag that adds one); the rule flags append.
absl::Status ApplyNetFlags(const RawRunFlags& raw, policy::NetPolicy& net) {
  if (!raw.net.empty()) {
    if (raw.net != "none") {
      return Invalid(absl::StrCat("--net ", raw.net,
                                  ": expected none (destinations are allowed with --allow-net)"));
    }
    if (!raw.allow_net.empty() || !raw.allow_net_private.empty() || !raw.allow_host_port.empty()) {
      return Invalid("--net none contradicts --allow-net/--allow-net-private/--allow-host-port");
    }
    net.allow.clear();
    net.host_ports.clear();
  }
  for (const char* flag : {"--allow-net", "--allow-net-private"}) {
    const bool private_ok = absl::string_view(flag) == "--allow-net-private";
    for (const std::string& text : private_ok ? raw.allow_net_private : raw.allow_net) {
      absl::StatusOr<policy::NetRule> rule = policy::ParseNetRule(text, private_ok);
      if (!rule.ok()) return Invalid(absl::StrCat(flag, " ", rule.status().message()));
      net.allow.push_back(*std::move(rule));
    }
  }
  for (const std::string& text : raw.allow_host_port) {
    uint32_t port;
    if (!absl::SimpleAtoi(text, &port) || port == 0 || port > 65535) {
      return Invalid(absl::StrCat("--allow-host-port ", text, ": expected a port (1-65535)"));
    }
    net.host_ports.push_back(static_cast<uint16_t>(port));
  }
  for (const std::string& text : raw.dns) {
    absl::StatusOr<std::string> server = policy::ParseDnsServer(text);
    if (!server.ok()) return Invalid(absl::StrCat("--dns ", server.status().message()));
    net.dns_servers.push_back(*server);
  }
  if (!raw.net_log.empty()) net.log_file = raw.net_log;
  return absl::OkStatus();
}

// The policy: the --policy file (or the defaults), then each flag over it. Lists
// (mounts, env, exec allow, net rules) append to the file's; single values replace its.
absl::StatusOr<policy::Policy> BuildPolicy(const RawRunFlags& raw) {
  policy::Policy p;
  if (!raw.policy_file.empty()) {
    ASSIGN_OR_RETURN(p, policy::LoadPolicyFile(raw.policy_file));
  }
  if (!raw.rootfs.empty()) p.rootfs = raw.rootfs;
  if (p.rootfs) {
    ASSIGN_OR_RETURN(std::string rootfs, RealPath(*p.rootfs, "--rootfs"));
    struct stat st;
    if (stat(rootfs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Invalid(absl::StrCat("--rootfs ", *p.rootfs, ": not a directory"));
    }
    p.rootfs = rootfs;
  }
  for (const std::string& spec : raw.mounts) {
    ASSIGN_OR_RETURN(policy::Mount mount, policy::ParseMountSpec(spec));
    for (const policy::Mount& other : p.mounts) {
      if (other.target == mount.target) {
        return Invalid(absl::StrCat("--mount ", spec, ": ", mount.target, " is mounted twice"));
      }
    }
    p.mounts.push_back(std::move(mount));
  }
  if (!raw.workdir.empty()) {
    absl::StatusOr<std::string> workdir = policy::NormalizeSandboxPath(raw.workdir);
    if (!workdir.ok()) return FlagError("--workdir", raw.workdir, workdir.status());
    p.workdir = *workdir;
  }
  for (const std::string& kv : raw.env) {
    if (kv.find('=') == std::string::npos || kv[0] == '=') {
      return Invalid(absl::StrCat("--env ", kv, ": expected NAME=VALUE"));
    }
    p.env.push_back(kv);
  }
  for (const std::string& name : raw.pass_env) {
    if (name.empty() || name.find('=') != std::string::npos) {
      return Invalid(absl::StrCat("--pass-env ", name, ": expected a variable NAME"));
    }
    p.pass_env.push_back(name);
  }
  if (!raw.user.empty()) RETURN_IF_ERROR(ApplyUser(raw.user, p.identity));
  RETURN_IF_ERROR(ApplyLimitFlags(raw, p.limits));
  for (const std::string& a : raw.allow_exec) {
    absl::StatusOr<std::string> pattern = policy::NormalizeExecPattern(a);
    if (!pattern.ok()) return FlagError("--allow-exec", a, pattern.status());
    p.exec.restricted = true;
    p.exec.allow.push_back(*pattern);
  }
  RETURN_IF_ERROR(ApplyNetFlags(raw, p.net));
  if (!raw.audit.empty()) p.audit.file = raw.audit;
  if (raw.explain) p.audit.explain = true;
  RETURN_IF_ERROR(policy::Validate(p));
  return p;
}

absl::StatusOr<RunOptions> ToRunOptions(const RawRunFlags& raw, std::vector<std::string> argv,
                                        const char* term) {
  RunOptions run;
  ASSIGN_OR_RETURN(run.policy, BuildPolicy(raw));
  std::vector<std::string> extra = run.policy.env;
  for (const std::string& name : run.policy.pass_env) {
    if (const char* v = getenv(name.c_str())) extra.push_back(absl::StrCat(name, "=", v));
  }
  ASSIGN_OR_RETURN(run.env, BuildEnvironment(extra, term, HomeOf(run.policy.identity)));
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

std::string HomeOf(const policy::Identity& id) {
  return id.uid == 0 ? kDefaultHome : kDefaultUserHome;
}

absl::StatusOr<std::vector<std::string>> BuildEnvironment(const std::vector<std::string>& extra,
                                                          const char* term,
                                                          const std::string& home) {
  std::vector<std::string> env = {absl::StrCat("PATH=", kDefaultPath), absl::StrCat("HOME=", home),
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
  // `usentry --version`, as most tools take it: the same as `usentry version`. Alone
  // only; answered before CLI11, which would first ask for the required subcommand (the
  // flag is declared for --help).
  const std::string version_help = "Print the version (as the version command)";
  app.add_flag("--version", version_help);
  if (!args.empty() && args[0] == "--version") {
    if (args.size() != 1) return Invalid("--version takes no other arguments");
    Command command;
    command.kind = Command::Kind::kVersion;
    return command;
  }

  RawRunFlags raw;
  CLI::App* run = app.add_subcommand("run", "Run PROGRAM in a fresh sandbox");
  run->add_option("--policy", raw.policy_file,
                  "TOML policy file (docs/policy.md); flags below override or extend it")
      ->type_name("FILE");
  run->add_option("--rootfs", raw.rootfs, "Directory used as the sandbox's root (read-only)");
  run->add_option("--mount", raw.mounts, "SRC:DST[:ro|rw] host path shown at DST (default ro)")
      ->type_name("SRC:DST[:MODE]");
  run->add_option("--workdir", raw.workdir,
                  "Working directory in the sandbox (default /workspace)");
  run->add_option("--env", raw.env, "K=V added to the (otherwise clean) environment")
      ->type_name("K=V");
  run->add_option("--pass-env", raw.pass_env, "Copy NAME from the caller's environment, if set")
      ->type_name("NAME");
  run->add_option("--user", raw.user,
                  "Identity of the program inside (default 1000:1000, an ordinary user; 0 for "
                  "root inside)")
      ->type_name("UID[:GID]");
  run->add_option("--memory", raw.memory, "App memory limit, e.g. 512MiB (default 2GiB; none)")
      ->type_name("SIZE");
  run->add_option("--max-tasks", raw.max_tasks, "Threads + processes at once (default 512)")
      ->type_name("N");
  run->add_option("--max-fds", raw.max_fds, "Open files per process (default 1024)")
      ->type_name("N");
  run->add_option("--timeout", raw.timeout,
                  "Wall-clock limit; then everything is killed, exit 124 (default 15m; none)")
      ->type_name("DURATION");
  run->add_option("--cpu-time", raw.cpu_time, "CPU time of all app tasks (default none)")
      ->type_name("DURATION");
  run->add_option("--disk", raw.disk, "Bytes the writable layer may hold (default 1GiB)")
      ->type_name("SIZE");
  run->add_option("--max-file-size", raw.max_file_size, "Largest file the app may write")
      ->type_name("SIZE");
  run->add_option("--allow-exec", raw.allow_exec,
                  "Only these programs may be executed (sandbox path, or DIR/*); repeatable")
      ->type_name("PATH");
  run->add_option("--net", raw.net,
                  "none: no network beyond the sandbox's loopback (the default; drops the "
                  "policy file's rules)")
      ->type_name("none");
  run->add_option("--allow-net", raw.allow_net,
                  "Allow a destination: NAME, *.DOMAIN, IP or CIDR, with [:PORT[-PORT]] and "
                  "[/udp]; names bind to the IPs they resolve to; repeatable")
      ->type_name("RULE");
  run->add_option("--allow-net-private", raw.allow_net_private,
                  "Allow an IP/CIDR[:PORT] inside an always-blocked range (RFC 1918, "
                  "link-local, CGNAT, ...); repeatable")
      ->type_name("CIDR");
  run->add_option("--allow-host-port", raw.allow_host_port,
                  "Let the app reach this port of the host's loopback as "
                  "host.usentry.internal:PORT; repeatable")
      ->type_name("PORT");
  run->add_option("--dns", raw.dns,
                  "Upstream resolver for allowed names (default: the host's resolv.conf)")
      ->type_name("IP[:PORT]");
  run->add_option("--net-log", raw.net_log,
                  "Write one JSON line per network decision to FILE (- = stderr)")
      ->type_name("FILE");
  run->add_option("--audit", raw.audit, "Write the run's JSONL audit record to FILE (- = stderr)")
      ->type_name("FILE");
  run->add_flag("--explain", raw.explain, "Print one line on stderr for each denied access");

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
  CLI::App* policy_cmd = app.add_subcommand("policy", "Work with policy files");
  std::string policy_file;
  bool print_policy = false;
  CLI::App* check = policy_cmd->add_subcommand("check", "Validate a policy file");
  check->add_option("FILE", policy_file, "The TOML policy")->required();
  check->add_flag("--print", print_policy, "Print the policy as canonical JSON");
  policy_cmd->require_subcommand(1);

  if (!args.empty() && !args[0].empty() && args[0][0] != '-' && args[0] != "run" &&
      args[0] != "syscalls" && args[0] != "version" && args[0] != "policy") {
    return Invalid(absl::StrCat("unknown command \"", args[0],
                                "\" (expected run, policy, syscalls or version)"));
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
  } else if (check->parsed()) {
    command.kind = Command::Kind::kPolicyCheck;
    command.policy_file = policy_file;
    command.print_policy = print_policy;
    ASSIGN_OR_RETURN(command.checked, policy::LoadPolicyFile(policy_file));
  }
  return command;
}

}  // namespace usentry::cli
