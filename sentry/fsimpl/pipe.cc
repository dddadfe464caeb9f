// Pipe buffer and pipe end descriptions.
#include "sentry/fsimpl/pipe.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/memory_manager.h"

namespace usentry::sentry::fsimpl {
namespace {

// Pipe inode numbers (pipe:[N]) and the pipefs device of their fstat.
std::atomic<uint64_t> next_pipe_id{1};
constexpr uint64_t kPipefsDev = 0xc;

constexpr EventMask kReadable = POLLIN | POLLRDNORM;
constexpr EventMask kWritable = POLLOUT | POLLWRNORM;

}  // namespace

Pipe::Pipe() : id_(next_pipe_id++) {}

SysResult<size_t> Pipe::Read(absl::Span<const iovec> dst) {
  ASSIGN_OR_RETURN_ERRNO(size_t want, vfs::IovecsLength(dst));
  if (want == 0) return size_t{0};
  if (size_ == 0) {
    if (writers_ == 0) return size_t{0};
    return Errno{EAGAIN};
  }
  // Like Linux, writers hear about a read only if the pipe was full (not writable): with
  // a page free no writer can be blocked, and edge-triggered epoll sees no new edge.
  const bool was_full = (WriterReadiness(kWritable) & kWritable) == 0;
  size_t done = 0;
  for (const iovec& v : dst) {
    size_t off = 0;
    while (off < v.iov_len && size_ > 0) {
      // Contiguous run from head_ to the end of the ring or of the data.
      size_t run = std::min({v.iov_len - off, size_, ring_.size() - head_});
      memcpy(static_cast<uint8_t*>(v.iov_base) + off, ring_.data() + head_, run);
      head_ = (head_ + run) % ring_.size();
      size_ -= run;
      off += run;
      done += run;
    }
    if (size_ == 0) break;
  }
  if (size_ == 0) head_ = 0;
  if (was_full) wq_.Notify(kWritable);
  return done;
}

SysResult<size_t> Pipe::Write(absl::Span<const iovec> src) {
  ASSIGN_OR_RETURN_ERRNO(size_t want, vfs::IovecsLength(src));
  if (want == 0) return size_t{0};
  if (readers_ == 0) return Errno{EPIPE};
  size_t room = capacity_ - size_;
  if (room == 0 || (want <= kPipeBuf && want > room)) return Errno{EAGAIN};
  size_t n = std::min(want, room);
  // The ring is allocated on first write (most pipes carry little), re-packed so that
  // head_ stays meaningful.
  if (ring_.size() < capacity_) {
    std::vector<uint8_t> grown(capacity_);
    for (size_t i = 0; i < size_; ++i) grown[i] = ring_[(head_ + i) % ring_.size()];
    ring_ = std::move(grown);
    head_ = 0;
  }
  size_t done = 0;
  for (const iovec& v : src) {
    size_t off = 0;
    while (off < v.iov_len && done < n) {
      size_t tail = (head_ + size_) % ring_.size();
      size_t run = std::min({v.iov_len - off, n - done, ring_.size() - tail});
      memcpy(ring_.data() + tail, static_cast<const uint8_t*>(v.iov_base) + off, run);
      size_ += run;
      off += run;
      done += run;
    }
    if (done == n) break;
  }
  wq_.Notify(kReadable);
  return done;
}

size_t Pipe::Peek(uint8_t* dst, size_t len, size_t skip) const {
  if (skip >= size_) return 0;
  size_t n = std::min(len, size_ - skip);
  for (size_t done = 0; done < n;) {
    size_t pos = (head_ + skip + done) % ring_.size();
    size_t run = std::min(n - done, ring_.size() - pos);
    memcpy(dst + done, ring_.data() + pos, run);
    done += run;
  }
  return n;
}

void Pipe::Consume(size_t n) {
  n = std::min(n, size_);
  if (n == 0) return;
  head_ = (head_ + n) % ring_.size();
  size_ -= n;
  if (size_ == 0) head_ = 0;
  wq_.Notify(kWritable);
}

EventMask Pipe::ReaderReadiness(EventMask mask) const {
  EventMask r = 0;
  if (size_ > 0) r |= kReadable;
  if (writers_ == 0) r |= POLLHUP;
  return r & (mask | POLLHUP);
}

EventMask Pipe::WriterReadiness(EventMask mask) const {
  EventMask r = 0;
  // Linux reports POLLOUT while a page is free: enough for an atomic PIPE_BUF write.
  if (capacity_ - size_ >= std::min(kPipeBuf, capacity_)) r |= kWritable;
  if (readers_ == 0) r |= POLLERR;
  return r & (mask | POLLERR);
}

SysResult<size_t> Pipe::SetCapacity(size_t bytes) {
  if (bytes > kMaxPipeSize) return Errno{EINVAL};
  size_t cap = std::max<size_t>(kPipeBuf, (bytes + kPipeBuf - 1) / kPipeBuf * kPipeBuf);
  // Linux rounds to a power of two number of pages.
  size_t pages = 1;
  while (pages * kPipeBuf < cap) pages <<= 1;
  cap = pages * kPipeBuf;
  if (cap < size_) return Errno{EBUSY};
  std::vector<uint8_t> fresh(std::max(cap, size_));
  for (size_t i = 0; i < size_; ++i) fresh[i] = ring_[(head_ + i) % ring_.size()];
  ring_ = std::move(fresh);
  head_ = 0;
  capacity_ = cap;
  wq_.Notify(kWritable);
  return cap;
}

void Pipe::RemoveReader() {
  if (--readers_ == 0) wq_.Notify(POLLERR | kWritable);
}

void Pipe::RemoveWriter() {
  if (--writers_ == 0) wq_.Notify(POLLHUP | kReadable);
}

// --- PipeDescription ---

PipeDescription::PipeDescription(std::shared_ptr<Pipe> pipe, vfs::Path path, int flags)
    : FileDescription(std::move(path), flags), pipe_(std::move(pipe)) {
  int mode = flags & O_ACCMODE;
  reader_ = mode == O_RDONLY || mode == O_RDWR;
  writer_ = mode == O_WRONLY || mode == O_RDWR;
  if (reader_) pipe_->AddReader();
  if (writer_) pipe_->AddWriter();
}

PipeDescription::~PipeDescription() {
  if (reader_) pipe_->RemoveReader();
  if (writer_) pipe_->RemoveWriter();
}

SysResult<size_t> PipeDescription::Read(Task*, absl::Span<const iovec> dst, int64_t offset) {
  if (offset != -1) return Errno{ESPIPE};
  return pipe_->Read(dst);
}

SysResult<size_t> PipeDescription::Write(Task* task, absl::Span<const iovec> src, int64_t offset) {
  if (offset != -1) return Errno{ESPIPE};
  auto r = pipe_->Write(src);
  if (!r.ok() && r.error() == EPIPE && task != nullptr) SendSigpipe(*task);
  return r;
}

SysResult<vfs::Attr> PipeDescription::Stat() {
  if (path_.valid()) return path_.inode()->Stat();  // a FIFO: the inode's attributes
  vfs::Attr a;
  a.dev = kPipefsDev;
  a.ino = pipe_->id();
  a.mode = S_IFIFO | 0600;
  a.blksize = kPipeBuf;
  a.atime = a.mtime = a.ctime = vfs::NowTimespec();
  return a;
}

SysResult<uint64_t> PipeDescription::Ioctl(Task& task, uint64_t cmd, uint64_t arg) {
  if (cmd != FIONREAD) return Errno{ENOTTY};
  // Linux answers FIONREAD on either end with the buffered byte count.
  int n = static_cast<int>(pipe_->size());
  RETURN_IF_ERRNO(task.mm().CopyOutObj(mm::GuestAddr(arg), n));
  return uint64_t{0};
}

EventMask PipeDescription::Readiness(EventMask mask) {
  EventMask r = 0;
  if (reader_) r |= pipe_->ReaderReadiness(mask);
  if (writer_) r |= pipe_->WriterReadiness(mask);
  return r;
}

std::string PipeDescription::AnonName() const { return absl::StrCat("pipe:[", pipe_->id(), "]"); }

PipeEnds NewPipe(int status_flags) {
  auto pipe = std::make_shared<Pipe>();
  int extra = status_flags & (O_NONBLOCK | O_DIRECT);
  PipeEnds ends;
  ends.read = std::make_shared<PipeDescription>(pipe, vfs::Path{}, O_RDONLY | extra);
  ends.write = std::make_shared<PipeDescription>(pipe, vfs::Path{}, O_WRONLY | extra);
  return ends;
}

std::shared_ptr<vfs::FileDescription> NewPipeEnd(std::shared_ptr<Pipe> pipe, vfs::Path path,
                                                 int flags) {
  return std::make_shared<PipeDescription>(std::move(pipe), std::move(path), flags);
}

SysResult<uint64_t> PipeFcntl(vfs::FileDescription& file, int cmd, uint64_t arg) {
  auto* p = dynamic_cast<PipeDescription*>(&file);
  if (p == nullptr) return Errno{EBADF};
  if (cmd == F_GETPIPE_SZ) return uint64_t{p->pipe().capacity()};
  if (cmd == F_SETPIPE_SZ) {
    ASSIGN_OR_RETURN_ERRNO(size_t cap, p->pipe().SetCapacity(static_cast<uint32_t>(arg)));
    return uint64_t{cap};
  }
  return Errno{EINVAL};
}

}  // namespace usentry::sentry::fsimpl

namespace usentry::sentry::fsimpl {

SysResult<std::shared_ptr<vfs::FileDescription>> PipeDescription::Reopen(int flags) {
  return NewPipeEnd(pipe_, vfs::Path{}, flags);
}

}  // namespace usentry::sentry::fsimpl
