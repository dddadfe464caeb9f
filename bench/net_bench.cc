// Network microbenchmarks: what a TCP connection, a small round trip, bulk TCP and a UDP
// round trip cost, natively or in the sandbox (bench/compare.sh runs this binary both ways
// and prints the ratios).
//
//   net_bench [BENCHMARK FLAGS]                     peer: a child of this process (loopback)
//   net_bench --target=HOST:PORT [BENCHMARK FLAGS]  peer: `net_bench --serve` at HOST:PORT
//   net_bench --serve=PORT                          be that peer on 127.0.0.1:PORT (TCP and
//                                                   UDP); PORT 0 picks one; prints the port
//
// HOST is a loopback address, localhost, or host.usentry.internal from /etc/hosts (in a
// sandbox run with --allow-host-port): net_bench never asks DNS and never dials anything
// else (net_addr.h), so natively it stays on the host's loopback.
//
// The peer is a separate process in both modes (net_peer.h), so that the loopback and the
// --target rows measure the same client against the same server code, and a round trip is
// two tasks handing a byte back and forth, as in syscall_bench's PipeRoundTrip; a thread of
// this process would instead share its address space and its sandbox task group. In the
// sandbox the child is in the sandbox too: its half of the work is emulated as well.
//
// Every benchmark uses real time: a client blocked on its peer spends little CPU, and
// Google Benchmark would otherwise size the runs (and compute bytes/s) from CPU time.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/net_addr.h"
#include "bench/net_peer.h"
#include "benchmark/benchmark.h"

namespace usentry::bench {
namespace {

// Where the peer is: our own child (external = false) or `--target`.
struct Target {
  SockAddr addr;
  bool external = false;
};
Target g_target;

constexpr size_t kChunk = 64 << 10;  // BM_TcpThroughput's write size

absl::StatusOr<UniqueFd> ConnectTcp(const SockAddr& to) {
  UniqueFd fd(socket(to.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus("socket(SOCK_STREAM)");
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&to.ss), to.len) != 0) {
    return ErrnoStatus(absl::StrCat("connect(", to.text, ")"));
  }
  return fd;
}

// A connection to the peer's service `mode` (net_peer.h), with TCP_NODELAY, as any
// latency-sensitive client sets it.
absl::StatusOr<UniqueFd> OpenService(char mode) {
  ASSIGN_OR_RETURN(UniqueFd fd, ConnectTcp(g_target.addr));
  int one = 1;
  if (setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    return ErrnoStatus("setsockopt(TCP_NODELAY)");
  }
  RETURN_IF_ERROR(SendAll(fd.get(), &mode, 1));
  return fd;
}

void Fail(benchmark::State& state, const absl::Status& st) {
  state.SkipWithError(std::string(st.message()).c_str());
}

// Loopback: connect to a listener of this thread, accept, close both. The accepted end
// closes first, so TIME_WAIT stays on the listener's side and the client's ephemeral
// ports are free again at once (the other way round, a fast host would run out of them).
void ConnectAcceptOwnListener(benchmark::State& state) {
  UniqueFd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  SockAddr addr = Loopback4(0);
  socklen_t len = addr.len;
  if (!listener.valid() ||
      bind(listener.get(), reinterpret_cast<sockaddr*>(&addr.ss), addr.len) != 0 ||
      listen(listener.get(), 128) != 0 ||
      getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr.ss), &len) != 0) {
    Fail(state, ErrnoStatus("listener on 127.0.0.1"));
    return;
  }
  for (auto _ : state) {
    UniqueFd c(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!c.valid() || connect(c.get(), reinterpret_cast<sockaddr*>(&addr.ss), addr.len) != 0) {
      Fail(state, ErrnoStatus("socket+connect"));
      break;
    }
    UniqueFd s(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!s.valid()) {
      Fail(state, ErrnoStatus("accept4"));
      break;
    }
    s.reset();
    c.reset();
  }
}

// --target: the listener is the peer's. Connect, say "accept", wait for the peer's close
// (EOF), close: the handshake, one byte, and the peer's accept+close, per iteration.
// Waiting keeps client and peer in step (a client that ran ahead would fill the backlog).
void ConnectAcceptExternal(benchmark::State& state) {
  for (auto _ : state) {
    auto fd = OpenService(kModeAccept);
    if (!fd.ok()) {
      Fail(state, fd.status());
      break;
    }
    char c;
    ssize_t n = recv(fd->get(), &c, 1, 0);
    if (n != 0) {
      Fail(state, n < 0 ? ErrnoStatus("recv") : absl::DataLossError("peer sent data, not EOF"));
      break;
    }
  }
}

void BM_TcpConnectAccept(benchmark::State& state) {
  if (g_target.external) {
    ConnectAcceptExternal(state);
  } else {
    ConnectAcceptOwnListener(state);
  }
}
BENCHMARK(BM_TcpConnectAccept)->UseRealTime();

// One byte to the echo peer and back, over one established connection.
void BM_TcpRoundTrip(benchmark::State& state) {
  auto fd = OpenService(kModeEcho);
  if (!fd.ok()) {
    Fail(state, fd.status());
    return;
  }
  char c = 'x';
  for (auto _ : state) {
    if (send(fd->get(), &c, 1, MSG_NOSIGNAL) != 1 || recv(fd->get(), &c, 1, 0) != 1) {
      Fail(state, ErrnoStatus("1-byte send/recv"));
      break;
    }
  }
}
BENCHMARK(BM_TcpRoundTrip)->UseRealTime();

