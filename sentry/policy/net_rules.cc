// Net rules: parsing, the blocked ranges, bindings, decisions.
#include "sentry/policy/net_rules.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace usentry::policy {
namespace {

absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

struct Range {
  const char* cidr;
  const char* what;
};

// Never reachable by default: the places an exfiltrating or lateral-moving program wants
// to go (the host, the local network, cloud metadata) and addresses that are no place at
// all. IPv4-mapped IPv6 addresses are checked as IPv4; NAT64 (64:ff9b::/96) and 6to4
// embed IPv4 too and are blocked whole rather than decoded.
constexpr Range kBlocked[] = {
    {"0.0.0.0/8", "unspecified/this-network"},
    {"10.0.0.0/8", "RFC 1918"},
    {"100.64.0.0/10", "CGNAT (RFC 6598)"},
    {"127.0.0.0/8", "loopback of the host"},
    {"169.254.0.0/16", "link-local, cloud metadata"},
    {"172.16.0.0/12", "RFC 1918"},
    {"192.0.0.0/24", "IETF protocol assignments"},
    {"192.168.0.0/16", "RFC 1918"},
    {"198.18.0.0/15", "benchmarking (RFC 2544)"},
    {"224.0.0.0/4", "multicast"},
    {"240.0.0.0/4", "reserved, broadcast"},
    {"::/128", "unspecified"},
    {"::1/128", "loopback of the host"},
    {"64:ff9b::/96", "NAT64 (embeds IPv4)"},
    {"64:ff9b:1::/48", "NAT64 (embeds IPv4)"},
    {"2002::/16", "6to4 (embeds IPv4)"},
    {"fc00::/7", "unique-local, cloud metadata (fd00:ec2::254)"},
    {"fe80::/10", "link-local"},
    {"ff00::/8", "multicast"},
};

struct ParsedRange {
  Cidr cidr;
  const char* what;
};

const std::vector<ParsedRange>& BlockedRanges() {
  static const auto* ranges = [] {
    auto* v = new std::vector<ParsedRange>;
    for (const Range& r : kBlocked) v->push_back({*Cidr::Parse(r.cidr), r.what});
    return v;
  }();
  return *ranges;
}

absl::StatusOr<uint16_t> ParsePort(absl::string_view text, absl::string_view rule) {
  uint32_t port;
  if (text.empty() || text.size() > 5 || !absl::SimpleAtoi(text, &port) || port == 0 ||
      port > 65535) {
    return Invalid(absl::StrCat("\"", rule, "\": port \"", text, "\" is not 1-65535"));
  }
  return static_cast<uint16_t>(port);
}

}  // namespace

const char* NetProtoName(NetProto p) { return p == NetProto::kUdp ? "udp" : "tcp"; }

bool NetRule::MatchesName(absl::string_view name) const {
  switch (kind) {
    case Kind::kHost:
      return name == host;
    case Kind::kWildcard:
      return host.empty() || (name.size() > host.size() + 1 && absl::EndsWith(name, host) &&
                              name[name.size() - host.size() - 1] == '.');
    case Kind::kCidr:
      return false;
  }
  return false;
}

bool NetRule::MatchesPort(uint16_t port, NetProto p) const {
  return p == proto && port >= port_lo && port <= port_hi;
}

std::string NetRule::ToString() const {
  std::string target;
  switch (kind) {
    case Kind::kHost:
      target = host;
      break;
    case Kind::kWildcard:
      target = host.empty() ? "*" : absl::StrCat("*.", host);
      break;
    case Kind::kCidr: {
      int width = cidr.base().is_v6() ? 128 : 32;
      target = cidr.prefix_len() == width ? cidr.base().ToString() : cidr.ToString();
      if (cidr.base().is_v6() && !(port_lo == 1 && port_hi == 65535)) {
        target = absl::StrCat("[", target, "]");
      }
      break;
    }
  }
  std::string ports;
  if (!(port_lo == 1 && port_hi == 65535)) {
    ports =
        port_lo == port_hi ? absl::StrCat(":", port_lo) : absl::StrCat(":", port_lo, "-", port_hi);
  }
  return absl::StrCat(target, ports, proto == NetProto::kUdp ? "/udp" : "");
}

bool NetPolicy::AllowsHostPort(uint16_t port) const {
  return std::find(host_ports.begin(), host_ports.end(), port) != host_ports.end();
}

