// netgate::Client: requests out, replies dispatched by the reader thread.
#include "sentry/net/netgate/client.h"

#include <sys/socket.h>

#include <thread>

#include "base/seqpacket.h"

namespace usentry::netgate {

Client::Client(UniqueFd sock, absl::Mutex* mu) : sock_(std::move(sock)), mu_(mu) {}

void Client::Start() {
  std::thread([this] { ReadLoop(); }).detach();
}

SysStatus Client::SendLocked(const Request& req) {
  if (dead_) return Errno{EPIPE};
  // Blocking is bounded: netgate reads continuously, and messages are small.
  SysStatus st = SendPacket(sock_.get(), EncodeRequest(req));
  if (!st.ok()) {
    dead_ = true;
    FailAll();
    return Errno{EPIPE};
  }
  return SysOk();
}

SysStatus Client::Resolve(const std::string& name, uint16_t qtype, ResolveDone done) {
  Request req;
  req.op = Request::Op::kResolve;
  req.id = next_id_++;
  req.name = name;
  req.qtype = qtype;
  RETURN_IF_ERRNO(SendLocked(req));
  resolves_.emplace(req.id, std::move(done));
  return SysOk();
}

SysStatus Client::Connect(policy::NetProto proto, const IpAddress& ip, uint16_t port,
                          bool host_port, ConnectDone done) {
  Request req;
  req.op = Request::Op::kConnect;
  req.id = next_id_++;
  req.proto = proto;
  req.ip = ip;
  req.port = port;
  req.host_port = host_port;
  RETURN_IF_ERRNO(SendLocked(req));
  connects_.emplace(req.id, std::move(done));
  return SysOk();
}

void Client::Close(uint64_t conn, uint64_t bytes_in, uint64_t bytes_out) {
  Request req;
  req.op = Request::Op::kClose;
  req.id = conn;
  req.bytes_in = bytes_in;
  req.bytes_out = bytes_out;
  (void)SendLocked(req);
}

void Client::FailAll() {
  auto resolves = std::move(resolves_);
  auto connects = std::move(connects_);
  resolves_.clear();
  connects_.clear();
  for (auto& [id, done] : resolves) {
    ResolveReply r;
    r.id = id;
    r.rcode = kRcodeServFail;
    r.reason = "netgate is gone";
    done(r);
  }
  for (auto& [id, done] : connects) {
    ConnectReply r;
    r.id = id;
    r.err = ENETUNREACH;
    r.reason = "netgate is gone";
    done(r, UniqueFd());
  }
}

void Client::ReadLoop() {
  while (true) {
    SysResult<Packet> p = RecvPacket(sock_.get());
    if (!p.ok() && (p.error() == EMSGSIZE || p.error() == EBADMSG)) continue;
    absl::MutexLock lock(mu_);
    if (!p.ok() || p->bytes.empty()) {
      dead_ = true;
      FailAll();
      return;
    }
    std::optional<Reply> reply = DecodeReply(p->bytes);
    if (!reply) continue;
    if (reply->is_resolve) {
      auto it = resolves_.find(reply->resolve.id);
      if (it == resolves_.end()) continue;
      ResolveDone done = std::move(it->second);
      resolves_.erase(it);
      done(reply->resolve);
    } else {
      auto it = connects_.find(reply->connect.id);
      if (it == connects_.end()) continue;
      ConnectDone done = std::move(it->second);
      connects_.erase(it);
      UniqueFd fd = reply->connect.err == 0 ? std::move(p->fd) : UniqueFd();
      if (reply->connect.err == 0 && !fd.valid()) {
        ConnectReply r = reply->connect;
        r.err = EIO;
        r.reason = "netgate sent no socket";
        done(r, UniqueFd());
        continue;
      }
      done(reply->connect, std::move(fd));
    }
  }
}

}  // namespace usentry::netgate
