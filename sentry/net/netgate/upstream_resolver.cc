#include "sentry/net/netgate/upstream_resolver.h"

#include <ares.h>
#include <arpa/nameser.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sentry/policy/net_rules.h"

namespace usentry::netgate {
namespace {

// Payload size we advertise upstream with EDNS0: the DNS flag day 2020 value, which
// avoids IP fragmentation on ordinary paths; bigger answers come with TC and go to TCP.
constexpr int kEdnsPayload = 1232;

struct ServerAddress {
  IpAddress ip;
  uint16_t port = 53;
};

// The policy's parser decides what a server may look like (the CLI has already run it
// on --dns); its canonical "IP:PORT" / "[IPv6]:PORT" is split here.
absl::StatusOr<ServerAddress> ParseServer(absl::string_view text) {
  absl::StatusOr<std::string> canonical = policy::ParseDnsServer(text);
  if (!canonical.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("upstream DNS server: ", canonical.status().message()));
  }
  absl::string_view c = *canonical;
  const size_t colon = c.rfind(':');
  absl::string_view host = c.substr(0, colon);
  absl::ConsumePrefix(&host, "[");
  absl::ConsumeSuffix(&host, "]");
  std::optional<IpAddress> ip = IpAddress::Parse(host);
  uint32_t port = 0;
  if (colon == absl::string_view::npos || !ip || !absl::SimpleAtoi(c.substr(colon + 1), &port) ||
      port == 0 || port > 65535) {
    return absl::InternalError(absl::StrCat("ParseDnsServer gave \"", c, "\""));
  }
  return ServerAddress{*ip, static_cast<uint16_t>(port)};
}

std::string ServerText(int family, const void* addr, int port) {
  char buf[INET6_ADDRSTRLEN] = {};
  ares_inet_ntop(family, addr, buf, sizeof(buf));
  const int p = port ? port : 53;  // 0: c-ares' default port
  return family == AF_INET6 ? absl::StrCat("[", buf, "]:", p) : absl::StrCat(buf, ":", p);
}

// Names we send upstream: what a host name may look like plus '_' (seen in real host
// names), nothing that c-ares' escape syntax (backslashes) or a C string (NUL) could
// turn into another name.
bool IsSendableName(absl::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (absl::string_view label : absl::StrSplit(name, '.')) {
    if (label.empty() || label.size() > 63) return false;
    for (char c : label) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
        return false;
      }
    }
  }
  return true;
}

Resolver::Result Failure(int rcode, std::string error) {
  Resolver::Result r;
  r.rcode = rcode;
  r.error = std::move(error);
  return r;
}

uint32_t Ttl(int ttl) { return ttl < 0 ? 0 : static_cast<uint32_t>(ttl); }

// The addresses of a successful answer (ARES_SUCCESS: NOERROR with answers).
Resolver::Result ParseAnswer(uint16_t qtype, const unsigned char* abuf, int alen) {
  Resolver::Result r;
  int n = static_cast<int>(UpstreamResolver::kMaxAddresses);
  int status;
  if (qtype == kTypeA) {
    std::vector<ares_addrttl> ttls(UpstreamResolver::kMaxAddresses);
    status = ares_parse_a_reply(abuf, alen, nullptr, ttls.data(), &n);
    for (int i = 0; status == ARES_SUCCESS && i < n; ++i) {
      r.addrs.push_back({IpAddress::FromIn(ttls[i].ipaddr), Ttl(ttls[i].ttl)});
    }
  } else {
    std::vector<ares_addr6ttl> ttls(UpstreamResolver::kMaxAddresses);
    status = ares_parse_aaaa_reply(abuf, alen, nullptr, ttls.data(), &n);
    for (int i = 0; status == ARES_SUCCESS && i < n; ++i) {
      in6_addr a;
      static_assert(sizeof(a) == sizeof(ttls[i].ip6addr));
      memcpy(&a, &ttls[i].ip6addr, sizeof(a));
      r.addrs.push_back({IpAddress::FromIn6(a), Ttl(ttls[i].ttl)});
    }
  }
  if (status == ARES_ENODATA || (status == ARES_SUCCESS && r.addrs.empty())) {
    // Only records of the other family, only a CNAME, or records for other names.
    return Failure(kRcodeNoError, "answer has no address of this family for the name");
  }
  if (status != ARES_SUCCESS) {
    return Failure(kRcodeServFail, absl::StrCat("unusable answer: ", ares_strerror(status)));
  }
  r.rcode = kRcodeNoError;
  return r;
}

