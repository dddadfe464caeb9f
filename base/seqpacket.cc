// SOCK_SEQPACKET messages with one optional FD.
#include "base/seqpacket.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace usentry {

SysStatus SendPacket(int sock, std::string_view bytes, int fd) {
  if (bytes.size() > kMaxPacketSize) return Errno{EMSGSIZE};
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &fd, sizeof(int));
  }
  while (true) {
    // MSG_NOSIGNAL: a closed peer must be an EPIPE result, not a SIGPIPE for the process.
    ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n >= 0) return SysOk();
    if (errno != EINTR) return Errno{errno};
  }
}

SysResult<Packet> RecvPacket(int sock, int flags) {
  Packet m;
  // One byte more than the limit so an oversized message shows up as MSG_TRUNC. The
  // buffer is reused: allocating and zeroing 64 KiB per message cost more than the
  // copy of what actually arrived (most messages are tens of bytes).
  thread_local std::unique_ptr<char[]> buf(new char[kMaxPacketSize + 1]);
  iovec iov{buf.get(), kMaxPacketSize + 1};
  // Room for a few FDs so a peer sending more than one cannot leak them into us
  // unnoticed: whatever arrives is owned and closed here.
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | flags);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Errno{errno};

  std::vector<UniqueFd> fds;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
      fds.emplace_back(fd);
    }
  }
  if ((msg.msg_flags & MSG_TRUNC) || static_cast<size_t>(n) > kMaxPacketSize) {
    return Errno{EMSGSIZE};
  }
  if ((msg.msg_flags & MSG_CTRUNC) || fds.size() > 1) return Errno{EBADMSG};
  m.bytes.assign(buf.get(), static_cast<size_t>(n));
  if (!fds.empty()) m.fd = std::move(fds[0]);
  return m;
}

}  // namespace usentry
