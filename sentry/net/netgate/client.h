// netgate::Client: the sentry's end of the netgate protocol (protocol.h). Requests are
// sent by task threads holding the kernel lock; one reader thread receives replies and
// runs their callbacks with that lock held. If netgate goes away, every pending request
// fails (SERVFAIL / ENETUNREACH) and later ones fail at once.
#ifndef USENTRY_SENTRY_NET_NETGATE_CLIENT_H_
#define USENTRY_SENTRY_NET_NETGATE_CLIENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "base/ip_address.h"
#include "base/sys_result.h"
#include "base/unique_fd.h"
#include "sentry/net/netgate/protocol.h"

namespace usentry::netgate {

class Client {
 public:
  using ResolveDone = std::function<void(const ResolveReply&)>;
  // On success (reply.err == 0) `fd` is the connected socket (TCP) or the datagram relay
  // (UDP), non-blocking and close-on-exec.
  using ConnectDone = std::function<void(const ConnectReply&, UniqueFd fd)>;

  // `mu` is the lock callbacks run under (the kernel lock); it outlives the client.
  Client(UniqueFd sock, absl::Mutex* mu);
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  // The reader thread is detached and uses the client until netgate closes the socket:
  // the sentry never destroys a started client (the process exits instead).
  ~Client() = default;

  // Starts the reader thread. Call once.
  void Start();
  // EPIPE when netgate is gone (the callback is then never called).
  SysStatus Resolve(const std::string& name, uint16_t qtype, ResolveDone done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu_);
  SysStatus Connect(policy::NetProto proto, const IpAddress& ip, uint16_t port, bool host_port,
                    ConnectDone done) ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu_);
  void Close(uint64_t conn, uint64_t bytes_in, uint64_t bytes_out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu_);

 private:
  void ReadLoop();
  void FailAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu_);
  SysStatus SendLocked(const Request& req) ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu_);

  UniqueFd sock_;
  absl::Mutex* mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(*mu_) = 1;
  bool dead_ ABSL_GUARDED_BY(*mu_) = false;
  std::map<uint64_t, ResolveDone> resolves_ ABSL_GUARDED_BY(*mu_);
  std::map<uint64_t, ConnectDone> connects_ ABSL_GUARDED_BY(*mu_);
};

}  // namespace usentry::netgate

#endif  // USENTRY_SENTRY_NET_NETGATE_CLIENT_H_
