// UnixSocket: an AF_UNIX socket (SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET) emulated
// entirely in the sentry, as an open file. Nothing here touches a host socket.
//
// Model (Linux's af_unix): every socket owns its receive queue; a sender appends
// messages to the receiver's queue and is charged for them against its own SO_SNDBUF
// until they are read. A stream connect() creates the server-side socket at once and
// queues it on the listener (the client may write before accept()). Peers are linked
// weakly: a socket dies when the app drops its last reference (FDs, in-flight
// SCM_RIGHTS), and its destructor is what the peer sees as close (EOF, EPIPE,
// ECONNRESET).
//
// Readiness: every change a poller could observe Notify()s the socket's wait queue.
// Blocking calls sleep on their own socket's queue (socket_wait.h). A caller waiting for
// room at another socket (a full listen backlog or datagram queue) does not keep that
// socket alive: it enrolls in the other's peer waiters, which are told when room frees
// and when the other socket dies (Linux's peer_wait).
// All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_NET_UNIX_SOCKET_H_
#define USENTRY_SENTRY_NET_UNIX_SOCKET_H_

#include <sys/socket.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/kernel/wait_queue.h"
#include "sentry/net/socket.h"
#include "sentry/net/unix_address.h"
#include "sentry/net/unix_namespace.h"

namespace usentry::sentry::net {

inline constexpr size_t kMaxDgramQlen = 10;       // net.unix.max_dgram_qlen
inline constexpr size_t kMaxFdsPerMessage = 253;  // SCM_MAX_FD

// What a socket has sent that receivers have not read yet (SO_SNDBUF accounting).
struct SendBuffer {
  size_t charged = 0;          // data plus a per-message overhead, like skb truesize
  size_t bytes = 0;            // data only (SIOCOUTQ)
  WaitQueue* owner = nullptr;  // the sender's queue, told when room frees; null once it died
};

// One queued message: a datagram, a seqpacket record, or one chunk of a stream write.
struct Message {
  Message() = default;
  Message(Message&&) = default;
  Message& operator=(Message&&) = default;
  ~Message();

  size_t remaining() const { return data.size() - offset; }
  // Returns `n` data bytes of the charge (stream: read partially).
  void Uncharge(size_t n);

  std::vector<uint8_t> data;
  size_t offset = 0;                                          // stream: bytes already read
  std::vector<std::shared_ptr<vfs::FileDescription>> rights;  // SCM_RIGHTS
  Ucred creds;
  UnixAddress from;  // the sender's name when it sent
  std::shared_ptr<SendBuffer> charged_to;
  size_t charge = 0;
};

class UnixSocket : public Socket {
 public:
  // `type` is SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET; `status_flags` may hold O_NONBLOCK.
  // uid/gid own the socket inode (fstat).
  static std::shared_ptr<UnixSocket> New(std::shared_ptr<UnixNamespace> ns, int type,
                                         int status_flags, uint32_t uid, uint32_t gid);
  // socketpair(2): two connected sockets whose SO_PEERCRED is `creds`.
  static std::pair<std::shared_ptr<UnixSocket>, std::shared_ptr<UnixSocket>> NewPair(
      std::shared_ptr<UnixNamespace> ns, int type, int status_flags, const Ucred& creds,
      uint32_t uid, uint32_t gid);
  UnixSocket(std::shared_ptr<UnixNamespace> ns, int type, int status_flags, uint32_t uid,
             uint32_t gid);
  ~UnixSocket() override;

  // --- names and connections (unix_socket.cc) ---
  SysStatus Bind(Task& task, const std::string& sockaddr) override;
  SysStatus Listen(Task& task, int backlog) override;
  SysResult<std::shared_ptr<Socket>> Accept(Task& task, std::string* peer) override;
  SysStatus Connect(Task& task, const std::string& sockaddr) override;
  SysStatus Shutdown(int how) override;
  std::string SockName() override { return addr_.ToSockaddr(); }
  SysResult<std::string> PeerName() override;
  const UnixAddress& local_address() const { return addr_; }
  SysResult<UnixAddress> PeerAddress() const;

  // --- data (unix_socket_io.cc) ---
  SysResult<size_t> SendMsg(Task* task, SendArgs& args) override;

  // --- options (unix_sockopt.cc) ---
  SysResult<std::string> GetOption(Task& task, int level, int name) override;
  SysStatus SetOption(Task& task, int level, int name, const std::string& value) override;
  bool takes_unix_control() const override { return true; }

  // --- FileDescription ---
  SysResult<uint64_t> Ioctl(Task& task, uint64_t cmd, uint64_t arg) override;
  EventMask Readiness(EventMask mask) override;

 private:
  enum class State { kUnconnected, kListening, kConnected };
  bool listening() const override { return state_ == State::kListening; }

  std::shared_ptr<UnixSocket> self() {
    return std::static_pointer_cast<UnixSocket>(shared_from_this());
  }
  bool connection_oriented() const { return type_ != SOCK_DGRAM; }
  bool Writable();
  // Enrolls `s` to be woken (its queue, POLLOUT) when this socket frees room or dies.
  void AddPeerWaiter(const std::shared_ptr<UnixSocket>& s);
  void WakePeerWaiters();
  SysStatus Autobind();
  SysStatus ConnectStream(Task& task, const UnixAddress& a);
  SysStatus ConnectDgram(Task& task, const std::string& sockaddr);
  SysResult<size_t> SendStream(Task* task, SendArgs& args);
  SysResult<size_t> SendDatagram(Task* task, SendArgs& args);
  // timeout: SO_RCVTIMEO for recv*, zero (forever) for read(2) (see SendArgs).
  SysResult<size_t> Receive(Task* task, absl::Span<const iovec> dst, int flags, RecvResult* out,
                            absl::Duration timeout) override;
  SysResult<size_t> RecvStream(Task* task, absl::Span<const iovec> dst, int flags, RecvResult* out,
                               absl::Duration timeout);
  SysResult<size_t> RecvDatagram(Task* task, absl::Span<const iovec> dst, int flags,
                                 RecvResult* out, absl::Duration timeout);
  // Queues `m` on this socket (the receiver) and wakes readers.
  void Enqueue(Message m);
  // A message from this socket carrying `len` bytes of `src` from `offset`, charged to
  // our send buffer.
  Message MakeMessage(Task* task, const SendArgs& args, size_t offset, size_t len);

  std::shared_ptr<UnixNamespace> ns_;
  State state_ = State::kUnconnected;
  bool embryo_ = false;  // made by connect(), not accepted yet

  UnixAddress addr_;
  std::optional<InodeKey> bound_inode_;
  std::weak_ptr<UnixSocket> peer_;
  UnixAddress peer_addr_;  // the peer's name when connected (getpeername after it died)
  Ucred peer_cred_;        // SO_PEERCRED
  Ucred listen_cred_;      // what connecting clients see as SO_PEERCRED
  int shutdown_ = 0;       // kShut* bits

  std::deque<Message> rx_;
  size_t rx_bytes_ = 0;  // unread data bytes in rx_
  std::deque<std::shared_ptr<UnixSocket>> accept_queue_;
  int backlog_ = 0;
  std::shared_ptr<SendBuffer> send_buf_;
  std::vector<std::weak_ptr<UnixSocket>> peer_waiters_;

  bool passcred_ = false;  // SO_PASSCRED
};

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_UNIX_SOCKET_H_
