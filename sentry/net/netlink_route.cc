// rtnetlink requests answered from Interfaces: dispatch by message type, the dump
// filters, and the RTM_NEWLINK/RTM_NEWADDR/RTM_NEWROUTE formats (attributes in the order
// Linux's rtnl_fill_ifinfo, inet_fill_ifaddr/inet6_fill_ifaddr and fib_dump_info put
// them; programs look attributes up by type, but tests compare with the host's dumps).
#include "sentry/net/netlink_route.h"

#include <errno.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <map>
#include <optional>

#include "sentry/net/netlink_message.h"

namespace usentry::sentry::net {
namespace {

constexpr size_t kIfNameMax = 15;         // IFNAMSIZ - 1
constexpr uint32_t kInfinityLife = ~0u;   // INFINITY_LIFE_TIME: "forever"
constexpr uint32_t kGsoMaxSegs = 65535;   // GSO_MAX_SEGS
constexpr uint32_t kGsoMaxSize = 65536;   // GSO_MAX_SIZE
constexpr uint8_t kRouterPrefMedium = 0;  // ICMPV6_ROUTER_PREF_MEDIUM

using Attrs = std::map<uint16_t, std::string_view>;

std::optional<uint32_t> AttrU32(const Attrs& attrs, uint16_t type) {
  auto it = attrs.find(type);
  if (it == attrs.end() || it->second.size() < sizeof(uint32_t)) return std::nullopt;
  uint32_t v;
  memcpy(&v, it->second.data(), sizeof(v));
  return v;
}

int FamilyOf(std::string_view payload) {
  return static_cast<unsigned char>(payload[0]);  // rtgenmsg.rtgen_family leads every header
}

// Which address families a dump covers. A family with its own handler (AF_INET,
// AF_INET6) dumps itself; any other family falls back to Linux's PF_UNSPEC handler,
// rtnl_dump_all, which dumps every family.
bool FamilyWanted(int requested, bool v6) {
  if (requested == AF_INET) return !v6;
  if (requested == AF_INET6) return v6;
  return true;
}

// --- RTM_GETLINK ---

RouteAnswer GetLink(const Interfaces& ifs, const nlmsghdr& h, std::string_view payload,
                    uint32_t portid, bool strict) {
  RouteAnswer a;
  if (payload.size() < sizeof(ifinfomsg)) {
    a.error = -EINVAL;
    return a;
  }
  auto ifm = NlFamilyHeader<ifinfomsg>(payload);
  Attrs attrs = ParseNlAttrs(payload, sizeof(ifinfomsg));
  if (strict) {
    if (ifm.__ifi_pad || ifm.ifi_type || ifm.ifi_flags || ifm.ifi_change) {
      a.error = -EINVAL;
      return a;
    }
    for (const auto& [type, value] : attrs) {
      if (type != IFLA_IFNAME && type != IFLA_ALT_IFNAME && type != IFLA_EXT_MASK &&
          type != IFLA_TARGET_NETNSID) {
        a.error = -EINVAL;
        return a;
      }
    }
  }
  const Link* link = nullptr;
  if (ifm.ifi_index > 0) {
    link = ifs.FindLink(ifm.ifi_index);
  } else {
    auto it = attrs.find(IFLA_IFNAME);
    if (it == attrs.end()) it = attrs.find(IFLA_ALT_IFNAME);
    if (it == attrs.end()) {
      a.error = -EINVAL;
      return a;
    }
    std::string_view name = it->second;
    if (!name.empty() && name.back() == '\0') name.remove_suffix(1);
    if (name.size() > kIfNameMax) {
      a.error = -ERANGE;  // the attribute policy's length check
      return a;
    }
    name = name.substr(0, name.find('\0'));
    link = ifs.FindLink(name);
  }
  if (link == nullptr) {
    a.error = -ENODEV;
    return a;
  }
  a.messages.push_back(LinkMessage(*link, 0, h.nlmsg_seq, portid));
  return a;
}

RouteAnswer DumpLinks(const Interfaces& ifs, const nlmsghdr& h, std::string_view payload,
                      uint32_t portid, bool strict) {
  RouteAnswer a;
  a.dump = true;
  // Legacy requests carry only an rtgenmsg; a full ifinfomsg may bring filters.
  bool full = payload.size() >= sizeof(ifinfomsg);
  if (strict) {
    auto ifm = NlFamilyHeader<ifinfomsg>(payload);
    if (!full || ifm.__ifi_pad || ifm.ifi_type || ifm.ifi_flags || ifm.ifi_change ||
        ifm.ifi_index) {
      a.error = -EINVAL;
      return a;
    }
  }
  if (full) {
    Attrs attrs = ParseNlAttrs(payload, sizeof(ifinfomsg));
    // Filters no sandbox interface passes: none is enslaved or has a link kind.
    auto master = AttrU32(attrs, IFLA_MASTER);
    if ((master && *master != 0) || attrs.count(IFLA_LINKINFO)) return a;
  }
  for (const Link& l : ifs.links()) {
    a.messages.push_back(LinkMessage(l, NLM_F_MULTI, h.nlmsg_seq, portid));
  }
  return a;
}

// --- RTM_GETADDR ---

RouteAnswer DumpAddresses(const Interfaces& ifs, const nlmsghdr& h, std::string_view payload,
                          uint32_t portid, bool strict) {
  RouteAnswer a;
  a.dump = true;
  int family = FamilyOf(payload);
  int ifindex = 0;
  if (strict) {
    auto ifa = NlFamilyHeader<ifaddrmsg>(payload);
    if (payload.size() < sizeof(ifaddrmsg) || ifa.ifa_prefixlen || ifa.ifa_flags || ifa.ifa_scope) {
      a.error = -EINVAL;
      return a;
    }
    for (const auto& [type, value] : ParseNlAttrs(payload, sizeof(ifaddrmsg))) {
      if (type != IFA_TARGET_NETNSID) {
        a.error = -EINVAL;
        return a;
      }
    }
    ifindex = static_cast<int>(ifa.ifa_index);
  }
  for (const InterfaceAddress& ad : ifs.addresses()) {
    if (!FamilyWanted(family, ad.address.is_v6())) continue;
    if (ifindex != 0 && ad.ifindex != ifindex) continue;
    a.messages.push_back(AddressMessage(ad, NLM_F_MULTI, h.nlmsg_seq, portid));
  }
  return a;
}

// --- RTM_GETROUTE ---

struct RouteFilter {
  uint32_t table = 0;
  uint8_t protocol = 0;
  uint8_t type = 0;
  int oif = 0;
  bool Passes(const Route& r) const {
    return (table == 0 || r.table == table) && (protocol == 0 || r.protocol == protocol) &&
           (type == 0 || r.type == type) && (oif == 0 || r.oif == oif);
  }
};

RouteAnswer DumpRoutes(const Interfaces& ifs, const nlmsghdr& h, std::string_view payload,
                       uint32_t portid, bool strict) {
  RouteAnswer a;
  a.dump = true;
  int family = FamilyOf(payload);
  // The multicast routing tables (ipmr, ip6mr) are empty in the sandbox.
  if (family == RTNL_FAMILY_IPMR || family == RTNL_FAMILY_IP6MR) return a;
  auto rtm = NlFamilyHeader<rtmsg>(payload);
  RouteFilter filter;
  if (strict) {
    if (payload.size() < sizeof(rtmsg) || rtm.rtm_dst_len || rtm.rtm_src_len || rtm.rtm_tos ||
        rtm.rtm_scope || (rtm.rtm_flags & ~(RTM_F_CLONED | RTM_F_PREFIX))) {
      a.error = -EINVAL;
      return a;
    }
    filter.table = rtm.rtm_table;
    filter.protocol = rtm.rtm_protocol;
    filter.type = rtm.rtm_type;
    for (const auto& [type, value] : ParseNlAttrs(payload, sizeof(rtmsg))) {
      uint32_t v = 0;
      if (value.size() >= sizeof(v)) memcpy(&v, value.data(), sizeof(v));
      if (type == RTA_TABLE) {
        filter.table = v;
      } else if (type == RTA_OIF) {
        if (ifs.FindLink(static_cast<int>(v)) == nullptr) {
          a.error = -ENODEV;
          return a;
        }
        filter.oif = static_cast<int>(v);
      } else {
        a.error = -EINVAL;
        return a;
      }
    }
    if (filter.table != 0 && filter.table != RT_TABLE_MAIN && filter.table != RT_TABLE_LOCAL) {
      // Linux's IPv4 dump reports a missing table; a dump of every family skips it.
      if (family == AF_INET) a.error = -ENOENT;
      return a;
    }
  }
  // The route cache and exceptions (RTM_F_CLONED) hold nothing here.
  if (payload.size() >= sizeof(rtmsg) && (rtm.rtm_flags & RTM_F_CLONED)) return a;
  for (const Route& r : ifs.routes()) {
    if (!FamilyWanted(family, r.is_v6()) || !filter.Passes(r)) continue;
    a.messages.push_back(RouteMessage(r, NLM_F_MULTI, h.nlmsg_seq, portid));
  }
  return a;
}

// RTM_GETROUTE without NLM_F_DUMP (`ip route get`): the route a packet to RTA_DST
// takes — the local table before the main one, as Linux's default rules, longest prefix
// first — answered as a cloned route to that one address.
RouteAnswer GetRoute(const Interfaces& ifs, const nlmsghdr& h, std::string_view payload,
                     uint32_t portid) {
  RouteAnswer a;
  auto rtm = NlFamilyHeader<rtmsg>(payload);
  if (rtm.rtm_family != AF_INET && rtm.rtm_family != AF_INET6) {
    a.error = -EOPNOTSUPP;  // only the IP families have a route lookup
    return a;
  }
  if (payload.size() < sizeof(rtmsg)) {
    a.error = -EINVAL;
    return a;
  }
  const bool v6 = rtm.rtm_family == AF_INET6;
  Attrs attrs = ParseNlAttrs(payload, sizeof(rtmsg));
  in6_addr raw{};
  if (auto it = attrs.find(RTA_DST); it != attrs.end()) {
    if (it->second.size() != (v6 ? 16u : 4u)) {
      a.error = -EINVAL;
      return a;
    }
    memcpy(&raw, it->second.data(), it->second.size());
  }
  IpAddress dst = v6 ? IpAddress::FromIn6(raw) : IpAddress::FromIn(in_addr{raw.s6_addr32[0]});
  // Linux routes a packet to 0.0.0.0 to the loopback address.
  const IpAddress asked = dst;
  if (!v6 && dst.IsUnspecified()) dst = IpAddress::V4(INADDR_LOOPBACK);
  const Route* best = nullptr;
  for (uint8_t table : {RT_TABLE_LOCAL, RT_TABLE_MAIN}) {
    for (const Route& r : ifs.routes()) {
      if (r.table != table || r.is_v6() != v6 || !r.dst.Contains(dst)) continue;
      if (r.type == RTN_MULTICAST) continue;
      if (best == nullptr || r.dst.prefix_len() > best->dst.prefix_len()) best = &r;
    }
    if (best != nullptr) break;
  }
  if (best == nullptr) {
    a.error = -ENETUNREACH;
    return a;
  }
  Route clone = *best;
  clone.dst = Cidr(asked, v6 ? 128 : 32);
  clone.protocol = v6 ? best->protocol : RTPROT_UNSPEC;
  if (!v6) {
    if (clone.type == RTN_LOCAL) clone.oif = kLoopbackIndex;  // local delivery is via lo
    clone.scope = RT_SCOPE_UNIVERSE;
    // The source a socket would get: the route's preferred one, else the address of
    // the interface it leaves by.
    if (!clone.prefsrc) {
      for (const InterfaceAddress& ad : ifs.addresses()) {
        if (ad.ifindex == best->oif && ad.address.is_v4()) clone.prefsrc = ad.address;
      }
    }
  } else {
    for (const InterfaceAddress& ad : ifs.addresses()) {
      if (ad.ifindex == best->oif && ad.address.is_v6()) clone.prefsrc = ad.address;
    }
  }
  // Without policy rules Linux keeps IPv4's local table merged into the main one, so an
  // IPv4 lookup (RTM_F_LOOKUP_TABLE or not) reports the main table.
  if (!v6) clone.table = RT_TABLE_MAIN;
  std::string m = RouteMessage(clone, 0, h.nlmsg_seq, portid);
  // A looked-up route is a clone (RTM_F_CLONED); a local one says so (RTCF_LOCAL).
  auto* out = reinterpret_cast<rtmsg*>(m.data() + kNlHdrLen);
  out->rtm_flags = RTM_F_CLONED | (clone.type == RTN_LOCAL && !v6 ? 0x80000000u : 0);
  a.messages.push_back(std::move(m));
  return a;
}

}  // namespace

std::string LinkMessage(const Link& l, uint16_t flags, uint32_t seq, uint32_t portid) {
  NlMessageBuilder b(RTM_NEWLINK, flags, seq, portid);
  ifinfomsg ifm{};
  ifm.ifi_family = AF_UNSPEC;
  ifm.ifi_type = l.type;
  ifm.ifi_index = l.index;
  ifm.ifi_flags = l.flags;
  b.PutHeader(ifm);
  b.PutString(IFLA_IFNAME, l.name);
  b.PutAttr<uint32_t>(IFLA_TXQLEN, l.txqlen);
  b.PutAttr<uint8_t>(IFLA_OPERSTATE, l.operstate);
  b.PutAttr<uint8_t>(IFLA_LINKMODE, 0);
  b.PutAttr<uint32_t>(IFLA_MTU, l.mtu);
  b.PutAttr<uint32_t>(IFLA_MIN_MTU, l.min_mtu);
  b.PutAttr<uint32_t>(IFLA_MAX_MTU, l.max_mtu);
  b.PutAttr<uint32_t>(IFLA_GROUP, 0);
  b.PutAttr<uint32_t>(IFLA_PROMISCUITY, 0);
  b.PutAttr<uint32_t>(IFLA_NUM_TX_QUEUES, 1);
  b.PutAttr<uint32_t>(IFLA_GSO_MAX_SEGS, kGsoMaxSegs);
  b.PutAttr<uint32_t>(IFLA_GSO_MAX_SIZE, kGsoMaxSize);
  b.PutAttr<uint32_t>(IFLA_NUM_RX_QUEUES, 1);
  b.PutAttr<uint8_t>(IFLA_CARRIER, 1);
  b.PutString(IFLA_QDISC, l.qdisc);
  b.PutAttr<uint32_t>(IFLA_CARRIER_CHANGES, 0);
  b.PutAttr<uint8_t>(IFLA_PROTO_DOWN, 0);
  b.PutAttr(IFLA_MAP, rtnl_link_ifmap{});
  b.PutAttr(IFLA_ADDRESS, l.hwaddr.data(), l.hwaddr.size());
  b.PutAttr(IFLA_BROADCAST, l.broadcast.data(), l.broadcast.size());
  // Nothing is counted: the sandbox's links carry no packets the kernel would count.
  b.PutAttr(IFLA_STATS64, rtnl_link_stats64{});
  b.PutAttr(IFLA_STATS, rtnl_link_stats{});
  size_t xdp = b.BeginNested(IFLA_XDP);
  b.PutAttr<uint8_t>(IFLA_XDP_ATTACHED, XDP_ATTACHED_NONE);
  b.EndNested(xdp);
  return std::move(b).Finish();
}

std::string AddressMessage(const InterfaceAddress& a, uint16_t flags, uint32_t seq,
                           uint32_t portid) {
  NlMessageBuilder b(RTM_NEWADDR, flags, seq, portid);
  ifaddrmsg ifa{};
  ifa.ifa_family = a.address.is_v6() ? AF_INET6 : AF_INET;
  ifa.ifa_prefixlen = static_cast<uint8_t>(a.prefix_len);
  ifa.ifa_flags = static_cast<uint8_t>(a.flags);
  ifa.ifa_scope = a.scope;
  ifa.ifa_index = static_cast<uint32_t>(a.ifindex);
  b.PutHeader(ifa);
  ifa_cacheinfo ci{};
  ci.ifa_prefered = kInfinityLife;
  ci.ifa_valid = kInfinityLife;
  b.PutAttr(IFA_ADDRESS, a.address.bytes(), a.address.size());
  if (a.address.is_v4()) {
    b.PutAttr(IFA_LOCAL, a.address.bytes(), a.address.size());
    if (a.broadcast) b.PutAttr(IFA_BROADCAST, a.broadcast->bytes(), a.broadcast->size());
    b.PutString(IFA_LABEL, a.label);
    b.PutAttr<uint32_t>(IFA_FLAGS, a.flags);
    b.PutAttr(IFA_CACHEINFO, ci);
  } else {
    b.PutAttr(IFA_CACHEINFO, ci);
    b.PutAttr<uint32_t>(IFA_FLAGS, a.flags);
  }
  return std::move(b).Finish();
}

std::string RouteMessage(const Route& r, uint16_t flags, uint32_t seq, uint32_t portid) {
  NlMessageBuilder b(RTM_NEWROUTE, flags, seq, portid);
  rtmsg rtm{};
  rtm.rtm_family = r.is_v6() ? AF_INET6 : AF_INET;
  rtm.rtm_dst_len = static_cast<uint8_t>(r.dst.prefix_len());
  rtm.rtm_table = r.table;
  rtm.rtm_protocol = r.protocol;
  rtm.rtm_scope = r.scope;
  rtm.rtm_type = r.type;
  b.PutHeader(rtm);
  b.PutAttr<uint32_t>(RTA_TABLE, r.table);
  if (r.dst.prefix_len() > 0) b.PutAttr(RTA_DST, r.dst.base().bytes(), r.dst.base().size());
  if (r.is_v6() || r.priority != 0) b.PutAttr<uint32_t>(RTA_PRIORITY, r.priority);
  if (r.prefsrc) b.PutAttr(RTA_PREFSRC, r.prefsrc->bytes(), r.prefsrc->size());
  if (r.gateway) b.PutAttr(RTA_GATEWAY, r.gateway->bytes(), r.gateway->size());
  b.PutAttr<uint32_t>(RTA_OIF, static_cast<uint32_t>(r.oif));
  if (r.is_v6()) {
    b.PutAttr(RTA_CACHEINFO, rta_cacheinfo{});
    b.PutAttr<uint8_t>(RTA_PREF, kRouterPrefMedium);
  }
  return std::move(b).Finish();
}

RouteAnswer AnswerRouteRequest(const Interfaces& ifs, std::string_view request, uint32_t portid,
                               bool strict) {
  RouteAnswer a;
  nlmsghdr h;
  memcpy(&h, request.data(), sizeof(h));
  std::string_view payload = request.substr(kNlHdrLen);
  if (h.nlmsg_type > RTM_MAX) {
    a.error = -EOPNOTSUPP;
    return a;
  }
  // Linux ignores (and at most ACKs) a request without even a family byte, before it
  // looks at what the request would do.
  if (payload.empty()) return a;
  const int kind = (h.nlmsg_type - RTM_BASE) & 3;  // 0 NEW, 1 DEL, 2 GET, 3 SET
  if (kind != 2) {
    // The sandbox's interfaces, addresses, routes, neighbours and rules are fixed: no
    // request changes them, whoever asks (root inside the sandbox included).
    a.error = -EPERM;
    return a;
  }
  const bool dump = (h.nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
  switch (h.nlmsg_type) {
    case RTM_GETLINK:
      return dump ? DumpLinks(ifs, h, payload, portid, strict)
                  : GetLink(ifs, h, payload, portid, strict);
    case RTM_GETADDR:
      if (dump) return DumpAddresses(ifs, h, payload, portid, strict);
      break;
    case RTM_GETROUTE:
      return dump ? DumpRoutes(ifs, h, payload, portid, strict) : GetRoute(ifs, h, payload, portid);
    case RTM_GETNEIGH:
    case RTM_GETRULE:
      // No neighbour is ever resolved (no packets leave) and there is no policy routing.
      if (dump) {
        a.dump = true;
        return a;
      }
      break;
    default:
      break;
  }
  a.error = -EOPNOTSUPP;
  return a;
}

}  // namespace usentry::sentry::net
