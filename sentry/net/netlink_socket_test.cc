// NetlinkSocket and the interface ioctls against an in-process kernel: port ids, the
// request loop (ACKs, errors, malformed batches), reply sizing with MSG_PEEK|MSG_TRUNC,
// SO_RCVBUF overflow, options, socket() of the other protocols and of AF_PACKET.
#include "sentry/net/netlink_socket.h"

#include <linux/rtnetlink.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sentry/kernel/test_kernel.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/net/interface_ioctl.h"
#include "sentry/net/netlink_message.h"
#include "sentry/net/socket_factory.h"
#include "sentry/net/unix_socket.h"

namespace usentry::sentry::net {
namespace {

std::string Sockaddr(uint32_t pid, uint32_t groups = 0) {
  sockaddr_nl a{};
  a.nl_family = AF_NETLINK;
  a.nl_pid = pid;
  a.nl_groups = groups;
  return std::string(reinterpret_cast<const char*>(&a), sizeof(a));
}

sockaddr_nl Parse(const std::string& s) {
  sockaddr_nl a{};
  EXPECT_EQ(s.size(), sizeof(a));
  memcpy(&a, s.data(), std::min(s.size(), sizeof(a)));
  return a;
}

std::string Request(uint16_t type, uint16_t flags, uint32_t seq, uint8_t family = AF_UNSPEC) {
  NlMessageBuilder b(type, flags | NLM_F_REQUEST, seq, 0);
  ifinfomsg ifm{};
  ifm.ifi_family = family;
  b.PutHeader(ifm);
  return std::move(b).Finish();
}

SysResult<size_t> Send(Task& t, Socket& s, std::string data) {
  iovec v{data.data(), data.size()};
  SendArgs args;
  args.data = absl::MakeConstSpan(&v, 1);
  return s.SendMsg(&t, args);
}

struct Received {
  std::string data;
  size_t result = 0;
  int msg_flags = 0;
};

SysResult<Received> Recv(Task& t, Socket& s, size_t n, int flags = 0) {
  Received r;
  r.data.resize(n);
  iovec v{r.data.data(), n};
  RecvResult out;
  ASSIGN_OR_RETURN_ERRNO(
      r.result, s.RecvMsg(&t, absl::MakeConstSpan(&v, n ? 1 : 0), flags | MSG_DONTWAIT, &out));
  r.data.resize(out.copied);
  r.msg_flags = out.msg_flags;
  EXPECT_EQ(Parse(out.from).nl_pid, 0u);  // from the kernel
  return r;
}

std::vector<nlmsghdr> Headers(const std::string& buf) {
  std::vector<nlmsghdr> out;
  int len = static_cast<int>(buf.size());
  for (auto* h = reinterpret_cast<const nlmsghdr*>(buf.data()); NLMSG_OK(h, len);
       h = NLMSG_NEXT(h, len)) {
    out.push_back(*h);
  }
  return out;
}

int ErrorOf(const std::string& buf) {
  auto* h = reinterpret_cast<const nlmsghdr*>(buf.data());
  EXPECT_EQ(h->nlmsg_type, NLMSG_ERROR);
  return static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
}

class NetlinkSocketTest : public ::testing::Test {
 protected:
  explicit NetlinkSocketTest(bool egress = false) : tk_(Options(egress)) {}
  static KernelOptions Options(bool egress) {
    KernelOptions o;
    o.network.egress = egress;
    return o;
  }
  std::shared_ptr<Socket> NewNetlink() {
    auto s = NewSocket(task(), AF_NETLINK, SOCK_RAW, NETLINK_ROUTE, 0);
    EXPECT_TRUE(s.ok());
    return s.ok() ? s.value() : nullptr;
  }
  Task& task() { return tk_.task(); }
  int32_t pid() { return tk_.thread_group().pid(); }
  mm::MemoryManager& mm() { return task().mm(); }