// 64 KiB writes to the sink peer. The last iteration also shuts down and waits for the
// sink's count, so the time covers every byte the sink read, not bytes still sitting in
// socket buffers (several MB natively), and the count checks that nothing was lost.
void BM_TcpThroughput(benchmark::State& state) {
  auto fd = OpenService(kModeSink);
  if (!fd.ok()) {
    Fail(state, fd.status());
    return;
  }
  std::vector<char> chunk(kChunk, 'x');
  uint64_t sent = 0;
  for (auto _ : state) {
    absl::Status st = SendAll(fd->get(), chunk.data(), chunk.size());
    if (st.ok()) sent += kChunk;
    if (st.ok() && static_cast<benchmark::IterationCount>(sent / kChunk) == state.max_iterations) {
      uint64_t got = 0;
      if (shutdown(fd->get(), SHUT_WR) != 0) {
        st = ErrnoStatus("shutdown");
      } else {
        st = RecvAll(fd->get(), &got, sizeof(got));
      }
      if (st.ok() && got != sent) {
        st = absl::DataLossError(absl::StrCat("sink read ", got, " bytes of ", sent));
      }
    }
    if (!st.ok()) {
      Fail(state, st);
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(sent));
}
BENCHMARK(BM_TcpThroughput)->UseRealTime();

// One datagram to the UDP echo on the peer's port and one back. A reply that does not
// come in 2 s (nothing is ever lost on a loopback in lock step) fails the benchmark
// rather than hanging it.
void BM_UdpRoundTrip(benchmark::State& state) {
  const SockAddr& to = g_target.addr;
  UniqueFd fd(socket(to.ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid() || connect(fd.get(), reinterpret_cast<const sockaddr*>(&to.ss), to.len) != 0) {
    Fail(state, ErrnoStatus(absl::StrCat("udp socket+connect(", to.text, ")")));
    return;
  }
  timeval tv{2, 0};
  (void)setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char c = 'x';
  for (auto _ : state) {
    if (send(fd.get(), &c, 1, 0) != 1) {
      Fail(state, ErrnoStatus("udp send"));
      break;
    }
    if (recv(fd.get(), &c, 1, 0) != 1) {
      Fail(state, ErrnoStatus("udp recv (no reply in 2 s?)"));
      break;
    }
  }
}
BENCHMARK(BM_UdpRoundTrip)->UseRealTime();

// The value of `--name=VALUE` in `arg`, if it is that flag.
bool FlagValue(const char* arg, const char* name, std::string* value) {
  std::string prefix = absl::StrCat("--", name, "=");
  if (strncmp(arg, prefix.c_str(), prefix.size()) != 0) return false;
  *value = arg + prefix.size();
  return true;
}

int RunServe(const std::string& port_text) {
  uint32_t port = 0;
  if (!absl::SimpleAtoi(port_text, &port) || port > 65535) {
    fprintf(stderr, "net_bench: --serve=%s: expected a port (0 picks one)\n", port_text.c_str());
    return 2;
  }
  auto socks = BindLoopbackPeer(static_cast<uint16_t>(port));
  if (!socks.ok()) {
    fprintf(stderr, "net_bench: %s\n", std::string(socks.status().message()).c_str());
    return 1;
  }
  // The port alone on stdout, for scripts; the rest for people.
  printf("%u\n", socks->port);
  fflush(stdout);
  fprintf(stderr, "net_bench: serving on 127.0.0.1:%u (TCP and UDP)\n", socks->port);
  absl::Status st = Serve(std::move(socks).value(), -1);
  fprintf(stderr, "net_bench: %s\n", std::string(st.message()).c_str());
  return 1;
}

// Forks the loopback peer. Returns its pid; `lifeline` is the write end whose closing
// (or our death) tells it to go.
absl::StatusOr<pid_t> StartChildPeer(UniqueFd* lifeline) {
  ASSIGN_OR_RETURN(PeerSockets socks, BindLoopbackPeer(0));
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return ErrnoStatus("pipe2");
  UniqueFd rd(p[0]), wr(p[1]);
  pid_t pid = fork();
  if (pid < 0) return ErrnoStatus("fork");
  if (pid == 0) {
    wr.reset();
    absl::Status st = Serve(std::move(socks), rd.get());
    _exit(st.ok() ? 0 : 1);
  }
  g_target.addr = Loopback4(socks.port);
  *lifeline = std::move(wr);
  return pid;  // the listener and UDP socket close here: they are the child's now
}

}  // namespace
}  // namespace usentry::bench

int main(int argc, char** argv) {
  using namespace usentry::bench;
  std::vector<char*> rest{argv[0]};
  std::string target, serve;
  bool serving = false;
  for (int i = 1; i < argc; ++i) {
    if (FlagValue(argv[i], "serve", &serve)) {
      serving = true;
    } else if (!FlagValue(argv[i], "target", &target)) {
      rest.push_back(argv[i]);
    }
  }
  signal(SIGPIPE, SIG_IGN);  // a peer that goes away is an error of the benchmark, not a kill
  if (serving) return RunServe(serve);

  usentry::UniqueFd lifeline;
  pid_t child = -1;
  if (!target.empty()) {
    auto a = ParseTarget(target);
    if (!a.ok()) {
      fprintf(stderr, "net_bench: --target=%s: %s\n", target.c_str(),
              std::string(a.status().message()).c_str());
      return 2;
    }
    g_target.addr = std::move(a).value();
    g_target.external = true;
  } else {
    auto pid = StartChildPeer(&lifeline);
    if (!pid.ok()) {
      fprintf(stderr, "net_bench: loopback peer: %s\n",
              std::string(pid.status().message()).c_str());
      return 1;
    }
    child = *pid;
  }
  int rest_argc = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;
  benchmark::AddCustomContext("net_bench.peer", g_target.external ? "external " + g_target.addr.text
                                                                  : "child " + g_target.addr.text);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (child > 0) {
    lifeline.reset();
    waitpid(child, nullptr, 0);
  }
  return 0;
}
