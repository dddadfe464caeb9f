// The peer net_bench measures against: a TCP acceptor, echo and sink on one port (the
// client's first byte picks the service) and a UDP echo on the same port number. Run as a
// child of net_bench (in-sandbox loopback) or as `net_bench --serve` on the host.
#ifndef USENTRY_BENCH_NET_PEER_H_
#define USENTRY_BENCH_NET_PEER_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/unique_fd.h"

namespace usentry::bench {

// The first byte a client sends on a TCP connection.
inline constexpr char kModeAccept = 'a';  // the peer closes at once; the client reads EOF
inline constexpr char kModeEcho = 'e';    // every later byte is sent back
// Everything later is read and discarded; at the client's EOF (shutdown) the peer sends
// the number of bytes it read (uint64_t, host order: both ends are on this machine) and
// closes.
inline constexpr char kModeSink = 's';

// The peer's sockets: a listening TCP socket and a UDP socket bound to the same port.
struct PeerSockets {
  UniqueFd tcp;
  UniqueFd udp;
  uint16_t port = 0;
};

// Binds both on 127.0.0.1:`port`; port 0 picks a port free for TCP and UDP alike. The
// host's loopback only: nothing here ever listens on another address.
absl::StatusOr<PeerSockets> BindLoopbackPeer(uint16_t port);

// Serves `socks` until `lifeline` (if >= 0) becomes readable or hangs up: its other end
// is held by the process the peer serves, so the peer goes when that process does, even
// if it is killed. With lifeline < 0 it serves until the process is killed. Each echo or
// sink connection gets a thread; accept connections are answered inline. Returns only
// on a lifeline event (OK) or a failing poll.
absl::Status Serve(PeerSockets socks, int lifeline);

// send()/recv() of exactly `len` bytes, retrying short transfers and EINTR. RecvAll fails
// with an error naming EOF if the peer closes first.
absl::Status SendAll(int fd, const void* data, size_t len);
absl::Status RecvAll(int fd, void* data, size_t len);

}  // namespace usentry::bench

#endif  // USENTRY_BENCH_NET_PEER_H_
