#include "base/prefault.h"

#include <elf.h>
#include <link.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

extern "C" const ElfW(Ehdr) __ehdr_start
    __attribute__((visibility("hidden")));  // NOLINT: the linker's name

namespace usentry {
namespace {

constexpr uintptr_t kPage = 4096;

// madvise(advice) over [start, end) rounded out to pages, leaving errno as it was.
// False when the kernel refused (EINVAL before Linux 5.14: nothing changes then).
bool Populate(uintptr_t start, uintptr_t end, int advice) {
  start &= ~(kPage - 1);
  end = (end + kPage - 1) & ~(kPage - 1);
  const int saved_errno = errno;
  const bool ok = syscall(SYS_madvise, start, end - start, advice) == 0;
  errno = saved_errno;
  return ok;
}

}  // namespace

bool PrefaultReadOnlyImage() {
  // The executable's own ELF header and program headers, as loaded (the linker defines
  // __ehdr_start; no loader lock, unlike dl_iterate_phdr, and static-pie has no PT_PHDR
  // for getauxval(AT_PHDR) to be placed by).
  const ElfW(Ehdr)* ehdr = &__ehdr_start;
  const auto* phdr =
      reinterpret_cast<const ElfW(Phdr)*>(reinterpret_cast<const char*>(ehdr) + ehdr->e_phoff);
  // The load bias: the segment that maps the file's first byte holds the header.
  uintptr_t bias = 0;
  bool found = false;
  for (int i = 0; i < ehdr->e_phnum; ++i) {
    if (phdr[i].p_type == PT_LOAD && phdr[i].p_offset == 0) {
      bias = reinterpret_cast<uintptr_t>(ehdr) - phdr[i].p_vaddr;
      found = true;
    }
  }
  if (!found) return false;
  bool all = true;
  for (int i = 0; i < ehdr->e_phnum; ++i) {
    const ElfW(Phdr)& ph = phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) != 0) continue;
    const uintptr_t start = bias + ph.p_vaddr;
    all = Populate(start, start + ph.p_filesz, MADV_POPULATE_READ) && all;
  }
  return all;
}

HeapRange PrepareHeap(size_t extra) {
  // Every thread allocates from the one brk heap populated here: without a limit each
  // new thread's first malloc (or free: its tcache) makes an arena of its own, mapped
  // apart and faulted page by page.
  mallopt(M_ARENA_MAX, 1);
  // Blocks up to 16 MiB come from the heap (not fresh mmaps, faulted page by page each
  // time), and a free never returns heap pages to the kernel.
  mallopt(M_MMAP_THRESHOLD, 16 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  // Grows the break: the freed block joins the top of the heap and stays there.
  // (volatile: a compiler may drop a malloc whose block is only freed.)
  void* volatile block = malloc(extra);
  free(block);
  const auto end = reinterpret_cast<uintptr_t>(sbrk(0));
  // The main arena is one contiguous brk area of mallinfo2().arena bytes ending at the break.
  return {end - mallinfo2().arena, end};
}

bool PopulateHeap(HeapRange heap) { return Populate(heap.start, heap.end, MADV_POPULATE_WRITE); }

}  // namespace usentry
