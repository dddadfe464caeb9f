// Interface ioctls over Interfaces: SIOCGIFCONF, the dev_ioctl family, the AF_INET
// address ioctls, and EPERM for every request that would change the network.
#include "sentry/net/interface_ioctl.h"

#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstring>
#include <string>
#include <string_view>

#include "abi/socket.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/net/interfaces.h"

namespace usentry::sentry::net {
namespace {

static_assert(sizeof(abi::Ifreq) == sizeof(struct ifreq));
static_assert(sizeof(abi::Ifconf) == sizeof(struct ifconf));
static_assert(offsetof(struct ifreq, ifr_ifru) == offsetof(abi::Ifreq, data));
static_assert(sizeof(struct ifmap) <= sizeof(abi::Ifreq::data));

constexpr unsigned kSockIocType = 0x89;  // _IOC_TYPE of every socket ioctl (SOCK_IOC_TYPE)

// Requests that would change an interface, an address, a route or the ARP table. Linux
// lets only CAP_NET_ADMIN make them; the sandbox's network is fixed, so they fail for
// everyone (the app's root included), on any socket.
bool ChangesNetwork(uint64_t cmd) {
  switch (cmd) {
    case SIOCSIFFLAGS:
    case SIOCSIFADDR:
    case SIOCSIFDSTADDR:
    case SIOCSIFBRDADDR:
    case SIOCSIFNETMASK:
    case SIOCSIFMETRIC:
    case SIOCSIFMEM:
    case SIOCSIFMTU:
    case SIOCSIFNAME:
    case SIOCSIFHWADDR:
    case SIOCSIFENCAP:
    case SIOCSIFSLAVE:
    case SIOCADDMULTI:
    case SIOCDELMULTI:
    case SIOCSIFPFLAGS:
    case SIOCDIFADDR:
    case SIOCSIFHWBROADCAST:
    case SIOCSIFBR:
    case SIOCSIFTXQLEN:
    case SIOCSIFMAP:
    case SIOCSIFLINK:
    case SIOCADDRT:
    case SIOCDELRT:
    case SIOCDARP:
    case SIOCSARP:
    case SIOCDRARP:
    case SIOCSRARP:
    case SIOCBRADDBR:
    case SIOCBRDELBR:
    case SIOCBRADDIF:
    case SIOCBRDELIF:
    case SIOCBONDENSLAVE:
    case SIOCBONDRELEASE:
    case SIOCBONDSETHWADDR:
    case SIOCBONDCHANGEACTIVE:
    case SIOCSHWTSTAMP:
    case SIOCSMIIREG:
    case SIOCWANDEV:
      return true;
    default:
      return false;
  }
}

std::string_view IfName(const abi::Ifreq& r) {
  return std::string_view(r.name, strnlen(r.name, sizeof(r.name)));
}

// dev_ioctl looks the device up by the name before an alias colon ("eth0:1" is eth0).
const Link* FindByName(const Interfaces& ifs, const abi::Ifreq& r) {
  std::string_view name = IfName(r);
  return ifs.FindLink(name.substr(0, name.find(':')));
}

template <typename T>
void PutValue(abi::Ifreq& r, const T& v) {
  memcpy(r.data, &v, sizeof(v));
}

void PutSockaddrIn(abi::Ifreq& r, const IpAddress& ip) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr = ip.ToIn();
  PutValue(r, sin);
}

// SIOCGIFCONF: one ifreq per IPv4 address (named by its label, holding its local
// address), as many whole ones as fit; with a null buffer, the length they need.
SysResult<uint64_t> IfConf(Task& task, const Interfaces& ifs, mm::GuestAddr arg) {
  ASSIGN_OR_RETURN_ERRNO(abi::Ifconf ifc, task.mm().CopyInObj<abi::Ifconf>(arg));
  int64_t total = 0;
  for (const InterfaceAddress& a : ifs.addresses()) {
    if (!a.address.is_v4()) continue;
    if (ifc.buf == 0) {
      total += sizeof(abi::Ifreq);
      continue;
    }
    if (ifc.len - total < static_cast<int64_t>(sizeof(abi::Ifreq))) break;
    abi::Ifreq r{};
    a.label.copy(r.name, sizeof(r.name) - 1);
    PutSockaddrIn(r, a.address);
    RETURN_IF_ERRNO(task.mm().CopyOutObj(mm::GuestAddr(ifc.buf + total), r));
    total += sizeof(abi::Ifreq);
  }
  RETURN_IF_ERRNO(
      task.mm().CopyOutObj(arg + offsetof(abi::Ifconf, len), static_cast<int32_t>(total)));
  return uint64_t{0};
}

// devinet_ioctl's getters: the address whose label is the full name ("eth0:1" has
// none), EADDRNOTAVAIL for an interface without one.
SysStatus AddressIoctl(const Interfaces& ifs, uint64_t cmd, abi::Ifreq& r) {
  if (FindByName(ifs, r) == nullptr) return Errno{ENODEV};
  const InterfaceAddress* found = nullptr;
  for (const InterfaceAddress& a : ifs.addresses()) {
    if (a.address.is_v4() && a.label == IfName(r)) {
      found = &a;
      break;
    }
  }
  if (found == nullptr) return Errno{EADDRNOTAVAIL};
  switch (cmd) {
    case SIOCGIFADDR:
    case SIOCGIFDSTADDR:  // the peer of a point-to-point link; our own address otherwise
      PutSockaddrIn(r, found->address);
      break;
    case SIOCGIFBRDADDR:
      PutSockaddrIn(r, found->broadcast.value_or(IpAddress()));
      break;
    case SIOCGIFNETMASK:
      PutSockaddrIn(r, found->Netmask());
      break;
  }
  return SysOk();
}

// dev_ioctl's getters on the device `r` names.
SysStatus DeviceIoctl(const Interfaces& ifs, uint64_t cmd, abi::Ifreq& r) {
  if (cmd == SIOCGIFNAME) {
    int index;
    memcpy(&index, r.data, sizeof(index));
    const Link* l = ifs.FindLink(index);
    if (l == nullptr) return Errno{ENODEV};
    memset(r.name, 0, sizeof(r.name));
    l->name.copy(r.name, sizeof(r.name) - 1);
    return SysOk();
  }
  const Link* l = FindByName(ifs, r);
  if (l == nullptr) return Errno{ENODEV};
  switch (cmd) {
    case SIOCGIFFLAGS:
      PutValue(r, static_cast<int16_t>(l->flags));  // ifr_flags is a short
      return SysOk();
    case SIOCGIFMETRIC:
      PutValue(r, int32_t{0});
      return SysOk();
    case SIOCGIFMTU:
      PutValue(r, int32_t{l->mtu});
      return SysOk();
    case SIOCGIFINDEX:
      PutValue(r, int32_t{l->index});
      return SysOk();
    case SIOCGIFTXQLEN:
      PutValue(r, int32_t{l->txqlen});
      return SysOk();
    case SIOCGIFMAP:
      PutValue(r, ifmap{});
      return SysOk();
    case SIOCGIFHWADDR: {
      // sa_family is the hardware type; only the address bytes of sa_data are written.
      uint16_t type = l->type;
      memcpy(r.data, &type, sizeof(type));
      memcpy(r.data + offsetof(sockaddr, sa_data), l->hwaddr.data(), l->hwaddr.size());
      return SysOk();
    }
    case SIOCGIFSLAVE:
      return Errno{EINVAL};
    default:
      // ethtool and MII: the sandbox's interfaces have no driver to ask.
      return Errno{EOPNOTSUPP};
  }
}

bool IsDeviceGetter(uint64_t cmd) {
  switch (cmd) {
    case SIOCGIFNAME:
    case SIOCGIFFLAGS:
    case SIOCGIFMETRIC:
    case SIOCGIFMTU:
    case SIOCGIFINDEX:
    case SIOCGIFTXQLEN:
    case SIOCGIFMAP:
    case SIOCGIFHWADDR:
    case SIOCGIFSLAVE:
    case SIOCETHTOOL:
    case SIOCGMIIPHY:
    case SIOCGMIIREG:
      return true;
    default:
      return false;
  }
}

bool IsAddressGetter(uint64_t cmd) {
  return cmd == SIOCGIFADDR || cmd == SIOCGIFDSTADDR || cmd == SIOCGIFBRDADDR ||
         cmd == SIOCGIFNETMASK;
}

}  // namespace

