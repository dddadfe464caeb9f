// Internet socket addresses: sockaddr_in / sockaddr_in6 parsed and formatted with
// Linux's length and family checks, per operation (bind, connect, sendto each check
// differently, and in a different order, on Linux).
#ifndef USENTRY_SENTRY_NET_INET_ADDRESS_H_
#define USENTRY_SENTRY_NET_INET_ADDRESS_H_

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>

#include "base/ip_address.h"
#include "sentry/kernel/sys_result.h"

namespace usentry::sentry::net {

inline constexpr size_t kSockaddrInLen = 16;      // sizeof(struct sockaddr_in)
inline constexpr size_t kSockaddrIn6Len = 28;     // sizeof(struct sockaddr_in6)
inline constexpr size_t kSockaddrIn6MinLen = 24;  // SIN6_LEN_RFC2133: without sin6_scope_id

// An address in the socket's own terms: an AF_INET socket holds IPv4 addresses, an
// AF_INET6 socket IPv6 ones (IPv4 peers as v4-mapped ::ffff:a.b.c.d).
struct InetAddr {
  IpAddress ip;
  uint16_t port = 0;  // host order
  // IPv6 only, as the app gave them. Linux reports flowinfo 0 in getsockname/getpeername
  // (no IPV6_FLOWINFO_SEND) and a scope only for link-local addresses.
  uint32_t flowinfo = 0;
  uint32_t scope_id = 0;

  friend bool operator==(const InetAddr& a, const InetAddr& b) {
    return a.ip == b.ip && a.port == b.port;
  }
};

// The same address as `family` expresses it: AF_INET6 maps IPv4, AF_INET unmaps.
IpAddress IpForFamily(int family, const IpAddress& ip);

// The sockaddr bytes of `a` for a socket of `family`: 16 bytes for AF_INET, 28 for
// AF_INET6 (IPv4 addresses v4-mapped; flowinfo and scope 0, as Linux reports them).
std::string FormatInetSockaddr(int family, const InetAddr& a);

// bind(2): AF_INET needs 16 bytes (EINVAL) and family AF_INET, or AF_UNSPEC with
// INADDR_ANY as Linux accepts for old programs (else EAFNOSUPPORT); AF_INET6 needs 24
// bytes and family AF_INET6.
SysResult<InetAddr> ParseBindAddress(int family, const std::string& sa);
// connect(2) on a stream socket (AF_UNSPEC is the caller's: it disconnects).
SysResult<InetAddr> ParseStreamConnectAddress(int family, const std::string& sa);
// connect(2) on a datagram socket. An AF_INET6 socket also takes a sockaddr_in (EAFNOSUPPORT
// when IPV6_V6ONLY), returned v4-mapped.
SysResult<InetAddr> ParseDgramConnectAddress(int family, bool v6only, const std::string& sa);
// sendto(2)/sendmsg(2) destination of a datagram socket. nullopt: none after all (AF_UNSPEC
// on an AF_INET6 socket means "the connected peer", as on Linux). Port 0 is EINVAL; an
// AF_INET6 socket takes sockaddr_in too (ENETUNREACH when IPV6_V6ONLY).
SysResult<std::optional<InetAddr>> ParseDgramSendAddress(int family, bool v6only,
                                                         const std::string& sa);

// The sa_family of raw sockaddr bytes; EINVAL when shorter than the family field.
SysResult<sa_family_t> SockaddrFamily(const std::string& sa);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_INET_ADDRESS_H_
