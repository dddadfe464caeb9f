// PortTable: which inet sockets hold which local ports, for one transport (TCP and UDP
// each have their own), with Linux's bind-conflict rules: wildcard versus specific
// addresses, dual-stack `::` covering IPv4 unless IPV6_V6ONLY, SO_REUSEADDR (TCP: not
// against a listener), SO_REUSEPORT (same owner uid), and ephemeral ports from
// ip_local_port_range. Sockets are asked for their binding when a check runs (options
// may change after bind, as on Linux). All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_NET_PORT_TABLE_H_
#define USENTRY_SENTRY_NET_PORT_TABLE_H_

#include <cstdint>
#include <map>
#include <vector>

#include "base/ip_address.h"
#include "sentry/kernel/sys_result.h"

namespace usentry::sentry::net {

inline constexpr uint16_t kEphemeralLow = 32768;    // net.ipv4.ip_local_port_range
inline constexpr uint16_t kEphemeralHigh = 60999;   // (inclusive)
inline constexpr uint16_t kPrivilegedPorts = 1024;  // PROT_SOCK

// A socket's binding as the conflict rules see it (Linux's inet_rcv_saddr_equal).
struct BindingInfo {
  bool v6_socket = false;  // AF_INET6
  // The IPv4 receive address: an AF_INET socket's address; for AF_INET6 sockets the
  // IPv4 part of a v4-mapped address, 0.0.0.0 for `::`, and Linux's placeholder
  // 127.0.0.6 for any other IPv6 address (which is why binding 0.0.0.0 after [::1]
  // conflicts on Linux while the reverse order does not).
  IpAddress v4;
  IpAddress v6;  // AF_INET6 sockets only
  bool v6only = false;
  bool reuseaddr = false;
  bool reuseport = false;
  uint32_t uid = 0;
  bool listening = false;
};

class PortUser {
 public:
  virtual BindingInfo binding() const = 0;

 protected:
  ~PortUser() = default;
};

class PortTable {
 public:
  // `tcp` selects the TCP flavour of SO_REUSEADDR.
  explicit PortTable(bool tcp) : tcp_(tcp) {}

  // Binds `u`, whose binding will be `want`, to `port`, or to a free ephemeral port when
  // 0 (EADDRINUSE when none is left; `exhausted_errno` lets connect say EADDRNOTAVAIL
  // instead). EADDRINUSE on a conflict. Returns the port.
  SysResult<uint16_t> Bind(PortUser* u, const BindingInfo& want, uint16_t port,
                           int exhausted_errno = EADDRINUSE);
  // Adds `u` to `port` without a check: an accepted connection shares its listener's port.
  void Share(PortUser* u, uint16_t port);
  // Whether binding `want` conflicts with a user of `port` other than `u`. listen(2)
  // checks again: a listener shares its port with fewer SO_REUSEADDR sockets.
  bool ConflictsOnPort(const PortUser* u, const BindingInfo& want, uint16_t port) const;
  void Unbind(PortUser* u, uint16_t port);
  // The users of `port` (lookup of listeners and datagram receivers).
  const std::vector<PortUser*>& Users(uint16_t port) const;

  // Exposed for unit tests: whether a new binding `a` conflicts with existing `b`.
  bool Conflict(const BindingInfo& a, const BindingInfo& b) const;

 private:
  uint16_t NextCandidate();

  bool tcp_;
  std::map<uint16_t, std::vector<PortUser*>> users_;
  uint32_t seed_;
  bool seeded_ = false;
};

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_PORT_TABLE_H_
