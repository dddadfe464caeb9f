// System V shared memory: the handlers over the kernel's ShmRegistry
// (sentry/kernel/shm_registry.h). An attachment is a MAP_SHARED mapping of the
// segment's MemoryFile pages, whose VMAs the segment counts (shm_nattch), so fork,
// exec, exit, munmap and mremap attach and detach as on Linux.
#include "sentry/syscalls/sys_shm.h"

#include <sys/mman.h>
#include <sys/resource.h>

#include <utility>
#include <vector>

#include "abi/ipc.h"
#include "absl/strings/str_format.h"
#include "sentry/fsimpl/procfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/limits.h"
#include "sentry/kernel/shm_registry.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"

namespace usentry::sentry {

// Kernel::shm() lives here so that kernel.cc need not know the registry: attaches and
// detaches made inside mm (fork, exit, munmap) learn their process from the task of
// the current host thread.
ShmRegistry& Kernel::shm() {
  if (!shm_) {
    shm_ = std::make_shared<ShmRegistry>(mf_.get(), []() -> int32_t {
      Task* t = fsimpl::CurrentTask();
      return t != nullptr ? t->thread_group().pid() : 0;
    });
  }
  return *shm_;
}

namespace {

// The device number /proc/PID/maps shows for attachments (shmem's, like memfds here).
constexpr uint64_t kShmDev = 0x1;

abi::ShmidDs ToShmidDs(const ShmStatus& s) {
  abi::ShmidDs ds{};
  ds.perm.key = s.perm.key;
  ds.perm.uid = s.perm.uid;
  ds.perm.gid = s.perm.gid;
  ds.perm.cuid = s.perm.cuid;
  ds.perm.cgid = s.perm.cgid;
  ds.perm.mode = s.perm.mode;
  ds.perm.seq = s.perm.seq;
  ds.segsz = s.size;
  ds.atime = s.atime;
  ds.dtime = s.dtime;
  ds.ctime = s.ctime;
  ds.cpid = s.cpid;
  ds.lpid = s.lpid;
  ds.nattch = s.nattch;
  return ds;
}

// Whether the VMA attaches a segment at `addr`: a fragment left by munmap/mprotect
// starts as far above `addr` as its offset into the segment.
ShmSegment* AttachedAt(const mm::Vma& v, uint64_t addr) {
  auto* seg = dynamic_cast<ShmSegment*>(v.observer.get());
  if (seg == nullptr || v.start < addr || v.start - addr != v.range_off) return nullptr;
  return seg;
}

}  // namespace

SyscallResult SysShmget(Task& t, const SyscallArgs& a) {
  Kernel& k = t.kernel();
  ASSIGN_OR_RETURN_ERRNO(
      int32_t id,
      k.shm().Get(t.creds(), t.thread_group().pid(), a.i32(0), a.u64(1), a.i32(2),
                  [&](uint64_t bytes) { return k.limits().MemoryMayGrow(t, bytes, "shmget"); }));
  return static_cast<uint64_t>(id);
}

SyscallResult SysShmat(Task& t, const SyscallArgs& a) {
  const int32_t id = a.i32(0);
  uint64_t addr = a.u64(1);
  const int flags = a.i32(2);
  if (id < 0) return Errno{EINVAL};
  mm::MMapOpts o;
  o.flags = MAP_SHARED;
  if (addr != 0) {
    if (addr & (abi::kShmLba - 1)) {
      if (!(flags & abi::kShmRnd)) return Errno{EINVAL};
      addr &= ~(abi::kShmLba - 1);
      if (addr == 0 && (flags & abi::kShmRemap)) return Errno{EINVAL};
    }
    // Without SHM_REMAP the range must be free (EINVAL, checked below).
    o.flags |= (flags & abi::kShmRemap) ? MAP_FIXED : MAP_FIXED_NOREPLACE;
  } else if (flags & abi::kShmRemap) {
    return Errno{EINVAL};
  }
  uint32_t access = 0444;
  o.prot = PROT_READ;
  o.max_prot = PROT_READ | PROT_EXEC;
  if (!(flags & abi::kShmRdonly)) {
    access |= 0222;
    o.prot |= PROT_WRITE;
    o.max_prot |= PROT_WRITE;
  }
  if (flags & abi::kShmExec) {
    access |= 0111;
    o.prot |= PROT_EXEC;
  }
  ASSIGN_OR_RETURN_ERRNO(std::shared_ptr<ShmSegment> seg,
                         t.kernel().shm().ForAttach(t.creds(), id, access));
  ShmPin pin(seg);
  if (addr != 0 && !(flags & abi::kShmRemap) && addr + seg->size() < addr) return Errno{EINVAL};
  o.addr = mm::GuestAddr(addr);
  o.len = seg->size();
  o.shared_pages = seg->pages();
  o.observer = seg;
  o.name = absl::StrFormat("/SYSV%08x (deleted)", static_cast<uint32_t>(seg->creation_key()));
  o.dev = kShmDev;
  o.ino = static_cast<uint32_t>(seg->id());
  SysResult<mm::GuestAddr> at = t.mm().MMap(o);
  if (!at.ok()) return Errno{at.error() == EEXIST ? EINVAL : at.error()};
  return at->value();
}

SyscallResult SysShmdt(Task& t, const SyscallArgs& a) {
  const uint64_t addr = a.u64(0);
  if (addr & (mm::kPageSize - 1)) return Errno{EINVAL};
  // Like Linux: the first VMA at or above `addr` that attaches a segment at `addr` names
  // the segment; its other VMAs attached at `addr` within the segment's size above it
  // go too, so a detach also undoes munmap/mprotect splits.
  const auto& vmas = t.mm().vmas();
  auto it = vmas.upper_bound(addr);
  if (it != vmas.begin() && std::prev(it)->second.end > addr) --it;
  const ShmSegment* seg = nullptr;
  std::vector<std::pair<uint64_t, uint64_t>> doomed;
  for (; it != vmas.end() && seg == nullptr; ++it) {
    seg = AttachedAt(it->second, addr);
    if (seg != nullptr) doomed.emplace_back(it->second.start, it->second.end);
  }
  if (seg == nullptr) return Errno{EINVAL};
  const uint64_t span = (seg->size() + mm::kPageSize - 1) & ~(mm::kPageSize - 1);
  for (; it != vmas.end() && it->second.end - addr <= span; ++it) {
    if (AttachedAt(it->second, addr) == seg) doomed.emplace_back(it->second.start, it->second.end);
  }
  for (const auto& [start, end] : doomed) (void)t.mm().MUnmap(mm::GuestAddr(start), end - start);
  return 0;
}

SyscallResult SysShmctl(Task& t, const SyscallArgs& a) {
  const int32_t id = a.i32(0);
  const int cmd = a.i32(1);
  const mm::GuestAddr buf = a.ptr(2);
  // Also the IPC_64 bit: x86-64 has only the 64-bit layouts and rejects it, as Linux.
  if (cmd < 0 || id < 0) return Errno{EINVAL};
  ShmRegistry& reg = t.kernel().shm();
  const Credentials& c = t.creds();
  switch (cmd) {
    case abi::kIpcInfo: {
      abi::ShmInfo64 info{};
      info.shmmax = kShmMax;
      info.shmmin = kShmMin;
      info.shmmni = info.shmseg = kShmMni;
      info.shmall = kShmAll;
      RETURN_IF_ERRNO(t.mm().CopyOutObj(buf, info));
      return static_cast<uint64_t>(reg.MaxIndex());
    }
    case abi::kShmInfo: {
      abi::ShmInfo info{};
      info.used_ids = reg.used_ids();
      info.shm_tot = reg.total_pages();
      const int memfd = t.kernel().memory_file().fd();
      for (const ShmStatus& s : reg.List()) {
        info.shm_rss += ResidentInRange(memfd, s.pages->offset(), s.pages->len()) / mm::kPageSize;
      }
      RETURN_IF_ERRNO(t.mm().CopyOutObj(buf, info));
      return static_cast<uint64_t>(reg.MaxIndex());
    }
    case abi::kIpcStat:
    case abi::kShmStat:
    case abi::kShmStatAny: {
      const ShmRegistry::StatBy by = cmd == abi::kIpcStat   ? ShmRegistry::StatBy::kId
                                     : cmd == abi::kShmStat ? ShmRegistry::StatBy::kIndex
                                                            : ShmRegistry::StatBy::kIndexAny;
      ASSIGN_OR_RETURN_ERRNO(ShmStatus s, reg.Stat(c, id, by));
      RETURN_IF_ERRNO(t.mm().CopyOutObj(buf, ToShmidDs(s)));
      // SHM_STAT and SHM_STAT_ANY take an index and answer the full id.
      return cmd == abi::kIpcStat ? 0 : static_cast<uint64_t>(s.id);
    }
    case abi::kIpcSet: {
      ASSIGN_OR_RETURN_ERRNO(abi::ShmidDs ds, t.mm().CopyInObj<abi::ShmidDs>(buf));
      RETURN_IF_ERRNO(reg.Set(c, id, ds.perm.uid, ds.perm.gid, ds.perm.mode));
      return 0;
    }
    case abi::kIpcRmid:
      RETURN_IF_ERRNO(reg.Remove(c, id));
      return 0;
    case abi::kShmLock:
    case abi::kShmUnlock:
      RETURN_IF_ERRNO(
          reg.Lock(c, id, cmd == abi::kShmLock, t.thread_group().rlimits[RLIMIT_MEMLOCK].rlim_cur));
      return 0;
    default:
      return Errno{EINVAL};
  }
}

}  // namespace usentry::sentry
