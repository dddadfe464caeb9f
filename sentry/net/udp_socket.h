// UdpSocket: a SOCK_DGRAM internet socket. Datagrams to an address inside the sandbox
// are delivered in the sentry to the socket the port table names (Linux's scoring;
// a connected socket receives only from its peer). DNS datagrams (to the sandbox's
// resolver, or to port 53 of any address outside) go to DnsService, whose answer comes
// back from the address the app sent to. Other destinations outside go through Egress:
// one connected host socket per destination, donated by netgate (udp_egress.cc).
//
// A datagram to a local port nobody holds is lost; a connected sender (or one with
// IP_RECVERR/IPV6_RECVERR) then sees ECONNREFUSED on its next call, as Linux reports
// the ICMP port-unreachable on loopback. Nothing is queued on the error queue
// (MSG_ERRQUEUE reads EAGAIN) and no IP-level control message is generated.
// All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_NET_UDP_SOCKET_H_
#define USENTRY_SENTRY_NET_UDP_SOCKET_H_

#include <netinet/in.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/net/egress.h"
#include "sentry/net/inet_socket.h"

namespace usentry::sentry::net {

// The largest payloads: 65535 minus the IPv4 and UDP headers; minus the UDP header
// for IPv6, whose header is not counted in its payload length.
inline constexpr size_t kMaxUdpPayloadV4 = 65507;
inline constexpr size_t kMaxUdpPayloadV6 = 65527;
// Destinations outside the sandbox one socket may talk to at once (each holds a host
// socket and a netgate connection): beyond it, sendto fails with ENOBUFS, so that one
// app cannot make the sentry hold a host socket per address it sprays.
inline constexpr size_t kMaxEgressFlows = 16;
// Datagrams held per destination while netgate dials; later ones are dropped (as a
// full device queue would), the app's sendto still succeeds.
inline constexpr size_t kMaxPendingDatagrams = 64;

// What a receiver may ask of a datagram's IP header (IP_RECVTTL, IPV6_RECVHOPLIMIT,
// IP_PKTINFO...): the values the sender's options or control messages gave it.
struct PacketInfo {
  bool v6 = false;  // an IPv6 packet; else IPv4 (possibly to an AF_INET6 socket)
  int hop = 64;     // TTL or hop limit
  int tos = 0;      // TOS or traffic class
  IpAddress dst;    // the destination address, unmapped
  int ifindex = 1;  // lo; 2 (eth0) for datagrams from outside
};

class UdpSocket : public InetSocket {
 public:
  // `protocol` is IPPROTO_UDP or IPPROTO_UDPLITE: UDP-Lite sockets have their own ports
  // and reach only each other, inside the sandbox (netgate dials UDP only).
  static std::shared_ptr<UdpSocket> New(std::shared_ptr<InetStack> stack, int family,
                                        int status_flags, uint32_t uid, uint32_t gid,
                                        int protocol = IPPROTO_UDP);
  UdpSocket(std::shared_ptr<InetStack> stack, int family, int status_flags, uint32_t uid,
            uint32_t gid, int protocol = IPPROTO_UDP);
  ~UdpSocket() override;

  // --- names and association (udp_socket.cc) ---
  SysStatus Listen(Task& task, int backlog) override { return Errno{EOPNOTSUPP}; }
  SysResult<std::shared_ptr<Socket>> Accept(Task& task, std::string* peer) override {
    return Errno{EOPNOTSUPP};
  }
  SysStatus Connect(Task& task, const std::string& sockaddr) override;
  SysStatus Shutdown(int how) override;
  SysResult<std::string> PeerName() override;
  // Delivery score for a datagram from `src`:`sport` (unmapped) to `dst`: -1 = not ours.
  int ReceiveScore(const IpAddress& dst, const IpAddress& src, uint16_t sport) const;

