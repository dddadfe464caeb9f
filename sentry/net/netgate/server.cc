// netgate's poll loop: requests from the sentry, upstream DNS, dials, UDP relays.
#include "sentry/net/netgate/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/seqpacket.h"
#include "sentry/net/netgate/tcp_stats.h"

namespace usentry::netgate {
namespace {

using nlohmann::json;

const char* ErrnoName(int err) {
  const char* n = strerrorname_np(err);
  return n ? n : "E?";
}

const char* RcodeName(int rcode) {
  switch (rcode) {
    case kRcodeNoError:
      return "NOERROR";
    case kRcodeServFail:
      return "SERVFAIL";
    case kRcodeNxDomain:
      return "NXDOMAIN";
    case kRcodeRefused:
      return "REFUSED";
    default:
      return "other";
  }
}

std::string Dst(const IpAddress& ip, uint16_t port) {
  return ip.is_v6() ? absl::StrCat("[", ip.ToString(), "]:", port)
                    : absl::StrCat(ip.ToString(), ":", port);
}

// sockaddr for `ip:port` (IPv4 addresses as sockaddr_in).
socklen_t MakeSockaddr(const IpAddress& ip, uint16_t port, sockaddr_storage* ss) {
  memset(ss, 0, sizeof(*ss));
  if (ip.is_v4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(ss);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    sin->sin_addr = ip.ToIn();
    return sizeof(*sin);
  }
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(ss);
  sin6->sin6_family = AF_INET6;
  sin6->sin6_port = htons(port);
  sin6->sin6_addr = ip.ToIn6Mapped();
  return sizeof(*sin6);
}

// The address and port of a sockaddr from getpeername/getsockname.
bool FromSockaddr(const sockaddr_storage& ss, IpAddress* ip, uint16_t* port) {
  if (ss.ss_family == AF_INET) {
    const auto* sin = reinterpret_cast<const sockaddr_in*>(&ss);
    *ip = IpAddress::FromIn(sin->sin_addr);
    *port = ntohs(sin->sin_port);
    return true;
  }
  if (ss.ss_family == AF_INET6) {
    const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    *ip = IpAddress::FromIn6(sin6->sin6_addr).Unmapped();
    *port = ntohs(sin6->sin6_port);
    return true;
  }
  return false;
}

uint16_t LocalPort(int fd) {
  sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  IpAddress ip;
  uint16_t port = 0;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) FromSockaddr(ss, &ip, &port);
  return port;
}

}  // namespace

Server::Server(ServerOptions options, std::unique_ptr<Resolver> resolver, UniqueFd sentry)
    : opts_(std::move(options)), resolver_(std::move(resolver)), sentry_(std::move(sentry)) {}

Server::~Server() {
  std::vector<uint64_t> open;
  for (const auto& [id, c] : conns_) open.push_back(id);
  for (uint64_t id : open) Close(id, 0, 0, "run ended");
}

