// read/write and their positional and vectored variants, lseek.
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>

#include <memory>

#include "sentry/mm/bounce_buffer.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/fsize_limit.h"
#include "sentry/syscalls/sys_file.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/vfs/notify.h"

namespace usentry::sentry {
namespace {

// Positional I/O needs a seekable file: ESPIPE for pipes, sockets, ttys.
SysStatus CheckSeekable(vfs::FileDescription& f) {
  auto r = f.Seek(0, SEEK_CUR);
  if (!r.ok() && r.error() == ESPIPE) return Errno{ESPIPE};
  return SysOk();
}

// Reads of at least kBounceMin bytes (and at most kBounceMax) land in a bounce buffer
// and reach app memory by pwrite on the memory file: read straight into app memory, each
// page is first touched through the sentry's own mapping of the memory file, a ~15 us
// fault on the test VM, and once mapped there every later hole punch of it costs a TLB
// shootdown of the sentry's threads. The extra copy is cheaper from about two pages.
constexpr size_t kBounceMin = 8 << 10;
constexpr size_t kBounceMax = mm::BounceBuffer::kSize;

SyscallResult DoRead(Task& task, int fd, std::vector<iovec> iovs, int64_t offset) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, fd));
  if (!file->readable()) return Errno{EBADF};
  if (offset != -1) RETURN_IF_ERRNO(CheckSeekable(*file));
  size_t total = 0;
  for (const iovec& v : iovs) total += v.iov_len;
  if (total >= kBounceMin && total <= kBounceMax) {
    mm::BounceBuffer bounce;
    const iovec one{bounce.data(), total};
    ASSIGN_OR_RETURN_ERRNO(size_t n, BlockingIo(task, *file, POLLIN, [&] {
                             return file->Read(&task, absl::MakeConstSpan(&one, 1), offset);
                           }));
    task.mm().WriteSpans(iovs, bounce.data(), n);
    if (n > 0) vfs::NotifyFile(file->path(), IN_ACCESS);
    return uint64_t{n};
  }
  ASSIGN_OR_RETURN_ERRNO(
      size_t n, BlockingIo(task, *file, POLLIN, [&] { return file->Read(&task, iovs, offset); }));
  if (n > 0) vfs::NotifyFile(file->path(), IN_ACCESS);
  return uint64_t{n};
}

SyscallResult DoWrite(Task& task, int fd, std::vector<iovec> iovs, int64_t offset) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, fd));
  if (!file->writable()) return Errno{EBADF};
  if (offset != -1) RETURN_IF_ERRNO(CheckSeekable(*file));
  // RLIMIT_FSIZE: a write crossing the limit stores only the bytes below it.
  uint64_t total = 0;
  for (const iovec& v : iovs) total += v.iov_len;
  ASSIGN_OR_RETURN_ERRNO(uint64_t allowed, FsizeAllowedWrite(task, *file, offset, total));
  if (allowed < total) {
    std::vector<iovec> cut;
    for (const iovec& v : iovs) {
      if (allowed == 0) break;
      cut.push_back({v.iov_base, std::min<size_t>(v.iov_len, allowed)});
      allowed -= cut.back().iov_len;
    }
    iovs = std::move(cut);
  }
  ASSIGN_OR_RETURN_ERRNO(
      size_t n, BlockingIo(task, *file, POLLOUT, [&] { return file->Write(&task, iovs, offset); }));
  if (n > 0) vfs::NotifyFile(file->path(), IN_MODIFY);
  return uint64_t{n};
}

// Translates one app buffer (fd checks first, like Linux: EBADF beats EFAULT).
SyscallResult Buffer(Task& task, int fd, mm::GuestAddr buf, size_t count, bool write,
                     int64_t offset) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, fd));
  if (write ? !file->writable() : !file->readable()) return Errno{EBADF};
  count = std::min(count, kMaxRwCount);
  std::vector<iovec> iovs;
  if (count > 0) {
    ASSIGN_OR_RETURN_ERRNO(
        iovs, task.mm().Translate(buf, count, write ? mm::Access::kRead : mm::Access::kWrite));
  }
  return write ? DoWrite(task, fd, std::move(iovs), offset)
               : DoRead(task, fd, std::move(iovs), offset);
}

