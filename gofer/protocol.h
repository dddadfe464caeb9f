// Wire protocol between gofer::Client (sentry) and the gofer server: message types, their
// fixed little-endian binary encoding with bounds-checked decoding, name validation, and
// SOCK_SEQPACKET transport that carries at most one host FD per message (SCM_RIGHTS).
//
// Layout (all integers little-endian, strings are u32 length + bytes, no NUL):
//   request  = u64 tag | u32 op | payload(op)
//   response = u64 tag | u32 op | i32 errno | payload(op) only when errno == 0
// The server never trusts a request: every length is checked against the bytes that
// remain, handles are looked up in its table, names are validated with ValidateName().
#ifndef USENTRY_GOFER_PROTOCOL_H_
#define USENTRY_GOFER_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/cpu_pin.h"
#include "base/seqpacket.h"
#include "base/sys_result.h"
#include "base/unique_fd.h"
#include "gofer/client.h"

namespace usentry::gofer {

// Largest message either side sends or accepts. ReadDir pages its results to fit.
inline constexpr size_t kMaxMessageSize = kMaxPacketSize;
// Longest single path component and symlink target accepted (Linux NAME_MAX, PATH_MAX-1).
inline constexpr size_t kMaxNameLen = 255;
inline constexpr size_t kMaxSymlinkTargetLen = 4095;

enum class Op : uint32_t {
  kInvalid = 0,
  kAttach = 1,
  kWalk = 2,
  kOpen = 3,
  kCreate = 4,
  kMkdir = 5,
  kSymlink = 6,
  kLink = 7,
  kUnlink = 8,
  kRename = 9,
  kReadlink = 10,
  kStat = 11,
  kSetAttr = 12,
  kReadDir = 13,
  kClose = 14,
  kWalkOpen = 15,
  kWalkPath = 16,
  kWalkSiblings = 17,
};
inline constexpr uint32_t kMaxOp = 17;
// The operation's name in reports ("walk_path"), "invalid" for anything else.
std::string_view OpName(Op op);

// WalkPath: most names one request may walk, and its flag bits.
inline constexpr size_t kMaxWalkPathNames = Client::kMaxWalkNames;
inline constexpr uint32_t kWalkPathOpenLast = 1;

// One request: tag op cpu, then the fields of its op:
//   Attach   name(tree)
//   Walk     handle(dir) name
//   WalkOpen handle(dir) name
//   WalkPath handle(dir) flags u32 count name*count   (1 <= count <= kMaxWalkPathNames)
//   WalkSiblings handle(dir) u32 count name*count     (1 <= count <= kMaxWalkPathNames)
//   Open     handle flags
//   Create   handle(dir) name flags mode
//   Mkdir    handle(dir) name mode
//   Symlink  handle(dir) name name2(target)
//   Link     handle(dir) name handle2(target)
//   Unlink   handle(dir) name flags
//   Rename   handle(old dir) name(old) handle2(new dir) name2(new) flags
//   Readlink/Stat/Close  handle
//   SetAttr  handle setattr{mask mode uid gid size atime mtime}
//   ReadDir  handle(dir) cursor
struct Request {
  uint64_t tag = 0;
  Op op = Op::kInvalid;
  // The CPU the client waits on for the answer (base/cpu_pin.h), kAnyCpu when it did not
  // hold itself on one (and for Close, which is not answered). In every request's header.
  uint32_t cpu = kAnyCpu;
  Handle handle = 0;
  Handle handle2 = 0;
  std::string name;
  std::string name2;
  std::vector<std::string> names;  // WalkPath, WalkSiblings
  uint32_t flags = 0;
  uint32_t mode = 0;
  uint64_t cursor = 0;
  SetAttrRequest setattr;
};

// One response. When err != 0 nothing else is on the wire. Otherwise, by op:
//   (node = handle attr link_target; link_target is empty unless attr is a symlink's)
//   Attach   node read_only            Walk/Mkdir/Symlink/Link  node
//   Open     has_fd                    Create                   node has_fd
//   WalkOpen node open_err has_fd sibling (open_err: the read-only open's errno, 0 if
//            it succeeded; only regular files and directories are opened)
//   Readlink text                      Stat                     node.attr
//   ReadDir  eof next_cursor u32 count {u64 ino, u8 type, name}*count
//   WalkPath u32 count node*count stop_err open_err has_fd: the names walked in order,
//            through directories only (a file or a symlink ends the walk); stop_err is
//            the errno of the name after the last node, 0 if the walk ended otherwise;
//            err is names[0]'s errno. open_err/has_fd/sibling as WalkOpen's, for the
//            last name when every name was walked and the request had kWalkPathOpenLast.
//   WalkSiblings u32 count node*count stop_err: the names walked, each in dir, in order
//            up to the first that failed; stop_err is that name's errno (0: none
//            failed); err is names[0]'s errno.
//   sibling = u8 present [node]: when the node to open is a symlink whose target is one
//            name (no '/'), that name walked in the same directory and opened in its
//            stead (open_err/has_fd are then the sibling's); absent when that walk failed.
//   Unlink/Rename/SetAttr  (empty)
//   Close    no response at all: the client does not wait for it. Messages on the
//            SEQPACKET socket stay in order, so later responses still pair with their
//            requests, and a Close of a dead handle is simply ignored.
struct Response {
  uint64_t tag = 0;
  Op op = Op::kInvalid;
  int32_t err = 0;
  Node node;
  bool read_only = false;
  // Open/Create: whether a host FD travels with this message. Directories are opened
  // without donating an FD (see client.h).
  bool has_fd = false;
  int32_t open_err = 0;      // WalkOpen, WalkPath
  std::vector<Node> nodes;   // WalkPath, WalkSiblings
  int32_t stop_err = 0;      // WalkPath, WalkSiblings
  bool has_sibling = false;  // WalkOpen, WalkPath
  Node sibling;
  std::string text;
  std::vector<DirEntry> entries;
  bool eof = true;
  uint64_t next_cursor = 0;
};

// Encoded sizes used by the server to page ReadDir results.
inline constexpr size_t kResponseHeaderSize = 8 + 4 + 4;
inline constexpr size_t kReadDirFixedSize = 1 + 8 + 4;
inline size_t EncodedDirEntrySize(const DirEntry& e) { return 8 + 1 + 4 + e.name.size(); }

std::string EncodeRequest(const Request& req);
// EBADMSG if the bytes are not exactly one well-formed request (unknown op, truncated,
// a length past the end, trailing bytes). Does not validate names: see ValidateName.
SysResult<Request> DecodeRequest(std::string_view bytes);
// Reads just tag and op so a server can answer a request it failed to decode.
// EBADMSG if shorter than the header.
SysResult<std::pair<uint64_t, Op>> DecodeRequestHeader(std::string_view bytes);

std::string EncodeResponse(const Response& resp);
// EBADMSG on a malformed response (the client reports it as EIO).
SysResult<Response> DecodeResponse(std::string_view bytes);

// A single path component: EINVAL if empty, ".", "..", or containing '/' or NUL;
// ENAMETOOLONG if longer than kMaxNameLen.
SysStatus ValidateName(std::string_view name);
// A symlink target: ENOENT if empty (as symlink(2)), EINVAL if it contains NUL,
// ENAMETOOLONG if longer than kMaxSymlinkTargetLen.
SysStatus ValidateSymlinkTarget(std::string_view target);

// The transport is base/seqpacket.h (SendPacket/RecvPacket).
}  // namespace usentry::gofer

#endif  // USENTRY_GOFER_PROTOCOL_H_
