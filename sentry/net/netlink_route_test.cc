// The sandbox's interfaces as data, and NETLINK_ROUTE answers parsed back with the
// kernel's own macros (NLMSG_NEXT, RTA_NEXT, IFLA_RTA...), as a program would read them.
#include "sentry/net/netlink_route.h"

#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/socket.h>

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/net/interfaces.h"
#include "sentry/net/netlink_message.h"

namespace usentry::sentry::net {
namespace {

constexpr uint32_t kPortid = 4242;
constexpr uint32_t kSeq = 77;

SandboxNetwork WithEgress(bool egress) {
  SandboxNetwork n;
  n.egress = egress;
  return n;
}

// A request: nlmsghdr, a family header, attributes.
template <typename T>
std::string Request(uint16_t type, uint16_t flags, const T& hdr,
                    const std::map<uint16_t, std::string>& attrs = {}) {
  NlMessageBuilder b(type, flags | NLM_F_REQUEST, kSeq, 0);
  b.PutHeader(hdr);
  for (const auto& [t, v] : attrs) b.PutAttr(t, v.data(), v.size());
  return std::move(b).Finish();
}

std::string Dump(uint16_t type, uint8_t family) {
  rtgenmsg g{};
  g.rtgen_family = family;
  return Request(type, NLM_F_DUMP, g);
}

// The messages of a buffer, walked with NLMSG_OK/NLMSG_NEXT.
std::vector<const nlmsghdr*> Messages(const std::string& buf) {
  std::vector<const nlmsghdr*> out;
  int len = static_cast<int>(buf.size());
  for (auto* h = reinterpret_cast<const nlmsghdr*>(buf.data()); NLMSG_OK(h, len);
       h = NLMSG_NEXT(h, len)) {
    out.push_back(h);
  }
  EXPECT_EQ(len, 0) << "bytes after the last whole message";
  return out;
}

// The attributes after a family header, walked with RTA_OK/RTA_NEXT.
std::map<int, std::string> Attrs(const rtattr* rta, int len) {
  std::map<int, std::string> out;
  for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
    out[rta->rta_type & NLA_TYPE_MASK] =
        std::string(static_cast<const char*>(RTA_DATA(rta)), RTA_PAYLOAD(rta));
  }
  EXPECT_EQ(len, 0);
  return out;
}

uint32_t U32(const std::string& s) {
  uint32_t v = 0;
  EXPECT_EQ(s.size(), sizeof(v));
  memcpy(&v, s.data(), std::min(s.size(), sizeof(v)));
  return v;
}

std::string Ip(const std::string& bytes) {
  char buf[INET6_ADDRSTRLEN];
  return inet_ntop(bytes.size() == 4 ? AF_INET : AF_INET6, bytes.data(), buf, sizeof(buf));
}

std::string Joined(const std::vector<std::string>& msgs) {
  std::string out;
  for (const auto& m : msgs) out += m;
  return out;
}

TEST(InterfacesTest, LoopbackOnlyWithoutEgress) {
  Interfaces ifs(WithEgress(false));
  ASSERT_EQ(ifs.links().size(), 1u);
  const Link& lo = ifs.links()[0];
  EXPECT_EQ(lo.index, 1);
  EXPECT_EQ(lo.name, "lo");
  EXPECT_EQ(lo.flags & 0xffff, static_cast<uint32_t>(IFF_UP | IFF_LOOPBACK | IFF_RUNNING));
  EXPECT_EQ(lo.type, ARPHRD_LOOPBACK);
  EXPECT_EQ(lo.mtu, 65536);
  EXPECT_EQ(ifs.FindLink("eth0"), nullptr);
  EXPECT_EQ(ifs.FindLink(2), nullptr);
  EXPECT_EQ(ifs.FindLink("lo"), &lo);
  ASSERT_EQ(ifs.addresses().size(), 2u);
  EXPECT_EQ(ifs.addresses()[0].address.ToString(), "127.0.0.1");
  EXPECT_EQ(ifs.addresses()[0].prefix_len, 8);
  EXPECT_FALSE(ifs.addresses()[0].broadcast);
  EXPECT_EQ(ifs.addresses()[1].address.ToString(), "::1");
  EXPECT_EQ(ifs.addresses()[1].prefix_len, 128);
  // No IPv4 route in the main table: nothing but loopback is reachable.
  for (const Route& r : ifs.routes()) {
    EXPECT_EQ(r.oif, 1) << r.dst.ToString();
    if (!r.is_v6()) {
      EXPECT_EQ(r.table, RT_TABLE_LOCAL) << r.dst.ToString();
    }
  }
}

TEST(InterfacesTest, EgressAddsEth0WithDefaultRoute) {
  Interfaces ifs(WithEgress(true));
  ASSERT_EQ(ifs.links().size(), 2u);
  const Link* eth = ifs.FindLink("eth0");
  ASSERT_NE(eth, nullptr);
  EXPECT_EQ(eth->index, 2);
  EXPECT_EQ(eth->flags & 0xffff,
            static_cast<uint32_t>(IFF_UP | IFF_BROADCAST | IFF_RUNNING | IFF_MULTICAST));
  EXPECT_EQ(eth->type, ARPHRD_ETHER);
  EXPECT_EQ(eth->mtu, 1500);
  EXPECT_EQ(eth->hwaddr, (HwAddr{0x02, 0x00, 0x0a, 0x00, 0x02, 0x0f}));
  std::vector<std::string> addrs;
  for (const auto& a : ifs.addresses()) {
    addrs.push_back(a.address.ToString() + "/" + std::to_string(a.prefix_len));
  }
  EXPECT_EQ(addrs, (std::vector<std::string>{"127.0.0.1/8", "10.0.2.15/24", "::1/128",
                                             "fe80::aff:fe00:20f/64"}));
  EXPECT_EQ(ifs.addresses()[1].broadcast->ToString(), "10.0.2.255");
  EXPECT_EQ(ifs.addresses()[1].Netmask().ToString(), "255.255.255.0");
  const Route& def = ifs.routes()[0];
  EXPECT_EQ(def.dst.prefix_len(), 0);
  EXPECT_EQ(def.table, RT_TABLE_MAIN);
  EXPECT_EQ(def.gateway->ToString(), "10.0.2.2");
  EXPECT_EQ(def.oif, 2);
}

TEST(InterfacesTest, LinkLocalIsModifiedEui64) {
  EXPECT_EQ(LinkLocalFromMac({0x52, 0x54, 0x00, 0x12, 0x34, 0x56}).ToString(),
            "fe80::5054:ff:fe12:3456");
  EXPECT_EQ(LinkLocalFromMac({0x02, 0xfc, 0x00, 0x00, 0x00, 0x01}).ToString(),
            "fe80::fc:ff:fe00:1");
}

TEST(NetlinkRouteTest, LinkDumpParsesBack) {
  Interfaces ifs(WithEgress(true));
  RouteAnswer a = AnswerRouteRequest(ifs, Dump(RTM_GETLINK, AF_PACKET), kPortid, false);
  ASSERT_TRUE(a.dump);
  EXPECT_EQ(a.error, 0);
  std::string buf = Joined(a.messages);
  auto msgs = Messages(buf);
  ASSERT_EQ(msgs.size(), 2u);
  std::vector<std::string> names;
  for (const nlmsghdr* h : msgs) {
    EXPECT_EQ(h->nlmsg_type, RTM_NEWLINK);
    EXPECT_EQ(h->nlmsg_flags, NLM_F_MULTI);
    EXPECT_EQ(h->nlmsg_seq, kSeq);
    EXPECT_EQ(h->nlmsg_pid, kPortid);
    auto* ifi = static_cast<const ifinfomsg*>(NLMSG_DATA(h));
    auto attrs = Attrs(IFLA_RTA(ifi), static_cast<int>(IFLA_PAYLOAD(h)));
    std::string name = attrs[IFLA_IFNAME];
    ASSERT_FALSE(name.empty());
    EXPECT_EQ(name.back(), '\0');
    name.pop_back();
    names.push_back(name);
    EXPECT_EQ(U32(attrs[IFLA_MTU]), ifi->ifi_index == 1 ? 65536u : 1500u);
    EXPECT_EQ(U32(attrs[IFLA_TXQLEN]), 1000u);
    EXPECT_EQ(attrs[IFLA_ADDRESS].size(), 6u);
    EXPECT_EQ(attrs[IFLA_BROADCAST].size(), 6u);
    EXPECT_EQ(attrs[IFLA_OPERSTATE].size(), 1u);
    EXPECT_EQ(attrs[IFLA_STATS64], std::string(sizeof(rtnl_link_stats64), '\0'));
    EXPECT_EQ(attrs[IFLA_STATS], std::string(sizeof(rtnl_link_stats), '\0'));
    EXPECT_EQ(ifi->ifi_change, 0u);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"lo", "eth0"}));
  auto* lo = static_cast<const ifinfomsg*>(NLMSG_DATA(msgs[0]));
  EXPECT_EQ(lo->ifi_index, 1);
  EXPECT_EQ(lo->ifi_type, ARPHRD_LOOPBACK);
  EXPECT_EQ(lo->ifi_flags, static_cast<unsigned>(IFF_UP | IFF_LOOPBACK | IFF_RUNNING | 0x10000));
  auto eth = Attrs(IFLA_RTA(static_cast<const ifinfomsg*>(NLMSG_DATA(msgs[1]))),
                   static_cast<int>(IFLA_PAYLOAD(msgs[1])));
  EXPECT_EQ(eth[IFLA_ADDRESS], std::string("\x02\x00\x0a\x00\x02\x0f", 6));
  EXPECT_EQ(eth[IFLA_BROADCAST], std::string(6, '\xff'));
  EXPECT_EQ(eth[IFLA_OPERSTATE], std::string(1, '\x06'));  // IF_OPER_UP
}

