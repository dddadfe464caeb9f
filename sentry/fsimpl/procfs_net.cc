// /proc/PID/net and /proc/sys/net from the sandbox's interfaces (sentry/net/interfaces.h).
#include "sentry/fsimpl/procfs_net.h"

#include <linux/rtnetlink.h>
#include <netinet/in.h>

#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/kernel/kernel.h"
#include "sentry/net/socket.h"

namespace usentry::sentry::fsimpl {
namespace {

using InodePtr = std::shared_ptr<vfs::Inode>;

// /proc/net/route flags (<linux/route.h>) and /proc/net/ipv6_route's (<linux/ipv6_route.h>).
constexpr uint32_t kRtfUp = 0x0001;
constexpr uint32_t kRtfGateway = 0x0002;
constexpr uint32_t kRtfHost = 0x0004;
constexpr uint32_t kRtfNonexthop = 0x00200000;
constexpr uint32_t kRtfLocal = 0x80000000;
// IPv6 address scopes as if_inet6 shows them (IPV6_ADDR_LOOPBACK, IPV6_ADDR_LINKLOCAL).
constexpr int kIpv6ScopeLoopback = 0x10;
constexpr int kIpv6ScopeLinkLocal = 0x20;

// Linux pads these tables' lines with spaces to a fixed width (seq_pad).
std::string Padded(std::string line, size_t width) {
  if (line.size() < width) line.append(width - line.size(), ' ');
  return line + "\n";
}

// An IPv4 address as /proc/net/route prints it: the network-order word read as a
// native (little-endian) integer.
uint32_t RawV4(const IpAddress& ip) {
  uint32_t v;
  memcpy(&v, ip.bytes(), sizeof(v));
  return v;
}

std::string Hex6(const IpAddress& ip) {
  std::string out;
  for (size_t i = 0; i < 16; ++i) absl::StrAppendFormat(&out, "%02x", ip.bytes()[i]);
  return out;
}

std::string LinkName(const net::Interfaces& ifs, int index) {
  const net::Link* l = ifs.FindLink(index);
  return l != nullptr ? l->name : "";
}

ProcContent FromInterfaces(Kernel& k, std::string (*gen)(const net::Interfaces&)) {
  Kernel* kp = &k;
  return
      [kp, gen]() -> SysResult<std::string> { return gen(net::Interfaces(kp->options().network)); };
}

ProcContent Fixed(std::string s) {
  return [s = std::move(s)]() -> SysResult<std::string> { return s; };
}

}  // namespace

std::string GenerateNetDev(const net::Interfaces& ifs) {
  std::string out =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
      "drop fifo colls carrier compressed\n";
  // No counter moves: the sandbox's traffic never crosses a device the kernel counts.
  for (const net::Link& l : ifs.links()) {
    absl::StrAppendFormat(
        &out, "%6s: %7d %7d %4d %4d %4d %5d %10d %9d %8d %7d %4d %4d %4d %5d %7d %10d\n", l.name, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  }
  return out;
}

std::string GenerateNetRoute(const net::Interfaces& ifs) {
  std::string out = Padded(
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT", 127);
  // The IPv4 main table's unicast routes, like Linux's fib_route_seq_show.
  for (const net::Route& r : ifs.routes()) {
    if (r.is_v6() || r.table != RT_TABLE_MAIN || r.type != RTN_UNICAST) continue;
    net::InterfaceAddress mask;
    mask.prefix_len = r.dst.prefix_len();
    uint32_t flags = kRtfUp;
    if (r.gateway) flags |= kRtfGateway;
    if (r.dst.prefix_len() == 32) flags |= kRtfHost;
    out += Padded(
        absl::StrFormat("%s\t%08X\t%08X\t%04X\t%d\t%u\t%d\t%08X\t%d\t%u\t%u", LinkName(ifs, r.oif),
                        RawV4(r.dst.base()), r.gateway ? RawV4(*r.gateway) : 0, flags, 0, 0u,
                        r.priority, RawV4(mask.Netmask()), 0, 0u, 0u),
        127);
  }
  return out;
}

std::string GenerateIfInet6(const net::Interfaces& ifs) {
  std::string out;
  for (const net::InterfaceAddress& a : ifs.addresses()) {
    if (!a.address.is_v6()) continue;
    int scope = 0;
    if (a.address.IsLoopback()) {
      scope = kIpv6ScopeLoopback;
    } else if (a.address.bytes()[0] == 0xfe && (a.address.bytes()[1] & 0xc0) == 0x80) {
      scope = kIpv6ScopeLinkLocal;
    }
    absl::StrAppendFormat(&out, "%s %02x %02x %02x %02x %8s\n", Hex6(a.address), a.ifindex,
                          a.prefix_len, scope, a.flags & 0xff, LinkName(ifs, a.ifindex));
  }
  return out;
}

std::string GenerateIpv6Route(const net::Interfaces& ifs) {
  std::string out;
  const std::string zero(32, '0');
  for (const net::Route& r : ifs.routes()) {
    if (!r.is_v6()) continue;
    uint32_t flags = kRtfUp;
    if (r.gateway) flags |= kRtfGateway;
    if (r.type == RTN_LOCAL) flags |= kRtfLocal | kRtfNonexthop;
    absl::StrAppendFormat(&out, "%s %02x %s %02x %s %08x %08x %08x %08x %8s\n", Hex6(r.dst.base()),
                          r.dst.prefix_len(), zero, 0, r.gateway ? Hex6(*r.gateway) : zero,
                          r.priority, 1, 0, flags, LinkName(ifs, r.oif));
  }
  return out;
}

std::string NetTableHeader(std::string_view table) {
  const std::string v6_addrs =
      "  sl  local_address                         remote_address                        st "
      "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";
  if (table == "tcp") {
    return Padded(
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode",
        149);
  }
  if (table == "tcp6") return v6_addrs + "\n";
  if (table == "udp") {
    return Padded(
        "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode ref pointer drops",
        127);
  }
  if (table == "udp6") return v6_addrs + " ref pointer drops\n";
  if (table == "unix") return "Num       RefCount Protocol Flags    Type St Inode Path\n";
  if (table == "netlink") {
    return "sk               Eth Pid        Groups   Rmem     Wmem     Dump  Locks    Drops    "
           "Inode\n";
  }
  return "";
}

InodePtr NewProcNetDir(std::shared_ptr<vfs::Filesystem> fs, Kernel& k, std::string_view key,
                       ProcOwner owner) {
  std::map<std::string, InodePtr> kids;
  auto add = [&](const char* name, ProcContent c) {
    kids[name] = NewProcFile(fs, absl::StrCat(std::string(key), "/", name), owner, std::move(c));
  };
  add("dev", FromInterfaces(k, GenerateNetDev));
  add("route", FromInterfaces(k, GenerateNetRoute));
  add("if_inet6", FromInterfaces(k, GenerateIfInet6));
  add("ipv6_route", FromInterfaces(k, GenerateIpv6Route));
  for (const char* table : {"tcp", "tcp6", "udp", "udp6", "unix", "netlink"}) {
    add(table, Fixed(NetTableHeader(table)));
  }
  return NewProcStaticDir(std::move(fs), key, std::move(kids));
}

InodePtr NewProcSysNetDir(std::shared_ptr<vfs::Filesystem> fs) {
  ProcOwner root;
  auto core =
      NewProcStaticDir(fs, "sys/net/core",
                       {{"somaxconn", NewProcFile(fs, "sys/net/core/somaxconn", root,
                                                  Fixed(absl::StrCat(net::kSomaxconn, "\n")))}});
  // The ephemeral ports the sandbox's inet sockets pick from (Linux's default range).
  auto ipv4 = NewProcStaticDir(
      fs, "sys/net/ipv4",
      {{"ip_local_port_range",
        NewProcFile(fs, "sys/net/ipv4/ip_local_port_range", root, Fixed("32768\t60999\n"))}});
  return NewProcStaticDir(fs, "sys/net", {{"core", core}, {"ipv4", ipv4}});
}

}  // namespace usentry::sentry::fsimpl
