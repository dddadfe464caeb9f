// The sandbox's network interfaces end to end, with real tools: iproute2 and Python see
// only the sandbox's lo; every attempt to change an interface, address or route fails
// with EPERM and leaves the host as it was; netlink protocols beyond NETLINK_ROUTE and
// AF_PACKET are refused and audited. The state-changing commands run only under
// usentry: natively (as root) they would change the host.
#include <net/if.h>

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "nlohmann/json.hpp"
#include "tests/integration/runner.h"

namespace usentry::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

constexpr char kIp[] = "/usr/bin/ip";
constexpr char kPython[] = "/usr/bin/python3";
constexpr char kSh[] = "/bin/sh";

// The host's interface names other than lo (which the sandbox has too).
std::vector<std::string> HostInterfaceNames() {
  std::vector<std::string> out;
  struct if_nameindex* names = if_nameindex();
  if (names == nullptr) return out;
  for (struct if_nameindex* n = names; n->if_index != 0; ++n) {
    if (std::string(n->if_name) != "lo") out.push_back(n->if_name);
  }
  if_freenameindex(names);
  return out;
}

class InterfacesTest : public SandboxTest {
 protected:
  // Read-only views of the host's network configuration (safe to run natively).
  std::string HostNetworkState() {
    RunResult addr = Native({kIp, "-o", "addr"});
    RunResult link = Native({kIp, "-o", "link"});
    RunResult route = Native({kIp, "route", "show", "table", "all"});
    return addr.out + link.out + route.out;
  }
};

