// gofer::Client: the sentry's side of the gofer protocol. Synchronous request/response
// over the SOCK_SEQPACKET socket; host FDs arrive by SCM_RIGHTS. The sentry never opens
// host paths itself: every node is a Handle the gofer resolved, one component at a time,
// without following symlinks or ".." out of its tree.
//
// Thread-compatible: callers serialize (the sentry holds its kernel lock).
// Errors are Linux errnos (the gofer's host errno, or EROFS/ENOENT/EACCES by policy).
#ifndef USENTRY_GOFER_CLIENT_H_
#define USENTRY_GOFER_CLIENT_H_

#include <sys/types.h>
#include <time.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/sys_result.h"
#include "base/unique_fd.h"

namespace usentry::gofer {

// Gofer-side identifier of a resolved node (like a 9P fid). Valid until Close().
using Handle = uint64_t;

// File attributes as the host reports them (uid/gid passed through unchanged).
struct Attr {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint32_t mode = 0;  // S_IFMT | permission bits
  uint64_t nlink = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t rdev = 0;
  int64_t size = 0;
  int64_t blocks = 0;
  uint32_t blksize = 0;
  struct timespec atime {
  }, mtime{}, ctime{};
};

struct Node {
  Handle handle = 0;
  Attr attr;
  // A symlink's target, read when the node was resolved (a handle names one inode, and
  // a symlink's target never changes): no Readlink round trip follows a Walk. Empty for
  // other types.
  std::string link_target;
};

struct DirEntry {
  std::string name;
  uint64_t ino = 0;
  uint8_t type = 0;  // DT_*
};

// SetAttr mask bits.
enum SetAttrMask : uint32_t {
  kSetMode = 1,
  kSetUid = 2,
  kSetGid = 4,
  kSetSize = 8,
  kSetAtime = 16,  // UTIME_NOW / UTIME_OMIT semantics in tv_nsec, as utimensat
  kSetMtime = 32,
};

struct SetAttrRequest {
  uint32_t mask = 0;
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  int64_t size = 0;
  struct timespec atime {
  }, mtime{};
};

enum class Op : uint32_t;  // a request's operation (protocol.h)

class Client {
 public:
  explicit Client(UniqueFd sock);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Root of a tree the gofer serves: "root" is the sandbox's lower root (the default
  // host view or --rootfs); "mount0", "mount1"... are the --mount sources in order.
  // Also reports whether the tree is read-only.
  SysResult<std::pair<Node, bool>> Attach(std::string_view tree);
  // One path component (no '/', not "." or ".."). Never follows a symlink: a symlink
  // comes back as a node with S_IFLNK. ENOENT for masked or absent names.
  SysResult<Node> Walk(Handle dir, std::string_view name);
  // Walk, and in the same round trip the Open a read-only open(2) of the node would make
  // next: O_RDONLY for a regular file (its host FD in `fd`), O_RDONLY|O_DIRECTORY for a
  // directory (no FD). `open_err` is that Open's errno (0: it succeeded); other types
  // are not opened (open_err 0, no FD). A symlink whose target is one name comes with
  // that name walked in the same directory as `sibling`, and the open is the sibling's:
  // the next step of an open(2) that follows the link.
  struct WalkOpened {
    Node node;
    std::optional<Node> sibling;
    int open_err = 0;
    UniqueFd fd;
  };
  SysResult<WalkOpened> WalkOpen(Handle dir, std::string_view name);
  // Several components in one round trip (like 9P's multi-name walk): names[0] from dir,
  // each next one from the node before, while the nodes are directories. `nodes` holds
  // what was walked, in order (at least names[0]'s; its errno is the call's error).
  // `stop_err` is the errno of names[nodes.size()] when the walk failed there, 0 when it
  // reached the end or a file or symlink ended it. With open_last, the last name gets
  // WalkOpen's open (sibling, open_err, fd) when the walk reached it. At most
  // kMaxWalkNames names.
  static constexpr size_t kMaxWalkNames = 16;
  struct WalkedPath {
    std::vector<Node> nodes;
    std::optional<Node> sibling;
    int stop_err = 0;
    int open_err = 0;
    UniqueFd fd;
  };
  SysResult<WalkedPath> WalkPath(Handle dir, const std::vector<std::string_view>& names,
                                 bool open_last);
  // Several names of one directory in one round trip: each walked from dir, in order, up
  // to the first that fails (its errno in `stop_err`; names[0]'s is the call's error).
  // Only `nodes` and `stop_err` are set. At most kMaxWalkNames names.
  SysResult<WalkedPath> WalkSiblings(Handle dir, const std::vector<std::string_view>& names);
  // Opens the node for I/O. flags: O_RDONLY/O_WRONLY/O_RDWR plus O_TRUNC/O_APPEND/
  // O_DIRECTORY; never creates. The returned host FD is the sentry's to keep.
  // For a directory no host FD is donated (a directory FD would expose masked names and
  // allow openat() beneath it): the result is an empty UniqueFd (valid() == false) once
  // the open was permitted; list it with ReadDir. Symlinks: ELOOP. Devices, FIFOs and
  // sockets: EACCES (never opened by the gofer). Write access or O_TRUNC on a read-only
  // tree: EROFS.
  SysResult<UniqueFd> Open(Handle node, int flags);
  // Creates a regular file exclusively and opens it.
  SysResult<std::pair<Node, UniqueFd>> Create(Handle dir, std::string_view name, int flags,
                                              uint32_t mode);
  SysResult<Node> Mkdir(Handle dir, std::string_view name, uint32_t mode);
  SysResult<Node> Symlink(Handle dir, std::string_view name, std::string_view target);
  SysResult<Node> Link(Handle dir, std::string_view name, Handle target);
  // flags: 0 or AT_REMOVEDIR.
  SysStatus Unlink(Handle dir, std::string_view name, int flags);
  // flags: renameat2 flags (RENAME_NOREPLACE, RENAME_EXCHANGE).
  SysStatus Rename(Handle old_dir, std::string_view old_name, Handle new_dir,
                   std::string_view new_name, uint32_t flags);
  SysResult<std::string> Readlink(Handle node);
  SysResult<Attr> Stat(Handle node);
  SysStatus SetAttr(Handle node, const SetAttrRequest& req);
  // All entries except "." and "..", masked names removed.
  SysResult<std::vector<DirEntry>> ReadDir(Handle dir);
  // Releases the handle (best effort; errors are ignored).
  void Close(Handle node);

  // Requests that waited for a response so far (every one but Close).
  uint64_t round_trips() const;
  // The same by operation name ("walk_path" -> 12), operations never sent left out; for
  // the run_end audit record, where each costs the app a gofer round trip.
  std::map<std::string, uint64_t> RoundTripsByOp() const;
  // Counters kept: more than protocol.h's kMaxOp (client.cc checks).
  static constexpr size_t kOpSlots = 32;

 private:
  // WalkPath (op kWalkPath) and WalkSiblings (kWalkSiblings, never open_last): the
  // request, and the checks that the answer is one such a request may get.
  SysResult<WalkedPath> WalkNames(Op op, Handle dir, const std::vector<std::string_view>& names,
                                  bool open_last);
  UniqueFd sock_;
  uint64_t next_tag_ = 1;
  std::array<uint64_t, kOpSlots> trips_by_op_{};  // indexed by Op (protocol.h)
};

}  // namespace usentry::gofer

#endif  // USENTRY_GOFER_CLIENT_H_
