// FileDescription defaults, the generic directory description, iovec helpers.
#include "sentry/vfs/file_description.h"

#include <dirent.h>
#include <poll.h>
#include <sys/mman.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "sentry/vfs/notify.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry::vfs {

FileDescription::FileDescription(Path path, int flags)
    : path_(std::move(path)),
      flags_(flags & ~(O_CLOEXEC | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC)) {}

FileDescription::~FileDescription() {
  // The last reference to an open file is its close (O_PATH descriptions are not opens).
  if (!is_path_only() && path_.valid()) {
    NotifyFile(path_, access_mode() == O_RDONLY ? IN_CLOSE_NOWRITE : IN_CLOSE_WRITE);
  }
  std::vector<ReleaseWatcher*> watchers;
  watchers.swap(release_watchers_);
  for (ReleaseWatcher* w : watchers) w->DescriptionReleased(this);
}

void FileDescription::RemoveReleaseWatcher(ReleaseWatcher* w) {
  auto it = std::find(release_watchers_.begin(), release_watchers_.end(), w);
  if (it != release_watchers_.end()) release_watchers_.erase(it);
}

SysStatus FileDescription::SetStatusFlags(int flags) {
  flags_ = (flags_ & ~kSettableStatusFlags) | (flags & kSettableStatusFlags);
  return SysOk();
}

SysResult<size_t> FileDescription::Read(Task*, absl::Span<const iovec>, int64_t) {
  return Errno{EINVAL};
}
SysResult<size_t> FileDescription::Write(Task*, absl::Span<const iovec>, int64_t) {
  return Errno{EINVAL};
}
SysResult<int64_t> FileDescription::Seek(int64_t, int) { return Errno{ESPIPE}; }
SysStatus FileDescription::IterateDir(DirEmitter) { return Errno{ENOTDIR}; }

SysResult<Attr> FileDescription::Stat() {
  if (Inode* i = inode()) return i->Stat();
  // Anonymous files: like Linux's anon_inode, owned by root, mode 0600.
  Attr a;
  a.mode = 0600;
  a.ino = reinterpret_cast<uintptr_t>(this) >> 4;
  a.dev = 0xd;
  return a;
}

SysResult<uint64_t> FileDescription::Ioctl(Task&, uint64_t, uint64_t) { return Errno{ENOTTY}; }
SysStatus FileDescription::Sync() { return SysOk(); }
SysStatus FileDescription::Truncate(int64_t) { return Errno{EINVAL}; }

EventMask FileDescription::Readiness(EventMask mask) {
  EventMask ready = 0;
  if (readable()) ready |= POLLIN | POLLRDNORM;
  if (writable()) ready |= POLLOUT | POLLWRNORM;
  return ready & mask;
}

SysStatus FileDescription::ConfigureMMap(mm::MMapOpts&) { return Errno{ENODEV}; }

SysResult<size_t> IovecsLength(absl::Span<const iovec> iovs) {
  size_t total = 0;
  for (const iovec& v : iovs) {
    if (v.iov_len > static_cast<size_t>(SSIZE_MAX) - total) return Errno{EINVAL};
    total += v.iov_len;
  }
  return total;
}

size_t CopyToIovecs(absl::Span<const iovec> dst, const void* src, size_t len) {
  const auto* from = static_cast<const uint8_t*>(src);
  size_t done = 0;
  for (const iovec& v : dst) {
    if (done == len) break;
    size_t n = std::min(v.iov_len, len - done);
    memcpy(v.iov_base, from + done, n);
    done += n;
  }
  return done;
}

size_t CopyFromIovecs(absl::Span<const iovec> src, void* dst, size_t len) {
  auto* to = static_cast<uint8_t*>(dst);
  size_t done = 0;
  for (const iovec& v : src) {
    if (done == len) break;
    size_t n = std::min(v.iov_len, len - done);
    memcpy(to + done, v.iov_base, n);
    done += n;
  }
  return done;
}

// --- DirectoryDescription ---

SysResult<size_t> DirectoryDescription::Read(Task*, absl::Span<const iovec>, int64_t) {
  return Errno{EISDIR};
}
SysResult<size_t> DirectoryDescription::Write(Task*, absl::Span<const iovec>, int64_t) {
  return Errno{EBADF};
}