std::optional<std::string> NormalizeHostname(absl::string_view name) {
  std::string n = absl::AsciiStrToLower(name);
  if (!n.empty() && n.back() == '.') n.pop_back();
  if (n.empty() || n.size() > 253) return std::nullopt;
  for (absl::string_view label : absl::StrSplit(n, '.')) {
    if (label.empty() || label.size() > 63) return std::nullopt;
    for (char c : label) {
      if (!absl::ascii_isalnum(c) && c != '-' && c != '_') return std::nullopt;
    }
  }
  return n;
}

absl::StatusOr<NetRule> ParseNetRule(absl::string_view text, bool private_ok) {
  const absl::string_view whole = text;
  NetRule rule;
  rule.private_ok = private_ok;
  if (absl::ConsumeSuffix(&text, "/udp")) {
    rule.proto = NetProto::kUdp;
  } else {
    absl::ConsumeSuffix(&text, "/tcp");
  }
  absl::string_view target = text;
  absl::string_view ports;
  bool bracketed = false;
  if (absl::StartsWith(text, "[")) {
    size_t close = text.find(']');
    if (close == absl::string_view::npos) {
      return Invalid(absl::StrCat("\"", whole, "\": missing ']'"));
    }
    target = text.substr(1, close - 1);
    absl::string_view rest = text.substr(close + 1);
    if (!rest.empty() && (!absl::ConsumePrefix(&rest, ":") || rest.empty())) {
      return Invalid(absl::StrCat("\"", whole, "\": expected ':PORT' after ']'"));
    }
    ports = rest;
    bracketed = true;
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    size_t colon = text.find(':');
    target = text.substr(0, colon);
    ports = text.substr(colon + 1);
    if (ports.empty()) return Invalid(absl::StrCat("\"", whole, "\": empty port"));
  }
  if (!ports.empty()) {
    std::vector<absl::string_view> range = absl::StrSplit(ports, absl::MaxSplits('-', 1));
    ASSIGN_OR_RETURN(rule.port_lo, ParsePort(range[0], whole));
    rule.port_hi = rule.port_lo;
    if (range.size() == 2) {
      ASSIGN_OR_RETURN(rule.port_hi, ParsePort(range[1], whole));
      if (rule.port_hi < rule.port_lo) {
        return Invalid(absl::StrCat("\"", whole, "\": port range is backwards"));
      }
    }
  }
  if (target.empty()) return Invalid(absl::StrCat("\"", whole, "\": empty destination"));
  // An address or CIDR? (A hostname never has ':' and never parses as an address.)
  if (std::optional<Cidr> cidr = Cidr::Parse(target)) {
    if (cidr->base().is_v4() && bracketed) {
      return Invalid(absl::StrCat("\"", whole, "\": brackets are for IPv6 addresses"));
    }
    rule.kind = NetRule::Kind::kCidr;
    rule.cidr = *cidr;
    return rule;
  }
  if (absl::StrContains(target, ':') || absl::StrContains(target, '/') || bracketed) {
    return Invalid(absl::StrCat("\"", whole,
                                "\": not an address or CIDR (host bits set? IPv6 with a port "
                                "goes in brackets: [2001:db8::1]:443)"));
  }
  if (private_ok) {
    return Invalid(absl::StrCat("\"", whole,
                                "\": allow_private takes an address or CIDR, not a name (names "
                                "never open a blocked range)"));
  }
  if (target == "*") {
    rule.kind = NetRule::Kind::kWildcard;
    return rule;
  }
  absl::string_view name = target;
  if (absl::ConsumePrefix(&name, "*.")) rule.kind = NetRule::Kind::kWildcard;
  std::optional<std::string> norm = NormalizeHostname(name);
  if (!norm || absl::StrContains(name, '*')) {
    return Invalid(absl::StrCat("\"", whole, "\": not a hostname, *.domain, address or CIDR"));
  }
  rule.host = *norm;
  return rule;
}