  TestKernel tk_;
};

class NetlinkEgressTest : public NetlinkSocketTest {
 protected:
  NetlinkEgressTest() : NetlinkSocketTest(true) {}
};

TEST_F(NetlinkSocketTest, BindPicksThePidThenNegativeIds) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto a = NewNetlink();
  auto b = NewNetlink();
  EXPECT_EQ(Parse(a->SockName()).nl_pid, 0u);  // unbound
  ASSERT_TRUE(a->Bind(task(), Sockaddr(0)).ok());
  EXPECT_EQ(Parse(a->SockName()).nl_pid, static_cast<uint32_t>(pid()));
  ASSERT_TRUE(b->Bind(task(), Sockaddr(0)).ok());
  EXPECT_EQ(static_cast<int32_t>(Parse(b->SockName()).nl_pid), -4097);
  // An explicit id that is taken; rebinding to another id; a short address.
  auto c = NewNetlink();
  EXPECT_EQ(c->Bind(task(), Sockaddr(pid())).error(), EADDRINUSE);
  EXPECT_EQ(c->Bind(task(), Sockaddr(0).substr(0, 8)).error(), EINVAL);
  ASSERT_TRUE(c->Bind(task(), Sockaddr(777, 0x5)).ok());
  EXPECT_EQ(Parse(c->SockName()).nl_pid, 777u);
  EXPECT_EQ(Parse(c->SockName()).nl_groups, 0x5u);
  EXPECT_EQ(c->Bind(task(), Sockaddr(778)).error(), EINVAL);
  EXPECT_TRUE(c->Bind(task(), Sockaddr(777)).ok());
  EXPECT_EQ(Parse(c->SockName()).nl_groups, 0u);
  // A closed socket's id is free again.
  a.reset();
  auto d = NewNetlink();
  EXPECT_TRUE(d->Bind(task(), Sockaddr(pid())).ok());
}

TEST_F(NetlinkSocketTest, SendAutobindsAndRepliesCarryTheSeqAndPort) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto s = NewNetlink();
  std::string req = Request(RTM_GETLINK, NLM_F_DUMP, 1234);
  ASSERT_EQ(Send(task(), *s, req).value(), req.size());
  EXPECT_EQ(Parse(s->SockName()).nl_pid, static_cast<uint32_t>(pid()));
  EXPECT_TRUE(s->Readiness(POLLIN) & POLLIN);
  // Sizing the reply first, as iproute2 and glibc do: nothing is consumed.
  auto peek = Recv(task(), *s, 0, MSG_PEEK | MSG_TRUNC);
  ASSERT_TRUE(peek.ok());
  EXPECT_GT(peek->result, 0u);
  EXPECT_TRUE(peek->msg_flags & MSG_TRUNC);
  auto r = Recv(task(), *s, 8192);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->result, peek->result);
  auto hs = Headers(r->data);
  ASSERT_EQ(hs.size(), 2u);  // lo and NLMSG_DONE
  EXPECT_EQ(hs[0].nlmsg_type, RTM_NEWLINK);
  EXPECT_EQ(hs[1].nlmsg_type, NLMSG_DONE);
  for (const auto& h : hs) {
    EXPECT_EQ(h.nlmsg_seq, 1234u);
    EXPECT_EQ(h.nlmsg_pid, static_cast<uint32_t>(pid()));
    EXPECT_TRUE(h.nlmsg_flags & NLM_F_MULTI);
  }
  EXPECT_EQ(Recv(task(), *s, 8192).error(), EAGAIN);
  EXPECT_EQ(s->Readiness(POLLIN | POLLOUT), static_cast<EventMask>(POLLOUT));
}

TEST_F(NetlinkSocketTest, ShortReadTruncatesAndDropsTheDatagram) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto s = NewNetlink();
  ASSERT_TRUE(Send(task(), *s, Request(RTM_GETLINK, NLM_F_DUMP, 1)).ok());
  auto r = Recv(task(), *s, 16);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->result, 16u);
  EXPECT_TRUE(r->msg_flags & MSG_TRUNC);
  EXPECT_EQ(Recv(task(), *s, 8192).error(), EAGAIN);
}

