// Interface listing as programs do it: getifaddrs/if_nameindex, NETLINK_ROUTE dumps and
// lookups, the SIOCGIF* ioctls, /proc/net. Every case holds natively and in the sandbox,
// whose only interface without egress is lo. These run natively as root: they only
// read. Nothing here sends a request that would change an interface, address or route
// (those are sandbox-only integration tests, tests/integration/netlink_test.cc).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

constexpr uint16_t kBogusType = 0x3ff0;  // far past RTM_MAX on any kernel

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

ScopedFd NetlinkSocket(int type = SOCK_RAW) {
  return ScopedFd(socket(AF_NETLINK, type | SOCK_CLOEXEC, NETLINK_ROUTE));
}

sockaddr_nl Kernel() {
  sockaddr_nl a{};
  a.nl_family = AF_NETLINK;
  return a;
}

uint32_t BoundPid(int fd) {
  sockaddr_nl a{};
  socklen_t len = sizeof(a);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  EXPECT_EQ(len, sizeof(a));
  EXPECT_EQ(a.nl_family, AF_NETLINK);
  return a.nl_pid;
}

// A request with a family header and optional attributes.
template <typename T>
std::string Request(uint16_t type, uint16_t flags, uint32_t seq, const T& hdr,
                    const std::string& attrs = "") {
  std::string msg(NLMSG_LENGTH(sizeof(T)), '\0');
  memcpy(msg.data() + NLMSG_HDRLEN, &hdr, sizeof(T));
  msg.resize(NLMSG_ALIGN(msg.size()));
  msg += attrs;
  nlmsghdr h{};
  h.nlmsg_len = msg.size();
  h.nlmsg_type = type;
  h.nlmsg_flags = flags;
  h.nlmsg_seq = seq;
  memcpy(msg.data(), &h, sizeof(h));
  return msg;
}

std::string DumpRequest(uint16_t type, uint8_t family, uint32_t seq) {
  rtgenmsg g{};
  g.rtgen_family = family;
  return Request(type, NLM_F_REQUEST | NLM_F_DUMP, seq, g);
}

void SendToKernel(int fd, const std::string& msg) {
  sockaddr_nl k = Kernel();
  ASSERT_EQ(sendto(fd, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&k), sizeof(k)),
            static_cast<ssize_t>(msg.size()))
      << strerror(errno);
}

// The messages of one reply datagram.
std::vector<std::string> RecvMessages(int fd, int* msg_flags = nullptr) {
  std::vector<char> buf(32768);
  iovec v{buf.data(), buf.size()};
  sockaddr_nl from{};
  msghdr m{};
  m.msg_name = &from;
  m.msg_namelen = sizeof(from);
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  ssize_t n = recvmsg(fd, &m, 0);
  EXPECT_GT(n, 0) << strerror(errno);
  if (msg_flags) *msg_flags = m.msg_flags;
  EXPECT_EQ(m.msg_namelen, sizeof(from));
  EXPECT_EQ(from.nl_pid, 0u);  // the kernel
  std::vector<std::string> out;
  if (n <= 0) return out;
  int len = static_cast<int>(n);
  for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, len);
       h = NLMSG_NEXT(h, len)) {
    out.emplace_back(reinterpret_cast<char*>(h), h->nlmsg_len);
  }
  return out;
}

const nlmsghdr& Hdr(const std::string& m) { return *reinterpret_cast<const nlmsghdr*>(m.data()); }

// Every message of a dump up to NLMSG_DONE (not included).
std::vector<std::string> RecvDump(int fd, uint32_t seq) {
  std::vector<std::string> out;
  uint32_t pid = BoundPid(fd);
  for (int rounds = 0; rounds < 1000; ++rounds) {
    auto msgs = RecvMessages(fd);
    if (msgs.empty()) return out;
    for (const std::string& m : msgs) {
      EXPECT_EQ(Hdr(m).nlmsg_seq, seq);
      EXPECT_EQ(Hdr(m).nlmsg_pid, pid);
      EXPECT_TRUE(Hdr(m).nlmsg_flags & NLM_F_MULTI);
      if (Hdr(m).nlmsg_type == NLMSG_DONE) return out;
      out.push_back(m);
    }
  }
  ADD_FAILURE() << "no NLMSG_DONE";
  return out;
}

