// Socket: what the socket syscalls see of a socket of any family (AF_UNIX in
// unix_socket.h, AF_INET/AF_INET6 in inet_socket.h, AF_NETLINK in netlink_socket.h).
// Addresses cross this interface as the raw sockaddr bytes the app passed or will get
// back, so each family parses and formats its own. The state every family shares
// (sockfs identity, pending SO_ERROR, the SOL_SOCKET options that only store a value or
// set a buffer size or timeout) lives here, implemented once.
// All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_NET_SOCKET_H_
#define USENTRY_SENTRY_NET_SOCKET_H_

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/kernel/wait_queue.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry::net {

inline constexpr int kShutRd = 1;  // Linux RCV_SHUTDOWN
inline constexpr int kShutWr = 2;  // Linux SEND_SHUTDOWN
inline constexpr int kShutBoth = kShutRd | kShutWr;

// Defaults and limits with Linux's default sysctl values.
inline constexpr int kDefaultSockBuf = 212992;  // net.core.{w,r}mem_default
inline constexpr int kSockBufMax = 212992;      // net.core.{w,r}mem_max
inline constexpr int kMinSndbuf = 4608;         // SOCK_MIN_SNDBUF
inline constexpr int kMinRcvbuf = 2304;         // SOCK_MIN_RCVBUF
inline constexpr int kSomaxconn = 4096;         // net.core.somaxconn

inline constexpr EventMask kReadableEvents = 0x001 | 0x040;          // POLLIN | POLLRDNORM
inline constexpr EventMask kWritableEvents = 0x004 | 0x100 | 0x200;  // POLLOUT|WRNORM|WRBAND

// Credentials as SO_PEERCRED / SCM_CREDENTIALS carry them, in the sandbox's view.
struct Ucred {
  int32_t pid = 0;
  uint32_t uid = ~0u;
  uint32_t gid = ~0u;
  bool operator==(const Ucred& o) const { return pid == o.pid && uid == o.uid && gid == o.gid; }
};

// A control message of a level the family interprets itself (SOL_IP, SOL_IPV6, SOL_UDP):
// as sendmsg passed it, or as recvmsg returns it. `data` is the payload after the header.
struct ControlMessage {
  int level = 0;
  int type = 0;
  std::string data;
};

// Arguments of a send: the data (sentry spans), the raw destination (msg_name, when
// msg_namelen != 0) and the parsed control messages (only AF_UNIX accepts rights and
// credentials; see Socket::takes_unix_control).
struct SendArgs {
  absl::Span<const iovec> data;
  std::optional<std::string> name;
  std::vector<std::shared_ptr<vfs::FileDescription>> rights;
  std::optional<Ucred> creds;  // explicit SCM_CREDENTIALS (already validated)
  // Control messages of other levels, unparsed; families that do not use them ignore them.
  std::vector<ControlMessage> control;
  int flags = 0;
  // write(2) ignores SO_SNDTIMEO: the VFS's blocking loop would retry a timed-out call.
  bool use_timeout = true;
};

// What a receive reports besides the data.
struct RecvResult {
  size_t copied = 0;
  size_t msg_len = 0;      // dgram/seqpacket: the whole message (MSG_TRUNC)
  int msg_flags = 0;       // MSG_TRUNC
  std::string from;        // the sender's sockaddr bytes; empty when it has no name
  bool has_creds = false;  // AF_UNIX: set when SO_PASSCRED is on and data was read
  Ucred creds;
  std::vector<std::shared_ptr<vfs::FileDescription>> rights;
  // Other control messages (IP_PKTINFO, IPV6_HOPLIMIT...), in the order Linux puts them.
  std::vector<ControlMessage> control;
};

class Socket : public vfs::FileDescription {
 public:
  // `status_flags` may hold O_NONBLOCK; uid/gid own the socket inode (fstat).
  Socket(int family, int type, int protocol, int status_flags, uint32_t uid, uint32_t gid);
  ~Socket() override;

  int family() const { return family_; }
  int type() const { return type_; }
  int protocol() const { return protocol_; }
  uint32_t uid() const { return uid_; }
  uint32_t gid() const { return gid_; }

  // --- the socket syscalls; `sockaddr` is the app's raw address ---
  virtual SysStatus Bind(Task& task, const std::string& sockaddr) = 0;
  virtual SysStatus Listen(Task& task, int backlog) = 0;
  // The accepted connection; *peer gets its peer's sockaddr (what accept(2) stores).
  virtual SysResult<std::shared_ptr<Socket>> Accept(Task& task, std::string* peer) = 0;
  virtual SysStatus Connect(Task& task, const std::string& sockaddr) = 0;
  virtual SysStatus Shutdown(int how) = 0;
  // getsockname / getpeername: the sockaddr bytes (getpeername: ENOTCONN when none).
  virtual std::string SockName() = 0;
  virtual SysResult<std::string> PeerName() = 0;
  // `task` may be null only in unit tests (no blocking, no credentials, no SIGPIPE).
  virtual SysResult<size_t> SendMsg(Task* task, SendArgs& args) = 0;
  // recv*(2): Receive() with SO_RCVTIMEO.
  SysResult<size_t> RecvMsg(Task* task, absl::Span<const iovec> dst, int flags, RecvResult* out) {
    return Receive(task, dst, flags, out, rcvtimeo_);
  }
  // The option's full value as bytes (the caller truncates to the app's optlen).
  // Defaults: SOL_SOCKET through the shared options below, other levels EOPNOTSUPP.
  virtual SysResult<std::string> GetOption(Task& task, int level, int name);
  virtual SysStatus SetOption(Task& task, int level, int name, const std::string& value);
  // Whether sendmsg may carry SCM_RIGHTS/SCM_CREDENTIALS (AF_UNIX); other families get
  // EINVAL for them, as Linux's sock_cmsg_send.
  virtual bool takes_unix_control() const { return false; }

  // --- FileDescription ---
  // The interface ioctls every socket answers (interface_ioctl.h), for commands the
  // family's own Ioctl does not handle: a family overrides Ioctl for its commands and
  // calls Socket::Ioctl for the rest, as Linux's sock_ioctl falls back to dev_ioctl.
  SysResult<uint64_t> Ioctl(Task& task, uint64_t cmd, uint64_t arg) override;
  // read(2)/write(2): a receive or send without flags and without SO_RCVTIMEO/SO_SNDTIMEO
  // (the VFS's blocking loop would retry a timed-out call). Control data that arrives
  // with the bytes (SCM_RIGHTS) is dropped, as on Linux.
  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) final;
  SysResult<size_t> Write(Task* task, absl::Span<const iovec> src, int64_t offset) final;
  SysResult<vfs::Attr> Stat() override;
  WaitQueue* wait_queue() override { return &wq_; }
  std::string AnonName() const override;

 protected:
  // SOL_SOCKET options of every family: SO_TYPE, SO_DOMAIN, SO_PROTOCOL, SO_ERROR,
  // SO_ACCEPTCONN, buffer sizes (Linux's doubling and clamping), SO_LINGER,
  // SO_RCVTIMEO/SO_SNDTIMEO, and the options that are only stored (SO_REUSEADDR,
  // SO_KEEPALIVE, ...). ENOPROTOOPT for the rest, which a family may then handle.
  SysResult<std::string> GetCommonOption(int name);
  SysStatus SetCommonOption(Task& task, int name, const std::string& value);
  // A receive into `dst` (sentry spans) honouring `flags`; `timeout` zero = forever.
  virtual SysResult<size_t> Receive(Task* task, absl::Span<const iovec> dst, int flags,
                                    RecvResult* out, absl::Duration timeout) = 0;
  // For SO_ACCEPTCONN.
  virtual bool listening() const = 0;
  // A stored SOL_SOCKET flag option (SO_REUSEADDR, SO_KEEPALIVE, ...); its default if unset.
  int flag_option(int name) const;
  bool nonblocking_for(int flags) const { return nonblocking() || (flags & MSG_DONTWAIT); }

  const int family_;
  const int type_;
  const int protocol_;
  const uint64_t ino_;
  const uint32_t uid_, gid_;
  const struct timespec ctime_;
  int error_ = 0;  // pending SO_ERROR
  int sndbuf_ = kDefaultSockBuf;
  int rcvbuf_ = kDefaultSockBuf;
  std::map<int, int> flag_opts_;  // stored boolean/int options (SO_REUSEADDR, ...)
  struct linger linger_ {};
  absl::Duration rcvtimeo_ = absl::ZeroDuration();  // zero = forever
  absl::Duration sndtimeo_ = absl::ZeroDuration();
  WaitQueue wq_;
};

// Option values as bytes, for GetOption implementations.
template <typename T>
std::string OptionBytes(const T& v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof(v));
}
// An int option value: EINVAL when shorter than an int.
SysResult<int> OptionInt(const std::string& value);

// Copies n bytes of src into the spans, starting `off` bytes into them.
void CopyToSpans(absl::Span<const iovec> dst, size_t off, const uint8_t* src, size_t n);
// n bytes of the spans starting `off` bytes into them.
std::vector<uint8_t> GatherSpans(absl::Span<const iovec> src, size_t off, size_t n);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_SOCKET_H_
