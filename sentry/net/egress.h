// Egress and DnsService: how the sentry's inet sockets reach past the sandbox. The
// netstack (inet_*.cc) never decides policy: it hands every destination that is not the
// sandbox's own (SandboxNetwork::IsLocal) to Egress, and every DNS datagram to
// DnsService. The implementations (egress.cc, dns_service.cc) check the run's net
// policy, keep the name->IP bindings, write the audit records and talk to netgate.
// Unit tests install fakes (InetStack::Configure).
//
// Threading: all calls happen under Kernel::mu. Callbacks run under Kernel::mu too,
// from another thread (netgate's reply reader), and never from within the call that
// registered them, except where stated.
#ifndef USENTRY_SENTRY_NET_EGRESS_H_
#define USENTRY_SENTRY_NET_EGRESS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "base/ip_address.h"
#include "base/unique_fd.h"
#include "sentry/kernel/sys_result.h"

namespace usentry::sentry {
class Task;
}

namespace usentry::sentry::net {

enum class Transport : uint8_t { kTcp, kUdp };

struct Endpoint {
  IpAddress ip;  // as the app named it (an AF_INET6 socket may give a v4-mapped address)
  uint16_t port = 0;
};

// A connected host socket that netgate dialed and donated: now the sentry's. I/O on it is
// the app's traffic; the sentry never connects or binds it again.
struct EgressConnection {
  UniqueFd fd;      // connected, O_NONBLOCK, O_CLOEXEC
  uint64_t id = 0;  // netgate's id of the connection, for Closed()
  Endpoint local;   // what getsockname shows: SandboxAddress() and the host socket's port
};

class Egress {
 public:
  using ConnectDone = std::function<void(SysResult<EgressConnection>)>;
  virtual ~Egress() = default;

  // A TCP connect, or a UDP socket's first datagram to `dst`. Returns the errno the app
  // sees when the policy refuses (already audited): ENETUNREACH when the sandbox has no
  // egress at all, EACCES when the policy does not allow this destination. On SysOk,
  // `done` is called exactly once, later, with the connection or the dial's errno
  // (ECONNREFUSED, ETIMEDOUT, EHOSTUNREACH... as the real network answered).
  virtual SysStatus Connect(Task& task, Transport t, const Endpoint& dst, ConnectDone done) = 0;
  // The app's socket let go of a connection Connect gave (closed it, or the dial
  // finished after the socket was gone): the bytes moved, for the audit record and
  // netgate's log.
  virtual void Closed(uint64_t id, Transport t, const Endpoint& dst, uint64_t bytes_in,
                      uint64_t bytes_out) = 0;
};

// The sandbox resolver: a DNS query the app sent over UDP to ResolverAddress():53, or to
// port 53 of any address outside the sandbox (answered here, never forwarded as is).
class DnsService {
 public:
  using Reply = std::function<void(std::string response)>;
  virtual ~DnsService() = default;
  // `query` is the datagram's payload. `reply` is called at most once with the response
  // datagram: possibly before Query returns (answered locally), else later. No call
  // means no answer (a malformed datagram without a readable header).
  virtual void Query(Task& task, std::string query, Reply reply) = 0;
};

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_EGRESS_H_