std::map<int, std::string> Attrs(const rtattr* rta, int len) {
  std::map<int, std::string> out;
  for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
    out[rta->rta_type] = std::string(static_cast<const char*>(RTA_DATA(rta)), RTA_PAYLOAD(rta));
  }
  return out;
}

std::map<int, std::string> LinkAttrs(const std::string& m) {
  auto* h = &Hdr(m);
  return Attrs(IFLA_RTA(static_cast<const ifinfomsg*>(NLMSG_DATA(h))), IFLA_PAYLOAD(h));
}

bool HostHasIpv6Loopback() {
  return ReadFile("/proc/net/if_inet6").find("00000000000000000000000000000001") !=
         std::string::npos;
}

TEST(NetlinkTest, GetifaddrsListsLoopback) {
  ifaddrs* list = nullptr;
  ASSERT_SYS_OK(getifaddrs(&list));
  bool v4 = false, v6 = false, packet = false;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (strcmp(i->ifa_name, "lo") != 0 || i->ifa_addr == nullptr) continue;
    EXPECT_TRUE(i->ifa_flags & IFF_LOOPBACK);
    EXPECT_TRUE(i->ifa_flags & IFF_UP);
    if (i->ifa_addr->sa_family == AF_PACKET) packet = true;
    if (i->ifa_addr->sa_family == AF_INET) {
      auto* sin = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
      if (sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK)) v4 = true;
      auto* mask = reinterpret_cast<sockaddr_in*>(i->ifa_netmask);
      EXPECT_EQ(mask->sin_addr.s_addr, htonl(0xff000000));
    }
    if (i->ifa_addr->sa_family == AF_INET6) {
      auto* sin6 = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
      if (IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr)) v6 = true;
    }
  }
  freeifaddrs(list);
  EXPECT_TRUE(packet);
  EXPECT_TRUE(v4);
  if (!HostHasIpv6Loopback()) GTEST_SKIP() << "no ::1 on lo here (IPv6 disabled)";
  EXPECT_TRUE(v6);
}

TEST(NetlinkTest, IfNameindexHasLoopbackAtIndexOne) {
  struct if_nameindex* names = if_nameindex();
  ASSERT_NE(names, nullptr) << strerror(errno);
  bool found = false;
  for (struct if_nameindex* n = names; n->if_index != 0; ++n) {
    if (strcmp(n->if_name, "lo") == 0) {
      EXPECT_EQ(n->if_index, 1u);
      found = true;
    }
  }
  if_freenameindex(names);
  EXPECT_TRUE(found);
  EXPECT_EQ(if_nametoindex("lo"), 1u);
  char name[IF_NAMESIZE];
  EXPECT_STREQ(if_indextoname(1, name), "lo");
  EXPECT_EQ(if_nametoindex("nosuch-if0"), 0u);
}

TEST(NetlinkTest, BindZeroTakesThePidThenAnotherId) {
  ScopedFd a = NetlinkSocket();
  ScopedFd b = NetlinkSocket(SOCK_DGRAM);
  ASSERT_SYS_OK(a.get());
  ASSERT_SYS_OK(b.get());
  EXPECT_EQ(BoundPid(a.get()), 0u);  // not bound yet
  sockaddr_nl any = Kernel();
  ASSERT_SYS_OK(bind(a.get(), reinterpret_cast<sockaddr*>(&any), sizeof(any)));
  EXPECT_EQ(BoundPid(a.get()), static_cast<uint32_t>(getpid()));
  ASSERT_SYS_OK(bind(b.get(), reinterpret_cast<sockaddr*>(&any), sizeof(any)));
  EXPECT_NE(BoundPid(b.get()), BoundPid(a.get()));
  EXPECT_LT(static_cast<int32_t>(BoundPid(b.get())), 0);
  ScopedFd c = NetlinkSocket();
  sockaddr_nl taken = Kernel();
  taken.nl_pid = getpid();
  EXPECT_ERRNO(bind(c.get(), reinterpret_cast<sockaddr*>(&taken), sizeof(taken)), EADDRINUSE);
  EXPECT_ERRNO(bind(c.get(), reinterpret_cast<sockaddr*>(&any), 4), EINVAL);
  sockaddr_nl peer{};
  socklen_t len = sizeof(peer);
  ASSERT_SYS_OK(getpeername(a.get(), reinterpret_cast<sockaddr*>(&peer), &len));
  EXPECT_EQ(peer.nl_pid, 0u);
}

