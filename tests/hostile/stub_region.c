// Attacks on the platform's stub, which the ptrace platform places at or above
// 0x7ff000000000 in every app address space: unmapping, reprotecting, replacing or
// moving onto it would hand app code the stub's host-syscall privilege or crash the
// sentry's view of the process. Every memory call on that range must fail (the app's
// range ends at 0x7ff000000000), and the process then carries on normally.
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

int main(void) {
  // The ptrace platform's candidate stub pages (platform/ptrace/stub_code_unsafe.cc),
  // the app range's end, and the last page below TASK_SIZE.
  const uintptr_t kTargets[] = {0x7ff000000000, 0x7ff3fffff000, 0x7ff7fffff000, 0x7fffffffd000,
                                0x7fffffffe000};
  const uintptr_t kTaskSize = 0x7ffffffff000;
  const long page = 4096;
  char* scratch = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (Report("scratch", scratch == MAP_FAILED ? -1 : 0) < 0) return 1;
  strcpy(scratch, "scratch-intact");

  for (size_t i = 0; i < sizeof(kTargets) / sizeof(kTargets[0]); ++i) {
    void* t = (void*)kTargets[i];
    Report(Name("munmap:%lx", kTargets[i]), munmap(t, page));
    Report(Name("mprotect_rwx:%lx", kTargets[i]),
           mprotect(t, page, PROT_READ | PROT_WRITE | PROT_EXEC));
    void* m = mmap(t, page, PROT_READ | PROT_WRITE | PROT_EXEC,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    Report(Name("mmap_fixed:%lx", kTargets[i]), m == MAP_FAILED ? -1 : (long)(uintptr_t)m);
    m = mmap(t, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    Report(Name("mmap_noreplace:%lx", kTargets[i]), m == MAP_FAILED ? -1 : (long)(uintptr_t)m);
    m = mremap(scratch, page, page, MREMAP_MAYMOVE | MREMAP_FIXED, t);
    Report(Name("mremap_onto:%lx", kTargets[i]), m == MAP_FAILED ? -1 : (long)(uintptr_t)m);
    // Growing the scratch page up to the target would cover everything in between.
    m = mremap(scratch, page, kTargets[i] + page - (uintptr_t)scratch, 0);
    Report(Name("mremap_grow:%lx", kTargets[i]), m == MAP_FAILED ? -1 : (long)(uintptr_t)m);
    Report(Name("madvise_dontneed:%lx", kTargets[i]), madvise(t, page, MADV_DONTNEED));
  }
  // One call over the whole top region.
  const uintptr_t top = 0x7ff000000000;
  Report("munmap_all_top", munmap((void*)top, kTaskSize - top));
  Report("mprotect_all_top", mprotect((void*)top, kTaskSize - top, PROT_NONE));
  void* m = mmap((void*)top, kTaskSize - top, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  Report("mmap_fixed_all_top", m == MAP_FAILED ? -1 : (long)(uintptr_t)m);
  // A hint up there is only a hint: whatever comes back must be below the top.
  m = mmap((void*)0x7ff7fffff000, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  printf("mmap_hint=%s\n", m == MAP_FAILED      ? "failed"
                           : (uintptr_t)m < top ? "below_top"
                                                : "ABOVE_TOP");

  // The systrap platform's syscall-patch table at 0x10000 (below the app's lowest
  // address, 0x20000): unmapping it is a no-op, replacing or reprotecting it fails, and
  // the patched calls below still work (they jump through it).
  Report("patch_munmap", munmap((void*)0x10000, 0x10000));
  Report("patch_mprotect", mprotect((void*)0x10000, 0x10000, PROT_READ | PROT_WRITE));
  m = mmap((void*)0x10000, 0x10000, PROT_READ | PROT_WRITE | PROT_EXEC,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  Report("patch_mmap_fixed", m == MAP_FAILED ? -1 : (long)(uintptr_t)m);
  m = mremap(scratch, page, page, MREMAP_MAYMOVE | MREMAP_FIXED, (void*)0x10000);
  Report("patch_mremap_onto", m == MAP_FAILED ? -1 : (long)(uintptr_t)m);
  for (int i = 0; i < 100; ++i) getppid();

  // The sentry copying to or from app memory must refuse the stub's range, the kernel
  // half (EFAULT, no crash, no leak).
  int fds[2];
  if (Report("pipe", pipe(fds)) < 0) return 1;
  const uintptr_t kBadBuffers[] = {0x7fffffffe000, 0x7ff7fffff000, 0x7ff000000000,
                                   0xffffffffff600000, 0xffff800000000000};
  for (size_t i = 0; i < sizeof(kBadBuffers) / sizeof(kBadBuffers[0]); ++i) {
    Report(Name("copyout:%lx", kBadBuffers[i]), write(fds[1], "0123456789abcdef", 16) < 0
                                                    ? -1
                                                    : read(fds[0], (void*)kBadBuffers[i], 16));
    Report(Name("copyin:%lx", kBadBuffers[i]), write(fds[1], (void*)kBadBuffers[i], 16));
  }
  // Still running normally: memory, a fork, a write.
  char* heap = malloc(1 << 20);
  memset(heap, 'x', 1 << 20);
  pid_t child = fork();
  if (child == 0) _exit(heap[12345] == 'x' ? 42 : 1);
  int status = 0;
  waitpid(child, &status, 0);
  printf("after=%s %s\n",
         WIFEXITED(status) && WEXITSTATUS(status) == 42 ? "fork-ok" : "fork-broken",
         strcmp(scratch, "scratch-intact") == 0 ? "scratch-ok" : "scratch-moved");
  return 0;
}
