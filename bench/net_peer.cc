// net_bench's peer (see net_peer.h): accept loop, echo, sink and UDP echo.
#include "bench/net_peer.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/net_addr.h"

namespace usentry::bench {
namespace {

void SetNoDelay(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// SO_RCVTIMEO; zero clears it.
void SetRecvTimeout(int fd, int seconds) {
  timeval tv{seconds, 0};
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

void Echo(UniqueFd fd) {
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd.get(), buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || !SendAll(fd.get(), buf, n).ok()) return;
  }
}

// Reads into a buffer (a real reader copies the data; MSG_TRUNC would not) and counts.
void Sink(UniqueFd fd) {
  std::vector<char> buf(256 << 10);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = recv(fd.get(), buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // a reset: the client gave up, nobody reads a count
    if (n == 0) break;
    total += n;
  }
  (void)SendAll(fd.get(), &total, sizeof(total));
}

void UdpEcho(int fd) {
  char buf[65536];
  for (;;) {
    sockaddr_storage from;
    socklen_t len = sizeof(from);
    ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    (void)sendto(fd, buf, n, 0, reinterpret_cast<sockaddr*>(&from), len);
  }
}

// One accepted connection: read its mode byte and hand it on. A client that connects and
// says nothing holds up the accept loop for at most the timeout.
void Dispatch(UniqueFd c) {
  SetRecvTimeout(c.get(), 5);
  char mode = 0;
  ssize_t n;
  do {
    n = recv(c.get(), &mode, 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return;
  switch (mode) {
    case kModeAccept:
      return;  // closing is the answer
    case kModeEcho:
      SetRecvTimeout(c.get(), 0);
      SetNoDelay(c.get());
      std::thread(Echo, std::move(c)).detach();
      return;
    case kModeSink:
      SetRecvTimeout(c.get(), 0);
      std::thread(Sink, std::move(c)).detach();
      return;
    default:
      return;
  }
}

absl::StatusOr<PeerSockets> TryBind(uint16_t port) {
  PeerSockets s;
  s.tcp.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.tcp.valid()) return ErrnoStatus("socket(AF_INET, SOCK_STREAM)");
  int one = 1;
  (void)setsockopt(s.tcp.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  SockAddr a = Loopback4(port);
  if (bind(s.tcp.get(), reinterpret_cast<sockaddr*>(&a.ss), a.len) != 0) {
    return ErrnoStatus(absl::StrCat("bind(tcp ", a.text, ")"));
  }
  if (listen(s.tcp.get(), 128) != 0) return ErrnoStatus("listen");
  socklen_t len = a.len;
  if (getsockname(s.tcp.get(), reinterpret_cast<sockaddr*>(&a.ss), &len) != 0) {
    return ErrnoStatus("getsockname");
  }
  s.port = ntohs(reinterpret_cast<sockaddr_in&>(a.ss).sin_port);
  s.udp.reset(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s.udp.valid()) return ErrnoStatus("socket(AF_INET, SOCK_DGRAM)");
  a = Loopback4(s.port);
  if (bind(s.udp.get(), reinterpret_cast<sockaddr*>(&a.ss), a.len) != 0) {
    return ErrnoStatus(absl::StrCat("bind(udp ", a.text, ")"));
  }
  return s;
}

}  // namespace

absl::StatusOr<PeerSockets> BindLoopbackPeer(uint16_t port) {
  if (port != 0) return TryBind(port);
  // The kernel picks a free TCP port; the same UDP port is then almost always free too.
  absl::Status last;
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto s = TryBind(0);
    if (s.ok()) return s;
    last = s.status();
  }
  return last;
}

absl::Status Serve(PeerSockets socks, int lifeline) {
  std::thread(UdpEcho, socks.udp.release()).detach();
  for (;;) {
    pollfd p[2] = {{socks.tcp.get(), POLLIN, 0}, {lifeline, POLLIN, 0}};
    if (poll(p, lifeline >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("poll");
    }
    if (lifeline >= 0 && p[1].revents != 0) return absl::OkStatus();
    if (!(p[0].revents & POLLIN)) continue;
    int c = accept4(socks.tcp.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0) Dispatch(UniqueFd(c));  // failures (ECONNABORTED...) are the client's
  }
}

absl::Status SendAll(int fd, const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("send");
    }
    p += n;
    len -= n;
  }
  return absl::OkStatus();
}

absl::Status RecvAll(int fd, void* data, size_t len) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = recv(fd, p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("recv");
    }
    if (n == 0) return absl::UnavailableError("recv: the peer closed the connection");
    p += n;
    len -= n;
  }
  return absl::OkStatus();
}

}  // namespace usentry::bench
