// Gofer tree presets and the Serve() request loop (see server.h).
#include "gofer/server.h"

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "base/cpu_pin.h"
#include "base/status_macros.h"
#include "gofer/file_server.h"
#include "gofer/protocol.h"

namespace usentry::gofer {

TreeConfig DefaultRootTree() {
  TreeConfig t;
  t.name = "root";
  t.host_path = "/";
  t.read_only = true;
  t.top_level_allowlist =
      std::set<std::string>{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc"};
  // Host secrets. etc/machine-id stays visible: programs expect it and it is not a
  // credential.
  t.masks = {
      "etc/shadow",  "etc/shadow-",   "etc/gshadow",          "etc/gshadow-",    "etc/ssh/*key*",
      "etc/sudoers", "etc/sudoers.d", "etc/security/opasswd", "etc/ssl/private",
  };
  return t;
}

TreeConfig RootfsTree(std::string dir) {
  TreeConfig t;
  t.name = "root";
  t.host_path = std::move(dir);
  t.read_only = true;
  return t;
}

TreeConfig MountTree(int index, std::string src, bool read_only) {
  TreeConfig t;
  t.name = absl::StrCat("mount", index);
  t.host_path = std::move(src);
  t.read_only = read_only;
  return t;
}

absl::Status Serve(const GoferConfig& config, UniqueFd sock,
                   const std::function<absl::Status()>& confine) {
  ASSIGN_OR_RETURN(std::unique_ptr<FileServer> server, FileServer::Create(config));
  // Read before the filter: the CPUs this gofer may move to for its client.
  CpuFollower follower;
  if (confine) RETURN_IF_ERROR(confine());
  while (true) {
    SysResult<Packet> msg = RecvPacket(sock.get());
    Response resp;
    UniqueFd donate;
    if (!msg.ok()) {
      int err = msg.error();
      if (err == ECONNRESET) return absl::OkStatus();
      // An oversized message or one with stray FDs is answered (tag unknown: 0) so the
      // client sees a protocol error instead of waiting forever.
      if (err != EMSGSIZE && err != EBADMSG) {
        return ErrnoStatus(absl::StrCat("recvmsg(sock=", sock.get(), ")"), err);
      }
      resp.err = EINVAL;
    } else if (msg->bytes.empty()) {
      return absl::OkStatus();  // the sentry closed its end
    } else {
      SysResult<Request> req = DecodeRequest(msg->bytes);
      if (req.ok()) {
        resp.tag = req->tag;
        resp.op = req->op;
        // Wait for the next request where the client waits for this answer (cpu_pin.h).
        follower.Follow(req->cpu);
        server->Handle(*req, resp, donate);
      } else {
        SysResult<std::pair<uint64_t, Op>> header = DecodeRequestHeader(msg->bytes);
        if (header.ok()) {
          resp.tag = header->first;
          resp.op = header->second;
        }
        resp.err = EINVAL;
      }
    }
    // Close is never answered (protocol.h), even when it failed or did not decode: the
    // client does not wait for it, and an answer would pair with its next request.
    if (resp.op == Op::kClose) continue;
    SysStatus sent = SendPacket(sock.get(), EncodeResponse(resp), donate.get());
    if (!sent.ok()) {
      if (sent.error() == EPIPE || sent.error() == ECONNRESET) return absl::OkStatus();
      return ErrnoStatus(absl::StrCat("sendmsg(sock=", sock.get(), ")"), sent.error());
    }
    // donate is closed here: the sentry holds its own copy now.
  }
}

}  // namespace usentry::gofer
