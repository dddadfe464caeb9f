// FileServer set-up, request dispatch and the handle table (see file_server.h).
#include "gofer/file_server.h"

#include <fcntl.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gofer/host_fs.h"

namespace usentry::gofer {

Attr ToAttr(const struct stat& st) {
  Attr a;
  a.dev = st.st_dev;
  a.ino = st.st_ino;
  a.mode = st.st_mode;
  a.nlink = st.st_nlink;
  a.uid = st.st_uid;
  a.gid = st.st_gid;
  a.rdev = st.st_rdev;
  a.size = st.st_size;
  a.blocks = st.st_blocks;
  a.blksize = static_cast<uint32_t>(st.st_blksize);
  a.atime = st.st_atim;
  a.mtime = st.st_mtim;
  a.ctime = st.st_ctim;
  return a;
}

absl::StatusOr<std::unique_ptr<FileServer>> FileServer::Create(const GoferConfig& config,
                                                               size_t max_handles) {
  std::unique_ptr<FileServer> server(new FileServer());
  server->max_handles_ = max_handles;
  server->new_owner_ = config.new_owner;
  for (const TreeConfig& tc : config.trees) {
    for (const Tree& t : server->trees_) {
      if (t.config.name == tc.name) {
        return absl::InvalidArgumentError(absl::StrCat("gofer tree \"", tc.name, "\" twice"));
      }
    }
    Tree tree;
    tree.config = tc;
    // The configured host path is trusted (it comes from the policy), so following
    // symlinks in it is fine; everything below it is resolved one component at a time.
    int fd = ::open(tc.host_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      return ErrnoStatus(absl::StrCat("open(\"", tc.host_path, "\", O_PATH|O_DIRECTORY)"));
    }
    tree.root.reset(fd);
    absl::StatusOr<MaskSet> masks = MaskSet::Build(fd, tc.masks);
    if (!masks.ok()) {
      return absl::Status(masks.status().code(), absl::StrCat("masks of tree \"", tc.name,
                                                              "\": ", masks.status().message()));
    }
    tree.masks = std::move(masks).value();
    server->trees_.push_back(std::move(tree));
  }
  return server;
}

void FileServer::Handle(const Request& req, Response& resp, UniqueFd& donate) {
  auto set_node = [&](SysResult<Node> r) {
    if (r.ok()) {
      resp.node = r.value();
    } else {
      resp.err = r.error();
    }
  };
  auto set_status = [&](SysStatus s) { resp.err = s.error(); };
  switch (req.op) {
    case Op::kAttach:
      set_node(Attach(req.name, resp.read_only));
      break;
    case Op::kWalk:
      set_node(Walk(req.handle, req.name));
      break;
    case Op::kWalkOpen:
      WalkOpen(req.handle, req.name, resp, donate);
      break;
    case Op::kWalkPath:
      WalkPath(req.handle, req.names, req.flags, resp, donate);
      break;
    case Op::kWalkSiblings:
      WalkSiblings(req.handle, req.names, resp);
      break;
    case Op::kOpen: {
      SysResult<UniqueFd> fd = Open(req.handle, req.flags);
      if (!fd.ok()) {
        resp.err = fd.error();
      } else {
        donate = std::move(fd).value();
        resp.has_fd = donate.valid();
      }
      break;
    }
    case Op::kCreate:
      set_node(CreateFile(req.handle, req.name, req.flags, req.mode, donate));
      resp.has_fd = resp.err == 0 && donate.valid();
      break;
    case Op::kMkdir:
      set_node(Mkdir(req.handle, req.name, req.mode));
      break;
    case Op::kSymlink:
      set_node(Symlink(req.handle, req.name, req.name2));
      break;
    case Op::kLink:
      set_node(Link(req.handle, req.name, req.handle2));
      break;
    case Op::kUnlink:
      set_status(Unlink(req.handle, req.name, req.flags));
      break;
    case Op::kRename:
      set_status(Rename(req.handle, req.name, req.handle2, req.name2, req.flags));
      break;
    case Op::kReadlink: {
      SysResult<std::string> r = Readlink(req.handle);
      if (r.ok()) {
        resp.text = std::move(r).value();
      } else {
        resp.err = r.error();
      }
      break;
    }
    case Op::kStat: {
      SysResult<Attr> r = Stat(req.handle);
      if (r.ok()) {
        resp.node.attr = r.value();
      } else {
        resp.err = r.error();
      }
      break;
    }
    case Op::kSetAttr:
      set_status(SetAttr(req.handle, req.setattr));
      break;
    case Op::kReadDir:
      set_status(ReadDir(req.handle, req.cursor, resp));
      break;
    case Op::kClose:
      set_status(Close(req.handle));
      break;
    case Op::kInvalid:
      resp.err = EINVAL;
      break;
  }
  if (resp.err != 0) donate.reset();
}

SysResult<FileServer::Entry*> FileServer::Get(uint64_t handle) {
  auto it = handles_.find(handle);
  if (it == handles_.end()) return Errno{EBADF};
  return &it->second;
}

SysResult<Node> FileServer::AddHandle(UniqueFd fd, size_t tree, std::string rel) {
  ASSIGN_OR_RETURN_ERRNO(struct stat st, StatFd(fd.get()));
  return AddHandle(std::move(fd), st, tree, std::move(rel));
}

SysResult<Node> FileServer::AddHandle(UniqueFd fd, const struct stat& st, size_t tree,
                                      std::string rel) {
  if (handles_.size() >= max_handles_) return Errno{ENFILE};
  uint64_t h = next_handle_++;
  Entry e;
  e.fd = std::move(fd);
  e.tree = tree;
  e.rel = std::move(rel);
  e.type = st.st_mode & S_IFMT;
  e.dev = st.st_dev;
  e.ino = st.st_ino;
  Node node{h, ToAttr(st), {}};
  if (S_ISLNK(st.st_mode)) {
    ASSIGN_OR_RETURN_ERRNO(node.link_target, ReadLinkFd(e.fd.get()));
  }
  handles_.emplace(h, std::move(e));
  return node;
}

static std::string ChildRel(const std::string& rel, const std::string& name) {
  return rel.empty() ? name : absl::StrCat(rel, "/", name);
}

bool FileServer::HiddenName(const Entry& dir, const std::string& name) const {
  const Tree& t = TreeOf(dir);
  if (dir.rel.empty() && t.config.top_level_allowlist.has_value() &&
      t.config.top_level_allowlist->count(name) == 0) {
    return true;
  }
  return t.masks.MatchesPath(ChildRel(dir.rel, name));
}

bool FileServer::ChildNamesMayBeHidden(const Entry& dir) const {
  const Tree& t = TreeOf(dir);
  if (dir.rel.empty() && t.config.top_level_allowlist.has_value()) return true;
  return t.masks.MatchesPath(dir.rel) || t.masks.IsAncestorOfMask(dir.rel);
}

bool FileServer::HiddenInode(const Entry& dir, uint64_t dev, uint64_t ino) const {
  return TreeOf(dir).masks.MatchesInode(dev, ino);
}

SysStatus FileServer::CheckCreatable(const Entry& dir, const std::string& name) const {
  if (HiddenName(dir, name)) return Errno{EACCES};
  SysResult<struct stat> st = StatAt(dir.fd.get(), name);
  if (st.ok() && HiddenInode(dir, st->st_dev, st->st_ino)) return Errno{EACCES};
  return SysOk();
}

SysStatus FileServer::CheckVisible(const Entry& dir, const std::string& name) const {
  if (HiddenName(dir, name)) return Errno{ENOENT};
  SysResult<struct stat> st = StatAt(dir.fd.get(), name);
  if (st.ok() && HiddenInode(dir, st->st_dev, st->st_ino)) return Errno{ENOENT};
  return SysOk();
}

SysResult<Node> FileServer::WalkCreated(Entry& dir, const std::string& name) {
  ASSIGN_OR_RETURN_ERRNO(UniqueFd fd, OpenBeneath(dir.fd.get(), name, O_PATH));
  return AddHandle(std::move(fd), dir.tree, ChildRel(dir.rel, name));
}

void FileServer::RenameHandles(size_t tree, const std::string& from, const std::string& to) {
  // Mask matching uses each handle's relative path, so paths of moved handles (and of
  // everything beneath a moved directory) must follow the rename.
  for (auto& [h, e] : handles_) {
    if (e.tree != tree) continue;
    if (e.rel == from) {
      e.rel = to;
    } else if (e.rel.size() > from.size() && e.rel.compare(0, from.size(), from) == 0 &&
               e.rel[from.size()] == '/') {
      e.rel = to + e.rel.substr(from.size());
    }
  }
}

}  // namespace usentry::gofer