TEST(NetlinkRouteTest, GetLinkByIndexAndByName) {
  Interfaces ifs(WithEgress(true));
  ifinfomsg ifm{};
  ifm.ifi_index = 2;
  RouteAnswer a = AnswerRouteRequest(ifs, Request(RTM_GETLINK, 0, ifm), kPortid, false);
  EXPECT_FALSE(a.dump);
  EXPECT_EQ(a.error, 0);
  ASSERT_EQ(a.messages.size(), 1u);
  auto msgs = Messages(a.messages[0]);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0]->nlmsg_flags, 0);
  EXPECT_EQ(static_cast<const ifinfomsg*>(NLMSG_DATA(msgs[0]))->ifi_index, 2);

  ifm.ifi_index = 0;
  a = AnswerRouteRequest(ifs, Request(RTM_GETLINK, 0, ifm, {{IFLA_IFNAME, std::string("lo\0", 3)}}),
                         kPortid, false);
  ASSERT_EQ(a.messages.size(), 1u);
  EXPECT_EQ(static_cast<const ifinfomsg*>(NLMSG_DATA(Messages(a.messages[0])[0]))->ifi_index, 1);

  ifm.ifi_index = 9;
  EXPECT_EQ(AnswerRouteRequest(ifs, Request(RTM_GETLINK, 0, ifm), kPortid, false).error, -ENODEV);
  ifm.ifi_index = 0;
  EXPECT_EQ(AnswerRouteRequest(ifs, Request(RTM_GETLINK, 0, ifm, {{IFLA_IFNAME, "nosuch"}}),
                               kPortid, false)
                .error,
            -ENODEV);
  EXPECT_EQ(AnswerRouteRequest(ifs, Request(RTM_GETLINK, 0, ifm), kPortid, false).error, -EINVAL);
  EXPECT_EQ(
      AnswerRouteRequest(ifs, Request(RTM_GETLINK, 0, ifm, {{IFLA_IFNAME, std::string(16, 'x')}}),
                         kPortid, false)
          .error,
      -ERANGE);
  rtgenmsg shortreq{};
  EXPECT_EQ(AnswerRouteRequest(ifs, Request(RTM_GETLINK, 0, shortreq), kPortid, false).error,
            -EINVAL);
}

