// FileDescription: an open file (what an FD points to). Extensible base class: regular
// files and directories of each filesystem, pipes, device files, host-FD files, proc
// files, sockets subclass it and override the ops they support.
//
// Non-blocking contract: an op that would block returns EAGAIN; the syscall layer then
// (unless O_NONBLOCK) registers a Waiter on wait_queue() for the events it needs,
// re-checks, and Task::Block()s. Files whose wait_queue() is null never block.
// All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_VFS_FILE_DESCRIPTION_H_
#define USENTRY_SENTRY_VFS_FILE_DESCRIPTION_H_

#include <fcntl.h>
#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "base/unique_fd.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/kernel/wait_queue.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/vfs/dentry.h"
#include "sentry/vfs/inode.h"

namespace usentry::sentry {
class Task;
}

namespace usentry::sentry::vfs {

// Status flags F_SETFL may change.
inline constexpr int kSettableStatusFlags = O_APPEND | O_NONBLOCK | O_ASYNC | O_DIRECT | O_NOATIME;

class FileDescription : public std::enable_shared_from_this<FileDescription> {
 public:
  // `path` may be empty (anonymous files). `flags` are the open flags; O_CLOEXEC and
  // creation flags are dropped (O_CLOEXEC is per FD, see FdTable).
  FileDescription(Path path, int flags);
  virtual ~FileDescription();
  FileDescription(const FileDescription&) = delete;
  FileDescription& operator=(const FileDescription&) = delete;

  const Path& path() const { return path_; }
  Inode* inode() const { return path_.inode(); }
  // Access mode + status flags as F_GETFL reports them.
  int flags() const { return flags_; }
  // F_SETFL: only kSettableStatusFlags change.
  virtual SysStatus SetStatusFlags(int flags);
  int access_mode() const { return flags_ & O_ACCMODE; }
  bool readable() const { return !is_path_only() && access_mode() != O_WRONLY; }
  bool writable() const {
    return !is_path_only() && (access_mode() == O_WRONLY || access_mode() == O_RDWR);
  }
  bool is_path_only() const { return flags_ & O_PATH; }
  bool nonblocking() const { return flags_ & O_NONBLOCK; }
  int64_t offset() const { return offset_; }

  // Reads into `dst` (sentry addresses: app memory translated by mm, or sentry buffers).
  // offset -1 = use and advance the file offset. Default EINVAL (like Linux for files
  // without read). The access-mode check (EBADF) is done by the caller.
  virtual SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset);
  virtual SysResult<size_t> Write(Task* task, absl::Span<const iovec> src, int64_t offset);
  // lseek. Default: ESPIPE.
  virtual SysResult<int64_t> Seek(int64_t offset, int whence);
  // Directory listing from the description's cursor. `emit(entry, next_offset)` returns
  // false when the caller's buffer is full; the entry is then not consumed. Default ENOTDIR.
  using DirEmitter = absl::FunctionRef<bool(const DirEntry&, int64_t)>;
  virtual SysStatus IterateDir(DirEmitter emit);
  // fstat. Default: the inode's attributes, or a synthetic anonymous-inode answer.
  virtual SysResult<Attr> Stat();
  // ioctl after the generic FIOCLEX/FIONCLEX/FIONBIO/FIOASYNC handling. Default ENOTTY.
  virtual SysResult<uint64_t> Ioctl(Task& task, uint64_t cmd, uint64_t arg);
  virtual SysStatus Sync();
  // ftruncate. Default EINVAL.
  virtual SysStatus Truncate(int64_t size);
  // fallocate/fadvise-style hints could go here later.

  // --- readiness ---
  // Events currently true among `mask` (POLLIN/POLLOUT/...). Default: always readable and
  // writable as the access mode allows (regular files). POLLERR/POLLHUP may be reported
  // even when not in `mask`.
  virtual EventMask Readiness(EventMask mask);
  // Where waiters register for readiness changes; null = never blocks. A file with a
  // queue is "pollable" (epoll_ctl accepts it; null gives EPERM like Linux files without
  // a poll op). Contract for files with a queue: Notify it with the changed bits on
  // every readiness change, including each new arrival of data on an already-readable
  // file (edge-triggered epoll reports those), and when a peer closes (HUP/ERR).
  // Readiness() must be cheap and must not block.
  virtual WaitQueue* wait_queue() { return nullptr; }

  // Objects that point at this description without owning it (epoll interest items)
  // and must forget it when it is released. Called from ~FileDescription, after the
  // subclass is destroyed: a watcher must not call back into the description.
  class ReleaseWatcher {
   public:
    virtual void DescriptionReleased(FileDescription* file) = 0;

   protected:
    ~ReleaseWatcher() = default;
  };
  void AddReleaseWatcher(ReleaseWatcher* w) { release_watchers_.push_back(w); }
  void RemoveReleaseWatcher(ReleaseWatcher* w);

