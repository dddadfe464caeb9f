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
#include "sentry/net/unix_address.h"
#include "sentry/net/unix_namespace.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry::net {

inline constexpr int kShutRd = 1;  // Linux RCV_SHUTDOWN
inline constexpr int kShutWr = 2;  // Linux SEND_SHUTDOWN
inline constexpr int kShutBoth = kShutRd | kShutWr;

// Defaults and limits with Linux's default sysctl values.
inline constexpr int kDefaultSockBuf = 212992;    // net.core.{w,r}mem_default
inline constexpr int kSockBufMax = 212992;        // net.core.{w,r}mem_max
inline constexpr int kMinSndbuf = 4608;           // SOCK_MIN_SNDBUF
inline constexpr int kMinRcvbuf = 2304;           // SOCK_MIN_RCVBUF
inline constexpr size_t kMaxDgramQlen = 10;       // net.unix.max_dgram_qlen
inline constexpr int kSomaxconn = 4096;           // net.core.somaxconn
inline constexpr size_t kMaxFdsPerMessage = 253;  // SCM_MAX_FD

// Credentials as SO_PEERCRED / SCM_CREDENTIALS carry them, in the sandbox's view.
struct Ucred {
  int32_t pid = 0;
  uint32_t uid = ~0u;
  uint32_t gid = ~0u;
  bool operator==(const Ucred& o) const { return pid == o.pid && uid == o.uid && gid == o.gid; }
};

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

// Arguments of a send: the data (sentry spans), the raw destination (msg_name, when
// msg_namelen != 0) and the parsed control messages.
struct SendArgs {
  absl::Span<const iovec> data;
  std::optional<std::string> name;
  std::vector<std::shared_ptr<vfs::FileDescription>> rights;
  std::optional<Ucred> creds;  // explicit SCM_CREDENTIALS (already validated)
  int flags = 0;
  // write(2) ignores SO_SNDTIMEO: the VFS's blocking loop would retry a timed-out call.
  bool use_timeout = true;
};

// What a receive reports besides the data.
struct RecvResult {
  size_t copied = 0;
  size_t msg_len = 0;  // dgram/seqpacket: the whole message (MSG_TRUNC)
  int msg_flags = 0;   // MSG_TRUNC
  bool has_from = false;
  UnixAddress from;
  bool has_creds = false;  // set when SO_PASSCRED is on and data was read
  Ucred creds;
  std::vector<std::shared_ptr<vfs::FileDescription>> rights;
};

class UnixSocket : public vfs::FileDescription {
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

  int type() const { return type_; }

  // --- names and connections (unix_socket.cc) ---
  SysStatus Bind(Task& task, const std::string& sockaddr);
  SysStatus Listen(Task& task, int backlog);
  SysResult<std::shared_ptr<UnixSocket>> Accept(Task& task);
  SysStatus Connect(Task& task, const std::string& sockaddr);
  SysStatus Shutdown(int how);
  const UnixAddress& local_address() const { return addr_; }
  SysResult<UnixAddress> PeerAddress() const;

  // --- data (unix_socket_io.cc) ---
  // `task` may be null only in tests (no blocking, no credentials, no SIGPIPE).
  SysResult<size_t> SendMsg(Task* task, SendArgs& args);
  SysResult<size_t> RecvMsg(Task* task, absl::Span<const iovec> dst, int flags, RecvResult* out);

  // --- options (unix_sockopt.cc) ---
  // The option's full value as bytes (the caller truncates to the app's optlen).
  SysResult<std::string> GetOption(int level, int name);
  SysStatus SetOption(Task& task, int level, int name, const std::string& value);

  // --- FileDescription ---
  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  SysResult<size_t> Write(Task* task, absl::Span<const iovec> src, int64_t offset) override;
  SysResult<vfs::Attr> Stat() override;
  SysResult<uint64_t> Ioctl(Task& task, uint64_t cmd, uint64_t arg) override;
  EventMask Readiness(EventMask mask) override;
  WaitQueue* wait_queue() override { return &wq_; }
  std::string AnonName() const override;

 private:
  enum class State { kUnconnected, kListening, kConnected };

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
  SysResult<size_t> RecvImpl(Task* task, absl::Span<const iovec> dst, int flags, RecvResult* out,
                             absl::Duration timeout);
  SysResult<size_t> RecvStream(Task* task, absl::Span<const iovec> dst, int flags, RecvResult* out,
                               absl::Duration timeout);
  SysResult<size_t> RecvDatagram(Task* task, absl::Span<const iovec> dst, int flags,
                                 RecvResult* out, absl::Duration timeout);
  // Queues `m` on this socket (the receiver) and wakes readers.
  void Enqueue(Message m);
  // A message from this socket carrying `len` bytes of `src` from `offset`, charged to
  // our send buffer.
  Message MakeMessage(Task* task, const SendArgs& args, size_t offset, size_t len);
  bool nonblocking_for(int flags) const { return nonblocking() || (flags & MSG_DONTWAIT); }

  std::shared_ptr<UnixNamespace> ns_;
  const int type_;
  const uint64_t ino_;
  const uint32_t uid_, gid_;
  const struct timespec ctime_;
  State state_ = State::kUnconnected;
  bool embryo_ = false;  // made by connect(), not accepted yet

  UnixAddress addr_;
  std::optional<InodeKey> bound_inode_;
  std::weak_ptr<UnixSocket> peer_;
  UnixAddress peer_addr_;  // the peer's name when connected (getpeername after it died)
  Ucred peer_cred_;        // SO_PEERCRED
  Ucred listen_cred_;      // what connecting clients see as SO_PEERCRED
  int shutdown_ = 0;       // kShut* bits
  int error_ = 0;          // pending SO_ERROR

  std::deque<Message> rx_;
  size_t rx_bytes_ = 0;  // unread data bytes in rx_
  std::deque<std::shared_ptr<UnixSocket>> accept_queue_;
  int backlog_ = 0;
  std::shared_ptr<SendBuffer> send_buf_;
  std::vector<std::weak_ptr<UnixSocket>> peer_waiters_;

  // Options.
  bool passcred_ = false;
  int sndbuf_ = kDefaultSockBuf;
  int rcvbuf_ = kDefaultSockBuf;
  std::map<int, int> flag_opts_;  // accepted boolean/int options (SO_REUSEADDR, ...)
  struct linger linger_ {};
  absl::Duration rcvtimeo_ = absl::ZeroDuration();  // zero = forever
  absl::Duration sndtimeo_ = absl::ZeroDuration();

  WaitQueue wq_;
};

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_UNIX_SOCKET_H_