SyscallResult Vector(Task& task, int fd, mm::GuestAddr iov, int64_t iovcnt, bool write,
                     int64_t offset) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, fd));
  if (write ? !file->writable() : !file->readable()) return Errno{EBADF};
  if (iovcnt < 0 || iovcnt > IOV_MAX) return Errno{EINVAL};
  std::vector<iovec> iovs;
  if (iovcnt > 0) {
    ASSIGN_OR_RETURN_ERRNO(
        iovs, task.mm().TranslateIovecs(iov, static_cast<int>(iovcnt),
                                        write ? mm::Access::kRead : mm::Access::kWrite));
  }
  ASSIGN_OR_RETURN_ERRNO(size_t total, vfs::IovecsLength(iovs));
  (void)total;
  return write ? DoWrite(task, fd, std::move(iovs), offset)
               : DoRead(task, fd, std::move(iovs), offset);
}

// preadv2/pwritev2 flags we can honour: the sync hints are no-ops for sentry-held data.
constexpr int kRwfAccepted = RWF_HIPRI | RWF_DSYNC | RWF_SYNC;

}  // namespace

SyscallResult SysRead(Task& task, const SyscallArgs& args) {
  return Buffer(task, args.i32(0), args.ptr(1), args.u64(2), false, -1);
}

SyscallResult SysWrite(Task& task, const SyscallArgs& args) {
  return Buffer(task, args.i32(0), args.ptr(1), args.u64(2), true, -1);
}

SyscallResult SysPread64(Task& task, const SyscallArgs& args) {
  if (args.i64(3) < 0) return Errno{EINVAL};
  return Buffer(task, args.i32(0), args.ptr(1), args.u64(2), false, args.i64(3));
}

SyscallResult SysPwrite64(Task& task, const SyscallArgs& args) {
  if (args.i64(3) < 0) return Errno{EINVAL};
  return Buffer(task, args.i32(0), args.ptr(1), args.u64(2), true, args.i64(3));
}

SyscallResult SysReadv(Task& task, const SyscallArgs& args) {
  return Vector(task, args.i32(0), args.ptr(1), args.i32(2), false, -1);
}

SyscallResult SysWritev(Task& task, const SyscallArgs& args) {
  return Vector(task, args.i32(0), args.ptr(1), args.i32(2), true, -1);
}

// On x86-64 the whole offset is in pos_l (args[3]); pos_h only matters on 32-bit.
SyscallResult SysPreadv(Task& task, const SyscallArgs& args) {
  if (args.i64(3) < 0) return Errno{EINVAL};
  return Vector(task, args.i32(0), args.ptr(1), args.i32(2), false, args.i64(3));
}

SyscallResult SysPwritev(Task& task, const SyscallArgs& args) {
  if (args.i64(3) < 0) return Errno{EINVAL};
  return Vector(task, args.i32(0), args.ptr(1), args.i32(2), true, args.i64(3));
}

SyscallResult SysPreadv2(Task& task, const SyscallArgs& args) {
  if (args.i32(5) & ~kRwfAccepted) return Errno{EOPNOTSUPP};
  if (args.i64(3) < -1) return Errno{EINVAL};
  return Vector(task, args.i32(0), args.ptr(1), args.i32(2), false, args.i64(3));
}

SyscallResult SysPwritev2(Task& task, const SyscallArgs& args) {
  if (args.i32(5) & ~kRwfAccepted) return Errno{EOPNOTSUPP};
  if (args.i64(3) < -1) return Errno{EINVAL};
  return Vector(task, args.i32(0), args.ptr(1), args.i32(2), true, args.i64(3));
}

SyscallResult SysLseek(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto file, GetFile(task, args.i32(0)));
  int whence = args.i32(2);
  if (whence < SEEK_SET || whence > SEEK_HOLE) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(int64_t off, file->Seek(args.i64(1), whence));
  return static_cast<uint64_t>(off);
}

}  // namespace usentry::sentry
