// FakeDnsServer: a scripted DNS server for tests, on loopback only (127.0.0.1 or ::1,
// kernel-chosen port), UDP and TCP on the same port. It parses queries with the sandbox
// codec (dns_message.h) and sends whatever the test's handler returns. Runs on a thread
// of its own, so the code under test can drive its own poll loop.
#ifndef USENTRY_SENTRY_NET_NETGATE_FAKE_DNS_SERVER_H_
#define USENTRY_SENTRY_NET_NETGATE_FAKE_DNS_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/ip_address.h"
#include "base/unique_fd.h"
#include "sentry/net/dns_message.h"

namespace usentry::netgate::testing {

namespace dns = ::usentry::sentry::net::dns;

class FakeDnsServer {
 public:
  // Given a query and whether it came over TCP, the datagrams (or TCP messages) to send
  // back, in order; none means silence. Runs on the server thread.
  using Handler = std::function<std::vector<std::string>(const dns::Query& q, bool tcp)>;

  // `bind` must be a loopback address (the tests never listen anywhere else).
  static absl::StatusOr<std::unique_ptr<FakeDnsServer>> Start(
      Handler handler, const IpAddress& bind = IpAddress::V4(0x7F000001));
  ~FakeDnsServer();

  uint16_t port() const { return port_; }
  // "127.0.0.1:PORT" or "[::1]:PORT", as UpstreamResolver takes it.
  std::string address() const;
  int udp_queries() const { return udp_queries_.load(); }
  int tcp_queries() const { return tcp_queries_.load(); }
  // Names asked so far, in order (either transport).
  std::vector<std::string> names() const;

 private:
  FakeDnsServer(Handler h, IpAddress bind) : handler_(std::move(h)), bind_(bind) {}
  void Run();
  void ServeUdp();
  void ServeTcp(UniqueFd conn);
  std::vector<std::string> Handle(absl::string_view datagram, bool tcp);

  Handler handler_;
  IpAddress bind_;
  uint16_t port_ = 0;
  UniqueFd udp_, tcp_, stop_;  // stop_: an eventfd the destructor signals
  std::thread thread_;
  std::atomic<int> udp_queries_{0}, tcp_queries_{0};
  mutable absl::Mutex mu_;
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
};

// A response to `q` with `rcode` and `answers`, without a size limit (the test decides
// what goes over UDP; c-ares itself switches to TCP for oversized UDP answers).
std::string Answer(const dns::Query& q, dns::Rcode rcode,
                   const std::vector<dns::ResourceRecord>& answers = {});

}  // namespace usentry::netgate::testing

#endif  // USENTRY_SENTRY_NET_NETGATE_FAKE_DNS_SERVER_H_
