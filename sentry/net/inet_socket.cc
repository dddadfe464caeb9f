// InetSocket: local names, port-table entries, bind(2).
#include "sentry/net/inet_socket.h"

#include <limits.h>
#include <netinet/in.h>

#include "sentry/kernel/task.h"

namespace usentry::sentry::net {
namespace {

IpAddress AnyOf(int family) {
  return family == AF_INET ? IpAddress() : IpAddress::FromIn6(in6addr_any);
}

bool IsV4Multicast(const IpAddress& ip) { return ip.is_v4() && (ip.v4_host_order() >> 28) == 0xe; }
bool IsV4Broadcast(const IpAddress& ip) { return ip.is_v4() && ip.v4_host_order() == 0xffffffff; }
bool IsV6Multicast(const IpAddress& ip) { return ip.is_v6() && ip.bytes()[0] == 0xff; }
bool IsV6LinkLocal(const IpAddress& ip) {
  return ip.is_v6() && ip.bytes()[0] == 0xfe && (ip.bytes()[1] & 0xc0) == 0x80;
}

}  // namespace

InetSocket::InetSocket(std::shared_ptr<InetStack> stack, int family, int type, int protocol,
                       int status_flags, uint32_t uid, uint32_t gid)
    : Socket(family, type, protocol, status_flags, uid, gid), stack_(std::move(stack)) {
  local_.ip = AnyOf(family);
}

InetSocket::~InetSocket() {
  if (local_.port != 0) ports().Unbind(this, local_.port);
}

PortTable& InetSocket::ports() const {
  if (transport() == Transport::kTcp) return stack_->tcp_ports();
  return protocol_ == IPPROTO_UDPLITE ? stack_->udplite_ports() : stack_->udp_ports();
}

BindingInfo InetSocket::binding() const {
  BindingInfo b;
  b.v6_socket = family_ == AF_INET6;
  if (!b.v6_socket) {
    b.v4 = local_.ip;
  } else {
    b.v6 = local_.ip;
    if (local_.ip.IsV4Mapped()) {
      b.v4 = local_.ip.Unmapped();
    } else if (!local_.ip.IsUnspecified()) {
      b.v4 = IpAddress::V4(0x7f000006);  // Linux's LOOPBACK4_IPV6 placeholder
    }
  }
  b.v6only = v6only_;
  b.reuseaddr = flag_option(SO_REUSEADDR) != 0;
  b.reuseport = reuseport_;
  b.uid = uid_;
  b.listening = listening();
  return b;
}

int InetSocket::LocalMatchScore(const IpAddress& dst) const {
  if (family_ == AF_INET) {
    if (!dst.is_v4()) return -1;
    if (local_.ip.IsUnspecified()) return 2;
    return local_.ip == dst ? 6 : -1;
  }
  if (dst.is_v4()) {
    if (v6only_) return -1;
    if (local_.ip.IsUnspecified()) return 1;
    if (!local_.ip.IsV4Mapped()) return -1;
    IpAddress v4 = local_.ip.Unmapped();
    if (v4.IsUnspecified()) return 1;
    return v4 == dst ? 5 : -1;
  }
  if (local_.ip.IsV4Mapped()) return -1;
  if (local_.ip.IsUnspecified()) return 1;
  return local_.ip == dst ? 5 : -1;
}

SysStatus InetSocket::CheckBindAddress(const InetAddr& a) const {
  const bool nonlocal_ok = ip_.flag(SOL_IP, IP_FREEBIND) || ip_.flag(SOL_IP, IP_TRANSPARENT) ||
                           ip_.flag(SOL_IPV6, IPV6_FREEBIND) ||
                           ip_.flag(SOL_IPV6, IPV6_TRANSPARENT);
  IpAddress u = a.ip.Unmapped();
  if (u.is_v4()) {
    if (family_ == AF_INET6 && v6only_) return Errno{EINVAL};
    // Linux accepts local, multicast and broadcast addresses (inet_addr_type).
    if (u.IsUnspecified() || stack_->IsLocal(u) || IsV4Multicast(u) || IsV4Broadcast(u) ||
        nonlocal_ok) {
      return SysOk();
    }
    return Errno{EADDRNOTAVAIL};
  }
  if (u.IsUnspecified() || IsV6Multicast(u)) return SysOk();
  // A link-local address needs an interface; the sandbox's interfaces have none to bind.
  if (IsV6LinkLocal(u) && a.scope_id == 0 && bound_device_.empty()) return Errno{EINVAL};
  if (stack_->IsLocal(u) || nonlocal_ok) return SysOk();
  return Errno{EADDRNOTAVAIL};
}

SysStatus InetSocket::Bind(Task& task, const std::string& sockaddr) {
  ASSIGN_OR_RETURN_ERRNO(InetAddr a, ParseBindAddress(family_, sockaddr));
  const bool privileged = a.port != 0 && a.port < kPrivilegedPorts && task.creds().euid != 0;
  // Linux checks in a different order for each family.
  if (family_ == AF_INET) {
    RETURN_IF_ERRNO(CheckBindAddress(a));
    if (privileged) return Errno{EACCES};
    if (!CanBind()) return Errno{EINVAL};
  } else {
    if (IsV6Multicast(a.ip) && type_ == SOCK_STREAM) return Errno{EINVAL};
    if (privileged) return Errno{EACCES};
    if (!CanBind()) return Errno{EINVAL};
    RETURN_IF_ERRNO(CheckBindAddress(a));
  }
  const InetAddr old = local_;
  local_.ip = a.ip;
  local_.scope_id = a.scope_id;
  if (a.port == 0 && ip_.flag(SOL_IP, IP_BIND_ADDRESS_NO_PORT)) {
    // The port is chosen by connect(), which then may share it (Linux's use case).
    addr_locked_ = !a.ip.IsUnspecified();
    return SysOk();
  }
  auto port = ports().Bind(this, binding(), a.port);
  if (!port.ok()) {
    local_ = old;
    return Errno{port.error()};
  }
  local_.port = port.value();
  addr_locked_ = !a.ip.IsUnspecified();
  port_locked_ = a.port != 0;
  return SysOk();
}

SysStatus InetSocket::AutobindPort(int exhausted_errno) {
  if (local_.port != 0) return SysOk();
  ASSIGN_OR_RETURN_ERRNO(local_.port, ports().Bind(this, binding(), 0, exhausted_errno));
  return SysOk();
}

void InetSocket::ForgetAutomaticBinding() {
  if (!port_locked_ && local_.port != 0) {
    ports().Unbind(this, local_.port);
    local_.port = 0;
  }
  if (!addr_locked_) local_.ip = AnyOf(family_);
}

void InetSocket::ChooseSourceAddress(const IpAddress& src) {
  if (local_.ip.Unmapped().IsUnspecified()) local_.ip = InFamily(src);
}

IpAddress InetSocket::RouteTarget(const IpAddress& dst) {
  IpAddress u = dst.Unmapped();
  if (!u.IsUnspecified()) return u;
  return u.is_v4() ? IpAddress::V4(INADDR_LOOPBACK) : IpAddress::FromIn6(in6addr_loopback);
}

void InetSocket::InheritOptions(const InetSocket& from) {
  sndbuf_ = from.sndbuf_;
  rcvbuf_ = from.rcvbuf_;
  flag_opts_ = from.flag_opts_;
  linger_ = from.linger_;
  rcvtimeo_ = from.rcvtimeo_;
  sndtimeo_ = from.sndtimeo_;
  v6only_ = from.v6only_;
  reuseport_ = from.reuseport_;
  bound_device_ = from.bound_device_;
  ip_ = from.ip_;
}

SysResult<std::string> InetSocket::GetTransportOption(Task& task, int level, int name) {
  return Errno{ENOPROTOOPT};
}

SysStatus InetSocket::SetTransportOption(Task& task, int level, int name,
                                         const std::string& value) {
  return Errno{ENOPROTOOPT};
}

std::vector<iovec> SpansFrom(absl::Span<const iovec> src, size_t off) {
  std::vector<iovec> out;
  for (const iovec& v : src) {
    if (out.size() == IOV_MAX) break;
    if (off >= v.iov_len) {
      off -= v.iov_len;
      continue;
    }
    out.push_back(iovec{static_cast<uint8_t*>(v.iov_base) + off, v.iov_len - off});
    off = 0;
  }
  return out;
}

}  // namespace usentry::sentry::net
