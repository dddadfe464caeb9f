// TcpSocket options at SOL_TCP, with Linux's ranges and read-back conversions
// (TCP_DEFER_ACCEPT in retransmits, TCP_LINGER2's default), and TCP_INFO. Through Egress,
// TCP_NODELAY and the keepalive timers also go to the host socket (tcp_egress.cc).
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <algorithm>
#include <cstring>

#include "abi/tcp.h"
#include "sentry/net/tcp_socket.h"

namespace usentry::sentry::net {
namespace {

constexpr int kMssDefault = 536;       // TCP_MSS_DEFAULT: before a route is known
constexpr int kMinMss = 88;            // TCP_MIN_MSS
constexpr int kMaxWindow = 32767;      // MAX_TCP_WINDOW: the largest TCP_MAXSEG
constexpr int kMaxKeepIdle = 32767;    // MAX_TCP_KEEPIDLE, also MAX_TCP_KEEPINTVL
constexpr int kMaxKeepCnt = 127;       // MAX_TCP_KEEPCNT
constexpr int kMaxSynCnt = 127;        // MAX_TCP_SYNCNT
constexpr int kFinTimeout = 60;        // net.ipv4.tcp_fin_timeout
constexpr int kFinTimeoutMax = 120;    // TCP_FIN_TIMEOUT_MAX
constexpr int kMinWindowClamp = 1152;  // SOCK_MIN_RCVBUF / 2
constexpr size_t kCaNameMax = 16;      // TCP_CA_NAME_MAX
// IPv4/IPv6 + TCP headers with timestamps, below the MTU.
constexpr int kHeaderBytes = 40 + 12;
// TCP_DEFER_ACCEPT's conversion: SYN-ACK retransmits from an initial 1 s timeout
// doubling up to TCP_RTO_MAX (120 s).
constexpr int kTimeoutInit = 1;
constexpr int kRtoMax = 120;

int SecsToRetrans(int seconds) {
  if (seconds <= 0) return 0;
  int res = 1, timeout = kTimeoutInit, period = kTimeoutInit;
  while (seconds > period && res < 255) {
    ++res;
    timeout = std::min(timeout * 2, kRtoMax);
    period += timeout;
  }
  return res;
}

int RetransToSecs(int retrans) {
  if (retrans <= 0) return 0;
  int timeout = kTimeoutInit, period = kTimeoutInit;
  while (--retrans > 0) {
    timeout = std::min(timeout * 2, kRtoMax);
    period += timeout;
  }
  return period;
}

}  // namespace

void TcpSocket::SocketOptionChanged(int name) {
  if (name == SO_KEEPALIVE) PassOptionsToHost();
  // A larger receive buffer is room for a writer waiting on the other side.
  if (name == SO_RCVBUF || name == SO_RCVBUFFORCE) {
    if (auto peer = peer_.lock()) peer->wq_.Notify(kWritableEvents);
  }
}

SysResult<std::string> TcpSocket::GetTransportOption(Task& task, int level, int name) {
  switch (name) {
    case TCP_NODELAY:
      return OptionBytes(int{tcp_.nodelay});
    case TCP_CORK:
      return OptionBytes(int{tcp_.cork});
    case TCP_MAXSEG: {
      int mss = tcp_.user_mss != 0 ? tcp_.user_mss : kMssDefault;
      if (state_ != kTcpClose && state_ != kTcpListen) {
        int path = (is_egress() ? kEthMtu : kLoopbackMtu) - kHeaderBytes;
        mss = tcp_.user_mss != 0 ? std::min(tcp_.user_mss, path) : path;
      }
      return OptionBytes(mss);
    }
    case TCP_KEEPIDLE:
      return OptionBytes(tcp_.keepidle);
    case TCP_KEEPINTVL:
      return OptionBytes(tcp_.keepintvl);
    case TCP_KEEPCNT:
      return OptionBytes(tcp_.keepcnt);
    case TCP_SYNCNT:
      return OptionBytes(tcp_.syncnt);
    case TCP_LINGER2:
      return OptionBytes(tcp_.linger2 < 0 ? -1 : tcp_.linger2 != 0 ? tcp_.linger2 : kFinTimeout);
    case TCP_DEFER_ACCEPT:
      return OptionBytes(RetransToSecs(tcp_.defer_accept));
    case TCP_WINDOW_CLAMP:
      return OptionBytes(tcp_.window_clamp);
    case TCP_QUICKACK:
      return OptionBytes(tcp_.quickack);
    case TCP_USER_TIMEOUT:
      return OptionBytes(tcp_.user_timeout);
    case TCP_FASTOPEN:
      return OptionBytes(tcp_.fastopen);
    case TCP_FASTOPEN_CONNECT:
      return OptionBytes(tcp_.fastopen_connect);
    case TCP_FASTOPEN_NO_COOKIE:
      return OptionBytes(tcp_.fastopen_no_cookie);
    case TCP_NOTSENT_LOWAT:
      return OptionBytes(tcp_.notsent_lowat);
    case TCP_THIN_LINEAR_TIMEOUTS:
      return OptionBytes(tcp_.thin_linear_timeouts);
    case TCP_SAVE_SYN:
      return OptionBytes(tcp_.save_syn);
    case TCP_INQ:
      return OptionBytes(tcp_.inq);
    case TCP_TX_DELAY:
      return OptionBytes(tcp_.tx_delay);
    case TCP_CONGESTION: {
      std::string n = tcp_.congestion;
      n.resize(kCaNameMax, '\0');
      return n;
    }
    case TCP_INFO: {
      // Plausible figures for a loopback (or netgate) connection: what programs read
      // is tcpi_state, the MSS values and the byte counters.
      abi::TcpInfo ti{};
      ti.state = state_;
      const bool connected = state_ != kTcpClose && state_ != kTcpListen && state_ != kTcpSynSent;
      int mss = is_egress() ? kEthMtu - kHeaderBytes : kLoopbackMtu - kHeaderBytes;
      ti.rto = connected ? 204000 : 1000000;
      ti.ato = connected ? 40000 : 0;
      ti.snd_mss = connected ? mss : kMssDefault;
      ti.rcv_mss = connected ? mss : kMssDefault;
      if (connected) {
        ti.options = abi::kTcpiOptTimestamps | abi::kTcpiOptSack | abi::kTcpiOptWscale;
        ti.wscale = 7 << 4 | 7;
        ti.rtt = 50;
        ti.rttvar = 25;
        ti.min_rtt = 10;
      }
      ti.pmtu = is_egress() ? kEthMtu : kLoopbackMtu;
      ti.rcv_ssthresh = ti.snd_ssthresh = 0x7fffffff;  // TCP_INFINITE_SSTHRESH
      ti.snd_cwnd = 10;
      ti.advmss = mss;
      ti.reordering = 3;
      ti.rcv_space = static_cast<uint32_t>(rcvbuf_ / 2);
      uint64_t in = egress_ready() ? egress_->bytes_in : bytes_received_;
      uint64_t out = egress_ready() ? egress_->bytes_out : bytes_acked_;
      ti.bytes_acked = ti.bytes_sent = out;
      ti.bytes_received = in;
      ti.notsent_bytes = static_cast<uint32_t>(Unsent());
      ti.snd_wnd = static_cast<uint32_t>(rcvbuf_);
      return OptionBytes(ti);
    }
    default:
      return Errno{ENOPROTOOPT};
  }
}

SysStatus TcpSocket::SetTransportOption(Task& task, int level, int name, const std::string& value) {
  if (name == TCP_CONGESTION) {
    if (value.empty()) return Errno{EINVAL};
    std::string n(value.data(), strnlen(value.data(), std::min(value.size(), kCaNameMax - 1)));
    // The algorithms every Linux has built in; the sandbox's stack does not care.
    if (n != "cubic" && n != "reno") return Errno{ENOENT};
    tcp_.congestion = n;
    return SysOk();
  }
  if (name == TCP_ULP) return Errno{ENOENT};  // no upper-layer protocols (kTLS)
  ASSIGN_OR_RETURN_ERRNO(int v, OptionInt(value));
  switch (name) {
    case TCP_NODELAY:
      tcp_.nodelay = v != 0;
      PassOptionsToHost();
      return SysOk();
    case TCP_CORK:
      tcp_.cork = v != 0;
      return SysOk();
    case TCP_MAXSEG:
      if (v != 0 && (v < kMinMss || v > kMaxWindow)) return Errno{EINVAL};
      tcp_.user_mss = v;
      return SysOk();
    case TCP_KEEPIDLE:
    case TCP_KEEPINTVL:
      if (v < 1 || v > kMaxKeepIdle) return Errno{EINVAL};
      (name == TCP_KEEPIDLE ? tcp_.keepidle : tcp_.keepintvl) = v;
      PassOptionsToHost();
      return SysOk();
    case TCP_KEEPCNT:
      if (v < 1 || v > kMaxKeepCnt) return Errno{EINVAL};
      tcp_.keepcnt = v;
      PassOptionsToHost();
      return SysOk();
    case TCP_SYNCNT:
      if (v < 1 || v > kMaxSynCnt) return Errno{EINVAL};
      tcp_.syncnt = v;
      return SysOk();
    case TCP_LINGER2:
      tcp_.linger2 = v < 0 ? -1 : std::min(v, kFinTimeoutMax);
      return SysOk();
    case TCP_DEFER_ACCEPT:
      tcp_.defer_accept = SecsToRetrans(v);
      return SysOk();
    case TCP_WINDOW_CLAMP:
      if (v == 0 && state_ != kTcpClose) return Errno{EINVAL};
      tcp_.window_clamp = v == 0 ? 0 : std::max(v, kMinWindowClamp);
      return SysOk();
    case TCP_QUICKACK:
      tcp_.quickack = v != 0;
      return SysOk();
    case TCP_USER_TIMEOUT:
      if (v < 0) return Errno{EINVAL};
      tcp_.user_timeout = v;
      return SysOk();
    case TCP_FASTOPEN:
      if (v < 0 || (state_ != kTcpClose && state_ != kTcpListen)) return Errno{EINVAL};
      tcp_.fastopen = v;
      return SysOk();
    case TCP_FASTOPEN_CONNECT:
      if (v < 0 || v > 1 || state_ != kTcpClose) return Errno{EINVAL};
      tcp_.fastopen_connect = v;
      return SysOk();
    case TCP_FASTOPEN_NO_COOKIE:
    case TCP_THIN_LINEAR_TIMEOUTS:
    case TCP_INQ:
      if (v < 0 || v > 1) return Errno{EINVAL};
      (name == TCP_FASTOPEN_NO_COOKIE ? tcp_.fastopen_no_cookie
       : name == TCP_INQ              ? tcp_.inq
                                      : tcp_.thin_linear_timeouts) = v;
      return SysOk();
    case TCP_SAVE_SYN:
      if (v < 0 || v > 2) return Errno{EINVAL};
      tcp_.save_syn = v;
      return SysOk();
    case TCP_NOTSENT_LOWAT:
      tcp_.notsent_lowat = v;
      return SysOk();
    case TCP_TX_DELAY:
      tcp_.tx_delay = std::max(v, 0);
      return SysOk();
    case TCP_THIN_DUPACK:
      return SysOk();  // obsolete; Linux accepts and ignores it
    default:
      return Errno{ENOPROTOOPT};
  }
}

}  // namespace usentry::sentry::net
