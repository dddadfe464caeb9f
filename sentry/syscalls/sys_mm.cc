// Memory syscalls: thin argument handling over mm::MemoryManager.
#include "sentry/syscalls/sys_mm.h"

#include <sys/mman.h>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/limits.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry {

namespace {
constexpr int kProtMask = PROT_READ | PROT_WRITE | PROT_EXEC;
// Flags MAP_SHARED_VALIDATE accepts; anything else is EOPNOTSUPP there.
constexpr int kKnownMapFlags = MAP_SHARED | MAP_PRIVATE | MAP_SHARED_VALIDATE | MAP_FIXED |
                               MAP_ANONYMOUS | MAP_GROWSDOWN | MAP_DENYWRITE | MAP_EXECUTABLE |
                               MAP_LOCKED | MAP_NORESERVE | MAP_POPULATE | MAP_NONBLOCK |
                               MAP_STACK | MAP_HUGETLB | MAP_FIXED_NOREPLACE | MAP_32BIT;
}  // namespace

SyscallResult SysMmap(Task& t, const SyscallArgs& a) {
  mm::MMapOpts o;
  o.addr = a.ptr(0);
  o.len = a.u64(1);
  o.prot = a.i32(2);
  o.flags = a.i32(3);
  int fd = a.i32(4);
  o.file_off = a.u64(5);
  if (o.prot & ~kProtMask) return Errno{EINVAL};
  if ((o.flags & MAP_TYPE) == MAP_SHARED_VALIDATE && (o.flags & ~kKnownMapFlags)) {
    return Errno{EOPNOTSUPP};
  }
  if (o.flags & MAP_HUGETLB) return Errno{EINVAL};
  if (!(o.flags & MAP_ANONYMOUS)) {
    ASSIGN_OR_RETURN_ERRNO(std::shared_ptr<vfs::FileDescription> file, t.fds().Get(fd));
    if (!file->readable()) return Errno{EACCES};
    bool shared = (o.flags & MAP_TYPE) != MAP_PRIVATE;
    if (shared && (o.prot & PROT_WRITE) && !file->writable()) return Errno{EACCES};
    if (shared && !file->writable()) o.max_prot &= ~PROT_WRITE;
    RETURN_IF_ERRNO(file->ConfigureMMap(o));
  } else {
    o.file_off = 0;
  }
  // --memory: accountable memory (what Linux's overcommit accounting charges) that can
  // never fit fails now; pages touched later are the watchdog's (kernel/limits.h).
  const bool accountable =
      o.prot != PROT_NONE && !(o.flags & MAP_NORESERVE) &&
      ((o.flags & MAP_ANONYMOUS) || ((o.flags & MAP_TYPE) == MAP_PRIVATE && (o.prot & PROT_WRITE)));
  if (accountable && !t.kernel().limits().MemoryMayGrow(t, o.len, "mmap")) return Errno{ENOMEM};
  ASSIGN_OR_RETURN_ERRNO(mm::GuestAddr addr, t.mm().MMap(o));
  return addr.value();
}

SyscallResult SysMunmap(Task& t, const SyscallArgs& a) {
  RETURN_IF_ERRNO(t.mm().MUnmap(a.ptr(0), a.u64(1)));
  return 0;
}

SyscallResult SysMprotect(Task& t, const SyscallArgs& a) {
  RETURN_IF_ERRNO(t.mm().MProtect(a.ptr(0), a.u64(1), a.i32(2)));
  return 0;
}

SyscallResult SysBrk(Task& t, const SyscallArgs& a) {
  const uint64_t want = a.u64(0), cur = t.mm().brk();
  // brk(2) reports failure by returning the unchanged break.
  if (want > cur && !t.kernel().limits().MemoryMayGrow(t, want - cur, "brk")) return cur;
  ASSIGN_OR_RETURN_ERRNO(mm::GuestAddr b, t.mm().Brk(a.ptr(0)));
  return b.value();
}

SyscallResult SysMremap(Task& t, const SyscallArgs& a) {
  const uint64_t old_len = a.u64(1), new_len = a.u64(2);
  if (new_len > old_len && !t.kernel().limits().MemoryMayGrow(t, new_len - old_len, "mremap")) {
    return Errno{ENOMEM};
  }
  ASSIGN_OR_RETURN_ERRNO(mm::GuestAddr r,
                         t.mm().MRemap(a.ptr(0), a.u64(1), a.u64(2), a.i32(3), a.ptr(4)));
  return r.value();
}

SyscallResult SysMadvise(Task& t, const SyscallArgs& a) {
  int advice = a.i32(2);
  if (!a.ptr(0).PageAligned()) return Errno{EINVAL};
  switch (advice) {
    case MADV_DONTNEED:
    case MADV_FREE:  // may free lazily; freeing now is a valid implementation
      RETURN_IF_ERRNO(t.mm().MAdviseDontNeed(a.ptr(0), a.u64(1)));
      return 0;
    case MADV_NORMAL:
    case MADV_RANDOM:
    case MADV_SEQUENTIAL:
    case MADV_WILLNEED:
    case MADV_DONTFORK:  // hints, or fork behaviour we do not need to distinguish yet
    case MADV_DOFORK:
    case MADV_HUGEPAGE:
    case MADV_NOHUGEPAGE:
    case MADV_DONTDUMP:
    case MADV_DODUMP:
    case MADV_MERGEABLE:
    case MADV_UNMERGEABLE:
      return 0;
    default:
      return Errno{EINVAL};
  }
}

SyscallResult SysMsync(Task& t, const SyscallArgs& a) {
  RETURN_IF_ERRNO(t.mm().MSync(a.ptr(0), a.u64(1), a.i32(2)));
  return 0;
}

}  // namespace usentry::sentry