SysResult<int64_t> DirectoryDescription::Seek(int64_t offset, int whence) {
  int64_t target;
  switch (whence) {
    case SEEK_SET:
      target = offset;
      break;
    case SEEK_CUR:
      target = offset_ + offset;
      break;
    default:
      return Errno{EINVAL};
  }
  if (target < 0) return Errno{EINVAL};
  // rewinddir() must show entries created since the directory was opened.
  if (target == 0) have_snapshot_ = false;
  offset_ = target;
  return offset_;
}

SysStatus DirectoryDescription::IterateDir(DirEmitter emit) {
  Inode* dir = inode();
  if (!dir) return Errno{ENOTDIR};
  if (!have_snapshot_ || offset_ == 0) {
    ASSIGN_OR_RETURN_ERRNO(snapshot_, dir->ReadDir());
    have_snapshot_ = true;
  }
  ASSIGN_OR_RETURN_ERRNO(Attr self, dir->Stat());
  DirEntry dots;
  while (true) {
    const DirEntry* e = &dots;
    if (offset_ == 0) {
      dots = {".", self.ino, DT_DIR};
    } else if (offset_ == 1) {
      uint64_t pino = self.ino;
      const auto& parent = path_.dentry ? path_.dentry->parent() : nullptr;
      if (parent) {
        auto pa = parent->inode()->Stat();
        if (pa.ok()) pino = pa->ino;
      }
      dots = {"..", pino, DT_DIR};
    } else if (static_cast<size_t>(offset_ - 2) < snapshot_.size()) {
      e = &snapshot_[offset_ - 2];
    } else {
      return SysOk();
    }
    if (!emit(*e, offset_ + 1)) return SysOk();
    ++offset_;
  }
}

}  // namespace usentry::sentry::vfs

namespace usentry::sentry::vfs {

SysStatus ConfigureCopyMMap(FileDescription& file, mm::MMapOpts& opts, mm::FileFiller fill,
                            std::shared_ptr<void> file_ref) {
  if (!file.readable()) return Errno{EACCES};
  bool shared = opts.flags & MAP_SHARED;
  if (shared) {
    if (opts.prot & PROT_WRITE) {
      if (!file.writable()) return Errno{EACCES};
      // Writable shared file mappings would need write-back/coherence: not supported.
      return Errno{ENODEV};
    }
    opts.max_prot = PROT_READ | PROT_EXEC;
  } else {
    opts.max_prot = PROT_READ | PROT_WRITE | PROT_EXEC;
  }
  ASSIGN_OR_RETURN_ERRNO(Attr a, file.Stat());
  opts.dev = a.dev;
  opts.ino = a.ino;
  opts.name = AbsolutePathOf(file.path());
  opts.fill = std::move(fill);
  opts.fill_is_whole_file = true;
  opts.file_ref = std::move(file_ref);
  return SysOk();
}

SysResult<int64_t> FileDescription::SeekWithSize(int64_t offset, int whence,
                                                 absl::FunctionRef<SysResult<int64_t>()> size) {
  int64_t base;
  switch (whence) {
    case SEEK_SET:
      base = 0;
      break;
    case SEEK_CUR:
      base = offset_;
      break;
    case SEEK_END: {
      ASSIGN_OR_RETURN_ERRNO(base, size());
      break;
    }
    case SEEK_DATA:
    case SEEK_HOLE: {
      ASSIGN_OR_RETURN_ERRNO(int64_t end, size());
      if (offset < 0 || offset >= end) return Errno{ENXIO};
      offset_ = whence == SEEK_DATA ? offset : end;
      return offset_;
    }
    default:
      return Errno{EINVAL};
  }
  if ((offset > 0 && base > INT64_MAX - offset) || base + offset < 0) return Errno{EINVAL};
  offset_ = base + offset;
  return offset_;
}

std::string AbsolutePathOf(const Path& p) {
  // Walking up to an invalid Path never stops early: the path from the real root.
  return Vfs::PathOf(p, Path{});
}

}  // namespace usentry::sentry::vfs
