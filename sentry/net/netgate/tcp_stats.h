// Bytes a TCP socket moved, as the host kernel counts them (TCP_INFO). Separate so that
// <linux/tcp.h> (which clashes with <netinet/tcp.h>) stays in one file.
#ifndef USENTRY_SENTRY_NET_NETGATE_TCP_STATS_H_
#define USENTRY_SENTRY_NET_NETGATE_TCP_STATS_H_

#include <cstdint>
#include <optional>

namespace usentry::netgate {

struct TcpBytes {
  uint64_t acked = 0;     // sent and acknowledged by the peer (tcpi_bytes_acked)
  uint64_t received = 0;  // tcpi_bytes_received
};
// nullopt if TCP_INFO fails (not a TCP socket, an old kernel).
std::optional<TcpBytes> ReadTcpBytes(int fd);

}  // namespace usentry::netgate

#endif  // USENTRY_SENTRY_NET_NETGATE_TCP_STATS_H_
