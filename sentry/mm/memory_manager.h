// MemoryManager: one app address space as the sentry sees it: VMAs backed by ranges of
// the MemoryFile, mirrored into a platform AddressSpace. All app-memory access from the
// sentry goes through CopyIn/CopyOut/Translate here.
//
// Locking: every method requires the kernel lock (Kernel::mu). The platform address
// space is created lazily by the owning task's thread (ptrace needs the tracer thread).
#ifndef USENTRY_SENTRY_MM_MEMORY_MANAGER_H_
#define USENTRY_SENTRY_MM_MEMORY_MANAGER_H_

#include <sys/mman.h>
#include <sys/uio.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "platform/platform.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/mm/guest_addr.h"
#include "sentry/mm/mapping_observer.h"
#include "sentry/mm/memory_file.h"

namespace usentry::sentry::mm {

// The lowest address an app may map. Linux's vm.mmap_min_addr is 0x10000; the 64 KiB
// above it hold the systrap platform's syscall-patch table (platform/systrap/layout.h),
// so apps get EPERM for fixed mappings there, on every platform alike.
inline constexpr uint64_t kMinAddr = 0x20000;

// What one fault (or sentry access) fills (fill.cc) or copies (cow.cc): the 64 KiB-aligned
// chunk around the page, clipped to the VMA. Sixteen pages per trap halve the faults of
// sequential access at a few microseconds of filling or copying each.
inline constexpr uint64_t kFaultChunk = 64 << 10;
// What MemoryManager::FillAhead may fill per address space (an exec starts a new one).
inline constexpr uint64_t kFillAheadBudget = 4 << 20;

enum class Access { kRead, kWrite };

// Fills up to `len` bytes at `dst` with file contents starting at `file_off` and
// returns how many it wrote: fewer than `len` only at the end of the file (the rest of
// the mapping is zero). MMap calls it for consecutive pieces of the mapping, each with
// its own file offset. Used for private (and, for now, shared) file mappings.
using FileFiller =
    std::function<SysResult<uint64_t>(uint8_t* dst, uint64_t len, uint64_t file_off)>;

struct Vma {
  uint64_t start = 0;
  uint64_t end = 0;
  int prot = 0;      // PROT_*
  int max_prot = 7;  // what mprotect may grant (file opened read-only => no shared write)
  bool shared = false;
  bool grows_down = false;
  std::shared_ptr<MemoryRange> range;  // backing pages; vma byte 0 = range->data()+range_off
  uint64_t range_off = 0;
  // For /proc/PID/maps and fork bookkeeping: what was mapped (file path or [heap]...).
  std::string name;
  uint64_t file_off = 0;
  uint64_t dev = 0, ino = 0;
  std::shared_ptr<void> file_ref;  // keeps the mapped file alive, opaque to mm
  // Mapped by the host in every address space of the platform, at the same address in
  // the sentry (the host vDSO block, platform/host_vdso.h): no memory-file pages.
  bool host = false;
  // The pages hold (or, while lazy_fill, will hold) exactly the file's bytes at file_off
  // and were never writable since: clean, in /proc/PID/smaps_rollup's terms.
  bool pristine = false;
  // Demand fill (fill.cc): the file's bytes are not read yet. The platform maps such a
  // VMA PROT_NONE; the first access (an app fault, or the sentry reading or writing it)
  // fills the 64 KiB chunk around it with lazy_fill and maps it as the VMA says.
  FileFiller lazy_fill;
  // A lazy_fill VMA whose bytes FillAhead already wrote into its pages while the app ran
  // (fill.cc): still mapped PROT_NONE, so the first touch faults, but then only maps it.
  bool prefilled = false;
  // The host file lazy_fill reads, opened read-only (MMapOpts::host_file). While the VMA
  // is unfilled and not writable, the platform maps it straight from the host's page
  // cache where it can (AddressSpace::MapHostFile) instead of PROT_NONE: reads and
  // execution then never fault, and only the sentry writing there or handing the bytes
  // on (Translate), a write after mprotect, or systrap patching a syscall site there
  // fills (CopyIn reads the file instead).
  std::shared_ptr<const UniqueFd> host_file;
  // Told when this VMA is made, copied (split, fork) and removed (mapping_observer.h);
  // SysV shm attachments have one, other VMAs none.
  ObservedMapping observer;
  // Copy-on-write (cow.cc). Fork leaves both address spaces' private VMAs on the same
  // pages, so `range` may be another address space's too: it is never written in place.
  // The platform maps it without PROT_WRITE, and the first write (an app fault, or the
  // sentry writing app memory) copies the chunk around it into `cow_dest`, at
  // cow_dest_off + (address - start). cow_dest is made at that first copy, for the
  // whole VMA, so that the copies of neighbouring chunks are contiguous and merge back
  // into one VMA. Only private VMAs are ever cow.
  bool cow = false;
  std::shared_ptr<MemoryRange> cow_dest;
  uint64_t cow_dest_off = 0;
};

// The protection the platform maps `v` with: a copy-on-write VMA is not writable yet,
// an unfilled one not accessible at all.
inline int HostProt(const Vma& v) {
  if (v.lazy_fill) return PROT_NONE;  // not filled yet
  return v.cow ? v.prot & ~PROT_WRITE : v.prot;
}

// Whether no byte of `v`'s pages was ever written: an unfilled file mapping (nothing has
// read its file bytes in yet, and the app's view of it is PROT_NONE or the host's page
// cache). Its range came from MemoryFile::Allocate, which hands out holes, so its pages
// are still holes and giving them back would free nothing. ld.so maps each library
// whole and then its segments over it: in a python3 start 16 such replaced pieces each
// cost a hole punch (~10-20 us here: the punch walks every mapping of the memory file,
// the stubs' too, even where no page is allocated).
inline bool NeverWritten(const Vma& v) { return v.lazy_fill && !v.prefilled; }

// Whether MemoryManager::FillAhead fills `v` (fill.cc): unfilled file bytes that only this
// address space's writes will change (not shared, not copy-on-write after a fork), and
// writable, so never read from the host's page cache instead (Vma::host_file serves
// only read-only ones).
inline bool FillAheadCandidate(const Vma& v) {
  return v.lazy_fill && !v.prefilled && !v.shared && !v.cow && v.range &&
         (v.prot & PROT_WRITE) != 0;
}

struct MMapOpts {
  GuestAddr addr;
  uint64_t len = 0;
  int prot = 0;
  int flags = 0;  // MAP_* as the app passed them
  uint64_t file_off = 0;
  FileFiller fill;  // empty for anonymous mappings
  // `fill` yields the file's bytes up to EOF (not, like the ELF loader's, a segment's
  // file part followed by zeros).
  bool fill_is_whole_file = false;
  int max_prot = 7;
  std::string name;
  uint64_t dev = 0, ino = 0;
  std::shared_ptr<void> file_ref;
  // The host file whose bytes `fill` reads, if it is one the platform may map directly
  // (Vma::host_file): `fill` must yield exactly its bytes at file_off for the whole
  // mapping. Used for private mappings only.
  std::shared_ptr<const UniqueFd> host_file;
  // Files whose data already lives in the memory file (memfds): a MAP_SHARED mapping
  // maps these pages from byte file_off on (coherent with the file's read/write); they
  // must cover [file_off, file_off+len rounded to pages). Private mappings use `fill`.
  std::shared_ptr<MemoryRange> shared_pages;
  // Counts the VMAs of this mapping (SysV shm attachments); see Vma::observer.
  std::shared_ptr<MappingObserver> observer;
};

class MemoryManager {
 public:
  // `mf` outlives every MemoryManager. `max_user` is the top of the app's range.
  MemoryManager(MemoryFile* mf, uint64_t max_user);
  ~MemoryManager();

