// Resolver: how netgate resolves an allowed name upstream. The server drives it from its
// single-threaded poll loop; upstream_resolver.h implements it with c-ares, tests with
// a fake.
#ifndef USENTRY_SENTRY_NET_NETGATE_RESOLVER_H_
#define USENTRY_SENTRY_NET_NETGATE_RESOLVER_H_

#include <poll.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "sentry/net/netgate/protocol.h"

namespace usentry::netgate {

class Resolver {
 public:
  struct Result {
    int rcode = kRcodeServFail;  // kRcodeNoError (maybe no addresses: NODATA), NXDOMAIN...
    std::vector<ResolvedAddress> addrs;
    std::string error;  // for the log when not NOERROR
  };
  using Done = std::function<void(Result)>;
  virtual ~Resolver() = default;

  // Resolves `name` (normalized) for `qtype` (kTypeA/kTypeAAAA). `done` runs later, from
  // Process(), exactly once.
  virtual void Resolve(const std::string& name, uint16_t qtype, Done done) = 0;
  // The FDs to poll and until when, at most; then Process() with what poll reported.
  virtual void AppendPollFds(std::vector<pollfd>& fds) = 0;
  virtual absl::Duration NextTimeout() = 0;
  // `fds` are the entries AppendPollFds added, with revents filled in.
  virtual void Process(const std::vector<pollfd>& fds) = 0;
};

}  // namespace usentry::netgate

#endif  // USENTRY_SENTRY_NET_NETGATE_RESOLVER_H_
