// FileServer operations that change a tree: Create, Mkdir, Symlink, Link, Unlink, Rename.
// All are refused on read-only trees and done with *at() calls relative to the parent's
// O_PATH FD and one validated component, never with a path built from the tree root.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "gofer/file_server.h"
#include "gofer/host_fs.h"

namespace usentry::gofer {
namespace {

// Creation modes: no set-uid/set-gid regular files (the gofer may be more privileged
// than the app); a directory keeps set-gid, which only steers group inheritance.
constexpr mode_t kFileModeBits = 01777;
constexpr mode_t kDirModeBits = 03777;

std::string ChildRel(const std::string& rel, const std::string& name) {
  return rel.empty() ? name : absl::StrCat(rel, "/", name);
}

}  // namespace

SysResult<Node> FileServer::CreateFile(uint64_t dir, const std::string& name, uint32_t uflags,
                                       uint32_t mode, UniqueFd& fd_out) {
  int flags = static_cast<int>(uflags);
  RETURN_IF_ERRNO(ValidateName(name));
  ASSIGN_OR_RETURN_ERRNO(Entry * d, Get(dir));
  if (d->type != S_IFDIR) return Errno{ENOTDIR};
  if (TreeOf(*d).config.read_only) return Errno{EROFS};
  int acc = flags & O_ACCMODE;
  if (acc == O_ACCMODE || (flags & (O_DIRECTORY | kOTmpfileOnlyBit | O_PATH)) != 0) {
    return Errno{EINVAL};
  }
  RETURN_IF_ERRNO(CheckCreatable(*d, name));
  int host_flags = (flags & (O_ACCMODE | O_APPEND | O_SYNC | O_DSYNC | O_DIRECT)) | O_CREAT |
                   O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
  int fd = ::openat(d->fd.get(), name.c_str(), host_flags, mode & kFileModeBits);
  if (fd < 0) return Errno{errno};
  UniqueFd file(fd);
  // The owner first: chown clears the set-user-ID bit the mode may ask for.
  if (SysStatus own = GiveToOwner(*d, name); !own.ok()) {
    ::unlinkat(d->fd.get(), name.c_str(), 0);
    return Errno{own.error()};
  }
  // The gofer's umask must not change the mode the sentry (which applied the app's umask)
  // asked for.
  if (::fchmod(file.get(), mode & kFileModeBits) != 0) {
    int err = errno;
    ::unlinkat(d->fd.get(), name.c_str(), 0);
    return Errno{err};
  }
  // The handle is derived from the opened file, not a second lookup of the name.
  int path_fd = ::open(ProcFdPath(file.get()).c_str(), O_PATH | O_CLOEXEC);
  SysResult<Node> node = path_fd < 0
                             ? SysResult<Node>(Errno{errno})
                             : AddHandle(UniqueFd(path_fd), d->tree, ChildRel(d->rel, name));
  if (!node.ok()) {
    ::unlinkat(d->fd.get(), name.c_str(), 0);
    return node;
  }
  fd_out = std::move(file);
  return node;
}

SysStatus FileServer::GiveToOwner(const Entry& dir, const std::string& name) const {
  if (!new_owner_) return SysOk();
  struct stat ds;
  if (::fstat(dir.fd.get(), &ds) != 0) return Errno{errno};
  // As Linux gives a new entry the group of a set-group-ID directory.
  const gid_t gid = (ds.st_mode & S_ISGID) ? ds.st_gid : new_owner_->gid;
  if (::fchownat(dir.fd.get(), name.c_str(), new_owner_->uid, gid, AT_SYMLINK_NOFOLLOW) != 0) {
    return Errno{errno};
  }
  return SysOk();
}

SysResult<Node> FileServer::Mkdir(uint64_t dir, const std::string& name, uint32_t mode) {
  RETURN_IF_ERRNO(ValidateName(name));
  ASSIGN_OR_RETURN_ERRNO(Entry * d, Get(dir));
  if (d->type != S_IFDIR) return Errno{ENOTDIR};
  if (TreeOf(*d).config.read_only) return Errno{EROFS};
  RETURN_IF_ERRNO(CheckCreatable(*d, name));
  if (::mkdirat(d->fd.get(), name.c_str(), mode & kDirModeBits) != 0) return Errno{errno};
  if (SysStatus own = GiveToOwner(*d, name); !own.ok()) {
    ::unlinkat(d->fd.get(), name.c_str(), AT_REMOVEDIR);
    return Errno{own.error()};
  }
  ASSIGN_OR_RETURN_ERRNO(UniqueFd fd, OpenBeneath(d->fd.get(), name, O_PATH | O_DIRECTORY));
  // Undo the gofer's umask (see CreateFile).
  if (::chmod(ProcFdPath(fd.get()).c_str(), mode & kDirModeBits) != 0) return Errno{errno};
  return AddHandle(std::move(fd), d->tree, ChildRel(d->rel, name));
}

SysResult<Node> FileServer::Symlink(uint64_t dir, const std::string& name,
                                    const std::string& target) {
  RETURN_IF_ERRNO(ValidateName(name));
  RETURN_IF_ERRNO(ValidateSymlinkTarget(target));
  ASSIGN_OR_RETURN_ERRNO(Entry * d, Get(dir));
  if (d->type != S_IFDIR) return Errno{ENOTDIR};
  if (TreeOf(*d).config.read_only) return Errno{EROFS};
  RETURN_IF_ERRNO(CheckCreatable(*d, name));
  // The target is stored verbatim; it is only ever interpreted by the sentry.
  if (::symlinkat(target.c_str(), d->fd.get(), name.c_str()) != 0) return Errno{errno};
  if (SysStatus own = GiveToOwner(*d, name); !own.ok()) {
    ::unlinkat(d->fd.get(), name.c_str(), 0);
    return Errno{own.error()};
  }
  return WalkCreated(*d, name);
}

SysResult<Node> FileServer::Link(uint64_t dir, const std::string& name, uint64_t target) {
  RETURN_IF_ERRNO(ValidateName(name));
  ASSIGN_OR_RETURN_ERRNO(Entry * d, Get(dir));
  ASSIGN_OR_RETURN_ERRNO(Entry * t, Get(target));
  if (d->type != S_IFDIR) return Errno{ENOTDIR};
  if (t->tree != d->tree) return Errno{EXDEV};
  if (TreeOf(*d).config.read_only) return Errno{EROFS};
  if (t->type == S_IFDIR) return Errno{EPERM};
  RETURN_IF_ERRNO(CheckCreatable(*d, name));
  if (::linkat(t->fd.get(), "", d->fd.get(), name.c_str(), AT_EMPTY_PATH) != 0) {
    // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH (ENOENT without it). Linking through the
    // magic link reaches the same inode; a symlink node is linked, not followed.
    if (errno != ENOENT || ::linkat(AT_FDCWD, ProcFdPath(t->fd.get()).c_str(), d->fd.get(),
                                    name.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      return Errno{errno};
    }
  }
  return WalkCreated(*d, name);
}

SysStatus FileServer::Unlink(uint64_t dir, const std::string& name, uint32_t flags) {
  RETURN_IF_ERRNO(ValidateName(name));
  if ((flags & ~static_cast<uint32_t>(AT_REMOVEDIR)) != 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(Entry * d, Get(dir));
  if (d->type != S_IFDIR) return Errno{ENOTDIR};
  if (TreeOf(*d).config.read_only) return Errno{EROFS};
  RETURN_IF_ERRNO(CheckVisible(*d, name));
  if (::unlinkat(d->fd.get(), name.c_str(), static_cast<int>(flags)) != 0) return Errno{errno};
  return SysOk();
}

SysStatus FileServer::Rename(uint64_t old_dir, const std::string& old_name, uint64_t new_dir,
                             const std::string& new_name, uint32_t flags) {
  RETURN_IF_ERRNO(ValidateName(old_name));
  RETURN_IF_ERRNO(ValidateName(new_name));
  if ((flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) != 0 ||
      flags == (RENAME_NOREPLACE | RENAME_EXCHANGE)) {
    return Errno{EINVAL};
  }
  ASSIGN_OR_RETURN_ERRNO(Entry * od, Get(old_dir));
  ASSIGN_OR_RETURN_ERRNO(Entry * nd, Get(new_dir));
  if (od->type != S_IFDIR || nd->type != S_IFDIR) return Errno{ENOTDIR};
  if (od->tree != nd->tree) return Errno{EXDEV};
  if (TreeOf(*od).config.read_only) return Errno{EROFS};
  bool exchange = (flags & RENAME_EXCHANGE) != 0;
  RETURN_IF_ERRNO(CheckVisible(*od, old_name));
  RETURN_IF_ERRNO(exchange ? CheckVisible(*nd, new_name) : CheckCreatable(*nd, new_name));
  std::string old_rel = ChildRel(od->rel, old_name);
  std::string new_rel = ChildRel(nd->rel, new_name);
  // Moving a directory that holds masked paths would expose them under the new path.
  const MaskSet& masks = TreeOf(*od).masks;
  if (masks.IsAncestorOfMask(old_rel) || (exchange && masks.IsAncestorOfMask(new_rel))) {
    return Errno{EACCES};
  }
  if (::renameat2(od->fd.get(), old_name.c_str(), nd->fd.get(), new_name.c_str(), flags) != 0) {
    return Errno{errno};
  }
  size_t tree = od->tree;
  if (exchange) {
    // Three-way swap through a name no real path can have (NUL is never in a path).
    std::string tmp("\0swap", 5);
    RenameHandles(tree, old_rel, tmp);
    RenameHandles(tree, new_rel, old_rel);
    RenameHandles(tree, tmp, new_rel);
  } else {
    RenameHandles(tree, old_rel, new_rel);
  }
  return SysOk();
}

}  // namespace usentry::gofer
