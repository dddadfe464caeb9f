// The run's Egress and DnsService (egress.h): the policy decision in the sentry, the
// audit records of every network decision, and netgate for whatever is allowed.
// NetContext is what both share: the net policy, the name->IP bindings the sandbox
// resolver made (a connect is allowed only to an IP an allowed name resolved to), the
// netgate client (null when the policy allows no egress) and the record streams.
// netgate checks every request again with bindings of its own (netgate/server.h).
#ifndef USENTRY_SENTRY_NET_POLICY_EGRESS_H_
#define USENTRY_SENTRY_NET_POLICY_EGRESS_H_

#include <memory>
#include <string>

#include "sentry/audit/audit_log.h"
#include "sentry/net/egress.h"
#include "sentry/net/netgate/client.h"
#include "sentry/policy/net_rules.h"

namespace usentry::sentry::net {

struct NetContext {
  policy::NetPolicy policy;
  policy::NameBindings bindings;       // Kernel::mu
  netgate::Client* netgate = nullptr;  // never destroyed once started; null: no egress
  std::shared_ptr<const audit::AuditLog> audit = std::make_shared<audit::AuditLog>(-1, "", false);
  // --net-log: the sentry writes the decisions it makes itself ("by":"sentry"); netgate
  // writes its own to the same file.
  std::shared_ptr<const audit::AuditLog> net_log = std::make_shared<audit::AuditLog>(-1, "", false);
  std::string hostname = "usentry";
};

std::unique_ptr<Egress> NewPolicyEgress(std::shared_ptr<NetContext> ctx);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_POLICY_EGRESS_H_
