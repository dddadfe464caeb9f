// sendfile, splice, tee, vmsplice, copy_file_range: one copy engine (Transfer) that
// reads a chunk from the source description and writes it to the destination.
//
// Nothing is lost when the destination takes less than was read: a pipe source is
// only peeked and then consumed by what was written, a seekable source is read at an
// explicit position that advances by what was written, and a pipe destination is
// asked for its free room first. Only a non-seekable, non-pipe source (a socket or a
// tty feeding sendfile) can lose bytes when its destination fails mid-way.
#include "sentry/syscalls/sys_splice.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>

#include <optional>
#include <vector>

#include "sentry/fsimpl/pipe.h"
#include "sentry/mm/bounce_buffer.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/fsize_limit.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/vfs/notify.h"

namespace usentry::sentry {

namespace {

// Linux's splice flags (SPLICE_F_MOVE/NONBLOCK/MORE/GIFT).
constexpr unsigned kSpliceMove = 1, kSpliceNonblock = 2, kSpliceMore = 4, kSpliceGift = 8;
constexpr unsigned kSpliceAll = kSpliceMove | kSpliceNonblock | kSpliceMore | kSpliceGift;

// One side of a transfer.
struct End {
  std::shared_ptr<vfs::FileDescription> file;
  fsimpl::Pipe* pipe = nullptr;  // set when the file is a pipe end
  bool seekable = false;
  std::optional<int64_t> off;  // the syscall's explicit offset; else the file offset
  // A write was cut short at RLIMIT_FSIZE: the transfer ends there (no EFBIG, no
  // SIGXFSZ for the bytes after it, as Linux clamps the whole count once).
  bool at_fsize_limit = false;
};

SysResult<End> MakeEnd(Task& task, int fd, bool write) {
  End e;
  ASSIGN_OR_RETURN_ERRNO(e.file, GetIoFile(task, fd));
  if (write ? !e.file->writable() : !e.file->readable()) return Errno{EBADF};
  if (auto* p = dynamic_cast<fsimpl::PipeDescription*>(e.file.get())) e.pipe = &p->pipe();
  if (!e.pipe) {
    auto r = e.file->Seek(0, SEEK_CUR);
    e.seekable = r.ok() || r.error() != ESPIPE;
  }
  return e;
}

// Reads an app offset pointer (loff_t*) into `e` when `addr` is not null; a negative
// offset is `negative_errno`.
SysStatus LoadOffset(Task& task, End& e, mm::GuestAddr addr, int negative_errno = EINVAL) {
  if (addr.IsNull()) return SysOk();
  if (e.pipe || !e.seekable) return Errno{ESPIPE};
  ASSIGN_OR_RETURN_ERRNO(int64_t off, task.mm().CopyInObj<int64_t>(addr));
  if (off < 0) return Errno{negative_errno};
  e.off = off;
  return SysOk();
}

SysStatus StoreOffset(Task& task, const End& e, mm::GuestAddr addr) {
  if (addr.IsNull() || !e.off) return SysOk();
  return task.mm().CopyOutObj<int64_t>(addr, *e.off);
}

enum class Side { kNone, kIn, kOut };

// Moves at most `max` bytes once. EAGAIN (with `*blocked` naming the side) when the
// source is empty or the destination full; 0 at the source's end. `peek_skip` >= 0
// makes a pipe source be copied from that many bytes past its head and not consumed
// (tee).
SysResult<size_t> Step(Task& task, End& in, End& out, size_t max, int64_t peek_skip,
                       Side* blocked) {
  static_assert(mm::BounceBuffer::kSize >= 64 << 10);
  size_t want = std::min<size_t>(max, mm::BounceBuffer::kSize);
  if (out.pipe) {
    if (out.pipe->readers() == 0) {
      fsimpl::SendSigpipe(task);
      return Errno{EPIPE};
    }
    size_t room = out.pipe->capacity() - out.pipe->size();
    if (room == 0) {
      *blocked = Side::kOut;
      return Errno{EAGAIN};
    }
    want = std::min(want, room);
  }
  mm::BounceBuffer buf;
  size_t n = 0;
  int64_t pos = -1;
  if (in.pipe) {
    size_t skip = peek_skip < 0 ? 0 : static_cast<size_t>(peek_skip);
    if (in.pipe->size() <= skip) {
      if (in.pipe->writers() == 0) return size_t{0};
      *blocked = Side::kIn;
      return Errno{EAGAIN};
    }
    n = in.pipe->Peek(buf.data(), want, skip);
  } else {
    if (in.off) {
      pos = *in.off;
    } else if (in.seekable) {
      ASSIGN_OR_RETURN_ERRNO(pos, in.file->Seek(0, SEEK_CUR));
    }
    const iovec v{buf.data(), want};
    SysResult<size_t> r = in.file->Read(&task, absl::MakeConstSpan(&v, 1), pos);
    if (!r.ok()) {
      if (r.error() == EAGAIN) *blocked = Side::kIn;
      return r;
    }
    n = *r;
  }
  if (n == 0) return size_t{0};
  // RLIMIT_FSIZE of a regular output file: what crosses the limit is not written (and
  // not consumed from the input).
  ASSIGN_OR_RETURN_ERRNO(uint64_t allowed,
                         FsizeAllowedWrite(task, *out.file, out.off.value_or(-1), n));
  if (allowed < n) out.at_fsize_limit = true;
  const iovec v{buf.data(), static_cast<size_t>(allowed)};
  SysResult<size_t> w = out.file->Write(&task, absl::MakeConstSpan(&v, 1), out.off.value_or(-1));
  if (!w.ok()) {
    if (w.error() == EAGAIN) *blocked = Side::kOut;
    return w;
  }
  size_t done = *w;
  if (in.pipe) {
    if (peek_skip < 0) in.pipe->Consume(done);
  } else if (in.off) {
    *in.off += static_cast<int64_t>(done);
  } else if (in.seekable) {
    RETURN_IF_ERRNO(in.file->Seek(pos + static_cast<int64_t>(done), SEEK_SET));
  }
  if (out.off) *out.off += static_cast<int64_t>(done);
  return done;
}

struct Mode {
  bool nonblock = false;
  // splice/tee (and sendfile into a pipe) return once something moved rather than wait
  // for more; sendfile and copy_file_range otherwise go on until `count` or EOF.
  bool return_after_progress = false;
  bool peek = false;  // tee
};

// The engine: Step until `count` bytes moved, EOF, an error, or (per `mode`) a point
// where it would block. Blocks on the side that is not ready; a signal with nothing
// moved yet restarts the call.
SysResult<size_t> Transfer(Task& task, End& in, End& out, size_t count, Mode mode) {
  Waiter w(&task);
  std::optional<ScopedWait> in_wait, out_wait;
  if (!mode.nonblock) {
    // Registered before the first attempt, so that no wakeup between an attempt and
    // the Block is missed.
    WaitQueue* qi = in.file->wait_queue();
    WaitQueue* qo = out.file->wait_queue();
    if (qi) in_wait.emplace(*qi, w, POLLIN | POLLHUP | POLLERR);
    if (qo && qo != qi) out_wait.emplace(*qo, w, POLLOUT | POLLHUP | POLLERR);
  }
  size_t total = 0;
  while (total < count) {
    Side blocked = Side::kNone;
    w.clear();
    SysResult<size_t> r =
        Step(task, in, out, count - total, mode.peek ? static_cast<int64_t>(total) : -1, &blocked);
    if (r.ok()) {
      if (*r == 0) break;
      total += *r;
      if (out.at_fsize_limit) break;
      continue;
    }
    if (r.error() != EAGAIN || blocked == Side::kNone) {
      if (total > 0) break;
      return r;
    }
    if (total > 0 && mode.return_after_progress) break;
    vfs::FileDescription& f = blocked == Side::kIn ? *in.file : *out.file;
    if (mode.nonblock || f.wait_queue() == nullptr) {
      if (total > 0) break;
      return Errno{EAGAIN};
    }
    SysStatus st = task.Block(w);
    if (!st.ok()) {
      if (total > 0) break;
      return Errno{st.error() == EINTR ? kERestartSys : st.error()};
    }
  }
  if (total > 0) {
    vfs::NotifyFile(in.file->path(), IN_ACCESS);
    vfs::NotifyFile(out.file->path(), IN_MODIFY);
  }
  return total;
}

bool SamePipe(const End& a, const End& b) { return a.pipe && a.pipe == b.pipe; }

}  // namespace

// sendfile(out_fd, in_fd, offset*, count)
SyscallResult SysSendfile(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(End in, MakeEnd(task, args.i32(1), false));
  if (in.pipe) return Errno{EINVAL};  // pipes have no splice_read: Linux refuses them here
  RETURN_IF_ERRNO(LoadOffset(task, in, args.ptr(2)));
  ASSIGN_OR_RETURN_ERRNO(End out, MakeEnd(task, args.i32(0), true));
  ASSIGN_OR_RETURN_ERRNO(uint32_t in_type, FileTypeOf(*in.file));
  if (in_type == S_IFDIR) return Errno{EINVAL};
  if (!out.pipe && (out.file->flags() & O_APPEND)) return Errno{EINVAL};
  size_t count = std::min<size_t>(args.u64(3), kMaxRwCount);
  if (in.off && static_cast<uint64_t>(*in.off) + count > INT64_MAX) return Errno{EINVAL};
  Mode mode;
  // Into a pipe, sendfile is a splice: one fill, non-blocking if the source is.
  mode.return_after_progress = out.pipe != nullptr;
  mode.nonblock = out.pipe ? in.file->nonblocking() : out.file->nonblocking();
  size_t n = 0;
  if (count > 0) {
    ASSIGN_OR_RETURN_ERRNO(n, Transfer(task, in, out, count, mode));
  }
  RETURN_IF_ERRNO(StoreOffset(task, in, args.ptr(2)));
  return uint64_t{n};
}

// splice(fd_in, off_in*, fd_out, off_out*, len, flags)
SyscallResult SysSplice(Task& task, const SyscallArgs& args) {
  unsigned flags = args.u32(5);
  if (flags & ~kSpliceAll) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(End in, MakeEnd(task, args.i32(0), false));
  ASSIGN_OR_RETURN_ERRNO(End out, MakeEnd(task, args.i32(2), true));
  if (!in.pipe && !out.pipe) return Errno{EINVAL};
  if (SamePipe(in, out)) return Errno{EINVAL};
  RETURN_IF_ERRNO(LoadOffset(task, in, args.ptr(1)));
  RETURN_IF_ERRNO(LoadOffset(task, out, args.ptr(3)));
  if (!out.pipe && (out.file->flags() & O_APPEND)) return Errno{EINVAL};
  size_t len = std::min<size_t>(args.u64(4), kMaxRwCount);
  if (len == 0) return uint64_t{0};
  Mode mode;
  mode.return_after_progress = true;
  mode.nonblock = (flags & kSpliceNonblock) || in.file->nonblocking() || out.file->nonblocking();
  ASSIGN_OR_RETURN_ERRNO(size_t n, Transfer(task, in, out, len, mode));
  RETURN_IF_ERRNO(StoreOffset(task, in, args.ptr(1)));
  RETURN_IF_ERRNO(StoreOffset(task, out, args.ptr(3)));
  return uint64_t{n};
}

// tee(fd_in, fd_out, len, flags): copies between two pipes without consuming.
SyscallResult SysTee(Task& task, const SyscallArgs& args) {
  unsigned flags = args.u32(3);
  if (flags & ~kSpliceAll) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(End in, MakeEnd(task, args.i32(0), false));
  ASSIGN_OR_RETURN_ERRNO(End out, MakeEnd(task, args.i32(1), true));
  if (!in.pipe || !out.pipe || SamePipe(in, out)) return Errno{EINVAL};
  size_t len = std::min<size_t>(args.u64(2), kMaxRwCount);
  if (len == 0) return uint64_t{0};
  Mode mode;
  mode.return_after_progress = true;
  mode.peek = true;
  mode.nonblock = (flags & kSpliceNonblock) || in.file->nonblocking() || out.file->nonblocking();
  ASSIGN_OR_RETURN_ERRNO(size_t n, Transfer(task, in, out, len, mode));
  return uint64_t{n};
}

// vmsplice(fd, iov, nr_segs, flags): done as a copy (writev into a pipe's write end,
// readv out of its read end); SPLICE_F_GIFT has nothing to give.
SyscallResult SysVmsplice(Task& task, const SyscallArgs& args) {
  unsigned flags = args.u32(3);
  if (flags & ~kSpliceAll) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(auto file, GetIoFile(task, args.i32(0)));
  if (dynamic_cast<fsimpl::PipeDescription*>(file.get()) == nullptr) return Errno{EBADF};
  int64_t nsegs = args.i64(2);
  if (nsegs < 0 || nsegs > IOV_MAX) return Errno{EINVAL};
  const bool to_pipe = file->writable();
  if (!to_pipe && !file->readable()) return Errno{EBADF};
  std::vector<iovec> iovs;
  if (nsegs > 0) {
    ASSIGN_OR_RETURN_ERRNO(
        iovs, task.mm().TranslateIovecs(args.ptr(1), static_cast<int>(nsegs),
                                        to_pipe ? mm::Access::kRead : mm::Access::kWrite));
  }
  ASSIGN_OR_RETURN_ERRNO(size_t total, vfs::IovecsLength(iovs));
  if (total == 0) return uint64_t{0};
  auto op = [&]() -> SysResult<size_t> {
    return to_pipe ? file->Write(&task, iovs, -1) : file->Read(&task, iovs, -1);
  };
  if (flags & kSpliceNonblock) {
    ASSIGN_OR_RETURN_ERRNO(size_t n, op());
    return uint64_t{n};
  }
  ASSIGN_OR_RETURN_ERRNO(size_t n, BlockingIo(task, *file, to_pipe ? POLLOUT : POLLIN, op));
  return uint64_t{n};
}

// copy_file_range(fd_in, off_in*, fd_out, off_out*, len, flags). Copies between any two
// regular files, also across filesystems (Linux answers EXDEV there unless both sides
// are the same filesystem type; here every copy is a read/write loop anyway).
SyscallResult SysCopyFileRange(Task& task, const SyscallArgs& args) {
  if (args.u32(5) != 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(auto fin, GetIoFile(task, args.i32(0)));
  ASSIGN_OR_RETURN_ERRNO(auto fout, GetIoFile(task, args.i32(2)));
  ASSIGN_OR_RETURN_ERRNO(uint32_t tin, FileTypeOf(*fin));
  ASSIGN_OR_RETURN_ERRNO(uint32_t tout, FileTypeOf(*fout));
  if (tin == S_IFDIR || tout == S_IFDIR) return Errno{EISDIR};
  if (tin != S_IFREG || tout != S_IFREG) return Errno{EINVAL};
  if (!fin->readable() || !fout->writable() || (fout->flags() & O_APPEND)) return Errno{EBADF};
  ASSIGN_OR_RETURN_ERRNO(End in, MakeEnd(task, args.i32(0), false));
  ASSIGN_OR_RETURN_ERRNO(End out, MakeEnd(task, args.i32(2), true));
  RETURN_IF_ERRNO(LoadOffset(task, in, args.ptr(1), EOVERFLOW));
  RETURN_IF_ERRNO(LoadOffset(task, out, args.ptr(3), EOVERFLOW));
  uint64_t len = args.u64(4);
  ASSIGN_OR_RETURN_ERRNO(int64_t pin,
                         in.off ? SysResult<int64_t>(*in.off) : in.file->Seek(0, SEEK_CUR));
  ASSIGN_OR_RETURN_ERRNO(int64_t pout,
                         out.off ? SysResult<int64_t>(*out.off) : out.file->Seek(0, SEEK_CUR));
  if (len > static_cast<uint64_t>(INT64_MAX - pin) ||
      len > static_cast<uint64_t>(INT64_MAX - pout)) {
    return Errno{EOVERFLOW};
  }
  len = std::min<uint64_t>(len, kMaxRwCount);
  // Nothing to copy past the source's end (checked before the overlap, as Linux does).
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr in_attr, in.file->Stat());
  if (pin >= in_attr.size) return uint64_t{0};
  len = std::min<uint64_t>(len, static_cast<uint64_t>(in_attr.size - pin));
  // The same file with overlapping ranges is refused, as Linux does.
  if (in.file->inode() != nullptr && in.file->inode() == out.file->inode() &&
      pin < pout + static_cast<int64_t>(len) && pout < pin + static_cast<int64_t>(len)) {
    return Errno{EINVAL};
  }
  if (len == 0) return uint64_t{0};
  ASSIGN_OR_RETURN_ERRNO(size_t n, Transfer(task, in, out, len, Mode{}));
  RETURN_IF_ERRNO(StoreOffset(task, in, args.ptr(1)));
  RETURN_IF_ERRNO(StoreOffset(task, out, args.ptr(3)));
  return uint64_t{n};
}

}  // namespace usentry::sentry