absl::StatusOr<std::string> ParseDnsServer(absl::string_view text) {
  absl::string_view host = text;
  absl::string_view port;
  if (absl::ConsumePrefix(&host, "[")) {
    size_t close = host.find(']');
    if (close == absl::string_view::npos)
      return Invalid(absl::StrCat("\"", text, "\": missing ']'"));
    port = host.substr(close + 1);
    host = host.substr(0, close);
    if (!port.empty() && !absl::ConsumePrefix(&port, ":")) {
      return Invalid(absl::StrCat("\"", text, "\": expected ':PORT' after ']'"));
    }
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    size_t colon = text.find(':');
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  std::optional<IpAddress> ip = IpAddress::Parse(host);
  if (!ip)
    return Invalid(absl::StrCat("\"", text, "\": not an IP address (IP, IP:PORT or [IPv6]:PORT)"));
  uint16_t p = 53;
  if (!port.empty() || (text.size() > 0 && text.back() == ':')) {
    ASSIGN_OR_RETURN(p, ParsePort(port, text));
  }
  return ip->is_v6() ? absl::StrCat("[", ip->ToString(), "]:", p)
                     : absl::StrCat(ip->ToString(), ":", p);
}

std::optional<std::string> BlockedRange(const IpAddress& ip) {
  IpAddress u = ip.Unmapped();
  for (const ParsedRange& r : BlockedRanges()) {
    if (r.cidr.Contains(u)) return absl::StrCat(r.what, " (", r.cidr.ToString(), ")");
  }
  return std::nullopt;
}

absl::Status ValidateNetPolicy(const NetPolicy& net) {
  for (const NetRule& r : net.allow) {
    if (r.kind != NetRule::Kind::kCidr || r.private_ok) continue;
    for (const ParsedRange& b : BlockedRanges()) {
      if (b.cidr.Covers(r.cidr)) {
        return Invalid(absl::StrCat("net.allow \"", r.ToString(), "\": ", r.cidr.ToString(),
                                    " lies in an always-blocked range, ", b.what, " (",
                                    b.cidr.ToString(),
                                    "); name it in allow_private "
                                    "(--allow-net-private) to reach it anyway"));
      }
    }
  }
  for (uint16_t p : net.host_ports) {
    if (p == 0) return Invalid("net.host_ports: port 0 is not a port");
  }
  return absl::OkStatus();
}

void NameBindings::Bind(const std::string& name, const IpAddress& ip) {
  IpAddress u = ip.Unmapped();
  auto it = by_ip_.find(u);
  if (it == by_ip_.end()) {
    if (by_ip_.size() >= kMaxAddresses) return;
    it = by_ip_.emplace(u, std::vector<std::string>{}).first;
  }
  std::vector<std::string>& names = it->second;
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  if (names.size() >= kMaxNamesPerAddress) return;
  names.push_back(name);
}

const std::vector<std::string>& NameBindings::NamesOf(const IpAddress& ip) const {
  static const auto* empty = new std::vector<std::string>;
  auto it = by_ip_.find(ip.Unmapped());
  return it == by_ip_.end() ? *empty : it->second;
}

NetVerdict CheckName(const NetPolicy& net, absl::string_view name) {
  for (const NetRule& r : net.allow) {
    if (r.MatchesName(name)) return {true, absl::StrCat("rule ", r.ToString()), std::string(name)};
  }
  if (!net.egress()) return {false, "the sandbox has no network (allow destinations with --allow-net)", ""};
  return {false, absl::StrCat(name, " is not in the allowlist"), ""};
}

NetVerdict CheckDestination(const NetPolicy& net, const NameBindings& bindings, const IpAddress& ip,
                            uint16_t port, NetProto proto) {
  const IpAddress u = ip.Unmapped();
  const std::string dst = absl::StrCat(u.ToString(), ":", port, "/", NetProtoName(proto));
  if (!net.egress()) return {false, "the sandbox has no network (allow destinations with --allow-net)", ""};
  if (std::optional<std::string> blocked = BlockedRange(u)) {
    for (const NetRule& r : net.allow) {
      if (r.kind == NetRule::Kind::kCidr && r.private_ok && r.cidr.Contains(u) &&
          r.MatchesPort(port, proto)) {
        return {true, absl::StrCat("allow_private rule ", r.ToString()), ""};
      }
    }
    return {false, absl::StrCat(u.ToString(), " is in an always-blocked range: ", *blocked), ""};
  }
  for (const NetRule& r : net.allow) {
    if (r.kind == NetRule::Kind::kCidr && r.cidr.Contains(u) && r.MatchesPort(port, proto)) {
      return {true, absl::StrCat("rule ", r.ToString()), ""};
    }
  }
  const std::vector<std::string>& names = bindings.NamesOf(u);
  for (const std::string& name : names) {
    for (const NetRule& r : net.allow) {
      if (r.MatchesName(name) && r.MatchesPort(port, proto)) {
        return {true,
                absl::StrCat(name, " resolved to ", u.ToString(), " (rule ", r.ToString(), ")"),
                name};
      }
    }
  }
  if (!names.empty()) {
    return {false,
            absl::StrCat(dst, " is not allowed for ", absl::StrJoin(names, ", "),
                         " (no rule allows this port/protocol)"),
            ""};
  }
  return {false,
          absl::StrCat(u.ToString(),
                       " was not resolved from an allowed name in this run and no allowed "
                       "address range contains it"),
          ""};
}

}  // namespace usentry::policy
