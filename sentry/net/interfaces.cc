// The sandbox's interfaces, addresses and routes, built from SandboxNetwork.
#include "sentry/net/interfaces.h"

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <net/if_arp.h>

#include <cstring>

namespace usentry::sentry::net {
namespace {

// <linux/if.h> clashes with <net/if.h>; these two are all we need from it.
constexpr uint32_t kIffLowerUp = 1u << 16;
constexpr uint8_t kIfOperUnknown = 0;
constexpr uint8_t kIfOperUp = 6;
// Linux's metric of the IPv6 routes the kernel adds itself.
constexpr uint32_t kIp6KernelMetric = 256;

IpAddress V6(std::initializer_list<uint8_t> prefix) {
  in6_addr a{};
  size_t i = 0;
  for (uint8_t b : prefix) a.s6_addr[i++] = b;
  return IpAddress::FromIn6(a);
}

IpAddress V6Loopback() {
  in6_addr a{};
  a.s6_addr[15] = 1;
  return IpAddress::FromIn6(a);
}

}  // namespace

IpAddress InterfaceAddress::Netmask() const {
  uint32_t mask = prefix_len == 0 ? 0 : ~uint32_t{0} << (32 - prefix_len);
  return IpAddress::V4(mask);
}

IpAddress LinkLocalFromMac(const HwAddr& mac) {
  in6_addr a{};
  a.s6_addr[0] = 0xfe;
  a.s6_addr[1] = 0x80;
  a.s6_addr[8] = mac[0] ^ 0x02;  // the universal/local bit, inverted in modified EUI-64
  a.s6_addr[9] = mac[1];
  a.s6_addr[10] = mac[2];
  a.s6_addr[11] = 0xff;
  a.s6_addr[12] = 0xfe;
  a.s6_addr[13] = mac[3];
  a.s6_addr[14] = mac[4];
  a.s6_addr[15] = mac[5];
  return IpAddress::FromIn6(a);
}

Interfaces::Interfaces(const SandboxNetwork& network) {
  const IpAddress lo4 = IpAddress::V4(0x7f000001);
  const IpAddress lo6 = V6Loopback();

  Link lo;
  lo.index = kLoopbackIndex;
  lo.name = "lo";
  lo.flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING | kIffLowerUp;
  lo.type = ARPHRD_LOOPBACK;
  lo.mtu = kLoopbackMtu;
  lo.operstate = kIfOperUnknown;
  links_.push_back(lo);

  std::optional<Link> eth;
  IpAddress eth4 = SandboxAddress();
  IpAddress eth6;
  if (network.egress) {
    eth.emplace();
    eth->index = kEthIndex;
    eth->name = "eth0";
    eth->flags = IFF_UP | IFF_BROADCAST | IFF_RUNNING | IFF_MULTICAST | kIffLowerUp;
    eth->type = ARPHRD_ETHER;
    eth->mtu = kEthMtu;
    eth->min_mtu = 68;  // ETH_MIN_MTU
    eth->max_mtu = 65535;
    memcpy(eth->hwaddr.data(), kSandboxMac, sizeof(kSandboxMac));
    eth->broadcast.fill(0xff);
    eth->operstate = kIfOperUp;
    links_.push_back(*eth);
    eth6 = LinkLocalFromMac(eth->hwaddr);
  }

  // --- addresses: IPv4 of every interface, then IPv6 ---
  InterfaceAddress a;
  a.ifindex = kLoopbackIndex;
  a.address = lo4;
  a.prefix_len = 8;
  a.scope = RT_SCOPE_HOST;
  a.flags = IFA_F_PERMANENT;
  a.label = "lo";
  addresses_.push_back(a);
  Cidr eth_net(eth4, kSandboxPrefixLen);
  IpAddress eth_brd = IpAddress::V4(eth4.v4_host_order() | ((1u << (32 - kSandboxPrefixLen)) - 1));
  if (eth) {
    a = {};
    a.ifindex = kEthIndex;
    a.address = eth4;
    a.prefix_len = kSandboxPrefixLen;
    a.broadcast = eth_brd;
    a.scope = RT_SCOPE_UNIVERSE;
    a.flags = IFA_F_PERMANENT;
    a.label = "eth0";
    addresses_.push_back(a);
  }
  a = {};
  a.ifindex = kLoopbackIndex;
  a.address = lo6;
  a.prefix_len = 128;
  a.scope = RT_SCOPE_HOST;
  a.flags = IFA_F_PERMANENT;
  addresses_.push_back(a);
  if (eth) {
    a = {};
    a.ifindex = kEthIndex;
    a.address = eth6;
    a.prefix_len = 64;
    a.scope = RT_SCOPE_LINK;
    a.flags = IFA_F_PERMANENT;
    addresses_.push_back(a);
  }

  // --- routes, as the kernel adds them for these addresses ---
  auto add = [&](Cidr dst, uint8_t table, uint8_t type, uint8_t proto, uint8_t scope, int oif,
                 std::optional<IpAddress> gw, std::optional<IpAddress> src, uint32_t prio) {
    routes_.push_back(Route{dst, table, type, proto, scope, oif, gw, src, prio});
  };
  if (eth) {
    add(Cidr(IpAddress(), 0), RT_TABLE_MAIN, RTN_UNICAST, RTPROT_BOOT, RT_SCOPE_UNIVERSE, kEthIndex,
        GatewayAddress(), std::nullopt, 0);
    add(eth_net, RT_TABLE_MAIN, RTN_UNICAST, RTPROT_KERNEL, RT_SCOPE_LINK, kEthIndex, std::nullopt,
        eth4, 0);
    add(Cidr(eth4, 32), RT_TABLE_LOCAL, RTN_LOCAL, RTPROT_KERNEL, RT_SCOPE_HOST, kEthIndex,
        std::nullopt, eth4, 0);
    add(Cidr(eth_brd, 32), RT_TABLE_LOCAL, RTN_BROADCAST, RTPROT_KERNEL, RT_SCOPE_LINK, kEthIndex,
        std::nullopt, eth4, 0);
  }
  add(Cidr(lo4, 8), RT_TABLE_LOCAL, RTN_LOCAL, RTPROT_KERNEL, RT_SCOPE_HOST, kLoopbackIndex,
      std::nullopt, lo4, 0);
  add(Cidr(lo4, 32), RT_TABLE_LOCAL, RTN_LOCAL, RTPROT_KERNEL, RT_SCOPE_HOST, kLoopbackIndex,
      std::nullopt, lo4, 0);
  add(Cidr(IpAddress::V4(0x7fffffff), 32), RT_TABLE_LOCAL, RTN_BROADCAST, RTPROT_KERNEL,
      RT_SCOPE_LINK, kLoopbackIndex, std::nullopt, lo4, 0);

  add(Cidr(lo6, 128), RT_TABLE_MAIN, RTN_UNICAST, RTPROT_KERNEL, RT_SCOPE_UNIVERSE, kLoopbackIndex,
      std::nullopt, std::nullopt, kIp6KernelMetric);
  if (eth) {
    add(Cidr(V6({0xfe, 0x80}), 64), RT_TABLE_MAIN, RTN_UNICAST, RTPROT_KERNEL, RT_SCOPE_UNIVERSE,
        kEthIndex, std::nullopt, std::nullopt, kIp6KernelMetric);
  }
  add(Cidr(lo6, 128), RT_TABLE_LOCAL, RTN_LOCAL, RTPROT_KERNEL, RT_SCOPE_UNIVERSE, kLoopbackIndex,
      std::nullopt, std::nullopt, 0);
  if (eth) {
    add(Cidr(eth6, 128), RT_TABLE_LOCAL, RTN_LOCAL, RTPROT_KERNEL, RT_SCOPE_UNIVERSE, kEthIndex,
        std::nullopt, std::nullopt, 0);
    add(Cidr(V6({0xff}), 8), RT_TABLE_LOCAL, RTN_MULTICAST, RTPROT_KERNEL, RT_SCOPE_UNIVERSE,
        kEthIndex, std::nullopt, std::nullopt, kIp6KernelMetric);
  }
}

const Link* Interfaces::FindLink(int index) const {
  for (const Link& l : links_) {
    if (l.index == index) return &l;
  }
  return nullptr;
}

const Link* Interfaces::FindLink(std::string_view name) const {
  for (const Link& l : links_) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

}  // namespace usentry::sentry::net
