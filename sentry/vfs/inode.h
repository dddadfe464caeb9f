// Inode and Filesystem: the per-filesystem objects the VFS walks and operates on.
// tmpfs, the gofer-backed fs, overlay, and (later) devfs/procfs implement Inode.
//
// Concurrency: everything runs under Kernel::mu, so inodes keep no locks of their own.
// Permission checks are done by the VFS (vfs/permissions.h) from Stat(); inode
// operations assume the caller is allowed to perform them.
#ifndef USENTRY_SENTRY_VFS_INODE_H_
#define USENTRY_SENTRY_VFS_INODE_H_

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sentry/kernel/sys_result.h"

namespace usentry::sentry::vfs {

// open(2) flags that neither write nor truncate: such an open sees a file as it is.
inline bool ReadOnlyOpen(int flags) { return (flags & (O_ACCMODE | O_TRUNC)) == O_RDONLY; }

class FileDescription;
class Inode;
struct Path;
struct MagicLink;

// File attributes in the sandbox's view (st_dev is the filesystem's sandbox device).
struct Attr {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint32_t mode = 0;  // S_IFMT | permission bits
  uint64_t nlink = 1;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t rdev = 0;
  int64_t size = 0;
  int64_t blocks = 0;  // 512-byte units
  uint32_t blksize = 4096;
  struct timespec atime {
  }, mtime{}, ctime{};
};

// SetAttr mask bits (same values as gofer::SetAttrMask so the gofer fs passes them on).
enum SetAttrMask : uint32_t {
  kSetMode = 1,
  kSetUid = 2,
  kSetGid = 4,
  kSetSize = 8,
  kSetAtime = 16,  // tv_nsec may be UTIME_NOW (UTIME_OMIT is filtered out by the VFS)
  kSetMtime = 32,
  kSetCtime = 64,  // internal: only bump ctime (metadata changed elsewhere)
};

struct SetAttrRequest {
  uint32_t mask = 0;
  uint32_t mode = 0;  // permission bits only (07777)
  uint32_t uid = 0;
  uint32_t gid = 0;
  int64_t size = 0;
  struct timespec atime {
  }, mtime{};
};

struct DirEntry {
  std::string name;
  uint64_t ino = 0;
  uint8_t type = 0;  // DT_*
};

// Current wall-clock time for timestamps.
struct timespec NowTimespec();

// Where a path walk goes after the name it is looking up (Inode::LookupAhead): the
// components still to walk, in order, and the open(2) flags LookupForOpen would get for
// the path's last one (-1: the walk does not end in an open, or `names` stop short of
// the end).
struct WalkAhead {
  std::span<const std::string_view> names;
  int last_open_flags = -1;
};
// DT_* for an S_IFMT mode.
uint8_t DirentTypeOf(uint32_t mode);

// One mounted filesystem instance. Owns nothing the VFS needs beyond identity and statfs.
class Filesystem {
 public:
  explicit Filesystem(std::string name);
  virtual ~Filesystem() = default;
  Filesystem(const Filesystem&) = delete;
  Filesystem& operator=(const Filesystem&) = delete;

  const std::string& name() const { return name_; }  // "tmpfs", "overlay", "9p", "proc"...
  uint64_t dev() const { return dev_; }              // unique per instance
  virtual SysResult<struct statfs> StatFs();

 private:
  std::string name_;
  uint64_t dev_;
};

// A filesystem object. Directory operations default to ENOTDIR, file I/O happens through
// the FileDescription returned by Open().
class Inode : public std::enable_shared_from_this<Inode> {
 public:
  virtual ~Inode() = default;

  virtual Filesystem& fs() = 0;
  virtual SysResult<Attr> Stat() = 0;
  // Applies `req`. Permission checks (owner, CAP_CHOWN-like rules) are the VFS's job.
  virtual SysStatus SetAttr(const SetAttrRequest& req) = 0;
  // Cheap type query used on every path walk step.
  virtual uint32_t FileType() = 0;  // S_IFMT bits
  bool IsDir() { return FileType() == S_IFDIR; }
  bool IsSymlink() { return FileType() == S_IFLNK; }
  bool IsRegular() { return FileType() == S_IFREG; }