TEST(NetlinkTest, SocketTypesAndPairs) {
  EXPECT_ERRNO(socket(AF_NETLINK, SOCK_STREAM, NETLINK_ROUTE), ESOCKTNOSUPPORT);
  int sv[2];
  EXPECT_ERRNO(socketpair(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE, sv), EOPNOTSUPP);
  ScopedFd s = NetlinkSocket();
  int type = 0, proto = -1, domain = 0;
  socklen_t len = sizeof(int);
  ASSERT_SYS_OK(getsockopt(s.get(), SOL_SOCKET, SO_TYPE, &type, &len));
  ASSERT_SYS_OK(getsockopt(s.get(), SOL_SOCKET, SO_PROTOCOL, &proto, &len));
  ASSERT_SYS_OK(getsockopt(s.get(), SOL_SOCKET, SO_DOMAIN, &domain, &len));
  EXPECT_EQ(type, SOCK_RAW);
  EXPECT_EQ(proto, NETLINK_ROUTE);
  EXPECT_EQ(domain, AF_NETLINK);
}

TEST(NetlinkTest, LinkDumpParses) {
  ScopedFd s = NetlinkSocket();
  SendToKernel(s.get(), DumpRequest(RTM_GETLINK, AF_PACKET, 41));
  auto links = RecvDump(s.get(), 41);
  bool lo = false;
  for (const std::string& m : links) {
    EXPECT_EQ(Hdr(m).nlmsg_type, RTM_NEWLINK);
    auto* ifi = static_cast<const ifinfomsg*>(NLMSG_DATA(&Hdr(m)));
    auto attrs = LinkAttrs(m);
    ASSERT_TRUE(attrs.count(IFLA_IFNAME));
    if (strcmp(attrs[IFLA_IFNAME].c_str(), "lo") != 0) continue;
    lo = true;
    EXPECT_EQ(ifi->ifi_index, 1);
    EXPECT_TRUE(ifi->ifi_flags & IFF_LOOPBACK);
    EXPECT_TRUE(ifi->ifi_flags & IFF_UP);
    ASSERT_EQ(attrs[IFLA_MTU].size(), 4u);
    ASSERT_EQ(attrs[IFLA_ADDRESS].size(), 6u);
    EXPECT_EQ(attrs[IFLA_ADDRESS], std::string(6, '\0'));
    EXPECT_EQ(attrs[IFLA_TXQLEN].size(), 4u);
    EXPECT_EQ(attrs[IFLA_OPERSTATE].size(), 1u);
    EXPECT_EQ(attrs[IFLA_STATS64].size(), sizeof(rtnl_link_stats64));
  }
  EXPECT_TRUE(lo);
}

TEST(NetlinkTest, LinkByIndex) {
  ScopedFd s = NetlinkSocket();
  ifinfomsg ifm{};
  ifm.ifi_index = 1;
  SendToKernel(s.get(), Request(RTM_GETLINK, NLM_F_REQUEST, 7, ifm));
  auto msgs = RecvMessages(s.get());
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(Hdr(msgs[0]).nlmsg_type, RTM_NEWLINK);
  EXPECT_EQ(Hdr(msgs[0]).nlmsg_seq, 7u);
  EXPECT_STREQ(LinkAttrs(msgs[0])[IFLA_IFNAME].c_str(), "lo");
  // An index nobody has: NLMSG_ERROR with -ENODEV and our request echoed.
  ifm.ifi_index = 0x7ffffff0;
  std::string req = Request(RTM_GETLINK, NLM_F_REQUEST, 8, ifm);
  SendToKernel(s.get(), req);
  msgs = RecvMessages(s.get());
  ASSERT_EQ(msgs.size(), 1u);
  ASSERT_EQ(Hdr(msgs[0]).nlmsg_type, NLMSG_ERROR);
  auto* err = static_cast<const nlmsgerr*>(NLMSG_DATA(&Hdr(msgs[0])));
  EXPECT_EQ(err->error, -ENODEV);
  EXPECT_EQ(err->msg.nlmsg_seq, 8u);
  EXPECT_EQ(err->msg.nlmsg_type, RTM_GETLINK);
}

