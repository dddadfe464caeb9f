// InetSocket options: SOL_IP and SOL_IPV6 levels, and the SOL_SOCKET options only
// internet sockets have. Values read back as Linux reports them (defaults from Linux's
// sysctls: ttl and hop limit 64, PMTU discovery "want", auto flow labels on).
#include <net/if.h>
#include <netinet/in.h>

#include <cstring>

#include "sentry/kernel/task.h"
#include "sentry/net/inet_socket.h"

namespace usentry::sentry::net {
namespace {

constexpr int kEcnMask = 3;        // INET_ECN_MASK: TCP keeps its own ECN bits
constexpr int kMaxIpOptions = 40;  // bytes of IPv4 header options
constexpr int kDefaultTtl = 64;    // net.ipv4.ip_default_ttl, net.ipv6.conf.all.hop_limit
constexpr int kIpv6MinMtu = 1280;
constexpr int kPmtudiscMax = 5;  // IP_PMTUDISC_OMIT / IPV6_PMTUDISC_OMIT
constexpr int kLoIfindex = 1;
constexpr int kEthIfindex = 2;
// linux/in6.h names glibc's headers lack.
constexpr int kIpv6Flowinfo = 11;
constexpr int kIpv6FlowinfoSend = 33;

int Key(int level, int name) { return level << 16 | name; }

// do_ip_setsockopt reads an int when there is room for one, else a byte; an empty value
// reads as 0.
int IpValue(const std::string& v) {
  if (v.size() >= sizeof(int)) {
    int i;
    memcpy(&i, v.data(), sizeof(i));
    return i;
  }
  return v.empty() ? 0 : static_cast<unsigned char>(v[0]);
}

// IP-level flags without behaviour here (beyond the ones Bind and UdpSocket consult),
// with their defaults.
bool IsIpFlag(int name, int* def) {
  switch (name) {
    case IP_RECVOPTS:
    case IP_RETOPTS:
    case IP_PKTINFO:
    case IP_RECVTTL:
    case IP_RECVTOS:
    case IP_RECVERR:
    case IP_FREEBIND:
    case IP_PASSSEC:
    case IP_RECVORIGDSTADDR:
    case IP_CHECKSUM:
    case IP_BIND_ADDRESS_NO_PORT:
    case IP_RECVFRAGSIZE:
    case IP_RECVERR_RFC4884:
    case IP_TRANSPARENT:
      *def = 0;
      return true;
    case IP_MULTICAST_LOOP:
    case IP_MULTICAST_ALL:
      *def = 1;
      return true;
    default:
      return false;
  }
}

bool IsIpv6Flag(int name, int* def) {
  switch (name) {
    case IPV6_RECVPKTINFO:
    case IPV6_2292PKTINFO:
    case IPV6_2292HOPLIMIT:
    case IPV6_RECVHOPLIMIT:
    case IPV6_RECVRTHDR:
    case IPV6_RECVHOPOPTS:
    case IPV6_RECVDSTOPTS:
    case IPV6_RECVTCLASS:
    case IPV6_RECVPATHMTU:
    case IPV6_RECVORIGDSTADDR:
    case IPV6_RECVERR:
    case IPV6_DONTFRAG:
    case IPV6_RECVERR_RFC4884:
    case IPV6_FREEBIND:
    case IPV6_TRANSPARENT:
    case kIpv6Flowinfo:
    case kIpv6FlowinfoSend:
      *def = 0;
      return true;
    case IPV6_AUTOFLOWLABEL:
    case IPV6_MULTICAST_ALL:
    case IPV6_MULTICAST_LOOP:
      *def = 1;
      return true;
    default:
      return false;
  }
}

}  // namespace

// --- dispatch by level ---

bool InetSocket::IsTransportLevel(int level) const {
  // UDP and UDP-Lite sockets answer at both levels (Linux's udp_lib_*sockopt).
  if (type_ == SOCK_DGRAM) return level == IPPROTO_UDP || level == IPPROTO_UDPLITE;
  return level == protocol_;
}

SysResult<std::string> InetSocket::GetOption(Task& task, int level, int name) {
  if (level == SOL_SOCKET) {
    auto r = GetInetSocketOption(task, name);
    if (r.ok() || r.error() != ENOPROTOOPT) return r;
    return GetCommonOption(name);
  }
  if (IsTransportLevel(level)) return GetTransportOption(task, level, name);
  if (level == SOL_IP) return GetIpOption(name);
  if (family_ == AF_INET6 && level == SOL_IPV6) return GetIpv6Option(name);
  // Linux's ip_getsockopt answers EOPNOTSUPP for other levels, ipv6_getsockopt ENOPROTOOPT.
  return Errno{family_ == AF_INET ? EOPNOTSUPP : ENOPROTOOPT};
}

SysStatus InetSocket::SetOption(Task& task, int level, int name, const std::string& value) {
  if (level == SOL_SOCKET) {
    SysStatus r = SetInetSocketOption(task, name, value);
    if (!r.ok() && r.error() == ENOPROTOOPT) r = SetCommonOption(task, name, value);
    if (r.ok()) SocketOptionChanged(name);
    return r;
  }
  if (IsTransportLevel(level)) return SetTransportOption(task, level, name, value);
  if (level == SOL_IP) return SetIpOption(task, name, value);
  if (family_ == AF_INET6 && level == SOL_IPV6) return SetIpv6Option(task, name, value);
  return Errno{ENOPROTOOPT};
}

// --- SOL_SOCKET ---

SysResult<std::string> InetSocket::GetInetSocketOption(Task& task, int name) {
  switch (name) {
    case SO_REUSEPORT:
      return OptionBytes(int{reuseport_});
    case SO_BINDTODEVICE:
      return bound_device_.empty() ? std::string() : bound_device_ + '\0';
    case SO_BINDTOIFINDEX: {
      int idx = bound_device_.empty() ? 0 : bound_device_ == "lo" ? kLoIfindex : kEthIfindex;
      return OptionBytes(idx);
    }
    case SO_PEERCRED: {
      // Internet sockets have no peer credentials: Linux reports pid 0 and ids -1.
      struct ucred c {
        0, ~0u, ~0u
      };
      return OptionBytes(c);
    }
    default:
      return Errno{ENOPROTOOPT};
  }
}

SysStatus InetSocket::SetInetSocketOption(Task& task, int name, const std::string& value) {
  switch (name) {
    case SO_REUSEPORT: {
      ASSIGN_OR_RETURN_ERRNO(int v, OptionInt(value));
      reuseport_ = v != 0;
      return SysOk();
    }
    case SO_BINDTODEVICE: {
      std::string dev(value.data(),
                      strnlen(value.data(), std::min<size_t>(value.size(), IFNAMSIZ)));
      if (!dev.empty() && dev != "lo" && !(dev == "eth0" && stack_->network().egress)) {
        return Errno{ENODEV};
      }
      bound_device_ = dev;
      return SysOk();
    }
    case SO_BINDTOIFINDEX: {
      ASSIGN_OR_RETURN_ERRNO(int v, OptionInt(value));
      if (v == 0) {
        bound_device_.clear();
      } else if (v == kLoIfindex) {
        bound_device_ = "lo";
      } else if (v == kEthIfindex && stack_->network().egress) {
        bound_device_ = "eth0";
      } else {
        return Errno{ENODEV};
      }
      return SysOk();
    }
    default:
      return Errno{ENOPROTOOPT};
  }
}

// --- SOL_IP ---

SysResult<std::string> InetSocket::GetIpOption(int name) {
  int def;
  switch (name) {
    case IP_TOS:
      return OptionBytes(ip_.tos);
    case IP_TTL:
      return OptionBytes(ip_.ttl == -1 ? kDefaultTtl : ip_.ttl);
    case IP_HDRINCL:
    case IP_NODEFRAG:
      return OptionBytes(0);
    case IP_OPTIONS:
      return ip_.ip_options;
    case IP_MTU_DISCOVER:
      return OptionBytes(ip_.mtu_discover);
    case IP_MULTICAST_TTL:
      return OptionBytes(ip_.multicast_ttl);
    case IP_MINTTL:
      return OptionBytes(ip_.minttl);
    case IP_MULTICAST_IF:
      return OptionBytes(in_addr{});
    case IP_MTU: {
      ASSIGN_OR_RETURN_ERRNO(int mtu, PathMtu());
      return OptionBytes(mtu);
    }
    default:
      if (!IsIpFlag(name, &def)) return Errno{ENOPROTOOPT};
      if (auto it = ip_.flags.find(Key(SOL_IP, name)); it != ip_.flags.end()) def = it->second;
      return OptionBytes(def);
  }
}

SysStatus InetSocket::SetIpOption(Task& task, int name, const std::string& value) {
  int v = IpValue(value);
  int def;
  switch (name) {
    case IP_TOS:
      if (type_ == SOCK_STREAM) v = (v & ~kEcnMask) | (ip_.tos & kEcnMask);
      ip_.tos = v & 0xff;
      return SysOk();
    case IP_TTL:
      if (value.empty() || (v != -1 && (v < 1 || v > 255))) return Errno{EINVAL};
      ip_.ttl = v;
      return SysOk();
    case IP_HDRINCL:
    case IP_NODEFRAG:
      return Errno{ENOPROTOOPT};  // raw sockets only
    case IP_ROUTER_ALERT:
      return Errno{EINVAL};
    case IP_OPTIONS:
      if (value.size() > kMaxIpOptions) return Errno{EINVAL};
      ip_.ip_options = value;
      return SysOk();
    case IP_MTU_DISCOVER:
      if (v < 0 || v > kPmtudiscMax) return Errno{EINVAL};
      ip_.mtu_discover = v;
      return SysOk();
    case IP_MULTICAST_TTL:
      if (type_ == SOCK_STREAM || value.empty()) return Errno{EINVAL};
      if (v == -1) v = 1;
      if (v < 0 || v > 255) return Errno{EINVAL};
      ip_.multicast_ttl = v;
      return SysOk();
    case IP_MINTTL:
      if (value.empty() || v < 0 || v > 255) return Errno{EINVAL};
      ip_.minttl = v;
      return SysOk();
    case IP_MULTICAST_IF:
      if (type_ == SOCK_STREAM) return Errno{EINVAL};
      return SysOk();
    case IP_ADD_MEMBERSHIP:
    case IP_DROP_MEMBERSHIP:
      if (type_ == SOCK_STREAM) return Errno{EPROTO};
      // No interface of the sandbox takes part in multicast.
      return Errno{name == IP_ADD_MEMBERSHIP ? ENODEV : EADDRNOTAVAIL};
    case IP_TRANSPARENT:
      if (value.empty()) return Errno{EINVAL};
      if (v != 0 && task.creds().euid != 0) return Errno{EPERM};
      break;
    case IP_FREEBIND:
    case IP_MULTICAST_LOOP:
      if (value.empty()) return Errno{EINVAL};
      break;
    default:
      break;
  }
  if (!IsIpFlag(name, &def)) return Errno{ENOPROTOOPT};
  if (v != 0) {
    ip_.flags[Key(SOL_IP, name)] = 1;
  } else if (def == 0) {
    ip_.flags.erase(Key(SOL_IP, name));
  } else {
    ip_.flags[Key(SOL_IP, name)] = 0;
  }
  return SysOk();
}

// --- SOL_IPV6 (AF_INET6 sockets) ---

SysResult<std::string> InetSocket::GetIpv6Option(int name) {
  int def;
  switch (name) {
    case IPV6_V6ONLY:
      return OptionBytes(int{v6only_});
    case IPV6_UNICAST_HOPS:
      return OptionBytes(ip_.unicast_hops == -1 ? kDefaultTtl : ip_.unicast_hops);
    case IPV6_MULTICAST_HOPS:
      return OptionBytes(ip_.multicast_hops);
    case IPV6_TCLASS:
      return OptionBytes(ip_.tclass);
    case IPV6_MTU_DISCOVER:
      return OptionBytes(ip_.v6_mtu_discover);
    case IPV6_MULTICAST_IF:
      return OptionBytes(0);
    case IPV6_MTU: {
      ASSIGN_OR_RETURN_ERRNO(int mtu, PathMtu());
      return OptionBytes(ip_.v6_mtu != 0 ? std::min(mtu, ip_.v6_mtu) : mtu);
    }
    default:
      if (!IsIpv6Flag(name, &def)) return Errno{ENOPROTOOPT};
      if (auto it = ip_.flags.find(Key(SOL_IPV6, name)); it != ip_.flags.end()) def = it->second;
      return OptionBytes(def);
  }
}

SysStatus InetSocket::SetIpv6Option(Task& task, int name, const std::string& value) {
  // IPv6 options take a whole int (do_ipv6_setsockopt).
  auto iv = OptionInt(value);
  switch (name) {
    case IPV6_ADD_MEMBERSHIP:
    case IPV6_DROP_MEMBERSHIP:
      return Errno{name == IPV6_ADD_MEMBERSHIP ? ENODEV : EADDRNOTAVAIL};
    default:
      break;
  }
  if (!iv.ok()) return Errno{EINVAL};
  int v = iv.value();
  int def;
  switch (name) {
    case IPV6_V6ONLY:
      // Only before bind: the port table has decided already.
      if (local_.port != 0) return Errno{EINVAL};
      v6only_ = v != 0;
      return SysOk();
    case IPV6_UNICAST_HOPS:
      if (v < -1 || v > 255) return Errno{EINVAL};
      ip_.unicast_hops = v;
      return SysOk();
    case IPV6_MULTICAST_HOPS:
      if (v < -1 || v > 255) return Errno{EINVAL};
      ip_.multicast_hops = v == -1 ? 1 : v;
      return SysOk();
    case IPV6_TCLASS:
      if (v < -1 || v > 255) return Errno{EINVAL};
      if (v == -1) v = 0;
      if (type_ == SOCK_STREAM) v = (v & ~kEcnMask) | (ip_.tclass & kEcnMask);
      ip_.tclass = v;
      return SysOk();
    case IPV6_MTU_DISCOVER:
      if (v < 0 || v > kPmtudiscMax) return Errno{EINVAL};
      ip_.v6_mtu_discover = v;
      return SysOk();
    case IPV6_MTU:
      if (v != 0 && v < kIpv6MinMtu) return Errno{EINVAL};
      ip_.v6_mtu = v;
      return SysOk();
    case IPV6_MULTICAST_IF:
      return SysOk();
    case IPV6_MULTICAST_LOOP:
      if (v != 0 && v != 1) return Errno{EINVAL};
      break;
    case IPV6_TRANSPARENT:
      if (v != 0 && task.creds().euid != 0) return Errno{EPERM};
      break;
    default:
      break;
  }
  if (!IsIpv6Flag(name, &def)) return Errno{ENOPROTOOPT};
  if (v != 0) {
    ip_.flags[Key(SOL_IPV6, name)] = 1;
  } else if (def == 0) {
    ip_.flags.erase(Key(SOL_IPV6, name));
  } else {
    ip_.flags[Key(SOL_IPV6, name)] = 0;
  }
  return SysOk();
}

}  // namespace usentry::sentry::net
