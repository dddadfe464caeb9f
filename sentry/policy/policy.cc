// Policy value parsing (sizes, durations, paths), validation, canonical JSON and digest.
#include "sentry/policy/policy.h"

#include <limits.h>
// SHA256_Init and friends are deprecated in OpenSSL 3 but kept; see Policy::Digest.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace usentry::policy {
namespace {

absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

bool IsNone(absl::string_view text) { return text == "none" || text == "unlimited"; }

}  // namespace

absl::StatusOr<uint64_t> ParseSize(absl::string_view text, bool allow_none) {
  text = absl::StripAsciiWhitespace(text);
  if (allow_none && IsNone(text)) return 0;
  size_t digits = 0;
  while (digits < text.size() && (absl::ascii_isdigit(text[digits]) || text[digits] == '.')) {
    digits++;
  }
  double number;
  if (digits == 0 || !absl::SimpleAtod(text.substr(0, digits), &number)) {
    return Invalid(absl::StrCat("\"", text, "\" is not a size (e.g. 2GiB, 512MiB, 4096)"));
  }
  std::string unit = absl::AsciiStrToUpper(text.substr(digits));
  static constexpr struct {
    const char* suffix;
    uint64_t scale;
  } kUnits[] = {
      {"", 1},       {"B", 1},           {"K", kKiB},         {"KB", kKiB},        {"KIB", kKiB},
      {"M", kMiB},   {"MB", kMiB},       {"MIB", kMiB},       {"G", kGiB},         {"GB", kGiB},
      {"GIB", kGiB}, {"T", kGiB * 1024}, {"TB", kGiB * 1024}, {"TIB", kGiB * 1024}};
  for (const auto& u : kUnits) {
    if (unit != u.suffix) continue;
    double bytes = number * static_cast<double>(u.scale);
    if (bytes >= 18446744073709549568.0)
      return Invalid(absl::StrCat("\"", text, "\" is too large"));
    return static_cast<uint64_t>(std::llround(bytes));
  }
  return Invalid(absl::StrCat("\"", text, "\" has an unknown unit (use B, KiB, MiB, GiB or TiB)"));
}

absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view text, bool allow_none) {
  text = absl::StripAsciiWhitespace(text);
  if (allow_none && IsNone(text)) return absl::ZeroDuration();
  double seconds;
  absl::Duration d;
  if (absl::SimpleAtod(text, &seconds) && !absl::StrContains(text, 'e') &&
      !absl::StrContains(text, 'E') && std::isfinite(seconds)) {
    d = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(text, &d)) {
    return Invalid(absl::StrCat("\"", text, "\" is not a duration (e.g. 15m, 90s, 1h30m, 500ms)"));
  }
  if (d < absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return Invalid(absl::StrCat("\"", text, "\" must be a finite, positive duration"));
  }
  return d;
}

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

absl::StatusOr<Mount> ParseMountSpec(absl::string_view spec) {
  std::vector<std::string> parts = absl::StrSplit(spec, ':');
  auto error = [&](absl::string_view why) {
    return Invalid(absl::StrCat("--mount ", spec, ": ", why));
  };
  if (parts.size() < 2 || parts.size() > 3) return error("expected SRC:DST[:ro|rw]");
  Mount mount;
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
  struct stat st;
  if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return error(absl::StrCat("source ", parts[0], ": not a directory (mount its directory)"));
  }
  absl::StatusOr<std::string> target = NormalizeSandboxPath(parts[1]);
  if (!target.ok()) {
    return error(absl::StrCat("destination ", parts[1], " ", target.status().message()));
  }
  if (*target == "/") return error("cannot mount over the sandbox root (use --rootfs)");
  mount.target = *target;
  return mount;
}

absl::StatusOr<std::string> NormalizeExecPattern(absl::string_view pattern) {
  bool dir = absl::EndsWith(pattern, "/*");
  absl::string_view path = dir ? pattern.substr(0, pattern.size() - 2) : pattern;
  if (dir && path.empty()) path = "/";
  if (absl::StrContains(path, '*')) {
    return Invalid(absl::StrCat("\"", pattern, "\": only a trailing \"/*\" may be a wildcard"));
  }
  absl::StatusOr<std::string> norm = NormalizeSandboxPath(path);
  if (!norm.ok()) return Invalid(absl::StrCat("\"", pattern, "\" ", norm.status().message()));
  if (!dir) return *norm;
  return *norm == "/" ? std::string("/*") : absl::StrCat(*norm, "/*");
}

