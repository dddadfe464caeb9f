// MemoryManager entry points with Linux semantics: mmap, munmap, mprotect, brk, mremap,
// madvise(MADV_DONTNEED), msync. Argument validation that depends only on scalars is here too,
// so the sys_mm.cc handlers stay thin.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <tuple>

#include "sentry/mm/memory_manager.h"

namespace usentry::sentry::mm {

namespace {
// Largest heap brk may make (RLIMIT_DATA-like), and the memory-file reservation a heap
// starts with: brk grows inside it in place and doubles it (copying) when it runs out.
constexpr uint64_t kHeapMax = 64ull << 30;
constexpr uint64_t kHeapInitialReserve = 64ull << 20;

uint64_t PageUp(uint64_t v) { return (v + kPageSize - 1) & ~(kPageSize - 1); }

// A copy of `v` for pages that are not v's own (fresh or copied ones): it is not one
// more VMA of v's observer, so it holds none (and the observer hears nothing).
Vma CopyUnobserved(Vma& v) {
  ObservedMapping kept = std::move(v.observer);
  Vma copy = v;
  v.observer = std::move(kept);
  return copy;
}

}  // namespace

SysResult<GuestAddr> MemoryManager::MMap(const MMapOpts& o) {
  if (o.len == 0) return Errno{EINVAL};
  uint64_t len = PageUp(o.len);
  if (len < o.len || len > max_user_) return Errno{ENOMEM};
  if ((o.file_off & (kPageSize - 1)) != 0) return Errno{EINVAL};
  int type = o.flags & MAP_TYPE;
  if (type != MAP_SHARED && type != MAP_PRIVATE && type != MAP_SHARED_VALIDATE) {
    return Errno{EINVAL};
  }
  const bool fixed = (o.flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) != 0;
  uint64_t addr = o.addr.value();
  if (fixed) {
    if (!o.addr.PageAligned()) return Errno{EINVAL};
    if (addr < kMinAddr) return Errno{EPERM};
    if (addr + len > max_user_ || addr + len < addr) return Errno{ENOMEM};
    if ((o.flags & MAP_FIXED_NOREPLACE) && !RangeFree(addr, addr + len)) return Errno{EEXIST};
  } else {
    ASSIGN_OR_RETURN_ERRNO(GuestAddr a, FindGap(len, o.addr));
    addr = a.value();
  }
  if ((o.prot & ~o.max_prot) != 0) return Errno{EACCES};

  std::shared_ptr<MemoryRange> range;
  uint64_t range_off = 0;
  if (type != MAP_PRIVATE && o.shared_pages) {
    if (o.file_off > o.shared_pages->len() || len > o.shared_pages->len() - o.file_off) {
      return Errno{ENOMEM};
    }
    range = o.shared_pages;
    range_off = o.file_off;
  } else if (fixed && !demand_fill_) {
    // ld.so maps each library's whole span from offset 0, then maps every segment over it
    // with MAP_FIXED at the same file offsets. Where mappings are filled whole at mmap
    // (ptrace), the segments take the span's pages over instead of reading them again.
    if (auto pages = PristinePages(addr, len, o)) std::tie(range, range_off) = *pages;
  }
  const bool taken_over = range != nullptr && range != o.shared_pages;
  // What the new mapping replaces: the host mapping is replaced by mapping over it (one
  // stub call rather than an unmap and a map), and its pages go back after that.
  Replaced replaced;
  const bool replacing = fixed && !(o.flags & MAP_FIXED_NOREPLACE);
  if (replacing) RemoveRange(addr, addr + len, range.get(), &replaced);
  const auto failed = [&](int err) {
    if (replacing) ReleaseReplaced(addr, addr + len, /*mapped=*/false, replaced);
    return Errno{err};
  };
  if (!range) {
    range = mf_->Allocate(len);
    if (!range) return failed(ENOMEM);
  }
  Vma v;
  v.start = addr;
  v.end = addr + len;
  v.prot = o.prot;
  v.max_prot = o.max_prot;
  v.shared = type != MAP_PRIVATE;
  v.grows_down = (o.flags & MAP_GROWSDOWN) != 0;
  v.range = std::move(range);
  v.range_off = range_off;
  v.name = o.name;
  v.file_off = o.file_off;
  v.dev = o.dev;
  v.ino = o.ino;
  v.file_ref = o.file_ref;
  v.pristine = o.fill && o.fill_is_whole_file && type == MAP_PRIVATE && !(o.prot & PROT_WRITE);
  v.observer = ObservedMapping(o.observer);
  // File bytes are read at the first touch of each chunk (fill.cc): ld.so maps every
  // library whole and then its segments over it, and most pages are never touched.
  if (o.fill && !o.shared_pages) {
    v.lazy_fill = o.fill;
    if (type == MAP_PRIVATE) v.host_file = o.host_file;
    if (!demand_fill_) {  // whole, before the platform maps it
      if (!taken_over) {
        if (SysStatus st = FillPages(v, v.start, v.end); !st.ok()) return failed(st.error());
      }
      v.lazy_fill = nullptr;
    } else if (type == MAP_PRIVATE && (o.prot & PROT_WRITE) && len <= kFaultChunk &&
               FillPages(v, v.start, v.end).ok()) {
      // Filled now, too: a small writable private mapping is a library's data segment,
      // which ld.so writes at once (relocations), and that first write would fill all of
      // it. Saved: the fault, and mapping the pages PROT_NONE before mapping them again.
      // (A failed read leaves it to that fault, which reports it as Linux would.)
      v.lazy_fill = nullptr;
      v.host_file = nullptr;
    }
  }
  if (FillAheadCandidate(v)) fill_ahead_pending_.store(true, std::memory_order_relaxed);
  bool mapped = false;
  SysStatus inserted = InsertVma(std::move(v), &mapped);
  if (replacing) ReleaseReplaced(addr, addr + len, inserted.ok() && mapped, replaced);
  RETURN_IF_ERRNO(inserted);
  return GuestAddr(addr);
}

SysStatus MemoryManager::MUnmap(GuestAddr addr, uint64_t len) {
  if (!addr.PageAligned() || len == 0) return Errno{EINVAL};
  uint64_t end = PageUp(addr.value() + len);
  if (end < addr.value() || end > max_user_) return Errno{EINVAL};
  RemoveRange(addr.value(), end);
  return SysOk();
}

SysStatus MemoryManager::MProtect(GuestAddr addr, uint64_t len, int prot) {
  if (!addr.PageAligned()) return Errno{EINVAL};
  if (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC | PROT_GROWSDOWN | PROT_GROWSUP)) {
    return Errno{EINVAL};
  }
  prot &= PROT_READ | PROT_WRITE | PROT_EXEC;
  uint64_t start = addr.value();
  uint64_t end = PageUp(start + len);
  if (end < start) return Errno{ENOMEM};
  if (len == 0) return SysOk();
  // The whole range must be mapped (ENOMEM otherwise) and permit the protection.
  for (uint64_t a = start; a < end;) {
    const Vma* v = FindVma(a);
    if (!v) return Errno{ENOMEM};
    if (prot & ~v->max_prot) return Errno{EACCES};
    a = v->end;
  }
  SplitAt(start);
  SplitAt(end);
  bool any_special = false;
  for (auto it = vmas_.lower_bound(start); it != vmas_.end() && it->first < end; ++it) {
    it->second.prot = prot;
    if (prot & PROT_WRITE) it->second.pristine = false;
    any_special |= it->second.cow || it->second.lazy_fill;
  }
  if (!as_) return SysOk();
  if (!any_special) {
    (void)as_->Protect(start, end - start, prot);
  } else {  // copy-on-write pieces stay unwritable on the host, unfilled ones PROT_NONE
    for (auto it = vmas_.lower_bound(start); it != vmas_.end() && it->first < end; ++it) {
      const Vma& v = it->second;
      if (v.lazy_fill && v.host_file) {
        MapIntoAs(v);  // host pages while not writable, memory-file pages once it is
      } else {
        (void)as_->Protect(v.start, v.end - v.start, HostProt(v));
      }
    }
  }
  return SysOk();
}

