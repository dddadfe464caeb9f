// UdpSocket life cycle, association (connect/disconnect), delivery into the receive
// queue, shutdown, readiness, ioctls and SOL_UDP options.
#include "sentry/net/udp_socket.h"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>

#include <algorithm>

#include "sentry/kernel/task.h"
#include "sentry/mm/memory_manager.h"

namespace usentry::sentry::net {
namespace {

constexpr EventMask kReadable = kReadableEvents;
constexpr EventMask kWritable = kWritableEvents;
// Charged per queued datagram on top of its payload, like an skb's truesize on Linux
// (which keeps a few hundred small datagrams in the default SO_RCVBUF).
constexpr size_t kDatagramOverhead = 768;

// SOL_UDP option names (linux/udp.h).
constexpr int kUdpCork = 1;
constexpr int kUdpNoCheck6Tx = 101;
constexpr int kUdpNoCheck6Rx = 102;
constexpr int kUdpSegment = 103;
constexpr int kUdpGro = 104;
constexpr int kUdpliteSendCscov = 10;
constexpr int kUdpliteRecvCscov = 11;

}  // namespace

std::shared_ptr<UdpSocket> UdpSocket::New(std::shared_ptr<InetStack> stack, int family,
                                          int status_flags, uint32_t uid, uint32_t gid,
                                          int protocol) {
  return std::make_shared<UdpSocket>(std::move(stack), family, status_flags, uid, gid, protocol);
}

UdpSocket::UdpSocket(std::shared_ptr<InetStack> stack, int family, int status_flags, uint32_t uid,
                     uint32_t gid, int protocol)
    : InetSocket(std::move(stack), family, SOCK_DGRAM, protocol, status_flags, uid, gid) {}

UdpSocket::~UdpSocket() {
  for (auto& f : flows_) CloseFlow(*f);
}

// --- association ---

bool UdpSocket::ConnectedTo(const IpAddress& target, uint16_t port) const {
  return connected_ && peer_.ip.Unmapped() == target && peer_.port == port;
}

SysStatus UdpSocket::Connect(Task& task, const std::string& sockaddr) {
  ASSIGN_OR_RETURN_ERRNO(sa_family_t f, SockaddrFamily(sockaddr));
  if (f == AF_UNSPEC) return Disconnect();
  // Linux binds a port before it looks at the address (inet_dgram_connect).
  if (!AutobindPort(EAGAIN).ok()) return Errno{EAGAIN};
  ASSIGN_OR_RETURN_ERRNO(InetAddr dst, ParseDgramConnectAddress(family_, v6only_, sockaddr));
  IpAddress target = RouteTarget(dst.ip);
  if (family_ == AF_INET6 && target.is_v4() && v6only_) return Errno{ENETUNREACH};
  const bool broadcast = target.is_v4() && target.v4_host_order() == 0xffffffff;
  if (broadcast && !flag_option(SO_BROADCAST)) return Errno{EACCES};
  const bool local = stack_->IsLocal(target);
  // Without eth0 there is no route out, except to the sandbox's resolver service.
  if (!local && (udplite() || (!stack_->network().egress && dst.port != kDnsPort))) {
    return Errno{ENETUNREACH};
  }
  ChooseSourceAddress(stack_->SourceFor(target));
  connected_ = true;
  peer_ = InetAddr{InFamily(target), dst.port};
  wq_.Notify(kAllEvents);
  return SysOk();
}

SysStatus UdpSocket::Disconnect() {
  // Linux's udp_disconnect also forgets an automatic binding (getsockname: port 0).
  connected_ = false;
  peer_ = InetAddr{};
  ForgetAutomaticBinding();
  wq_.Notify(kAllEvents);
  return SysOk();
}

SysStatus UdpSocket::Shutdown(int how) {
  if (how < SHUT_RD || how > SHUT_RDWR) return Errno{EINVAL};
  shutdown_ |= how + 1;
  wq_.Notify(kAllEvents);
  // Linux sets the flags (waking readers) and still says ENOTCONN when unconnected.
  return connected_ ? SysOk() : Errno{ENOTCONN};
}

SysResult<std::string> UdpSocket::PeerName() {
  if (!connected_) return Errno{ENOTCONN};
  return FormatInetSockaddr(family_, peer_);
}

SysResult<int> UdpSocket::PathMtu() const {
  if (!connected_) return Errno{ENOTCONN};
  return stack_->IsLocal(peer_.ip.Unmapped()) ? kLoopbackMtu : kEthMtu;
}

// --- delivery ---

int UdpSocket::ReceiveScore(const IpAddress& dst, const IpAddress& src, uint16_t sport) const {
  int score = LocalMatchScore(dst);
  if (score < 0) return -1;
  if (connected_) {
    if (!ConnectedTo(src, sport)) return -1;
    score += 8;
  }
  return score;
}

void UdpSocket::Deliver(std::vector<uint8_t> data, const InetAddr& from, const PacketInfo& info) {
  if (connected_ && !ConnectedTo(from.ip.Unmapped(), from.port)) return;
  // Linux drops once the queue is already past SO_RCVBUF (so one datagram may overshoot).
  if (rx_charged_ > static_cast<size_t>(rcvbuf_)) return;
  Datagram d;
  d.charge = data.size() + kDatagramOverhead;
  d.data = std::move(data);
  d.from = from;
  d.info = info;
  rx_charged_ += d.charge;
  rx_.push_back(std::move(d));
  wq_.Notify(kReadable);
}

void UdpSocket::PortUnreachable(const InetAddr& dst) {
  // The ICMP error reaches the socket the datagram came from only if it is connected
  // to that destination, or asked for errors (IP_RECVERR) while unconnected.
  if (connected_) {
    if (!ConnectedTo(dst.ip.Unmapped(), dst.port)) return;
  } else if (!ip_.flag(SOL_IP, IP_RECVERR) && !ip_.flag(SOL_IPV6, IPV6_RECVERR)) {
    return;
  }
  error_ = ECONNREFUSED;
  wq_.Notify(POLLERR);
}

// --- readiness, ioctl ---

EventMask UdpSocket::Readiness(EventMask mask) {
  EventMask r = error_ ? POLLERR : 0;
  if (shutdown_ & kShutRd) r |= kReadable | POLLRDHUP;
  if (shutdown_ == kShutBoth) r |= POLLHUP;
  if (!rx_.empty() || FlowsReadable()) {
    r |= kReadable;
  } else if (mask & POLLIN) {
    ArmFlows();
  }
  r |= kWritable;  // a datagram never waits for the receiver
  return r & (mask | POLLERR | POLLHUP);
}

SysResult<uint64_t> UdpSocket::Ioctl(Task& task, uint64_t cmd, uint64_t arg) {
  int amount = 0;
  switch (cmd) {
    case SIOCINQ:
      // The payload size of the next datagram.
      if (!rx_.empty()) {
        amount = static_cast<int>(rx_.front().data.size());
      } else {
        for (const auto& f : flows_) {
          if (f->pending) continue;
          int n = 0;
          if (ioctl(f->conn.fd.get(), FIONREAD, &n) == 0 && n > 0) {
            amount = n;
            break;
          }
        }
      }
      break;
    case SIOCOUTQ:
      amount = 0;  // datagrams leave at once
      break;
    default:
      return Socket::Ioctl(task, cmd, arg);
  }
  RETURN_IF_ERRNO(task.mm().CopyOutObj(mm::GuestAddr(arg), amount));
  return uint64_t{0};
}

// --- SOL_UDP ---

SysResult<std::string> UdpSocket::GetTransportOption(Task& task, int level, int name) {
  switch (name) {
    case kUdpCork:
      return OptionBytes(int{cork_});
    case kUdpNoCheck6Tx:
      return OptionBytes(no_check6_tx_);
    case kUdpNoCheck6Rx:
      return OptionBytes(no_check6_rx_);
    case kUdpSegment:
      return OptionBytes(udp_segment_);
    case kUdpGro:
      return OptionBytes(udp_gro_);
    case kUdpliteSendCscov:
    case kUdpliteRecvCscov:
      if (!udplite()) return Errno{ENOPROTOOPT};
      return OptionBytes(name == kUdpliteSendCscov ? send_cscov_ : recv_cscov_);
    default:
      return Errno{ENOPROTOOPT};
  }
}

SysStatus UdpSocket::SetTransportOption(Task& task, int level, int name, const std::string& value) {
  ASSIGN_OR_RETURN_ERRNO(int v, OptionInt(value));
  switch (name) {
    case kUdpCork:
      // Corking only merges datagrams on the wire; each send stays one datagram here.
      cork_ = v != 0;
      return SysOk();
    case kUdpNoCheck6Tx:
      no_check6_tx_ = v != 0;
      return SysOk();
    case kUdpNoCheck6Rx:
      no_check6_rx_ = v != 0;
      return SysOk();
    case kUdpSegment:
      if (v < 0 || v > 0xffff) return Errno{EINVAL};
      udp_segment_ = v;
      return SysOk();
    case kUdpGro:
      udp_gro_ = v != 0;
      return SysOk();
    case kUdpliteSendCscov:
    case kUdpliteRecvCscov:
      // Linux's bounds: 0 (whole datagram), else at least the 8-byte header.
      if (!udplite()) return Errno{ENOPROTOOPT};
      v = v != 0 && v < 8 ? 8 : std::min(v, 0xffff);
      (name == kUdpliteSendCscov ? send_cscov_ : recv_cscov_) = v;
      return SysOk();
    default:
      return Errno{ENOPROTOOPT};
  }
}

}  // namespace usentry::sentry::net
