// InetSocket: what TCP and UDP sockets of either family share: the local name and its
// port-table entry, bind(2) with Linux's checks, getsockname, the IP and IPv6 level
// options, and the SOL_SOCKET options only internet sockets have (SO_REUSEPORT,
// SO_BINDTODEVICE). The transports are TcpSocket (tcp_socket.h) and UdpSocket
// (udp_socket.h). Nothing here touches a host socket.
// All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_NET_INET_SOCKET_H_
#define USENTRY_SENTRY_NET_INET_SOCKET_H_

#include <sys/socket.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/ip_address.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/net/egress.h"
#include "sentry/net/inet_address.h"
#include "sentry/net/inet_stack.h"
#include "sentry/net/port_table.h"
#include "sentry/net/socket.h"

namespace usentry::sentry::net {

// IP and IPv6 level options: stored and read back as Linux reports them; only the ones
// named in inet_sockopt.cc change behaviour (IP_FREEBIND, IP_BIND_ADDRESS_NO_PORT,
// IP_RECVERR/IPV6_RECVERR for datagram errors, IPV6_V6ONLY). No IP-level control
// message is ever generated on receive (IP_PKTINFO, IP_RECVTOS... are accepted only).
struct IpOptions {
  int tos = 0;
  int ttl = -1;          // -1: the default (64)
  int mtu_discover = 1;  // IP_PMTUDISC_WANT
  int multicast_ttl = 1;
  int minttl = 0;
  std::string ip_options;  // IP_OPTIONS as given
  int unicast_hops = -1;   // -1: the default (64)
  int multicast_hops = 1;
  int tclass = 0;
  int v6_mtu_discover = 1;
  int v6_mtu = 0;  // IPV6_MTU as set (0: path MTU)
  // Boolean options by (level << 16 | name); absent = the default.
  std::map<int, int> flags;
  bool flag(int level, int name) const {
    auto it = flags.find(level << 16 | name);
    return it != flags.end() && it->second != 0;
  }
};

class InetSocket : public Socket, public PortUser {
 public:
  // `protocol` is the resolved one (IPPROTO_TCP/IPPROTO_UDP), as SO_PROTOCOL reports.
  InetSocket(std::shared_ptr<InetStack> stack, int family, int type, int protocol, int status_flags,
             uint32_t uid, uint32_t gid);
  ~InetSocket() override;

  // --- PortUser ---
  BindingInfo binding() const override;

  // How well a packet to `dst` (unmapped) matches this socket's local address: -1 for
  // no match, else Linux's compute_score (specific address beats wildcard, an AF_INET
  // socket beats a dual-stack one for IPv4).
  int LocalMatchScore(const IpAddress& dst) const;
  const InetAddr& local() const { return local_; }
  bool v6only() const { return v6only_; }

  SysStatus Bind(Task& task, const std::string& sockaddr) override;
  std::string SockName() override { return FormatInetSockaddr(family_, local_); }
  SysResult<std::string> GetOption(Task& task, int level, int name) override;
  SysStatus SetOption(Task& task, int level, int name, const std::string& value) override;

 protected:
  Transport transport() const { return type_ == SOCK_STREAM ? Transport::kTcp : Transport::kUdp; }
  PortTable& ports() const;
  // Whether bind(2) may still run (Linux: TCP state CLOSE and no port yet).
  virtual bool CanBind() const { return local_.port == 0; }
  // A free ephemeral port when none is bound yet (connect, sendto, listen).
  SysStatus AutobindPort(int exhausted_errno);
  // Drops the port (and the address unless the app bound it): a disconnect or failed
  // connect forgets an automatic binding, as Linux does.
  void ForgetAutomaticBinding();
  // The local address becomes `src` (unmapped) when the app left it unspecified.
  void ChooseSourceAddress(const IpAddress& src);
  // `ip` in this socket's family (AF_INET6 maps IPv4 addresses).
  IpAddress InFamily(const IpAddress& ip) const { return IpForFamily(family_, ip); }
  // Where a destination really goes: unmapped, and 0.0.0.0 / :: mean the loopback, as
  // on Linux.
  static IpAddress RouteTarget(const IpAddress& dst);
  // Copies the options an accepted connection inherits from its listener.
  void InheritOptions(const InetSocket& from);

  bool IsTransportLevel(int level) const;
  // Options of the transport's own level (SOL_TCP, SOL_UDP): ENOPROTOOPT by default.
  virtual SysResult<std::string> GetTransportOption(Task& task, int level, int name);
  virtual SysStatus SetTransportOption(Task& task, int level, int name, const std::string& value);
  // A SOL_SOCKET option was set (egress sockets pass some to their host socket).
  virtual void SocketOptionChanged(int name) {}
  // The path MTU of the current route, for IP_MTU/IPV6_MTU; ENOTCONN when unconnected.
  virtual SysResult<int> PathMtu() const { return Errno{ENOTCONN}; }

  std::shared_ptr<InetStack> stack_;
  InetAddr local_;            // in this socket's family; port 0 = no port yet
  bool addr_locked_ = false;  // the app bound a specific address (SOCK_BINDADDR_LOCK)
  bool port_locked_ = false;  // the app bound a specific port (SOCK_BINDPORT_LOCK)
  bool v6only_ = false;
  bool reuseport_ = false;
  std::string bound_device_;  // SO_BINDTODEVICE
  IpOptions ip_;

 private:
  SysResult<std::string> GetIpOption(int name);
  SysStatus SetIpOption(Task& task, int name, const std::string& value);
  SysResult<std::string> GetIpv6Option(int name);
  SysStatus SetIpv6Option(Task& task, int name, const std::string& value);
  SysResult<std::string> GetInetSocketOption(Task& task, int name);
  SysStatus SetInetSocketOption(Task& task, int name, const std::string& value);
  // Bind's address checks (EADDRNOTAVAIL, EINVAL for v4-mapped on V6ONLY sockets...).
  SysStatus CheckBindAddress(const InetAddr& a) const;
};

// The spans from `off` bytes into `src` on (for host sendmsg/recvmsg; at most IOV_MAX).
std::vector<iovec> SpansFrom(absl::Span<const iovec> src, size_t off);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_INET_SOCKET_H_
