// The seccomp filter installed in every ptrace stub process: the host syscalls a stub
// may make at all (only the sentry's injected ones, from the stub code page).
#ifndef USENTRY_PLATFORM_PTRACE_STUB_FILTER_H_
#define USENTRY_PLATFORM_PTRACE_STUB_FILTER_H_

#include <linux/filter.h>
#include <sched.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace usentry::platform::ptrace {

// The clone flags of the one clone a stub may make: a new app thread of the stub
// process (Subprocess::CloneThread), untraced until its own tracer seizes it.
inline constexpr uint32_t kStubThreadCloneFlags =
    CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;

// Builds the stub filter for a stub code page at [stub_page, stub_page + 4096).
//
// Policy: SECCOMP_RET_KILL_PROCESS for a non-x86-64 arch, for any x32 syscall
// (nr & __X32_SYSCALL_BIT), and for any syscall whose instruction pointer is outside
// the stub page; from inside the page only mmap, munmap, mprotect, exit, exit_group,
// getpid, kill and clone with exactly kStubThreadCloneFlags are allowed (what the stub's startup
// code and the sentry's injected calls use). Everything else is killed.
//
// Why this is enough with PTRACE_SYSEMU: app code only ever runs while the sentry
// resumes the stub with PTRACE_SYSEMU. On syscall entry the kernel reports a
// SYSEMU syscall-stop and then skips the syscall *before* seccomp runs
// (kernel/entry/common.c, syscall_trace_enter returns -1 for SYSCALL_WORK_SYSCALL_EMU
// ahead of __secure_computing). So the filter only ever sees syscalls made while the
// stub is resumed with PTRACE_CONT: the stub's startup code and injected syscalls,
// both at the stub page. If tracing ever fails (the platform resumes app code without
// SYSEMU, or SYSEMU is somehow bypassed), every app syscall made from app code is
// killed. Emulated vsyscalls (a call into the legacy vsyscall page) do not go through
// syscall_trace_enter but do go through seccomp, with the instruction pointer in the
// vsyscall page: they are killed too.
//
// Known limit of this layer alone: app code can jump into the stub page, so with
// tracing broken it could reach the allowed calls (e.g. mmap of the memory file).
// PTRACE_SYSEMU is the layer that stops that; this filter narrows what a broken
// platform exposes rather than closing it.
//
// instruction_pointer in seccomp_data is the address after the `syscall`
// instruction, so stub syscall sites must not end at the page's last byte.
absl::StatusOr<std::vector<sock_filter>> BuildStubFilter(uint64_t stub_page);

}  // namespace usentry::platform::ptrace

#endif  // USENTRY_PLATFORM_PTRACE_STUB_FILTER_H_
