// Mapping a process's pages in one call instead of taking a page fault on each: the
// binary's code and constants, and the malloc heap.
#ifndef USENTRY_BASE_PREFAULT_H_
#define USENTRY_BASE_PREFAULT_H_

#include <cstddef>
#include <cstdint>

namespace usentry {

// Maps every page of the executable's read-only PT_LOAD segments (its code and
// constants) into this process's page tables now, with MADV_POPULATE_READ.
//
// Why: each usentry process (the CLI, the gofer, the sentry and its threads) starts with
// no page-table entries for the binary's code (fork and clone copy none for file
// mappings that were never written), so the first run of each 64 KiB of code is a page
// fault, and on a VM whose faults exit to the hypervisor one costs 10-30 us; a run of
// /bin/true took ~150 such faults. Populating the ~6 MB of code and constants at once
// costs ~0.25 ms there. Best effort: a kernel without MADV_POPULATE_READ (before 5.14)
// just takes the faults as before; returns whether every segment was populated.
// Async-signal-safe (a raw madvise per segment, no loader lock), so a child of a
// multi-threaded process may call it before exec or its own threads.
bool PrefaultReadOnlyImage();

// For a process that allocates a lot and lives for one run (the sentry), in two steps so
// that the second may run on a thread beside the caller's other work:
// PrepareHeap keeps the malloc heap (brk) the only arena, never given back or bypassed
// by mmap for blocks under 16 MiB, grows it by `extra` bytes (malloc calls), and returns
// its range. PopulateHeap maps that range writable now with MADV_POPULATE_WRITE (one
// madvise, no allocation), which also gives this process its own copy of every heap page
// it shares with its parent since fork or clone. Without it, each first write to a heap
// page is a fault (a fresh page, or a copy-on-write one), 10-30 us each on a VM like
// the above. Populate before the process's seccomp filter, or under one that allows
// madvise. PopulateHeap returns whether the kernel populated the heap.
struct HeapRange {
  uintptr_t start = 0;
  uintptr_t end = 0;
};
HeapRange PrepareHeap(size_t extra);
bool PopulateHeap(HeapRange heap);

}  // namespace usentry

#endif  // USENTRY_BASE_PREFAULT_H_
