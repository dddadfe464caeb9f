// sockaddr_in / sockaddr_in6 parsing and formatting.
#include "sentry/net/inet_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

namespace usentry::sentry::net {
namespace {

// The struct a sockaddr of `sa.size()` bytes designates, zero-padded when shorter.
template <typename T>
T SockaddrAs(const std::string& sa) {
  T out{};
  memcpy(&out, sa.data(), std::min(sa.size(), sizeof(T)));
  return out;
}

InetAddr FromIn(const sockaddr_in& s) {
  InetAddr a;
  a.ip = IpAddress::FromIn(s.sin_addr);
  a.port = ntohs(s.sin_port);
  return a;
}

// `sa` is at least 24 bytes; the scope id only counts when the app passed it.
InetAddr FromIn6(const std::string& sa) {
  auto s = SockaddrAs<sockaddr_in6>(sa);
  InetAddr a;
  a.ip = IpAddress::FromIn6(s.sin6_addr);
  a.port = ntohs(s.sin6_port);
  a.flowinfo = s.sin6_flowinfo;
  a.scope_id = sa.size() >= kSockaddrIn6Len ? s.sin6_scope_id : 0;
  return a;
}

// A sockaddr_in given to an AF_INET6 socket: the same address, v4-mapped.
InetAddr Mapped(InetAddr a) {
  a.ip = IpForFamily(AF_INET6, a.ip);
  return a;
}

}  // namespace

IpAddress IpForFamily(int family, const IpAddress& ip) {
  if (family == AF_INET) return ip.Unmapped();
  return ip.is_v6() ? ip : IpAddress::FromIn6(ip.ToIn6Mapped());
}

std::string FormatInetSockaddr(int family, const InetAddr& a) {
  if (family == AF_INET) {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    s.sin_port = htons(a.port);
    s.sin_addr = a.ip.Unmapped().is_v4() ? a.ip.Unmapped().ToIn() : in_addr{};
    return std::string(reinterpret_cast<const char*>(&s), sizeof(s));
  }
  sockaddr_in6 s{};
  s.sin6_family = AF_INET6;
  s.sin6_port = htons(a.port);
  s.sin6_addr = a.ip.ToIn6Mapped();
  return std::string(reinterpret_cast<const char*>(&s), sizeof(s));
}

SysResult<sa_family_t> SockaddrFamily(const std::string& sa) {
  if (sa.size() < sizeof(sa_family_t)) return Errno{EINVAL};
  sa_family_t f;
  memcpy(&f, sa.data(), sizeof(f));
  return f;
}

SysResult<InetAddr> ParseBindAddress(int family, const std::string& sa) {
  if (family == AF_INET) {
    if (sa.size() < kSockaddrInLen) return Errno{EINVAL};
    auto s = SockaddrAs<sockaddr_in>(sa);
    if (s.sin_family != AF_INET &&
        (s.sin_family != AF_UNSPEC || s.sin_addr.s_addr != htonl(INADDR_ANY))) {
      return Errno{EAFNOSUPPORT};
    }
    return FromIn(s);
  }
  if (sa.size() < kSockaddrIn6MinLen) return Errno{EINVAL};
  if (SockaddrAs<sockaddr_in6>(sa).sin6_family != AF_INET6) return Errno{EAFNOSUPPORT};
  return FromIn6(sa);
}

SysResult<InetAddr> ParseStreamConnectAddress(int family, const std::string& sa) {
  if (family == AF_INET) {
    if (sa.size() < kSockaddrInLen) return Errno{EINVAL};
    auto s = SockaddrAs<sockaddr_in>(sa);
    if (s.sin_family != AF_INET) return Errno{EAFNOSUPPORT};
    return FromIn(s);
  }
  if (sa.size() < kSockaddrIn6MinLen) return Errno{EINVAL};
  if (SockaddrAs<sockaddr_in6>(sa).sin6_family != AF_INET6) return Errno{EAFNOSUPPORT};
  return FromIn6(sa);
}

SysResult<InetAddr> ParseDgramConnectAddress(int family, bool v6only, const std::string& sa) {
  ASSIGN_OR_RETURN_ERRNO(sa_family_t f, SockaddrFamily(sa));
  if (family == AF_INET6 && f == AF_INET) {
    if (v6only) return Errno{EAFNOSUPPORT};
    if (sa.size() < kSockaddrInLen) return Errno{EINVAL};
    return Mapped(FromIn(SockaddrAs<sockaddr_in>(sa)));
  }
  return ParseStreamConnectAddress(family, sa);
}

SysResult<std::optional<InetAddr>> ParseDgramSendAddress(int family, bool v6only,
                                                         const std::string& sa) {
  ASSIGN_OR_RETURN_ERRNO(sa_family_t f, SockaddrFamily(sa));
  InetAddr a;
  if (family == AF_INET) {
    // Linux's udp_sendmsg: AF_UNSPEC is read as AF_INET.
    if (sa.size() < kSockaddrInLen) return Errno{EINVAL};
    if (f != AF_INET && f != AF_UNSPEC) return Errno{EAFNOSUPPORT};
    a = FromIn(SockaddrAs<sockaddr_in>(sa));
  } else {
    switch (f) {
      case AF_INET6:
        if (sa.size() < kSockaddrIn6MinLen) return Errno{EINVAL};
        a = FromIn6(sa);
        if (v6only && a.ip.IsV4Mapped()) return Errno{ENETUNREACH};
        break;
      case AF_INET:
        if (v6only) return Errno{ENETUNREACH};
        if (sa.size() < kSockaddrInLen) return Errno{EINVAL};
        a = Mapped(FromIn(SockaddrAs<sockaddr_in>(sa)));
        break;
      case AF_UNSPEC:
        return std::optional<InetAddr>();
      default:
        return Errno{EINVAL};
    }
  }
  if (a.port == 0) return Errno{EINVAL};
  return std::optional<InetAddr>(a);
}

}  // namespace usentry::sentry::net
