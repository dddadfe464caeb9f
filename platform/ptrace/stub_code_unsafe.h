// The ptrace stub code page: machine code mapped once in the sentry at a fixed high
// address, inherited by each forked stub, which runs nothing else (the fork itself is
// platform/stub_child_unsafe.h).
#ifndef USENTRY_PLATFORM_PTRACE_STUB_CODE_UNSAFE_H_
#define USENTRY_PLATFORM_PTRACE_STUB_CODE_UNSAFE_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "platform/host_vdso.h"
#include "platform/stub_child_unsafe.h"

namespace usentry::platform::ptrace {

// x86-64 TASK_SIZE with 4-level paging: the end of user address space the stub clears.
inline constexpr uint64_t kTaskSize = 0x7ffffffff000;
inline constexpr uint64_t kStubPageSize = 4096;

struct StubPage {
  uint64_t addr = 0;          // page start; also MaxUserAddress of every stub
  uint64_t entry = 0;         // where a freshly forked child jumps (see stub_code_unsafe.cc)
  uint64_t syscall_site = 0;  // `syscall; int3`: rip for injected syscalls
  uint64_t trap_rip = 0;      // rip after the int3 of the syscall site
  // `syscall; test rax,rax; jz child; int3; child: pause; jmp child`: an injected
  // clone(CLONE_THREAD) whose new thread waits (spinning) in the stub page until its
  // own tracer seizes it; the caller's thread reports back at clone_trap_rip.
  uint64_t clone_site = 0;
  uint64_t clone_trap_rip = 0;
  const HostVdso* vdso = nullptr;  // the host vDSO block every stub keeps, or null
};

// Maps the stub page on first use (thread safe, once per process) and returns it. The
// first free of a fixed list of candidate addresses is used, highest first; all are
// >= 0x7ff000000000 so app stacks fit below.
absl::StatusOr<StubPage> GetStubPage();

}  // namespace usentry::platform::ptrace

#endif  // USENTRY_PLATFORM_PTRACE_STUB_CODE_UNSAFE_H_
