// Pipes: the shared buffer and its read/write end descriptions (pipe(2), pipe(7)), for
// anonymous pipes now and named FIFOs later (a FIFO inode holds a Pipe and opens ends
// on it with NewPipeEnd).
//
// All methods run under Kernel::mu. End descriptions count themselves as readers or
// writers for their whole life, so closing an end (dropping its last reference) is what
// makes the other side see EOF / EPIPE.
#ifndef USENTRY_SENTRY_FSIMPL_PIPE_H_
#define USENTRY_SENTRY_FSIMPL_PIPE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "sentry/kernel/sys_result.h"
#include "sentry/kernel/wait_queue.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry::fsimpl {

inline constexpr size_t kPipeBuf = 4096;             // PIPE_BUF: atomic write size
inline constexpr size_t kDefaultPipeSize = 65536;    // like Linux (16 pages)
inline constexpr size_t kMaxPipeSize = 1024 * 1024;  // /proc/sys/fs/pipe-max-size

class Pipe {
 public:
  Pipe();
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

  // Copies up to the iovecs' length out of the buffer. EAGAIN when empty while a writer
  // exists; 0 (EOF) when empty without writers.
  SysResult<size_t> Read(absl::Span<const iovec> dst);
  // EPIPE without readers (the caller raises SIGPIPE); writes <= kPipeBuf are all or
  // nothing (EAGAIN), larger ones may be partial; EAGAIN when nothing fits.
  SysResult<size_t> Write(absl::Span<const iovec> src);
  // splice/tee: copies up to `len` buffered bytes, starting `skip` bytes past the head,
  // into `dst` without consuming them; Consume(n) then drops the first n (n <= size()).
  size_t Peek(uint8_t* dst, size_t len, size_t skip) const;
  void Consume(size_t n);
  // Poll bits for a reader / writer end among `mask`.
  EventMask ReaderReadiness(EventMask mask) const;
  EventMask WriterReadiness(EventMask mask) const;

  size_t size() const { return size_; }  // bytes buffered (FIONREAD)
  size_t capacity() const { return capacity_; }
  // F_SETPIPE_SZ: rounds up to a page (at least one), EINVAL past kMaxPipeSize, EBUSY if
  // the buffered data would not fit. Returns the new capacity.
  SysResult<size_t> SetCapacity(size_t bytes);
  uint64_t id() const { return id_; }  // the inode number shown as pipe:[id]
  WaitQueue& wait_queue() { return wq_; }

  // Reader/writer accounting, done by the end descriptions.
  void AddReader() { ++readers_; }
  void AddWriter() { ++writers_; }
  void RemoveReader();
  void RemoveWriter();
  int readers() const { return readers_; }
  int writers() const { return writers_; }

 private:
  uint64_t id_;
  std::vector<uint8_t> ring_;  // grows lazily up to capacity_
  size_t capacity_ = kDefaultPipeSize;
  size_t head_ = 0;  // index of the first buffered byte in ring_
  size_t size_ = 0;
  int readers_ = 0;
  int writers_ = 0;
  WaitQueue wq_;
};

// One end (or both, for a FIFO opened O_RDWR) of a pipe, as an open file.
class PipeDescription : public vfs::FileDescription {
 public:
  // `flags` access mode decides the role: O_RDONLY reader, O_WRONLY writer, O_RDWR both.
  PipeDescription(std::shared_ptr<Pipe> pipe, vfs::Path path, int flags);
  ~PipeDescription() override;

  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  // Raises SIGPIPE on `task` (if non-null) when there is no reader, like Linux.
  SysResult<size_t> Write(Task* task, absl::Span<const iovec> src, int64_t offset) override;
  SysResult<vfs::Attr> Stat() override;
  SysResult<uint64_t> Ioctl(Task& task, uint64_t cmd, uint64_t arg) override;
  EventMask Readiness(EventMask mask) override;
  WaitQueue* wait_queue() override { return &pipe_->wait_queue(); }
  std::string AnonName() const override;
  // A new end of the same pipe; the access mode decides which end.
  SysResult<std::shared_ptr<vfs::FileDescription>> Reopen(int flags) override;

  Pipe& pipe() { return *pipe_; }
  const std::shared_ptr<Pipe>& pipe_ptr() const { return pipe_; }

 private:
  std::shared_ptr<Pipe> pipe_;
  bool reader_;
  bool writer_;
};

struct PipeEnds {
  std::shared_ptr<vfs::FileDescription> read;
  std::shared_ptr<vfs::FileDescription> write;
};
// A new anonymous pipe. `status_flags` may carry O_NONBLOCK (O_CLOEXEC is per FD).
PipeEnds NewPipe(int status_flags);

// For FIFOs (later): an end on an existing pipe reached through `path`.
std::shared_ptr<vfs::FileDescription> NewPipeEnd(std::shared_ptr<Pipe> pipe, vfs::Path path,
                                                 int flags);

// fcntl F_GETPIPE_SZ / F_SETPIPE_SZ, for the VFS owner's fcntl to call. EBADF for files
// that are not pipes (as Linux).
SysResult<uint64_t> PipeFcntl(vfs::FileDescription& file, int cmd, uint64_t arg);

// Sends SIGPIPE to the writing thread (si_code SI_USER, sender = the writer itself, as
// Linux's send_sig(SIGPIPE, current, 0)). Lives in pipe_signal.cc so that pipe.cc does
// not pull the signal code into tests.
void SendSigpipe(Task& task);

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_PIPE_H_
