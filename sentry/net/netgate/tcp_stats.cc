// TCP_INFO byte counters.
#include "sentry/net/netgate/tcp_stats.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

namespace usentry::netgate {

std::optional<TcpBytes> ReadTcpBytes(int fd) {
  struct tcp_info info {};
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return std::nullopt;
  // Kernels older than 4.1 return a shorter struct without these fields.
  if (len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(info.tcpi_bytes_received)) {
    return std::nullopt;
  }
  // Sequence numbers, less those of the control flags: the SYN we sent (acknowledged as
  // soon as the connection exists), our FIN once acknowledged, the peer's FIN once
  // received. What is left is data.
  constexpr uint8_t kFinWait2 = 5, kTimeWait = 6, kCloseWait = 8, kLastAck = 9,
                    kClosing = 11;  // the kernel's tcp_states.h
  const uint8_t st = info.tcpi_state;
  uint64_t acked = info.tcpi_bytes_acked > 0 ? info.tcpi_bytes_acked - 1 : 0;
  if ((st == kFinWait2 || st == kTimeWait) && acked > 0) --acked;
  uint64_t received = info.tcpi_bytes_received;
  const bool fin_received =
      st == kCloseWait || st == kLastAck || st == kTimeWait || st == kClosing;
  if (fin_received && received > 0) --received;
  return TcpBytes{acked, received};
}

}  // namespace usentry::netgate
