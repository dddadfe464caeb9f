// FileServer operations that read or reopen existing nodes: Attach, Walk, Open, Readlink,
// Stat, SetAttr, ReadDir, Close.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "gofer/file_server.h"
#include "gofer/host_fs.h"

namespace usentry::gofer {
namespace {

// Open flags passed through to the host. Anything that could create or hand back an O_PATH
// FD is refused (EINVAL) before this; the rest (O_NOFOLLOW, O_NONBLOCK, O_CLOEXEC, O_EXCL
// without O_CREAT...) is dropped: the sentry implements those itself.
constexpr int kPassThroughOpenFlags =
    O_ACCMODE | O_TRUNC | O_APPEND | O_DIRECTORY | O_SYNC | O_DSYNC | O_DIRECT | O_NOATIME;
constexpr int kRefusedOpenFlags = O_CREAT | kOTmpfileOnlyBit | O_PATH;

}  // namespace

SysResult<Node> FileServer::Attach(const std::string& tree, bool& read_only) {
  for (size_t i = 0; i < trees_.size(); ++i) {
    if (trees_[i].config.name != tree) continue;
    int fd = ::fcntl(trees_[i].root.get(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return Errno{errno};
    read_only = trees_[i].config.read_only;
    return AddHandle(UniqueFd(fd), i, "");
  }
  return Errno{ENOENT};
}

SysResult<Node> FileServer::Walk(uint64_t dir, const std::string& name) {
  RETURN_IF_ERRNO(ValidateName(name));
  ASSIGN_OR_RETURN_ERRNO(Entry * d, Get(dir));
  if (d->type != S_IFDIR) return Errno{ENOTDIR};
  if (HiddenName(*d, name)) return Errno{ENOENT};
  // A symlink comes back as an O_PATH FD of the link itself: the sentry resolves it in
  // the sandbox's namespace, never the gofer in the host's.
  ASSIGN_OR_RETURN_ERRNO(UniqueFd fd, OpenBeneath(d->fd.get(), name, O_PATH));
  ASSIGN_OR_RETURN_ERRNO(struct stat st, StatFd(fd.get()));
  if (HiddenInode(*d, st.st_dev, st.st_ino)) return Errno{ENOENT};
  return AddHandle(std::move(fd), st, d->tree,
                   d->rel.empty() ? name : absl::StrCat(d->rel, "/", name));
}

void FileServer::WalkOpen(uint64_t dir, const std::string& name, Response& resp, UniqueFd& donate) {
  SysResult<Node> node = Walk(dir, name);
  if (!node.ok()) {
    resp.err = node.error();
    return;
  }
  resp.node = *node;
  OpenWalked(dir, resp.node, resp, donate);
}

void FileServer::WalkPath(uint64_t dir, const std::vector<std::string>& names, uint32_t flags,
                          Response& resp, UniqueFd& donate) {
  uint64_t at = dir;
  for (const std::string& name : names) {
    if (!WalkOneMore(at, name, resp)) return;
    // A file ends the walk; so does a symlink, which only the sentry may resolve.
    if ((resp.nodes.back().attr.mode & S_IFMT) != S_IFDIR) break;
    at = resp.nodes.back().handle;
  }
  if ((flags & kWalkPathOpenLast) && resp.nodes.size() == names.size()) {
    const size_t n = resp.nodes.size();
    OpenWalked(n > 1 ? resp.nodes[n - 2].handle : dir, resp.nodes.back(), resp, donate);
  }
}

void FileServer::WalkSiblings(uint64_t dir, const std::vector<std::string>& names, Response& resp) {
  for (const std::string& name : names) {
    if (!WalkOneMore(dir, name, resp)) return;
  }
}

bool FileServer::WalkOneMore(uint64_t at, const std::string& name, Response& resp) {
  SysResult<Node> node = Walk(at, name);
  if (!node.ok()) {
    (resp.nodes.empty() ? resp.err : resp.stop_err) = node.error();
    return false;
  }
  resp.nodes.push_back(*node);
  return true;
}

void FileServer::OpenWalked(uint64_t dir, const Node& node, Response& resp, UniqueFd& donate) {
  const uint32_t type = node.attr.mode & S_IFMT;
  if (type == S_IFLNK && !resp.has_sibling && ValidateName(node.link_target).ok()) {
    // A library's soname link (libz.so.1 -> libz.so.1.2.13), python3 -> python3.11: the
    // sentry resolves the link itself, in the sandbox's namespace, and its next step is
    // this walk and open, which then costs no round trip of its own. Nothing is
    // followed out of `dir`; a name that does not walk is left to that step to report.
    SysResult<Node> sibling = Walk(dir, node.link_target);
    if (!sibling.ok()) return;
    resp.has_sibling = true;
    resp.sibling = *sibling;
    OpenWalked(dir, resp.sibling, resp, donate);
    return;
  }
  if (type != S_IFREG && type != S_IFDIR) return;
  // Exactly what the sentry's Open of this node would ask.
  SysResult<UniqueFd> fd = Open(node.handle, type == S_IFDIR ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (!fd.ok()) {
    resp.open_err = fd.error();
    return;
  }
  donate = std::move(fd).value();
  resp.has_fd = donate.valid();
}

SysResult<UniqueFd> FileServer::Open(uint64_t node, uint32_t uflags) {
  int flags = static_cast<int>(uflags);
  ASSIGN_OR_RETURN_ERRNO(Entry * e, Get(node));
  int acc = flags & O_ACCMODE;
  if (acc == O_ACCMODE || (flags & kRefusedOpenFlags) != 0) return Errno{EINVAL};
  bool write = acc != O_RDONLY || (flags & O_TRUNC) != 0;
  if (write && TreeOf(*e).config.read_only) return Errno{EROFS};
  // The entry's type, not an fstat: its O_PATH FD pins the inode, whose type never changes.
  const mode_t type = e->type;
  if (type == S_IFLNK) return Errno{ELOOP};
  // Devices, FIFOs and sockets are never opened for the sentry: a device would give it
  // host hardware, and opening a FIFO could block the gofer. EACCES = denied by policy.
  if (type != S_IFREG && type != S_IFDIR) return Errno{EACCES};
  if (type == S_IFDIR && write) return Errno{EISDIR};
  if (type == S_IFREG && (flags & O_DIRECTORY)) return Errno{ENOTDIR};

  // The O_PATH FD pins the inode; reopening through its /proc/self/fd magic link reaches
  // that inode with no path lookup, so nothing can be swapped in between. No O_NOFOLLOW
  // here: the magic link itself is a symlink, and the node was checked not to be one.
  int fd = ::open(ProcFdPath(e->fd.get()).c_str(),
                  (flags & kPassThroughOpenFlags) | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Errno{errno};
  UniqueFd opened(fd);
  ASSIGN_OR_RETURN_ERRNO(struct stat ost, StatFd(opened.get()));
  if (ost.st_dev != e->dev || ost.st_ino != e->ino) return Errno{ESTALE};
  // A host directory FD would let the sentry list masked names and openat() below them;
  // directories are listed with ReadDir instead, so none is donated.
  if (type == S_IFDIR) return UniqueFd();
  return opened;
}

SysResult<std::string> FileServer::Readlink(uint64_t node) {
  ASSIGN_OR_RETURN_ERRNO(Entry * e, Get(node));
  if (e->type != S_IFLNK) return Errno{EINVAL};
  return ReadLinkFd(e->fd.get());
}

SysResult<Attr> FileServer::Stat(uint64_t node) {
  ASSIGN_OR_RETURN_ERRNO(Entry * e, Get(node));
  ASSIGN_OR_RETURN_ERRNO(struct stat st, StatFd(e->fd.get()));
  return ToAttr(st);
}

SysStatus FileServer::SetAttr(uint64_t node, const SetAttrRequest& req) {
  constexpr uint32_t kKnown = kSetMode | kSetUid | kSetGid | kSetSize | kSetAtime | kSetMtime;
  if ((req.mask & ~kKnown) != 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(Entry * e, Get(node));
  if (req.mask == 0) return SysOk();
  if (TreeOf(*e).config.read_only) return Errno{EROFS};
  std::string proc = ProcFdPath(e->fd.get());

  if (req.mask & kSetSize) {
    if (e->type == S_IFDIR) return Errno{EISDIR};
    if (e->type != S_IFREG) return Errno{EINVAL};
    if (req.size < 0) return Errno{EINVAL};
    if (::truncate(proc.c_str(), req.size) != 0) return Errno{errno};
  }
  if (req.mask & kSetMode) {
    // chmod through the magic link would follow a symlink node's target.
    if (e->type == S_IFLNK) return Errno{EOPNOTSUPP};
    // No set-uid/set-gid files from the sandbox on the host: the gofer may run with more
    // privilege than the app. A directory's set-gid bit only steers group inheritance.
    mode_t allowed = e->type == S_IFDIR ? (07777 & ~S_ISUID) : 01777;
    if (::chmod(proc.c_str(), req.mode & allowed) != 0) return Errno{errno};
  }
  if (req.mask & (kSetUid | kSetGid)) {
    uid_t uid = (req.mask & kSetUid) ? req.uid : static_cast<uid_t>(-1);
    gid_t gid = (req.mask & kSetGid) ? req.gid : static_cast<gid_t>(-1);
    if (::fchownat(e->fd.get(), "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
      return Errno{errno};
    }
  }
  if (req.mask & (kSetAtime | kSetMtime)) {
    timespec ts[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
    if (req.mask & kSetAtime) ts[0] = req.atime;
    if (req.mask & kSetMtime) ts[1] = req.mtime;
    if (::utimensat(e->fd.get(), "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
      return Errno{errno};
    }
  }
  return SysOk();
}

SysStatus FileServer::ReadDir(uint64_t dir, uint64_t cursor, Response& resp) {
  ASSIGN_OR_RETURN_ERRNO(Entry * d, Get(dir));
  if (d->type != S_IFDIR) return Errno{ENOTDIR};
  const MaskSet& masks = TreeOf(*d).masks;
  // Most directories are outside every pattern (all of the default masks are under
  // etc/): their names need no check, which cost ~0.35 us a name.
  const bool names_may_hide = ChildNamesMayBeHidden(*d);
  size_t size = kResponseHeaderSize + kReadDirFixedSize;
  uint64_t resume = cursor;
  std::string name_buf;
  SysResult<bool> eof = ListDir(
      d->fd.get(), cursor, [&](std::string_view name, uint64_t ino, uint8_t type, uint64_t next) {
        name_buf.assign(name);
        bool hidden = names_may_hide && HiddenName(*d, name_buf);
        if (!hidden && masks.MayMatchIno(ino)) {
          // getdents reports no device: confirm with a stat before hiding.
          SysResult<struct stat> st = StatAt(d->fd.get(), name_buf);
          hidden = st.ok() && masks.MatchesInode(st->st_dev, st->st_ino);
        }
        if (!hidden) {
          DirEntry de{name_buf, ino, type};
          size_t need = EncodedDirEntrySize(de);
          if (size + need > kMaxMessageSize) return false;  // next page starts here
          size += need;
          resp.entries.push_back(std::move(de));
        }
        resume = next;
        return true;
      });
  if (!eof.ok()) return Errno{eof.error()};
  resp.eof = eof.value();
  resp.next_cursor = resp.eof ? 0 : resume;
  return SysOk();
}

SysStatus FileServer::Close(uint64_t node) {
  if (handles_.erase(node) == 0) return Errno{EBADF};
  return SysOk();
}

}  // namespace usentry::gofer