TEST(NetlinkRouteTest, AddressDumpFilteredByFamily) {
  Interfaces ifs(WithEgress(true));
  auto list = [&](uint8_t family) {
    RouteAnswer a = AnswerRouteRequest(ifs, Dump(RTM_GETADDR, family), kPortid, false);
    EXPECT_TRUE(a.dump);
    std::string buf = Joined(a.messages);
    std::vector<std::string> out;
    for (const nlmsghdr* h : Messages(buf)) {
      EXPECT_EQ(h->nlmsg_type, RTM_NEWADDR);
      auto* ifa = static_cast<const ifaddrmsg*>(NLMSG_DATA(h));
      auto attrs = Attrs(IFA_RTA(ifa), static_cast<int>(IFA_PAYLOAD(h)));
      std::string s = Ip(attrs[IFA_ADDRESS]) + "/" + std::to_string(ifa->ifa_prefixlen) + "@" +
                      std::to_string(ifa->ifa_index);
      if (attrs.count(IFA_BROADCAST)) s += " brd " + Ip(attrs[IFA_BROADCAST]);
      if (attrs.count(IFA_LABEL)) s += " " + std::string(attrs[IFA_LABEL].c_str());
      EXPECT_EQ(ifa->ifa_family == AF_INET, attrs.count(IFA_LOCAL) == 1);
      EXPECT_EQ(U32(attrs[IFA_FLAGS]), static_cast<uint32_t>(IFA_F_PERMANENT));
      ifa_cacheinfo ci;
      EXPECT_EQ(attrs[IFA_CACHEINFO].size(), sizeof(ci));
      memcpy(&ci, attrs[IFA_CACHEINFO].data(), sizeof(ci));
      EXPECT_EQ(ci.ifa_valid, 0xffffffffu);
      out.push_back(s);
    }
    return out;
  };
  EXPECT_EQ(list(AF_INET),
            (std::vector<std::string>{"127.0.0.1/8@1 lo", "10.0.2.15/24@2 brd 10.0.2.255 eth0"}));
  EXPECT_EQ(list(AF_INET6), (std::vector<std::string>{"::1/128@1", "fe80::aff:fe00:20f/64@2"}));
  // AF_UNSPEC and families without their own handler get every family.
  EXPECT_EQ(list(AF_UNSPEC).size(), 4u);
  EXPECT_EQ(list(AF_PACKET).size(), 4u);
}

