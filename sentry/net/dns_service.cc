// SandboxResolver: local names, policy, netgate, bindings.
#include "sentry/net/dns_service.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/net/dns_message.h"
#include "sentry/net/dns_name.h"
#include "sentry/net/sandbox_network.h"

namespace usentry::sentry::net {
namespace {

using nlohmann::json;

// TTL of the names the sandbox answers itself: they never change during a run.
constexpr uint32_t kLocalTtl = 3600;

const char* TypeName(uint16_t type) {
  switch (type) {
    case dns::kTypeA:
      return "A";
    case dns::kTypeAaaa:
      return "AAAA";
    case dns::kTypePtr:
      return "PTR";
    case dns::kTypeCname:
      return "CNAME";
    case dns::kTypeAny:
      return "ANY";
    default:
      return "other";
  }
}

const char* RcodeName(dns::Rcode r) {
  switch (r) {
    case dns::Rcode::kNoError:
      return "NOERROR";
    case dns::Rcode::kNxDomain:
      return "NXDOMAIN";
    case dns::Rcode::kRefused:
      return "REFUSED";
    case dns::Rcode::kServFail:
      return "SERVFAIL";
    default:
      return "other";
  }
}

class SandboxResolver : public DnsService {
 public:
  explicit SandboxResolver(std::shared_ptr<NetContext> ctx) : ctx_(std::move(ctx)) {}

  void Query(Task& task, std::string datagram, Reply reply) override {
    dns::ParseResult parsed = dns::ParseQuery(datagram);
    if (parsed.status == dns::ParseStatus::kDrop) return;
    const dns::Query& q = parsed.query;
    if (parsed.status == dns::ParseStatus::kAnswerError) {
      reply(dns::BuildResponse(q, parsed.rcode, {}, dns::MaxResponseSize(q)));
      return;
    }
    const dns::Question& question = *q.question;
    const int pid = task.thread_group().pid();
    auto answer = [q](dns::Rcode rcode, const std::vector<dns::ResourceRecord>& rrs) {
      return dns::BuildResponse(q, rcode, rrs, dns::MaxResponseSize(q));
    };
    if (question.qclass != dns::kClassIn) {
      reply(answer(dns::Rcode::kRefused, {}));
      return;
    }
    std::vector<dns::ResourceRecord> local;
    if (AnswerLocally(question, &local)) {
      // A name the sandbox owns but has no record of this type for: NODATA; a reverse
      // name it does not own, or the host alias without host ports: NXDOMAIN.
      const bool exists = !local.empty() || (IsLocalName(question.name) &&
                                             (question.name != kHostAlias || HostAliasOn()));
      reply(answer(exists ? dns::Rcode::kNoError : dns::Rcode::kNxDomain, local));
      return;
    }
    policy::NetVerdict v = question.is_hostname ? policy::CheckName(ctx_->policy, question.name)
                                                : policy::NetVerdict{false, "not a host name", ""};
    if (!v.allowed) {
      Record(pid, question, "denied", "NXDOMAIN", v.reason, {}, {});
      ctx_->audit->Explain("resolve", question.name, v.reason,
                           ctx_->policy.egress() ? "net.allow" : "net");
      json line = {
          {"by", "sentry"},       {"name", question.name}, {"type", TypeName(question.type)},
          {"decision", "denied"}, {"rcode", "NXDOMAIN"},   {"reason", v.reason}};
      ctx_->net_log->Emit("resolve", line);
      reply(answer(dns::Rcode::kNxDomain, {}));
      return;
    }
    if (question.type != dns::kTypeA && question.type != dns::kTypeAaaa) {
      // Allowed, but only addresses come from upstream: no records of this type.
      Record(pid, question, "allowed", "NOERROR", "only A and AAAA are resolved upstream", {}, {});
      reply(answer(dns::Rcode::kNoError, {}));
      return;
    }
    if (ctx_->netgate == nullptr) {
      reply(answer(dns::Rcode::kServFail, {}));
      return;
    }
    const std::string name = question.name;
    const dns::Question qcopy = question;
    SysStatus sent = ctx_->netgate->Resolve(
        name, question.type,
        [this, pid, qcopy, answer, reply = std::move(reply)](const netgate::ResolveReply& r) {
          std::vector<dns::ResourceRecord> rrs;
          json addrs = json::array(), blocked = json::array();
          for (const netgate::ResolvedAddress& a : r.addrs) {
            // netgate dropped blocked ranges already; a sentry that trusts it no further
            // than its own rules checks again before binding.
            if (policy::BlockedRange(a.ip)) continue;
            ctx_->bindings.Bind(qcopy.name, a.ip);
            rrs.push_back(dns::ResourceRecord::Address("", a.ip, a.ttl));
            addrs.push_back(a.ip.ToString());
          }
          std::vector<std::string> dropped;
          for (const netgate::BlockedAddress& b : r.blocked) {
            blocked.push_back({{"ip", b.ip.ToString()}, {"range", b.range}});
            dropped.push_back(absl::StrCat(b.ip.ToString(), " (", b.range, ")"));
          }
          dns::Rcode rcode = static_cast<dns::Rcode>(r.rcode);
          const bool refused = rcode == dns::Rcode::kRefused;
          Record(pid, qcopy, refused ? "denied" : "allowed", RcodeName(rcode), r.reason, addrs,
                 blocked);
          if (!dropped.empty()) {
            ctx_->audit->Explain("resolve", qcopy.name,
                                 absl::StrCat("answers in always-blocked ranges dropped: ",
                                              absl::StrJoin(dropped, ", ")),
                                 "net.allow");
          }
          reply(answer(rcode, rrs));
        });
    if (!sent.ok()) {
      // netgate is gone: no name can be resolved any more.
      reply(answer(dns::Rcode::kServFail, {}));
    }
  }

