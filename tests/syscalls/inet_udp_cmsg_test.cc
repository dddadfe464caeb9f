// UDP control messages over the loopback: what IP_PKTINFO, IP_RECVTTL, IP_RECVTOS and
// IPV6_RECVPKTINFO/RECVHOPLIMIT/RECVTCLASS report, the per-datagram IP_TTL and
// IPV6_HOPLIMIT/IPV6_TCLASS that sendmsg sets, EINVAL for malformed ones, MSG_CTRUNC;
// and UDP-Lite sockets, which have their own ports.
#include <netinet/in.h>
#include <unistd.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/syscalls/inet_test_util.h"

namespace syscall_test {
namespace {

struct Cmsgs {
  std::string data;
  int flags = 0;
  std::map<std::pair<int, int>, std::string> items;
  int count = 0;
};

Cmsgs RecvWithControl(int fd, size_t control_space = 512) {
  PollOnce(fd, POLLIN, 2000);
  Cmsgs out;
  char buf[256];
  std::vector<char> control(control_space);
  iovec iov{buf, sizeof(buf)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control_space ? control.data() : nullptr;
  msg.msg_controllen = control_space;
  ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);
  if (n < 0) return out;
  out.data.assign(buf, n);
  out.flags = msg.msg_flags;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    out.items[{c->cmsg_level, c->cmsg_type}] =
        std::string(reinterpret_cast<char*>(CMSG_DATA(c)), c->cmsg_len - CMSG_LEN(0));
    ++out.count;
  }
  return out;
}

// Sends "x" to `to` with one int control message (level, type, value); -1 and errno on
// failure. `len` overrides the payload length (to make it wrong).
ssize_t SendWithInt(int fd, const SockAddr& to, int level, int type, int value,
                    size_t len = sizeof(int)) {
  char x = 'x';
  iovec iov{&x, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) + 8)] = {};
  msghdr msg{};
  msg.msg_name = const_cast<sockaddr*>(to.get());
  msg.msg_namelen = to.len;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(len);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = level;
  c->cmsg_type = type;
  c->cmsg_len = CMSG_LEN(len);
  memcpy(CMSG_DATA(c), &value, sizeof(value));
  return sendmsg(fd, &msg, 0);
}

int IntItem(const Cmsgs& m, int level, int type) {
  auto it = m.items.find({level, type});
  if (it == m.items.end() || it->second.size() != sizeof(int)) return -1000;
  int v;
  memcpy(&v, it->second.data(), sizeof(v));
  return v;
}

TEST(UdpCmsgTest, Ipv4TtlTosAndPktinfo) {
  ScopedFd rx = Bound(AF_INET, SOCK_DGRAM);
  ScopedFd tx = Sock(AF_INET, SOCK_DGRAM);
  ASSERT_SYS_OK(SetInt(rx.get(), SOL_IP, IP_RECVTTL, 1));
  ASSERT_SYS_OK(SetInt(rx.get(), SOL_IP, IP_RECVTOS, 1));
  ASSERT_SYS_OK(SetInt(rx.get(), SOL_IP, IP_PKTINFO, 1));
  ASSERT_SYS_OK(SetInt(tx.get(), SOL_IP, IP_TTL, 33));
  ASSERT_SYS_OK(SetInt(tx.get(), SOL_IP, IP_TOS, 0x20));
  SockAddr to = SockName(rx.get());
  ASSERT_EQ(sendto(tx.get(), "a", 1, 0, to.get(), to.len), 1);
  Cmsgs m = RecvWithControl(rx.get());
  EXPECT_EQ(m.data, "a");
  EXPECT_EQ(m.count, 3);
  EXPECT_EQ(IntItem(m, SOL_IP, IP_TTL), 33);
  std::string tos = m.items[std::make_pair(SOL_IP, IP_TOS)];
  ASSERT_EQ(tos.size(), 1u);
  EXPECT_EQ(tos[0], 0x20);
  std::string pi = m.items[std::make_pair(SOL_IP, IP_PKTINFO)];
  ASSERT_EQ(pi.size(), sizeof(in_pktinfo));
  in_pktinfo info;
  memcpy(&info, pi.data(), sizeof(info));
  EXPECT_EQ(info.ipi_ifindex, 1);  // lo
  EXPECT_EQ(ntohl(info.ipi_addr.s_addr), INADDR_LOOPBACK);
}

TEST(UdpCmsgTest, Ipv4TtlPerDatagram) {
  ScopedFd rx = Bound(AF_INET, SOCK_DGRAM);
  ScopedFd tx = Sock(AF_INET, SOCK_DGRAM);
  ASSERT_SYS_OK(SetInt(rx.get(), SOL_IP, IP_RECVTTL, 1));
  SockAddr to = SockName(rx.get());
  ASSERT_EQ(SendWithInt(tx.get(), to, SOL_IP, IP_TTL, 7), 1);
  EXPECT_EQ(IntItem(RecvWithControl(rx.get()), SOL_IP, IP_TTL), 7);
  ASSERT_EQ(sendto(tx.get(), "b", 1, 0, to.get(), to.len), 1);
  EXPECT_EQ(IntItem(RecvWithControl(rx.get()), SOL_IP, IP_TTL), 64);
  EXPECT_ERRNO(SendWithInt(tx.get(), to, SOL_IP, IP_TTL, 0), EINVAL);
  EXPECT_ERRNO(SendWithInt(tx.get(), to, SOL_IP, IP_TTL, 7, 5), EINVAL);
  EXPECT_ERRNO(SendWithInt(tx.get(), to, SOL_IP, 250, 7), EINVAL);
}