TEST(NetlinkRouteTest, StrictAddressDumpFiltersByIndexAndChecksTheHeader) {
  Interfaces ifs(WithEgress(true));
  ifaddrmsg ifa{};
  ifa.ifa_family = AF_UNSPEC;
  ifa.ifa_index = 2;
  RouteAnswer a = AnswerRouteRequest(ifs, Request(RTM_GETADDR, NLM_F_DUMP, ifa), kPortid, true);
  EXPECT_EQ(a.messages.size(), 2u);
  ifa.ifa_prefixlen = 8;
  a = AnswerRouteRequest(ifs, Request(RTM_GETADDR, NLM_F_DUMP, ifa), kPortid, true);
  EXPECT_TRUE(a.dump);
  EXPECT_EQ(a.error, -EINVAL);  // reported in NLMSG_DONE
  // Without strict checking the index is not a filter (iproute2 filters itself).
  a = AnswerRouteRequest(ifs, Request(RTM_GETADDR, NLM_F_DUMP, ifa), kPortid, false);
  EXPECT_EQ(a.messages.size(), 4u);
}

TEST(NetlinkRouteTest, RouteDumpShowsTheDefaultRoute) {
  Interfaces ifs(WithEgress(true));
  rtmsg rtm{};
  rtm.rtm_family = AF_INET;
  rtm.rtm_table = RT_TABLE_MAIN;
  RouteAnswer a = AnswerRouteRequest(ifs, Request(RTM_GETROUTE, NLM_F_DUMP, rtm), kPortid, true);
  ASSERT_TRUE(a.dump);
  std::string buf = Joined(a.messages);
  auto msgs = Messages(buf);
  ASSERT_EQ(msgs.size(), 2u);
  auto* def = static_cast<const rtmsg*>(NLMSG_DATA(msgs[0]));
  EXPECT_EQ(def->rtm_dst_len, 0);
  EXPECT_EQ(def->rtm_type, RTN_UNICAST);
  auto attrs = Attrs(RTM_RTA(def), static_cast<int>(RTM_PAYLOAD(msgs[0])));
  EXPECT_EQ(Ip(attrs[RTA_GATEWAY]), "10.0.2.2");
  EXPECT_EQ(U32(attrs[RTA_OIF]), 2u);
  EXPECT_EQ(U32(attrs[RTA_TABLE]), static_cast<uint32_t>(RT_TABLE_MAIN));
  EXPECT_EQ(attrs.count(RTA_DST), 0u);
  auto* net = static_cast<const rtmsg*>(NLMSG_DATA(msgs[1]));
  EXPECT_EQ(net->rtm_dst_len, 24);
  EXPECT_EQ(net->rtm_scope, RT_SCOPE_LINK);
  attrs = Attrs(RTM_RTA(net), static_cast<int>(RTM_PAYLOAD(msgs[1])));
  EXPECT_EQ(Ip(attrs[RTA_DST]), "10.0.2.0");
  EXPECT_EQ(Ip(attrs[RTA_PREFSRC]), "10.0.2.15");

  // Without egress the IPv4 main table is empty; every table and family has loopback's.
  Interfaces lo_only(WithEgress(false));
  a = AnswerRouteRequest(lo_only, Request(RTM_GETROUTE, NLM_F_DUMP, rtm), kPortid, true);
  EXPECT_TRUE(a.messages.empty());
  a = AnswerRouteRequest(lo_only, Dump(RTM_GETROUTE, AF_UNSPEC), kPortid, false);
  EXPECT_EQ(a.messages.size(), lo_only.routes().size());
  rtm.rtm_table = 7;
  EXPECT_EQ(AnswerRouteRequest(ifs, Request(RTM_GETROUTE, NLM_F_DUMP, rtm), kPortid, true).error,
            -ENOENT);
}

