// NETLINK_ROUTE, the kernel side: what Linux's rtnetlink answers one request with, from
// the sandbox's Interfaces. Read-only by design: RTM_GETLINK (dump, by index or name),
// RTM_GETADDR dumps, RTM_GETROUTE (dump, and a lookup of one destination), and empty
// RTM_GETNEIGH/RTM_GETRULE dumps; every
// request that would change state (RTM_NEW*, RTM_DEL*, RTM_SET*) is EPERM, other types
// EOPNOTSUPP. Framing (the netlink_rcv_skb loop, ACKs, dump batching, NLMSG_DONE) is the
// socket's (netlink_socket.cc). Pure functions, no kernel state.
#ifndef USENTRY_SENTRY_NET_NETLINK_ROUTE_H_
#define USENTRY_SENTRY_NET_NETLINK_ROUTE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sentry/net/interfaces.h"

namespace usentry::sentry::net {

struct RouteAnswer {
  // A dump: `messages` (NLM_F_MULTI) are followed by NLMSG_DONE carrying `error`.
  // Otherwise `messages` are unicast replies, one datagram each, and `error` is what
  // the ACK (or the NLMSG_ERROR sent even without NLM_F_ACK) reports.
  bool dump = false;
  int error = 0;  // 0 or a negative errno
  std::vector<std::string> messages;
};

// `request` is one whole message (nlmsg_len bytes, header included) with NLM_F_REQUEST
// and a type of at least NLMSG_MIN_TYPE. Replies carry the request's nlmsg_seq and the
// requester's `portid`. `strict` is NETLINK_GET_STRICT_CHK: dump requests' headers are
// checked and their filters applied, as Linux does.
RouteAnswer AnswerRouteRequest(const Interfaces& ifs, std::string_view request, uint32_t portid,
                               bool strict);

// Message formatters, one object each (RTM_NEWLINK / RTM_NEWADDR / RTM_NEWROUTE).
std::string LinkMessage(const Link& l, uint16_t flags, uint32_t seq, uint32_t portid);
std::string AddressMessage(const InterfaceAddress& a, uint16_t flags, uint32_t seq,
                           uint32_t portid);
std::string RouteMessage(const Route& r, uint16_t flags, uint32_t seq, uint32_t portid);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_NETLINK_ROUTE_H_
