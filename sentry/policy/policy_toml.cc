// TOML -> Policy with toml++ (header-only here). Every key is checked against the known
// set so that a typo ("memroy") is an error, not a silently ignored limit.
#include "sentry/policy/policy_toml.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

namespace usentry::policy {
namespace {

// toml++ speaks std::string_view; Debian's Abseil has its own string_view type.
std::string Str(std::string_view v) { return std::string(v); }

// Reports errors as "FILE:LINE: KEY: message".
class Reader {
 public:
  explicit Reader(absl::string_view source) : source_(source) {}

  absl::Status Error(const toml::node& at, absl::string_view key, absl::string_view msg) const {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ":", at.source().begin.line, ": ", key, ": ", msg));
  }

  // Every key of `table` must be one of `known`.
  absl::Status OnlyKeys(const toml::table& table, absl::string_view prefix,
                        std::initializer_list<absl::string_view> known) const {
    for (auto&& [k, v] : table) {
      bool ok = false;
      for (absl::string_view name : known) ok = ok || name == Str(k.str());
      if (!ok) {
        return Error(v, absl::StrCat(prefix, Str(k.str())), "unknown key");
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> String(const toml::node& n, absl::string_view key) const {
    if (!n.is_string()) return Error(n, key, "expected a string");
    return std::string(*n.value<std::string>());
  }
  absl::StatusOr<bool> Bool(const toml::node& n, absl::string_view key) const {
    if (!n.is_boolean()) return Error(n, key, "expected true or false");
    return *n.value<bool>();
  }
  absl::StatusOr<uint64_t> Count(const toml::node& n, absl::string_view key, uint64_t max) const {
    if (!n.is_integer()) return Error(n, key, "expected an integer");
    int64_t v = *n.value<int64_t>();
    if (v < 0 || static_cast<uint64_t>(v) > max) {
      return Error(n, key, absl::StrCat("must be between 0 and ", max));
    }
    return static_cast<uint64_t>(v);
  }
  // A size is a string with a unit ("2GiB") or an integer number of bytes.
  absl::StatusOr<uint64_t> Size(const toml::node& n, absl::string_view key, bool allow_none) const {
    if (n.is_integer()) return Count(n, key, INT64_MAX);
    ASSIGN_OR_RETURN(std::string s, String(n, key));
    absl::StatusOr<uint64_t> v = ParseSize(s, allow_none);
    if (!v.ok()) return Error(n, key, v.status().message());
    return *v;
  }
  // A duration is a string ("15m") or an integer number of seconds.
  absl::StatusOr<absl::Duration> Duration(const toml::node& n, absl::string_view key,
                                          bool allow_none) const {
    if (n.is_integer()) {
      ASSIGN_OR_RETURN(uint64_t s, Count(n, key, INT32_MAX));
      return absl::Seconds(static_cast<int64_t>(s));
    }
    ASSIGN_OR_RETURN(std::string s, String(n, key));
    absl::StatusOr<absl::Duration> v = ParseDurationFlag(s, allow_none);
    if (!v.ok()) return Error(n, key, v.status().message());
    return *v;
  }
  absl::StatusOr<std::vector<std::string>> Strings(const toml::node& n,
                                                   absl::string_view key) const {
    const toml::array* a = n.as_array();
    if (a == nullptr) return Error(n, key, "expected an array of strings");
    std::vector<std::string> out;
    for (const toml::node& e : *a) {
      ASSIGN_OR_RETURN(std::string s, String(e, key));
      out.push_back(std::move(s));
    }
    return out;
  }
  const toml::table* Table(const toml::node& n) const { return n.as_table(); }

 private:
  std::string source_;
};

absl::Status ReadMounts(const Reader& r, const toml::node& node, absl::string_view base_dir,
                        Policy& p) {
  const toml::array* mounts = node.as_array();
  if (mounts == nullptr) return r.Error(node, "mount", "expected [[mount]] tables");
  for (const toml::node& m : *mounts) {
    const toml::table* t = m.as_table();
    if (t == nullptr) return r.Error(m, "mount", "expected a table");
    RETURN_IF_ERROR(r.OnlyKeys(*t, "mount.", {"source", "target", "mode"}));
    const toml::node* src = t->get("source");
    const toml::node* dst = t->get("target");
    if (src == nullptr || dst == nullptr) return r.Error(m, "mount", "needs source and target");
    ASSIGN_OR_RETURN(std::string source, r.String(*src, "mount.source"));
    ASSIGN_OR_RETURN(std::string target, r.String(*dst, "mount.target"));
    std::string mode = "ro";
    if (const toml::node* md = t->get("mode")) {
      ASSIGN_OR_RETURN(mode, r.String(*md, "mount.mode"));
    }
    if (!source.empty() && source[0] != '/') source = absl::StrCat(base_dir, "/", source);
    absl::StatusOr<Mount> parsed = ParseMountSpec(absl::StrCat(source, ":", target, ":", mode));
    if (!parsed.ok()) return r.Error(m, "mount", parsed.status().message());
    p.mounts.push_back(*std::move(parsed));
  }
  return absl::OkStatus();
}

absl::Status ReadEnv(const Reader& r, const toml::table& t, Policy& p) {
  RETURN_IF_ERROR(r.OnlyKeys(t, "env.", {"set", "pass"}));
  if (const toml::node* set = t.get("set")) {
    const toml::table* vars = set->as_table();
    if (vars == nullptr) return r.Error(*set, "env.set", "expected a table of NAME = \"value\"");
    for (auto&& [k, v] : *vars) {
      std::string key = absl::StrCat("env.set.", Str(k.str()));
      if (k.str().empty() || k.str().find('=') != std::string_view::npos) {
        return r.Error(v, key, "invalid variable name");
      }
      ASSIGN_OR_RETURN(std::string value, r.String(v, key));
      p.env.push_back(absl::StrCat(Str(k.str()), "=", value));
    }
  }
  if (const toml::node* pass = t.get("pass")) {
    ASSIGN_OR_RETURN(p.pass_env, r.Strings(*pass, "env.pass"));
  }
  return absl::OkStatus();
}

absl::Status ReadLimits(const Reader& r, const toml::table& t, Limits& l) {
  RETURN_IF_ERROR(r.OnlyKeys(
      t, "limits.",
      {"memory", "max_tasks", "max_fds", "timeout", "cpu_time", "disk", "max_file_size"}));
  if (const toml::node* n = t.get("memory")) {
    ASSIGN_OR_RETURN(l.memory_bytes, r.Size(*n, "limits.memory", true));
  }
  if (const toml::node* n = t.get("max_tasks")) {
    ASSIGN_OR_RETURN(uint64_t v, r.Count(*n, "limits.max_tasks", 65536));
    l.max_tasks = static_cast<uint32_t>(v);
  }
  if (const toml::node* n = t.get("max_fds")) {
    ASSIGN_OR_RETURN(uint64_t v, r.Count(*n, "limits.max_fds", 1048576));
    l.max_fds = static_cast<uint32_t>(v);
  }
  if (const toml::node* n = t.get("timeout")) {
    ASSIGN_OR_RETURN(l.timeout, r.Duration(*n, "limits.timeout", true));
  }
  if (const toml::node* n = t.get("cpu_time")) {
    ASSIGN_OR_RETURN(l.cpu_time, r.Duration(*n, "limits.cpu_time", true));
  }
  if (const toml::node* n = t.get("disk")) {
    ASSIGN_OR_RETURN(l.disk_bytes, r.Size(*n, "limits.disk", true));
  }
  if (const toml::node* n = t.get("max_file_size")) {
    ASSIGN_OR_RETURN(l.max_file_size, r.Size(*n, "limits.max_file_size", true));
  }
  return absl::OkStatus();
}

absl::Status ReadExec(const Reader& r, const toml::table& t, ExecRules& e) {
  RETURN_IF_ERROR(r.OnlyKeys(t, "exec.", {"allow"}));
  if (const toml::node* n = t.get("allow")) {
    ASSIGN_OR_RETURN(std::vector<std::string> allow, r.Strings(*n, "exec.allow"));
    e.restricted = true;
    for (const std::string& a : allow) {
      absl::StatusOr<std::string> p = NormalizeExecPattern(a);
      if (!p.ok()) return r.Error(*n, "exec.allow", p.status().message());
      e.allow.push_back(*p);
    }
  }
  return absl::OkStatus();
}

// [net]: allow / allow_private rules, host_ports, dns upstreams, the egress log.
absl::Status ReadNet(const Reader& r, const toml::table& t, absl::string_view base_dir,
                     NetPolicy& net) {
  RETURN_IF_ERROR(r.OnlyKeys(t, "net.", {"allow", "allow_private", "host_ports", "dns", "log"}));
  for (const char* key : {"allow", "allow_private"}) {
    const toml::node* n = t.get(key);
    if (n == nullptr) continue;
    const std::string full = absl::StrCat("net.", key);
    ASSIGN_OR_RETURN(std::vector<std::string> rules, r.Strings(*n, full));
    for (const std::string& text : rules) {
      absl::StatusOr<NetRule> rule = ParseNetRule(text, std::string_view(key) == "allow_private");
      if (!rule.ok()) return r.Error(*n, full, rule.status().message());
      net.allow.push_back(*std::move(rule));
    }
  }
  if (const toml::node* n = t.get("host_ports")) {
    const toml::array* a = n->as_array();
    if (a == nullptr) return r.Error(*n, "net.host_ports", "expected an array of ports");
    for (const toml::node& e : *a) {
      ASSIGN_OR_RETURN(uint64_t port, r.Count(e, "net.host_ports", 65535));
      if (port == 0) return r.Error(e, "net.host_ports", "port 0 is not a port");
      net.host_ports.push_back(static_cast<uint16_t>(port));
    }
  }
  if (const toml::node* n = t.get("dns")) {
    ASSIGN_OR_RETURN(std::vector<std::string> servers, r.Strings(*n, "net.dns"));
    for (const std::string& s : servers) {
      absl::StatusOr<std::string> server = ParseDnsServer(s);
      if (!server.ok()) return r.Error(*n, "net.dns", server.status().message());
      net.dns_servers.push_back(*server);
    }
  }
  if (const toml::node* n = t.get("log")) {
    ASSIGN_OR_RETURN(net.log_file, r.String(*n, "net.log"));
    if (!net.log_file.empty() && net.log_file != "-" && net.log_file[0] != '/') {
      net.log_file = absl::StrCat(base_dir, "/", net.log_file);
    }
  }
  return absl::OkStatus();
}

absl::Status ReadTable(const Reader& r, const toml::table& root, absl::string_view base_dir,
                       Policy& p) {
  RETURN_IF_ERROR(r.OnlyKeys(
      root, "",
      {"rootfs", "workdir", "mount", "env", "identity", "limits", "exec", "net", "audit"}));
  if (const toml::node* n = root.get("rootfs")) {
    ASSIGN_OR_RETURN(std::string rootfs, r.String(*n, "rootfs"));
    if (!rootfs.empty() && rootfs[0] != '/') rootfs = absl::StrCat(base_dir, "/", rootfs);
    p.rootfs = rootfs;  // canonicalized and checked by the CLI like --rootfs
  }
  if (const toml::node* n = root.get("workdir")) {
    ASSIGN_OR_RETURN(std::string w, r.String(*n, "workdir"));
    absl::StatusOr<std::string> norm = NormalizeSandboxPath(w);
    if (!norm.ok()) return r.Error(*n, "workdir", norm.status().message());
    p.workdir = *norm;
  }
  if (const toml::node* n = root.get("mount")) RETURN_IF_ERROR(ReadMounts(r, *n, base_dir, p));
  auto table = [&](const char* key) -> absl::StatusOr<const toml::table*> {
    const toml::node* n = root.get(key);
    if (n == nullptr) return nullptr;
    if (!n->is_table()) return r.Error(*n, key, "expected a table");
    return n->as_table();
  };
  ASSIGN_OR_RETURN(const toml::table* env, table("env"));
  if (env) RETURN_IF_ERROR(ReadEnv(r, *env, p));
  ASSIGN_OR_RETURN(const toml::table* id, table("identity"));
  if (id) {
    RETURN_IF_ERROR(r.OnlyKeys(*id, "identity.", {"uid", "gid"}));
    if (const toml::node* n = id->get("uid")) {
      ASSIGN_OR_RETURN(uint64_t v, r.Count(*n, "identity.uid", UINT32_MAX - 1));
      p.identity.uid = static_cast<uint32_t>(v);
    }
    if (const toml::node* n = id->get("gid")) {
      ASSIGN_OR_RETURN(uint64_t v, r.Count(*n, "identity.gid", UINT32_MAX - 1));
      p.identity.gid = static_cast<uint32_t>(v);
    }
  }
  ASSIGN_OR_RETURN(const toml::table* limits, table("limits"));
  if (limits) RETURN_IF_ERROR(ReadLimits(r, *limits, p.limits));
  ASSIGN_OR_RETURN(const toml::table* exec, table("exec"));
  if (exec) RETURN_IF_ERROR(ReadExec(r, *exec, p.exec));
  ASSIGN_OR_RETURN(const toml::table* net, table("net"));
  if (net) RETURN_IF_ERROR(ReadNet(r, *net, base_dir, p.net));
  ASSIGN_OR_RETURN(const toml::table* audit, table("audit"));
  if (audit) {
    RETURN_IF_ERROR(r.OnlyKeys(*audit, "audit.", {"file", "explain"}));
    if (const toml::node* n = audit->get("file")) {
      ASSIGN_OR_RETURN(p.audit.file, r.String(*n, "audit.file"));
      if (!p.audit.file.empty() && p.audit.file != "-" && p.audit.file[0] != '/') {
        p.audit.file = absl::StrCat(base_dir, "/", p.audit.file);
      }
    }
    if (const toml::node* n = audit->get("explain")) {
      ASSIGN_OR_RETURN(p.audit.explain, r.Bool(*n, "audit.explain"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Policy> ParsePolicyToml(absl::string_view text, absl::string_view source_name,
                                       absl::string_view base_dir) {
  toml::table root;
  try {
    root = toml::parse(std::string_view(text.data(), text.size()),
                       std::string_view(source_name.data(), source_name.size()));
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ":", e.source().begin.line, ": ", Str(e.description())));
  }
  Policy p;
  Reader r(source_name);
  RETURN_IF_ERROR(ReadTable(r, root, base_dir, p));
  absl::Status st = Validate(p);
  if (!st.ok()) return absl::InvalidArgumentError(absl::StrCat(source_name, ": ", st.message()));
  return p;
}

absl::StatusOr<Policy> LoadPolicyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("policy ", path, ": ", strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string dir = ".";
  if (size_t slash = path.rfind('/'); slash != std::string::npos) {
    dir = slash == 0 ? "/" : path.substr(0, slash);
  }
  return ParsePolicyToml(text.str(), path, dir);
}

}  // namespace usentry::policy