 private:
  bool HostAliasOn() const { return !ctx_->policy.host_ports.empty(); }

  bool IsLocalName(const std::string& name) const {
    return name == "localhost" || absl::EndsWith(name, ".localhost") || name == ctx_->hostname ||
           name == kHostAlias;
  }

  // The names the sandbox owns, and reverse lookups (which never go upstream: they would
  // tell a resolver outside which addresses the app is curious about). Returns false
  // for names it does not own.
  bool AnswerLocally(const dns::Question& q, std::vector<dns::ResourceRecord>* out) const {
    const bool a = q.type == dns::kTypeA || q.type == dns::kTypeAny;
    const bool aaaa = q.type == dns::kTypeAaaa || q.type == dns::kTypeAny;
    if (q.name == "localhost" || absl::EndsWith(q.name, ".localhost")) {
      if (a) out->push_back(dns::ResourceRecord::Address("", IpAddress::V4(0x7f000001), kLocalTtl));
      if (aaaa)
        out->push_back(dns::ResourceRecord::Address("", *IpAddress::Parse("::1"), kLocalTtl));
      return true;
    }
    if (q.name == ctx_->hostname) {
      if (a) out->push_back(dns::ResourceRecord::Address("", IpAddress::V4(0x7f000101), kLocalTtl));
      return true;
    }
    if (q.name == kHostAlias) {
      // The sandbox's own name for the host: it exists only with host ports, and it is
      // never asked upstream either way.
      if (!HostAliasOn()) return true;  // NXDOMAIN
      if (a) out->push_back(dns::ResourceRecord::Address("", GatewayAddress(), kLocalTtl));
      return true;
    }
    if (absl::EndsWith(q.name, ".in-addr.arpa") || absl::EndsWith(q.name, ".ip6.arpa") ||
        q.name == "in-addr.arpa" || q.name == "ip6.arpa") {
      std::optional<IpAddress> ip = dns::ParseReverseName(q.name);
      if (ip && q.type == dns::kTypePtr) {
        IpAddress u = ip->Unmapped();
        if (u.IsLoopback()) {
          out->push_back(dns::ResourceRecord::Ptr("", "localhost", kLocalTtl));
        } else if (HostAliasOn() && u == GatewayAddress()) {
          out->push_back(dns::ResourceRecord::Ptr("", kHostAlias, kLocalTtl));
        } else if (u == SandboxAddress()) {
          out->push_back(dns::ResourceRecord::Ptr("", ctx_->hostname, kLocalTtl));
        }
      }
      return true;  // NXDOMAIN when nothing was added
    }
    return false;
  }

  void Record(int pid, const dns::Question& q, const char* decision, const char* rcode,
              const std::string& reason, const json& addrs, const json& blocked) {
    json fields = {{"pid", pid},           {"op", "resolve"},
                   {"name", q.name},       {"type", TypeName(q.type)},
                   {"decision", decision}, {"rcode", rcode}};
    if (!reason.empty()) fields["reason"] = reason;
    if (!addrs.is_null()) fields["addrs"] = addrs;
    if (!blocked.is_null() && !blocked.empty()) fields["blocked"] = blocked;
    ctx_->audit->Emit("net", fields);
  }

  std::shared_ptr<NetContext> ctx_;
};

}  // namespace

std::unique_ptr<DnsService> NewSandboxResolver(std::shared_ptr<NetContext> ctx) {
  return std::make_unique<SandboxResolver>(std::move(ctx));
}

}  // namespace usentry::sentry::net
