// The seccomp filter of every systrap stub process (inherited from the zygote).
//
// Policy, in order:
//  * instruction pointer inside the stub code page: only the host syscalls the stub
//    code makes are allowed (munmap, mmap, mprotect, futex WAIT/WAKE, clone with the
//    zygote's or the thread flags, prctl(PR_SET_PDEATHSIG), close, recvmsg (the host
//    files MapHostFile maps arrive on the stub's own socket), gettid, sigaltstack,
//    arch_prctl(ARCH_SET_FS/GS), rt_sigreturn, exit, exit_group); anything else kills
//    the process.
//  * anywhere else (app code): SECCOMP_RET_TRAP, whatever the arch or number. The
//    stub's SIGSYS handler hands the call to the sentry, which emulates it (an int 0x80
//    or x32 call arrives with its arch/number and is refused there).
// App code can jump into the stub page and reach the allowed calls with its own
// arguments; docs/security.md says what that can and cannot do.
#ifndef USENTRY_PLATFORM_SYSTRAP_STUB_FILTER_H_
#define USENTRY_PLATFORM_SYSTRAP_STUB_FILTER_H_

#include <linux/filter.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace usentry::platform::systrap {

absl::StatusOr<std::vector<sock_filter>> BuildStubFilter(uint64_t code_page);

}  // namespace usentry::platform::systrap

#endif  // USENTRY_PLATFORM_SYSTRAP_STUB_FILTER_H_
