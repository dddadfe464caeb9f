// IpcIds: how System V IPC ids are handed out in one IPC namespace, as Linux does it:
// an id is seq * 32768 + index. Indices are allocated cyclically (the lowest free one
// at or after the last allocated, wrapping within a window of max(64, 1.5 * in use)),
// and the sequence number advances each time allocation wraps to an index at or below
// the previous one, so a removed object's id is not soon given to a new one.
#ifndef USENTRY_SENTRY_KERNEL_IPC_IDS_H_
#define USENTRY_SENTRY_KERNEL_IPC_IDS_H_

#include <cstdint>
#include <set>

#include "sentry/kernel/sys_result.h"

namespace usentry::sentry {

class IpcIds {
 public:
  static constexpr int kMaxIndices = 32768;  // IPCMNI: indices are 0..32767
  static constexpr int kSeqShift = 15;
  static constexpr int kSeqMax = INT32_MAX >> kSeqShift;  // sequence numbers wrap here

  struct Allocation {
    int index;
    uint16_t seq;
    int32_t id;
  };

  // A fresh index and id; ENOSPC once `limit` objects exist (shmmni...).
  SysResult<Allocation> Allocate(int limit);
  // Frees `index` (the object is gone).
  void Release(int index);

  static int IndexOf(int32_t id) { return id & (kMaxIndices - 1); }
  static int SeqOf(int32_t id) { return id >> kSeqShift; }

  int in_use() const { return static_cast<int>(used_.size()); }
  // What IPC_INFO and SHM_INFO return: the highest index in use, 0 when none.
  int MaxIndexForInfo() const;

 private:
  std::set<int> used_;
  int next_ = 0;       // where the cyclic search starts
  int last_idx_ = -1;  // the index allocated last
  uint16_t seq_ = 0;
};

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_IPC_IDS_H_