SysResult<GuestAddr> MemoryManager::Brk(GuestAddr want) {
  uint64_t addr = want.value();
  if (addr < brk_base_ || addr > brk_base_ + kHeapMax) return GuestAddr(brk_);
  uint64_t old_end = PageUp(brk_);
  uint64_t new_end = PageUp(addr);
  // The heap is [brk_base_, old_end): one VMA, or several after copy-on-write split it.
  // Its last piece is the one that grows and shrinks.
  Vma* last = nullptr;
  if (old_end > brk_base_) {
    const Vma* v = FindVma(old_end - 1);
    if (v && v->name == "[heap]" && v->end == old_end) last = &vmas_.find(v->start)->second;
  }
  if (new_end > old_end) {
    if (!RangeFree(old_end, new_end)) return GuestAddr(brk_);
    // Pages shared with another address space must not grow into its reservation; when
    // no other one maps them any more they are this heap's again (writable in place).
    if (last && last->cow && OnlyOwner(last->range.get())) (void)BreakCowAt(last->start);
    const uint64_t room =
        last && !last->cow ? last->range->len() - last->range_off - (last->end - last->start) : 0;
    if (last && new_end - old_end <= room) {
      last->end = new_end;
      if (as_) {
        (void)as_->MapFile(old_end, new_end - old_end,
                           last->range->offset() + last->range_off + (old_end - last->start),
                           last->prot);
      }
    } else {
      // A piece of its own, with room to grow in place: as much again as the heap, so
      // that a growing heap needs few of them.
      const uint64_t grow = new_end - old_end;
      const uint64_t reserve = std::max({grow, kHeapInitialReserve, old_end - brk_base_});
      std::shared_ptr<MemoryRange> r = mf_->Allocate(reserve);
      if (!r) return GuestAddr(brk_);
      Vma v;
      v.start = old_end;
      v.end = new_end;
      v.prot = PROT_READ | PROT_WRITE;
      v.range = std::move(r);
      v.name = "[heap]";
      if (!InsertVma(std::move(v)).ok()) return GuestAddr(brk_);
    }
  } else if (new_end < old_end && last) {
    RemoveRange(std::max(new_end, brk_base_), old_end);
  }
  brk_ = addr;
  return GuestAddr(brk_);
}