SysResult<uint64_t> InterfaceIoctl(Task& task, int family, uint64_t cmd, uint64_t arg) {
  Interfaces ifs(task.kernel().options().network);
  mm::GuestAddr ptr(arg);
  if (cmd == SIOCGIFCONF) return IfConf(task, ifs, ptr);
  if (ChangesNetwork(cmd)) return Errno{EPERM};
  if (((cmd >> 8) & 0xff) != kSockIocType) return Errno{ENOTTY};
  // Like sock_do_ioctl, the ifreq is read before the command is looked at.
  ASSIGN_OR_RETURN_ERRNO(abi::Ifreq r, task.mm().CopyInObj<abi::Ifreq>(ptr));
  r.name[sizeof(r.name) - 1] = '\0';
  if (IsAddressGetter(cmd)) {
    // Only AF_INET sockets have these (devinet_ioctl); dev_ioctl does not know them.
    if (family != AF_INET) return Errno{ENOTTY};
    RETURN_IF_ERRNO(AddressIoctl(ifs, cmd, r));
  } else if (IsDeviceGetter(cmd)) {
    RETURN_IF_ERRNO(DeviceIoctl(ifs, cmd, r));
  } else {
    return Errno{ENOTTY};
  }
  RETURN_IF_ERRNO(task.mm().CopyOutObj(ptr, r));
  return uint64_t{0};
}

}  // namespace usentry::sentry::net