TEST_P(InterfacesTest, IpAddrShowsOnlyTheSandboxLoopback) {
  RunResult r = Sandboxed({kIp, "addr"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out,
            "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default "
            "qlen 1000\n"
            "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"
            "    inet 127.0.0.1/8 scope host lo\n"
            "       valid_lft forever preferred_lft forever\n"
            "    inet6 ::1/128 scope host \n"
            "       valid_lft forever preferred_lft forever\n")
      << r.Describe();
  for (const std::string& name : HostInterfaceNames()) {
    EXPECT_THAT(r.out, Not(HasSubstr(name))) << "host interface " << name << " leaked";
  }
}

TEST_P(InterfacesTest, IpLinkAndRoutes) {
  RunResult link = Sandboxed({kIp, "link"});
  ASSERT_EQ(link.exit_code, 0) << link.Describe();
  EXPECT_EQ(link.out,
            "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT "
            "group default qlen 1000\n"
            "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n")
      << link.Describe();
  // Without egress nothing but loopback is routed: the IPv4 main table is empty.
  RunResult route = Sandboxed({kIp, "route"});
  EXPECT_EQ(route.exit_code, 0) << route.Describe();
  EXPECT_EQ(route.out, "") << route.Describe();
  RunResult route6 = Sandboxed({kIp, "-6", "route"});
  EXPECT_EQ(route6.exit_code, 0) << route6.Describe();
  EXPECT_EQ(route6.out, "::1 dev lo proto kernel metric 256 pref medium\n") << route6.Describe();
  RunResult get = Sandboxed({kIp, "route", "get", "127.0.0.5"});
  EXPECT_EQ(get.exit_code, 0) << get.Describe();
  EXPECT_THAT(get.out, HasSubstr("local 127.0.0.5 dev lo src 127.0.0.1")) << get.Describe();
  RunResult unreachable = Sandboxed({kIp, "route", "get", "192.0.2.1"});
  EXPECT_NE(unreachable.exit_code, 0) << unreachable.Describe();
  EXPECT_THAT(unreachable.err, HasSubstr("Network is unreachable")) << unreachable.Describe();
}

TEST_P(InterfacesTest, StateChangesAreRefusedAndTheHostIsUnchanged) {
  const std::string before = HostNetworkState();
  for (std::vector<std::string> cmd :
       {std::vector<std::string>{kIp, "link", "set", "lo", "down"},
        std::vector<std::string>{kIp, "addr", "add", "10.200.0.1/24", "dev", "lo"},
        std::vector<std::string>{kIp, "route", "add", "10.201.0.0/24", "dev", "lo"},
        std::vector<std::string>{kIp, "link", "add", "dummy9", "type", "dummy"},
        std::vector<std::string>{kIp, "addr", "flush", "dev", "lo"}}) {
    RunResult r = Sandboxed(cmd);
    EXPECT_NE(r.exit_code, 0) << r.Describe();
    EXPECT_THAT(r.err, HasSubstr("Operation not permitted")) << r.Describe();
  }
  // In the sandbox too, nothing changed.
  RunResult after = Sandboxed({kSh, "-c", "ip link set lo down; ip -o link show lo"});
  EXPECT_THAT(after.out, HasSubstr("<LOOPBACK,UP,LOWER_UP>")) << after.Describe();
  EXPECT_EQ(HostNetworkState(), before);
}

TEST_P(InterfacesTest, PythonSeesLoopbackThroughIfNameindexAndGetifaddrs) {
  const char* script = R"(
import ctypes, socket
print(socket.if_nameindex())
class sockaddr(ctypes.Structure):
    _fields_ = [("family", ctypes.c_ushort), ("data", ctypes.c_ubyte * 26)]
class ifaddrs(ctypes.Structure):
    pass
ifaddrs._fields_ = [("next", ctypes.POINTER(ifaddrs)), ("name", ctypes.c_char_p),
                    ("flags", ctypes.c_uint), ("addr", ctypes.POINTER(sockaddr)),
                    ("netmask", ctypes.POINTER(sockaddr)), ("ifu", ctypes.c_void_p),
                    ("data", ctypes.c_void_p)]
libc = ctypes.CDLL(None, use_errno=True)
head = ctypes.POINTER(ifaddrs)()
assert libc.getifaddrs(ctypes.byref(head)) == 0
i = head
while i:
    e = i.contents
    a = e.addr.contents
    if a.family == socket.AF_INET:
        print(e.name.decode(), socket.inet_ntop(socket.AF_INET, bytes(a.data[2:6])))
    elif a.family == socket.AF_INET6:
        print(e.name.decode(), socket.inet_ntop(socket.AF_INET6, bytes(a.data[6:22])))
    else:
        print(e.name.decode(), "family", a.family)
    i = e.next
libc.freeifaddrs(head)
)";
  RunResult r = Sandboxed({kPython, "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "[(1, 'lo')]\nlo family 17\nlo 127.0.0.1\nlo ::1\n") << r.Describe();
}

TEST_P(InterfacesTest, ProcNetShowsTheSandboxLoopback) {
  RunResult r = Sandboxed({kSh, "-c", "cat /proc/net/dev /proc/self/net/if_inet6"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("\n    lo:       0       0    0")) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("00000000000000000000000000000001 01 80 10 80       lo\n"));
  for (const std::string& name : HostInterfaceNames()) {
    EXPECT_THAT(r.out, Not(HasSubstr(name + ":"))) << "host interface " << name << " leaked";
  }
}

TEST_P(InterfacesTest, OtherNetlinkProtocolsAndPacketSocketsAreDeniedAndAudited) {
  TempDir dir;
  const std::string audit = dir.path() + "/audit.jsonl";
  RunResult r = Sandboxed({kPython, "-c",
                           "import socket\n"
                           "for args in [(socket.AF_NETLINK, socket.SOCK_RAW, 9),\n"
                           "             (socket.AF_NETLINK, socket.SOCK_DGRAM, 15),\n"
                           "             (socket.AF_PACKET, socket.SOCK_RAW, 0)]:\n"
                           "  try:\n"
                           "    socket.socket(*args)\n"
                           "  except OSError as e:\n"
                           "    print(e.errno)\n"
                           "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()\n"},
                          {"--audit", audit, "--explain"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "1\n1\n1\n") << r.Describe();  // EPERM each time; NETLINK_ROUTE works
  EXPECT_THAT(r.err, HasSubstr("usentry: socket AF_NETLINK NETLINK_AUDIT denied: netlink beyond "
                               "interface listing is not allowed (policy: net)"))
      << r.Describe();
  std::vector<Json> denied = RecordsOfEvent(ReadAuditRecords(audit), "denied");
  ASSERT_EQ(denied.size(), 3u) << ReadHostFile(audit);
  std::vector<std::string> what;
  for (const Json& d : denied) {
    EXPECT_EQ(d.value("op", ""), "socket");
    EXPECT_EQ(d.value("errno", ""), "EPERM");
    EXPECT_EQ(d.value("policy", ""), "net");
    what.push_back(d.value("path", ""));
  }
  EXPECT_EQ(what, (std::vector<std::string>{"AF_NETLINK NETLINK_AUDIT",
                                            "AF_NETLINK NETLINK_KOBJECT_UEVENT", "AF_PACKET"}));
  EXPECT_EQ(denied[2].value("reason", ""), "packet sockets are not allowed");
}

INSTANTIATE_TEST_SUITE_P(Platforms, InterfacesTest, ::testing::ValuesIn(kTestPlatforms));

}  // namespace
}  // namespace usentry::testing