SysResult<GuestAddr> MemoryManager::MRemap(GuestAddr old_addr, uint64_t old_len, uint64_t new_len,
                                           int flags, GuestAddr new_addr) {
  if (!old_addr.PageAligned()) return Errno{EINVAL};
  if (flags & ~(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)) return Errno{EINVAL};
  if ((flags & MREMAP_FIXED) && !(flags & MREMAP_MAYMOVE)) return Errno{EINVAL};
  if (flags & MREMAP_DONTUNMAP) return Errno{EINVAL};  // not supported yet
  old_len = PageUp(old_len);
  new_len = PageUp(new_len);
  if (new_len == 0 || old_len == 0) return Errno{EINVAL};
  uint64_t start = old_addr.value();
  if (start + old_len < start) return Errno{EFAULT};
  // The pages move or are copied below: they must hold the file's bytes first.
  RETURN_IF_ERRNO(Fill(start, start + old_len));
  // Copy-on-write may have split what the app mapped as one VMA: make it one again.
  RETURN_IF_ERRNO(Consolidate(start, start + old_len));
  const Vma* v = FindVma(start);
  if (!v || v->end < start + old_len) return Errno{EFAULT};
  if (v->host) return Errno{EINVAL};  // the vDSO block stays where the host put it
  // A shared mapping whose backing pages extend far enough (a memfd's reservation; any
  // shared mapping that does not grow) keeps mapping those same pages, so it stays
  // shared; other shared mappings that grow get fresh pages and lose sharing.
  const uint64_t src_off = v->range_off + (start - v->start);
  const bool keep_pages = v->shared && src_off + new_len <= v->range->len();
  if (!(flags & MREMAP_FIXED)) {
    if (new_len <= old_len) {
      if (new_len < old_len) RemoveRange(start + new_len, start + old_len);
      return old_addr;
    }
    // Grow in place when the following addresses are free.
    if (start + new_len <= max_user_ && RangeFree(start + old_len, start + new_len) &&
        v->end == start + old_len) {
      Vma& grown = vmas_.find(v->start)->second;
      if (keep_pages) {
        // The same pages continue: the VMA itself grows, as on Linux (a SysV shm
        // attachment stays one attachment).
        grown.end = start + new_len;
        if (as_) {
          (void)as_->MapFile(start + old_len, new_len - old_len,
                             grown.range->offset() + src_off + old_len, grown.prot);
        }
        return old_addr;
      }
      // Fresh pages: a VMA of its own, not one of the observed object's.
      Vma ext = CopyUnobserved(grown);
      ext.range = mf_->Allocate(new_len - old_len);
      if (!ext.range) return Errno{ENOMEM};
      ext.range_off = 0;
      ext.start = start + old_len;
      ext.end = start + new_len;
      ext.file_off = v->file_off + (ext.start - v->start);
      ext.pristine = false;  // fresh zero pages, not the file's
      ext.cow = false;       // ...and this address space's alone
      ext.cow_dest = nullptr;
      ext.lazy_fill = nullptr;
      RETURN_IF_ERRNO(InsertVma(std::move(ext)));
      return old_addr;
    }
    if (!(flags & MREMAP_MAYMOVE)) return Errno{ENOMEM};
  }
  // Move: new range, copy the old contents, unmap the old.
  uint64_t dst;
  if (flags & MREMAP_FIXED) {
    if (!new_addr.PageAligned()) return Errno{EINVAL};
    dst = new_addr.value();
    if (dst < kMinAddr || dst + new_len > max_user_) return Errno{EINVAL};
    if (dst < start + old_len && start < dst + new_len) return Errno{EINVAL};
    RemoveRange(dst, dst + new_len);
  } else {
    ASSIGN_OR_RETURN_ERRNO(GuestAddr a, FindGap(new_len, GuestAddr()));
    dst = a.value();
  }
  // Only single-VMA sources are supported (what glibc realloc produces).
  v = FindVma(start);
  if (!v || v->end < start + old_len) return Errno{EFAULT};
  if (keep_pages) {
    Vma moved = *v;
    moved.start = dst;
    moved.end = dst + new_len;
    moved.range_off = src_off;
    moved.file_off = v->file_off + (start - v->start);
    RemoveRange(start, start + old_len);
    RETURN_IF_ERRNO(InsertVma(std::move(moved)));
    return GuestAddr(dst);
  }
  std::shared_ptr<MemoryRange> r = mf_->Allocate(new_len);
  if (!r) return Errno{ENOMEM};
  uint64_t copy = std::min(old_len, new_len);
  mf_->CopySparse(v->range->offset() + v->range_off + (start - v->start), r->offset(), copy);
  // A private copy: no longer the observed object's pages (a SysV shm attachment that
  // grew past its segment is detached from it).
  Vma moved = CopyUnobserved(vmas_.find(v->start)->second);
  moved.start = dst;
  moved.end = dst + new_len;
  moved.range = std::move(r);
  moved.range_off = 0;
  moved.file_off = v->file_off + (start - v->start);
  moved.shared = false;       // shared anonymous moves lose sharing (documented limitation)
  moved.lazy_fill = nullptr;  // filled above
  moved.cow = false;          // a copy of its own
  moved.cow_dest = nullptr;
  moved.cow_dest_off = 0;
  RemoveRange(start, start + old_len);
  RETURN_IF_ERRNO(InsertVma(std::move(moved)));
  return GuestAddr(dst);
}

