// socket(2)/socketpair(2) dispatch by family.
#include "sentry/net/socket_factory.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/net/inet_stack.h"
#include "sentry/net/netlink_socket.h"
#include "sentry/net/tcp_socket.h"
#include "sentry/net/udp_socket.h"
#include "sentry/net/unix_socket.h"

namespace usentry::sentry::net {
namespace {

// AF_UNIX: SOCK_RAW is a datagram socket on Linux; protocol must be 0 or PF_UNIX.
SysResult<int> UnixType(int type, int protocol) {
  if (protocol != 0 && protocol != PF_UNIX) return Errno{EPROTONOSUPPORT};
  switch (type) {
    case SOCK_STREAM:
    case SOCK_DGRAM:
    case SOCK_SEQPACKET:
      return type;
    case SOCK_RAW:
      return SOCK_DGRAM;
    default:
      return Errno{ESOCKTNOSUPPORT};
  }
}

constexpr int kIpprotoMax = 263;  // IPPROTO_MAX

// Records a refused socket(2) as a network denial (audit "denied", --explain).
void DenySocket(Task& task, int family, const char* what, int err, const char* reason) {
  std::string target = absl::StrCat(family == AF_INET ? "AF_INET " : "AF_INET6 ", what);
  task.kernel().audit().Denied(task.thread_group().pid(), "socket", target, err, reason, "net");
}

// AF_INET/AF_INET6 as Linux's inet_create matches (type, protocol): TCP, UDP and UDP-Lite
// are emulated; raw sockets are EPERM and ping sockets EACCES (ping_group_range's default),
// both recorded as denials; other pairs ESOCKTNOSUPPORT/EPROTONOSUPPORT.
SysResult<std::shared_ptr<Socket>> NewInetSocket(Task& task, int family, int type, int protocol,
                                                 int status_flags) {
  if (protocol < 0 || protocol >= kIpprotoMax) return Errno{EINVAL};
  const int icmp = family == AF_INET ? int{IPPROTO_ICMP} : int{IPPROTO_ICMPV6};
  const uint32_t uid = task.creds().fsuid, gid = task.creds().fsgid;
  switch (type) {
    case SOCK_STREAM:
      if (protocol != 0 && protocol != IPPROTO_TCP) return Errno{EPROTONOSUPPORT};
      return std::shared_ptr<Socket>(
          TcpSocket::New(task.kernel().inet_stack(), family, status_flags, uid, gid));
    case SOCK_DGRAM:
      if (protocol == icmp) {
        DenySocket(task, family, "ICMP", EACCES, "ping sockets are not allowed");
        return Errno{EACCES};
      }
      if (protocol != 0 && protocol != IPPROTO_UDP && protocol != IPPROTO_UDPLITE) {
        return Errno{EPROTONOSUPPORT};
      }
      return std::shared_ptr<Socket>(UdpSocket::New(task.kernel().inet_stack(), family,
                                                    status_flags, uid, gid,
                                                    protocol == 0 ? IPPROTO_UDP : protocol));
    case SOCK_RAW:
      DenySocket(task, family, "SOCK_RAW", EPERM, "raw sockets are not allowed");
      return Errno{EPERM};
    default:
      return Errno{ESOCKTNOSUPPORT};
  }
}

}  // namespace

SysResult<std::shared_ptr<Socket>> NewSocket(Task& task, int family, int type, int protocol,
                                             int status_flags) {
  switch (family) {
    case AF_UNIX: {
      ASSIGN_OR_RETURN_ERRNO(int t, UnixType(type, protocol));
      return std::shared_ptr<Socket>(UnixSocket::New(
          task.kernel().unix_namespace(), t, status_flags, task.creds().fsuid, task.creds().fsgid));
    }
    case AF_INET:
    case AF_INET6:
      return NewInetSocket(task, family, type, protocol, status_flags);
    case AF_NETLINK:
      return NewNetlinkSocket(task, type, protocol, status_flags);
    case AF_PACKET:
      // Linux checks CAP_NET_RAW before the type, so every packet socket is EPERM.
      task.kernel().audit().Denied(task.thread_group().pid(), "socket", "AF_PACKET", EPERM,
                                   "packet sockets are not allowed", "net");
      return Errno{EPERM};
    default:
      return Errno{EAFNOSUPPORT};
  }
}

SysResult<std::pair<std::shared_ptr<Socket>, std::shared_ptr<Socket>>> NewSocketPair(
    Task& task, int family, int type, int protocol, int status_flags) {
  // Internet sockets have no pairs on Linux either.
  if (family == AF_INET || family == AF_INET6) return Errno{EOPNOTSUPP};
  // Nor have netlink sockets; Linux makes the socket first, so its errors come first.
  if (family == AF_NETLINK || family == AF_PACKET) {
    RETURN_IF_ERRNO(NewSocket(task, family, type, protocol, status_flags));
    return Errno{EOPNOTSUPP};
  }
  if (family != AF_UNIX) return Errno{EAFNOSUPPORT};
  ASSIGN_OR_RETURN_ERRNO(int t, UnixType(type, protocol));
  Ucred creds{task.thread_group().pid(), task.creds().euid, task.creds().egid};
  auto [a, b] = UnixSocket::NewPair(task.kernel().unix_namespace(), t, status_flags, creds,
                                    task.creds().fsuid, task.creds().fsgid);
  return std::make_pair(std::shared_ptr<Socket>(a), std::shared_ptr<Socket>(b));
}

}  // namespace usentry::sentry::net