TEST_F(NetlinkSocketTest, AcksErrorsAndMalformedBatches) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto s = NewNetlink();
  // Three requests in one send: an ACKed GETLINK by index, a refused NEWLINK, an
  // unknown type. Replies come in order, each its own datagram.
  std::string batch =
      Request(RTM_GETLINK, NLM_F_ACK, 1) + Request(RTM_NEWLINK, 0, 2) + Request(RTM_MAX + 1, 0, 3);
  // GETLINK needs an index: make the first request ask for lo.
  reinterpret_cast<ifinfomsg*>(batch.data() + NLMSG_HDRLEN)->ifi_index = 1;
  ASSERT_EQ(Send(task(), *s, batch).value(), batch.size());
  auto link = Recv(task(), *s, 8192);
  ASSERT_TRUE(link.ok());
  EXPECT_EQ(Headers(link->data)[0].nlmsg_type, RTM_NEWLINK);
  EXPECT_EQ(ErrorOf(Recv(task(), *s, 8192)->data), 0);
  auto eperm = Recv(task(), *s, 8192);
  EXPECT_EQ(ErrorOf(eperm->data), -EPERM);
  EXPECT_EQ(Headers(eperm->data)[0].nlmsg_seq, 2u);
  EXPECT_EQ(ErrorOf(Recv(task(), *s, 8192)->data), -EOPNOTSUPP);
  EXPECT_EQ(Recv(task(), *s, 8192).error(), EAGAIN);

  // A dump with NLM_F_ACK gets no ACK; a message that is no request only an ACK.
  ASSERT_TRUE(Send(task(), *s, Request(RTM_GETLINK, NLM_F_DUMP | NLM_F_ACK, 4)).ok());
  EXPECT_EQ(Headers(Recv(task(), *s, 8192)->data).back().nlmsg_type, NLMSG_DONE);
  EXPECT_EQ(Recv(task(), *s, 8192).error(), EAGAIN);
  std::string noop = Request(NLMSG_NOOP, NLM_F_ACK, 5);
  ASSERT_TRUE(Send(task(), *s, noop).ok());
  EXPECT_EQ(ErrorOf(Recv(task(), *s, 8192)->data), 0);

  // nlmsg_len past the data, or below a header: the batch ends silently, but the
  // send consumed everything.
  std::string bad = Request(RTM_GETLINK, NLM_F_ACK, 6);
  reinterpret_cast<nlmsghdr*>(bad.data())->nlmsg_len = bad.size() + 4;
  EXPECT_EQ(Send(task(), *s, bad).value(), bad.size());
  reinterpret_cast<nlmsghdr*>(bad.data())->nlmsg_len = 8;
  EXPECT_EQ(Send(task(), *s, bad).value(), bad.size());
  EXPECT_EQ(Send(task(), *s, "short").value(), 5u);
  EXPECT_EQ(Recv(task(), *s, 8192).error(), EAGAIN);
}

TEST_F(NetlinkSocketTest, UnreadRepliesOverflowIntoEnobufs) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto s = NewNetlink();
  ASSERT_TRUE(s->SetOption(task(), SOL_SOCKET, SO_RCVBUF, OptionBytes(int{0})).ok());
  std::string ack = Request(NLMSG_NOOP, NLM_F_ACK, 1);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Send(task(), *s, ack).ok());
  EXPECT_TRUE(s->Readiness(POLLIN) & POLLERR);
  EXPECT_EQ(Recv(task(), *s, 8192).error(), ENOBUFS);  // reported once
  int queued = 0;
  while (Recv(task(), *s, 8192).ok()) ++queued;
  EXPECT_GT(queued, 0);
  EXPECT_LT(queued, 20);
}