  // Opens a description on this inode, reached through `path` (whose dentry's inode is
  // this). `flags` are the open(2) flags minus O_CREAT/O_EXCL/O_NOFOLLOW/O_CLOEXEC; O_TRUNC
  // is handled by the VFS via SetAttr before Open. Default: a generic directory
  // description for directories, ENXIO otherwise.
  virtual SysResult<std::shared_ptr<FileDescription>> Open(const Path& path, int flags);

  // --- directories (default ENOTDIR) ---
  // ENOENT if absent. Never called with "." or "..".
  virtual SysResult<std::shared_ptr<Inode>> Lookup(std::string_view name);
  // Lookup of the last component of a path open(2) is about to open with `flags`
  // (without O_CREAT or O_PATH): a filesystem whose lookups and opens are round trips
  // to another process may do both in one (gofer fs; for ReadOnlyOpen flags). Default:
  // Lookup.
  virtual SysResult<std::shared_ptr<Inode>> LookupForOpen(std::string_view name, int flags);
  // Lookup of a component in the middle of a path, with the rest of the path: a
  // filesystem whose lookups are round trips to another process may resolve the
  // components ahead in the same trip and keep them for the lookups that follow (gofer
  // fs). The VFS still checks every step as it takes it. Default: Lookup.
  virtual SysResult<std::shared_ptr<Inode>> LookupAhead(std::string_view name,
                                                        const WalkAhead& ahead);
  // Creates a regular file (EEXIST if the name exists).
  virtual SysResult<std::shared_ptr<Inode>> Create(std::string_view name, uint32_t mode,
                                                   uint32_t uid, uint32_t gid);
  virtual SysResult<std::shared_ptr<Inode>> Mkdir(std::string_view name, uint32_t mode,
                                                  uint32_t uid, uint32_t gid);
  virtual SysResult<std::shared_ptr<Inode>> Symlink(std::string_view name, std::string_view target,
                                                    uint32_t uid, uint32_t gid);
  // Device nodes, FIFOs, sockets (mode carries S_IFMT).
  virtual SysResult<std::shared_ptr<Inode>> Mknod(std::string_view name, uint32_t mode,
                                                  uint64_t rdev, uint32_t uid, uint32_t gid);
  // Hard link to `target` (same filesystem; EXDEV otherwise).
  virtual SysStatus Link(std::string_view name, Inode& target);
  // Removes a non-directory (EISDIR for directories).
  virtual SysStatus Unlink(std::string_view name);
  // Removes an empty directory (ENOTEMPTY, ENOTDIR).
  virtual SysStatus Rmdir(std::string_view name);
  // renameat2 within one filesystem; flags: RENAME_NOREPLACE / RENAME_EXCHANGE.
  // The VFS has checked: same fs, not moving a dir into itself, permissions.
  virtual SysStatus Rename(std::string_view old_name, Inode& new_dir, std::string_view new_name,
                           uint32_t flags);
  // All entries except "." and "..", in a stable order.
  virtual SysResult<std::vector<DirEntry>> ReadDir();
  // False for directories whose entries come and go behind the VFS's back (devpts):
  // every walk step through them asks Lookup again instead of trusting the dentry cache.
  virtual bool CachesChildren() { return true; }

  // --- symlinks (default EINVAL) ---
  virtual SysResult<std::string> Readlink();
  // "Magic" links (/proc/PID/fd/N, exe, cwd, root): following one jumps to the object it
  // names instead of resolving Readlink()'s text (which may be "pipe:[7]" or a path
  // outside the caller's root). Fill `out` and return true to be magic; default false.
  virtual bool GetMagicLink(MagicLink* out) { return false; }

  // --- extended attributes, used by overlay for opaque markers (default ENOTSUP) ---
  virtual SysResult<std::string> GetXattr(std::string_view name);
  virtual SysStatus SetXattr(std::string_view name, std::string_view value);

  // Regular files: current size (for FIONREAD, SEEK_END); default from Stat().
  virtual SysResult<int64_t> Size();
};

}  // namespace usentry::sentry::vfs

#endif  // USENTRY_SENTRY_VFS_INODE_H_