Resolver::Result FromAres(uint16_t qtype, int status, int timeouts, const unsigned char* abuf,
                          int alen) {
  switch (status) {
    case ARES_SUCCESS:
      return ParseAnswer(qtype, abuf, alen);
    case ARES_ENODATA:
      return Failure(kRcodeNoError, "no records of this type (NOERROR)");
    case ARES_ENOTFOUND:
      return Failure(kRcodeNxDomain, "no such name (NXDOMAIN)");
    case ARES_ESERVFAIL:
      return Failure(kRcodeServFail, "upstream answered SERVFAIL");
    case ARES_EREFUSED:
      return Failure(kRcodeRefused, "upstream answered REFUSED");
    case ARES_ETIMEOUT:
      return Failure(kRcodeServFail,
                     absl::StrCat("no answer from any server (", timeouts, " timeouts)"));
    case ARES_ECONNREFUSED:
      return Failure(kRcodeServFail, "no server reachable (connection refused or send failed)");
    case ARES_EDESTRUCTION:
    case ARES_ECANCELLED:
      return Failure(kRcodeServFail, "resolver shut down");
    default:
      return Failure(kRcodeServFail, absl::StrCat("upstream: ", ares_strerror(status)));
  }
}

absl::Status AresError(absl::string_view call, int status) {
  return absl::InternalError(absl::StrCat(call, " failed: ", ares_strerror(status)));
}

}  // namespace

struct UpstreamResolver::Pending {
  UpstreamResolver* self;
  uint16_t qtype;
  Done done;
};

absl::StatusOr<std::unique_ptr<UpstreamResolver>> UpstreamResolver::Create(
    const std::vector<std::string>& servers, absl::Duration timeout, int tries) {
  UpstreamOptions options;
  options.servers = servers;
  options.timeout = timeout;
  options.tries = tries;
  return Create(options);
}

absl::StatusOr<std::unique_ptr<UpstreamResolver>> UpstreamResolver::Create(
    const UpstreamOptions& options) {
  // Process-wide and not thread-safe in c-ares; a function-local static runs it once.
  static const int library = ares_library_init(ARES_LIB_INIT_ALL);
  if (library != ARES_SUCCESS) return AresError("ares_library_init", library);

  const int64_t timeout_ms = absl::ToInt64Milliseconds(options.timeout);
  if (timeout_ms <= 0 || timeout_ms > 60'000) {
    return absl::InvalidArgumentError("upstream DNS timeout must be 1 ms .. 60 s");
  }
  if (options.tries < 1 || options.tries > 16) {
    return absl::InvalidArgumentError("upstream DNS tries must be 1 .. 16");
  }
  if (options.max_in_flight == 0) {
    return absl::InvalidArgumentError("upstream DNS max_in_flight must be at least 1");
  }
  std::vector<ServerAddress> parsed;
  for (const std::string& s : options.servers) {
    absl::StatusOr<ServerAddress> a = ParseServer(s);
    if (!a.ok()) return a.status();
    parsed.push_back(*a);
  }

  std::unique_ptr<UpstreamResolver> r(new UpstreamResolver(options.max_in_flight));
  ares_options o{};
  int mask = 0;
  // NOCHECKRESP: pass SERVFAIL and REFUSED answers through as such. Without it c-ares
  // 1.18 retries them on the next server and, once every try is used up, reports
  // ECONNREFUSED, which loses the distinction this class reports. The price: a SERVFAIL
  // or REFUSED answer ends the query (timeouts and unreachable servers still fall
  // through to the next server).
  o.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES | ARES_FLAG_NOCHECKRESP | ARES_FLAG_EDNS;
  o.timeout = static_cast<int>(timeout_ms);
  o.tries = options.tries;
  o.ndots = 1;
  o.ndomains = 0;                      // no search list (ares_query does not use one anyway)
  o.lookups = const_cast<char*>("b");  // DNS only, never the hosts file
  o.nsort = 0;
  o.ednspsz = kEdnsPayload;
  o.sock_state_cb = &UpstreamResolver::OnSocketState;
  o.sock_state_cb_data = r.get();
  mask |= ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_NDOTS | ARES_OPT_DOMAINS |
          ARES_OPT_LOOKUPS | ARES_OPT_SORTLIST | ARES_OPT_EDNSPSZ | ARES_OPT_SOCK_STATE_CB |
          ARES_OPT_NOROTATE;
  if (!parsed.empty()) {
    // An empty server list given as an option means "configured": with every other
    // option set too, c-ares then does not open resolv.conf at all. The real list
    // (with ports and IPv6) is set right after.
    o.nservers = 0;
    mask |= ARES_OPT_SERVERS;
  } else {
    o.resolvconf_path = const_cast<char*>(options.resolv_conf.c_str());
    mask |= ARES_OPT_RESOLVCONF;
  }
  ares_channel channel = nullptr;
  int status = ares_init_options(&channel, &o, mask);
  if (status != ARES_SUCCESS) return AresError("ares_init_options", status);
  r->channel_ = channel;

  if (!parsed.empty()) {
    std::vector<ares_addr_port_node> nodes(parsed.size());
    for (size_t i = 0; i < parsed.size(); ++i) {
      ares_addr_port_node& n = nodes[i];
      n.next = i + 1 < parsed.size() ? &nodes[i + 1] : nullptr;
      if (parsed[i].ip.is_v4()) {
        n.family = AF_INET;
        memcpy(&n.addr.addr4, parsed[i].ip.bytes(), 4);
      } else {
        n.family = AF_INET6;
        memcpy(&n.addr.addr6, parsed[i].ip.bytes(), 16);
      }
      n.udp_port = n.tcp_port = parsed[i].port;
    }
    status = ares_set_servers_ports(channel, nodes.data());
    if (status != ARES_SUCCESS) return AresError("ares_set_servers_ports", status);
  }

  ares_addr_port_node* list = nullptr;
  status = ares_get_servers_ports(channel, &list);
  if (status != ARES_SUCCESS) return AresError("ares_get_servers_ports", status);
  for (ares_addr_port_node* n = list; n; n = n->next) {
    r->servers_.push_back(n->family == AF_INET6 ? ServerText(AF_INET6, &n->addr.addr6, n->udp_port)
                                                : ServerText(AF_INET, &n->addr.addr4, n->udp_port));
  }
  ares_free_data(list);
  if (r->servers_.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no upstream DNS server (none given, none in ", options.resolv_conf, ")"));
  }
  return r;
}

