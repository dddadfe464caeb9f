// ByteQueue.
#include "sentry/net/byte_queue.h"

#include <algorithm>

#include "sentry/net/socket.h"

namespace usentry::sentry::net {

void ByteQueue::Append(absl::Span<const iovec> src, size_t off, size_t n) {
  if (n == 0) return;
  chunks_.push_back(Chunk{GatherSpans(src, off, n), 0});
  size_ += n;
}

size_t ByteQueue::CopyOut(size_t skip, absl::Span<const iovec> dst, size_t dst_off,
                          size_t n) const {
  size_t done = 0;
  for (const Chunk& c : chunks_) {
    if (done == n) break;
    size_t avail = c.data.size() - c.off;
    if (skip >= avail) {
      skip -= avail;
      continue;
    }
    size_t run = std::min(avail - skip, n - done);
    CopyToSpans(dst, dst_off + done, c.data.data() + c.off + skip, run);
    done += run;
    skip = 0;
  }
  return done;
}

void ByteQueue::Consume(size_t n) {
  n = std::min(n, size_);
  size_ -= n;
  while (n > 0) {
    Chunk& c = chunks_.front();
    size_t avail = c.data.size() - c.off;
    if (n < avail) {
      c.off += n;
      return;
    }
    n -= avail;
    chunks_.pop_front();
  }
}

void ByteQueue::Clear() {
  chunks_.clear();
  size_ = 0;
}

}  // namespace usentry::sentry::net
