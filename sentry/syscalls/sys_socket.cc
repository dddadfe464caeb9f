// socket, socketpair, bind, listen, accept, accept4, connect, getsockname,
// getpeername, shutdown, getsockopt, setsockopt.
#include "sentry/syscalls/sys_socket.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>

#include "abi/socket.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/net/socket_factory.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry {
namespace {

constexpr int kSockTypeMask = 0xf;
constexpr int kSockMax = 11;  // SOCK_MAX: type numbers at or above are EINVAL
constexpr int kAfMax = 46;    // AF_MAX
constexpr size_t kMaxOptLen = 256;

struct SocketKind {
  int type;          // the base type, without SOCK_NONBLOCK/SOCK_CLOEXEC
  int status_flags;  // O_NONBLOCK
  bool cloexec;
};

// The checks socket() and socketpair() share before the family has its say, in Linux's
// order.
SysResult<SocketKind> CheckSocketArgs(int family, int type) {
  int flags = type & ~kSockTypeMask;
  if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) return Errno{EINVAL};
  int base = type & kSockTypeMask;
  if (family < 0 || family >= kAfMax) return Errno{EAFNOSUPPORT};
  if (base < 0 || base >= kSockMax) return Errno{EINVAL};
  return SocketKind{base, (flags & SOCK_NONBLOCK) ? O_NONBLOCK : 0, (flags & SOCK_CLOEXEC) != 0};
}

SyscallResult DoAccept(Task& task, int fd, mm::GuestAddr addr, mm::GuestAddr len_addr, int flags) {
  if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, fd));
  std::string peer;
  ASSIGN_OR_RETURN_ERRNO(std::shared_ptr<net::Socket> conn, sock->Accept(task, &peer));
  if (flags & SOCK_NONBLOCK) RETURN_IF_ERRNO(conn->SetStatusFlags(conn->flags() | O_NONBLOCK));
  if (!addr.IsNull()) {
    // The connection is lost if the address cannot be stored, as on Linux.
    RETURN_IF_ERRNO(CopyOutSockaddr(task, peer, addr, len_addr));
  }
  ASSIGN_OR_RETURN_ERRNO(int nfd, task.fds().Install(conn, flags & SOCK_CLOEXEC));
  return static_cast<uint64_t>(nfd);
}

}  // namespace

SysResult<std::shared_ptr<net::Socket>> GetSocket(Task& task, int fd) {
  ASSIGN_OR_RETURN_ERRNO(auto file, task.fds().Get(fd));
  auto sock = std::dynamic_pointer_cast<net::Socket>(file);
  if (!sock) return Errno{ENOTSOCK};
  return sock;
}

SysResult<std::string> CopyInSockaddr(Task& task, mm::GuestAddr addr, int64_t len) {
  if (len < 0 || len > static_cast<int64_t>(abi::kSockaddrStorageSize)) {
    return Errno{EINVAL};
  }
  std::string sa(static_cast<size_t>(len), '\0');
  if (len > 0) RETURN_IF_ERRNO(task.mm().CopyIn(addr, sa.data(), sa.size()));
  return sa;
}

SysStatus CopyOutSockaddr(Task& task, const std::string& sa, mm::GuestAddr addr,
                          mm::GuestAddr len_addr) {
  ASSIGN_OR_RETURN_ERRNO(int len, task.mm().CopyInObj<int>(len_addr));
  if (len < 0) return Errno{EINVAL};
  size_t n = std::min(static_cast<size_t>(len), sa.size());
  if (n > 0) RETURN_IF_ERRNO(task.mm().CopyOut(addr, sa.data(), n));
  return task.mm().CopyOutObj(len_addr, static_cast<int>(sa.size()));
}

SyscallResult SysSocket(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(SocketKind k, CheckSocketArgs(args.i32(0), args.i32(1)));
  ASSIGN_OR_RETURN_ERRNO(auto sock,
                         net::NewSocket(task, args.i32(0), k.type, args.i32(2), k.status_flags));
  ASSIGN_OR_RETURN_ERRNO(int fd, task.fds().Install(sock, k.cloexec));
  return static_cast<uint64_t>(fd);
}