bool ExecRules::Allows(absl::string_view resolved_path) const {
  if (!restricted) return true;
  for (const std::string& p : allow) {
    if (absl::EndsWith(p, "/*")) {
      absl::string_view dir = absl::string_view(p).substr(0, p.size() - 1);  // keeps '/'
      if (absl::StartsWith(resolved_path, dir) &&
          resolved_path.find('/', dir.size()) == absl::string_view::npos &&
          resolved_path.size() > dir.size()) {
        return true;
      }
    } else if (resolved_path == p) {
      return true;
    }
  }
  return false;
}

absl::Status Validate(const Policy& policy) {
  for (size_t i = 0; i < policy.mounts.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (policy.mounts[i].target == policy.mounts[j].target) {
        return Invalid(absl::StrCat("mount target ", policy.mounts[i].target, " is mounted twice"));
      }
    }
  }
  const Limits& l = policy.limits;
  if (l.memory_bytes != 0 && l.memory_bytes < 16 * kMiB) {
    return Invalid("limits.memory must be at least 16MiB (or none)");
  }
  if (l.max_tasks < 1 || l.max_tasks > 65536) {
    return Invalid("limits.max_tasks must be between 1 and 65536");
  }
  if (l.max_fds < 16 || l.max_fds > 1048576) {
    return Invalid("limits.max_fds must be between 16 and 1048576");
  }
  if (l.disk_bytes != 0 && l.disk_bytes < kMiB) return Invalid("limits.disk must be at least 1MiB");
  for (const std::string& e : policy.env) {
    if (e.find('=') == std::string::npos || e[0] == '=') {
      return Invalid(absl::StrCat("env entry \"", e, "\": expected NAME=VALUE"));
    }
  }
  if (policy.identity.uid == UINT32_MAX || policy.identity.gid == UINT32_MAX) {
    return Invalid("identity: uid/gid 4294967295 is reserved");
  }
  return ValidateNetPolicy(policy.net);
}

std::string Policy::ToJson() const {
  nlohmann::json j;  // std::map underneath: keys come out sorted, so the text is canonical
  j["rootfs"] = rootfs ? nlohmann::json(*rootfs) : nlohmann::json(nullptr);
  j["mounts"] = nlohmann::json::array();
  for (const Mount& m : mounts) {
    j["mounts"].push_back(
        {{"source", m.source}, {"target", m.target}, {"mode", m.read_only ? "ro" : "rw"}});
  }
  j["workdir"] = workdir;
  j["env"] = env;
  j["pass_env"] = pass_env;
  j["identity"] = {{"uid", identity.uid}, {"gid", identity.gid}};
  j["limits"] = {{"memory", limits.memory_bytes},
                 {"max_tasks", limits.max_tasks},
                 {"max_fds", limits.max_fds},
                 {"timeout_ms", absl::ToInt64Milliseconds(limits.timeout)},
                 {"cpu_time_ms", absl::ToInt64Milliseconds(limits.cpu_time)},
                 {"disk", limits.disk_bytes},
                 {"max_file_size", limits.max_file_size}};
  j["exec"] = {{"restricted", exec.restricted}, {"allow", exec.allow}};
  nlohmann::json allow = nlohmann::json::array(), allow_private = nlohmann::json::array();
  for (const NetRule& r : net.allow) (r.private_ok ? allow_private : allow).push_back(r.ToString());
  j["net"] = {{"allow", allow},
              {"allow_private", allow_private},
              {"host_ports", net.host_ports},
              {"dns", net.dns_servers},
              {"log", net.log_file}};
  j["audit"] = {{"file", audit.file}, {"explain", audit.explain}};
  return j.dump();
}

std::string Policy::Digest() const {
  std::string text = ToJson();
  // The low-level interface, not SHA256() or EVP: in OpenSSL 3 those fetch the digest
  // from the default provider, and the first fetch loads openssl.cnf and registers every
  // algorithm: ~1.5 ms of each run's start-up (measured in a static test binary), for
  // one 1 KiB hash.
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256_CTX ctx;
  SHA256_Init(&ctx);
  SHA256_Update(&ctx, text.data(), text.size());
  SHA256_Final(md, &ctx);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex = "sha256:";
  for (unsigned char c : md) {
    hex += kHex[c >> 4];
    hex += kHex[c & 15];
  }
  return hex;
}

}  // namespace usentry::policy