  // --- mmap ---
  // Fills opts.fill/name/dev/ino/file_ref/max_prot for a mapping of this file.
  // Default ENODEV (file cannot be mapped).
  virtual SysStatus ConfigureMMap(mm::MMapOpts& opts);
  // The host file holding exactly this file's bytes, opened read-only, for the platform
  // to map directly (mm::MMapOpts::host_file); null when there is none.
  virtual std::shared_ptr<const UniqueFd> HostFileForMapping() { return nullptr; }

  // Opening /proc/PID/fd/N of an anonymous file (no path) reopens the same object with
  // new flags, as Linux does: a new end of the same pipe, a new description of the same
  // host FD. Default ENXIO (Linux's answer for sockets and the like).
  virtual SysResult<std::shared_ptr<FileDescription>> Reopen(int flags) { return Errno{ENXIO}; }

  // Who is told about this file and how (fcntl F_SETSIG, and the process that asked
  // for directory notifications with F_NOTIFY, which F_GETOWN reports; F_SETOWN and
  // O_ASYNC are not supported, so nothing else sets them).
  int notify_signal = 0;
  int32_t owner_pid = 0;

  // Name for /proc/PID/fd links and strace when the path is empty ("pipe:[123]").
  virtual std::string AnonName() const { return "anon_inode:[unknown]"; }
  // Type-specific lines of /proc/PID/fdinfo/N after pos/flags/mnt_id/ino
  // ("eventfd-count: ...", epoll's "tfd: ..."). Default: none.
  virtual std::string FdInfo() { return ""; }

 protected:
  // lseek for files with a size: SEEK_SET/CUR/END and SEEK_DATA/SEEK_HOLE treating the
  // whole file as data (no holes are tracked). Updates offset_. `size` is asked only
  // when the whence needs it (it may cost a host fstat).
  SysResult<int64_t> SeekWithSize(int64_t offset, int whence,
                                  absl::FunctionRef<SysResult<int64_t>()> size);

  Path path_;
  int flags_;
  int64_t offset_ = 0;

 private:
  std::vector<ReleaseWatcher*> release_watchers_;
};

// Generic directory description over Inode::ReadDir: "." and ".." first, a snapshot of
// the entries taken at offset 0 (rewinddir refreshes it), offsets are entry indices.
class DirectoryDescription : public FileDescription {
 public:
  DirectoryDescription(Path path, int flags) : FileDescription(std::move(path), flags) {}
  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  SysResult<size_t> Write(Task* task, absl::Span<const iovec> src, int64_t offset) override;
  SysResult<int64_t> Seek(int64_t offset, int whence) override;
  SysStatus IterateDir(DirEmitter emit) override;

 private:
  std::vector<DirEntry> snapshot_;
  bool have_snapshot_ = false;
};

// Description of an O_PATH open: only fstat, fchdir, *at() dirfd, close, dup, fcntl.
class PathOnlyDescription : public FileDescription {
 public:
  PathOnlyDescription(Path path, int flags) : FileDescription(std::move(path), flags) {}
  SysResult<size_t> Read(Task*, absl::Span<const iovec>, int64_t) override { return Errno{EBADF}; }
  SysResult<size_t> Write(Task*, absl::Span<const iovec>, int64_t) override { return Errno{EBADF}; }
  SysResult<int64_t> Seek(int64_t, int) override { return Errno{EBADF}; }
  SysStatus IterateDir(DirEmitter) override { return Errno{EBADF}; }
};

// mmap support for files whose bytes live outside the sentry (gofer-backed host files):
// the file's bytes are copied into the mapping, so a read-only MAP_SHARED mapping does
// not see later writes. Checks EACCES for unreadable files, gives MAP_SHARED mappings of
// files not opened for writing no PROT_WRITE in max_prot, and refuses writable
// MAP_SHARED mappings with ENODEV (there is no write-back). Sentry-held files (tmpfs,
// memfd) map their PageStore pages instead (fsimpl/page_store.h).
SysStatus ConfigureCopyMMap(FileDescription& file, mm::MMapOpts& opts, mm::FileFiller fill,
                            std::shared_ptr<void> file_ref);

// Absolute sandbox path of `p` from the real root (no task root at hand).
std::string AbsolutePathOf(const Path& p);

// Total length of an iovec array (EINVAL past SSIZE_MAX).
SysResult<size_t> IovecsLength(absl::Span<const iovec> iovs);

// Copy `len` bytes between a flat buffer and the front of an iovec array of sentry
// addresses, in order; return how many bytes fit (fixed-size records: eventfd counters,
// timerfd tick counts, signalfd entries).
size_t CopyToIovecs(absl::Span<const iovec> dst, const void* src, size_t len);
size_t CopyFromIovecs(absl::Span<const iovec> src, void* dst, size_t len);

}  // namespace usentry::sentry::vfs

#endif  // USENTRY_SENTRY_VFS_FILE_DESCRIPTION_H_