TEST(NetlinkRouteTest, RouteGetLooksUpOneDestination) {
  Interfaces ifs(WithEgress(true));
  auto get = [&](uint8_t family, const std::string& addr) {
    rtmsg rtm{};
    rtm.rtm_family = family;
    rtm.rtm_dst_len = family == AF_INET ? 32 : 128;
    in6_addr raw{};
    inet_pton(family, addr.c_str(), &raw);
    std::string bytes(reinterpret_cast<const char*>(&raw), family == AF_INET ? 4 : 16);
    return AnswerRouteRequest(ifs, Request(RTM_GETROUTE, 0, rtm, {{RTA_DST, bytes}}), kPortid,
                              false);
  };
  auto describe = [](const RouteAnswer& a) {
    if (a.error != 0) return std::string(strerror(-a.error));
    auto msgs = Messages(a.messages.at(0));
    auto* rtm = static_cast<const rtmsg*>(NLMSG_DATA(msgs.at(0)));
    auto attrs = Attrs(RTM_RTA(rtm), static_cast<int>(RTM_PAYLOAD(msgs[0])));
    std::string s = std::to_string(rtm->rtm_type) + " " + Ip(attrs[RTA_DST]) + "/" +
                    std::to_string(rtm->rtm_dst_len) + " dev " +
                    std::to_string(U32(attrs[RTA_OIF]));
    if (attrs.count(RTA_GATEWAY)) s += " via " + Ip(attrs[RTA_GATEWAY]);
    if (attrs.count(RTA_PREFSRC)) s += " src " + Ip(attrs[RTA_PREFSRC]);
    EXPECT_TRUE(rtm->rtm_flags & RTM_F_CLONED);
    return s;
  };
  EXPECT_EQ(describe(get(AF_INET, "127.0.0.5")), "2 127.0.0.5/32 dev 1 src 127.0.0.1");
  EXPECT_EQ(describe(get(AF_INET, "10.0.2.15")), "2 10.0.2.15/32 dev 1 src 10.0.2.15");
  EXPECT_EQ(describe(get(AF_INET, "10.0.2.7")), "1 10.0.2.7/32 dev 2 src 10.0.2.15");
  EXPECT_EQ(describe(get(AF_INET, "1.1.1.1")), "1 1.1.1.1/32 dev 2 via 10.0.2.2 src 10.0.2.15");
  EXPECT_EQ(describe(get(AF_INET6, "::1")), "2 ::1/128 dev 1 src ::1");
  EXPECT_EQ(get(AF_INET6, "2001:db8::1").error, -ENETUNREACH);
  Interfaces lo_only(WithEgress(false));
  rtmsg rtm{};
  rtm.rtm_family = AF_INET;
  std::string one("\x01\x01\x01\x01", 4);
  EXPECT_EQ(
      AnswerRouteRequest(lo_only, Request(RTM_GETROUTE, 0, rtm, {{RTA_DST, one}}), kPortid, false)
          .error,
      -ENETUNREACH);
  rtm.rtm_family = AF_UNSPEC;
  EXPECT_EQ(AnswerRouteRequest(lo_only, Request(RTM_GETROUTE, 0, rtm), kPortid, false).error,
            -EOPNOTSUPP);
}