  // --- syscalls (mm/syscalls.cc) ---
  SysResult<GuestAddr> MMap(const MMapOpts& opts);
  SysStatus MUnmap(GuestAddr addr, uint64_t len);
  SysStatus MProtect(GuestAddr addr, uint64_t len, int prot);
  SysResult<GuestAddr> Brk(GuestAddr addr);
  SysResult<GuestAddr> MRemap(GuestAddr old_addr, uint64_t old_len, uint64_t new_len, int flags,
                              GuestAddr new_addr);
  SysStatus MAdviseDontNeed(GuestAddr addr, uint64_t len);
  // msync: validates like Linux (EINVAL, ENOMEM for unmapped parts). Shared mappings of
  // sentry-held files map the file's own pages and private ones are copies; shared
  // mappings of host files write their stores back (their observer's Msync).
  SysStatus MSync(GuestAddr addr, uint64_t len, int flags) const;

  // --- loader support ---
  void SetBrkBase(GuestAddr base);  // start of the heap, just past the ELF's bss
  // Lowest free gap of `len` bytes searching downward from the mmap base.
  SysResult<GuestAddr> FindGap(uint64_t len, GuestAddr hint) const;
  uint64_t max_user() const { return max_user_; }
  // Whether file mappings are filled at the first touch of each chunk (fill.cc; the
  // default) or whole at mmap, where a fault costs more than reading (ptrace). Forks
  // inherit it.
  void set_demand_fill(bool on) { demand_fill_ = on; }
  void set_stack_range(GuestAddr lo, GuestAddr hi) { stack_lo_ = lo, stack_hi_ = hi; }
  // Records host-mapped ranges (Vma::host) that every address space already has: all
  // of them, or (ENOMEM: one is not free) none. They may lie above max_user(), where the
  // app's own mappings never go.
  struct HostMapping {
    uint64_t start, end;
    int prot;
    std::string name;
  };
  SysStatus AddHostMappings(const std::vector<HostMapping>& parts);

