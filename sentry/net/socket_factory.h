// socket(2) and socketpair(2) by family: which (family, type, protocol) triples exist,
// with Linux's errnos for the ones that do not, and the sockets they make.
#ifndef USENTRY_SENTRY_NET_SOCKET_FACTORY_H_
#define USENTRY_SENTRY_NET_SOCKET_FACTORY_H_

#include <memory>
#include <utility>

#include "sentry/kernel/sys_result.h"
#include "sentry/net/socket.h"

namespace usentry::sentry {
class Task;
}

namespace usentry::sentry::net {

// `type` is the base type (SOCK_STREAM...; the SOCK_NONBLOCK/SOCK_CLOEXEC bits are the
// caller's), `status_flags` 0 or O_NONBLOCK. EAFNOSUPPORT for families the sandbox does
// not have, ESOCKTNOSUPPORT/EPROTONOSUPPORT as Linux; raw inet and packet sockets EPERM,
// ping sockets EACCES (recorded as denied). AF_NETLINK: NETLINK_ROUTE only
// (netlink_socket.h).
SysResult<std::shared_ptr<Socket>> NewSocket(Task& task, int family, int type, int protocol,
                                             int status_flags);
// Only AF_UNIX has pairs; AF_INET/AF_INET6/AF_NETLINK give EOPNOTSUPP as on Linux.
SysResult<std::pair<std::shared_ptr<Socket>, std::shared_ptr<Socket>>> NewSocketPair(
    Task& task, int family, int type, int protocol, int status_flags);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_SOCKET_FACTORY_H_
