// Helpers for the AF_INET/AF_INET6 tests (inet_*_test.cc): loopback addresses of either
// family, sockets bound to ephemeral ports, connected pairs. These programs run natively
// too: loopback only, and every port is one the kernel picked (bind port 0).
#ifndef USENTRY_TESTS_SYSCALLS_INET_TEST_UTIL_H_
#define USENTRY_TESTS_SYSCALLS_INET_TEST_UTIL_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cstring>
#include <string>
#include <utility>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {

// Like ASSERT_SYS_OK, without ending the case.
#define EXPECT_SYS_OK(expr)                                               \
  do {                                                                    \
    errno = 0;                                                            \
    auto syscall_test_ret_ = (expr);                                      \
    EXPECT_NE(syscall_test_ret_, -1) << #expr << ": " << strerror(errno); \
  } while (0)

struct SockAddr {
  sockaddr_storage ss{};
  socklen_t len = 0;
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&ss); }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&ss); }
  int family() const { return ss.ss_family; }
  uint16_t port() const {
    return ntohs(family() == AF_INET ? reinterpret_cast<const sockaddr_in*>(&ss)->sin_port
                                     : reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  }
  void set_port(uint16_t p) {
    if (family() == AF_INET) {
      reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(p);
    } else {
      reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(p);
    }
  }
  // "127.0.0.1" / "::1" / "::ffff:127.0.0.1".
  std::string ip() const {
    char buf[INET6_ADDRSTRLEN] = {};
    if (family() == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, buf, sizeof(buf));
    } else {
      inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof(buf));
    }
    return buf;
  }
};

// `text` ("127.0.0.1", "::1", "::ffff:127.0.0.1", "0.0.0.0", "::") with `port`.
inline SockAddr Addr(const std::string& text, uint16_t port = 0) {
  SockAddr a;
  if (text.find(':') == std::string::npos) {
    auto* s = reinterpret_cast<sockaddr_in*>(&a.ss);
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    inet_pton(AF_INET, text.c_str(), &s->sin_addr);
    a.len = sizeof(sockaddr_in);
  } else {
    auto* s = reinterpret_cast<sockaddr_in6*>(&a.ss);
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    inet_pton(AF_INET6, text.c_str(), &s->sin6_addr);
    a.len = sizeof(sockaddr_in6);
  }
  return a;
}

inline SockAddr Loopback(int family, uint16_t port = 0) {
  return Addr(family == AF_INET ? "127.0.0.1" : "::1", port);
}
inline SockAddr AnyAddr(int family, uint16_t port = 0) {
  return Addr(family == AF_INET ? "0.0.0.0" : "::", port);
}

inline SockAddr SockName(int fd) {
  SockAddr a;
  a.len = sizeof(a.ss);
  if (getsockname(fd, a.get(), &a.len) != 0) abort();
  return a;
}

inline SockAddr PeerName(int fd) {
  SockAddr a;
  a.len = sizeof(a.ss);
  if (getpeername(fd, a.get(), &a.len) != 0) a.len = 0;
  return a;
}

inline ScopedFd Sock(int family, int type, int flags = 0) {
  ScopedFd s(socket(family, type | flags, 0));
  if (s.get() < 0) abort();
  return s;
}

// A socket bound to the loopback at a port the kernel chose.
inline ScopedFd Bound(int family, int type) {
  ScopedFd s = Sock(family, type);
  SockAddr a = Loopback(family);
  if (bind(s.get(), a.get(), a.len) != 0) abort();
  return s;
}

inline ScopedFd Listener(int family, int backlog = 8) {
  ScopedFd s = Bound(family, SOCK_STREAM);
  if (listen(s.get(), backlog) != 0) abort();
  return s;
}

struct TcpConn {
  ScopedFd listener, client, server;
};

// A listener, a client connected to it and the accepted server side.
inline TcpConn Connected(int family) {
  TcpConn c;
  c.listener = Listener(family);
  c.client = Sock(family, SOCK_STREAM);
  SockAddr a = SockName(c.listener.get());
  if (connect(c.client.get(), a.get(), a.len) != 0) abort();
  c.server = ScopedFd(accept(c.listener.get(), nullptr, nullptr));
  if (c.server.get() < 0) abort();
  return c;
}

// A loopback port that was free a moment ago and that nothing of ours listens on.
inline SockAddr ClosedPort(int family, int type) {
  ScopedFd s = Bound(family, type);
  return SockName(s.get());
}

inline short PollOnce(int fd, short events, int timeout_ms = 0) {
  pollfd p{fd, events, 0};
  if (poll(&p, 1, timeout_ms) < 0) return -1;
  return p.revents;
}

inline int GetInt(int fd, int level, int name) {
  int v = -12345;
  socklen_t len = sizeof(v);
  if (getsockopt(fd, level, name, &v, &len) != 0) return -errno - 100000;
  return v;
}

inline int SetInt(int fd, int level, int name, int v) {
  return setsockopt(fd, level, name, &v, sizeof(v));
}

inline int WaitChild(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline const char* FamilyName(int family) { return family == AF_INET ? "V4" : "V6"; }

}  // namespace syscall_test

#endif  // USENTRY_TESTS_SYSCALLS_INET_TEST_UTIL_H_