TEST_F(NetlinkSocketTest, DestinationsOtherThanTheKernelAreRefused) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto s = NewNetlink();
  EXPECT_EQ(s->Connect(task(), Sockaddr(99)).error(), EPERM);
  EXPECT_EQ(s->Connect(task(), Sockaddr(0, 1)).error(), EPERM);
  EXPECT_EQ(s->Connect(task(), Sockaddr(0).substr(0, 4)).error(), EINVAL);
  EXPECT_TRUE(s->Connect(task(), Sockaddr(0)).ok());
  EXPECT_EQ(Parse(s->PeerName().value()).nl_pid, 0u);
  std::string req = Request(NLMSG_NOOP, 0, 1);
  iovec v{req.data(), req.size()};
  SendArgs args;
  args.data = absl::MakeConstSpan(&v, 1);
  args.name = Sockaddr(99);
  EXPECT_EQ(s->SendMsg(&task(), args).error(), EPERM);
  args.name = std::string(sizeof(sockaddr_nl), '\0');  // AF_UNSPEC
  EXPECT_EQ(s->SendMsg(&task(), args).error(), EINVAL);
  EXPECT_EQ(s->Listen(task(), 1).error(), EOPNOTSUPP);
  EXPECT_EQ(s->Shutdown(SHUT_RDWR).error(), EOPNOTSUPP);
}

TEST_F(NetlinkSocketTest, MembershipAndFlagOptions) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto s = NewNetlink();
  ASSERT_TRUE(s->SetOption(task(), SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
                           OptionBytes(int{RTNLGRP_IPV4_IFADDR}))
                  .ok());
  ASSERT_TRUE(s->SetOption(task(), SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, OptionBytes(int{33})).ok());
  EXPECT_EQ(s->SetOption(task(), SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, OptionBytes(int{0})).error(),
            EINVAL);
  EXPECT_EQ(
      s->SetOption(task(), SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, OptionBytes(int{200})).error(),
      EINVAL);
  auto list = s->GetOption(task(), SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 8u);
  uint32_t words[2];
  memcpy(words, list->data(), sizeof(words));
  EXPECT_EQ(words[0], 1u << (RTNLGRP_IPV4_IFADDR - 1));
  EXPECT_EQ(words[1], 1u);
  EXPECT_EQ(Parse(s->SockName()).nl_groups, 1u << (RTNLGRP_IPV4_IFADDR - 1));
  ASSERT_TRUE(s->SetOption(task(), SOL_NETLINK, NETLINK_EXT_ACK, OptionBytes(int{1})).ok());
  EXPECT_EQ(s->GetOption(task(), SOL_NETLINK, NETLINK_EXT_ACK).value(), OptionBytes(int{1}));
  EXPECT_EQ(s->GetOption(task(), SOL_NETLINK, 999).error(), ENOPROTOOPT);
  EXPECT_EQ(s->GetOption(task(), SOL_IP, 1).error(), ENOPROTOOPT);
  EXPECT_EQ(s->GetOption(task(), SOL_SOCKET, SO_PROTOCOL).value(), OptionBytes(int{0}));

  // SO_PASSCRED: reads carry the kernel's credentials.
  ASSERT_TRUE(s->SetOption(task(), SOL_SOCKET, SO_PASSCRED, OptionBytes(int{1})).ok());
  EXPECT_EQ(s->GetOption(task(), SOL_SOCKET, SO_PASSCRED).value(), OptionBytes(int{1}));
  ASSERT_TRUE(Send(task(), *s, Request(NLMSG_NOOP, NLM_F_ACK, 1)).ok());
  std::string buf(64, '\0');
  iovec v{buf.data(), buf.size()};
  RecvResult out;
  ASSERT_TRUE(s->RecvMsg(&task(), absl::MakeConstSpan(&v, 1), MSG_DONTWAIT, &out).ok());
  EXPECT_TRUE(out.has_creds);
  EXPECT_EQ(out.creds, (Ucred{0, 0, 0}));

  // NETLINK_CAP_ACK: errors no longer echo the whole request.
  ASSERT_TRUE(s->SetOption(task(), SOL_NETLINK, NETLINK_CAP_ACK, OptionBytes(int{1})).ok());
  ASSERT_TRUE(Send(task(), *s, Request(RTM_NEWLINK, 0, 1)).ok());
  auto r = Recv(task(), *s, 8192);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->data.size(), NLMSG_HDRLEN + sizeof(nlmsgerr));
}

