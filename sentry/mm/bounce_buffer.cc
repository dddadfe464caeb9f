// The pool behind BounceBuffer: at most as many buffers as threads ever used one at once.
#include "sentry/mm/bounce_buffer.h"

#include <vector>

#include "absl/synchronization/mutex.h"

namespace usentry::sentry::mm {
namespace {
absl::Mutex pool_mu;
std::vector<std::unique_ptr<uint8_t[]>>& Pool() ABSL_EXCLUSIVE_LOCKS_REQUIRED(pool_mu) {
  static auto* pool = new std::vector<std::unique_ptr<uint8_t[]>>;
  return *pool;
}
}  // namespace

BounceBuffer::BounceBuffer() {
  {
    absl::MutexLock lock(&pool_mu);
    if (!Pool().empty()) {
      buf_ = std::move(Pool().back());
      Pool().pop_back();
      return;
    }
  }
  buf_.reset(new uint8_t[kSize]);
}

BounceBuffer::~BounceBuffer() {
  absl::MutexLock lock(&pool_mu);
  Pool().push_back(std::move(buf_));
}

}  // namespace usentry::sentry::mm