  // --- copy helpers: EFAULT for unmapped or protection-violating ranges ---
  SysStatus CopyIn(GuestAddr src, void* dst, size_t n) const;
  SysStatus CopyOut(GuestAddr dst, const void* src, size_t n) const;
  // Like CopyOut but ignores protections (loader, signal frames on a writable stack
  // still need the VMA to exist).
  SysStatus CopyOutForce(GuestAddr dst, const void* src, size_t n) const;
  SysStatus ZeroOut(GuestAddr dst, size_t n) const;
  // NUL-terminated string of at most max_len bytes (ENAMETOOLONG beyond).
  SysResult<std::string> CopyInString(GuestAddr src, size_t max_len) const;
  // NULL-terminated array of string pointers (argv/envp).
  SysResult<std::vector<std::string>> CopyInStringArray(GuestAddr src, size_t max_total) const;
  // Sentry-side spans covering [addr, addr+n) if all of it is accessible for `access`.
  // Spans point into the MemoryFile mapping; valid until the next mm change.
  SysResult<std::vector<iovec>> Translate(GuestAddr addr, size_t n, Access access) const;
  // Reads an app iovec array and translates every element (readv/writev/...).
  SysResult<std::vector<iovec>> TranslateIovecs(GuestAddr iov, int iovcnt, Access access) const;
  // Stores `n` bytes of `src` into the spans `dst` (from Translate) with pwrite on the
  // memory file instead of through the sentry's mapping, so that the sentry does not
  // map those pages (see sys_read_write.cc). The spans must hold at least n bytes.
  void WriteSpans(absl::Span<const iovec> dst, const uint8_t* src, size_t n) const;

  template <typename T>
  SysResult<T> CopyInObj(GuestAddr src) const {
    T v;
    RETURN_IF_ERRNO(CopyIn(src, &v, sizeof(T)));
    return v;
  }
  template <typename T>
  SysStatus CopyOutObj(GuestAddr dst, const T& v) const {
    return CopyOut(dst, &v, sizeof(T));
  }