TEST_F(NetlinkSocketTest, OtherProtocolsAndPacketSocketsArePermissionErrors) {
  absl::MutexLock l(&tk_.kernel().mu);
  EXPECT_EQ(NewSocket(task(), AF_NETLINK, SOCK_RAW, NETLINK_AUDIT, 0).error(), EPERM);
  EXPECT_EQ(NewSocket(task(), AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT, 0).error(), EPERM);
  EXPECT_EQ(NewSocket(task(), AF_NETLINK, SOCK_RAW, NETLINK_GENERIC, 0).error(), EPERM);
  EXPECT_EQ(NewSocket(task(), AF_NETLINK, SOCK_RAW, 17, 0).error(), EPERM);
  EXPECT_EQ(NewSocket(task(), AF_NETLINK, SOCK_RAW, 32, 0).error(), EPROTONOSUPPORT);
  EXPECT_EQ(NewSocket(task(), AF_NETLINK, SOCK_STREAM, NETLINK_ROUTE, 0).error(), ESOCKTNOSUPPORT);
  EXPECT_TRUE(NewSocket(task(), AF_NETLINK, SOCK_DGRAM, NETLINK_ROUTE, 0).ok());
  EXPECT_EQ(NewSocket(task(), AF_PACKET, SOCK_RAW, 0, 0).error(), EPERM);
  EXPECT_EQ(NewSocket(task(), AF_PACKET, SOCK_STREAM, 0, 0).error(), EPERM);
  EXPECT_EQ(NewSocketPair(task(), AF_NETLINK, SOCK_RAW, 0, 0).error(), EOPNOTSUPP);
  EXPECT_EQ(NewSocketPair(task(), AF_NETLINK, SOCK_RAW, NETLINK_AUDIT, 0).error(), EPERM);
}

// --- interface ioctls ---

class InterfaceIoctlTest : public NetlinkSocketTest {
 protected:
  explicit InterfaceIoctlTest(bool egress = false) : NetlinkSocketTest(egress) {}
  // Runs `cmd` on an ifreq naming `name` (in app memory) from a socket of `family`.
  SysResult<ifreq> Ioctl(int family, uint64_t cmd, const char* name, int index = 0) {
    ifreq r{};
    strncpy(r.ifr_name, name, IFNAMSIZ - 1);
    if (index != 0) r.ifr_ifindex = index;
    RETURN_IF_ERRNO(mm().CopyOutObj(tk_.mem(), r));
    ASSIGN_OR_RETURN_ERRNO(uint64_t rv, InterfaceIoctl(task(), family, cmd, tk_.mem().value()));
    EXPECT_EQ(rv, 0u);
    return mm().CopyInObj<ifreq>(tk_.mem());
  }
  static std::string Addr(const sockaddr& sa) {
    auto* sin = reinterpret_cast<const sockaddr_in*>(&sa);
    EXPECT_EQ(sin->sin_family, AF_INET);
    return IpAddress::FromIn(sin->sin_addr).ToString();
  }
};

class InterfaceIoctlEgressTest : public InterfaceIoctlTest {
 protected:
  InterfaceIoctlEgressTest() : InterfaceIoctlTest(true) {}
};

