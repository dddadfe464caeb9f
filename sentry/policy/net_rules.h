// Network rules of a run's policy: which names and addresses the app may reach, the
// ranges that are always blocked, the name->IP bindings a run accumulates, and the one
// decision function both the sentry and netgate apply (each keeps its own bindings, so
// a compromised sentry cannot talk netgate into a destination the policy does not name).
//
// Semantics (docs/network.md):
//   - No rule: no egress at all (the sandbox has only its loopback).
//   - A name rule ("pypi.org", "*.pythonhosted.org") allows resolving that name and
//     connecting to the addresses it resolved to in this run, on the rule's ports.
//     "*.example.com" matches names below example.com, not example.com itself; "*" matches
//     every name.
//   - A CIDR rule ("203.0.113.0/24", "2001:db8::1") allows those addresses directly.
//   - Always blocked, whatever resolved to them: loopback, RFC 1918, link-local (with
//     169.254.169.254 and fd00:ec2::254), CGNAT, unique-local fc00::/7, multicast,
//     unspecified and reserved ranges. Only an allow_private rule naming the CIDR opens one.
//   - TCP unless the rule says "/udp". DNS itself always goes through the sandbox resolver.
#ifndef USENTRY_SENTRY_POLICY_NET_RULES_H_
#define USENTRY_SENTRY_POLICY_NET_RULES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/ip_address.h"

namespace usentry::policy {

enum class NetProto : uint8_t { kTcp, kUdp };
const char* NetProtoName(NetProto p);  // "tcp", "udp"

struct NetRule {
  enum class Kind : uint8_t { kHost, kWildcard, kCidr };
  Kind kind = Kind::kHost;
  // kHost: the name; kWildcard: the suffix without "*." ("" for the bare "*").
  std::string host;
  Cidr cidr;  // kCidr
  uint16_t port_lo = 1;
  uint16_t port_hi = 65535;
  NetProto proto = NetProto::kTcp;
  // From allow_private: this CIDR may lie in an always-blocked range.
  bool private_ok = false;

  // For names (kHost, kWildcard); `name` is normalized (NormalizeHostname).
  bool MatchesName(absl::string_view name) const;
  bool MatchesPort(uint16_t port, NetProto p) const;
  // Canonical text: "*.pypi.org:443", "10.1.2.3/32:5432/udp", "pypi.org".
  std::string ToString() const;
};

struct NetPolicy {
  std::vector<NetRule> allow;        // --allow-net, --allow-net-private, [net] allow/allow_private
  std::vector<uint16_t> host_ports;  // --allow-host-port: ports of the host's loopback
  // Upstream resolvers netgate asks ("IP" or "IP:PORT", "[IPv6]:PORT"); empty: the
  // host's /etc/resolv.conf.
  std::vector<std::string> dns_servers;
  std::string log_file;  // --net-log: the per-run egress log; "" = none, "-" = stderr

  // Whether anything outside the sandbox may be reached (eth0 and netgate exist).
  bool egress() const { return !allow.empty() || !host_ports.empty(); }
  bool AllowsHostPort(uint16_t port) const;
};

// "pypi.org", "*.pythonhosted.org:443", "203.0.113.0/24:80-89", "[2001:db8::/32]:443",
// "2001:db8::1", "time.example.com:123/udp". `private_ok` marks an allow_private rule,
// which must be an address or CIDR. Errors say what is wrong with the text.
absl::StatusOr<NetRule> ParseNetRule(absl::string_view text, bool private_ok);
// A DNS upstream: "IP", "IP:PORT" or "[IPv6]:PORT"; returned in the form netgate takes.
absl::StatusOr<std::string> ParseDnsServer(absl::string_view text);
// Lowercase, without a trailing dot, each label 1-63 of [a-z0-9_-] and the whole at most
// 253 bytes; nullopt if `name` is not a hostname.
std::optional<std::string> NormalizeHostname(absl::string_view name);

// The always-blocked range holding `ip` (v4-mapped addresses are looked up as IPv4):
// "RFC 1918 (10.0.0.0/8)", "link-local (169.254.0.0/16)"...; nullopt if none.
std::optional<std::string> BlockedRange(const IpAddress& ip);

// Cross-field checks for Policy validation: a plain CIDR rule entirely inside a blocked
// range is an error that names allow_private; allow_private needs an address.
absl::Status ValidateNetPolicy(const NetPolicy& net);

// The IPs each allowed name resolved to during this run (the name->IP binding).
// Bounded: a hostile app may resolve many names under a wildcard.
class NameBindings {
 public:
  static constexpr size_t kMaxAddresses = 65536;
  static constexpr size_t kMaxNamesPerAddress = 16;
  // `name` normalized; `ip` is stored unmapped. Over the bounds the binding is dropped
  // (the connect is then denied, never allowed by mistake).
  void Bind(const std::string& name, const IpAddress& ip);
  const std::vector<std::string>& NamesOf(const IpAddress& ip) const;
  size_t size() const { return by_ip_.size(); }

 private:
  std::map<IpAddress, std::vector<std::string>> by_ip_;
};

struct NetVerdict {
  bool allowed = false;
  // Allowed: what allowed it ("pypi.org resolved to 151.101.0.223", "rule 203.0.113.0/24");
  // denied: why, in words a model can act on.
  std::string reason;
  std::string name;  // the allowed name the destination was bound to, if that allowed it
};

// May the app resolve `name` (normalized)? Any name rule matching it, on any port.
NetVerdict CheckName(const NetPolicy& net, absl::string_view name);
// May the app reach ip:port over `proto`? See the semantics at the top.
NetVerdict CheckDestination(const NetPolicy& net, const NameBindings& bindings, const IpAddress& ip,
                            uint16_t port, NetProto proto);

}  // namespace usentry::policy

#endif  // USENTRY_SENTRY_POLICY_NET_RULES_H_
