// The usentry binary's entry point (linked with -e usentry_entry): maps the binary's
// pages in two calls before libc's start-up runs, then continues at _start.
//
// Why: libc's start-up of this static-pie binary writes ~40 pages of relocated pointers
// (.data.rel.ro, .got) and runs code and reads constants from all over the image, each
// first touch a page fault; on a VM whose faults exit to the hypervisor that was ~70
// faults, 0.8 ms, before main (perf record -e exceptions:page_fault_user). The same
// pages populated by madvise cost ~1 us each. Nothing here may need a relocation (none
// has been applied yet): the symbols are the linker's own, addressed relative to %rip.
//
//   [__ehdr_start, start of the writable segment)  code and constants: MADV_POPULATE_READ
//   [writable segment, _end)                        data, relro, bss: MADV_POPULATE_WRITE
//
// The writable segment starts on the page of .init_array (after .tdata, in the same
// page on this layout; a page more or less only changes what is populated). A kernel
// without these advice values (before 5.14) returns EINVAL and nothing changes.
// %rdx (the dynamic loader's exit hook, 0 when static) and %rsp are _start's inputs.
asm(R"(
  .text
  .globl usentry_entry
  .type usentry_entry, @function
usentry_entry:
  .cfi_startproc
  .cfi_undefined rip
  mov %rdx, %r12
  lea __ehdr_start(%rip), %rdi
  lea __init_array_start(%rip), %rsi
  and $-4096, %rsi
  sub %rdi, %rsi
  mov $22, %edx          /* MADV_POPULATE_READ */
  mov $28, %eax          /* SYS_madvise */
  syscall
  lea __init_array_start(%rip), %rdi
  and $-4096, %rdi
  lea _end(%rip), %rsi
  add $4095, %rsi
  and $-4096, %rsi
  sub %rdi, %rsi
  mov $23, %edx          /* MADV_POPULATE_WRITE */
  mov $28, %eax
  syscall
  mov %r12, %rdx
  jmp _start
  .cfi_endproc
  .size usentry_entry, .-usentry_entry
)");