  // --- fork / platform ---
  // A copy for fork(): shared ranges shared, private ones copy-on-write in both this
  // address space and the copy (cow.cc).
  std::unique_ptr<MemoryManager> Fork();
  // A fault the app took at `addr` (platform::SwitchResult): kResolved when it was a
  // write to copy-on-write pages, now copied; kStale when the VMA there already allows
  // the access (another thread's copy, or mprotect, got there first) — in both cases
  // the app retries the instruction; kNoMemory when the copy found the memory file
  // full; kSignal otherwise. `write` false means "a read, or unknown" (ptrace cannot
  // tell).
  enum class FaultResult { kSignal, kResolved, kStale, kNoMemory };
  FaultResult HandleFault(uint64_t addr, bool write, bool exec);
  // Fills one chunk of an unfilled, writable, private file mapping (a data segment)
  // before the app touches it, so that its first touch costs a fault but no file read
  // or page allocation (fill.cc). Called under the kernel lock while this address
  // space's app code runs; false when nothing is left to fill ahead.
  bool FillAhead();
  // Maps every chunk FillAhead filled (Vma::prefilled) into the address space with the
  // VMA's protection, one host call per run of adjacent chunks; the first touch of each
  // then costs no fault.
  void MapPrefilled() const;
  // Whether FillAhead may find work: a hint, read without the kernel lock.
  bool fill_ahead_pending() const { return fill_ahead_pending_.load(std::memory_order_relaxed); }
  // The platform could not patch a syscall site at `addr` because its pages are not
  // this address space's alone to rewrite: the host's (Vma::host_file), whose pages
  // it fills, or copy-on-write pages shared since a fork (Vma::cow), whose chunk it
  // copies. The next call there is patched.
  void FillForPatching(uint64_t addr) const;
  // After a child's address space went away (wait reaped it): read-only cow VMAs that
  // no other address space maps any more stop being cow. That needs no host call (their
  // host protection does not change) and lets systrap patch syscall sites in that code
  // again; writable ones are left to their first write fault.
  void ReclaimReadOnly();
  // Bytes of memory-file pages that copy-on-write breaks made in this address space,
  // and how many breaks (for tests and /proc).
  uint64_t cow_copied_bytes() const { return cow_copied_bytes_; }
  // Binds a fresh platform address space and maps every VMA into it.
  absl::Status Activate(std::unique_ptr<platform::AddressSpace> as);
  platform::AddressSpace* address_space() const { return as_.get(); }
  // The platform's CPU-time figure for this address space (AddressSpace::CpuTime).
  std::optional<absl::Duration> AppCpuTime() const { return as_ ? as_->CpuTime() : std::nullopt; }

  const std::map<uint64_t, Vma>& vmas() const { return vmas_; }  // keyed by start
  uint64_t brk() const { return brk_; }
  std::string executable_path;                                      // for /proc/self/exe
  uint64_t arg_start = 0, arg_end = 0, env_start = 0, env_end = 0;  // /proc cmdline/environ
  std::vector<uint64_t> auxv;                                       // pairs, for /proc/self/auxv

