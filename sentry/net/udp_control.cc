// UdpSocket's IP-level control messages: sendmsg's IP_TTL/IP_TOS/IP_PKTINFO and
// IPV6_HOPLIMIT/IPV6_TCLASS/IPV6_PKTINFO (checked as Linux's ip_cmsg_send and
// ip6_datagram_send_ctl check them), and what recvmsg reports with IP_PKTINFO,
// IP_RECVTTL, IP_RECVTOS, IPV6_RECVPKTINFO, IPV6_RECVHOPLIMIT, IPV6_RECVTCLASS, in
// Linux's order. Source addresses in IP_PKTINFO/IPV6_PKTINFO are accepted, not applied.
#include <netinet/in.h>

#include <cstring>

#include "sentry/net/udp_socket.h"

namespace usentry::sentry::net {
namespace {

constexpr int kDefaultHops = 64;
constexpr size_t kMaxIpOptions = 40;
// linux/in6.h values glibc's headers lack.
constexpr int kIpv6Flowinfo = 11;

bool IntOf(const ControlMessage& c, int* v) {
  if (c.data.size() != sizeof(int)) return false;
  memcpy(v, c.data.data(), sizeof(int));
  return true;
}

template <typename T>
ControlMessage Cmsg(int level, int type, const T& v) {
  return ControlMessage{level, type, std::string(reinterpret_cast<const char*>(&v), sizeof(v))};
}

}  // namespace

SysResult<PacketInfo> UdpSocket::OutgoingPacket(const std::vector<ControlMessage>& control,
                                                const IpAddress& target) const {
  PacketInfo p;
  p.v6 = !target.is_v4();
  p.dst = target;
  if (!p.v6) {
    p.hop = ip_.ttl == -1 ? kDefaultHops : ip_.ttl;
    p.tos = ip_.tos;
  } else {
    p.hop = ip_.unicast_hops == -1 ? kDefaultHops : ip_.unicast_hops;
    p.tos = ip_.tclass;
  }
  for (const ControlMessage& c : control) {
    int v = 0;
    if (!p.v6) {
      // An IPv4 datagram of an AF_INET6 socket takes IPV6_PKTINFO (a mapped source) too.
      if (family_ == AF_INET6 && c.level == SOL_IPV6 && c.type == IPV6_PKTINFO) {
        if (c.data.size() != sizeof(in6_pktinfo)) return Errno{EINVAL};
        continue;
      }
      if (c.level != SOL_IP) continue;
      switch (c.type) {
        case IP_PKTINFO:
          if (c.data.size() != sizeof(in_pktinfo)) return Errno{EINVAL};
          break;
        case IP_TTL:
          if (!IntOf(c, &v) || v < 1 || v > 255) return Errno{EINVAL};
          p.hop = v;
          break;
        case IP_TOS:
          if (c.data.size() == 1) {
            v = static_cast<unsigned char>(c.data[0]);
          } else if (!IntOf(c, &v)) {
            return Errno{EINVAL};
          }
          if (v < 0 || v > 255) return Errno{EINVAL};
          p.tos = v;
          break;
        case IP_RETOPTS:
          if (c.data.size() > kMaxIpOptions) return Errno{EINVAL};
          break;
        default:
          return Errno{EINVAL};
      }
      continue;
    }
    if (c.level != SOL_IPV6) continue;
    switch (c.type) {
      case IPV6_PKTINFO:
      case IPV6_2292PKTINFO:
        if (c.data.size() != sizeof(in6_pktinfo)) return Errno{EINVAL};
        break;
      case IPV6_HOPLIMIT:
      case IPV6_2292HOPLIMIT:
        if (!IntOf(c, &v) || v < -1 || v > 255) return Errno{EINVAL};
        if (v != -1) p.hop = v;
        break;
      case IPV6_TCLASS:
        if (!IntOf(c, &v) || v < -1 || v > 255) return Errno{EINVAL};
        if (v != -1) p.tos = v;
        break;
      case IPV6_DONTFRAG:
        if (!IntOf(c, &v) || v < -1 || v > 1) return Errno{EINVAL};
        break;
      case kIpv6Flowinfo:
        if (c.data.size() != sizeof(uint32_t)) return Errno{EINVAL};
        break;
      default:
        return Errno{EINVAL};
    }
  }
  return p;
}

std::vector<ControlMessage> UdpSocket::ReceiveControl(const PacketInfo& info) const {
  std::vector<ControlMessage> out;
  if (!info.v6) {
    IpAddress dst = info.dst.Unmapped().is_v4() ? info.dst.Unmapped() : IpAddress();
    if (ip_.flag(SOL_IP, IP_PKTINFO)) {
      in_pktinfo pi{};
      pi.ipi_ifindex = info.ifindex;
      pi.ipi_spec_dst = dst.ToIn();
      pi.ipi_addr = dst.ToIn();
      out.push_back(Cmsg(SOL_IP, IP_PKTINFO, pi));
    }
    if (ip_.flag(SOL_IP, IP_RECVTTL)) out.push_back(Cmsg(SOL_IP, IP_TTL, info.hop));
    if (ip_.flag(SOL_IP, IP_RECVTOS)) {
      out.push_back(Cmsg(SOL_IP, IP_TOS, static_cast<uint8_t>(info.tos)));
    }
    // An AF_INET6 socket also reports IPV6_PKTINFO for IPv4 traffic, v4-mapped.
    if (family_ == AF_INET6 && ip_.flag(SOL_IPV6, IPV6_RECVPKTINFO)) {
      in6_pktinfo pi{};
      pi.ipi6_addr = dst.ToIn6Mapped();
      pi.ipi6_ifindex = info.ifindex;
      out.push_back(Cmsg(SOL_IPV6, IPV6_PKTINFO, pi));
    }
    return out;
  }
  in6_pktinfo pi{};
  pi.ipi6_addr = info.dst.ToIn6Mapped();
  pi.ipi6_ifindex = info.ifindex;
  if (ip_.flag(SOL_IPV6, IPV6_RECVPKTINFO)) out.push_back(Cmsg(SOL_IPV6, IPV6_PKTINFO, pi));
  if (ip_.flag(SOL_IPV6, IPV6_RECVHOPLIMIT)) out.push_back(Cmsg(SOL_IPV6, IPV6_HOPLIMIT, info.hop));
  if (ip_.flag(SOL_IPV6, IPV6_RECVTCLASS)) out.push_back(Cmsg(SOL_IPV6, IPV6_TCLASS, info.tos));
  if (ip_.flag(SOL_IPV6, IPV6_2292PKTINFO)) out.push_back(Cmsg(SOL_IPV6, IPV6_2292PKTINFO, pi));
  if (ip_.flag(SOL_IPV6, IPV6_2292HOPLIMIT)) {
    out.push_back(Cmsg(SOL_IPV6, IPV6_2292HOPLIMIT, info.hop));
  }
  return out;
}

}  // namespace usentry::sentry::net
