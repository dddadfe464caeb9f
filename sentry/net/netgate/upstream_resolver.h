// UpstreamResolver: netgate's Resolver (resolver.h) over c-ares. It resolves the names the
// policy allowed (A or AAAA) against the host's upstream servers and reports the
// addresses with their TTLs, driven by netgate's single-threaded poll loop. Upstream
// answers are untrusted: c-ares parses them, and only addresses of the asked family that
// belong to the name or its CNAME chain are passed on.
//
// DNS only, exactly the name asked: no /etc/hosts, no search domains, no aliases
// (ares_query, never ares_search/ares_gethostbyname), so the name the policy approved is
// the name that is resolved. Every file c-ares reads (resolv.conf, /dev/urandom for its
// query ids) is read in Create; after it the resolver needs only sockets, so netgate
// can confine itself without a filesystem.
//
// Not thread-safe: one thread creates it, calls it and runs its poll loop.
#ifndef USENTRY_SENTRY_NET_NETGATE_UPSTREAM_RESOLVER_H_
#define USENTRY_SENTRY_NET_NETGATE_UPSTREAM_RESOLVER_H_

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sentry/net/netgate/resolver.h"

struct ares_channeldata;  // c-ares' channel; ares.h stays out of this header

namespace usentry::netgate {

struct UpstreamOptions {
  // "IP", "IP:PORT" or "[IPv6]:PORT" (policy::ParseDnsServer's forms). Empty: the
  // nameservers of `resolv_conf` (c-ares uses 127.0.0.1 when it names none, as glibc).
  std::vector<std::string> servers;
  std::string resolv_conf = "/etc/resolv.conf";  // read only when `servers` is empty
  absl::Duration timeout = absl::Seconds(2);     // first attempt; doubles each round
  int tries = 2;                                 // rounds over the server list
  // Queries in flight at once. A hostile app can send DNS queries as fast as it likes,
  // and each one becomes an upstream query with its memory, a socket slot and a timer
  // here: the bound keeps a flood from growing netgate without limit or turning it
  // into an amplifier towards upstream. Beyond it, a query is not sent: SERVFAIL.
  size_t max_in_flight = 256;
};

class UpstreamResolver : public Resolver {
 public:
  // At most as many addresses are kept from one answer.
  static constexpr size_t kMaxAddresses = 64;

  // InvalidArgument for a malformed server, a timeout outside 1 ms .. 60 s, tries
  // outside 1 .. 16 or max_in_flight 0; Internal when c-ares refuses to start;
  // FailedPrecondition if it ends up with no server at all.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<UpstreamResolver>> Create(
      const UpstreamOptions& options);
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<UpstreamResolver>> Create(
      const std::vector<std::string>& servers, absl::Duration timeout, int tries);
  // Pending queries are dropped: their callbacks never run (they typically point into
  // an owner that is being destroyed too).
  ~UpstreamResolver() override;
  UpstreamResolver(const UpstreamResolver&) = delete;
  UpstreamResolver& operator=(const UpstreamResolver&) = delete;

  // Resolver. `name`: labels of 1..63 letters, digits, '-' or '_', at most 253
  // characters, one trailing dot allowed (NormalizeHostname's output passes); `qtype`
  // kTypeA or kTypeAAAA. `done` runs exactly once, from a later Process(), with:
  //   kRcodeNoError   addrs of the asked family in upstream's order (TTL: the smallest
  //                   along the CNAME chain), or no addrs (NODATA);
  //   kRcodeNxDomain  the name does not exist;
  //   kRcodeServFail  SERVFAIL, no answer in time, no server reachable, an answer
  //                   c-ares cannot use, or too many queries in flight;
  //   kRcodeRefused   upstream refused, or the name/type is not one we send (then
  //                   nothing was sent: no byte of it reaches c-ares' escape syntax).
  // `error` says which, for the log. `done` may call Resolve; it must not destroy the
  // resolver.
  void Resolve(const std::string& name, uint16_t qtype, Done done) override;
  // The sockets c-ares has open, with the events it waits for.
  void AppendPollFds(std::vector<pollfd>& fds) override;
  // Until the next c-ares timeout; zero when results are ready; infinite when idle.
  absl::Duration NextTimeout() override;
  // Reads and writes ready sockets, handles timeouts, runs callbacks. Call it after
  // every poll(), also when poll timed out; entries that are not ours are ignored.
  void Process(const std::vector<pollfd>& fds) override;

  // Queries sent upstream and not answered yet.
  [[nodiscard]] size_t in_flight() const { return in_flight_; }
  // The servers in use, "IP:PORT" / "[IP]:PORT", in the order they are tried (for logs).
  [[nodiscard]] const std::vector<std::string>& servers() const { return servers_; }

 private:
  struct Pending;
  struct Interest {
    bool read = false;
    bool write = false;
  };

  explicit UpstreamResolver(size_t max_in_flight) : max_in_flight_(max_in_flight) {}
  static void OnSocketState(void* self, int fd, int readable, int writable);
  static void OnAnswer(void* arg, int status, int timeouts, unsigned char* abuf, int alen);

  ares_channeldata* channel_ = nullptr;
  const size_t max_in_flight_;
  size_t in_flight_ = 0;
  // Results waiting for the next Process(): every result goes through here, so `done`
  // never runs inside Resolve, even when c-ares fails a query on the spot.
  std::vector<std::pair<Done, Result>> ready_;
  std::vector<std::string> servers_;
  absl::flat_hash_map<int, Interest> sockets_;  // c-ares' open sockets and their interest
};

}  // namespace usentry::netgate

#endif  // USENTRY_SENTRY_NET_NETGATE_UPSTREAM_RESOLVER_H_