  // Queues a datagram that arrived from `from` (in this socket's family). Dropped when
  // the receive queue is over SO_RCVBUF or a connected socket's peer is someone else.
  void Deliver(std::vector<uint8_t> data, const InetAddr& from, const PacketInfo& info);
  // The sender of a datagram to a local port nobody holds learns of it (ICMP).
  void PortUnreachable(const InetAddr& dst);

  // --- data (udp_socket_io.cc) ---
  SysResult<size_t> SendMsg(Task* task, SendArgs& args) override;
  SysResult<uint64_t> Ioctl(Task& task, uint64_t cmd, uint64_t arg) override;
  EventMask Readiness(EventMask mask) override;

 protected:
  bool listening() const override { return false; }
  SysResult<std::string> GetTransportOption(Task& task, int level, int name) override;
  SysStatus SetTransportOption(Task& task, int level, int name, const std::string& value) override;
  SysResult<int> PathMtu() const override;

 private:
  struct Datagram {
    std::vector<uint8_t> data;
    InetAddr from;
    PacketInfo info;
    size_t charge = 0;
  };
  // One destination outside the sandbox and its donated host socket.
  struct Flow {
    uint64_t serial = 0;
    Endpoint dst;      // as the app named it
    IpAddress target;  // unmapped
    bool pending = true;
    std::deque<std::vector<uint8_t>> queued;
    EgressConnection conn;
    std::shared_ptr<fsimpl::HostPoller> poller;
    uint64_t bytes_in = 0, bytes_out = 0;
  };

  std::shared_ptr<UdpSocket> self() {
    return std::static_pointer_cast<UdpSocket>(shared_from_this());
  }
  bool ConnectedTo(const IpAddress& target, uint16_t port) const;
  SysStatus Disconnect();

  // --- IP-level control messages (udp_control.cc) ---
  // The header values of a datagram to `target` (unmapped): this socket's options,
  // overridden by sendmsg's control messages, checked as Linux does (EINVAL).
  SysResult<PacketInfo> OutgoingPacket(const std::vector<ControlMessage>& control,
                                       const IpAddress& target) const;
  // The control messages a receive reports for `info`, per this socket's IP_RECV* and
  // IPV6_RECV* options.
  std::vector<ControlMessage> ReceiveControl(const PacketInfo& info) const;

  // --- send paths (udp_socket_io.cc, udp_egress.cc) ---
  SysStatus SendLocal(const std::vector<uint8_t>& data, const InetAddr& dst,
                      const IpAddress& target, const PacketInfo& info);
  SysStatus SendDns(Task* task, std::vector<uint8_t> data, const InetAddr& dst);
  SysStatus SendEgress(Task* task, std::vector<uint8_t> data, const InetAddr& dst,
                       const IpAddress& target, bool nonblocking);
  Flow* FindFlow(const IpAddress& target, uint16_t port);
  Flow* FindFlowBySerial(uint64_t serial);
  void FlowDone(uint64_t serial, SysResult<EgressConnection> r);
  void CloseFlow(Flow& f);
  // Takes the next datagram from a host socket into `dst`: false when none is waiting.
  bool RecvFromFlows(absl::Span<const iovec> dst, int flags, RecvResult* out, size_t* n);
  bool FlowsReadable();
  void ArmFlows();

  SysResult<size_t> Receive(Task* task, absl::Span<const iovec> dst, int flags, RecvResult* out,
                            absl::Duration timeout) override;

  bool connected_ = false;
  InetAddr peer_;  // in our family
  int shutdown_ = 0;
  std::deque<Datagram> rx_;
  size_t rx_charged_ = 0;
  std::vector<std::unique_ptr<Flow>> flows_;
  size_t next_flow_ = 0;  // where the next receive starts looking (fairness)
  bool cork_ = false;
  int udp_segment_ = 0;
  int udp_gro_ = 0;
  int no_check6_tx_ = 0, no_check6_rx_ = 0;
  int send_cscov_ = 0, recv_cscov_ = 0;  // UDP-Lite checksum coverage
  bool udplite() const { return protocol_ == IPPROTO_UDPLITE; }
};

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_UDP_SOCKET_H_
