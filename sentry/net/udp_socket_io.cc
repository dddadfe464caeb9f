// UdpSocket data path: sendto/sendmsg with Linux's checks in Linux's order, local
// delivery, DNS datagrams to DnsService; receive from the local queue and the egress
// host sockets; read(2)/write(2).
#include <netinet/in.h>

#include <algorithm>

#include "sentry/kernel/task.h"
#include "sentry/net/socket_wait.h"
#include "sentry/net/udp_socket.h"

namespace usentry::sentry::net {
namespace {

constexpr EventMask kReadable = kReadableEvents;
constexpr size_t kMaxUdpLength = 0xffff;

}  // namespace

SysResult<size_t> UdpSocket::SendMsg(Task* task, SendArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(size_t total, vfs::IovecsLength(args.data));
  if (total > kMaxUdpLength) return Errno{EMSGSIZE};
  if (args.flags & MSG_OOB) return Errno{EOPNOTSUPP};
  // Linux binds a port before udp_sendmsg looks at anything else (inet_send_prepare).
  if (!AutobindPort(EAGAIN).ok()) return Errno{EAGAIN};
  std::optional<InetAddr> dst;
  if (args.name) {
    ASSIGN_OR_RETURN_ERRNO(dst, ParseDgramSendAddress(family_, v6only_, *args.name));
  }
  if (!dst) {
    if (!connected_) return Errno{EDESTADDRREQ};
    dst = peer_;
  }
  const IpAddress target = RouteTarget(dst->ip);
  if (total > (target.is_v4() ? kMaxUdpPayloadV4 : kMaxUdpPayloadV6)) return Errno{EMSGSIZE};
  const bool broadcast = target.is_v4() && target.v4_host_order() == 0xffffffff;
  if (broadcast && !flag_option(SO_BROADCAST)) return Errno{EACCES};
  ASSIGN_OR_RETURN_ERRNO(PacketInfo info, OutgoingPacket(args.control, target));
  if (error_ != 0) return Errno{std::exchange(error_, 0)};
  if (shutdown_ & kShutWr) return Errno{EPIPE};
  std::vector<uint8_t> data = GatherSpans(args.data, 0, total);
  const bool local = stack_->IsLocal(target);
  if (udplite() && !local) return Errno{ENETUNREACH};  // netgate dials UDP only
  if (!udplite() && dst->port == kDnsPort && (target == ResolverAddress() || !local)) {
    RETURN_IF_ERRNO(SendDns(task, std::move(data), *dst));
  } else if (local) {
    RETURN_IF_ERRNO(SendLocal(data, *dst, target, info));
  } else {
    RETURN_IF_ERRNO(SendEgress(task, std::move(data), *dst, target, nonblocking_for(args.flags)));
  }
  return total;
}

SysStatus UdpSocket::SendLocal(const std::vector<uint8_t>& data, const InetAddr& dst,
                               const IpAddress& target, const PacketInfo& info) {
  IpAddress src = local_.ip.Unmapped();
  if (src.IsUnspecified()) src = stack_->LocalSourceFor(target);
  // A socket bound to an address of the other family has no source for this one.
  if (src.is_v4() != target.is_v4()) return Errno{EAFNOSUPPORT};
  std::shared_ptr<UdpSocket> receiver =
      stack_->FindUdpReceiver(target, dst.port, src, local_.port, udplite());
  if (receiver == nullptr) {
    PortUnreachable(InetAddr{target, dst.port});
    return SysOk();
  }
  receiver->Deliver(data, InetAddr{receiver->InFamily(src), local_.port}, info);
  return SysOk();
}

SysStatus UdpSocket::SendDns(Task* task, std::vector<uint8_t> data, const InetAddr& dst) {
  DnsService* dns = stack_->dns();
  // No resolver service: the query is lost, as to a server that does not answer.
  if (dns == nullptr || task == nullptr) return SysOk();
  // The answer comes from where the query went (glibc's resolver checks the source).
  const InetAddr from{dst.ip, dst.port};
  PacketInfo info;
  info.v6 = !from.ip.Unmapped().is_v4();
  info.dst = stack_->SourceFor(from.ip.Unmapped());
  std::weak_ptr<UdpSocket> weak = self();
  dns->Query(*task, std::string(data.begin(), data.end()),
             [weak, from, info](std::string response) {
               if (auto s = weak.lock()) {
                 s->Deliver(std::vector<uint8_t>(response.begin(), response.end()), from, info);
               }
             });
  return SysOk();
}

// --- receive ---

SysResult<size_t> UdpSocket::Receive(Task* task, absl::Span<const iovec> dst, int flags,
                                     RecvResult* out, absl::Duration timeout) {
  if (flags & MSG_ERRQUEUE) {
    // No error queue entries are made (no sock_extended_err to give). Reading it clears
    // the pending error as on Linux, so that a caller polling POLLERR does not spin.
    if (ip_.flag(SOL_IP, IP_RECVERR) || ip_.flag(SOL_IPV6, IPV6_RECVERR)) error_ = 0;
    return Errno{EAGAIN};
  }
  ASSIGN_OR_RETURN_ERRNO(size_t total, vfs::IovecsLength(dst));
  const bool peek = flags & MSG_PEEK;
  SysStatus st =
      WaitLoop(task, nonblocking_for(flags), timeout, {&wq_}, kReadable, [&]() -> SysStatus {
        // Linux reports a pending error before looking at the queue.
        if (error_ != 0) return Errno{std::exchange(error_, 0)};
        if (!rx_.empty()) {
          Datagram& d = rx_.front();
          size_t n = std::min(total, d.data.size());
          CopyToSpans(dst, 0, d.data.data(), n);
          out->copied = n;
          out->msg_len = d.data.size();
          if (n < d.data.size()) out->msg_flags |= MSG_TRUNC;
          out->from = FormatInetSockaddr(family_, d.from);
          out->control = ReceiveControl(d.info);
          if (!peek) {
            rx_charged_ -= d.charge;
            rx_.pop_front();
          }
          return SysOk();
        }
        size_t n;
        if (RecvFromFlows(dst, flags, out, &n)) return SysOk();
        if (shutdown_ & kShutRd) return SysOk();  // 0 bytes, no sender
        ArmFlows();
        return Errno{EAGAIN};
      });
  if (!st.ok()) return Errno{st.error()};
  return (flags & MSG_TRUNC) ? out->msg_len : out->copied;
}

// --- read(2)/write(2) ---

}  // namespace usentry::sentry::net