UpstreamResolver::~UpstreamResolver() {
  // Cancels the pending queries (their results land in ready_, which goes away unrun)
  // and closes the sockets, which calls OnSocketState; both still find this object whole.
  if (channel_) ares_destroy(channel_);
}

void UpstreamResolver::Resolve(const std::string& name, uint16_t qtype, Done done) {
  absl::string_view n = name;
  absl::ConsumeSuffix(&n, ".");
  if (qtype != kTypeA && qtype != kTypeAAAA) {
    ready_.emplace_back(std::move(done), Failure(kRcodeRefused, "only A and AAAA are resolved"));
    return;
  }
  if (!IsSendableName(n)) {
    ready_.emplace_back(std::move(done),
                        Failure(kRcodeRefused, "not a name netgate sends upstream"));
    return;
  }
  if (in_flight_ >= max_in_flight_) {
    ready_.emplace_back(
        std::move(done),
        Failure(kRcodeServFail,
                absl::StrCat("too many upstream queries in flight (", max_in_flight_, ")")));
    return;
  }
  ++in_flight_;
  auto* p = new Pending{this, qtype, std::move(done)};
  // c-ares may end the query before ares_query returns (no server can be sent to);
  // OnAnswer only queues the result, so `done` still runs from Process.
  ares_query(channel_, std::string(n).c_str(), ns_c_in, qtype, &UpstreamResolver::OnAnswer, p);
}

void UpstreamResolver::OnAnswer(void* arg, int status, int timeouts, unsigned char* abuf,
                                int alen) {
  std::unique_ptr<Pending> p(static_cast<Pending*>(arg));
  --p->self->in_flight_;
  p->self->ready_.emplace_back(std::move(p->done),
                               FromAres(p->qtype, status, timeouts, abuf, alen));
}

void UpstreamResolver::OnSocketState(void* self, int fd, int readable, int writable) {
  auto* r = static_cast<UpstreamResolver*>(self);
  if (!readable && !writable) {
    r->sockets_.erase(fd);  // closed, or nothing to wait for
    return;
  }
  r->sockets_[fd] = Interest{readable != 0, writable != 0};
}

void UpstreamResolver::AppendPollFds(std::vector<pollfd>& fds) {
  for (const auto& [fd, interest] : sockets_) {
    const short events =
        static_cast<short>((interest.read ? POLLIN : 0) | (interest.write ? POLLOUT : 0));
    fds.push_back(pollfd{fd, events, 0});
  }
}

void UpstreamResolver::Process(const std::vector<pollfd>& fds) {
  for (const pollfd& p : fds) {
    if (p.revents == 0) continue;
    // Looked up afresh each time: an earlier ares_process_fd may have closed it.
    auto it = sockets_.find(p.fd);
    if (it == sockets_.end()) continue;
    // Errors and hangups go to the reading side, where c-ares sees them and moves the
    // affected queries to the next server.
    const bool read = it->second.read && (p.revents & (POLLIN | POLLERR | POLLHUP));
    const bool write = it->second.write && (p.revents & (POLLOUT | POLLERR | POLLHUP));
    if (!read && !write) continue;
    ares_process_fd(channel_, read ? p.fd : ARES_SOCKET_BAD, write ? p.fd : ARES_SOCKET_BAD);
  }
  ares_process_fd(channel_, ARES_SOCKET_BAD, ARES_SOCKET_BAD);  // timeouts
  // Callbacks may call Resolve; what that queues waits for the next round.
  std::vector<std::pair<Done, Result>> ready = std::move(ready_);
  ready_.clear();
  for (auto& [done, result] : ready) done(std::move(result));
}

absl::Duration UpstreamResolver::NextTimeout() {
  if (!ready_.empty()) return absl::ZeroDuration();
  timeval tv{};
  if (!ares_timeout(channel_, nullptr, &tv)) return absl::InfiniteDuration();
  return absl::DurationFromTimeval(tv);
}

}  // namespace usentry::netgate
