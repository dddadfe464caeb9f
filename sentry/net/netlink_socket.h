// NetlinkSocket: an AF_NETLINK socket of protocol NETLINK_ROUTE (SOCK_RAW or SOCK_DGRAM),
// answered entirely by the sentry from the sandbox's Interfaces. Other netlink protocols
// are refused at socket() (socket_factory.cc).
//
// Model (Linux's af_netlink): a send is a batch of requests processed at once, in the
// sender's call (netlink_rcv_skb); each reply is a datagram queued on the socket (bounded
// by SO_RCVBUF: overflow drops the reply and reports ENOBUFS once, as netlink_overrun).
// A dump runs one batch at a time: a datagram of as many messages as fit in
// max(kNlGoodSize, the largest read so far), the next one made when the reader takes the
// previous, NLMSG_DONE last. Only one dump runs per socket (a second gets EBUSY).
// Multicast groups are accepted and listed, but no event is ever sent: the sandbox's
// network never changes.
//
// Port ids: bind with nl_pid 0, or the first send or connect, picks the process's PID or,
// when taken, a negative id counting down from -4097 (as Linux's netlink_autobind,
// without its randomness). Ports are unique per kernel (NetlinkPorts).
// All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_NET_NETLINK_SOCKET_H_
#define USENTRY_SENTRY_NET_NETLINK_SOCKET_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "sentry/kernel/sys_result.h"
#include "sentry/net/sandbox_network.h"
#include "sentry/net/socket.h"

namespace usentry::sentry {
class Task;
}

namespace usentry::sentry::net {

class NetlinkSocket;

// A dump datagram's size before any read (Linux's NLMSG_GOODSIZE: a page less the skb
// overhead), and the cap on what a large read raises it to (SKB_WITH_OVERHEAD(32768)).
inline constexpr size_t kNlGoodSize = 3776;
inline constexpr size_t kNlMaxDumpSize = 32448;

// Which port ids the sandbox's netlink sockets hold. Kernel::netlink_ports().
class NetlinkPorts {
 public:
  // EADDRINUSE when taken by a live socket.
  SysStatus Bind(uint32_t portid, NetlinkSocket* s);
  void Unbind(uint32_t portid, const NetlinkSocket* s);
  // `pid` if free, else the next free negative id.
  uint32_t Autobind(int32_t pid, NetlinkSocket* s);

 private:
  std::map<uint32_t, NetlinkSocket*> ports_;
  int32_t rover_ = -4097;
};

// socket(AF_NETLINK, type, protocol): ESOCKTNOSUPPORT unless SOCK_RAW/SOCK_DGRAM,
// EPROTONOSUPPORT past Linux's protocol numbers, EPERM (audited as denied) for every
// protocol but NETLINK_ROUTE.
SysResult<std::shared_ptr<Socket>> NewNetlinkSocket(Task& task, int type, int protocol,
                                                    int status_flags);

class NetlinkSocket : public Socket {
 public:
  // `type` is SOCK_RAW or SOCK_DGRAM (the same to netlink). `network` is what the
  // replies describe.
  NetlinkSocket(std::shared_ptr<NetlinkPorts> ports, const SandboxNetwork& network, int type,
                int status_flags, uint32_t uid, uint32_t gid);
  ~NetlinkSocket() override;

  SysStatus Bind(Task& task, const std::string& sockaddr) override;
  SysStatus Listen(Task& task, int backlog) override { return Errno{EOPNOTSUPP}; }
  SysResult<std::shared_ptr<Socket>> Accept(Task& task, std::string* peer) override {
    return Errno{EOPNOTSUPP};
  }
  SysStatus Connect(Task& task, const std::string& sockaddr) override;
  SysStatus Shutdown(int how) override { return Errno{EOPNOTSUPP}; }
  std::string SockName() override;
  // Linux answers getpeername on any netlink socket: the kernel (0) unless connected
  // elsewhere, which the sandbox refuses.
  SysResult<std::string> PeerName() override;
  SysResult<size_t> SendMsg(Task* task, SendArgs& args) override;
  SysResult<std::string> GetOption(Task& task, int level, int name) override;
  SysStatus SetOption(Task& task, int level, int name, const std::string& value) override;

  EventMask Readiness(EventMask mask) override;

  uint32_t portid() const { return portid_; }

 private:
  bool listening() const override { return false; }
  // The process's PID (or a negative id) unless bound already. `task` may be null in
  // unit tests (then the id is 1 or a negative one).
  void Autobind(Task* task);
  // Runs every request in `data` (netlink_rcv_skb's loop).
  void Process(const std::string& data);
  // Queues a reply datagram, or drops it and sets ENOBUFS when SO_RCVBUF is exceeded.
  void Enqueue(std::string datagram);
  // Moves the next batch of the running dump to the queue, if there is room.
  void ContinueDump();
  SysResult<size_t> Receive(Task* task, absl::Span<const iovec> dst, int flags, RecvResult* out,
                            absl::Duration timeout) override;

  std::shared_ptr<NetlinkPorts> ports_;
  const SandboxNetwork network_;
  uint32_t portid_ = 0;
  bool bound_ = false;
  uint64_t groups_ = 0;  // bit g-1 = multicast group g

  std::deque<std::string> rx_;
  size_t rx_bytes_ = 0;  // charged bytes of rx_ (data plus per-datagram overhead)
  size_t max_recvmsg_len_ = 0;

  // The running dump: messages not yet queued, then NLMSG_DONE.
  bool dump_running_ = false;
  std::deque<std::string> dump_;
  std::string dump_done_;

  bool passcred_ = false;  // SO_PASSCRED
  // SOL_NETLINK flags.
  bool pktinfo_ = false;
  bool broadcast_error_ = false;
  bool no_enobufs_ = false;
  bool cap_ack_ = false;
  bool ext_ack_ = false;
  bool strict_chk_ = false;
};

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_NETLINK_SOCKET_H_
