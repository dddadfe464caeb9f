// Socket addresses for net_bench, and where `--target` may point: a loopback address, or
// the host alias a usentry sandbox writes to its /etc/hosts. Nothing here asks DNS, so
// net_bench run natively can only ever reach the host's loopback.
#ifndef USENTRY_BENCH_NET_ADDR_H_
#define USENTRY_BENCH_NET_ADDR_H_

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace usentry::bench {

// A socket address and how to print it.
struct SockAddr {
  sockaddr_storage ss{};
  socklen_t len = 0;
  std::string text;  // "127.0.0.1:5000", "[::1]:5000"
};

// 127.0.0.1:port.
SockAddr Loopback4(uint16_t port);

// "HOST:PORT" for --target. HOST is an IPv4 or [IPv6] loopback address, `localhost`
// (127.0.0.1), or `host.usentry.internal`, which is taken from `hosts_file` only: a
// usentry sandbox run with --allow-host-port lists it there, a host does not, so outside
// the sandbox it is an error rather than a DNS query. Any other host is refused.
absl::StatusOr<SockAddr> ParseTarget(absl::string_view text,
                                     const std::string& hosts_file = "/etc/hosts");

}  // namespace usentry::bench

#endif  // USENTRY_BENCH_NET_ADDR_H_
