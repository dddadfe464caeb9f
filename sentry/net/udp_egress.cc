// UdpSocket through Egress: the first datagram to a destination outside the sandbox
// asks Egress for a connected host UDP socket (a "flow"); datagrams wait in the flow
// until netgate donates it, later ones go straight to it. Receives take datagrams from
// the flows' host sockets, each seen as coming from its destination.
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>

#include "sentry/fsimpl/host_poller.h"
#include "sentry/kernel/task.h"
#include "sentry/net/socket_wait.h"
#include "sentry/net/udp_socket.h"

namespace usentry::sentry::net {
namespace {

std::atomic<uint64_t> next_flow_serial{1};

ssize_t SendDatagram(int fd, const std::vector<uint8_t>& d) {
  iovec v{const_cast<uint8_t*>(d.data()), d.size()};
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  return sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
}

}  // namespace

UdpSocket::Flow* UdpSocket::FindFlow(const IpAddress& target, uint16_t port) {
  for (auto& f : flows_) {
    if (f->target == target && f->dst.port == port) return f.get();
  }
  return nullptr;
}

UdpSocket::Flow* UdpSocket::FindFlowBySerial(uint64_t serial) {
  for (auto& f : flows_) {
    if (f->serial == serial) return f.get();
  }
  return nullptr;
}

SysStatus UdpSocket::SendEgress(Task* task, std::vector<uint8_t> data, const InetAddr& dst,
                                const IpAddress& target, bool nonblocking) {
  Flow* f = FindFlow(target, dst.port);
  if (f == nullptr) {
    if (flows_.size() >= kMaxEgressFlows) return Errno{ENOBUFS};
    Egress* egress = stack_->egress();
    if (egress == nullptr) return Errno{ENETUNREACH};  // no way out of this sandbox
    if (task == nullptr) return Errno{EINVAL};
    auto flow = std::make_unique<Flow>();
    flow->serial = next_flow_serial++;
    flow->dst = Endpoint{dst.ip, dst.port};
    flow->target = target;
    flow->queued.push_back(std::move(data));
    const uint64_t serial = flow->serial;
    const Endpoint ep = flow->dst;
    flows_.push_back(std::move(flow));
    std::weak_ptr<UdpSocket> weak = self();
    InetStack* stack = stack_.get();
    SysStatus st = egress->Connect(
        *task, Transport::kUdp, ep, [weak, stack, ep, serial](SysResult<EgressConnection> r) {
          auto s = weak.lock();
          if (s && s->FindFlowBySerial(serial) != nullptr) {
            s->FlowDone(serial, std::move(r));
            return;
          }
          if (r.ok() && stack->egress() != nullptr) {  // the socket is gone
            uint64_t id = r.value().id;
            r.value().fd.reset();
            stack->egress()->Closed(id, Transport::kUdp, ep, 0, 0);
          }
        });
    if (!st.ok()) {
      flows_.erase(std::remove_if(flows_.begin(), flows_.end(),
                                  [serial](const auto& x) { return x->serial == serial; }),
                   flows_.end());
      return st;
    }
    return SysOk();
  }
  if (f->pending) {
    if (f->queued.size() < kMaxPendingDatagrams) f->queued.push_back(std::move(data));
    return SysOk();
  }
  const uint64_t serial = f->serial;
  return WaitLoop(task, nonblocking, sndtimeo_, {&wq_}, kWritableEvents, [&]() -> SysStatus {
    Flow* fl = FindFlowBySerial(serial);
    if (fl == nullptr) return Errno{ENETUNREACH};
    if (SendDatagram(fl->conn.fd.get(), data) >= 0) {
      fl->bytes_out += data.size();
      return SysOk();
    }
    int e = errno;
    if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR) {
      if (fl->poller) (void)fl->poller->Arm(fl->conn.fd.get(), POLLOUT);
      return Errno{EAGAIN};
    }
    return Errno{e};
  });
}

