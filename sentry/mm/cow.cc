// Copy-on-write fork. Fork leaves the parent's and the child's private VMAs on the same
// memory-file pages and marks them cow (Vma::cow) in both; the platform maps cow pages
// without PROT_WRITE. The first write to one — an app fault (HandleFault) or the sentry
// writing app memory (Access) — either finds that no other address space maps those
// pages any more and simply makes them writable again, or copies the 64 KiB chunk
// around it into pages of this address space's own and maps those instead.
//
// A copied chunk becomes a VMA of its own, on the cow VMA's cow_dest range at the
// offset matching its address, so that the copies of neighbouring chunks are
// contiguous and merge back into one VMA (MergeAround). /proc/PID/maps joins what is
// left of the split when it prints (FormatMapsLine callers), as Linux shows one VMA.
#include <sys/mman.h>

#include <algorithm>
#include <unordered_map>

#include "sentry/mm/memory_manager.h"

namespace usentry::sentry::mm {

namespace {

// A cow VMA's copies go to one destination range of its size (see Vma::cow_dest), but a
// larger VMA gets one per window of this size around the writes: a huge reservation
// written in a few places must not take memory-file offsets of its whole size.
constexpr uint64_t kCowDestWindow = 256ull << 20;

// `a` and `b` (a just below b) are one private mapping on contiguous pages, so one VMA
// can stand for both.
bool OneMapping(const Vma& a, const Vma& b) {
  return a.end == b.start && !a.cow && !b.cow && !a.shared && !b.shared && !a.host && !b.host &&
         a.range && a.range == b.range && a.range_off + (a.end - a.start) == b.range_off &&
         a.prot == b.prot && a.max_prot == b.max_prot && a.grows_down == b.grows_down &&
         a.name == b.name && a.file_ref == b.file_ref && a.dev == b.dev && a.ino == b.ino &&
         (!a.file_ref || a.file_off + (a.end - a.start) == b.file_off) &&
         a.pristine == b.pristine && !a.lazy_fill && !b.lazy_fill && a.observer.get() == nullptr &&
         b.observer.get() == nullptr;
}

}  // namespace

std::unique_ptr<MemoryManager> MemoryManager::Fork() {
  auto child = std::make_unique<MemoryManager>(mf_, max_user_);
  child->mmap_base_ = mmap_base_;
  child->brk_base_ = brk_base_;
  child->brk_ = brk_;
  child->stack_lo_ = stack_lo_;
  child->stack_hi_ = stack_hi_;
  child->executable_path = executable_path;
  child->arg_start = arg_start;
  child->arg_end = arg_end;
  child->env_start = env_start;
  child->env_end = env_end;
  child->auxv = auxv;
  child->demand_fill_ = demand_fill_;
  // Runs of the parent's VMAs that were writable on the host and now are not, so that
  // neighbouring VMAs cost one host mprotect.
  uint64_t run_start = 0, run_end = 0;
  int run_prot = 0;
  auto flush = [&] {
    if (as_ && run_end > run_start) (void)as_->Protect(run_start, run_end - run_start, run_prot);
    run_start = run_end = 0;
  };
  for (auto& [start, v] : vmas_) {
    if (!v.shared && !v.host && v.range) {
      const bool was_writable = (HostProt(v) & PROT_WRITE) != 0;
      if (!v.cow && as_) as_->SetPagesShared(v.start, v.end - v.start, true);
      v.cow = true;
      if (was_writable) {
        const int prot = HostProt(v);
        if (run_end != v.start || run_prot != prot) {
          flush();
          run_start = v.start;
          run_prot = prot;
        }
        run_end = v.end;
      }
    }
    Vma c = v;
    // Each address space's copies go to pages of its own; the parent keeps cow_dest
    // (the child's copy of those offsets is never used by the child).
    c.cow_dest = nullptr;
    c.cow_dest_off = 0;
    child->vmas_.emplace(start, std::move(c));
  }
  flush();
  return child;
}

bool MemoryManager::OnlyOwner(const MemoryRange* r) const {
  // Every reference to a private range is held by a VMA (as its pages or its cow_dest):
  // when this address space's VMAs hold them all, no other one maps any of its pages.
  long here = 0;
  for (const auto& [start, v] : vmas_) {
    if (v.range.get() == r) here++;
    if (v.cow_dest.get() == r) here++;
  }
  for (const auto& [start, v] : vmas_) {
    if (v.range.get() == r) return v.range.use_count() == here;
  }
  return false;
}

void MemoryManager::ReclaimReadOnly() {
  // Every reap calls this: count references only when there is something to reclaim.
  if (std::none_of(vmas_.begin(), vmas_.end(),
                   [](const auto& e) { return e.second.cow && !(e.second.prot & PROT_WRITE); })) {
    return;
  }
  std::unordered_map<const MemoryRange*, long> here;
  for (const auto& [start, v] : vmas_) {
    if (v.range) here[v.range.get()]++;
    if (v.cow_dest) here[v.cow_dest.get()]++;
  }
  for (auto& [start, v] : vmas_) {
    if (!v.cow || (v.prot & PROT_WRITE) || v.range.use_count() != here[v.range.get()]) continue;
    v.cow = false;
    v.cow_dest = nullptr;
    v.cow_dest_off = 0;
    if (as_) as_->SetPagesShared(v.start, v.end - v.start, false);
  }
}

SysStatus MemoryManager::BreakCowAt(uint64_t addr) const {
  RETURN_IF_ERRNO(FillAt(addr));  // the copy must have the file's bytes to copy
  auto it = vmas_.upper_bound(addr);
  if (it == vmas_.begin()) return SysOk();
  --it;
  Vma& v = it->second;
  if (addr >= v.end || !v.cow) return SysOk();
  const MemoryRange* pages = v.range.get();
  if (OnlyOwner(pages)) {
    // The other address spaces exited or exec'd: every VMA on these pages is writable
    // in place again, at the cost of this one fault.
    for (auto& [start, w] : vmas_) {
      if (!w.cow || w.range.get() != pages) continue;
      w.cow = false;
      if (as_) as_->SetPagesShared(w.start, w.end - w.start, false);
      // cow_dest is for a cow VMA's copies only: a heap that grows in place from here
      // would outgrow it.
      w.cow_dest = nullptr;
      w.cow_dest_off = 0;
      if (as_ && (w.prot & PROT_WRITE)) (void)as_->Protect(w.start, w.end - w.start, w.prot);
    }
    return SysOk();
  }
  ASSIGN_OR_RETURN_ERRNO(Vma * d, CowDestVma(addr));
  const uint64_t lo = std::max(d->start, addr & ~(kFaultChunk - 1));
  const uint64_t hi = std::min(d->end, (addr & ~(kFaultChunk - 1)) + kFaultChunk);
  std::shared_ptr<MemoryRange> dst = d->cow_dest;
  const uint64_t dst_off = d->cow_dest_off + (lo - d->start);
  ReplaceBacking(lo, hi, std::move(dst), dst_off, /*copy=*/true);
  cow_copied_bytes_ += hi - lo;
  return SysOk();
}

SysStatus MemoryManager::ZeroCow(uint64_t start, uint64_t end) {
  const Vma* v = FindVma(start);
  if (!v || !v->cow) return SysOk();
  Vma& w = vmas_.find(v->start)->second;
  if (OnlyOwner(w.range.get())) {
    RETURN_IF_ERRNO(BreakCowAt(start));  // writable in place again, no copy; w stays
    mf_->Decommit(w.range->offset() + w.range_off + (start - w.start), end - start);
    return SysOk();
  }
  // [start, end) lies in one cow VMA: each window of it gets zero pages of its own.
  for (uint64_t a = start; a < end;) {
    ASSIGN_OR_RETURN_ERRNO(Vma * d, CowDestVma(a));
    const uint64_t stop = std::min(end, d->end);
    ReplaceBacking(a, stop, d->cow_dest, d->cow_dest_off + (a - d->start), /*copy=*/false);
    a = stop;
  }
  return SysOk();
}

SysResult<Vma*> MemoryManager::CowDestVma(uint64_t addr) const {
  Vma* v = &std::prev(vmas_.upper_bound(addr))->second;
  if (v->cow_dest && v->cow_dest_off + (v->end - v->start) <= v->cow_dest->len()) return v;
  if (v->end - v->start > kCowDestWindow) {
    const uint64_t base = addr & ~(kCowDestWindow - 1);
    const uint64_t lo = std::max(v->start, base), hi = std::min(v->end, base + kCowDestWindow);
    SplitAt(lo);
    SplitAt(hi);
    v = &std::prev(vmas_.upper_bound(addr))->second;
  }
  v->cow_dest = mf_->Allocate(v->end - v->start);
  if (!v->cow_dest) return Errno{ENOMEM};
  v->cow_dest_off = 0;
  return v;
}

SysStatus MemoryManager::BreakCow(uint64_t start, uint64_t end) const {
  return ForEachChunk(
      start, end, [](const Vma& v) { return v.cow; }, &MemoryManager::BreakCowAt);
}

void MemoryManager::ReplaceBacking(uint64_t start, uint64_t end, std::shared_ptr<MemoryRange> dst,
                                   uint64_t dst_off, bool copy) const {
  SplitAt(start);
  SplitAt(end);
  auto it = vmas_.find(start);
  Vma piece = std::move(it->second);
  for (auto w = it; w != vmas_.end() && w->first < end;) {
    const Vma& old = w == it ? piece : w->second;
    const uint64_t len = old.end - old.start;
    const uint64_t src = old.range->offset() + old.range_off;
    // The destination still reads as zero: CopySparse leaves its holes unallocated.
    if (copy) mf_->CopySparse(src, dst->offset() + dst_off + (old.start - start), len);
    // Pages of a VMA that was not cow were this address space's alone.
    if (!old.cow) mf_->Decommit(src, len);
    w = vmas_.erase(w);
  }
  piece.end = end;
  piece.range = std::move(dst);
  piece.range_off = dst_off;
  piece.cow = false;
  piece.cow_dest = nullptr;
  piece.cow_dest_off = 0;
  piece.pristine = false;
  auto [placed, inserted] = vmas_.emplace(start, std::move(piece));
  MapIntoAs(placed->second);
  MergeAround(start);
}

void MemoryManager::MergeAround(uint64_t addr) const {
  auto it = vmas_.find(addr);
  if (it == vmas_.end()) return;
  if (it != vmas_.begin()) {
    auto prev = std::prev(it);
    if (OneMapping(prev->second, it->second)) {
      prev->second.end = it->second.end;
      vmas_.erase(it);
      it = prev;
    }
  }
  auto next = std::next(it);
  if (next != vmas_.end() && OneMapping(it->second, next->second)) {
    it->second.end = next->second.end;
    vmas_.erase(next);
  }
}

SysStatus MemoryManager::Consolidate(uint64_t start, uint64_t end) {
  const Vma* first = FindVma(start);
  if (!first || first->end >= end) return SysOk();  // one VMA already (or a hole)
  if (first->shared || first->host || !first->range) return Errno{EFAULT};
  // Every piece must continue the first one's mapping: the same protections, name and
  // file at the matching offset — what splitting one VMA leaves behind.
  for (uint64_t a = first->end; a < end;) {
    const Vma* v = FindVma(a);
    if (!v || v->start != a || v->shared || v->host || !v->range || v->prot != first->prot ||
        v->max_prot != first->max_prot || v->name != first->name ||
        v->file_ref != first->file_ref || v->observer.get() != nullptr ||
        (v->file_ref && v->file_off != first->file_off + (a - first->start))) {
      return Errno{EFAULT};
    }
    a = v->end;
  }
  std::shared_ptr<MemoryRange> r = mf_->Allocate(end - start);
  if (!r) return Errno{ENOMEM};
  ReplaceBacking(start, end, std::move(r), 0, /*copy=*/true);
  return SysOk();
}

MemoryManager::FaultResult MemoryManager::HandleFault(uint64_t addr, bool write, bool exec) {
  const Vma* v = FindVma(addr);
  if (!v) return FaultResult::kSignal;
  // Unfilled pages are mapped PROT_NONE: any access the VMA allows fills them (fill.cc).
  // A write to a cow VMA then faults once more, for the copy.
  if (v->lazy_fill && (v->prot & (PROT_READ | PROT_WRITE | PROT_EXEC)) != 0) {
    const int need = exec ? PROT_EXEC : write ? PROT_WRITE : 0;
    if ((v->prot & need) != need) return FaultResult::kSignal;
    return FillAt(addr).ok() ? FaultResult::kResolved : FaultResult::kNoMemory;
  }
  // A cow page faults only for writing (it is mapped readable and, if the VMA says so,
  // executable), so a non-exec fault on a writable cow VMA is the write to copy for.
  if (v->cow && (v->prot & PROT_WRITE) && !exec) {
    return BreakCowAt(addr).ok() ? FaultResult::kResolved : FaultResult::kNoMemory;
  }
  const int need = exec ? PROT_EXEC : write ? PROT_WRITE : PROT_READ;
  if (!v->host && (v->prot & need) != 0) return FaultResult::kStale;
  return FaultResult::kSignal;
}

}  // namespace usentry::sentry::mm