SysStatus MemoryManager::MAdviseDontNeed(GuestAddr addr, uint64_t len) {
  if (!addr.PageAligned()) return Errno{EINVAL};
  uint64_t start = addr.value();
  uint64_t end = PageUp(start + len);
  for (uint64_t a = start; a < end;) {
    const Vma* v = FindVma(a);
    if (!v) return Errno{ENOMEM};
    uint64_t stop = std::min(end, v->end);
    // Private anonymous pages read as zero afterwards. Private file pages would be
    // re-read from the file on Linux; we keep their contents instead (never zero them).
    if (!v->shared && !v->file_ref && v->range) {
      if (v->cow) {
        RETURN_IF_ERRNO(ZeroCow(a, stop));  // other address spaces keep the old pages
      } else {
        mf_->Decommit(v->range->offset() + v->range_off + (a - v->start), stop - a);
      }
    }
    a = stop;
  }
  return SysOk();
}

SysStatus MemoryManager::MSync(GuestAddr addr, uint64_t len, int flags) const {
  if (!addr.PageAligned()) return Errno{EINVAL};
  if (flags & ~(MS_ASYNC | MS_SYNC | MS_INVALIDATE)) return Errno{EINVAL};
  if ((flags & MS_ASYNC) && (flags & MS_SYNC)) return Errno{EINVAL};
  const uint64_t start = addr.value();
  const uint64_t end = start + PageUp(len);  // a length that rounds to 0 is a no-op
  if (end < start) return Errno{ENOMEM};
  // Like Linux, the whole range is looked at and a hole anywhere is ENOMEM.
  for (uint64_t a = start; a < end;) {
    const Vma* v = FindVma(a);
    if (!v) return Errno{ENOMEM};
    a = v->end;
  }
  // Shared mappings of host files hold stores for write-back (fsimpl/gofer_mapped.h).
  for (uint64_t a = start; a < end;) {
    const Vma* v = FindVma(a);
    if (v->shared && v->observer.get() != nullptr) v->observer.get()->Msync();
    a = v->end;
  }
  return SysOk();
}

}  // namespace usentry::sentry::mm
