// One message per call over a SOCK_SEQPACKET AF_UNIX socket, with at most one host FD
// riding along (SCM_RIGHTS): the transport of the gofer and netgate protocols.
#ifndef USENTRY_BASE_SEQPACKET_H_
#define USENTRY_BASE_SEQPACKET_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "base/sys_result.h"
#include "base/unique_fd.h"

namespace usentry {

// Largest message either side sends or accepts.
inline constexpr size_t kMaxPacketSize = 64 * 1024;

// Sends one message, with `fd` attached by SCM_RIGHTS when fd >= 0 (the caller keeps
// ownership of fd). Returns the send errno; EMSGSIZE if bytes exceed kMaxPacketSize.
// Never raises SIGPIPE.
SysStatus SendPacket(int sock, std::string_view bytes, int fd = -1);

struct Packet {
  std::string bytes;  // empty: the peer closed the socket
  UniqueFd fd;        // the donated FD, if one came with the message
};
// Receives one message (at most one FD; extra FDs are closed and reported as EBADMSG).
// A message longer than kMaxPacketSize is EMSGSIZE. Retries on EINTR. `flags` are
// recvmsg flags (MSG_DONTWAIT).
SysResult<Packet> RecvPacket(int sock, int flags = 0);

}  // namespace usentry

#endif  // USENTRY_BASE_SEQPACKET_H_
