// The sandbox resolver (DnsService, egress.h): answers the app's DNS queries. Names the
// sandbox owns are answered here (localhost, the hostname, host.usentry.internal when
// host ports are allowed, their reverse names); a name the policy allows goes to
// netgate, whose answer arrives without addresses in always-blocked ranges, and each
// address in it is bound to the name (NetContext::bindings) before the app sees it;
// every other name is NXDOMAIN. Only A and AAAA reach upstream: other types of an
// allowed name are answered NODATA, reverse lookups of outside addresses NXDOMAIN.
// Every decision is a "net" audit record; denials also an --explain line.
#ifndef USENTRY_SENTRY_NET_DNS_SERVICE_H_
#define USENTRY_SENTRY_NET_DNS_SERVICE_H_

#include <memory>

#include "sentry/net/egress.h"
#include "sentry/net/policy_egress.h"

namespace usentry::sentry::net {

std::unique_ptr<DnsService> NewSandboxResolver(std::shared_ptr<NetContext> ctx);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_DNS_SERVICE_H_