absl::Status Server::Run() {
  bool finished = false;
  while (!finished) {
    absl::Status st = Step(absl::InfiniteDuration(), &finished);
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status Server::Step(absl::Duration max_wait, bool* finished) {
  *finished = false;
  // Layout: [sentry] [resolver...] [dials...] [relay, real for each UDP conn...]
  std::vector<pollfd> fds;
  fds.push_back({sentry_.get(), POLLIN, 0});
  std::vector<pollfd> resolver_fds;
  resolver_->AppendPollFds(resolver_fds);
  const size_t resolver_at = fds.size();
  fds.insert(fds.end(), resolver_fds.begin(), resolver_fds.end());
  const size_t dials_at = fds.size();
  for (const Dial& d : dials_) fds.push_back({d.fd.get(), POLLOUT, 0});
  const size_t relays_at = fds.size();
  std::vector<uint64_t> relay_ids;
  for (const auto& [id, c] : conns_) {
    if (!c.relay.valid()) continue;
    relay_ids.push_back(id);
    fds.push_back({c.relay.get(), POLLIN, 0});
    fds.push_back({c.fd.get(), POLLIN, 0});
  }
  absl::Time now = absl::Now();
  absl::Duration wait = std::min(max_wait, resolver_->NextTimeout());
  for (const Dial& d : dials_) wait = std::min(wait, d.deadline - now);
  wait = std::max(wait, absl::ZeroDuration());
  int timeout_ms =
      wait == absl::InfiniteDuration()
          ? -1
          : static_cast<int>(std::min<int64_t>(
                absl::ToInt64Milliseconds(absl::Ceil(wait, absl::Milliseconds(1))), INT32_MAX));
  int n = poll(fds.data(), fds.size(), timeout_ms);
  if (n < 0 && errno != EINTR) return absl::InternalError(absl::StrCat("poll: ", strerror(errno)));
  if (n < 0) return absl::OkStatus();

  // Upstream answers first: they may complete requests whose replies go out below.
  std::vector<pollfd> ready(fds.begin() + resolver_at, fds.begin() + dials_at);
  resolver_->Process(ready);

  // Dials: finished (writable or failed) or past their deadline.
  now = absl::Now();
  std::vector<Dial> still;
  for (size_t i = 0; i < dials_.size(); ++i) {
    Dial& d = dials_[i];
    const short rev = fds[dials_at + i].revents;
    if (rev != 0) {
      int err = 0;
      socklen_t len = sizeof(err);
      if (getsockopt(d.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      FinishDial(d, err);
    } else if (now >= d.deadline) {
      FinishDial(d, ETIMEDOUT);
    } else {
      still.push_back(std::move(d));
    }
  }
  dials_ = std::move(still);

  for (size_t i = 0; i < relay_ids.size(); ++i) {
    auto it = conns_.find(relay_ids[i]);
    if (it == conns_.end()) continue;
    if (fds[relays_at + 2 * i].revents & POLLIN) Relay(it->second, true);
    if (fds[relays_at + 2 * i + 1].revents & POLLIN) Relay(it->second, false);
  }

  if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
    // Drain what is queued without blocking, so one poll round serves a burst.
    while (true) {
      SysResult<Packet> p = RecvPacket(sentry_.get(), MSG_DONTWAIT);
      if (!p.ok()) {
        if (p.error() == EAGAIN || p.error() == EINTR) break;
        if (p.error() == EMSGSIZE || p.error() == EBADMSG) continue;  // dropped
        return absl::InternalError(absl::StrCat("recvmsg(sentry): ", strerror(p.error())));
      }
      if (p->bytes.empty()) {
        *finished = true;
        return absl::OkStatus();
      }
      // The sentry never sends FDs; one that does gets it closed (Packet owns it).
      std::optional<Request> req = DecodeRequest(p->bytes);
      if (!req) {
        opts_.log->Emit("malformed", {{"by", "netgate"}, {"bytes", p->bytes.size()}});
        continue;
      }
      HandleRequest(*req);
    }
  }
  if (sentry_failed_) *finished = true;
  return absl::OkStatus();
}

void Server::HandleRequest(const Request& req) {
  switch (req.op) {
    case Request::Op::kResolve:
      Resolve(req);
      break;
    case Request::Op::kConnect:
      Connect(req);
      break;
    case Request::Op::kClose:
      Close(req.id, req.bytes_in, req.bytes_out, "closed by the app");
      break;
  }
}

void Server::Send(const std::string& bytes, int fd) {
  if (sentry_failed_) return;
  if (!SendPacket(sentry_.get(), bytes, fd).ok()) sentry_failed_ = true;
}

// --- resolve ---

void Server::Resolve(const Request& req) {
  const char* type = req.qtype == kTypeAAAA ? "AAAA" : "A";
  ResolveReply reply;
  reply.id = req.id;
  std::optional<std::string> name = policy::NormalizeHostname(req.name);
  policy::NetVerdict v;
  if (name) {
    v = policy::CheckName(opts_.net, *name);
  } else {
    v = {false, "not a hostname", ""};
  }
  if (!v.allowed) {
    reply.rcode = kRcodeNxDomain;
    reply.reason = v.reason;
    opts_.log->Emit("resolve", {{"by", "netgate"},
                                {"name", req.name},
                                {"type", type},
                                {"decision", "denied"},
                                {"rcode", "NXDOMAIN"},
                                {"reason", v.reason}});
    Send(EncodeResolveReply(reply));
    return;
  }
  resolver_->Resolve(*name, req.qtype, [this, req, n = *name, type](Resolver::Result r) {
    ResolveReply reply;
    reply.id = req.id;
    reply.rcode = r.rcode;
    reply.reason = r.error;
    json addrs = json::array(), blocked = json::array();
    for (const ResolvedAddress& a : r.addrs) {
      if (std::optional<std::string> range = policy::BlockedRange(a.ip)) {
        reply.blocked.push_back({a.ip, *range});
        blocked.push_back({{"ip", a.ip.ToString()}, {"range", *range}});
        continue;
      }
      bindings_.Bind(n, a.ip);
      reply.addrs.push_back(a);
      addrs.push_back(a.ip.ToString());
    }
    if (r.rcode == kRcodeNoError && reply.addrs.empty() && !reply.blocked.empty()) {
      reply.rcode = kRcodeRefused;
      reply.reason = absl::StrCat(n, " resolved only to always-blocked addresses");
    }
    opts_.log->Emit("resolve", {{"by", "netgate"},
                                {"name", n},
                                {"type", type},
                                {"decision", reply.rcode == kRcodeRefused ? "denied" : "allowed"},
                                {"rcode", RcodeName(reply.rcode)},
                                {"addrs", addrs},
                                {"blocked", blocked},
                                {"reason", reply.reason}});
    Send(EncodeResolveReply(reply));
  });
}

// --- connect ---

void Server::ReplyConnectError(const Request& req, int err, const std::string& reason,
                               const std::string& name, const IpAddress& ip, bool denied) {
  ConnectReply reply;
  reply.id = req.id;
  reply.err = err;
  reply.reason = reason;
  json fields = {{"by", "netgate"},          {"proto", policy::NetProtoName(req.proto)},
                 {"dst", Dst(ip, req.port)}, {"decision", denied ? "denied" : "allowed"},
                 {"result", ErrnoName(err)}, {"reason", reason}};
  if (!name.empty()) fields["name"] = name;
  if (req.host_port) fields["host_port"] = true;
  opts_.log->Emit("connect", fields);
  Send(EncodeConnectReply(reply));
}

void Server::Connect(const Request& req) {
  IpAddress ip = req.ip.Unmapped();
  policy::NetVerdict v;
  std::string name;
  if (req.host_port) {
    ip = opts_.host_loopback;
    name = "host.usentry.internal";
    v.allowed = req.proto == policy::NetProto::kTcp && opts_.net.AllowsHostPort(req.port);
    v.reason = v.allowed ? "host port allowed"
                         : absl::StrCat("host port ", req.port,
                                        " is not allowed (policy: "
                                        "net.host_ports)");
  } else {
    v = policy::CheckDestination(opts_.net, bindings_, ip, req.port, req.proto);
    name = v.name;
  }
  if (!v.allowed) {
    ReplyConnectError(req, EACCES, v.reason, name, ip, true);
    return;
  }
  if (conns_.size() + dials_.size() >= opts_.max_connections ||
      dials_.size() >= opts_.max_pending) {
    ReplyConnectError(req, ENOBUFS, "too many connections through netgate", name, ip, false);
    return;
  }
  const int family = ip.is_v4() ? AF_INET : AF_INET6;
  sockaddr_storage ss;
  socklen_t len = MakeSockaddr(ip, req.port, &ss);
  if (req.proto == policy::NetProto::kUdp) {
    UniqueFd real(socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    int pair[2];
    if (!real.valid() || connect(real.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
        socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
      ReplyConnectError(req, errno, "", name, ip, false);
      return;
    }
    Conn c{req.proto, ip, req.port, name, std::move(real), UniqueFd(pair[0]), 0, 0, absl::Now()};
    UniqueFd theirs(pair[1]);
    uint16_t port = LocalPort(c.fd.get());
    ConnectReply reply{req.id, 0, next_conn_, port, ""};
    opts_.log->Emit("connect", {{"by", "netgate"},
                                {"proto", "udp"},
                                {"dst", Dst(ip, req.port)},
                                {"name", name},
                                {"decision", "allowed"},
                                {"result", "connected"},
                                {"conn", next_conn_},
                                {"reason", v.reason}});
    Send(EncodeConnectReply(reply), theirs.get());
    conns_.emplace(next_conn_++, std::move(c));
    return;
  }
  UniqueFd fd(socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    ReplyConnectError(req, errno, "socket() failed in netgate", name, ip, false);
    return;
  }
  Dial d{req, std::move(fd), ip, name, absl::Now() + opts_.connect_timeout};
  if (connect(d.fd.get(), reinterpret_cast<sockaddr*>(&ss), len) == 0) {
    FinishDial(d, 0);
    return;
  }
  if (errno != EINPROGRESS) {
    FinishDial(d, errno);
    return;
  }
  dials_.push_back(std::move(d));
}

void Server::FinishDial(Dial& d, int err) {
  if (err != 0) {
    ReplyConnectError(d.req, err, "", d.name, d.ip, false);
    return;
  }
  // The connection must be to exactly the address that was checked.
  sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  IpAddress peer;
  uint16_t peer_port = 0;
  if (getpeername(d.fd.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0 ||
      !FromSockaddr(ss, &peer, &peer_port) || peer != d.ip || peer_port != d.req.port) {
    ReplyConnectError(d.req, EACCES, "the connected peer is not the checked destination", d.name,
                      d.ip, true);
    return;
  }
  Conn c{d.req.proto, d.ip, d.req.port, d.name, std::move(d.fd), UniqueFd(), 0, 0, absl::Now()};
  const uint64_t id = next_conn_++;
  ConnectReply reply{d.req.id, 0, id, LocalPort(c.fd.get()), ""};
  json fields = {{"by", "netgate"},       {"proto", "tcp"},        {"dst", Dst(d.ip, d.req.port)},
                 {"decision", "allowed"}, {"result", "connected"}, {"conn", id}};
  if (!d.name.empty()) fields["name"] = d.name;
  if (d.req.host_port) fields["host_port"] = true;
  opts_.log->Emit("connect", fields);
  Send(EncodeConnectReply(reply), c.fd.get());
  conns_.emplace(id, std::move(c));
}

// --- UDP relay and close ---

void Server::Relay(Conn& c, bool from_sentry) {
  // One datagram per call keeps a flood from one side from starving the loop.
  static char buf[65536];
  int from = from_sentry ? c.relay.get() : c.fd.get();
  int to = from_sentry ? c.fd.get() : c.relay.get();
  ssize_t n = recv(from, buf, sizeof(buf), MSG_DONTWAIT);
  if (n < 0) return;  // EAGAIN, or an ICMP error on the real socket: dropped
  // Datagrams are unreliable: if the other side is full, this one is lost.
  if (send(to, buf, static_cast<size_t>(n), MSG_DONTWAIT | MSG_NOSIGNAL) == n) {
    (from_sentry ? c.relayed_out : c.relayed_in) += static_cast<uint64_t>(n);
  }
}

void Server::Close(uint64_t id, uint64_t sentry_in, uint64_t sentry_out, const char* why) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;  // unknown or already closed: nothing to do
  Conn& c = it->second;
  json fields = {{"by", "netgate"},
                 {"conn", id},
                 {"proto", policy::NetProtoName(c.proto)},
                 {"dst", Dst(c.ip, c.port)},
                 {"duration_ms", absl::ToInt64Milliseconds(absl::Now() - c.start)},
                 {"reason", why}};
  if (!c.name.empty()) fields["name"] = c.name;
  if (c.proto == policy::NetProto::kTcp) {
    if (std::optional<TcpBytes> b = ReadTcpBytes(c.fd.get())) {
      fields["bytes_out"] = b->acked;
      fields["bytes_in"] = b->received;
    }
  } else {
    fields["bytes_out"] = c.relayed_out;
    fields["bytes_in"] = c.relayed_in;
  }
  fields["sentry_bytes_in"] = sentry_in;
  fields["sentry_bytes_out"] = sentry_out;
  opts_.log->Emit("close", fields);
  conns_.erase(it);  // closes our copy: the host socket goes once the sentry's is gone too
}

}  // namespace usentry::netgate