TEST(NetlinkRouteTest, NeighboursAndRulesAreEmptyDumps) {
  Interfaces ifs(WithEgress(true));
  for (uint16_t type : {RTM_GETNEIGH, RTM_GETRULE}) {
    RouteAnswer a = AnswerRouteRequest(ifs, Dump(type, AF_UNSPEC), kPortid, false);
    EXPECT_TRUE(a.dump) << type;
    EXPECT_EQ(a.error, 0);
    EXPECT_TRUE(a.messages.empty());
  }
}

TEST(NetlinkRouteTest, StateChangesArePermissionErrorsAndUnknownTypesUnsupported) {
  Interfaces ifs(WithEgress(true));
  ifinfomsg ifm{};
  ifm.ifi_index = 1;
  for (uint16_t type : {RTM_NEWLINK, RTM_DELLINK, RTM_SETLINK, RTM_NEWADDR, RTM_DELADDR,
                        RTM_NEWROUTE, RTM_DELROUTE, RTM_NEWNEIGH, RTM_NEWRULE, RTM_NEWQDISC}) {
    RouteAnswer a = AnswerRouteRequest(ifs, Request(type, NLM_F_ACK, ifm), kPortid, false);
    EXPECT_FALSE(a.dump) << type;
    EXPECT_EQ(a.error, -EPERM) << type;
    EXPECT_TRUE(a.messages.empty());
  }
  EXPECT_EQ(AnswerRouteRequest(ifs, Request(RTM_MAX + 1, 0, ifm), kPortid, false).error,
            -EOPNOTSUPP);
  EXPECT_EQ(AnswerRouteRequest(ifs, Dump(RTM_GETQDISC, AF_UNSPEC), kPortid, false).error,
            -EOPNOTSUPP);
  EXPECT_EQ(AnswerRouteRequest(ifs, Request(RTM_GETADDR, 0, ifm), kPortid, false).error,
            -EOPNOTSUPP);
  // Like Linux, a request without a family byte is ignored before its kind is checked.
  NlMessageBuilder empty(RTM_NEWLINK, NLM_F_REQUEST, kSeq, 0);
  EXPECT_EQ(AnswerRouteRequest(ifs, std::move(empty).Finish(), kPortid, false).error, 0);
}

