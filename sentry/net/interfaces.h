// Interfaces: the sandbox's network interfaces as data — lo always, eth0 when the run
// allows egress — with their addresses and routes. The one description that NETLINK_ROUTE
// (netlink_route.cc), the interface ioctls (interface_ioctl.cc) and /proc/net
// (fsimpl/procfs_net.cc) format; none of them invents an interface or address of its own.
// Nothing here is a host interface: the host's are never shown to the app.
#ifndef USENTRY_SENTRY_NET_INTERFACES_H_
#define USENTRY_SENTRY_NET_INTERFACES_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip_address.h"
#include "sentry/net/sandbox_network.h"

namespace usentry::sentry::net {

inline constexpr int kLoopbackIndex = 1;
inline constexpr int kEthIndex = 2;
// Linux's default transmit queue length (both of ours report it, as lo and veth do).
inline constexpr int kTxQueueLen = 1000;

using HwAddr = std::array<uint8_t, 6>;

struct Link {
  int index = 0;
  std::string name;
  // IFF_* as netlink's ifi_flags shows them (with IFF_LOWER_UP, as dev_get_flags does);
  // SIOCGIFFLAGS returns the low 16 bits.
  uint32_t flags = 0;
  uint16_t type = 0;  // ARPHRD_LOOPBACK / ARPHRD_ETHER
  int mtu = 0;
  int min_mtu = 0, max_mtu = 0;
  int txqlen = kTxQueueLen;
  HwAddr hwaddr{};
  HwAddr broadcast{};
  uint8_t operstate = 0;  // IF_OPER_UNKNOWN (lo, as Linux's loopback) / IF_OPER_UP
  std::string qdisc = "noqueue";
};

struct InterfaceAddress {
  int ifindex = 0;
  IpAddress address;
  int prefix_len = 0;
  std::optional<IpAddress> broadcast;  // IPv4 on eth0 only (lo has none, as on Linux)
  uint8_t scope = 0;                   // RT_SCOPE_HOST / RT_SCOPE_LINK / RT_SCOPE_UNIVERSE
  uint32_t flags = 0;                  // IFA_F_*
  std::string label;                   // IPv4: the interface name (IFA_LABEL)

  IpAddress Netmask() const;  // IPv4: the prefix as a mask
};

struct Route {
  Cidr dst;
  uint8_t table = 0;     // RT_TABLE_MAIN / RT_TABLE_LOCAL
  uint8_t type = 0;      // RTN_UNICAST / RTN_LOCAL / RTN_BROADCAST / RTN_MULTICAST
  uint8_t protocol = 0;  // RTPROT_KERNEL (connected and local routes) / RTPROT_BOOT
  uint8_t scope = 0;     // RT_SCOPE_*; IPv6 routes are always RT_SCOPE_UNIVERSE
  int oif = 0;
  std::optional<IpAddress> gateway;
  std::optional<IpAddress> prefsrc;
  uint32_t priority = 0;  // the metric (IPv6 kernel routes: 256)

  bool is_v6() const { return dst.base().is_v6(); }
};

class Interfaces {
 public:
  explicit Interfaces(const SandboxNetwork& network);

  // In index order.
  const std::vector<Link>& links() const { return links_; }
  // Null when there is no such interface.
  const Link* FindLink(int index) const;
  const Link* FindLink(std::string_view name) const;
  // IPv4 first, then IPv6; each in interface order (the order Linux's dumps list them).
  const std::vector<InterfaceAddress>& addresses() const { return addresses_; }
  // IPv4 then IPv6; within a family the main table, then the local one, each by
  // destination (a fib dump's order).
  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Link> links_;
  std::vector<InterfaceAddress> addresses_;
  std::vector<Route> routes_;
};

// eth0's IPv6 link-local address: fe80::/64 with the modified EUI-64 of `mac` (RFC 4291
// appendix A: ff:fe in the middle, the universal/local bit flipped).
IpAddress LinkLocalFromMac(const HwAddr& mac);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_INTERFACES_H_
