// tmpfs inodes: directories, symlinks, device nodes and the byte budget. Regular-file
// data and the file description are in tmpfs_file.cc.
#include "sentry/fsimpl/tmpfs.h"

#include <linux/fs.h>

namespace usentry::sentry::fsimpl {

using vfs::Attr;
using vfs::DirEntry;
using vfs::Inode;

SysStatus ByteBudget::Resize(uint64_t old_bytes, uint64_t new_bytes) {
  if (new_bytes > old_bytes) {
    uint64_t grow = new_bytes - old_bytes;
    if (used + grow > limit || used + grow < used) {
      if (on_exhausted) on_exhausted(limit, used + grow);
      return Errno{ENOSPC};
    }
    used += grow;
  } else {
    used -= std::min(used, old_bytes - new_bytes);
  }
  return SysOk();
}

TmpfsFilesystem::TmpfsFilesystem(std::shared_ptr<ByteBudget> budget, mm::MemoryFile* mf)
    : vfs::Filesystem("tmpfs"), budget_(std::move(budget)), mf_(mf) {}

std::shared_ptr<Inode> TmpfsFilesystem::NewRoot(uint32_t mode, uint32_t uid, uint32_t gid) {
  return std::make_shared<TmpfsInode>(this, S_IFDIR | (mode & 07777), uid, gid);
}

SysResult<struct statfs> TmpfsFilesystem::StatFs() {
  struct statfs s {};
  s.f_type = 0x01021994;  // TMPFS_MAGIC
  s.f_bsize = 4096;
  s.f_frsize = 4096;
  s.f_blocks = budget_->limit / 4096;
  s.f_bfree = s.f_bavail = (budget_->limit - std::min(budget_->used, budget_->limit)) / 4096;
  s.f_files = 1 << 20;
  s.f_ffree = (1 << 20) - std::min<uint64_t>(next_ino_, 1 << 20);
  s.f_namelen = 255;
  return s;
}

TmpfsInode::TmpfsInode(TmpfsFilesystem* fs, uint32_t mode, uint32_t uid, uint32_t gid)
    : fs_(fs), data_(fs->memory_file(), kTmpfsMaxFileSize, [fs](int64_t delta) {
        return fs->budget().Charge(delta);
      }) {
  attr_.dev = fs->dev();
  attr_.ino = fs->NextIno();
  attr_.mode = mode;
  attr_.uid = uid;
  attr_.gid = gid;
  attr_.nlink = (mode & S_IFMT) == S_IFDIR ? 2 : 1;
  attr_.atime = attr_.mtime = attr_.ctime = vfs::NowTimespec();
}

// The data (and its charge) goes with the last reference: unlinked files stay readable
// while open or mapped.
TmpfsInode::~TmpfsInode() = default;

SysResult<Attr> TmpfsInode::Stat() {
  Attr a = attr_;
  switch (a.mode & S_IFMT) {
    case S_IFREG:
      a.size = static_cast<int64_t>(data_.size());
      break;
    case S_IFLNK:
      a.size = static_cast<int64_t>(target_.size());
      break;
    case S_IFDIR:
      a.size = 4096;
      break;
    default:
      a.size = 0;
  }
  a.blocks = (a.mode & S_IFMT) == S_IFREG ? static_cast<int64_t>(data_.charged_bytes() / 512)
                                          : ((a.size + 4095) / 4096) * 8;
  return a;
}

void TmpfsInode::TouchAtime() { attr_.atime = vfs::NowTimespec(); }
void TmpfsInode::TouchMtime() { attr_.mtime = attr_.ctime = vfs::NowTimespec(); }
void TmpfsInode::TouchCtime() { attr_.ctime = vfs::NowTimespec(); }

SysStatus TmpfsInode::SetAttr(const vfs::SetAttrRequest& req) {
  struct timespec now = vfs::NowTimespec();
  if (req.mask & vfs::kSetSize) {
    if (FileType() != S_IFREG) return Errno{EINVAL};
    if (static_cast<uint64_t>(req.size) != data_.size()) {
      RETURN_IF_ERRNO(Truncate(req.size));
    }
    attr_.mtime = now;  // truncate updates mtime even without a size change (open O_TRUNC)
  }
  if (req.mask & vfs::kSetMode) attr_.mode = (attr_.mode & S_IFMT) | (req.mode & 07777);
  if (req.mask & vfs::kSetUid) attr_.uid = req.uid;
  if (req.mask & vfs::kSetGid) attr_.gid = req.gid;
  if (req.mask & vfs::kSetAtime) attr_.atime = req.atime.tv_nsec == UTIME_NOW ? now : req.atime;
  if (req.mask & vfs::kSetMtime) attr_.mtime = req.mtime.tv_nsec == UTIME_NOW ? now : req.mtime;
  attr_.ctime = now;
  return SysOk();
}

SysResult<std::shared_ptr<Inode>> TmpfsInode::Lookup(std::string_view name) {
  if (!IsDir()) return Errno{ENOTDIR};
  auto it = children_.find(name);
  if (it == children_.end()) return Errno{ENOENT};
  return std::shared_ptr<Inode>(it->second);
}

SysResult<std::shared_ptr<TmpfsInode>> TmpfsInode::AddChild(std::string_view name, uint32_t mode,
                                                            uint32_t uid, uint32_t gid) {
  if (!IsDir()) return Errno{ENOTDIR};
  if (attr_.nlink == 0) return Errno{ENOENT};  // creating in a removed directory
  if (children_.count(name)) return Errno{EEXIST};
  auto child = std::make_shared<TmpfsInode>(fs_, mode, uid, gid);
  children_.emplace(std::string(name), child);
  TouchMtime();
  return child;
}

SysResult<std::shared_ptr<Inode>> TmpfsInode::Create(std::string_view name, uint32_t mode,
                                                     uint32_t uid, uint32_t gid) {
  ASSIGN_OR_RETURN_ERRNO(auto c, AddChild(name, S_IFREG | (mode & 07777), uid, gid));
  return std::shared_ptr<Inode>(c);
}

SysResult<std::shared_ptr<Inode>> TmpfsInode::Mkdir(std::string_view name, uint32_t mode,
                                                    uint32_t uid, uint32_t gid) {
  ASSIGN_OR_RETURN_ERRNO(auto c, AddChild(name, S_IFDIR | (mode & 07777), uid, gid));
  attr_.nlink++;
  return std::shared_ptr<Inode>(c);
}

SysResult<std::shared_ptr<Inode>> TmpfsInode::Symlink(std::string_view name,
                                                      std::string_view target, uint32_t uid,
                                                      uint32_t gid) {
  ASSIGN_OR_RETURN_ERRNO(auto c, AddChild(name, S_IFLNK | 0777, uid, gid));
  c->target_ = std::string(target);
  return std::shared_ptr<Inode>(c);
}

SysResult<std::shared_ptr<Inode>> TmpfsInode::Mknod(std::string_view name, uint32_t mode,
                                                    uint64_t rdev, uint32_t uid, uint32_t gid) {
  ASSIGN_OR_RETURN_ERRNO(auto c, AddChild(name, mode, uid, gid));
  c->attr_.rdev = rdev;
  return std::shared_ptr<Inode>(c);
}

SysStatus TmpfsInode::Link(std::string_view name, Inode& target) {
  if (!IsDir()) return Errno{ENOTDIR};
  auto* t = dynamic_cast<TmpfsInode*>(&target);
  if (!t || t->fs_ != fs_) return Errno{EXDEV};
  if (t->IsDir()) return Errno{EPERM};
  if (t->attr_.nlink == 0) return Errno{ENOENT};
  if (children_.count(name)) return Errno{EEXIST};
  children_.emplace(std::string(name), std::static_pointer_cast<TmpfsInode>(t->shared_from_this()));
  t->attr_.nlink++;
  t->TouchCtime();
  TouchMtime();
  return SysOk();
}

SysStatus TmpfsInode::Unlink(std::string_view name) {
  if (!IsDir()) return Errno{ENOTDIR};
  auto it = children_.find(name);
  if (it == children_.end()) return Errno{ENOENT};
  if (it->second->IsDir()) return Errno{EISDIR};
  it->second->attr_.nlink--;
  it->second->TouchCtime();
  children_.erase(it);
  TouchMtime();
  return SysOk();
}

SysStatus TmpfsInode::Rmdir(std::string_view name) {
  if (!IsDir()) return Errno{ENOTDIR};
  auto it = children_.find(name);
  if (it == children_.end()) return Errno{ENOENT};
  TmpfsInode& c = *it->second;
  if (!c.IsDir()) return Errno{ENOTDIR};
  if (!c.children_.empty()) return Errno{ENOTEMPTY};
  c.attr_.nlink = 0;
  c.TouchCtime();
  children_.erase(it);
  attr_.nlink--;
  TouchMtime();
  return SysOk();
}

SysStatus TmpfsInode::Rename(std::string_view old_name, Inode& new_dir_inode,
                             std::string_view new_name, uint32_t flags) {
  auto* nd = dynamic_cast<TmpfsInode*>(&new_dir_inode);
  if (!nd || nd->fs_ != fs_) return Errno{EXDEV};
  if (!IsDir() || !nd->IsDir()) return Errno{ENOTDIR};
  auto sit = children_.find(old_name);
  if (sit == children_.end()) return Errno{ENOENT};
  std::shared_ptr<TmpfsInode> src = sit->second;
  auto dit = nd->children_.find(new_name);
  std::shared_ptr<TmpfsInode> dst = dit == nd->children_.end() ? nullptr : dit->second;
  if (dst == src) return SysOk();
  bool cross = nd != this;
  if (flags & RENAME_EXCHANGE) {
    if (!dst) return Errno{ENOENT};
    sit->second = dst;
    dit->second = src;
    if (cross && src->IsDir() != dst->IsDir()) {
      // The directory among the two changed parents.
      if (src->IsDir())
        attr_.nlink--, nd->attr_.nlink++;
      else
        attr_.nlink++, nd->attr_.nlink--;
    }
  } else {
    if (dst) {
      if (flags & RENAME_NOREPLACE) return Errno{EEXIST};
      if (src->IsDir() && !dst->IsDir()) return Errno{ENOTDIR};
      if (!src->IsDir() && dst->IsDir()) return Errno{EISDIR};
      if (dst->IsDir()) {
        if (!dst->children_.empty()) return Errno{ENOTEMPTY};
        dst->attr_.nlink = 0;
        nd->attr_.nlink--;
      } else {
        dst->attr_.nlink--;
      }
      dst->TouchCtime();
      nd->children_.erase(dit);
    }
    children_.erase(sit);
    nd->children_.emplace(std::string(new_name), src);
    if (cross && src->IsDir()) attr_.nlink--, nd->attr_.nlink++;
  }
  src->TouchCtime();
  TouchMtime();
  if (cross) nd->TouchMtime();
  return SysOk();
}

SysResult<std::vector<DirEntry>> TmpfsInode::ReadDir() {
  if (!IsDir()) return Errno{ENOTDIR};
  std::vector<DirEntry> out;
  out.reserve(children_.size());
  for (const auto& [name, c] : children_) {
    out.push_back(DirEntry{name, c->attr_.ino, vfs::DirentTypeOf(c->attr_.mode)});
  }
  return out;
}

SysResult<std::string> TmpfsInode::Readlink() {
  if (!IsSymlink()) return Errno{EINVAL};
  TouchAtime();
  return target_;
}

SysResult<std::string> TmpfsInode::GetXattr(std::string_view name) {
  auto it = xattrs_.find(name);
  if (it == xattrs_.end()) return Errno{ENODATA};
  return it->second;
}

SysStatus TmpfsInode::SetXattr(std::string_view name, std::string_view value) {
  xattrs_[std::string(name)] = std::string(value);
  TouchCtime();
  return SysOk();
}

}  // namespace usentry::sentry::fsimpl
