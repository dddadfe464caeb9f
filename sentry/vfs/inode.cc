// Default Inode operations and filesystem identity.
#include "sentry/vfs/inode.h"

#include <dirent.h>

#include <atomic>

#include "sentry/vfs/file_description.h"

namespace usentry::sentry::vfs {
namespace {
// Sandbox device numbers: unnamed-block-device style (major 0), unique per instance.
std::atomic<uint64_t> next_dev{0x10};
}  // namespace

struct timespec NowTimespec() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

uint8_t DirentTypeOf(uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return DT_REG;
    case S_IFDIR:
      return DT_DIR;
    case S_IFLNK:
      return DT_LNK;
    case S_IFCHR:
      return DT_CHR;
    case S_IFBLK:
      return DT_BLK;
    case S_IFIFO:
      return DT_FIFO;
    case S_IFSOCK:
      return DT_SOCK;
  }
  return DT_UNKNOWN;
}

Filesystem::Filesystem(std::string name) : name_(std::move(name)), dev_(next_dev++) {}

SysResult<struct statfs> Filesystem::StatFs() {
  struct statfs s {};
  s.f_type = 0x01021994;  // TMPFS_MAGIC: a harmless default for synthetic filesystems
  s.f_bsize = 4096;
  s.f_namelen = 255;
  s.f_frsize = 4096;
  return s;
}

SysResult<std::shared_ptr<FileDescription>> Inode::Open(const Path& path, int flags) {
  if (IsDir())
    return std::shared_ptr<FileDescription>(std::make_shared<DirectoryDescription>(path, flags));
  return Errno{ENXIO};
}

SysResult<std::shared_ptr<Inode>> Inode::Lookup(std::string_view) { return Errno{ENOTDIR}; }
SysResult<std::shared_ptr<Inode>> Inode::LookupForOpen(std::string_view name, int) {
  return Lookup(name);
}
SysResult<std::shared_ptr<Inode>> Inode::LookupAhead(std::string_view name, const WalkAhead&) {
  return Lookup(name);
}
SysResult<std::shared_ptr<Inode>> Inode::Create(std::string_view, uint32_t, uint32_t, uint32_t) {
  return Errno{IsDir() ? EPERM : ENOTDIR};
}
SysResult<std::shared_ptr<Inode>> Inode::Mkdir(std::string_view, uint32_t, uint32_t, uint32_t) {
  return Errno{IsDir() ? EPERM : ENOTDIR};
}
SysResult<std::shared_ptr<Inode>> Inode::Symlink(std::string_view, std::string_view, uint32_t,
                                                 uint32_t) {
  return Errno{IsDir() ? EPERM : ENOTDIR};
}
SysResult<std::shared_ptr<Inode>> Inode::Mknod(std::string_view, uint32_t, uint64_t, uint32_t,
                                               uint32_t) {
  return Errno{IsDir() ? EPERM : ENOTDIR};
}
SysStatus Inode::Link(std::string_view, Inode&) { return Errno{IsDir() ? EPERM : ENOTDIR}; }
SysStatus Inode::Unlink(std::string_view) { return Errno{IsDir() ? EPERM : ENOTDIR}; }
SysStatus Inode::Rmdir(std::string_view) { return Errno{IsDir() ? EPERM : ENOTDIR}; }
SysStatus Inode::Rename(std::string_view, Inode&, std::string_view, uint32_t) {
  return Errno{IsDir() ? EPERM : ENOTDIR};
}
SysResult<std::vector<DirEntry>> Inode::ReadDir() { return Errno{ENOTDIR}; }
SysResult<std::string> Inode::Readlink() { return Errno{EINVAL}; }
SysResult<std::string> Inode::GetXattr(std::string_view) { return Errno{ENOTSUP}; }
SysStatus Inode::SetXattr(std::string_view, std::string_view) { return Errno{ENOTSUP}; }
SysResult<int64_t> Inode::Size() {
  ASSIGN_OR_RETURN_ERRNO(Attr a, Stat());
  return a.size;
}

}  // namespace usentry::sentry::vfs