TEST(NetlinkTest, AddressDumpFilteredByFamily) {
  ScopedFd s = NetlinkSocket();
  SendToKernel(s.get(), DumpRequest(RTM_GETADDR, AF_INET, 11));
  bool lo4 = false;
  for (const std::string& m : RecvDump(s.get(), 11)) {
    EXPECT_EQ(Hdr(m).nlmsg_type, RTM_NEWADDR);
    auto* ifa = static_cast<const ifaddrmsg*>(NLMSG_DATA(&Hdr(m)));
    EXPECT_EQ(ifa->ifa_family, AF_INET);
    auto attrs = Attrs(IFA_RTA(ifa), IFA_PAYLOAD(&Hdr(m)));
    ASSERT_EQ(attrs[IFA_LOCAL].size(), 4u);
    in_addr a;
    memcpy(&a, attrs[IFA_LOCAL].data(), 4);
    if (a.s_addr == htonl(INADDR_LOOPBACK)) {
      lo4 = true;
      EXPECT_EQ(ifa->ifa_index, 1u);
      EXPECT_EQ(ifa->ifa_prefixlen, 8);
      EXPECT_EQ(ifa->ifa_scope, RT_SCOPE_HOST);
      EXPECT_STREQ(attrs[IFA_LABEL].c_str(), "lo");
    }
  }
  EXPECT_TRUE(lo4);
  SendToKernel(s.get(), DumpRequest(RTM_GETADDR, AF_INET6, 12));
  for (const std::string& m : RecvDump(s.get(), 12)) {
    EXPECT_EQ(static_cast<const ifaddrmsg*>(NLMSG_DATA(&Hdr(m)))->ifa_family, AF_INET6);
  }
}

TEST(NetlinkTest, UnknownTypeGetsAnError) {
  ScopedFd s = NetlinkSocket();
  rtgenmsg g{};
  SendToKernel(s.get(), Request(kBogusType, NLM_F_REQUEST, 21, g));
  auto msgs = RecvMessages(s.get());
  ASSERT_EQ(msgs.size(), 1u);
  ASSERT_EQ(Hdr(msgs[0]).nlmsg_type, NLMSG_ERROR);
  EXPECT_EQ(static_cast<const nlmsgerr*>(NLMSG_DATA(&Hdr(msgs[0])))->error, -EOPNOTSUPP);
  EXPECT_EQ(Hdr(msgs[0]).nlmsg_seq, 21u);
  EXPECT_EQ(Hdr(msgs[0]).nlmsg_pid, BoundPid(s.get()));
}

TEST(NetlinkTest, AckAndBatchedRequests) {
  ScopedFd s = NetlinkSocket();
  rtgenmsg g{};
  ifinfomsg ifm{};
  ifm.ifi_index = 1;
  // A NOOP asking for an ACK, then a lookup: two replies, in order.
  SendToKernel(s.get(), Request(NLMSG_NOOP, NLM_F_REQUEST | NLM_F_ACK, 31, g) +
                            Request(RTM_GETLINK, NLM_F_REQUEST, 32, ifm));
  auto ack = RecvMessages(s.get());
  ASSERT_EQ(ack.size(), 1u);
  ASSERT_EQ(Hdr(ack[0]).nlmsg_type, NLMSG_ERROR);
  EXPECT_EQ(static_cast<const nlmsgerr*>(NLMSG_DATA(&Hdr(ack[0])))->error, 0);
  EXPECT_EQ(Hdr(ack[0]).nlmsg_seq, 31u);
  auto link = RecvMessages(s.get());
  ASSERT_EQ(link.size(), 1u);
  EXPECT_EQ(Hdr(link[0]).nlmsg_seq, 32u);
  // A length past the end of the data: dropped without an answer.
  std::string bad = Request(NLMSG_NOOP, NLM_F_REQUEST | NLM_F_ACK, 33, g);
  reinterpret_cast<nlmsghdr*>(bad.data())->nlmsg_len += 64;
  SendToKernel(s.get(), bad);
  char c;
  EXPECT_ERRNO(recv(s.get(), &c, 1, MSG_DONTWAIT), EAGAIN);
}

