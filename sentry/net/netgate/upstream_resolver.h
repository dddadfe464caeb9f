// UpstreamResolver: netgate's DNS client, a thin wrapper over c-ares. It resolves the
// names the sandbox policy allowed (A or AAAA) against the host's upstream servers and
// reports the addresses with their TTLs, driven by netgate's own single-threaded poll
// loop. Upstream answers are untrusted: c-ares parses them, and this class passes on
// only addresses of the asked family that belong to the name or its CNAME chain.
//
// DNS only, exactly the name asked: no /etc/hosts, no search domains, no aliases
// (ares_query, never ares_search/ares_gethostbyname), so the name the policy approved is
// the name that is resolved. Every file c-ares reads (resolv.conf, /dev/urandom for its
// query ids) is read in Create; after it the resolver needs only sockets, so netgate
// can drop filesystem access.
//
// Not thread-safe: one thread creates it, calls it and runs its poll loop.
#ifndef USENTRY_SENTRY_NET_NETGATE_UPSTREAM_RESOLVER_H_
#define USENTRY_SENTRY_NET_NETGATE_UPSTREAM_RESOLVER_H_

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "base/ip_address.h"

struct ares_channeldata;  // c-ares' channel; ares.h stays out of this header

namespace usentry::sentry::net::netgate {

enum class ResolveStatus {
  kOk,        // at least one address
  kNxDomain,  // the name does not exist
  kNoData,    // the name exists but has no address of the asked family
  kServFail,  // SERVFAIL, timeout, unreachable or broken upstream, too many queries
  kRefused,   // upstream refused to answer
  kBadName,   // the name is not one we send upstream (see Resolve); nothing was sent
};
[[nodiscard]] const char* ResolveStatusName(ResolveStatus s);

enum class AddressFamily { kA, kAaaa };

struct ResolvedAddress {
  IpAddress ip;
  uint32_t ttl = 0;  // seconds; the smallest TTL along the CNAME chain (c-ares' rule)
};

struct ResolveResult {
  ResolveStatus status = ResolveStatus::kServFail;
  std::vector<ResolvedAddress> addresses;  // non-empty iff kOk, in upstream's order
  std::string error;                       // what went wrong, for netgate's log
};

struct UpstreamOptions {
  // "IP" or "IP:PORT", IPv6 as "IP" or "[IP]:PORT". Empty: the nameservers of
  // `resolv_conf` (c-ares uses 127.0.0.1 when it names none, as glibc does).
  std::vector<std::string> servers;
  std::string resolv_conf = "/etc/resolv.conf";  // read only when `servers` is empty
  absl::Duration timeout = absl::Seconds(2);     // first attempt; doubles each round
  int tries = 2;                                 // rounds over the server list
  // Queries in flight at once. A hostile app can send DNS queries as fast as it likes,
  // and each one becomes an upstream query with its memory, a socket slot and a timer
  // here: the bound keeps a flood from growing netgate without limit or turning it
  // into an amplifier towards upstream. Beyond it, Resolve fails at once (SERVFAIL).
  size_t max_in_flight = 256;
};

class UpstreamResolver {
 public:
  // Called exactly once per Resolve: from ProcessPollFds, from the destructor (pending
  // queries end with kServFail), or from Resolve itself when the query cannot start
  // (bad name, too many in flight, no server reachable). It must not destroy the
  // resolver; it may call Resolve (from the destructor, that fails at once).
  using Callback = absl::AnyInvocable<void(ResolveResult)>;

  // At most as many addresses are kept from one answer.
  static constexpr size_t kMaxAddresses = 64;

  // InvalidArgument for a malformed server, a timeout outside 1 ms .. 60 s, tries
  // outside 1 .. 16 or max_in_flight 0; Internal when c-ares refuses to start;
  // FailedPrecondition if it ends up with no server at all.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<UpstreamResolver>> Create(
      const UpstreamOptions& options);
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<UpstreamResolver>> Create(
      const std::vector<std::string>& servers, absl::Duration timeout, int tries);
  ~UpstreamResolver();
  UpstreamResolver(const UpstreamResolver&) = delete;
  UpstreamResolver& operator=(const UpstreamResolver&) = delete;

  // Asks upstream for `name`'s A or AAAA records. `name`: labels of 1..63 letters,
  // digits, '-' or '_', at most 253 characters, one trailing dot allowed; anything else
  // (escapes, spaces, NULs, empty labels) is kBadName without a query, so that no
  // byte of it is reinterpreted by c-ares' own escape syntax.
  void Resolve(absl::string_view name, AddressFamily family, Callback done);

  // Poll loop integration. Before poll(): AppendPollFds adds this resolver's sockets
  // with the events it waits for, and NextTimeout says when it next needs to run (nullopt:
  // nothing pending; round up to whole ms for poll, see PollTimeoutMs). After poll(),
  // also when it timed out: ProcessPollFds with the same vector (entries that are not
  // ours are ignored); it reads and writes ready sockets, handles timeouts and runs
  // callbacks.
  void AppendPollFds(std::vector<pollfd>& fds) const;
  void ProcessPollFds(absl::Span<const pollfd> fds);
  [[nodiscard]] std::optional<absl::Duration> NextTimeout() const;
  // poll()'s timeout argument for `t`: -1 for nullopt, else milliseconds rounded up.
  [[nodiscard]] static int PollTimeoutMs(std::optional<absl::Duration> t);

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
  bool destroying_ = false;  // callbacks run from ~UpstreamResolver start nothing new
  const size_t max_in_flight_;
  size_t in_flight_ = 0;
  std::vector<std::string> servers_;
  absl::flat_hash_map<int, Interest> sockets_;  // c-ares' open sockets and their interest
};

}  // namespace usentry::sentry::net::netgate

#endif  // USENTRY_SENTRY_NET_NETGATE_UPSTREAM_RESOLVER_H_
