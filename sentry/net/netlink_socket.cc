// NetlinkSocket: port ids, the request loop, reply queue and dump batching, options;
// socket(AF_NETLINK) itself (which protocols exist in the sandbox).
#include "sentry/net/netlink_socket.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/net/interfaces.h"
#include "sentry/net/netlink_message.h"
#include "sentry/net/netlink_route.h"
#include "sentry/net/socket_wait.h"

namespace usentry::sentry {

// Kernel::netlink_ports() lives here so that kernel.cc need not know the type.
const std::shared_ptr<net::NetlinkPorts>& Kernel::netlink_ports() {
  if (!netlink_ports_) netlink_ports_ = std::make_shared<net::NetlinkPorts>();
  return netlink_ports_;
}

namespace net {
namespace {

constexpr uint32_t kRtnlGroups = RTNLGRP_MAX;
// Charged per queued datagram on top of its bytes, like an skb's truesize: a flood of
// tiny requests whose replies are never read still fills SO_RCVBUF.
constexpr size_t kDatagramOverhead = 512;
constexpr int kMaxLinks = 32;  // MAX_LINKS: netlink protocol numbers

std::string NlSockaddr(uint32_t portid, uint32_t groups) {
  sockaddr_nl a{};
  a.nl_family = AF_NETLINK;
  a.nl_pid = portid;
  a.nl_groups = groups;
  return std::string(reinterpret_cast<const char*>(&a), sizeof(a));
}

// Parses a sockaddr_nl of at least its full size (EINVAL otherwise, or for another family).
SysResult<sockaddr_nl> ParseNlSockaddr(const std::string& sa) {
  if (sa.size() < sizeof(sockaddr_nl)) return Errno{EINVAL};
  sockaddr_nl a;
  memcpy(&a, sa.data(), sizeof(a));
  if (a.nl_family != AF_NETLINK) return Errno{EINVAL};
  return a;
}

int OptionFlag(const std::string& value) {
  // Linux reads the int only when optlen covers one; a shorter value counts as 0.
  int v = 0;
  if (value.size() >= sizeof(int)) memcpy(&v, value.data(), sizeof(v));
  return v;
}

const char* NetlinkProtocolName(int protocol) {
  switch (protocol) {
    case NETLINK_ROUTE:
      return "NETLINK_ROUTE";
    case NETLINK_USERSOCK:
      return "NETLINK_USERSOCK";
    case NETLINK_FIREWALL:
      return "NETLINK_FIREWALL";
    case NETLINK_SOCK_DIAG:
      return "NETLINK_SOCK_DIAG";
    case NETLINK_NFLOG:
      return "NETLINK_NFLOG";
    case NETLINK_XFRM:
      return "NETLINK_XFRM";
    case NETLINK_SELINUX:
      return "NETLINK_SELINUX";
    case NETLINK_ISCSI:
      return "NETLINK_ISCSI";
    case NETLINK_AUDIT:
      return "NETLINK_AUDIT";
    case NETLINK_FIB_LOOKUP:
      return "NETLINK_FIB_LOOKUP";
    case NETLINK_CONNECTOR:
      return "NETLINK_CONNECTOR";
    case NETLINK_NETFILTER:
      return "NETLINK_NETFILTER";
    case NETLINK_IP6_FW:
      return "NETLINK_IP6_FW";
    case NETLINK_DNRTMSG:
      return "NETLINK_DNRTMSG";
    case NETLINK_KOBJECT_UEVENT:
      return "NETLINK_KOBJECT_UEVENT";
    case NETLINK_GENERIC:
      return "NETLINK_GENERIC";
    case NETLINK_SCSITRANSPORT:
      return "NETLINK_SCSITRANSPORT";
    case NETLINK_ECRYPTFS:
      return "NETLINK_ECRYPTFS";
    case NETLINK_RDMA:
      return "NETLINK_RDMA";
    case NETLINK_CRYPTO:
      return "NETLINK_CRYPTO";
    case NETLINK_SMC:
      return "NETLINK_SMC";
    default:
      return nullptr;
  }
}

}  // namespace

// --- ports ---

SysStatus NetlinkPorts::Bind(uint32_t portid, NetlinkSocket* s) {
  auto [it, inserted] = ports_.emplace(portid, s);
  if (!inserted) return Errno{EADDRINUSE};
  return SysOk();
}

void NetlinkPorts::Unbind(uint32_t portid, const NetlinkSocket* s) {
  auto it = ports_.find(portid);
  if (it != ports_.end() && it->second == s) ports_.erase(it);
}

uint32_t NetlinkPorts::Autobind(int32_t pid, NetlinkSocket* s) {
  uint32_t id = static_cast<uint32_t>(pid);
  while (!Bind(id, s).ok()) {
    id = static_cast<uint32_t>(rover_);
    // Below INT32_MIN the count wraps to -4097 again; the map cannot be that full.
    rover_ = rover_ == INT32_MIN ? -4097 : rover_ - 1;
  }
  return id;
}

// --- creation ---

SysResult<std::shared_ptr<Socket>> NewNetlinkSocket(Task& task, int type, int protocol,
                                                    int status_flags) {
  if (type != SOCK_RAW && type != SOCK_DGRAM) return Errno{ESOCKTNOSUPPORT};
  if (protocol < 0 || protocol >= kMaxLinks) return Errno{EPROTONOSUPPORT};
  if (protocol != NETLINK_ROUTE) {
    // Audit, uevents, sock_diag, netfilter, generic netlink...: kernel interfaces the
    // sandbox does not emulate and must not pass through.
    const char* name = NetlinkProtocolName(protocol);
    std::string what = name != nullptr ? absl::StrCat("AF_NETLINK ", name)
                                       : absl::StrCat("AF_NETLINK protocol ", protocol);
    task.kernel().audit().Denied(task.thread_group().pid(), "socket", what, EPERM,
                                 "netlink beyond interface listing is not allowed", "net");
    return Errno{EPERM};
  }
  return std::shared_ptr<Socket>(std::make_shared<NetlinkSocket>(
      task.kernel().netlink_ports(), task.kernel().options().network, type, status_flags,
      task.creds().fsuid, task.creds().fsgid));
}

NetlinkSocket::NetlinkSocket(std::shared_ptr<NetlinkPorts> ports, const SandboxNetwork& network,
                             int type, int status_flags, uint32_t uid, uint32_t gid)
    : Socket(AF_NETLINK, type, NETLINK_ROUTE, status_flags, uid, gid),
      ports_(std::move(ports)),
      network_(network) {}

NetlinkSocket::~NetlinkSocket() {
  if (bound_) ports_->Unbind(portid_, this);
}

// --- names ---

void NetlinkSocket::Autobind(Task* task) {
  if (bound_) return;
  portid_ = ports_->Autobind(task != nullptr ? task->thread_group().pid() : 1, this);
  bound_ = true;
}

SysStatus NetlinkSocket::Bind(Task& task, const std::string& sockaddr) {
  ASSIGN_OR_RETURN_ERRNO(sockaddr_nl a, ParseNlSockaddr(sockaddr));
  uint32_t groups = a.nl_groups;
  if (kRtnlGroups < 32) groups &= static_cast<uint32_t>((uint64_t{1} << kRtnlGroups) - 1);
  if (bound_ && a.nl_pid != portid_) return Errno{EINVAL};
  if (!bound_) {
    if (a.nl_pid != 0) {
      RETURN_IF_ERRNO(ports_->Bind(a.nl_pid, this));
      portid_ = a.nl_pid;
      bound_ = true;
    } else {
      Autobind(&task);
    }
  }
  // bind() sets the first 32 groups; later ones only come from NETLINK_ADD_MEMBERSHIP.
  groups_ = (groups_ & ~uint64_t{0xffffffff}) | groups;
  return SysOk();
}

SysStatus NetlinkSocket::Connect(Task& task, const std::string& sockaddr) {
  if (sockaddr.size() < sizeof(sa_family_t)) return Errno{EINVAL};
  sa_family_t family;
  memcpy(&family, sockaddr.data(), sizeof(family));
  if (family == AF_UNSPEC) return SysOk();  // back to the kernel, where we always point
  ASSIGN_OR_RETURN_ERRNO(sockaddr_nl a, ParseNlSockaddr(sockaddr));
  // Another socket or a multicast group as the peer: Linux allows it only with
  // CAP_NET_ADMIN for NETLINK_ROUTE; the sandbox relays nothing between sockets.
  if (a.nl_pid != 0 || a.nl_groups != 0) return Errno{EPERM};
  Autobind(&task);
  return SysOk();
}

std::string NetlinkSocket::SockName() {
  return NlSockaddr(portid_, static_cast<uint32_t>(groups_));
}

SysResult<std::string> NetlinkSocket::PeerName() { return NlSockaddr(0, 0); }

// --- send: the requests ---

SysResult<size_t> NetlinkSocket::SendMsg(Task* task, SendArgs& args) {
  if (args.flags & MSG_OOB) return Errno{EOPNOTSUPP};
  if (args.name) {
    ASSIGN_OR_RETURN_ERRNO(sockaddr_nl a, ParseNlSockaddr(*args.name));
    if (a.nl_pid != 0 || a.nl_groups != 0) return Errno{EPERM};  // see Connect
  }
  Autobind(task);
  ASSIGN_OR_RETURN_ERRNO(size_t total, vfs::IovecsLength(args.data));
  if (total > static_cast<size_t>(sndbuf_) - 32) return Errno{EMSGSIZE};
  std::vector<uint8_t> bytes = GatherSpans(args.data, 0, total);
  Process(std::string(bytes.begin(), bytes.end()));
  return total;
}

void NetlinkSocket::Process(const std::string& data) {
  Interfaces ifs(network_);
  size_t off = 0;
  while (data.size() - off >= kNlHdrLen) {
    nlmsghdr h;
    memcpy(&h, data.data() + off, sizeof(h));
    // A length that does not fit ends the batch silently, as netlink_rcv_skb does; the
    // send still reports every byte consumed.
    if (h.nlmsg_len < kNlHdrLen || h.nlmsg_len > data.size() - off) break;
    std::string_view msg(data.data() + off, h.nlmsg_len);
    int err = 0;
    bool dump_started = false;
    // Only requests reach the protocol; replies and control messages (NOOP, DONE...)
    // are at most acknowledged.
    if ((h.nlmsg_flags & NLM_F_REQUEST) && h.nlmsg_type >= NLMSG_MIN_TYPE) {
      RouteAnswer a = AnswerRouteRequest(ifs, msg, portid_, strict_chk_);
      if (a.dump && dump_running_) {
        err = -EBUSY;
      } else if (a.dump) {
        dump_.assign(std::make_move_iterator(a.messages.begin()),
                     std::make_move_iterator(a.messages.end()));
        dump_done_ = NlDoneMessage(h.nlmsg_seq, portid_, a.error);
        dump_running_ = true;
        dump_started = true;
        ContinueDump();
      } else {
        for (std::string& m : a.messages) Enqueue(std::move(m));
        err = a.error;
      }
    }
    // A started dump is its own answer: no ACK even with NLM_F_ACK, as Linux.
    if (!dump_started && ((h.nlmsg_flags & NLM_F_ACK) || err != 0)) {
      Enqueue(NlErrorMessage(h, msg, err, portid_, cap_ack_));
    }
    off += std::min(NlAlign(h.nlmsg_len), data.size() - off);
  }
}

void NetlinkSocket::Enqueue(std::string datagram) {
  if (rx_bytes_ > static_cast<size_t>(rcvbuf_)) {
    // netlink_overrun: the reply is lost and the reader learns so once.
    if (!no_enobufs_) {
      error_ = ENOBUFS;
      wq_.Notify(POLLERR);
    }
    return;
  }
  rx_bytes_ += datagram.size() + kDatagramOverhead;
  rx_.push_back(std::move(datagram));
  wq_.Notify(kReadableEvents);
}

void NetlinkSocket::ContinueDump() {
  // A full queue pauses the dump until the reader makes room.
  if (!dump_running_ || rx_bytes_ >= static_cast<size_t>(rcvbuf_)) return;
  std::string batch = NextDumpBatch(dump_, dump_done_, std::max(kNlGoodSize, max_recvmsg_len_));
  dump_running_ = !dump_done_.empty();
  rx_bytes_ += batch.size() + kDatagramOverhead;
  rx_.push_back(std::move(batch));
  wq_.Notify(kReadableEvents);
}

// --- receive: the replies ---

SysResult<size_t> NetlinkSocket::Receive(Task* task, absl::Span<const iovec> dst, int flags,
                                         RecvResult* out, absl::Duration timeout) {
  if (flags & MSG_OOB) return Errno{EOPNOTSUPP};
  ASSIGN_OR_RETURN_ERRNO(size_t total, vfs::IovecsLength(dst));
  RETURN_IF_ERRNO(
      WaitLoop(task, nonblocking_for(flags), timeout, {&wq_}, kReadableEvents, [&]() -> SysStatus {
        // A pending error (a lost reply) is reported before what is queued, as Linux.
        if (error_) return Errno{std::exchange(error_, 0)};
        if (rx_.empty()) return Errno{EAGAIN};
        return SysOk();
      }));
  // Later dump batches are as large as the largest read, so that a reader with a big
  // buffer gets many messages per call and one with a small buffer still gets whole ones.
  max_recvmsg_len_ = std::min(std::max(max_recvmsg_len_, total), kNlMaxDumpSize);
  const size_t len = rx_.front().size();
  const size_t n = std::min(total, len);
  CopyToSpans(dst, 0, reinterpret_cast<const uint8_t*>(rx_.front().data()), n);
  out->copied = n;
  out->msg_len = len;
  if (n < len) out->msg_flags |= MSG_TRUNC;
  out->from = NlSockaddr(0, 0);  // every message comes from the kernel
  // SO_PASSCRED: the kernel's credentials (pid 0, uid 0, gid 0), as Linux attaches them.
  if (passcred_) {
    out->has_creds = true;
    out->creds = Ucred{0, 0, 0};
  }
  if (!(flags & MSG_PEEK)) {
    // A datagram read short is gone, truncated, as on any datagram socket.
    rx_bytes_ -= len + kDatagramOverhead;
    rx_.pop_front();
  }
  if (dump_running_ && rx_bytes_ <= static_cast<size_t>(rcvbuf_) / 2) ContinueDump();
  return (flags & MSG_TRUNC) ? len : n;
}

EventMask NetlinkSocket::Readiness(EventMask mask) {
  EventMask r = kWritableEvents;  // a send never waits: requests are answered at once
  if (error_) r |= POLLERR;
  if (!rx_.empty()) r |= kReadableEvents;
  return r & (mask | POLLERR | POLLHUP);
}

// --- options ---

SysResult<std::string> NetlinkSocket::GetOption(Task& task, int level, int name) {
  if (level == SOL_SOCKET && name == SO_PASSCRED) return OptionBytes(int{passcred_});
  if (level == SOL_SOCKET) return GetCommonOption(name);
  if (level != SOL_NETLINK) return Errno{ENOPROTOOPT};
  bool v;
  switch (name) {
    case NETLINK_PKTINFO:
      v = pktinfo_;
      break;
    case NETLINK_BROADCAST_ERROR:
      v = broadcast_error_;
      break;
    case NETLINK_NO_ENOBUFS:
      v = no_enobufs_;
      break;
    case NETLINK_CAP_ACK:
      v = cap_ack_;
      break;
    case NETLINK_EXT_ACK:
      v = ext_ack_;
      break;
    case NETLINK_GET_STRICT_CHK:
      v = strict_chk_;
      break;
    case NETLINK_LIST_MEMBERSHIPS: {
      // The group bitmap in 32-bit words, as many as the protocol's groups need.
      size_t bytes = ((kRtnlGroups + 31) / 32) * 4;
      return OptionBytes(groups_).substr(0, bytes);
    }
    default:
      return Errno{ENOPROTOOPT};
  }
  return OptionBytes(int{v});
}

SysStatus NetlinkSocket::SetOption(Task& task, int level, int name, const std::string& value) {
  if (level == SOL_SOCKET && name == SO_PASSCRED) {
    ASSIGN_OR_RETURN_ERRNO(int v, OptionInt(value));
    passcred_ = v != 0;
    return SysOk();
  }
  if (level == SOL_SOCKET) return SetCommonOption(task, name, value);
  if (level != SOL_NETLINK) return Errno{ENOPROTOOPT};
  int v = OptionFlag(value);
  switch (name) {
    case NETLINK_ADD_MEMBERSHIP:
    case NETLINK_DROP_MEMBERSHIP: {
      if (v == 0 || static_cast<uint32_t>(v) - 1 >= kRtnlGroups) return Errno{EINVAL};
      uint64_t bit = uint64_t{1} << (v - 1);
      groups_ = name == NETLINK_ADD_MEMBERSHIP ? groups_ | bit : groups_ & ~bit;
      return SysOk();
    }
    // Stored; no control message is added to reads (every message is the kernel's
    // unicast reply, group 0, and no group ever sends).
    case NETLINK_PKTINFO:
      pktinfo_ = v != 0;
      return SysOk();
    case NETLINK_BROADCAST_ERROR:
      broadcast_error_ = v != 0;
      return SysOk();
    case NETLINK_NO_ENOBUFS:
      no_enobufs_ = v != 0;
      return SysOk();
    case NETLINK_CAP_ACK:
      cap_ack_ = v != 0;
      return SysOk();
    // Accepted; errors carry no extended-ack attributes (there are no messages to add).
    case NETLINK_EXT_ACK:
      ext_ack_ = v != 0;
      return SysOk();
    case NETLINK_GET_STRICT_CHK:
      strict_chk_ = v != 0;
      return SysOk();
    case NETLINK_LISTEN_ALL_NSID:
      // CAP_NET_BROADCAST on Linux; the sandbox has one namespace, so it changes nothing.
      if (!task.creds().IsRoot()) return Errno{EPERM};
      return SysOk();
    default:
      return Errno{ENOPROTOOPT};
  }
}

}  // namespace net
}  // namespace usentry::sentry