TEST(UdpCmsgTest, Ipv6HopLimitAndTrafficClass) {
  ScopedFd rx = Bound(AF_INET6, SOCK_DGRAM);
  ScopedFd tx = Sock(AF_INET6, SOCK_DGRAM);
  ASSERT_SYS_OK(SetInt(rx.get(), SOL_IPV6, IPV6_RECVHOPLIMIT, 1));
  ASSERT_SYS_OK(SetInt(rx.get(), SOL_IPV6, IPV6_RECVTCLASS, 1));
  ASSERT_SYS_OK(SetInt(rx.get(), SOL_IPV6, IPV6_RECVPKTINFO, 1));
  SockAddr to = SockName(rx.get());
  ASSERT_EQ(SendWithInt(tx.get(), to, SOL_IPV6, IPV6_HOPLIMIT, 2), 1);
  Cmsgs m = RecvWithControl(rx.get());
  EXPECT_EQ(m.count, 3);
  EXPECT_EQ(IntItem(m, SOL_IPV6, IPV6_HOPLIMIT), 2);
  EXPECT_EQ(IntItem(m, SOL_IPV6, IPV6_TCLASS), 0);
  std::string pi = m.items[std::make_pair(SOL_IPV6, IPV6_PKTINFO)];
  ASSERT_EQ(pi.size(), sizeof(in6_pktinfo));
  in6_pktinfo info;
  memcpy(&info, pi.data(), sizeof(info));
  EXPECT_TRUE(IN6_IS_ADDR_LOOPBACK(&info.ipi6_addr));
  ASSERT_EQ(SendWithInt(tx.get(), to, SOL_IPV6, IPV6_TCLASS, 0x28), 1);
  m = RecvWithControl(rx.get());
  EXPECT_EQ(IntItem(m, SOL_IPV6, IPV6_TCLASS), 0x28);
  EXPECT_EQ(IntItem(m, SOL_IPV6, IPV6_HOPLIMIT), 64);
  EXPECT_ERRNO(SendWithInt(tx.get(), to, SOL_IPV6, IPV6_TCLASS, 0x28, 5), EINVAL);
  EXPECT_ERRNO(SendWithInt(tx.get(), to, SOL_IPV6, IPV6_HOPLIMIT, 256), EINVAL);
}

TEST(UdpCmsgTest, ShortControlBufferSetsCtrunc) {
  ScopedFd rx = Bound(AF_INET6, SOCK_DGRAM);
  ScopedFd tx = Sock(AF_INET6, SOCK_DGRAM);
  ASSERT_SYS_OK(SetInt(rx.get(), SOL_IPV6, IPV6_RECVHOPLIMIT, 1));
  SockAddr to = SockName(rx.get());
  ASSERT_EQ(sendto(tx.get(), "c", 1, 0, to.get(), to.len), 1);
  Cmsgs m = RecvWithControl(rx.get(), 4);  // smaller than a header
  EXPECT_EQ(m.data, "c");
  EXPECT_EQ(m.count, 0);
  EXPECT_TRUE(m.flags & MSG_CTRUNC);
}

TEST(UdpCmsgTest, NothingWithoutTheOptions) {
  ScopedFd rx = Bound(AF_INET, SOCK_DGRAM);
  ScopedFd tx = Sock(AF_INET, SOCK_DGRAM);
  SockAddr to = SockName(rx.get());
  ASSERT_EQ(sendto(tx.get(), "d", 1, 0, to.get(), to.len), 1);
  Cmsgs m = RecvWithControl(rx.get());
  EXPECT_EQ(m.count, 0);
  EXPECT_EQ(m.flags & MSG_CTRUNC, 0);
}

class UdpliteTest : public ::testing::TestWithParam<int> {};

INSTANTIATE_TEST_SUITE_P(Family, UdpliteTest, ::testing::Values(AF_INET, AF_INET6),
                         [](const auto& info) { return FamilyName(info.param); });

TEST_P(UdpliteTest, ExchangesDatagramsOnItsOwnPorts) {
  ScopedFd a(socket(GetParam(), SOCK_DGRAM, IPPROTO_UDPLITE));
  ASSERT_SYS_OK(a.get());
  EXPECT_EQ(GetInt(a.get(), SOL_SOCKET, SO_PROTOCOL), IPPROTO_UDPLITE);
  SockAddr l = Loopback(GetParam());
  ASSERT_SYS_OK(bind(a.get(), l.get(), l.len));
  SockAddr to = SockName(a.get());
  // A UDP socket may hold the same port: the tables are separate.
  ScopedFd udp = Sock(GetParam(), SOCK_DGRAM);
  ASSERT_SYS_OK(bind(udp.get(), to.get(), to.len));
  ScopedFd b(socket(GetParam(), SOCK_DGRAM, IPPROTO_UDPLITE));
  ASSERT_EQ(sendto(b.get(), "lite", 4, 0, to.get(), to.len), 4);
  char buf[8];
  PollOnce(a.get(), POLLIN, 2000);
  EXPECT_EQ(recv(a.get(), buf, sizeof(buf), MSG_DONTWAIT), 4);
  EXPECT_ERRNO(recv(udp.get(), buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
  ASSERT_SYS_OK(SetInt(a.get(), IPPROTO_UDPLITE, 10 /* UDPLITE_SEND_CSCOV */, 3));
  EXPECT_EQ(GetInt(a.get(), IPPROTO_UDPLITE, 10), 8);
}

}  // namespace
}  // namespace syscall_test
