// The interface ioctls, answered from the sandbox's Interfaces: what Linux's sock_ioctl
// falls back to on a socket of any family once the family's own ioctl declined
// (SIOCGIFCONF, and dev_ioctl's SIOCGIFFLAGS, SIOCGIFINDEX, SIOCGIFNAME, SIOCGIFMTU,
// SIOCGIFHWADDR, ...), plus the address ioctls that only AF_INET sockets have
// (devinet_ioctl: SIOCGIFADDR, SIOCGIFNETMASK, SIOCGIFBRDADDR, SIOCGIFDSTADDR).
// Every request that would change an interface or route (SIOCSIF*, SIOCADDRT,
// SIOCDELRT, ...) is EPERM, for root in the sandbox too; unknown names are ENODEV.
#ifndef USENTRY_SENTRY_NET_INTERFACE_IOCTL_H_
#define USENTRY_SENTRY_NET_INTERFACE_IOCTL_H_

#include <cstdint>

#include "sentry/kernel/sys_result.h"

namespace usentry::sentry {
class Task;
}

namespace usentry::sentry::net {

// `family` is the socket's (AF_INET sockets also get the address ioctls). `arg` is the
// app's pointer (struct ifreq / struct ifconf); EFAULT through the mm copy helpers.
// ENOTTY for commands that are no interface ioctl on this family, as Linux.
SysResult<uint64_t> InterfaceIoctl(Task& task, int family, uint64_t cmd, uint64_t arg);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_INTERFACE_IOCTL_H_