 private:
  const Vma* FindVma(uint64_t addr) const;
  // Splits VMAs so that `addr` is a boundary.
  void SplitAt(uint64_t addr) const;
  // What RemoveRange took out of a range that a new mapping replaces: the ranges stay
  // allocated (so the new mapping cannot be given the same pages) until
  // ReleaseReplaced has given back the private pages, (memory-file offset, length).
  struct Replaced {
    std::vector<std::shared_ptr<MemoryRange>> ranges;
    std::vector<std::pair<uint64_t, uint64_t>> pages;
  };
  // Removes [start,end) from the VMA map and the address space. Pages of `keep` are not
  // given back: a new mapping is taking them over. With `replaced`, the caller maps a
  // new VMA over the whole range at once (a host mmap with MAP_FIXED replaces what was
  // there in the same call), so the address space is not asked to unmap it first, and
  // the pages go back in ReleaseReplaced, once the new mapping stands.
  void RemoveRange(uint64_t start, uint64_t end, const MemoryRange* keep = nullptr,
                   Replaced* replaced = nullptr);
  // After RemoveRange with `replaced`: `mapped` says whether the new mapping replaced
  // [start,end) in the address space; if not, the range is unmapped there first (no
  // process may keep pages that go back to the memory file).
  void ReleaseReplaced(uint64_t start, uint64_t end, bool mapped, Replaced& replaced);
  // Has the address space, if any, unmap [start,end) (the part of it at or above kMinAddr).
  void UnmapFromAs(uint64_t start, uint64_t end) const;
  // Pages of [start, start+len) that a private, never-writable, filled mapping of the
  // same open file at the same offset already holds (one range, contiguous), if any.
  std::optional<std::pair<std::shared_ptr<MemoryRange>, uint64_t>> PristinePages(
      uint64_t start, uint64_t len, const MMapOpts& o) const;
  // Maps into the address space too; `mapped`, if given, says whether that worked.
  SysStatus InsertVma(Vma vma, bool* mapped = nullptr);
  // Whether the address space maps `v` now (true without one, or for a host VMA).
  bool MapIntoAs(const Vma& v) const;
  // Maps `v` into `as`: from the host file where Vma::host_file allows, else from the
  // memory file with HostProt(v).
  static absl::Status MapVma(platform::AddressSpace& as, const Vma& v);
  bool RangeFree(uint64_t start, uint64_t end) const;
  // Calls `op` once per kFaultChunk-aligned chunk of [start, end) in the VMAs `wants`
  // selects, skipping holes and other VMAs.
  SysStatus ForEachChunk(uint64_t start, uint64_t end, bool (*wants)(const Vma&),
                         SysStatus (MemoryManager::*op)(uint64_t) const) const;
  // --- demand fill (fill.cc) ---
  // Fills every unfilled chunk of [start, end) (EIO/ENOMEM from the filler).
  SysStatus Fill(uint64_t start, uint64_t end) const;
  // Fills the chunk of the unfilled VMA around `addr`.
  SysStatus FillAt(uint64_t addr) const;
  // Fills [lo, hi), page-aligned and inside one unfilled VMA, and maps it.
  SysStatus FillSpan(uint64_t lo, uint64_t hi) const;
  // Reads [lo, hi) of unfilled VMA `v` from its file into its pages (not mapping them).
  SysStatus FillPages(const Vma& v, uint64_t lo, uint64_t hi) const;
  // --- copy-on-write (cow.cc) ---
  // Gives [start, end) pages of its own wherever it is copy-on-write, so the sentry may
  // write there; ENOMEM when the memory file is full.
  SysStatus BreakCow(uint64_t start, uint64_t end) const;
  // Copies the chunk of cow VMA `v` around `addr` (or all of v's pages, when no other
  // address space maps them any more, just makes them writable).
  SysStatus BreakCowAt(uint64_t addr) const;
  // Makes [start, end), inside one cow VMA, read as zero in this address space only.
  SysStatus ZeroCow(uint64_t start, uint64_t end);
  // The cow VMA at `addr`, with a destination for its copies (split off first when the
  // VMA is larger than a window; cow.cc).
  SysResult<Vma*> CowDestVma(uint64_t addr) const;
  // True when no other address space maps any page of `r`.
  bool OnlyOwner(const MemoryRange* r) const;
  // Replaces [start, end) — pieces of one mapping, mapped and compatible — by one VMA on
  // `dst` at dst_off holding the same bytes (or zeros, with copy false).
  void ReplaceBacking(uint64_t start, uint64_t end, std::shared_ptr<MemoryRange> dst,
                      uint64_t dst_off, bool copy) const;
  // Joins the VMA starting at `addr` with its neighbours where they are one mapping on
  // contiguous pages (copies of neighbouring chunks).
  void MergeAround(uint64_t addr) const;
  // Makes [start, end), made of pieces of one mapping, a single VMA (mremap needs one).
  SysStatus Consolidate(uint64_t start, uint64_t end);
  // Calls fn(pointer, length, offset into the access) for each piece of [addr, addr+n)
  // in the memory file, after checking protections (unless `force`), filling unfilled
  // chunks and breaking copy-on-write for writes. A read that copies to `read_into`
  // (CopyIn) takes the bytes of unfilled host-file chunks straight from the file there.
  SysStatus Access(GuestAddr addr, size_t n, mm::Access access, bool force,
                   const std::function<void(uint8_t*, size_t, size_t)>& fn,
                   uint8_t* read_into = nullptr) const;

  MemoryFile* mf_;
  uint64_t max_user_;
  uint64_t mmap_base_;
  // Mutable for copy-on-write only: a write through a const path (CopyOut, Translate for
  // writing) may first move pages to copies of their own, which changes where the bytes
  // live but never what the app reads.
  mutable std::map<uint64_t, Vma> vmas_;
  mutable uint64_t cow_copied_bytes_ = 0;
  bool demand_fill_ = true;
  std::atomic<bool> fill_ahead_pending_{false};
  uint64_t filled_ahead_bytes_ = 0;  // against kFillAheadBudget
  uint64_t brk_base_ = 0, brk_ = 0;
  GuestAddr stack_lo_, stack_hi_;
  std::unique_ptr<platform::AddressSpace> as_;
};

}  // namespace usentry::sentry::mm

#endif  // USENTRY_SENTRY_MM_MEMORY_MANAGER_H_
