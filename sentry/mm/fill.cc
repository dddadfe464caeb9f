// Demand fill of file mappings. A mapping made with a FileFiller (every private file
// mapping: libraries, the ELF loader's segments, mmap of a file) reads nothing at mmap;
// its VMA carries the filler (Vma::lazy_fill) and the platform maps it PROT_NONE. The
// first access to a chunk — an app fault (HandleFault) or the sentry reading or writing
// it (Access) — fills that 64 KiB chunk in place and maps it with the VMA's protection;
// filled chunks merge back into one VMA (MergeAround). Natively most of a library's
// pages are never touched; reading them all at mmap cost ~0.5 ms per MB here. Unfilled
// read-only chunks of a host file the platform can map (Vma::host_file) are not even
// PROT_NONE: the app reads the host's page cache, and a chunk is filled only when its
// bytes must be in the memory file (the sentry writes them or hands them on as iovecs,
// mprotect makes them writable, systrap patches a syscall site there: FillForPatching,
// which fills only the site's pages); CopyIn reads them straight from the file. Only where
// faults are cheap (Platform::FaultsAreCheap: systrap): a ptrace fault costs more than
// reading 64 KiB, so there MMap fills the whole mapping at once (set_demand_fill).
//
// Fill ahead: while app code runs, its sentry thread would otherwise only spin waiting
// for the next trap; FillAhead lets it (platform::IdleWork) fill the chunks of unfilled
// writable private file mappings — data segments, which a program usually touches
// nearly whole soon after its start (python3 faulted in 22 of its 24) — before the app
// touches them. A fault still comes, since the pages stay PROT_NONE until then (the
// stub is running app code and cannot map them), but it costs no file read and no page
// allocation (~40 of its ~55 us here), and it maps every chunk filled ahead so far, a
// run of adjacent chunks with one host call (MapPrefilled): python3's faults to the
// sentry went from 23 to 10-18. The pages count as resident from then on, like Linux's
// fault-around; kFillAheadBudget bounds that per address space.
//
// Filling writes the file's bytes into pages that, after fork, both address spaces may
// map (copy-on-write): both would write the same bytes, and neither writes such pages in
// place otherwise, so a second fill of the same chunk changes nothing.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

#include "sentry/mm/bounce_buffer.h"
#include "sentry/mm/memory_manager.h"