TEST(NetlinkTest, PeekTruncSizesTheReply) {
  ScopedFd s = NetlinkSocket();
  SendToKernel(s.get(), DumpRequest(RTM_GETLINK, AF_UNSPEC, 51));
  ssize_t size = recv(s.get(), nullptr, 0, MSG_PEEK | MSG_TRUNC);
  ASSERT_GT(size, 0) << strerror(errno);
  std::vector<char> buf(size);
  iovec v{buf.data(), buf.size()};
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  EXPECT_EQ(recvmsg(s.get(), &m, 0), size);
  EXPECT_FALSE(m.msg_flags & MSG_TRUNC);
  EXPECT_EQ(reinterpret_cast<nlmsghdr*>(buf.data())->nlmsg_seq, 51u);
  // The rest of the dump (if any), then nothing.
  bool done = false;
  int len = static_cast<int>(size);
  for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, len);
       h = NLMSG_NEXT(h, len)) {
    done = done || h->nlmsg_type == NLMSG_DONE;
  }
  while (!done) {
    auto msgs = RecvMessages(s.get());
    done = msgs.empty() || Hdr(msgs.back()).nlmsg_type == NLMSG_DONE;
  }
  char c;
  EXPECT_ERRNO(recv(s.get(), &c, 1, MSG_DONTWAIT), EAGAIN);
}

TEST(NetlinkTest, ShortReadSetsMsgTrunc) {
  ScopedFd s = NetlinkSocket();
  SendToKernel(s.get(), DumpRequest(RTM_GETLINK, AF_UNSPEC, 61));
  char buf[16];
  iovec v{buf, sizeof(buf)};
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  EXPECT_EQ(recvmsg(s.get(), &m, 0), 16);
  EXPECT_TRUE(m.msg_flags & MSG_TRUNC);
}

TEST(NetlinkTest, ReadinessAndNonblockingReads) {
  ScopedFd s = NetlinkSocket();
  pollfd p{s.get(), POLLIN | POLLOUT, 0};
  ASSERT_EQ(poll(&p, 1, 0), 1);
  EXPECT_EQ(p.revents, POLLOUT);
  char c;
  EXPECT_ERRNO(recv(s.get(), &c, 1, MSG_DONTWAIT), EAGAIN);
  ifinfomsg ifm{};
  ifm.ifi_index = 1;
  std::string req = Request(RTM_GETLINK, NLM_F_REQUEST, 71, ifm);
  ASSERT_EQ(write(s.get(), req.data(), req.size()), static_cast<ssize_t>(req.size()));
  ASSERT_EQ(poll(&p, 1, 1000), 1);
  EXPECT_EQ(p.revents, POLLIN | POLLOUT);
  char buf[8192];
  EXPECT_GT(read(s.get(), buf, sizeof(buf)), 0);
}

TEST(NetlinkTest, BlockedReaderWakesForAReplyAnotherThreadAsked) {
  ScopedFd s = NetlinkSocket();
  std::atomic<bool> reading{false};
  ssize_t got = -1;
  std::thread reader([&] {
    char buf[8192];
    reading = true;
    got = recv(s.get(), buf, sizeof(buf), 0);  // blocks: nothing is queued yet
  });
  while (!reading) usleep(1000);
  usleep(50000);
  ifinfomsg ifm{};
  ifm.ifi_index = 1;
  SendToKernel(s.get(), Request(RTM_GETLINK, NLM_F_REQUEST, 91, ifm));
  reader.join();
  EXPECT_GT(got, 0) << strerror(errno);
}

