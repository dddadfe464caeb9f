// fallocate, readahead, sync_file_range: file-space requests over the description's
// Truncate/Write/Sync, so that every filesystem (tmpfs, the overlay's copied-up upper
// file, gofer and host files, memfds) gets them through the same paths as
// ftruncate(2) and pwrite(2).
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>

#include <vector>

#include "sentry/syscalls/fsize_limit.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/syscalls/sys_splice.h"
#include "sentry/vfs/notify.h"

namespace usentry::sentry {
namespace {

constexpr int kFallocKnown = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_NO_HIDE_STALE |
                             FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_ZERO_RANGE |
                             FALLOC_FL_INSERT_RANGE | FALLOC_FL_UNSHARE_RANGE;
// Largest file size fallocate may reach (Linux's MAX_LFS_FILESIZE).
constexpr int64_t kMaxFileSize = INT64_MAX;

// Writes zeros over [off, off+len) with positional writes.
SysStatus WriteZeros(Task& task, vfs::FileDescription& file, int64_t off, int64_t len) {
  static const std::vector<uint8_t> zeros(64 << 10);
  while (len > 0) {
    const iovec v{const_cast<uint8_t*>(zeros.data()),
                  static_cast<size_t>(std::min<int64_t>(len, zeros.size()))};
    ASSIGN_OR_RETURN_ERRNO(size_t n, file.Write(&task, absl::MakeConstSpan(&v, 1), off));
    if (n == 0) return Errno{EIO};
    off += static_cast<int64_t>(n);
    len -= static_cast<int64_t>(n);
  }
  return SysOk();
}

}  // namespace

// fallocate(fd, mode, offset, len). Sentry-held and gofer files have no block
// reservation to make, so mode 0 only grows the size; KEEP_SIZE is accepted as a hint;
// PUNCH_HOLE and ZERO_RANGE write zeros (no holes are tracked); COLLAPSE/INSERT/UNSHARE
// are EOPNOTSUPP.
SyscallResult SysFallocate(Task& task, const SyscallArgs& args) {
  int mode = args.i32(1);
  int64_t off = args.i64(2), len = args.i64(3);
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, args.i32(0)));
  if (off < 0 || len <= 0) return Errno{EINVAL};
  if (mode & ~kFallocKnown) return Errno{EOPNOTSUPP};
  if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE)) return Errno{EOPNOTSUPP};
  if ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE)) return Errno{EOPNOTSUPP};
  if (!file->writable()) return Errno{EBADF};
  ASSIGN_OR_RETURN_ERRNO(uint32_t type, FileTypeOf(*file));
  if (type == S_IFIFO) return Errno{ESPIPE};
  if (type == S_IFDIR) return Errno{EISDIR};
  if (type != S_IFREG) return Errno{ENODEV};
  if (len > kMaxFileSize - off) return Errno{EFBIG};
  if (mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE | FALLOC_FL_UNSHARE_RANGE)) {
    return Errno{EOPNOTSUPP};
  }
  // Positional writes of an O_APPEND description would land at the end.
  const bool zeroing = mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE);
  if (zeroing && (file->flags() & O_APPEND)) return Errno{EPERM};
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr attr, file->Stat());
  const int64_t size = attr.size;
  const int64_t end = off + len;
  if (zeroing && off < size)
    RETURN_IF_ERRNO(WriteZeros(task, *file, off, std::min(end, size) - off));
  if (!(mode & FALLOC_FL_KEEP_SIZE) && end > size) {
    RETURN_IF_ERRNO(FsizeAllowedSize(task, static_cast<uint64_t>(end)));
    RETURN_IF_ERRNO(file->Truncate(end));
  }
  vfs::NotifyFile(file->path(), IN_MODIFY);
  return uint64_t{0};
}

// readahead(fd, offset, count): a hint; the data is read on demand anyway.
SyscallResult SysReadahead(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, args.i32(0)));
  if (!file->readable()) return Errno{EBADF};
  ASSIGN_OR_RETURN_ERRNO(uint32_t type, FileTypeOf(*file));
  if (type != S_IFREG) return Errno{EINVAL};
  if (args.i64(1) < 0) return Errno{EINVAL};
  return uint64_t{0};
}

// sync_file_range(fd, offset, nbytes, flags): validated like Linux, then the whole file
// is synced (there is no per-range writeback to ask for).
SyscallResult SysSyncFileRange(Task& task, const SyscallArgs& args) {
  int64_t off = args.i64(1), nbytes = args.i64(2);
  unsigned flags = args.u32(3);
  constexpr unsigned kKnown =
      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
  if (flags & ~kKnown) return Errno{EINVAL};
  if (off < 0 || nbytes < 0 || (nbytes > 0 && off > INT64_MAX - nbytes)) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, args.i32(0)));
  ASSIGN_OR_RETURN_ERRNO(uint32_t type, FileTypeOf(*file));
  if (type != S_IFREG && type != S_IFDIR && type != S_IFLNK && type != S_IFBLK) {
    return Errno{ESPIPE};
  }
  if (flags & SYNC_FILE_RANGE_WRITE) RETURN_IF_ERRNO(file->Sync());
  return uint64_t{0};
}

}  // namespace usentry::sentry