void UdpSocket::FlowDone(uint64_t serial, SysResult<EgressConnection> r) {
  Flow* f = FindFlowBySerial(serial);
  if (!r.ok()) {
    // The dial failed: what was queued is lost; a connected socket hears of it like
    // of an ICMP error. A later datagram asks Egress again.
    bool peer = ConnectedTo(f->target, f->dst.port);
    flows_.erase(std::remove_if(flows_.begin(), flows_.end(),
                                [serial](const auto& x) { return x->serial == serial; }),
                 flows_.end());
    if (peer) {
      error_ = r.error();
      wq_.Notify(POLLERR);
    }
    return;
  }
  f->conn = std::move(r).value();
  f->pending = false;
  f->poller = stack_->poller();
  if (f->poller) {
    f->poller->Subscribe(f->conn.fd.get(), this, [this](EventMask ev) { wq_.Notify(ev); });
  }
  for (const auto& d : f->queued) {
    if (SendDatagram(f->conn.fd.get(), d) >= 0) f->bytes_out += d.size();
  }
  f->queued.clear();
  wq_.Notify(kAllEvents);
}

void UdpSocket::CloseFlow(Flow& f) {
  if (f.pending) return;  // `done` will close what it gets and tell Egress
  if (f.poller) f.poller->Unsubscribe(f.conn.fd.get(), this);
  const uint64_t id = f.conn.id;
  f.conn.fd.reset();
  if (Egress* e = stack_->egress()) e->Closed(id, Transport::kUdp, f.dst, f.bytes_in, f.bytes_out);
}

bool UdpSocket::RecvFromFlows(absl::Span<const iovec> dst, int flags, RecvResult* out, size_t* n) {
  size_t total = 0;
  for (const iovec& v : dst) total += v.iov_len;
  const size_t count = flows_.size();
  for (size_t i = 0; i < count; ++i) {
    Flow& f = *flows_[(next_flow_ + i) % count];
    if (f.pending) continue;
    while (true) {
      std::vector<iovec> iov(dst.begin(), dst.end());
      msghdr m{};
      m.msg_iov = iov.data();
      m.msg_iovlen = std::min<size_t>(iov.size(), IOV_MAX);
      ssize_t got = recvmsg(f.conn.fd.get(), &m, MSG_DONTWAIT | MSG_TRUNC | (flags & MSG_PEEK));
      if (got < 0) break;
      if (connected_ && !ConnectedTo(f.target, f.dst.port)) {
        // A connected socket takes datagrams from its peer only; drop the others.
        if (flags & MSG_PEEK) (void)recvmsg(f.conn.fd.get(), &m, MSG_DONTWAIT);
        continue;
      }
      const size_t len = static_cast<size_t>(got);
      if (!(flags & MSG_PEEK)) f.bytes_in += len;
      out->msg_len = len;
      out->copied = std::min(len, total);
      if (len > total) out->msg_flags |= MSG_TRUNC;
      out->from = FormatInetSockaddr(family_, InetAddr{f.dst.ip, f.dst.port});
      PacketInfo info;
      info.v6 = !f.target.is_v4();
      info.dst = info.v6 ? IpAddress::FromIn6(in6addr_any) : SandboxAddress();
      info.ifindex = 2;
      out->control = ReceiveControl(info);
      next_flow_ = (next_flow_ + i + 1) % count;
      *n = out->copied;
      return true;
    }
  }
  return false;
}

bool UdpSocket::FlowsReadable() {
  for (const auto& f : flows_) {
    if (f->pending) continue;
    pollfd p{f->conn.fd.get(), POLLIN, 0};
    if (poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) return true;
  }
  return false;
}

void UdpSocket::ArmFlows() {
  for (const auto& f : flows_) {
    if (!f->pending && f->poller) (void)f->poller->Arm(f->conn.fd.get(), POLLIN);
  }
}

}  // namespace usentry::sentry::net