TEST(NetlinkTest, BlockingReadTimesOutAndIsInterrupted) {
  ScopedFd s = NetlinkSocket();
  timeval tv{0, 50000};
  ASSERT_SYS_OK(setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
  char c;
  EXPECT_ERRNO(recv(s.get(), &c, 1, 0), EAGAIN);
  tv = {0, 0};
  ASSERT_SYS_OK(setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
  struct sigaction sa {};
  sa.sa_handler = [](int) {};  // no SA_RESTART: the read fails with EINTR
  struct sigaction old {};
  ASSERT_SYS_OK(sigaction(SIGALRM, &sa, &old));
  itimerval it{};
  it.it_value.tv_usec = 50000;
  ASSERT_SYS_OK(setitimer(ITIMER_REAL, &it, nullptr));
  EXPECT_ERRNO(recv(s.get(), &c, 1, 0), EINTR);
  sigaction(SIGALRM, &old, nullptr);
}

TEST(NetlinkTest, MembershipsAreAccepted) {
  ScopedFd s = NetlinkSocket();
  int group = RTNLGRP_LINK;
  ASSERT_SYS_OK(setsockopt(s.get(), SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)));
  uint32_t groups[8] = {};
  socklen_t len = sizeof(groups);
  ASSERT_SYS_OK(getsockopt(s.get(), SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, groups, &len));
  EXPECT_EQ(groups[0], 1u << (RTNLGRP_LINK - 1));
  group = 0;
  EXPECT_ERRNO(setsockopt(s.get(), SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)),
               EINVAL);
}

TEST(NetlinkTest, PassCredShowsTheKernelAsSender) {
  ScopedFd s = NetlinkSocket();
  int one = 1;
  ASSERT_SYS_OK(setsockopt(s.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)));
  rtgenmsg g{};
  SendToKernel(s.get(), Request(NLMSG_NOOP, NLM_F_REQUEST | NLM_F_ACK, 81, g));
  char buf[256];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  iovec v{buf, sizeof(buf)};
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  ASSERT_GT(recvmsg(s.get(), &m, 0), 0) << strerror(errno);
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cmsg_level, SOL_SOCKET);
  EXPECT_EQ(c->cmsg_type, SCM_CREDENTIALS);
  ucred cred;
  memcpy(&cred, CMSG_DATA(c), sizeof(cred));
  EXPECT_EQ(cred.pid, 0);
  EXPECT_EQ(cred.uid, 0u);
  EXPECT_EQ(cred.gid, 0u);
}

// --- ioctls, on an AF_UNIX socket (glibc's if_nametoindex does the same) ---

class InterfaceIoctlTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_SYS_OK(fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)); }
  void TearDown() override { close(fd_); }
  ifreq Named(const char* name) {
    ifreq r{};
    strncpy(r.ifr_name, name, IFNAMSIZ - 1);
    return r;
  }
  int fd_ = -1;
};

TEST_F(InterfaceIoctlTest, LoopbackFlagsIndexMtu) {
  ifreq r = Named("lo");
  ASSERT_SYS_OK(ioctl(fd_, SIOCGIFFLAGS, &r));
  EXPECT_EQ(r.ifr_flags & (IFF_UP | IFF_LOOPBACK | IFF_RUNNING),
            IFF_UP | IFF_LOOPBACK | IFF_RUNNING);
  r = Named("lo");
  ASSERT_SYS_OK(ioctl(fd_, SIOCGIFINDEX, &r));
  EXPECT_EQ(r.ifr_ifindex, 1);
  r = Named("lo");
  ASSERT_SYS_OK(ioctl(fd_, SIOCGIFMTU, &r));
  EXPECT_GT(r.ifr_mtu, 0);
  r = Named("lo");
  ASSERT_SYS_OK(ioctl(fd_, SIOCGIFHWADDR, &r));
  EXPECT_EQ(r.ifr_hwaddr.sa_family, 772);  // ARPHRD_LOOPBACK
  r = Named("");
  r.ifr_ifindex = 1;
  ASSERT_SYS_OK(ioctl(fd_, SIOCGIFNAME, &r));
  EXPECT_STREQ(r.ifr_name, "lo");
}

TEST_F(InterfaceIoctlTest, UnknownNameIsNoDevice) {
  ifreq r = Named("nosuch-if0");
  EXPECT_ERRNO(ioctl(fd_, SIOCGIFFLAGS, &r), ENODEV);
  EXPECT_ERRNO(ioctl(fd_, SIOCGIFINDEX, &r), ENODEV);
  r = Named("");
  r.ifr_ifindex = 0x7ffffff0;
  EXPECT_ERRNO(ioctl(fd_, SIOCGIFNAME, &r), ENODEV);
}