SyscallResult SysSocketpair(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(SocketKind k, CheckSocketArgs(args.i32(0), args.i32(1)));
  ASSIGN_OR_RETURN_ERRNO(
      auto pair, net::NewSocketPair(task, args.i32(0), k.type, args.i32(2), k.status_flags));
  auto [a, b] = std::move(pair);
  vfs::FdTable& fds = task.fds();
  ASSIGN_OR_RETURN_ERRNO(int fa, fds.Install(a, k.cloexec));
  auto fb = fds.Install(b, k.cloexec);
  if (!fb.ok()) {
    (void)fds.Remove(fa);
    return Errno{fb.error()};
  }
  int32_t out[2] = {fa, fb.value()};
  auto st = task.mm().CopyOut(args.ptr(3), out, sizeof(out));
  if (!st.ok()) {
    (void)fds.Remove(fa);
    (void)fds.Remove(fb.value());
    return Errno{st.error()};
  }
  return uint64_t{0};
}

SyscallResult SysBind(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  ASSIGN_OR_RETURN_ERRNO(std::string sa, CopyInSockaddr(task, args.ptr(1), args.i32(2)));
  RETURN_IF_ERRNO(sock->Bind(task, sa));
  return uint64_t{0};
}

SyscallResult SysListen(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  RETURN_IF_ERRNO(sock->Listen(task, args.i32(1)));
  return uint64_t{0};
}

SyscallResult SysAccept(Task& task, const SyscallArgs& args) {
  return DoAccept(task, args.i32(0), args.ptr(1), args.ptr(2), 0);
}

SyscallResult SysAccept4(Task& task, const SyscallArgs& args) {
  return DoAccept(task, args.i32(0), args.ptr(1), args.ptr(2), args.i32(3));
}

SyscallResult SysConnect(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  ASSIGN_OR_RETURN_ERRNO(std::string sa, CopyInSockaddr(task, args.ptr(1), args.i32(2)));
  RETURN_IF_ERRNO(sock->Connect(task, sa));
  return uint64_t{0};
}

SyscallResult SysGetsockname(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  RETURN_IF_ERRNO(CopyOutSockaddr(task, sock->SockName(), args.ptr(1), args.ptr(2)));
  return uint64_t{0};
}

SyscallResult SysGetpeername(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  ASSIGN_OR_RETURN_ERRNO(std::string peer, sock->PeerName());
  RETURN_IF_ERRNO(CopyOutSockaddr(task, peer, args.ptr(1), args.ptr(2)));
  return uint64_t{0};
}

SyscallResult SysShutdown(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  RETURN_IF_ERRNO(sock->Shutdown(args.i32(1)));
  return uint64_t{0};
}

SyscallResult SysGetsockopt(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  mm::GuestAddr len_addr = args.ptr(4);
  ASSIGN_OR_RETURN_ERRNO(int len, task.mm().CopyInObj<int>(len_addr));
  if (len < 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(std::string v, sock->GetOption(task, args.i32(1), args.i32(2)));
  size_t n = std::min(static_cast<size_t>(len), v.size());
  if (n > 0) RETURN_IF_ERRNO(task.mm().CopyOut(args.ptr(3), v.data(), n));
  RETURN_IF_ERRNO(task.mm().CopyOutObj(len_addr, static_cast<int>(n)));
  return uint64_t{0};
}

SyscallResult SysSetsockopt(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  int len = args.i32(4);
  if (len < 0) return Errno{EINVAL};
  // Every option we know is small; a longer buffer only needs its head.
  std::string v(std::min(static_cast<size_t>(len), kMaxOptLen), '\0');
  if (!v.empty()) RETURN_IF_ERRNO(task.mm().CopyIn(args.ptr(3), v.data(), v.size()));
  RETURN_IF_ERRNO(sock->SetOption(task, args.i32(1), args.i32(2), v));
  return uint64_t{0};
}

}  // namespace usentry::sentry
