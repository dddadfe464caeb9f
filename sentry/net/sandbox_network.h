// SandboxNetwork: the network as the app sees it. Every sandbox has a loopback (lo:
// 127.0.0.1/8, ::1) that exists only inside the sentry, and a resolver at 127.0.0.11:53
// served by the sentry itself (/etc/resolv.conf names it). When the policy allows any
// egress, the sandbox also has eth0 with kSandboxAddress/24 and a default route via
// kGatewayAddress, which also stands for the host (host.usentry.internal, reached only
// on the ports --allow-host-port names). Nothing here is a host address: connects
// beyond these go through Egress (egress.h) and netgate.
#ifndef USENTRY_SENTRY_NET_SANDBOX_NETWORK_H_
#define USENTRY_SENTRY_NET_SANDBOX_NETWORK_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/ip_address.h"

namespace usentry::sentry::net {

inline IpAddress ResolverAddress() { return IpAddress::V4(0x7f00000b); }  // 127.0.0.11
inline constexpr uint16_t kDnsPort = 53;
inline IpAddress SandboxAddress() { return IpAddress::V4(0x0a00020f); }  // 10.0.2.15
inline IpAddress GatewayAddress() { return IpAddress::V4(0x0a000202); }  // 10.0.2.2
inline constexpr int kSandboxPrefixLen = 24;
inline constexpr uint8_t kSandboxMac[6] = {0x02, 0x00, 0x0a, 0x00, 0x02, 0x0f};
inline constexpr int kEthMtu = 1500;
inline constexpr int kLoopbackMtu = 65536;
// The name that resolves to GatewayAddress() when host ports are allowed.
inline constexpr char kHostAlias[] = "host.usentry.internal";

struct SandboxNetwork {
  // eth0 exists: the policy allows some destination outside the sandbox.
  bool egress = false;

  // The sandbox's own addresses, reached without leaving the sentry: loopback (either
  // family, also v4-mapped) and, with egress, eth0's address.
  bool IsLocal(const IpAddress& ip) const {
    IpAddress u = ip.Unmapped();
    return u.IsLoopback() || (egress && u == SandboxAddress());
  }
};

// The files the sandbox brings for its network, {path, content}: /etc/resolv.conf
// naming the sandbox resolver, /etc/hosts (localhost, the hostname, and kHostAlias when
// `host_alias`), /etc/hostname. They replace the host's, which would name the host's
// resolvers and hosts.
std::vector<std::pair<std::string, std::string>> SandboxNetworkFiles(const std::string& hostname,
                                                                     bool host_alias);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_SANDBOX_NETWORK_H_