TEST_F(InterfaceIoctlTest, AddressIoctlsAreInetOnly) {
  ifreq r = Named("lo");
  EXPECT_ERRNO(ioctl(fd_, SIOCGIFADDR, &r), ENOTTY);
  EXPECT_ERRNO(ioctl(fd_, SIOCGIFFLAGS, nullptr), EFAULT);
}

TEST_F(InterfaceIoctlTest, IfconfListsLoopback) {
  ifconf ifc{};
  ASSERT_SYS_OK(ioctl(fd_, SIOCGIFCONF, &ifc));  // null buffer: the size needed
  ASSERT_GE(ifc.ifc_len, static_cast<int>(sizeof(ifreq)));
  EXPECT_EQ(ifc.ifc_len % sizeof(ifreq), 0u);
  std::vector<ifreq> reqs(ifc.ifc_len / sizeof(ifreq) + 2);
  ifc.ifc_len = reqs.size() * sizeof(ifreq);
  ifc.ifc_req = reqs.data();
  ASSERT_SYS_OK(ioctl(fd_, SIOCGIFCONF, &ifc));
  bool lo = false;
  for (int i = 0; i < ifc.ifc_len / static_cast<int>(sizeof(ifreq)); ++i) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&reqs[i].ifr_addr);
    EXPECT_EQ(sin->sin_family, AF_INET);
    if (strcmp(reqs[i].ifr_name, "lo") == 0 && sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
      lo = true;
    }
  }
  EXPECT_TRUE(lo);
  // Only whole entries fit.
  ifc.ifc_len = sizeof(ifreq) + 3;
  ASSERT_SYS_OK(ioctl(fd_, SIOCGIFCONF, &ifc));
  EXPECT_EQ(ifc.ifc_len, static_cast<int>(sizeof(ifreq)));
}

TEST_F(InterfaceIoctlTest, NetlinkSocketsAnswerThemToo) {
  ScopedFd s = NetlinkSocket();
  ifreq r = Named("lo");
  ASSERT_SYS_OK(ioctl(s.get(), SIOCGIFINDEX, &r));
  EXPECT_EQ(r.ifr_ifindex, 1);
}

// --- /proc/net ---

TEST(ProcNetTest, DevHasALoopbackLine) {
  std::string dev = ReadFile("/proc/net/dev");
  EXPECT_EQ(dev.rfind("Inter-|   Receive", 0), 0u) << dev;
  EXPECT_NE(dev.find("\n    lo: "), std::string::npos) << dev;
  EXPECT_EQ(ReadFile("/proc/self/net/dev").substr(0, 200), dev.substr(0, 200));
  char target[64] = {};
  ASSERT_SYS_OK(readlink("/proc/net", target, sizeof(target) - 1));
  EXPECT_STREQ(target, "self/net");
}

TEST(ProcNetTest, TablesStartWithLinuxHeaders) {
  EXPECT_EQ(ReadFile("/proc/net/route").rfind("Iface\tDestination\tGateway \tFlags\t", 0), 0u);
  EXPECT_EQ(ReadFile("/proc/net/tcp").rfind("  sl  local_address rem_address   st tx_queue", 0),
            0u);
  EXPECT_EQ(ReadFile("/proc/net/udp").rfind("   sl  local_address rem_address   st", 0), 0u);
  EXPECT_EQ(ReadFile("/proc/net/unix").rfind("Num       RefCount Protocol Flags    Type St", 0),
            0u);
  EXPECT_EQ(ReadFile("/proc/net/netlink").rfind("sk               Eth Pid", 0), 0u);
  std::string tcp = ReadFile("/proc/net/tcp");
  EXPECT_EQ(tcp.find('\n'), 149u);  // padded as Linux pads it
  if (HostHasIpv6Loopback()) {
    EXPECT_NE(ReadFile("/proc/net/if_inet6").find("00000000000000000000000000000001 01 80 10 80"),
              std::string::npos);
  }
}

TEST(ProcNetTest, NetSysctls) {
  int somaxconn = std::stoi(ReadFile("/proc/sys/net/core/somaxconn"));
  EXPECT_GE(somaxconn, 128);
  std::string range = ReadFile("/proc/sys/net/ipv4/ip_local_port_range");
  EXPECT_NE(range.find('\t'), std::string::npos) << range;
}

}  // namespace
}  // namespace syscall_test
