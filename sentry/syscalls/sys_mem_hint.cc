// Memory residency and ordering calls: the mlock family, mincore, membarrier.
//
// Every app page lives in the sentry's MemoryFile and is never swapped by the sentry,
// so locking only validates the range. mincore reports which pages the memory file
// actually holds (SEEK_DATA/SEEK_HOLE on it), which is what "resident" means here.
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/sys_sched.h"

namespace usentry::sentry {
namespace {

constexpr int kCapIpcLock = 14;

// The page-rounded span mlock/munlock act on; ENOMEM if any page of it is unmapped.
SysStatus CheckMapped(Task& t, uint64_t start, uint64_t len) {
  const uint64_t end_unrounded = start + len;
  if (end_unrounded < start) return Errno{EINVAL};
  start &= ~(mm::kPageSize - 1);
  const uint64_t end = (end_unrounded + mm::kPageSize - 1) & ~(mm::kPageSize - 1);
  if (end < end_unrounded) return Errno{ENOMEM};
  const auto& vmas = t.mm().vmas();
  for (uint64_t a = start; a < end;) {
    auto it = vmas.upper_bound(a);
    if (it == vmas.begin()) return Errno{ENOMEM};
    --it;
    if (it->second.end <= a) return Errno{ENOMEM};
    a = it->second.end;
  }
  return SysOk();
}

// Linux's can_do_mlock: RLIMIT_MEMLOCK room or CAP_IPC_LOCK. The limit itself is not
// charged (nothing is ever paged out to make room for).
SysStatus CanLock(Task& t) {
  if (t.creds().HasCapability(kCapIpcLock)) return SysOk();
  if (t.thread_group().rlimits[RLIMIT_MEMLOCK].rlim_cur != 0) return SysOk();
  return Errno{EPERM};
}

}  // namespace

SyscallResult SysMlock(Task& t, const SyscallArgs& a) {
  RETURN_IF_ERRNO(CanLock(t));
  RETURN_IF_ERRNO(CheckMapped(t, a.u64(0), a.u64(1)));
  return 0;
}

SyscallResult SysMlock2(Task& t, const SyscallArgs& a) {
  if (a.u32(2) & ~MLOCK_ONFAULT) return Errno{EINVAL};
  return SysMlock(t, a);
}

SyscallResult SysMunlock(Task& t, const SyscallArgs& a) {
  RETURN_IF_ERRNO(CheckMapped(t, a.u64(0), a.u64(1)));
  return 0;
}

SyscallResult SysMlockall(Task& t, const SyscallArgs& a) {
  int flags = a.i32(0);
  if (flags == 0 || (flags & ~(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)) || flags == MCL_ONFAULT) {
    return Errno{EINVAL};
  }
  RETURN_IF_ERRNO(CanLock(t));
  return 0;
}

SyscallResult SysMunlockall(Task&, const SyscallArgs&) { return 0; }

namespace {

// Fills vec[0, (end - start) / page) for the page-aligned [start, end); ENOMEM at the
// first unmapped page.
SysStatus MincoreRange(Task& t, uint64_t start, uint64_t end, uint8_t* vec) {
  const auto& vmas = t.mm().vmas();
  for (uint64_t addr = start; addr < end;) {
    auto it = vmas.upper_bound(addr);
    if (it == vmas.begin()) return Errno{ENOMEM};
    --it;
    const mm::Vma& v = it->second;
    if (v.end <= addr) return Errno{ENOMEM};
    const uint64_t stop = std::min(end, v.end);
    if (v.host) {  // the vDSO block: always resident
      memset(vec + (addr - start) / mm::kPageSize, 1, (stop - addr) / mm::kPageSize);
      addr = stop;
      continue;
    }
    // Memory-file offsets of [addr, stop) and which of them hold data.
    const int fd = v.range->file()->fd();
    const uint64_t base = v.range->offset() + v.range_off + (addr - v.start);
    const uint64_t limit = base + (stop - addr);
    for (uint64_t off = base; off < limit;) {
      off_t data = lseek(fd, static_cast<off_t>(off), SEEK_DATA);
      if (data < 0 || static_cast<uint64_t>(data) >= limit) break;  // ENXIO: holes to the end
      off_t hole = lseek(fd, data, SEEK_HOLE);
      const uint64_t data_end = hole < 0 ? limit : std::min<uint64_t>(limit, hole);
      for (uint64_t p = static_cast<uint64_t>(data) & ~(mm::kPageSize - 1); p < data_end;
           p += mm::kPageSize) {
        vec[(addr - start + (p - base)) / mm::kPageSize] = 1;
      }
      off = std::max<uint64_t>(data_end, off + 1);
    }
    addr = stop;
  }
  return {};
}

}  // namespace

// mincore(addr, len, vec): one byte per page, bit 0 = the memory file holds the page.
// Works through the range a bounded chunk at a time, as Linux does: the length is the
// app's, and a vector sized by it would let one call exhaust the sentry's memory.
SyscallResult SysMincore(Task& t, const SyscallArgs& a) {
  constexpr uint64_t kChunkPages = 16384;
  const uint64_t start = a.u64(0);
  const uint64_t len = a.u64(1);
  if (start & (mm::kPageSize - 1)) return Errno{EINVAL};
  if (len > t.mm().max_user() || start > t.mm().max_user() - len) return Errno{ENOMEM};
  const uint64_t end = (start + len + mm::kPageSize - 1) & ~(mm::kPageSize - 1);
  std::vector<uint8_t> vec;
  for (uint64_t chunk = start; chunk < end;) {
    const uint64_t chunk_end = std::min(end, chunk + kChunkPages * mm::kPageSize);
    vec.assign((chunk_end - chunk) / mm::kPageSize, 0);
    RETURN_IF_ERRNO(MincoreRange(t, chunk, chunk_end, vec.data()));
    RETURN_IF_ERRNO(
        t.mm().CopyOut(a.ptr(2) + (chunk - start) / mm::kPageSize, vec.data(), vec.size()));
    chunk = chunk_end;
  }
  return 0;
}

// membarrier(cmd, flags, cpu_id). Every entry into and exit from the sentry is a full
// barrier of the thread concerned, and today each process has at most one thread
// running app code at a time (CLONE_THREAD is pending), so a barrier has nobody else to
// order and completes at once. Registrations are tracked so that the PRIVATE commands
// fail with EPERM before registering, as on Linux; the RSEQ commands are EINVAL (no
// rseq(2) here).
namespace {
// Makes every other app thread that may be running on another CPU pass a full memory
// barrier before we return: they are host threads of the stub processes, and the host's
// MEMBARRIER_CMD_GLOBAL (an RCU grace period, milliseconds) makes every running thread
// on the host do that. Skipped when no other thread shares the caller's memory, the
// common case, since then there is no one to order against. The kernel lock is dropped
// around the wait so other tasks keep running.
SyscallResult HostBarrier(Task& t, bool global) {
  if (!global && t.thread_group().tasks.size() <= 1 && t.mm_ptr().use_count() == 1) return 0;
  t.kernel().mu.Unlock();
  long rc = syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
  t.kernel().mu.Lock();
  // The host always supports GLOBAL on kernels we run on; if not, say so rather than
  // pretend the barrier happened.
  if (rc != 0) return Errno{ENOSYS};
  return 0;
}
}  // namespace

SyscallResult SysMembarrier(Task& t, const SyscallArgs& a) {
  const int cmd = a.i32(0);
  if (a.u32(1) != 0) return Errno{EINVAL};
  constexpr int kSupported =
      MEMBARRIER_CMD_GLOBAL | MEMBARRIER_CMD_GLOBAL_EXPEDITED |
      MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED | MEMBARRIER_CMD_PRIVATE_EXPEDITED |
      MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED | MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE |
      MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE | (1 << 9) /* GET_REGISTRATIONS */;
  int& registered = t.thread_group().sched.membarrier_registered;
  switch (cmd) {
    case MEMBARRIER_CMD_QUERY:
      return kSupported;
    case MEMBARRIER_CMD_GLOBAL:
    case MEMBARRIER_CMD_GLOBAL_EXPEDITED:
      return HostBarrier(t, /*global=*/true);
    case MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED:
    case MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED:
    case MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE:
      registered |= cmd;
      return 0;
    case MEMBARRIER_CMD_PRIVATE_EXPEDITED:
      if (!(registered & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)) return Errno{EPERM};
      return HostBarrier(t, /*global=*/false);
    case MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE:
      if (!(registered & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE)) {
        return Errno{EPERM};
      }
      return HostBarrier(t, /*global=*/false);
    case 1 << 9:  // MEMBARRIER_CMD_GET_REGISTRATIONS
      return static_cast<uint64_t>(registered);
    default:
      return Errno{EINVAL};
  }
}

}  // namespace usentry::sentry
