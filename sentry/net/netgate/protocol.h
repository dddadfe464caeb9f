// Wire protocol between the sentry (netgate::Client) and netgate (netgate/server.h): one
// JSON object per SOCK_SEQPACKET message (base/seqpacket.h), an FD riding on a connect
// reply. JSON because the messages are few (one per resolve, connect, close), small,
// and must be decoded defensively by a process that trusts nobody: every field is
// type- and range-checked, unknown ops are errors.
//
//   sentry -> netgate
//     {"op":"resolve","id":7,"name":"pypi.org","type":1}          type: 1 (A) or 28 (AAAA)
//     {"op":"connect","id":8,"proto":"tcp","ip":"151.101.0.223","port":443}
//     {"op":"connect","id":9,"proto":"tcp","host_port":8080}      the host's loopback
//     {"op":"close","conn":3,"bytes_in":1200,"bytes_out":80}       no reply
//   netgate -> sentry
//     {"id":7,"rcode":0,"addrs":[{"ip":"151.101.0.223","ttl":300}],
//      "blocked":[{"ip":"10.0.0.1","range":"RFC 1918 (10.0.0.0/8)"}],"reason":""}
//     {"id":8,"err":0,"conn":3,"local_port":41234}                 + the connected FD
//     {"id":8,"err":13,"reason":"..."}                             denied or failed
#ifndef USENTRY_SENTRY_NET_NETGATE_PROTOCOL_H_
#define USENTRY_SENTRY_NET_NETGATE_PROTOCOL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip_address.h"
#include "sentry/policy/net_rules.h"

namespace usentry::netgate {

inline constexpr uint16_t kTypeA = 1;
inline constexpr uint16_t kTypeAAAA = 28;
// DNS response codes netgate answers with.
inline constexpr int kRcodeNoError = 0;
inline constexpr int kRcodeServFail = 2;
inline constexpr int kRcodeNxDomain = 3;
inline constexpr int kRcodeRefused = 5;

struct Request {
  enum class Op { kResolve, kConnect, kClose };
  Op op = Op::kResolve;
  uint64_t id = 0;
  // kResolve
  std::string name;
  uint16_t qtype = kTypeA;
  // kConnect
  policy::NetProto proto = policy::NetProto::kTcp;
  IpAddress ip;
  uint16_t port = 0;
  bool host_port = false;  // `port` of the host's loopback (--allow-host-port)
  // kClose: `id` is the connection id
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

struct ResolvedAddress {
  IpAddress ip;
  uint32_t ttl = 0;
};
struct BlockedAddress {
  IpAddress ip;
  std::string range;
};

struct ResolveReply {
  uint64_t id = 0;
  int rcode = kRcodeServFail;
  std::vector<ResolvedAddress> addrs;   // allowed ones only, already bound by netgate
  std::vector<BlockedAddress> blocked;  // what upstream answered that no one may reach
  std::string reason;                   // why not NOERROR, or ""
};

struct ConnectReply {
  uint64_t id = 0;
  int err = 0;        // 0: connected, the FD came with the message
  uint64_t conn = 0;  // netgate's id of the connection
  uint16_t local_port = 0;
  std::string reason;
};

std::string EncodeRequest(const Request& r);
// nullopt for anything that is not exactly a well-formed request.
std::optional<Request> DecodeRequest(std::string_view bytes);

std::string EncodeResolveReply(const ResolveReply& r);
std::string EncodeConnectReply(const ConnectReply& r);
// A reply is one or the other: it has "rcode" (resolve) or "err" (connect).
struct Reply {
  bool is_resolve = false;
  ResolveReply resolve;
  ConnectReply connect;
};
std::optional<Reply> DecodeReply(std::string_view bytes);

}  // namespace usentry::netgate

#endif  // USENTRY_SENTRY_NET_NETGATE_PROTOCOL_H_
