// The usentry binary's entry point (linked with -e usentry_entry): maps the binary's
// writable pages in one call before libc's start-up runs, then continues at _start.
//
// Why: libc's start-up of this static-pie binary writes ~40 pages of relocated pointers
// (.data.rel.ro, .got), each first write a page fault of its own (a private file page
// is copied; no fault-around for writes); on a VM whose faults exit to the hypervisor
// that was most of ~70 faults, 0.8 ms, before main (perf record -e
// exceptions:page_fault_user). The same pages populated by madvise cost ~1 us each.
// Nothing here may need a relocation (none has been applied yet): the symbols are the
// linker's own, addressed relative to %rip.
//
//   [writable segment, _end)   data, relro, bss: MADV_POPULATE_WRITE
//
// The code and constants are left to their faults, which map 64 KiB each (fault-around):
// populating all ~6 MB of them as well (MADV_POPULATE_READ) was neutral on that VM and
// cost ~0.45 ms of every `usentry run -- /bin/true` on a 2-vCPU KVM guest (60
// interleaved rounds, 7.89 against 7.44 ms; `usentry --version` 1.48 against 1.32 ms).
// The writable segment starts on the page of .init_array (after .tdata, in the same
// page on this layout; a page more or less only changes what is populated). A kernel
// without this advice value (before 5.14) returns EINVAL and nothing changes.
// %rdx (the dynamic loader's exit hook, 0 when static) and %rsp are _start's inputs.
asm(R"(
  .text
  .globl usentry_entry
  .type usentry_entry, @function
usentry_entry:
  .cfi_startproc
  .cfi_undefined rip
  mov %rdx, %r12
  lea __init_array_start(%rip), %rdi
  and $-4096, %rdi
  lea _end(%rip), %rsi
  add $4095, %rsi
  and $-4096, %rsi
  sub %rdi, %rsi
  mov $23, %edx          /* MADV_POPULATE_WRITE */
  mov $28, %eax          /* SYS_madvise */
  syscall
  mov %r12, %rdx
  jmp _start
  .cfi_endproc
  .size usentry_entry, .-usentry_entry
)");
