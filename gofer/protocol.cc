// Encoding, decoding and transport of gofer protocol messages (see protocol.h).
#include "gofer/protocol.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

namespace usentry::gofer {
namespace {

// Appends fixed-width little-endian fields. x86-64 is little-endian, but encoding byte by
// byte keeps the format independent of the host and of struct layout.
class Encoder {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }
  void U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  void Time(const timespec& ts) {
    I64(ts.tv_sec);
    I64(ts.tv_nsec);
  }
  void AttrFields(const Attr& a) {
    U64(a.dev);
    U64(a.ino);
    U32(a.mode);
    U64(a.nlink);
    U32(a.uid);
    U32(a.gid);
    U64(a.rdev);
    I64(a.size);
    I64(a.blocks);
    U32(a.blksize);
    Time(a.atime);
    Time(a.mtime);
    Time(a.ctime);
  }
  void NodeFields(const Node& n) {
    U64(n.handle);
    AttrFields(n.attr);
    Str(n.link_target);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads fields with a bounds check on every access. After the first failure every read
// returns zero and ok() stays false, so callers check once at the end.
class Decoder {
 public:
  explicit Decoder(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool AtEnd() const { return pos_ == in_.size(); }
  size_t Remaining() const { return in_.size() - pos_; }

  uint8_t U8() { return static_cast<uint8_t>(Fixed(1)); }
  uint32_t U32() { return static_cast<uint32_t>(Fixed(4)); }
  uint64_t U64() { return Fixed(8); }
  int64_t I64() { return static_cast<int64_t>(Fixed(8)); }
  bool Bool() {
    uint8_t v = U8();
    if (v > 1) ok_ = false;
    return v == 1;
  }
  std::string Str() {
    uint32_t len = U32();
    // Compare against what is left rather than computing pos_+len, which a hostile
    // length could overflow.
    if (!ok_ || len > Remaining()) {
      ok_ = false;
      return {};
    }
    std::string s(in_.substr(pos_, len));
    pos_ += len;
    return s;
  }
  timespec Time() {
    timespec ts{};
    ts.tv_sec = I64();
    ts.tv_nsec = I64();
    return ts;
  }
  Attr AttrFields() {
    Attr a;
    a.dev = U64();
    a.ino = U64();
    a.mode = U32();
    a.nlink = U64();
    a.uid = U32();
    a.gid = U32();
    a.rdev = U64();
    a.size = I64();
    a.blocks = I64();
    a.blksize = U32();
    a.atime = Time();
    a.mtime = Time();
    a.ctime = Time();
    return a;
  }
  Node NodeFields() {
    Node n;
    n.handle = U64();
    n.attr = AttrFields();
    n.link_target = Str();
    // Only a symlink has a target, and it must be one a symlink can hold.
    if ((n.attr.mode & S_IFMT) == S_IFLNK ? !ValidateSymlinkTarget(n.link_target).ok()
                                          : !n.link_target.empty()) {
      ok_ = false;
    }
    return n;
  }

 private:
  uint64_t Fixed(size_t n) {
    if (!ok_ || n > Remaining()) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) {
      v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[pos_ + i])) << (8 * i);
    }
    pos_ += n;
    return v;
  }

  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

bool ValidOp(uint32_t op) { return op >= 1 && op <= kMaxOp; }

}  // namespace

// Indexed by Op; as reports (the run_end audit record) name operations.
constexpr std::array<std::string_view, kMaxOp + 1> kOpNames = {
    "invalid", "attach",  "walk",   "open",      "create",    "mkdir",
    "symlink", "link",    "unlink", "rename",    "readlink",  "stat",
    "setattr", "readdir", "close",  "walk_open", "walk_path", "walk_siblings"};

std::string_view OpName(Op op) {
  const auto i = static_cast<uint32_t>(op);
  return i < kOpNames.size() ? kOpNames[i] : kOpNames[0];
}

std::string EncodeRequest(const Request& req) {
  Encoder e;
  e.U64(req.tag);
  e.U32(static_cast<uint32_t>(req.op));
  e.U32(req.cpu);
  switch (req.op) {
    case Op::kAttach:
      e.Str(req.name);
      break;
    case Op::kWalk:
    case Op::kWalkOpen:
      e.U64(req.handle);
      e.Str(req.name);
      break;
    case Op::kWalkPath:
    case Op::kWalkSiblings:
      e.U64(req.handle);
      if (req.op == Op::kWalkPath) e.U32(req.flags);
      e.U32(static_cast<uint32_t>(req.names.size()));
      for (const std::string& n : req.names) e.Str(n);
      break;
    case Op::kOpen:
      e.U64(req.handle);
      e.U32(req.flags);
      break;
    case Op::kCreate:
      e.U64(req.handle);
      e.Str(req.name);
      e.U32(req.flags);
      e.U32(req.mode);
      break;
    case Op::kMkdir:
      e.U64(req.handle);
      e.Str(req.name);
      e.U32(req.mode);
      break;
    case Op::kSymlink:
      e.U64(req.handle);
      e.Str(req.name);
      e.Str(req.name2);
      break;
    case Op::kLink:
      e.U64(req.handle);
      e.Str(req.name);
      e.U64(req.handle2);
      break;
    case Op::kUnlink:
      e.U64(req.handle);
      e.Str(req.name);
      e.U32(req.flags);
      break;
    case Op::kRename:
      e.U64(req.handle);
      e.Str(req.name);
      e.U64(req.handle2);
      e.Str(req.name2);
      e.U32(req.flags);
      break;
    case Op::kReadlink:
    case Op::kStat:
    case Op::kClose:
      e.U64(req.handle);
      break;
    case Op::kSetAttr:
      e.U64(req.handle);
      e.U32(req.setattr.mask);
      e.U32(req.setattr.mode);
      e.U32(req.setattr.uid);
      e.U32(req.setattr.gid);
      e.I64(req.setattr.size);
      e.Time(req.setattr.atime);
      e.Time(req.setattr.mtime);
      break;
    case Op::kReadDir:
      e.U64(req.handle);
      e.U64(req.cursor);
      break;
    case Op::kInvalid:
      break;
  }
  return e.Take();
}

SysResult<std::pair<uint64_t, Op>> DecodeRequestHeader(std::string_view bytes) {
  Decoder d(bytes);
  uint64_t tag = d.U64();
  uint32_t op = d.U32();
  if (!d.ok()) return Errno{EBADMSG};
  return std::make_pair(tag, ValidOp(op) ? static_cast<Op>(op) : Op::kInvalid);
}

SysResult<Request> DecodeRequest(std::string_view bytes) {
  Decoder d(bytes);
  Request req;
  req.tag = d.U64();
  uint32_t op = d.U32();
  req.cpu = d.U32();
  if (!d.ok() || !ValidOp(op)) return Errno{EBADMSG};
  req.op = static_cast<Op>(op);
  switch (req.op) {
    case Op::kAttach:
      req.name = d.Str();
      break;
    case Op::kWalk:
    case Op::kWalkOpen:
      req.handle = d.U64();
      req.name = d.Str();
      break;
    case Op::kWalkPath:
    case Op::kWalkSiblings: {
      req.handle = d.U64();
      if (req.op == Op::kWalkPath) req.flags = d.U32();
      uint32_t count = d.U32();
      if (!d.ok() || count == 0 || count > kMaxWalkPathNames) return Errno{EBADMSG};
      for (uint32_t i = 0; i < count && d.ok(); ++i) req.names.push_back(d.Str());
      break;
    }
    case Op::kOpen:
      req.handle = d.U64();
      req.flags = d.U32();
      break;
    case Op::kCreate:
      req.handle = d.U64();
      req.name = d.Str();
      req.flags = d.U32();
      req.mode = d.U32();
      break;
    case Op::kMkdir:
      req.handle = d.U64();
      req.name = d.Str();
      req.mode = d.U32();
      break;
    case Op::kSymlink:
      req.handle = d.U64();
      req.name = d.Str();
      req.name2 = d.Str();
      break;
    case Op::kLink:
      req.handle = d.U64();
      req.name = d.Str();
      req.handle2 = d.U64();
      break;
    case Op::kUnlink:
      req.handle = d.U64();
      req.name = d.Str();
      req.flags = d.U32();
      break;
    case Op::kRename:
      req.handle = d.U64();
      req.name = d.Str();
      req.handle2 = d.U64();
      req.name2 = d.Str();
      req.flags = d.U32();
      break;
    case Op::kReadlink:
    case Op::kStat:
    case Op::kClose:
      req.handle = d.U64();
      break;
    case Op::kSetAttr:
      req.handle = d.U64();
      req.setattr.mask = d.U32();
      req.setattr.mode = d.U32();
      req.setattr.uid = d.U32();
      req.setattr.gid = d.U32();
      req.setattr.size = d.I64();
      req.setattr.atime = d.Time();
      req.setattr.mtime = d.Time();
      break;
    case Op::kReadDir:
      req.handle = d.U64();
      req.cursor = d.U64();
      break;
    case Op::kInvalid:
      return Errno{EBADMSG};
  }
  if (!d.ok() || !d.AtEnd()) return Errno{EBADMSG};
  return req;
}

std::string EncodeResponse(const Response& resp) {
  Encoder e;
  e.U64(resp.tag);
  e.U32(static_cast<uint32_t>(resp.op));
  e.U32(static_cast<uint32_t>(resp.err));
  if (resp.err != 0) return e.Take();
  switch (resp.op) {
    case Op::kAttach:
      e.NodeFields(resp.node);
      e.U8(resp.read_only);
      break;
    case Op::kWalk:
    case Op::kMkdir:
    case Op::kSymlink:
    case Op::kLink:
      e.NodeFields(resp.node);
      break;
    case Op::kOpen:
      e.U8(resp.has_fd);
      break;
    case Op::kWalkOpen:
      e.NodeFields(resp.node);
      e.U32(static_cast<uint32_t>(resp.open_err));
      e.U8(resp.has_fd);
      e.U8(resp.has_sibling);
      if (resp.has_sibling) e.NodeFields(resp.sibling);
      break;
    case Op::kCreate:
      e.NodeFields(resp.node);
      e.U8(resp.has_fd);
      break;
    case Op::kWalkPath:
    case Op::kWalkSiblings:
      e.U32(static_cast<uint32_t>(resp.nodes.size()));
      for (const Node& n : resp.nodes) e.NodeFields(n);
      e.U32(static_cast<uint32_t>(resp.stop_err));
      if (resp.op == Op::kWalkSiblings) break;
      e.U32(static_cast<uint32_t>(resp.open_err));
      e.U8(resp.has_fd);
      e.U8(resp.has_sibling);
      if (resp.has_sibling) e.NodeFields(resp.sibling);
      break;
    case Op::kReadlink:
      e.Str(resp.text);
      break;
    case Op::kStat:
      e.AttrFields(resp.node.attr);
      break;
    case Op::kReadDir:
      e.U8(resp.eof);
      e.U64(resp.next_cursor);
      e.U32(static_cast<uint32_t>(resp.entries.size()));
      for (const DirEntry& de : resp.entries) {
        e.U64(de.ino);
        e.U8(de.type);
        e.Str(de.name);
      }
      break;
    case Op::kUnlink:
    case Op::kRename:
    case Op::kSetAttr:
    case Op::kClose:
    case Op::kInvalid:
      break;
  }
  return e.Take();
}

// A WalkOpen's or WalkPath's sibling: only after a symlink whose target is one name.
static bool DecodeSibling(Decoder& d, const Node& link, Response& resp) {
  resp.has_sibling = d.Bool();
  if (!resp.has_sibling) return d.ok();
  resp.sibling = d.NodeFields();
  return d.ok() && (link.attr.mode & S_IFMT) == S_IFLNK && ValidateName(link.link_target).ok();
}

SysResult<Response> DecodeResponse(std::string_view bytes) {
  Decoder d(bytes);
  Response resp;
  resp.tag = d.U64();
  uint32_t op = d.U32();
  resp.err = static_cast<int32_t>(d.U32());
  // A response to an undecodable request may carry Op::kInvalid, but only as an error.
  if (!d.ok() || op > kMaxOp || resp.err < 0 || resp.err >= 4096) return Errno{EBADMSG};
  resp.op = static_cast<Op>(op);
  if (resp.err != 0) {
    if (!d.AtEnd()) return Errno{EBADMSG};
    return resp;
  }
  switch (resp.op) {
    case Op::kAttach:
      resp.node = d.NodeFields();
      resp.read_only = d.Bool();
      break;
    case Op::kWalk:
    case Op::kMkdir:
    case Op::kSymlink:
    case Op::kLink:
      resp.node = d.NodeFields();
      break;
    case Op::kOpen:
      resp.has_fd = d.Bool();
      break;
    case Op::kWalkOpen: {
      resp.node = d.NodeFields();
      resp.open_err = static_cast<int32_t>(d.U32());
      resp.has_fd = d.Bool();
      if (!DecodeSibling(d, resp.node, resp)) return Errno{EBADMSG};
      // An FD only for a regular file that opened.
      const Node& opened = resp.has_sibling ? resp.sibling : resp.node;
      if (resp.open_err < 0 || resp.open_err >= 4096 ||
          (resp.has_fd && (resp.open_err != 0 || (opened.attr.mode & S_IFMT) != S_IFREG))) {
        return Errno{EBADMSG};
      }
      break;
    }
    case Op::kCreate:
      resp.node = d.NodeFields();
      resp.has_fd = d.Bool();
      break;
    case Op::kWalkSiblings: {
      uint32_t count = d.U32();
      if (!d.ok() || count == 0 || count > kMaxWalkPathNames) return Errno{EBADMSG};
      for (uint32_t i = 0; i < count && d.ok(); ++i) resp.nodes.push_back(d.NodeFields());
      resp.stop_err = static_cast<int32_t>(d.U32());
      if (resp.stop_err < 0 || resp.stop_err >= 4096) return Errno{EBADMSG};
      break;
    }
    case Op::kWalkPath: {
      uint32_t count = d.U32();
      if (!d.ok() || count == 0 || count > kMaxWalkPathNames) return Errno{EBADMSG};
      for (uint32_t i = 0; i < count && d.ok(); ++i) {
        resp.nodes.push_back(d.NodeFields());
        // The walk goes on only through directories.
        if (i + 1 < count && (resp.nodes.back().attr.mode & S_IFMT) != S_IFDIR) {
          return Errno{EBADMSG};
        }
      }
      resp.stop_err = static_cast<int32_t>(d.U32());
      resp.open_err = static_cast<int32_t>(d.U32());
      resp.has_fd = d.Bool();
      if (!DecodeSibling(d, resp.nodes.back(), resp)) return Errno{EBADMSG};
      const uint32_t last_type = resp.nodes.back().attr.mode & S_IFMT;
      const uint32_t opened_type = resp.has_sibling ? resp.sibling.attr.mode & S_IFMT : last_type;
      // An error stops the walk only after a directory; an FD only for a regular file
      // that opened, and neither it nor a sibling with a stop.
      if (resp.stop_err < 0 || resp.stop_err >= 4096 || resp.open_err < 0 ||
          resp.open_err >= 4096 || (resp.stop_err != 0 && last_type != S_IFDIR) ||
          (resp.stop_err != 0 && resp.has_sibling) ||
          (resp.has_fd && (resp.stop_err != 0 || resp.open_err != 0 || opened_type != S_IFREG))) {
        return Errno{EBADMSG};
      }
      break;
    }
    case Op::kReadlink:
      resp.text = d.Str();
      break;
    case Op::kStat:
      resp.node.attr = d.AttrFields();
      break;
    case Op::kReadDir: {
      resp.eof = d.Bool();
      resp.next_cursor = d.U64();
      uint32_t count = d.U32();
      // Each entry takes at least 13 bytes: refuse a count the message cannot hold
      // before reserving memory for it.
      if (!d.ok() || count > d.Remaining() / 13) return Errno{EBADMSG};
      resp.entries.reserve(count);
      for (uint32_t i = 0; i < count && d.ok(); ++i) {
        DirEntry de;
        de.ino = d.U64();
        de.type = d.U8();
        de.name = d.Str();
        resp.entries.push_back(std::move(de));
      }
      break;
    }
    case Op::kUnlink:
    case Op::kRename:
    case Op::kSetAttr:
    case Op::kClose:
      break;
    case Op::kInvalid:
      return Errno{EBADMSG};
  }
  if (!d.ok() || !d.AtEnd()) return Errno{EBADMSG};
  return resp;
}

SysStatus ValidateName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return Errno{EINVAL};
  if (name.size() > kMaxNameLen) return Errno{ENAMETOOLONG};
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos) {
    return Errno{EINVAL};
  }
  return SysOk();
}

SysStatus ValidateSymlinkTarget(std::string_view target) {
  if (target.empty()) return Errno{ENOENT};
  if (target.size() > kMaxSymlinkTargetLen) return Errno{ENAMETOOLONG};
  if (target.find('\0') != std::string_view::npos) return Errno{EINVAL};
  return SysOk();
}

}  // namespace usentry::gofer
