// procfs internals: /proc/PID/net (and /proc/net, a link to self/net, as on Linux) and
// /proc/sys/net. The interface files (dev, route, if_inet6, ipv6_route) show the
// sandbox's Interfaces in Linux's exact formats; the socket tables (tcp, tcp6, udp,
// udp6, unix, netlink) are their headers only for now — the sandbox's sockets are not
// listed in them yet.
#ifndef USENTRY_SENTRY_FSIMPL_PROCFS_NET_H_
#define USENTRY_SENTRY_FSIMPL_PROCFS_NET_H_

#include <memory>
#include <string>
#include <string_view>

#include "sentry/fsimpl/procfs_nodes.h"
#include "sentry/net/interfaces.h"
#include "sentry/vfs/inode.h"

namespace usentry::sentry {
class Kernel;
}

namespace usentry::sentry::fsimpl {

// The net/ directory at procfs key `key` ("1234/net"). The kernel must outlive it.
std::shared_ptr<vfs::Inode> NewProcNetDir(std::shared_ptr<vfs::Filesystem> fs, Kernel& k,
                                          std::string_view key, ProcOwner owner);
// /proc/sys/net: core/somaxconn and ipv4/ip_local_port_range.
std::shared_ptr<vfs::Inode> NewProcSysNetDir(std::shared_ptr<vfs::Filesystem> fs);

// The files' contents, from the interfaces alone.
std::string GenerateNetDev(const net::Interfaces& ifs);
std::string GenerateNetRoute(const net::Interfaces& ifs);
std::string GenerateIfInet6(const net::Interfaces& ifs);
std::string GenerateIpv6Route(const net::Interfaces& ifs);
// The socket tables' header lines ("tcp", "tcp6", "udp", "udp6", "unix", "netlink").
std::string NetTableHeader(std::string_view table);

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_PROCFS_NET_H_
