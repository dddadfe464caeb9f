// TcpSocket: a SOCK_STREAM internet socket. A connection to an address inside the
// sandbox is two TcpSockets linked in the sentry (nothing on the host); a connection to
// any other address goes through Egress and then wraps the connected host socket that
// netgate donated (tcp_egress.cc).
//
// Local model (Linux's loopback behaviour, without segments): a writer appends straight
// to its peer's receive queue, which may hold the reader's SO_RCVBUF plus the writer's
// SO_SNDBUF (what Linux holds in both queues together); bytes past the reader's
// SO_RCVBUF count as the writer's unsent data (SIOCOUTQ). connect() to a listener
// creates the server-side socket at once and queues it for accept(); a listener whose
// backlog is full holds the connect back (SYN_SENT) until accept() makes room. Peers
// are linked weakly: a socket dies when its last description reference goes, and its
// destructor is what the peer sees: a FIN (EOF after the data), or a reset when it had
// unread data or SO_LINGER 0 (ECONNRESET). A write to a peer that is gone is accepted
// once and answered by a reset (then EPIPE + SIGPIPE), as on Linux.
//
// Every readiness change Notify()s the socket's wait queue; a reader that frees room
// notifies its peer's queue.
// All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_NET_TCP_SOCKET_H_
#define USENTRY_SENTRY_NET_TCP_SOCKET_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/net/byte_queue.h"
#include "sentry/net/egress.h"
#include "sentry/net/inet_socket.h"

namespace usentry::sentry::net {

// Linux's TCP states (tcpi_state numbering).
enum TcpState : uint8_t {
  kTcpEstablished = 1,
  kTcpSynSent = 2,
  kTcpFinWait2 = 5,
  kTcpClose = 7,
  kTcpCloseWait = 8,
  kTcpListen = 10,
};

// TCP-level options (tcp_sockopt.cc), Linux's defaults.
struct TcpOptions {
  bool nodelay = false;
  bool cork = false;
  int keepidle = 7200;  // seconds
  int keepintvl = 75;
  int keepcnt = 9;
  int syncnt = 6;
  int linger2 = 0;       // 0: net.ipv4.tcp_fin_timeout; -1: none
  int defer_accept = 0;  // in SYN-ACK retransmits, as Linux stores it
  int user_mss = 0;
  int window_clamp = 0;
  int quickack = 1;
  int user_timeout = 0;
  int fastopen = 0;
  int fastopen_connect = 0;
  int fastopen_no_cookie = 0;
  int notsent_lowat = 0;
  int thin_linear_timeouts = 0;
  int save_syn = 0;
  int inq = 0;
  int tx_delay = 0;
  std::string congestion = "cubic";
};

// A connection through Egress: the destination, then the donated host socket.
struct TcpEgressLink {
  Endpoint dst;
  uint64_t serial = 0;  // which connect attempt this is (its `done` checks)
  bool pending = true;  // Egress::Connect's `done` has not run yet
  EgressConnection conn;
  std::shared_ptr<fsimpl::HostPoller> poller;  // subscribed with the socket as key
  uint64_t bytes_in = 0, bytes_out = 0;
};

class TcpSocket : public InetSocket {
 public:
  static std::shared_ptr<TcpSocket> New(std::shared_ptr<InetStack> stack, int family,
                                        int status_flags, uint32_t uid, uint32_t gid);
  TcpSocket(std::shared_ptr<InetStack> stack, int family, int status_flags, uint32_t uid,
            uint32_t gid);
  ~TcpSocket() override;

  // --- connections (tcp_socket.cc) ---
  SysStatus Listen(Task& task, int backlog) override;
  SysResult<std::shared_ptr<Socket>> Accept(Task& task, std::string* peer) override;
  SysStatus Connect(Task& task, const std::string& sockaddr) override;
  SysStatus Shutdown(int how) override;
  SysResult<std::string> PeerName() override;
  // Through Egress: the host connection's local end (EgressConnection::local).
  std::string SockName() override;
  TcpState state() const { return state_; }

  // --- data (tcp_socket_io.cc) ---
  SysResult<size_t> SendMsg(Task* task, SendArgs& args) override;
  SysResult<uint64_t> Ioctl(Task& task, uint64_t cmd, uint64_t arg) override;
  EventMask Readiness(EventMask mask) override;

 protected:
  bool listening() const override { return state_ == kTcpListen; }
  bool CanBind() const override { return state_ == kTcpClose && local_.port == 0; }
  SysResult<std::string> GetTransportOption(Task& task, int level, int name) override;
  SysStatus SetTransportOption(Task& task, int level, int name, const std::string& value) override;
  void SocketOptionChanged(int name) override;
  SysResult<int> PathMtu() const override;