namespace usentry::sentry::mm {

namespace {

// Writes the file bytes of [file_off, file_off+len) into the memory file at `dst` through
// a bounce buffer with pwrite, not through the sentry's mapping: each page touched
// through the mapping costs a page fault (and a TLB shootdown when it is freed). Pages
// past the file's end stay unallocated (zero).
SysStatus FillFromFile(int memfd, uint64_t dst, uint64_t len, uint64_t file_off,
                       const FileFiller& fill) {
  constexpr uint64_t kChunk = BounceBuffer::kSize;
  BounceBuffer buf;
  for (uint64_t pos = 0; pos < len;) {
    const uint64_t want = std::min(kChunk, len - pos);
    ASSIGN_OR_RETURN_ERRNO(uint64_t got, fill(buf.data(), want, file_off + pos));
    got = std::min(got, want);
    for (uint64_t w = 0; w < got;) {
      const ssize_t n = pwrite(memfd, buf.data() + w, got - w, static_cast<off_t>(dst + pos + w));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Errno{ENOMEM};  // the memory file is full (memcg limit)
      w += static_cast<uint64_t>(n);
    }
    pos += got;
    if (got < want) break;  // end of file
  }
  return SysOk();
}

}  // namespace

SysStatus MemoryManager::FillPages(const Vma& v, uint64_t lo, uint64_t hi) const {
  return FillFromFile(mf_->fd(), v.range->offset() + v.range_off + (lo - v.start), hi - lo,
                      v.file_off + (lo - v.start), v.lazy_fill);
}

SysStatus MemoryManager::FillAt(uint64_t addr) const {
  const Vma* v = FindVma(addr);
  if (!v || !v->lazy_fill) return SysOk();
  const uint64_t lo = std::max(v->start, addr & ~(kFaultChunk - 1));
  const uint64_t hi = std::min(v->end, (addr & ~(kFaultChunk - 1)) + kFaultChunk);
  return FillSpan(lo, hi);
}

SysStatus MemoryManager::FillSpan(uint64_t lo, uint64_t hi) const {
  SplitAt(lo);
  SplitAt(hi);
  Vma& piece = vmas_.find(lo)->second;
  if (piece.prefilled) {
    // Its neighbours were most likely filled ahead too, and will be touched next: one
    // host mapping for all of them instead of a fault each (~25 us here).
    MapPrefilled();
    return SysOk();
  }
  RETURN_IF_ERRNO(FillPages(piece, lo, hi));
  piece.lazy_fill = nullptr;
  piece.prefilled = false;
  MapIntoAs(piece);
  MergeAround(lo);
  return SysOk();
}

bool MemoryManager::FillAhead() {
  if (filled_ahead_bytes_ >= kFillAheadBudget) {
    fill_ahead_pending_.store(false, std::memory_order_relaxed);
    return false;
  }
  for (const auto& [start, v] : vmas_) {
    if (!FillAheadCandidate(v)) continue;
    // The chunk a fault at v.start would fill (FillAt), so that a prefilled piece is
    // always what one fault fills.
    const uint64_t lo = v.start;
    const uint64_t hi = std::min(v.end, (lo & ~(kFaultChunk - 1)) + kFaultChunk);
    SplitAt(hi);
    Vma& piece = vmas_.find(lo)->second;
    if (!FillPages(piece, lo, hi).ok()) break;  // the fault will fill it, and report why
    piece.prefilled = true;
    filled_ahead_bytes_ += hi - lo;
    return true;
  }
  fill_ahead_pending_.store(false, std::memory_order_relaxed);
  return false;
}

void MemoryManager::MapPrefilled() const {
  // Runs of prefilled pieces that continue one mapping (split from one VMA by FillAhead):
  // each run is mapped with one host call, then merged back.
  auto take = [](Vma& piece) {
    piece.lazy_fill = nullptr;
    piece.prefilled = false;
  };
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  for (auto it = vmas_.begin(); it != vmas_.end(); ++it) {
    if (!it->second.prefilled) continue;
    take(it->second);
    Vma run = it->second;
    for (auto next = std::next(it); next != vmas_.end(); it = next, next = std::next(next)) {
      Vma& n = next->second;
      if (!n.prefilled || n.start != run.end || n.range != run.range ||
          n.range_off != run.range_off + (run.end - run.start) || n.prot != run.prot ||
          n.cow != run.cow) {
        break;
      }
      take(n);
      run.end = n.end;
    }
    MapIntoAs(run);
    runs.emplace_back(run.start, run.end);
  }
  for (const auto& [lo, hi] : runs) {
    // Back to front, so that each piece's start is still a VMA of its own when merged.
    std::vector<uint64_t> starts;
    for (auto p = vmas_.find(lo); p != vmas_.end() && p->first < hi; ++p)
      starts.push_back(p->first);
    for (auto s = starts.rbegin(); s != starts.rend(); ++s) MergeAround(*s);
  }
}

void MemoryManager::FillForPatching(uint64_t addr) const {
  // Host-file pages: only the pages the patch reads and writes, the site's bytes
  // [addr-7, addr+6), are filled; the rest of the chunk stays the host's. Each filled
  // page replaces a host page-cache mapping, and on a shadow-paged VM zapping a
  // populated page costs ~3-6 us. Copy-on-write pages (shared since a fork): the
  // site's chunk is copied, as a write there would.
  const uint64_t lo = GuestAddr(addr - 7).PageDown().value();
  const uint64_t hi = GuestAddr(addr + 6).PageUp().value();
  for (uint64_t a = lo; a < hi;) {
    const Vma* v = FindVma(a);
    if (!v) {
      a += kPageSize;
      continue;
    }
    const uint64_t stop = std::min(v->end, hi);
    if (v->lazy_fill && v->host_file) {
      (void)FillSpan(a, stop);
    } else if (v->cow) {
      (void)BreakCowAt(a);
    }
    a = stop;
  }
}

SysStatus MemoryManager::Fill(uint64_t start, uint64_t end) const {
  return ForEachChunk(
      start, end, [](const Vma& v) { return static_cast<bool>(v.lazy_fill); },
      &MemoryManager::FillAt);
}

}  // namespace usentry::sentry::mm
