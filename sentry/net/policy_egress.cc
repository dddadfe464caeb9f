// PolicyEgress: connects beyond the sandbox, decided, recorded, handed to netgate.
#include "sentry/net/policy_egress.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/net/sandbox_network.h"

namespace usentry::sentry::net {
namespace {

using nlohmann::json;

const char* ErrnoName(int err) {
  const char* n = strerrorname_np(err);
  return n ? n : "E?";
}

policy::NetProto ProtoOf(Transport t) {
  return t == Transport::kUdp ? policy::NetProto::kUdp : policy::NetProto::kTcp;
}

std::string DstText(const IpAddress& ip, uint16_t port, Transport t) {
  std::string host = ip.is_v6() ? absl::StrCat("[", ip.ToString(), "]") : ip.ToString();
  return absl::StrCat(host, ":", port, "/", policy::NetProtoName(ProtoOf(t)));
}

class PolicyEgress : public Egress {
 public:
  explicit PolicyEgress(std::shared_ptr<NetContext> ctx) : ctx_(std::move(ctx)) {}

  SysStatus Connect(Task& task, Transport t, const Endpoint& dst, ConnectDone done) override {
    const int pid = task.thread_group().pid();
    const IpAddress ip = dst.ip.Unmapped();
    const policy::NetProto proto = ProtoOf(t);
    const bool to_host = ip == GatewayAddress();
    policy::NetVerdict v;
    int deny_errno = EACCES;
    if (!ctx_->policy.egress() || ctx_->netgate == nullptr) {
      v = {false, "the sandbox has no network (allow destinations with --allow-net)", ""};
      deny_errno = ENETUNREACH;
    } else if (to_host) {
      v.allowed = t == Transport::kTcp && ctx_->policy.AllowsHostPort(dst.port);
      v.reason = v.allowed ? "host port allowed"
                           : absl::StrCat("port ", dst.port, " of ", kHostAlias,
                                          " is not allowed (policy: net.host_ports)");
      v.name = kHostAlias;
    } else {
      v = policy::CheckDestination(ctx_->policy, ctx_->bindings, ip, dst.port, proto);
    }
    const std::string what = DstText(ip, dst.port, t);
    if (!v.allowed) {
      Record(pid, "connect", what, v.name, "denied", ErrnoName(deny_errno), v.reason);
      ctx_->audit->Explain("connect", what, v.reason,
                           deny_errno == ENETUNREACH ? "net"
                           : to_host                 ? "net.host_ports"
                                                     : "net.allow");
      return Errno{deny_errno};
    }
    std::string name = v.name;
    SysStatus sent = ctx_->netgate->Connect(
        proto, ip, dst.port, to_host,
        [this, pid, what, name, reason = v.reason, done = std::move(done)](
            const netgate::ConnectReply& r, UniqueFd fd) {
          if (r.err != 0) {
            // Allowed by the sentry; netgate refused (its own check) or the dial failed.
            Record(pid, "connect", what, name, r.err == EACCES ? "denied" : "allowed",
                   ErrnoName(r.err), r.reason.empty() ? reason : r.reason);
            if (r.err == EACCES) ctx_->audit->Explain("connect", what, r.reason, "net.allow");
            done(Errno{r.err});
            return;
          }
          Record(pid, "connect", what, name, "allowed", "connected", reason, r.conn);
          EgressConnection c;
          c.fd = std::move(fd);
          c.id = r.conn;
          c.local = Endpoint{SandboxAddress(), r.local_port};
          done(std::move(c));
        });
    if (!sent.ok()) {
      Record(pid, "connect", what, name, "allowed", "ENETUNREACH", "netgate is gone");
      return Errno{ENETUNREACH};
    }
    return SysOk();
  }

  void Closed(uint64_t id, Transport t, const Endpoint& dst, uint64_t bytes_in,
              uint64_t bytes_out) override {
    ctx_->audit->Emit("net", {{"op", "close"},
                              {"conn", id},
                              {"dst", DstText(dst.ip.Unmapped(), dst.port, t)},
                              {"bytes_in", bytes_in},
                              {"bytes_out", bytes_out}});
    if (ctx_->netgate != nullptr) ctx_->netgate->Close(id, bytes_in, bytes_out);
  }

 private:
  // A "net" audit record; the sentry's own denials also go to --net-log.
  void Record(int pid, const char* op, const std::string& dst, const std::string& name,
              const char* decision, const char* result, const std::string& reason,
              uint64_t conn = 0) {
    json fields = {{"pid", pid},           {"op", op},         {"dst", dst},
                   {"decision", decision}, {"result", result}, {"reason", reason}};
    if (!name.empty()) fields["name"] = name;
    if (conn != 0) fields["conn"] = conn;
    ctx_->audit->Emit("net", fields);
    if (std::strcmp(decision, "denied") == 0) {
      json line = {{"by", "sentry"},
                   {"dst", dst},
                   {"decision", decision},
                   {"result", result},
                   {"reason", reason}};
      if (!name.empty()) line["name"] = name;
      ctx_->net_log->Emit(op, line);
    }
  }

  std::shared_ptr<NetContext> ctx_;
};

}  // namespace

std::unique_ptr<Egress> NewPolicyEgress(std::shared_ptr<NetContext> ctx) {
  return std::make_unique<PolicyEgress>(std::move(ctx));
}

}  // namespace usentry::sentry::net