TEST_F(InterfaceIoctlTest, DeviceGettersOnAnySocket) {
  absl::MutexLock l(&tk_.kernel().mu);
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFFLAGS, "lo")->ifr_flags, IFF_UP | IFF_LOOPBACK | IFF_RUNNING);
  EXPECT_EQ(Ioctl(AF_NETLINK, SIOCGIFINDEX, "lo")->ifr_ifindex, 1);
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFMTU, "lo")->ifr_mtu, 65536);
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFTXQLEN, "lo")->ifr_qlen, 1000);
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFMETRIC, "lo")->ifr_metric, 0);
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFHWADDR, "lo")->ifr_hwaddr.sa_family, ARPHRD_LOOPBACK);
  EXPECT_STREQ(Ioctl(AF_UNIX, SIOCGIFNAME, "", 1)->ifr_name, "lo");
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFNAME, "", 2).error(), ENODEV);  // no eth0 without egress
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFFLAGS, "eth0").error(), ENODEV);
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFFLAGS, "nosuch0").error(), ENODEV);
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFINDEX, "lo:1")->ifr_ifindex, 1);  // an alias is its device
  // The address getters are AF_INET's; elsewhere they are not interface ioctls.
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFADDR, "lo").error(), ENOTTY);
  EXPECT_EQ(Addr(Ioctl(AF_INET, SIOCGIFADDR, "lo")->ifr_addr), "127.0.0.1");
  EXPECT_EQ(Addr(Ioctl(AF_INET, SIOCGIFNETMASK, "lo")->ifr_netmask), "255.0.0.0");
  EXPECT_EQ(Addr(Ioctl(AF_INET, SIOCGIFBRDADDR, "lo")->ifr_broadaddr), "0.0.0.0");
  EXPECT_EQ(Ioctl(AF_INET, SIOCGIFADDR, "lo:1").error(), EADDRNOTAVAIL);
  EXPECT_EQ(Ioctl(AF_INET, SIOCGIFADDR, "nosuch").error(), ENODEV);
  EXPECT_EQ(Ioctl(AF_UNIX, 0x5401 /* TCGETS */, "lo").error(), ENOTTY);
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFCOUNT, "lo").error(), ENOTTY);
}

TEST_F(InterfaceIoctlTest, ChangesArePermissionErrorsAndBadPointersFaults) {
  absl::MutexLock l(&tk_.kernel().mu);
  for (uint64_t cmd : {SIOCSIFFLAGS, SIOCSIFADDR, SIOCSIFMTU, SIOCSIFNAME, SIOCSIFHWADDR, SIOCADDRT,
                       SIOCDELRT, SIOCSIFNETMASK, SIOCDIFADDR, SIOCSIFTXQLEN}) {
    EXPECT_EQ(Ioctl(AF_UNIX, cmd, "lo").error(), EPERM) << cmd;
    EXPECT_EQ(Ioctl(AF_INET, cmd, "lo").error(), EPERM) << cmd;
  }
  EXPECT_EQ(InterfaceIoctl(task(), AF_UNIX, SIOCGIFFLAGS, 0).error(), EFAULT);
  EXPECT_EQ(InterfaceIoctl(task(), AF_UNIX, SIOCGIFCONF, 0).error(), EFAULT);
}

