// InetStack: configuration, routing of local destinations, listener and receiver lookup.
#include "sentry/net/inet_stack.h"

#include <netinet/in.h>

#include <vector>

#include "sentry/fsimpl/host_file.h"
#include "sentry/kernel/kernel.h"
#include "sentry/net/tcp_socket.h"
#include "sentry/net/udp_socket.h"

namespace usentry::sentry {

// Kernel::inet_stack() lives here so that kernel.cc need not know the type.
const std::shared_ptr<net::InetStack>& Kernel::inet_stack() {
  if (!inet_stack_) inet_stack_ = std::make_shared<net::InetStack>(this);
  return inet_stack_;
}

namespace net {

InetStack::InetStack(Kernel* kernel) : kernel_(kernel) {}

InetStack::~InetStack() = default;

void InetStack::Configure(std::unique_ptr<Egress> egress, std::unique_ptr<DnsService> dns) {
  egress_ = std::move(egress);
  dns_ = std::move(dns);
}

const SandboxNetwork& InetStack::network() const { return kernel_->options().network; }

IpAddress InetStack::LocalSourceFor(const IpAddress& dst) const {
  if (dst.is_v6()) return IpAddress::FromIn6(in6addr_loopback);
  if (network().egress && dst == SandboxAddress()) return dst;
  return IpAddress::V4(INADDR_LOOPBACK);  // Linux's 127/8 route has src 127.0.0.1
}

IpAddress InetStack::SourceFor(const IpAddress& dst) const {
  if (IsLocal(dst) || !network().egress) return LocalSourceFor(dst);
  return SandboxAddress();
}

std::shared_ptr<fsimpl::HostPoller> InetStack::poller() {
  return fsimpl::KernelHostPoller(*kernel_);
}

namespace {

// The best-scoring candidates of a lookup; ties are SO_REUSEPORT groups (or a dual-stack
// and an IPv4 socket that bound with SO_REUSEADDR), and `hash` picks one per flow.
template <typename T>
T* PickBest(const std::vector<std::pair<int, T*>>& scored, uint32_t hash) {
  int best = -1;
  std::vector<T*> top;
  for (const auto& [score, s] : scored) {
    if (score > best) {
      best = score;
      top.clear();
    }
    if (score == best) top.push_back(s);
  }
  return top.empty() ? nullptr : top[hash % top.size()];
}

}  // namespace

std::shared_ptr<TcpSocket> InetStack::FindListener(const IpAddress& dst, uint16_t port,
                                                   uint32_t flow_hash) {
  std::vector<std::pair<int, TcpSocket*>> scored;
  for (PortUser* u : tcp_ports_.Users(port)) {
    auto* s = static_cast<TcpSocket*>(static_cast<InetSocket*>(u));
    if (s->state() != kTcpListen) continue;
    int score = s->LocalMatchScore(dst);
    if (score >= 0) scored.emplace_back(score, s);
  }
  TcpSocket* s = PickBest(scored, flow_hash);
  if (s == nullptr) return nullptr;
  // weak_from_this: a socket being destroyed is still in the table until its base goes.
  return std::static_pointer_cast<TcpSocket>(s->weak_from_this().lock());
}

std::shared_ptr<UdpSocket> InetStack::FindUdpReceiver(const IpAddress& dst, uint16_t dport,
                                                      const IpAddress& src, uint16_t sport,
                                                      bool udplite) {
  std::vector<std::pair<int, UdpSocket*>> scored;
  for (PortUser* u : (udplite ? udplite_ports_ : udp_ports_).Users(dport)) {
    auto* s = static_cast<UdpSocket*>(static_cast<InetSocket*>(u));
    int score = s->ReceiveScore(dst, src, sport);
    if (score >= 0) scored.emplace_back(score, s);
  }
  UdpSocket* s = PickBest(scored, sport);
  if (s == nullptr) return nullptr;
  return std::static_pointer_cast<UdpSocket>(s->weak_from_this().lock());
}

}  // namespace net
}  // namespace usentry::sentry