 private:
  // struct socket's state: what connect(2) answers (EALREADY, EISCONN, the 0 that
  // confirms a non-blocking connect).
  enum class Conn { kUnconnected, kConnecting, kConnected };

  std::shared_ptr<TcpSocket> self() {
    return std::static_pointer_cast<TcpSocket>(shared_from_this());
  }
  bool is_egress() const { return egress_ != nullptr; }
  bool egress_ready() const { return egress_ != nullptr && !egress_->pending; }

  // --- local connections (tcp_socket.cc) ---
  SysStatus ConnectLocal(Task& task, const InetAddr& dst, const IpAddress& target);
  // Waits (blocking sockets) for a connect in SYN_SENT to finish; EINPROGRESS otherwise.
  SysStatus FinishConnect(Task& task);
  // The result connect(2) reports for a connection attempt that has ended.
  SysStatus ConnectOutcome();
  // Links `client` (SYN_SENT or just connecting) to a new server-side socket queued for
  // accept on this listener.
  void Establish(const std::shared_ptr<TcpSocket>& client, const IpAddress& target);
  // Lets connects held back by a full backlog in while there is room.
  void AdmitWaitingConnects();
  // Stops listening: queued connections are reset, held-back connects refused.
  void StopListening();
  bool BacklogFull() const { return accept_queue_.size() > static_cast<size_t>(backlog_); }
  // The peer closed (fin) or reset the connection.
  void PeerFin();
  void PeerReset();
  // A failed connect: the error for SO_ERROR / connect, back to CLOSE.
  void ConnectFailed(int err);
  // AF_UNSPEC connect: abort the connection or stop listening.
  SysStatus Disconnect();

  // --- data (tcp_socket_io.cc) ---
  SysResult<size_t> SendImpl(Task* task, SendArgs& args);
  SysResult<size_t> Receive(Task* task, absl::Span<const iovec> dst, int flags, RecvResult* out,
                            absl::Duration timeout) override;
  // One attempt of a local send / receive: EAGAIN when it must wait.
  SysStatus SendLocalAttempt(const SendArgs& args, size_t total, size_t* sent);
  SysStatus RecvLocalAttempt(absl::Span<const iovec> dst, int flags, size_t total, size_t target,
                             size_t* copied);
  // Bytes the peer may still take (its SO_RCVBUF plus our SO_SNDBUF, minus its queue).
  size_t PeerRoom(const TcpSocket& peer) const;
  // Our bytes past the peer's receive window (SIOCOUTQ).
  size_t Unsent() const;
  bool LocalWritable() const;
  int RcvLowat() const;

  // --- egress (tcp_egress.cc) ---
  SysStatus ConnectEgress(Task& task, const InetAddr& dst);
  void EgressDone(SysResult<EgressConnection> r);
  SysStatus SendEgressAttempt(const SendArgs& args, size_t total, size_t* sent);
  SysStatus RecvEgressAttempt(absl::Span<const iovec> dst, int flags, size_t total, size_t target,
                              size_t* copied);
  EventMask EgressReadiness(EventMask mask);
  // Arms the poller for `events` on the host socket (false: no poller; always ready).
  bool ArmEgress(EventMask events);
  // TCP_NODELAY, SO_KEEPALIVE and the keepalive timers go to the host socket too.
  void PassOptionsToHost();
  void ReleaseEgress();

  TcpState state_ = kTcpClose;
  Conn conn_ = Conn::kUnconnected;
  int shutdown_ = 0;      // kShut* bits: ours, and kShutRd when the peer's FIN came
  bool fin_in_ = false;   // the peer finished sending (Linux's SOCK_DONE)
  bool fin_out_ = false;  // we finished sending
  bool embryo_ = false;   // server side not accepted yet
  InetAddr peer_addr_;    // in our family
  std::weak_ptr<TcpSocket> peer_;
  bool had_peer_ = false;  // a local connection existed (peer_ expired = it closed)
  ByteQueue rx_;
  uint64_t bytes_received_ = 0, bytes_acked_ = 0;

  // Listener.
  int backlog_ = 0;
  std::deque<std::shared_ptr<TcpSocket>> accept_queue_;
  std::deque<std::weak_ptr<TcpSocket>> waiting_connects_;
  // A client held back by a full backlog: the target address it connects to.
  IpAddress waiting_target_;

  std::unique_ptr<TcpEgressLink> egress_;
  TcpOptions tcp_;
};

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_TCP_SOCKET_H_