TEST_F(InterfaceIoctlEgressTest, Eth0AndIfconf) {
  absl::MutexLock l(&tk_.kernel().mu);
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFINDEX, "eth0")->ifr_ifindex, 2);
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFFLAGS, "eth0")->ifr_flags,
            IFF_UP | IFF_BROADCAST | IFF_RUNNING | IFF_MULTICAST);
  EXPECT_EQ(Ioctl(AF_UNIX, SIOCGIFMTU, "eth0")->ifr_mtu, 1500);
  auto hw = Ioctl(AF_UNIX, SIOCGIFHWADDR, "eth0");
  EXPECT_EQ(hw->ifr_hwaddr.sa_family, ARPHRD_ETHER);
  EXPECT_EQ(std::string(hw->ifr_hwaddr.sa_data, 6), std::string("\x02\x00\x0a\x00\x02\x0f", 6));
  EXPECT_EQ(Addr(Ioctl(AF_INET, SIOCGIFADDR, "eth0")->ifr_addr), "10.0.2.15");
  EXPECT_EQ(Addr(Ioctl(AF_INET, SIOCGIFNETMASK, "eth0")->ifr_netmask), "255.255.255.0");
  EXPECT_EQ(Addr(Ioctl(AF_INET, SIOCGIFBRDADDR, "eth0")->ifr_broadaddr), "10.0.2.255");
  EXPECT_EQ(Addr(Ioctl(AF_INET, SIOCGIFDSTADDR, "eth0")->ifr_dstaddr), "10.0.2.15");

  // SIOCGIFCONF: the size with a null buffer, then only whole entries.
  mm::GuestAddr conf = tk_.mem() + 1024;
  mm::GuestAddr buf = tk_.mem() + 2048;
  ASSERT_TRUE(mm().CopyOutObj(conf, ifconf{}).ok());
  ASSERT_TRUE(InterfaceIoctl(task(), AF_UNIX, SIOCGIFCONF, conf.value()).ok());
  EXPECT_EQ(mm().CopyInObj<ifconf>(conf)->ifc_len, static_cast<int>(2 * sizeof(ifreq)));
  ifconf ifc{};
  ifc.ifc_len = sizeof(ifreq) + 10;
  ifc.ifc_buf = reinterpret_cast<char*>(buf.value());
  ASSERT_TRUE(mm().CopyOutObj(conf, ifc).ok());
  ASSERT_TRUE(InterfaceIoctl(task(), AF_UNIX, SIOCGIFCONF, conf.value()).ok());
  EXPECT_EQ(mm().CopyInObj<ifconf>(conf)->ifc_len, static_cast<int>(sizeof(ifreq)));
  ifreq first = mm().CopyInObj<ifreq>(buf).value();
  EXPECT_STREQ(first.ifr_name, "lo");
  EXPECT_EQ(Addr(first.ifr_addr), "127.0.0.1");
  ifc.ifc_len = 4 * sizeof(ifreq);
  ASSERT_TRUE(mm().CopyOutObj(conf, ifc).ok());
  ASSERT_TRUE(InterfaceIoctl(task(), AF_UNIX, SIOCGIFCONF, conf.value()).ok());
  EXPECT_EQ(mm().CopyInObj<ifconf>(conf)->ifc_len, static_cast<int>(2 * sizeof(ifreq)));
  ifreq second = mm().CopyInObj<ifreq>(buf + sizeof(ifreq)).value();
  EXPECT_STREQ(second.ifr_name, "eth0");
  EXPECT_EQ(Addr(second.ifr_addr), "10.0.2.15");
}

TEST_F(InterfaceIoctlTest, UnixSocketsFallBackToInterfaceIoctls) {
  absl::MutexLock l(&tk_.kernel().mu);
  auto s = UnixSocket::New(tk_.kernel().unix_namespace(), SOCK_DGRAM, 0, 0, 0);
  ifreq r{};
  strcpy(r.ifr_name, "lo");
  ASSERT_TRUE(mm().CopyOutObj(tk_.mem(), r).ok());
  ASSERT_TRUE(s->Ioctl(task(), SIOCGIFINDEX, tk_.mem().value()).ok());
  EXPECT_EQ(mm().CopyInObj<ifreq>(tk_.mem())->ifr_ifindex, 1);
  auto nl = NewNetlink();
  ASSERT_TRUE(nl->Ioctl(task(), SIOCGIFFLAGS, tk_.mem().value()).ok());
  EXPECT_EQ(nl->Ioctl(task(), FIONREAD, tk_.mem().value()).error(), ENOTTY);
}

}  // namespace
}  // namespace usentry::sentry::net
