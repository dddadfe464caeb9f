// InetStack: the sandbox's internet stack, one per kernel (Kernel::inet_stack()). It
// holds what AF_INET/AF_INET6 sockets share: the TCP and UDP port tables, the routing
// decision "is this destination inside the sandbox" (SandboxNetwork::IsLocal), the
// lookups that deliver local connections and datagrams, and the way out: the Egress and
// DnsService the run installs (Configure). Without them a destination outside the
// sandbox is ENETUNREACH and DNS datagrams are dropped.
// All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_NET_INET_STACK_H_
#define USENTRY_SENTRY_NET_INET_STACK_H_

#include <cstdint>
#include <memory>

#include "base/ip_address.h"
#include "sentry/net/egress.h"
#include "sentry/net/port_table.h"
#include "sentry/net/sandbox_network.h"

namespace usentry::sentry {
class Kernel;
namespace fsimpl {
class HostPoller;
}
}  // namespace usentry::sentry

namespace usentry::sentry::net {

class TcpSocket;
class UdpSocket;

class InetStack {
 public:
  // `kernel` outlives the stack (it owns it).
  explicit InetStack(Kernel* kernel);
  ~InetStack();
  InetStack(const InetStack&) = delete;
  InetStack& operator=(const InetStack&) = delete;

  // Installs the way out (RunSentry; unit tests install fakes). Either may be null.
  void Configure(std::unique_ptr<Egress> egress, std::unique_ptr<DnsService> dns);
  Egress* egress() const { return egress_.get(); }
  DnsService* dns() const { return dns_.get(); }

  const SandboxNetwork& network() const;
  // The sandbox's own addresses: loopback (also v4-mapped) and eth0's with egress.
  bool IsLocal(const IpAddress& ip) const { return network().IsLocal(ip); }
  // The source address for a destination inside the sandbox (Linux's local routes:
  // 127.0.0.1 for all of 127/8, ::1, eth0's own address), unmapped.
  IpAddress LocalSourceFor(const IpAddress& dst_unmapped) const;
  // The source address for any destination: LocalSourceFor inside the sandbox, eth0's
  // address outside (the loopback when there is no eth0: only DNS leaves then).
  IpAddress SourceFor(const IpAddress& dst_unmapped) const;

  PortTable& tcp_ports() { return tcp_ports_; }
  PortTable& udp_ports() { return udp_ports_; }
  // UDP-Lite has its own ports (Linux's udplite_table).
  PortTable& udplite_ports() { return udplite_ports_; }

  // The listener a connection to `dst` (unmapped) : `port` reaches: the most specific
  // binding, IPv4 sockets before dual-stack ones for IPv4; among SO_REUSEPORT peers one
  // chosen by `flow_hash`. Null when nothing listens.
  std::shared_ptr<TcpSocket> FindListener(const IpAddress& dst, uint16_t port, uint32_t flow_hash);
  // The socket a datagram from `src` (unmapped) : `sport` to `dst` : `dport` is
  // delivered to, Linux's scoring (connected sockets only for their peer). Null: none.
  std::shared_ptr<UdpSocket> FindUdpReceiver(const IpAddress& dst, uint16_t dport,
                                             const IpAddress& src, uint16_t sport,
                                             bool udplite = false);

  // The kernel's host poller, for donated host sockets (null if it cannot run).
  std::shared_ptr<fsimpl::HostPoller> poller();
  Kernel& kernel() const { return *kernel_; }

 private:
  Kernel* kernel_;
  PortTable tcp_ports_{/*tcp=*/true};
  PortTable udp_ports_{/*tcp=*/false};
  PortTable udplite_ports_{/*tcp=*/false};
  std::unique_ptr<Egress> egress_;
  std::unique_ptr<DnsService> dns_;
};

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_INET_STACK_H_
