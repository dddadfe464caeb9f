// netgate: the only process of a sandbox with host network access. The CLI forks it in
// the caller's network namespace; the sentry (which has no network of its own) sends it
// requests over a SOCK_SEQPACKET socket (protocol.h). For each request netgate applies
// the run's net policy itself, with name->IP bindings of its own (only names it
// resolved), so a compromised sentry still reaches only what the policy names:
//   resolve  an allowed name upstream (Resolver); drops answers in always-blocked ranges
//            (no DNS rebinding), binds the rest to the name, replies with them.
//   connect  dials an allowed destination (TCP: non-blocking connect with a deadline,
//            then checks the peer address again), donates the connected socket and keeps
//            a copy to read its byte counts at close. UDP: dials a connected UDP socket
//            and relays datagrams over an AF_UNIX socketpair whose other end it donates,
//            so the sentry never holds a socket it could point at another address.
//   close    logs the connection's bytes (TCP_INFO) and lets it go.
// Every decision is a line in the --net-log stream (AuditLog format, "by":"netgate").
// Single-threaded: one poll loop over the sentry socket, the resolver, pending dials
// and UDP relays.
#ifndef USENTRY_SENTRY_NET_NETGATE_SERVER_H_
#define USENTRY_SENTRY_NET_NETGATE_SERVER_H_

#include <poll.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/ip_address.h"
#include "base/unique_fd.h"
#include "sentry/audit/audit_log.h"
#include "sentry/net/netgate/protocol.h"
#include "sentry/net/netgate/resolver.h"
#include "sentry/policy/net_rules.h"

namespace usentry::netgate {

struct ServerOptions {
  policy::NetPolicy net;
  // The --net-log stream (never null; a disabled log when there is none).
  std::shared_ptr<const audit::AuditLog> log = std::make_shared<audit::AuditLog>(-1, "", false);
  absl::Duration connect_timeout = absl::Seconds(30);
  // Bounds against a sentry (or app) that opens connections without end: each costs
  // netgate an FD.
  size_t max_connections = 1024;
  size_t max_pending = 256;
  // Where host-port connects go: the host's loopback.
  IpAddress host_loopback = IpAddress::V4(0x7f000001);
};

class Server {
 public:
  Server(ServerOptions options, std::unique_ptr<Resolver> resolver, UniqueFd sentry);
  // Logs a close record for every connection still open ("run ended").
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves until the sentry closes its end (OK) or its socket fails (error).
  absl::Status Run();
  // One poll round of at most `max_wait`; sets *finished when the sentry is gone.
  absl::Status Step(absl::Duration max_wait, bool* finished);

 private:
  struct Dial {
    Request req;
    UniqueFd fd;
    IpAddress ip;  // unmapped destination actually dialed
    std::string name;
    absl::Time deadline;
  };
  struct Conn {
    policy::NetProto proto;
    IpAddress ip;
    uint16_t port = 0;
    std::string name;
    UniqueFd fd;     // TCP: our copy of the donated socket; UDP: the real socket
    UniqueFd relay;  // UDP: our end of the socketpair the sentry holds the other end of
    uint64_t relayed_out = 0, relayed_in = 0;  // UDP payload bytes
    absl::Time start;
  };

  void HandleRequest(const Request& req);
  void Resolve(const Request& req);
  void Connect(const Request& req);
  void Close(uint64_t conn, uint64_t sentry_in, uint64_t sentry_out, const char* why);
  // Completes a TCP dial whose socket became writable (or timed out).
  void FinishDial(Dial& d, int err);
  void Donate(const Request& req, Conn conn, uint16_t local_port);
  void ReplyConnectError(const Request& req, int err, const std::string& reason,
                         const std::string& name, const IpAddress& ip, bool denied);
  void Relay(Conn& c, bool from_sentry);
  void Send(const std::string& bytes, int fd = -1);

  ServerOptions opts_;
  std::unique_ptr<Resolver> resolver_;
  UniqueFd sentry_;
  bool sentry_failed_ = false;
  policy::NameBindings bindings_;
  std::vector<Dial> dials_;
  std::map<uint64_t, Conn> conns_;
  uint64_t next_conn_ = 1;
};

}  // namespace usentry::netgate

#endif  // USENTRY_SENTRY_NET_NETGATE_SERVER_H_
