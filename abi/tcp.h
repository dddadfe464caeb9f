// Linux x86-64 TCP ABI: struct tcp_info as getsockopt(TCP_INFO) fills it (the layout of
// Linux 6.1's UAPI header; newer kernels append fields, and a caller gets what fits).
// Plain data.
#ifndef USENTRY_ABI_TCP_H_
#define USENTRY_ABI_TCP_H_

#include <cstddef>
#include <cstdint>

namespace usentry::abi {

// TCPI_OPT_* bits of TcpInfo::options.
inline constexpr uint8_t kTcpiOptTimestamps = 1;
inline constexpr uint8_t kTcpiOptSack = 2;
inline constexpr uint8_t kTcpiOptWscale = 4;

struct TcpInfo {
  uint8_t state;
  uint8_t ca_state;
  uint8_t retransmits;
  uint8_t probes;
  uint8_t backoff;
  uint8_t options;
  uint8_t wscale;  // snd_wscale in the low nibble, rcv_wscale in the high one
  uint8_t app_limited_and_fastopen_fail;
  uint32_t rto;  // microseconds
  uint32_t ato;
  uint32_t snd_mss;
  uint32_t rcv_mss;
  uint32_t unacked;
  uint32_t sacked;
  uint32_t lost;
  uint32_t retrans;
  uint32_t fackets;
  uint32_t last_data_sent;  // milliseconds ago
  uint32_t last_ack_sent;
  uint32_t last_data_recv;
  uint32_t last_ack_recv;
  uint32_t pmtu;
  uint32_t rcv_ssthresh;
  uint32_t rtt;  // microseconds
  uint32_t rttvar;
  uint32_t snd_ssthresh;
  uint32_t snd_cwnd;
  uint32_t advmss;
  uint32_t reordering;
  uint32_t rcv_rtt;
  uint32_t rcv_space;
  uint32_t total_retrans;
  uint64_t pacing_rate;
  uint64_t max_pacing_rate;
  uint64_t bytes_acked;
  uint64_t bytes_received;
  uint32_t segs_out;
  uint32_t segs_in;
  uint32_t notsent_bytes;
  uint32_t min_rtt;
  uint32_t data_segs_in;
  uint32_t data_segs_out;
  uint64_t delivery_rate;
  uint64_t busy_time;
  uint64_t rwnd_limited;
  uint64_t sndbuf_limited;
  uint32_t delivered;
  uint32_t delivered_ce;
  uint64_t bytes_sent;
  uint64_t bytes_retrans;
  uint32_t dsack_dups;
  uint32_t reord_seen;
  uint32_t rcv_ooopack;
  uint32_t snd_wnd;
};
static_assert(sizeof(TcpInfo) == 232);
static_assert(offsetof(TcpInfo, rto) == 8);
static_assert(offsetof(TcpInfo, pacing_rate) == 104);
static_assert(offsetof(TcpInfo, bytes_received) == 128);
static_assert(offsetof(TcpInfo, snd_wnd) == 228);

}  // namespace usentry::abi

#endif  // USENTRY_ABI_TCP_H_
