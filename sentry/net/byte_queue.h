// ByteQueue: the bytes of a stream socket's receive queue, as a list of chunks (one per
// write) so that appends and reads cost one copy each.
#ifndef USENTRY_SENTRY_NET_BYTE_QUEUE_H_
#define USENTRY_SENTRY_NET_BYTE_QUEUE_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "absl/types/span.h"

namespace usentry::sentry::net {

class ByteQueue {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Appends `n` bytes of `src` starting `off` bytes into it.
  void Append(absl::Span<const iovec> src, size_t off, size_t n);
  // Copies up to `n` bytes from `skip` bytes into the queue to `dst` at `dst_off`;
  // returns how many.
  size_t CopyOut(size_t skip, absl::Span<const iovec> dst, size_t dst_off, size_t n) const;
  // Drops the first `n` bytes (n <= size()).
  void Consume(size_t n);
  void Clear();

 private:
  struct Chunk {
    std::vector<uint8_t> data;
    size_t off = 0;  // bytes already consumed
  };
  std::deque<Chunk> chunks_;
  size_t size_ = 0;
};

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_BYTE_QUEUE_H_
