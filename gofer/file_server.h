// FileServer: the gofer server's state (trees, handle table) and one method per request.
// Internal to gofer/: Serve() owns one and feeds it decoded requests. Single-threaded.
#ifndef USENTRY_GOFER_FILE_SERVER_H_
#define USENTRY_GOFER_FILE_SERVER_H_

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "base/sys_result.h"
#include "base/unique_fd.h"
#include "gofer/client.h"
#include "gofer/mask.h"
#include "gofer/protocol.h"
#include "gofer/server.h"

namespace usentry::gofer {

// Live handles are bounded so a hostile sentry cannot grow the gofer without limit (the
// FD rlimit usually bites first).
inline constexpr size_t kMaxHandles = size_t{1} << 20;

// O_TMPFILE is this bit plus O_DIRECTORY (glibc's __O_TMPFILE includes O_DIRECTORY too), so
// refusing O_TMPFILE means testing this bit alone, not O_DIRECTORY.
inline constexpr int kOTmpfileOnlyBit = 020000000;

class FileServer {
 public:
  // Opens every tree root and resolves its masks. max_handles bounds the handle table
  // (ENFILE beyond it); tests lower it.
  static absl::StatusOr<std::unique_ptr<FileServer>> Create(const GoferConfig& config,
                                                            size_t max_handles = kMaxHandles);

  // Executes req. On success fills resp's payload and, for Open/Create, *donate with the
  // FD to send; on failure sets resp.err. resp.tag/op are set by the caller.
  void Handle(const Request& req, Response& resp, UniqueFd& donate);

  size_t live_handles() const { return handles_.size(); }

 private:
  struct Tree {
    TreeConfig config;
    UniqueFd root;  // O_PATH|O_DIRECTORY
    MaskSet masks;
  };
  std::optional<GoferConfig::Owner> new_owner_;
  struct Entry {
    UniqueFd fd;      // O_PATH|O_NOFOLLOW, owned
    size_t tree = 0;  // index in trees_
    std::string rel;  // path relative to the tree root, "" for the root
    mode_t type = 0;  // S_IFMT of the inode (fixed for the FD's lifetime)
    dev_t dev = 0;    // the inode's identity, fixed too: what Open checks its reopen against
    ino_t ino = 0;
  };

  FileServer() = default;

  SysResult<Entry*> Get(uint64_t handle);
  // Gives entry `name` of `dir` (just created) to GoferConfig::new_owner, if set.
  SysStatus GiveToOwner(const Entry& dir, const std::string& name) const;
  const Tree& TreeOf(const Entry& e) const { return trees_[e.tree]; }
  // Registers fd (an O_PATH FD of the new node) and returns its Node.
  SysResult<Node> AddHandle(UniqueFd fd, size_t tree, std::string rel);
  // The same, with `st` already made of fd (a walk stats it to check the masks).
  SysResult<Node> AddHandle(UniqueFd fd, const struct stat& st, size_t tree, std::string rel);
  // ENOENT-worthy: outside the root allowlist or matching a mask path.
  bool HiddenName(const Entry& dir, const std::string& name) const;
  // False when HiddenName is false for every name in `dir`: no root allowlist applies
  // and no mask pattern matches dir, an ancestor of it, or a path below it.
  bool ChildNamesMayBeHidden(const Entry& dir) const;
  bool HiddenInode(const Entry& dir, uint64_t dev, uint64_t ino) const;
  // For create-like ops: EACCES if the name is hidden (present or not) so that creating
  // over a masked file neither succeeds nor reveals it.
  SysStatus CheckCreatable(const Entry& dir, const std::string& name) const;
  // For ops on an existing name: ENOENT if hidden by name or by inode.
  SysStatus CheckVisible(const Entry& dir, const std::string& name) const;
  SysResult<Node> WalkCreated(Entry& dir, const std::string& name);
  void RenameHandles(size_t tree, const std::string& from, const std::string& to);

  // Node ops (file_server_nodes.cc).
  SysResult<Node> Attach(const std::string& tree, bool& read_only);
  SysResult<Node> Walk(uint64_t dir, const std::string& name);
  // Walk, then a read-only Open of the node if it is a regular file or a directory: its
  // errno in resp.open_err, a regular file's FD in *donate.
  void WalkOpen(uint64_t dir, const std::string& name, Response& resp, UniqueFd& donate);
  // Walks names from dir one at a time, as Walk does, while the nodes are directories;
  // then, with kWalkPathOpenLast, opens the last name as WalkOpen does (resp's WalkPath
  // fields, see protocol.h).
  void WalkPath(uint64_t dir, const std::vector<std::string>& names, uint32_t flags, Response& resp,
                UniqueFd& donate);
  // Walks each of `names` from dir, as Walk does, up to the first that fails (resp's
  // WalkSiblings fields, see protocol.h).
  void WalkSiblings(uint64_t dir, const std::vector<std::string>& names, Response& resp);
  // WalkPath's and WalkSiblings' step: walks `name` from `at` onto resp.nodes, or sets
  // the error of the walk (names[0]'s as the call's, a later name's as stop_err) and
  // returns false.
  bool WalkOneMore(uint64_t at, const std::string& name, Response& resp);
  // WalkOpen's open: the read-only Open a read-only open(2) of `node` makes next. A
  // symlink `node` in `dir` whose target is one name is followed that one step: the
  // target is walked in `dir` and opened instead (resp.sibling, see protocol.h).
  void OpenWalked(uint64_t dir, const Node& node, Response& resp, UniqueFd& donate);
  SysResult<UniqueFd> Open(uint64_t node, uint32_t flags);
  SysResult<std::string> Readlink(uint64_t node);
  SysResult<Attr> Stat(uint64_t node);
  SysStatus SetAttr(uint64_t node, const SetAttrRequest& req);
  SysStatus ReadDir(uint64_t dir, uint64_t cursor, Response& resp);
  SysStatus Close(uint64_t node);

  // Mutations (file_server_mutations.cc).
  SysResult<Node> CreateFile(uint64_t dir, const std::string& name, uint32_t flags, uint32_t mode,
                             UniqueFd& fd_out);
  SysResult<Node> Mkdir(uint64_t dir, const std::string& name, uint32_t mode);
  SysResult<Node> Symlink(uint64_t dir, const std::string& name, const std::string& target);
  SysResult<Node> Link(uint64_t dir, const std::string& name, uint64_t target);
  SysStatus Unlink(uint64_t dir, const std::string& name, uint32_t flags);
  SysStatus Rename(uint64_t old_dir, const std::string& old_name, uint64_t new_dir,
                   const std::string& new_name, uint32_t flags);

  std::vector<Tree> trees_;
  std::unordered_map<uint64_t, Entry> handles_;
  uint64_t next_handle_ = 1;
  size_t max_handles_ = kMaxHandles;
};

// struct stat -> wire Attr.
Attr ToAttr(const struct stat& st);

}  // namespace usentry::gofer

#endif  // USENTRY_GOFER_FILE_SERVER_H_
