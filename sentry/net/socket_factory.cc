// socket(2)/socketpair(2) dispatch by family.
#include "sentry/net/socket_factory.h"

#include <sys/socket.h>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/net/netlink_socket.h"
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
      // The network is off: say so (audit "denied", --explain) rather than leave the app
      // with a bare EAFNOSUPPORT.
      task.kernel().audit().Denied(task.thread_group().pid(), "socket",
                                   family == AF_INET ? "AF_INET" : "AF_INET6", EAFNOSUPPORT,
                                   "network not allowed", "net");
      return Errno{EAFNOSUPPORT};
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
