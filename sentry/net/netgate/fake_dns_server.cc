#include "sentry/net/netgate/fake_dns_server.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace usentry::netgate::testing {
namespace {

struct SockAddr {
  sockaddr_storage ss{};
  socklen_t len = 0;
};

SockAddr Make(const IpAddress& ip, uint16_t port) {
  SockAddr a;
  if (ip.is_v4()) {
    auto* s = reinterpret_cast<sockaddr_in*>(&a.ss);
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    s->sin_addr = ip.ToIn();
    a.len = sizeof(*s);
  } else {
    auto* s = reinterpret_cast<sockaddr_in6*>(&a.ss);
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    memcpy(&s->sin6_addr, ip.bytes(), 16);
    a.len = sizeof(*s);
  }
  return a;
}

bool ReadFull(int fd, char* buf, size_t n) {
  while (n > 0) {
    ssize_t got = read(fd, buf, n);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      return false;
    }
    buf += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool WriteFull(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t put = write(fd, s.data() + off, s.size() - off);
    if (put <= 0) {
      if (put < 0 && errno == EINTR) continue;
      return false;
    }
    off += static_cast<size_t>(put);
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FakeDnsServer>> FakeDnsServer::Start(Handler handler,
                                                                    const IpAddress& bind) {
  if (!bind.IsLoopback()) return absl::InvalidArgumentError("FakeDnsServer binds loopback only");
  std::unique_ptr<FakeDnsServer> s(new FakeDnsServer(std::move(handler), bind));
  const int family = bind.is_v4() ? AF_INET : AF_INET6;
  // UDP on a kernel-chosen port, then TCP on the same number (retry if it is taken).
  for (int attempt = 0;; ++attempt) {
    if (attempt == 32) return absl::UnavailableError("no port free for both UDP and TCP");
    UniqueFd udp(socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!udp.valid()) return ErrnoStatus("socket(SOCK_DGRAM)");
    SockAddr any = Make(bind, 0);
    if (::bind(udp.get(), reinterpret_cast<sockaddr*>(&any.ss), any.len) != 0) {
      return ErrnoStatus(absl::StrCat("bind(", bind.ToString(), ")"));
    }
    SockAddr got;
    got.len = sizeof(got.ss);
    if (getsockname(udp.get(), reinterpret_cast<sockaddr*>(&got.ss), &got.len) != 0) {
      return ErrnoStatus("getsockname");
    }
    const uint16_t port =
        ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&got.ss)->sin_port
                                : reinterpret_cast<sockaddr_in6*>(&got.ss)->sin6_port);
    UniqueFd tcp(socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!tcp.valid()) return ErrnoStatus("socket(SOCK_STREAM)");
    SockAddr same = Make(bind, port);
    if (::bind(tcp.get(), reinterpret_cast<sockaddr*>(&same.ss), same.len) != 0) {
      if (errno == EADDRINUSE) continue;
      return ErrnoStatus("bind(tcp)");
    }
    if (listen(tcp.get(), 8) != 0) return ErrnoStatus("listen");
    s->udp_ = std::move(udp);
    s->tcp_ = std::move(tcp);
    s->port_ = port;
    break;
  }
  s->stop_ = UniqueFd(eventfd(0, EFD_CLOEXEC));
  if (!s->stop_.valid()) return ErrnoStatus("eventfd");
  s->thread_ = std::thread([p = s.get()] { p->Run(); });
  return s;
}

FakeDnsServer::~FakeDnsServer() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!write(stop_.get(), &one, sizeof(one));
    thread_.join();
  }
}

std::string FakeDnsServer::address() const {
  return bind_.is_v4() ? absl::StrCat(bind_.ToString(), ":", port_)
                       : absl::StrCat("[", bind_.ToString(), "]:", port_);
}

std::vector<std::string> FakeDnsServer::names() const {
  absl::MutexLock l(&mu_);
  return names_;
}

std::vector<std::string> FakeDnsServer::Handle(absl::string_view datagram, bool tcp) {
  dns::ParseResult r = dns::ParseQuery(datagram);
  if (r.status != dns::ParseStatus::kOk) return {};
  (tcp ? tcp_queries_ : udp_queries_)++;
  {
    absl::MutexLock l(&mu_);
    names_.push_back(r.query.question->name);
  }
  return handler_(r.query, tcp);
}

void FakeDnsServer::Run() {
  for (;;) {
    pollfd fds[3] = {{stop_.get(), POLLIN, 0}, {udp_.get(), POLLIN, 0}, {tcp_.get(), POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) return;
    if (fds[1].revents) ServeUdp();
    if (fds[2].revents) {
      UniqueFd conn(accept4(tcp_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (conn.valid()) ServeTcp(std::move(conn));
    }
  }
}

void FakeDnsServer::ServeUdp() {
  char buf[65536];
  SockAddr from;
  from.len = sizeof(from.ss);
  ssize_t n =
      recvfrom(udp_.get(), buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from.ss), &from.len);
  if (n < 0) return;
  for (const std::string& reply : Handle(absl::string_view(buf, static_cast<size_t>(n)), false)) {
    (void)sendto(udp_.get(), reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from.ss),
                 from.len);
  }
}

void FakeDnsServer::ServeTcp(UniqueFd conn) {
  // One connection at a time, each message a 2-byte length and the message; a stuck
  // client cannot hang the server thread for more than the receive timeout.
  timeval tv{1, 0};
  setsockopt(conn.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  for (;;) {
    unsigned char len[2];
    if (!ReadFull(conn.get(), reinterpret_cast<char*>(len), 2)) return;
    std::string msg(static_cast<size_t>(len[0] << 8 | len[1]), '\0');
    if (!ReadFull(conn.get(), msg.data(), msg.size())) return;
    for (const std::string& reply : Handle(msg, true)) {
      std::string framed;
      framed.push_back(static_cast<char>(reply.size() >> 8));
      framed.push_back(static_cast<char>(reply.size()));
      if (!WriteFull(conn.get(), framed + reply)) return;
    }
  }
}

std::string Answer(const dns::Query& q, dns::Rcode rcode,
                   const std::vector<dns::ResourceRecord>& answers) {
  return dns::BuildResponse(q, rcode, answers, 65535);
}

}  // namespace usentry::netgate::testing
