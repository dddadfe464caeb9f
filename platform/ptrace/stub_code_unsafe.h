// The ptrace stub code page: machine code mapped once in the sentry at a fixed high
// address, inherited by each forked stub, which runs nothing else.
#ifndef USENTRY_PLATFORM_PTRACE_STUB_CODE_UNSAFE_H_
#define USENTRY_PLATFORM_PTRACE_STUB_CODE_UNSAFE_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace usentry::platform::ptrace {

// x86-64 TASK_SIZE with 4-level paging: the end of user address space the stub clears.
inline constexpr uint64_t kTaskSize = 0x7ffffffff000;
inline constexpr uint64_t kStubPageSize = 4096;

// Exit status of a stub whose startup code failed (a munmap returned an error).
inline constexpr int kStubStartupFailedExit = 120;

struct StubPage {
  uint64_t addr = 0;          // page start; also MaxUserAddress of every stub
  uint64_t entry = 0;         // where a freshly forked child jumps (see stub_code_unsafe.cc)
  uint64_t syscall_site = 0;  // `syscall; int3`: rip for injected syscalls
  uint64_t trap_rip = 0;      // rip after the int3 of the syscall site
};

// Maps the stub page on first use (thread safe, once per process) and returns it. The
// first free of a fixed list of candidate addresses is used, highest first; all are
// >= 0x7ff000000000 so app stacks fit below.
absl::StatusOr<StubPage> GetStubPage();

// What the forked child needs; prepared by the parent before the fork because the child
// may not allocate (another sentry thread may hold the malloc lock at fork time).
struct StubChildArgs {
  int memory_fd = -1;            // the only fd the stub keeps
  pid_t parent_pid = 0;          // to detect that the parent died before PDEATHSIG was set
  const void* filter = nullptr;  // struct sock_fprog* of the stub seccomp filter
  uint64_t entry = 0;            // StubPage::entry
};

// Exit statuses of a child that failed before reaching the stub code (for messages).
enum StubChildExit : int {
  kChildPdeathsig = 110,
  kChildParentGone,
  kChildRseq,
  kChildSigaction,
  kChildSigmask,
  kChildCloseRange,
  kChildTraceme,
  kChildNoNewPrivs,
  kChildSeccomp,
};
const char* StubChildExitName(int code);

// Body of the freshly forked (raw clone, no atfork handlers) stub child: only raw
// syscalls, no allocation. Resets signal dispositions and mask, closes every fd but
// memory_fd, unregisters glibc's rseq area, PTRACE_TRACEME, NO_NEW_PRIVS, installs the
// filter, then jumps to the stub code. Exits with a StubChildExit code on failure.
[[noreturn]] void StubChildMain(const StubChildArgs& args);

// Jumps to `entry` and never returns. For the forked child only: the stub code unmaps
// everything this function's caller had.
[[noreturn]] void JumpToStub(uint64_t entry);

}  // namespace usentry::platform::ptrace

#endif  // USENTRY_PLATFORM_PTRACE_STUB_CODE_UNSAFE_H_
