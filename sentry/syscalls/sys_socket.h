// Socket syscalls over net::Socket (sentry/net: AF_UNIX, AF_INET/AF_INET6, AF_NETLINK).
// sys_socket.cc: creation, names, connections, options; sys_socket_msg.cc: send*/recv*
// with msghdr and control messages.
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_SOCKET_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_SOCKET_H_

#include <memory>
#include <string>

#include "sentry/net/socket.h"
#include "sentry/syscalls/syscall.h"

namespace usentry::sentry {

SyscallResult SysSocket(Task& task, const SyscallArgs& args);
SyscallResult SysSocketpair(Task& task, const SyscallArgs& args);
SyscallResult SysBind(Task& task, const SyscallArgs& args);
SyscallResult SysListen(Task& task, const SyscallArgs& args);
SyscallResult SysAccept(Task& task, const SyscallArgs& args);
SyscallResult SysAccept4(Task& task, const SyscallArgs& args);
SyscallResult SysConnect(Task& task, const SyscallArgs& args);
SyscallResult SysGetsockname(Task& task, const SyscallArgs& args);
SyscallResult SysGetpeername(Task& task, const SyscallArgs& args);
SyscallResult SysShutdown(Task& task, const SyscallArgs& args);
SyscallResult SysGetsockopt(Task& task, const SyscallArgs& args);
SyscallResult SysSetsockopt(Task& task, const SyscallArgs& args);

SyscallResult SysSendto(Task& task, const SyscallArgs& args);
SyscallResult SysRecvfrom(Task& task, const SyscallArgs& args);
SyscallResult SysSendmsg(Task& task, const SyscallArgs& args);
SyscallResult SysRecvmsg(Task& task, const SyscallArgs& args);
SyscallResult SysSendmmsg(Task& task, const SyscallArgs& args);
SyscallResult SysRecvmmsg(Task& task, const SyscallArgs& args);

// Shared by both files.
// The socket behind `fd`: EBADF, or ENOTSOCK for other files.
SysResult<std::shared_ptr<net::Socket>> GetSocket(Task& task, int fd);
// An app sockaddr of `len` bytes (EINVAL past sizeof(sockaddr_storage) or negative).
SysResult<std::string> CopyInSockaddr(Task& task, mm::GuestAddr addr, int64_t len);
// Linux's move_addr_to_user: reads the app's int length at `len_addr` (EINVAL if
// negative), copies at most that many bytes of `sa`, stores the full length.
SysStatus CopyOutSockaddr(Task& task, const std::string& sa, mm::GuestAddr addr,
                          mm::GuestAddr len_addr);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_SOCKET_H_