TEST(NetlinkMessageTest, ErrorMessagesEchoTheRequest) {
  ifinfomsg ifm{};
  std::string req = Request(RTM_NEWLINK, NLM_F_ACK, ifm);
  nlmsghdr h;
  memcpy(&h, req.data(), sizeof(h));
  std::string err = NlErrorMessage(h, req, -EPERM, kPortid, false);
  auto msgs = Messages(err);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0]->nlmsg_type, NLMSG_ERROR);
  EXPECT_EQ(msgs[0]->nlmsg_seq, kSeq);
  EXPECT_EQ(msgs[0]->nlmsg_pid, kPortid);
  EXPECT_EQ(msgs[0]->nlmsg_len, NLMSG_HDRLEN + sizeof(int) + req.size());
  auto* e = static_cast<const nlmsgerr*>(NLMSG_DATA(msgs[0]));
  EXPECT_EQ(e->error, -EPERM);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&e->msg), req.size()), req);
  // An ACK, or any error with NETLINK_CAP_ACK, carries the request's header only.
  for (int error : {0, -EPERM}) {
    std::string ack = NlErrorMessage(h, req, error, kPortid, true);
    EXPECT_EQ(ack.size(), NLMSG_HDRLEN + sizeof(nlmsgerr));
    EXPECT_EQ(Messages(ack)[0]->nlmsg_flags, NLM_F_CAPPED);
  }
  std::string done = NlDoneMessage(kSeq, kPortid, 0);
  EXPECT_EQ(done.size(), NLMSG_HDRLEN + sizeof(int));
  EXPECT_EQ(Messages(done)[0]->nlmsg_type, NLMSG_DONE);
  EXPECT_EQ(Messages(done)[0]->nlmsg_flags, NLM_F_MULTI);
}

TEST(NetlinkMessageTest, AttributesParseWithAlignmentAndStopAtTruncation) {
  NlMessageBuilder b(RTM_NEWLINK, 0, 1, 2);
  b.PutHeader(ifinfomsg{});
  b.PutString(IFLA_IFNAME, "abcde");  // 6 bytes: padded to 8
  b.PutAttr<uint32_t>(IFLA_MTU, 9000);
  std::string m = std::move(b).Finish();
  EXPECT_EQ(m.size() % 4, 0u);
  auto attrs = ParseNlAttrs(std::string_view(m).substr(kNlHdrLen), sizeof(ifinfomsg));
  EXPECT_EQ(attrs[IFLA_IFNAME], std::string_view("abcde\0", 6));
  EXPECT_EQ(attrs[IFLA_MTU].size(), 4u);
  // A length past the end drops that attribute and the rest.
  std::string cut = m.substr(0, m.size() - 2);
  attrs = ParseNlAttrs(std::string_view(cut).substr(kNlHdrLen), sizeof(ifinfomsg));
  EXPECT_EQ(attrs.count(IFLA_MTU), 0u);
  EXPECT_EQ(attrs.count(IFLA_IFNAME), 1u);
}

TEST(NetlinkMessageTest, DumpBatchesHoldWholeMessagesAndDoneLast) {
  std::deque<std::string> pending = {std::string(100, 'a'), std::string(100, 'b'),
                                     std::string(100, 'c')};
  std::string done(20, 'd');
  // Two messages fit in 250 bytes; the third and DONE (120 bytes) go together next.
  EXPECT_EQ(NextDumpBatch(pending, done, 250), std::string(100, 'a') + std::string(100, 'b'));
  EXPECT_FALSE(done.empty());
  EXPECT_EQ(NextDumpBatch(pending, done, 250), std::string(100, 'c') + std::string(20, 'd'));
  EXPECT_TRUE(done.empty());
  // DONE that does not fit after the last message comes alone; an oversized message
  // still goes out, alone.
  pending = {std::string(240, 'e')};
  done = std::string(20, 'd');
  EXPECT_EQ(NextDumpBatch(pending, done, 250), std::string(240, 'e'));
  EXPECT_EQ(NextDumpBatch(pending, done, 250), std::string(20, 'd'));
  pending = {std::string(300, 'f')};
  done = std::string(20, 'd');
  EXPECT_EQ(NextDumpBatch(pending, done, 250), std::string(300, 'f'));
  EXPECT_EQ(NextDumpBatch(pending, done, 250), std::string(20, 'd'));
  // An empty dump is DONE alone.
  done = std::string(20, 'd');
  EXPECT_EQ(NextDumpBatch(pending, done, 250), std::string(20, 'd'));
}

}  // namespace
}  // namespace usentry::sentry::net
