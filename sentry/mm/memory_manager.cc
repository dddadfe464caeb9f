// MemoryManager: VMA bookkeeping and the platform mirror. Syscall-level entry points
// (mmap, munmap, brk...) live in syscalls.cc; copy helpers in copy.cc.
#include "sentry/mm/memory_manager.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "base/status_macros.h"

namespace usentry::sentry::mm {

namespace {
// Room reserved under the stack top for the stack and its growth.
constexpr uint64_t kStackGap = 512ull << 20;
}  // namespace

MemoryManager::MemoryManager(MemoryFile* mf, uint64_t max_user)
    : mf_(mf), max_user_(max_user), mmap_base_(max_user - kStackGap) {}

MemoryManager::~MemoryManager() = default;

const Vma* MemoryManager::FindVma(uint64_t addr) const {
  auto it = vmas_.upper_bound(addr);
  if (it == vmas_.begin()) return nullptr;
  --it;
  return addr < it->second.end ? &it->second : nullptr;
}

void MemoryManager::SplitAt(uint64_t addr) const {
  auto it = vmas_.upper_bound(addr);
  if (it == vmas_.begin()) return;
  --it;
  Vma& v = it->second;
  if (addr <= v.start || addr >= v.end) return;
  Vma tail = v;
  uint64_t delta = addr - v.start;
  tail.start = addr;
  tail.range_off += delta;
  tail.cow_dest_off += delta;
  if (v.file_ref) tail.file_off += delta;
  v.end = addr;
  vmas_.emplace(addr, std::move(tail));
}

bool MemoryManager::RangeFree(uint64_t start, uint64_t end) const {
  auto it = vmas_.lower_bound(start);
  if (it != vmas_.end() && it->first < end) return false;
  if (it != vmas_.begin() && std::prev(it)->second.end > start) return false;
  return true;
}

absl::Status MemoryManager::MapVma(platform::AddressSpace& as, const Vma& v) {
  const uint64_t len = v.end - v.start;
  if (v.lazy_fill && v.host_file && !(v.prot & PROT_WRITE) && (v.prot & (PROT_READ | PROT_EXEC)) &&
      as.MapHostFile(v.start, len, v.host_file, v.file_off, v.prot).ok()) {
    return absl::OkStatus();  // (where it cannot, PROT_NONE pages fill on demand as usual)
  }
  RETURN_IF_ERROR(as.MapFile(v.start, len, v.range->offset() + v.range_off, HostProt(v)));
  if (v.cow) as.SetPagesShared(v.start, len, true);
  return absl::OkStatus();
}

bool MemoryManager::MapIntoAs(const Vma& v) const {
  if (!as_ || v.host) return true;
  // A failure here means the stub is gone (the task notices at its next Switch), or the
  // host refused one more mapping.
  return MapVma(*as_, v).ok();
}

void MemoryManager::RemoveRange(uint64_t start, uint64_t end, const MemoryRange* keep,
                                Replaced* replaced) {
  SplitAt(start);
  SplitAt(end);
  // The address space lets go of the pages before they are freed: freeing pages a
  // process still maps zaps them there too, and a process running on another CPU (the
  // stub thread waiting for this syscall's result) takes a TLB-shootdown IPI for it, a
  // VM exit on a virtual machine.
  if (!replaced) UnmapFromAs(start, end);
  auto it = vmas_.lower_bound(start);
  while (it != vmas_.end() && it->first < end) {
    const Vma& v = it->second;
    // Private pages belong to this VMA alone (unless copy-on-write, when another address
    // space may still map them): give them back to the host now, if it has any, unless
    // this VMA holds the range's last reference: erasing it frees the whole range
    // (MemoryFile::Free), which gives every page back, later.
    if (!v.shared && !v.cow && v.range && v.range.get() != keep && !NeverWritten(v) &&
        (replaced || v.range.use_count() > 1)) {
      const uint64_t off = v.range->offset() + v.range_off;
      if (replaced) {
        replaced->pages.emplace_back(off, v.end - v.start);
      } else {
        mf_->Release(off, v.end - v.start);
      }
    }
    if (replaced && v.range) replaced->ranges.push_back(v.range);
    it = vmas_.erase(it);
  }
}

void MemoryManager::UnmapFromAs(uint64_t start, uint64_t end) const {
  // Nothing of the app's lives below kMinAddr; the platform may (systrap's patch table).
  const uint64_t as_start = std::max(start, kMinAddr);
  if (as_ && end > as_start) (void)as_->Unmap(as_start, end - as_start);
}

void MemoryManager::ReleaseReplaced(uint64_t start, uint64_t end, bool mapped, Replaced& replaced) {
  if (!mapped) UnmapFromAs(start, end);
  for (const auto& [off, len] : replaced.pages) mf_->Release(off, len);
  replaced = Replaced{};  // the ranges' pages may be handed out again from here
}

std::optional<std::pair<std::shared_ptr<MemoryRange>, uint64_t>> MemoryManager::PristinePages(
    uint64_t start, uint64_t len, const MMapOpts& o) const {
  if ((o.flags & MAP_TYPE) != MAP_PRIVATE || !o.fill || !o.fill_is_whole_file || !o.file_ref) {
    return std::nullopt;
  }
  std::shared_ptr<MemoryRange> range;
  uint64_t range_off = 0;
  for (uint64_t a = start; a < start + len;) {
    const Vma* v = FindVma(a);
    // (Not cow pages: the new VMA would have to inherit that; ld.so's overlays, what this
    // is for, come right after exec, before any fork. Nor unfilled ones.)
    if (!v || !v->pristine || v->shared || v->cow || v->lazy_fill || v->file_ref != o.file_ref) {
      return std::nullopt;
    }
    // The same file bytes: this VMA maps file offset o.file_off + (a - start) at `a`...
    if (v->file_off + (a - v->start) != o.file_off + (a - start)) return std::nullopt;
    // ...and all of [start, start+len) is one contiguous run of one range.
    const uint64_t off_here = v->range_off + (a - v->start);
    if (!range) {
      range = v->range;
      range_off = off_here;
    } else if (v->range != range || off_here != range_off + (a - start)) {
      return std::nullopt;
    }
    a = v->end;
  }
  return std::make_pair(std::move(range), range_off);
}

SysStatus MemoryManager::ForEachChunk(uint64_t start, uint64_t end, bool (*wants)(const Vma&),
                                      SysStatus (MemoryManager::*op)(uint64_t) const) const {
  for (uint64_t a = start; a < end;) {
    const Vma* v = FindVma(a);
    if (!v) {  // a hole: go on at the next VMA (callers report holes themselves)
      auto next = vmas_.upper_bound(a);
      if (next == vmas_.end()) break;
      a = next->first;
      continue;
    }
    if (!wants(*v)) {
      a = v->end;
      continue;
    }
    // Where this chunk ends, taken before `op` splits and merges VMAs around it.
    const uint64_t next = std::min(v->end, (a & ~(kFaultChunk - 1)) + kFaultChunk);
    RETURN_IF_ERRNO((this->*op)(a));
    a = next;
  }
  return SysOk();
}

SysStatus MemoryManager::AddHostMappings(const std::vector<HostMapping>& parts) {
  for (const HostMapping& p : parts) {
    // Above max_user() is allowed: the app never maps there, so nothing can collide.
    if (p.start < kMinAddr || p.start >= p.end || !RangeFree(p.start, p.end)) return Errno{ENOMEM};
  }
  for (const HostMapping& p : parts) {
    Vma v;
    v.start = p.start;
    v.end = p.end;
    v.prot = p.prot;
    v.max_prot = p.prot;
    v.host = true;
    v.name = p.name;
    vmas_.emplace(p.start, std::move(v));
  }
  return SysOk();
}

SysStatus MemoryManager::InsertVma(Vma vma, bool* mapped) {
  uint64_t start = vma.start;
  auto [it, inserted] = vmas_.emplace(start, std::move(vma));
  if (!inserted) return Errno{ENOMEM};
  const bool ok = MapIntoAs(it->second);
  if (mapped) *mapped = ok;
  return SysOk();
}

void MemoryManager::SetBrkBase(GuestAddr base) {
  brk_base_ = base.PageUp().value();
  brk_ = base.value();
}

SysResult<GuestAddr> MemoryManager::FindGap(uint64_t len, GuestAddr hint) const {
  if (len == 0 || len > max_user_) return Errno{ENOMEM};
  if (!hint.IsNull()) {
    uint64_t h = hint.PageDown().value();
    if (h >= kMinAddr && h + len <= max_user_ && h + len > h && RangeFree(h, h + len)) {
      return GuestAddr(h);
    }
  }
  // Top-down from the mmap base, like Linux's default layout: the highest gap below it.
  uint64_t top = mmap_base_;
  auto it = vmas_.lower_bound(top);
  while (it != vmas_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end > top) {  // overlaps `top`: continue below it
      top = std::min(top, prev->second.start);
    } else {
      uint64_t bottom = std::max(prev->second.end, kMinAddr);
      if (top >= bottom && top - bottom >= len) return GuestAddr(top - len);
      top = prev->second.start;
    }
    it = prev;
  }
  if (top >= kMinAddr && top - kMinAddr >= len) return GuestAddr(top - len);
  return Errno{ENOMEM};
}

absl::Status MemoryManager::Activate(std::unique_ptr<platform::AddressSpace> as) {
  as_ = std::move(as);
  if (as_->MaxUserAddress() < max_user_) {
    return absl::InternalError("platform address space is smaller than the sentry's layout");
  }
  for (const auto& [start, v] : vmas_) {
    if (v.host) continue;  // the new address space has it already
    RETURN_IF_ERROR(MapVma(*as_, v));
  }
  return absl::OkStatus();
}

}  // namespace usentry::sentry::mm
