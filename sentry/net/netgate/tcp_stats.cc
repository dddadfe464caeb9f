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
  // Acknowledged sequence numbers, less the SYN's and, if the app shut down its side and
  // the peer acknowledged that, the FIN's: what is left is data.
  uint64_t acked = info.tcpi_bytes_acked > 0 ? info.tcpi_bytes_acked - 1 : 0;
  constexpr uint8_t kFinWait2 = 5, kTimeWait = 6;  // the kernel's tcp_states.h
  const bool fin_acked = info.tcpi_state == kFinWait2 || info.tcpi_state == kTimeWait;
  if (fin_acked && acked > 0) --acked;
  return TcpBytes{acked, info.tcpi_bytes_received};
}

}  // namespace usentry::netgate
