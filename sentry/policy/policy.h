// Policy: what one run may reach and use (mounts, environment, identity, limits, exec
// rules, network rules, audit settings), built once from a TOML file and/or CLI flags, validated,
// then immutable. The isolation machinery (CLI, gofer, sentry) only consults it. Every key is
// documented, with an example, in docs/policy.md.
#ifndef USENTRY_SENTRY_POLICY_POLICY_H_
#define USENTRY_SENTRY_POLICY_POLICY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "sentry/policy/net_rules.h"

namespace usentry::policy {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;

// A host path shown in the sandbox. `source` is canonical (realpath) and exists;
// `target` is an absolute, normalized sandbox path other than "/".
struct Mount {
  std::string source;
  std::string target;
  bool read_only = true;
};

// Hard limits the sentry enforces (it owns every page, task and FD). 0 = no limit,
// where a limit may be switched off at all (see docs/policy.md).
struct Limits {
  uint64_t memory_bytes = 2 * kGiB;                // resident app memory, sandbox-wide
  uint32_t max_tasks = 512;                        // threads + processes alive at once
  uint32_t max_fds = 1024;                         // per process (RLIMIT_NOFILE, soft = hard)
  absl::Duration timeout = absl::Minutes(15);      // wall clock of the whole run; 0 = none
  absl::Duration cpu_time = absl::ZeroDuration();  // CPU of all app tasks; 0 = none
  uint64_t disk_bytes = 1 * kGiB;                  // bytes in the writable layer (overlay + /tmp)
  uint64_t max_file_size = 0;                      // RLIMIT_FSIZE of the first process; 0 = none
};

// Which programs may be execve'd. Empty `allow` with `restricted` false: any program.
// A pattern is an absolute sandbox path, or a path ending in "/*" (anything directly in
// that directory). The path checked is the one execve resolved (symlinks followed).
struct ExecRules {
  bool restricted = false;
  std::vector<std::string> allow;
  bool Allows(absl::string_view resolved_path) const;
};

struct AuditSettings {
  std::string file;      // "" = no audit stream; "-" = stderr; else a host path
  bool explain = false;  // one line per denial on stderr, that a model can act on
};

// Who the program is inside (emulated credentials; never a host identity). An ordinary
// user by default: root inside must be asked for (--user 0).
inline constexpr uint32_t kDefaultUid = 1000;
inline constexpr uint32_t kDefaultGid = 1000;
struct Identity {
  uint32_t uid = kDefaultUid;
  uint32_t gid = kDefaultGid;
};

struct Policy {
  std::optional<std::string> rootfs;  // canonical host directory; default view if unset
  std::vector<Mount> mounts;
  std::string workdir = "/workspace";
  // NAME=VALUE entries added to the clean default environment (later ones win); names
  // listed in `pass_env` are copied from the caller's environment when set there.
  std::vector<std::string> env;
  std::vector<std::string> pass_env;
  Identity identity;
  Limits limits;
  ExecRules exec;
  NetPolicy net;  // net_rules.h; no rule = no network beyond the sandbox's loopback
  AuditSettings audit;

  // Canonical JSON of everything above (stable key order), and its SHA-256 in hex: the
  // digest in each run's audit record names exactly the policy that ran.
  std::string ToJson() const;
  std::string Digest() const;
};

// "2GiB", "512MiB", "100M", "4096", "1.5G": bytes. Suffixes K/M/G/T with optional
// "i"/"iB"/"B" are all powers of 1024, as memory sizes are. "none"/"unlimited" = 0 when
// `allow_none`.
absl::StatusOr<uint64_t> ParseSize(absl::string_view text, bool allow_none);
// "15m", "90s", "1h30m", "500ms", or a plain number of seconds. "none" = 0 when
// `allow_none`.
absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view text, bool allow_none);
// Absolute sandbox path, normalized ("//a/./b/" -> "/a/b"); ".." and relative paths are
// refused because the sandbox's view is not the host's and a guess would be wrong.
absl::StatusOr<std::string> NormalizeSandboxPath(absl::string_view path);
// "SRC:DST[:ro|rw]" -> Mount. Checks that SRC exists (and canonicalizes it).
absl::StatusOr<Mount> ParseMountSpec(absl::string_view spec);
// An exec allow pattern, validated (absolute, normalized, optionally ending in "/*").
absl::StatusOr<std::string> NormalizeExecPattern(absl::string_view pattern);

// Checks the cross-field rules (no target mounted twice, limits in range...). Called by
// both the TOML loader and the CLI after flags were applied.
absl::Status Validate(const Policy& policy);

}  // namespace usentry::policy

#endif  // USENTRY_SENTRY_POLICY_POLICY_H_
