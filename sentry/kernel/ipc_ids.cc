#include "sentry/kernel/ipc_ids.h"

#include <algorithm>

namespace usentry::sentry {
namespace {
// The smallest window the cyclic search wraps in (Linux's ipc_min_cycle).
constexpr int kMinCycle = 64;
}  // namespace

SysResult<IpcIds::Allocation> IpcIds::Allocate(int limit) {
  if (in_use() >= std::min(limit, kMaxIndices)) return Errno{ENOSPC};
  const int window = std::min(std::max(in_use() * 3 / 2, kMinCycle), kMaxIndices);
  // The lowest free index in [from, window), or -1.
  auto lowest_free = [&](int from) {
    for (int i = from; i < window; i++) {
      if (!used_.contains(i)) return i;
    }
    return -1;
  };
  int index = lowest_free(next_);
  if (index < 0 && next_ > 0) index = lowest_free(0);
  if (index < 0) return Errno{ENOSPC};
  next_ = index + 1;
  if (index <= last_idx_ && ++seq_ >= kSeqMax) seq_ = 0;
  last_idx_ = index;
  used_.insert(index);
  return Allocation{index, seq_, static_cast<int32_t>((int32_t{seq_} << kSeqShift) + index)};
}

void IpcIds::Release(int index) { used_.erase(index); }

int IpcIds::MaxIndexForInfo() const { return used_.empty() ? 0 : *used_.rbegin(); }

}  // namespace usentry::sentry
