// Test doubles for the netstack's way out (egress.h) and helpers for the inet unit
// tests: a FakeEgress whose "host sockets" are ends of host socketpairs the test holds,
// a FakeDns answering from a table, and send/receive shorthands. Test-only.
#ifndef USENTRY_SENTRY_NET_INET_TEST_FAKES_H_
#define USENTRY_SENTRY_NET_INET_TEST_FAKES_H_

#include <fcntl.h>
#include <sys/socket.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/unique_fd.h"
#include "sentry/kernel/task.h"
#include "sentry/net/egress.h"
#include "sentry/net/inet_address.h"
#include "sentry/net/socket.h"

namespace usentry::sentry::net {

class FakeEgress : public Egress {
 public:
  struct Call {
    Transport transport;
    Endpoint dst;
    ConnectDone done;
  };
  struct ClosedRecord {
    uint64_t id;
    Transport transport;
    Endpoint dst;
    uint64_t bytes_in, bytes_out;
  };

  SysStatus Connect(Task& task, Transport t, const Endpoint& dst, ConnectDone done) override {
    if (refuse != 0) return Errno{refuse};
    calls.push_back(Call{t, dst, std::move(done)});
    return SysOk();
  }
  void Closed(uint64_t id, Transport t, const Endpoint& dst, uint64_t bytes_in,
              uint64_t bytes_out) override {
    closed.push_back(ClosedRecord{id, t, dst, bytes_in, bytes_out});
  }

  // Completes call `i` with a fresh host socketpair of `type`; returns the test's end.
  // Requires Kernel::mu (as netgate's reply reader holds it).
  UniqueFd Complete(size_t i, int type, uint64_t id, Endpoint local) {
    int sv[2];
    if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) != 0) abort();
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    EgressConnection c;
    c.fd = UniqueFd(sv[0]);
    c.id = id;
    c.local = local;
    calls[i].done(std::move(c));
    return UniqueFd(sv[1]);
  }

  int refuse = 0;  // errno Connect answers with (0: accept)
  std::vector<Call> calls;
  std::vector<ClosedRecord> closed;
};

class FakeDns : public DnsService {
 public:
  // Answers "answer:" + query at once unless `defer`; then the test calls the reply.
  void Query(Task& task, std::string query, Reply reply) override {
    queries.push_back(query);
    if (defer) {
      pending.push_back(std::move(reply));
      return;
    }
    reply("answer:" + query);
  }

  bool defer = false;
  std::vector<std::string> queries;
  std::vector<Reply> pending;
};

inline std::string SockaddrOf(int family, const std::string& ip, uint16_t port) {
  return FormatInetSockaddr(family, InetAddr{*IpAddress::Parse(ip), port});
}

// Sends `data` (to `to`, when given) without blocking and without SIGPIPE.
inline SysResult<size_t> SendTo(Task& t, Socket& s, std::string data,
                                std::optional<std::string> to = std::nullopt) {
  iovec v{data.data(), data.size()};
  SendArgs args;
  args.data = absl::MakeConstSpan(&v, 1);
  args.flags = MSG_DONTWAIT | MSG_NOSIGNAL;
  args.name = std::move(to);
  return s.SendMsg(&t, args);
}

inline SysResult<std::string> RecvFrom(Task& t, Socket& s, size_t n, RecvResult* out = nullptr,
                                       int flags = MSG_DONTWAIT) {
  std::string buf(n, '\0');
  iovec v{buf.data(), buf.size()};
  RecvResult local;
  ASSIGN_OR_RETURN_ERRNO(size_t got,
                         s.RecvMsg(&t, absl::MakeConstSpan(&v, 1), flags, out ? out : &local));
  buf.resize(std::min(got, n));
  return buf;
}

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_INET_TEST_FAKES_H_
