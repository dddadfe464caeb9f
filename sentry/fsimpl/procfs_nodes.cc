// procfs building blocks: generated files, computed symlinks and directories.
#include "sentry/fsimpl/procfs_nodes.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>

#include "sentry/fsimpl/procfs.h"

namespace usentry::sentry::fsimpl {
namespace {

class ProcInode : public vfs::Inode {
 public:
  ProcInode(std::shared_ptr<vfs::Filesystem> fs, std::string_view key, uint32_t mode,
            ProcOwner owner)
      : fs_(std::move(fs)) {
    attr_.dev = fs_->dev();
    attr_.ino = ProcIno(key);
    attr_.mode = mode;
    attr_.uid = owner.uid;
    attr_.gid = owner.gid;
    attr_.nlink = (mode & S_IFMT) == S_IFDIR ? 2 : 1;
    attr_.blksize = 1024;
    attr_.atime = attr_.mtime = attr_.ctime = vfs::NowTimespec();
  }
  vfs::Filesystem& fs() override { return *fs_; }
  SysResult<vfs::Attr> Stat() override { return attr_; }
  // procfs attributes are fixed (chmod/chown of /proc files: EPERM, as for most).
  SysStatus SetAttr(const vfs::SetAttrRequest&) override { return Errno{EPERM}; }
  uint32_t FileType() override { return attr_.mode & S_IFMT; }

 protected:
  std::shared_ptr<vfs::Filesystem> fs_;
  vfs::Attr attr_;
};

class ProcFileInode : public ProcInode {
 public:
  ProcFileInode(std::shared_ptr<vfs::Filesystem> fs, std::string_view key, ProcOwner owner,
                ProcContent content, uint32_t mode)
      : ProcInode(std::move(fs), key, S_IFREG | mode, owner), content_(std::move(content)) {}
  SysResult<std::shared_ptr<vfs::FileDescription>> Open(const vfs::Path& path, int flags) override {
    if ((flags & O_ACCMODE) != O_RDONLY) return Errno{EACCES};
    ASSIGN_OR_RETURN_ERRNO(std::string data, content_());
    return std::shared_ptr<vfs::FileDescription>(
        std::make_shared<ProcSnapshotDescription>(path, flags, std::move(data)));
  }

 private:
  ProcContent content_;
};

class ProcSymlinkInode : public ProcInode {
 public:
  ProcSymlinkInode(std::shared_ptr<vfs::Filesystem> fs, std::string_view key, ProcOwner owner,
                   ProcContent target, ProcMagic magic)
      : ProcInode(std::move(fs), key, S_IFLNK | 0777, owner),
        target_(std::move(target)),
        magic_(std::move(magic)) {}
  SysResult<std::string> Readlink() override { return target_(); }
  bool GetMagicLink(vfs::MagicLink* out) override { return magic_ && magic_(out); }

 private:
  ProcContent target_;
  ProcMagic magic_;
};

class ProcDirInode : public ProcInode {
 public:
  ProcDirInode(std::shared_ptr<vfs::Filesystem> fs, std::string_view key, ProcOwner owner,
               ProcLookup lookup, ProcList list, uint32_t mode)
      : ProcInode(std::move(fs), key, S_IFDIR | mode, owner),
        lookup_(std::move(lookup)),
        list_(std::move(list)) {}
  SysResult<std::shared_ptr<vfs::Inode>> Lookup(std::string_view name) override {
    return lookup_(name);
  }
  SysResult<std::vector<vfs::DirEntry>> ReadDir() override { return list_(); }

 private:
  ProcLookup lookup_;
  ProcList list_;
};

}  // namespace

SysResult<struct statfs> ProcFilesystem::StatFs() {
  struct statfs s {};
  s.f_type = 0x9fa0;  // PROC_SUPER_MAGIC: some programs check it before trusting /proc
  s.f_bsize = 4096;
  s.f_namelen = 255;
  s.f_frsize = 4096;
  return s;
}

uint64_t ProcIno(std::string_view key) {
  // FNV-1a; never 0 and never the root's 1.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h &= (1ull << 62) - 1;
  return key.empty() ? 1 : std::max<uint64_t>(h, 2);
}

std::shared_ptr<vfs::Inode> NewProcFile(std::shared_ptr<vfs::Filesystem> fs, std::string_view key,
                                        ProcOwner owner, ProcContent content, uint32_t mode) {
  return std::make_shared<ProcFileInode>(std::move(fs), key, owner, std::move(content), mode);
}

std::shared_ptr<vfs::Inode> NewProcSymlink(std::shared_ptr<vfs::Filesystem> fs,
                                           std::string_view key, ProcOwner owner,
                                           ProcContent target, ProcMagic magic) {
  return std::make_shared<ProcSymlinkInode>(std::move(fs), key, owner, std::move(target),
                                            std::move(magic));
}

std::shared_ptr<vfs::Inode> NewProcDir(std::shared_ptr<vfs::Filesystem> fs, std::string_view key,
                                       ProcOwner owner, ProcLookup lookup, ProcList list,
                                       uint32_t mode) {
  return std::make_shared<ProcDirInode>(std::move(fs), key, owner, std::move(lookup),
                                        std::move(list), mode);
}

std::shared_ptr<vfs::Inode> NewProcStaticDir(
    std::shared_ptr<vfs::Filesystem> fs, std::string_view key,
    std::map<std::string, std::shared_ptr<vfs::Inode>> kids) {
  auto shared =
      std::make_shared<std::map<std::string, std::shared_ptr<vfs::Inode>>>(std::move(kids));
  return NewProcDir(
      std::move(fs), key, ProcOwner{},
      [shared](std::string_view name) -> SysResult<std::shared_ptr<vfs::Inode>> {
        auto it = shared->find(std::string(name));
        if (it == shared->end()) return Errno{ENOENT};
        return it->second;
      },
      [shared]() -> SysResult<std::vector<vfs::DirEntry>> {
        std::vector<vfs::DirEntry> out;
        for (const auto& [name, inode] : *shared) {
          auto a = inode->Stat();
          out.push_back({name, a.ok() ? a->ino : 0, vfs::DirentTypeOf(inode->FileType())});
        }
        return out;
      });
}

SysResult<size_t> ProcSnapshotDescription::Read(Task*, absl::Span<const iovec> dst,
                                                int64_t offset) {
  int64_t pos = offset == -1 ? offset_ : offset;
  if (pos < 0) return Errno{EINVAL};
  size_t done = 0;
  for (const iovec& v : dst) {
    if (static_cast<size_t>(pos) >= data_.size()) break;
    size_t n = std::min(v.iov_len, data_.size() - pos);
    memcpy(v.iov_base, data_.data() + pos, n);
    pos += n;
    done += n;
  }
  if (offset == -1) offset_ = pos;
  return done;
}

SysResult<int64_t> ProcSnapshotDescription::Seek(int64_t offset, int whence) {
  return SeekWithSize(offset, whence, [this]() -> SysResult<int64_t> {
    return static_cast<int64_t>(data_.size());
  });
}

}  // namespace usentry::sentry::fsimpl
