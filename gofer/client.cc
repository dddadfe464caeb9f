// gofer::Client: encodes each call as one request, waits for its response (see client.h).
#include "gofer/client.h"

#include <cerrno>

#include "base/cpu_pin.h"
#include "gofer/protocol.h"

namespace usentry::gofer {
namespace {

struct Reply {
  Response resp;
  UniqueFd fd;
};

}  // namespace

Client::Client(UniqueFd sock) : sock_(std::move(sock)) {}
Client::~Client() = default;

// Sends req and returns the decoded response, or the errno it carries. Any transport or
// protocol failure closes the socket: after a lost or mismatched message the request/
// response pairing can no longer be trusted, so every later call fails with EIO too.
static SysResult<Reply> Call(UniqueFd& sock, uint64_t& next_tag,
                             std::array<uint64_t, Client::kOpSlots>& trips_by_op, Request& req) {
  if (!sock.valid()) return Errno{EIO};
  // The gofer answers on the CPU this thread waits on: both hand-offs stay on one CPU.
  // The thread stays held there after the call, until it sleeps (base/cpu_pin.h).
  req.cpu = HoldThreadCpu();
  req.tag = next_tag++;
  std::string bytes = EncodeRequest(req);
  if (bytes.size() > kMaxMessageSize) return Errno{ENAMETOOLONG};
  static_assert(kMaxOp < Client::kOpSlots);
  ++trips_by_op[static_cast<uint32_t>(req.op)];
  if (!SendPacket(sock.get(), bytes).ok()) {
    sock.reset();
    return Errno{EIO};
  }
  SysResult<Packet> msg = RecvPacket(sock.get());
  if (!msg.ok() || msg->bytes.empty()) {
    sock.reset();
    return Errno{EIO};
  }
  SysResult<Response> resp = DecodeResponse(msg->bytes);
  if (!resp.ok() || resp->tag != req.tag || resp->op != req.op) {
    sock.reset();
    return Errno{EIO};
  }
  if (resp->err != 0) return Errno{resp->err};
  // An FD must come exactly when the response says so; anything else is a broken peer.
  if (resp->has_fd != msg->fd.valid()) {
    sock.reset();
    return Errno{EIO};
  }
  return Reply{std::move(resp).value(), std::move(msg->fd)};
}

SysResult<std::pair<Node, bool>> Client::Attach(std::string_view tree) {
  Request req;
  req.op = Op::kAttach;
  req.name = std::string(tree);
  ASSIGN_OR_RETURN_ERRNO(Reply r, Call(sock_, next_tag_, trips_by_op_, req));
  return std::make_pair(r.resp.node, r.resp.read_only);
}

// A Walk-shaped request (a directory and one validated name).
static SysResult<Request> WalkRequest(Op op, Handle dir, std::string_view name) {
  RETURN_IF_ERRNO(ValidateName(name));
  Request req;
  req.op = op;
  req.handle = dir;
  req.name = std::string(name);
  return req;
}

SysResult<Node> Client::Walk(Handle dir, std::string_view name) {
  ASSIGN_OR_RETURN_ERRNO(Request req, WalkRequest(Op::kWalk, dir, name));
  ASSIGN_OR_RETURN_ERRNO(Reply r, Call(sock_, next_tag_, trips_by_op_, req));
  return r.resp.node;
}

SysResult<Client::WalkOpened> Client::WalkOpen(Handle dir, std::string_view name) {
  ASSIGN_OR_RETURN_ERRNO(Request req, WalkRequest(Op::kWalkOpen, dir, name));
  ASSIGN_OR_RETURN_ERRNO(Reply r, Call(sock_, next_tag_, trips_by_op_, req));
  WalkOpened out{std::move(r.resp.node), std::nullopt, r.resp.open_err, std::move(r.fd)};
  if (r.resp.has_sibling) out.sibling = std::move(r.resp.sibling);
  return out;
}

SysResult<Client::WalkedPath> Client::WalkPath(Handle dir,
                                               const std::vector<std::string_view>& names,
                                               bool open_last) {
  return WalkNames(Op::kWalkPath, dir, names, open_last);
}

SysResult<Client::WalkedPath> Client::WalkSiblings(Handle dir,
                                                   const std::vector<std::string_view>& names) {
  return WalkNames(Op::kWalkSiblings, dir, names, /*open_last=*/false);
}

SysResult<Client::WalkedPath> Client::WalkNames(Op op, Handle dir,
                                                const std::vector<std::string_view>& names,
                                                bool open_last) {
  if (names.empty() || names.size() > kMaxWalkNames) return Errno{EINVAL};
  Request req;
  req.op = op;
  req.handle = dir;
  req.flags = open_last ? kWalkPathOpenLast : 0;
  for (std::string_view n : names) {
    RETURN_IF_ERRNO(ValidateName(n));
    req.names.emplace_back(n);
  }
  ASSIGN_OR_RETURN_ERRNO(Reply r, Call(sock_, next_tag_, trips_by_op_, req));
  WalkedPath out{std::move(r.resp.nodes), std::nullopt, r.resp.stop_err, r.resp.open_err,
                 std::move(r.fd)};
  if (r.resp.has_sibling) out.sibling = std::move(r.resp.sibling);
  // More nodes than names, a stop after the end, or an open that was not asked for:
  // a broken peer (its handles are released; the socket is not trusted again).
  const bool reached_end = out.nodes.size() == names.size();
  if (out.nodes.size() > names.size() || (reached_end && out.stop_err != 0) ||
      ((!open_last || !reached_end) &&
       (out.open_err != 0 || out.fd.valid() || out.sibling.has_value()))) {
    for (const Node& n : out.nodes) Close(n.handle);
    if (out.sibling) Close(out.sibling->handle);
    sock_.reset();
    return Errno{EIO};
  }
  return out;
}

SysResult<UniqueFd> Client::Open(Handle node, int flags) {
  Request req;
  req.op = Op::kOpen;
  req.handle = node;
  req.flags = static_cast<uint32_t>(flags);
  ASSIGN_OR_RETURN_ERRNO(Reply r, Call(sock_, next_tag_, trips_by_op_, req));
  return std::move(r.fd);
}

SysResult<std::pair<Node, UniqueFd>> Client::Create(Handle dir, std::string_view name, int flags,
                                                    uint32_t mode) {
  RETURN_IF_ERRNO(ValidateName(name));
  Request req;
  req.op = Op::kCreate;
  req.handle = dir;
  req.name = std::string(name);
  req.flags = static_cast<uint32_t>(flags);
  req.mode = mode;
  ASSIGN_OR_RETURN_ERRNO(Reply r, Call(sock_, next_tag_, trips_by_op_, req));
  if (!r.fd.valid()) return Errno{EIO};  // a created file is always regular
  return std::make_pair(r.resp.node, std::move(r.fd));
}

SysResult<Node> Client::Mkdir(Handle dir, std::string_view name, uint32_t mode) {
  RETURN_IF_ERRNO(ValidateName(name));
  Request req;
  req.op = Op::kMkdir;
  req.handle = dir;
  req.name = std::string(name);
  req.mode = mode;
  ASSIGN_OR_RETURN_ERRNO(Reply r, Call(sock_, next_tag_, trips_by_op_, req));
  return r.resp.node;
}

SysResult<Node> Client::Symlink(Handle dir, std::string_view name, std::string_view target) {
  RETURN_IF_ERRNO(ValidateName(name));
  RETURN_IF_ERRNO(ValidateSymlinkTarget(target));
  Request req;
  req.op = Op::kSymlink;
  req.handle = dir;
  req.name = std::string(name);
  req.name2 = std::string(target);
  ASSIGN_OR_RETURN_ERRNO(Reply r, Call(sock_, next_tag_, trips_by_op_, req));
  return r.resp.node;
}

SysResult<Node> Client::Link(Handle dir, std::string_view name, Handle target) {
  RETURN_IF_ERRNO(ValidateName(name));
  Request req;
  req.op = Op::kLink;
  req.handle = dir;
  req.name = std::string(name);
  req.handle2 = target;
  ASSIGN_OR_RETURN_ERRNO(Reply r, Call(sock_, next_tag_, trips_by_op_, req));
  return r.resp.node;
}

SysStatus Client::Unlink(Handle dir, std::string_view name, int flags) {
  RETURN_IF_ERRNO(ValidateName(name));
  Request req;
  req.op = Op::kUnlink;
  req.handle = dir;
  req.name = std::string(name);
  req.flags = static_cast<uint32_t>(flags);
  RETURN_IF_ERRNO(Call(sock_, next_tag_, trips_by_op_, req));
  return SysOk();
}

SysStatus Client::Rename(Handle old_dir, std::string_view old_name, Handle new_dir,
                         std::string_view new_name, uint32_t flags) {
  RETURN_IF_ERRNO(ValidateName(old_name));
  RETURN_IF_ERRNO(ValidateName(new_name));
  Request req;
  req.op = Op::kRename;
  req.handle = old_dir;
  req.name = std::string(old_name);
  req.handle2 = new_dir;
  req.name2 = std::string(new_name);
  req.flags = flags;
  RETURN_IF_ERRNO(Call(sock_, next_tag_, trips_by_op_, req));
  return SysOk();
}

SysResult<std::string> Client::Readlink(Handle node) {
  Request req;
  req.op = Op::kReadlink;
  req.handle = node;
  ASSIGN_OR_RETURN_ERRNO(Reply r, Call(sock_, next_tag_, trips_by_op_, req));
  return std::move(r.resp.text);
}

SysResult<Attr> Client::Stat(Handle node) {
  Request req;
  req.op = Op::kStat;
  req.handle = node;
  ASSIGN_OR_RETURN_ERRNO(Reply r, Call(sock_, next_tag_, trips_by_op_, req));
  return r.resp.node.attr;
}

SysStatus Client::SetAttr(Handle node, const SetAttrRequest& sa) {
  Request req;
  req.op = Op::kSetAttr;
  req.handle = node;
  req.setattr = sa;
  RETURN_IF_ERRNO(Call(sock_, next_tag_, trips_by_op_, req));
  return SysOk();
}

SysResult<std::vector<DirEntry>> Client::ReadDir(Handle dir) {
  std::vector<DirEntry> all;
  Request req;
  req.op = Op::kReadDir;
  req.handle = dir;
  req.cursor = 0;
  // The server pages large directories; a bound on pages keeps a misbehaving server
  // from looping us forever.
  for (int page = 0; page < (1 << 20); ++page) {
    ASSIGN_OR_RETURN_ERRNO(Reply r, Call(sock_, next_tag_, trips_by_op_, req));
    for (DirEntry& e : r.resp.entries) all.push_back(std::move(e));
    if (r.resp.eof) return all;
    if (r.resp.entries.empty() && r.resp.next_cursor == req.cursor) return Errno{EIO};
    req.cursor = r.resp.next_cursor;
  }
  return Errno{EIO};
}

uint64_t Client::round_trips() const {
  uint64_t n = 0;
  for (uint64_t trips : trips_by_op_) n += trips;
  return n;
}

std::map<std::string, uint64_t> Client::RoundTripsByOp() const {
  std::map<std::string, uint64_t> out;
  for (uint32_t op = 0; op <= kMaxOp; ++op) {
    if (trips_by_op_[op] != 0) out[std::string(OpName(static_cast<Op>(op)))] = trips_by_op_[op];
  }
  return out;
}

void Client::Close(Handle node) {
  // No response comes (see protocol.h): inodes are dropped in bursts (a dentry cache
  // eviction, an exec), and a round trip each cost ~0.1 ms for nothing the caller uses.
  if (!sock_.valid()) return;
  Request req;
  req.op = Op::kClose;
  req.handle = node;
  req.tag = next_tag_++;
  if (!SendPacket(sock_.get(), EncodeRequest(req)).ok()) sock_.reset();
}

}  // namespace usentry::gofer
