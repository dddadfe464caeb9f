// The systrap stub code page: generated once per sentry process with xbyak at a fixed
// high address that every stub process inherits (through the zygote) and keeps.
//
// What the code does, by entry point:
//  * zygote_entry (rdi = the zygote's request page): resets the FPU, unmaps everything
//    but its two pages, then forever: wait for a request, clone(CLONE_PARENT) a new
//    stub (a child of the sentry, not of the zygote). The new stub sets PDEATHSIG, maps
//    its context region from the context memfd, closes that fd, unmaps the zygote page
//    and becomes the control thread of slot 0.
//  * control thread (slot 0): waits for ops: kOpSyscall (mmap/munmap/mprotect for the
//    sentry) and kOpNewThread (clone an app thread into a slot).
//  * a new app thread: sigaltstack on its slot, FPU reset, then `int3`: its first trap,
//    whose signal frame the sentry fills with the app's registers.
//  * fast entry (from a patched syscall site, eax = nr, rcx = return address): saves
//    the app's registers in the slot (found through %gs, set per thread), switches to
//    the slot's own stack, reports kTrapFast and waits; kOpFastResume returns with the
//    result in rax, kOpSlow re-creates the app's state and traps with int3 so that the
//    sentry gets a full signal frame (signal delivery, FPU access, any register change).
//  * handler (SIGSYS, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGCHLD): records where
//    the frame is, reports the trap, waits (spin, then futex) for an op; kOpReturn sets
//    fs base if asked and loads the (possibly rewritten) frame's FPU state and registers
//    itself, then jumps to its rip; kOpResume rt_sigreturns into the frame instead (for
//    FPU state the sentry wrote, which only the kernel may check). The handler runs with
//    the app's signal mask (SA_NODEFER, nothing added), so an interrupt can land in it:
//    one whose rip is in this code is dropped at once.
#ifndef USENTRY_PLATFORM_SYSTRAP_STUB_CODE_UNSAFE_H_
#define USENTRY_PLATFORM_SYSTRAP_STUB_CODE_UNSAFE_H_

#include <sched.h>
#include <signal.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "platform/host_vdso.h"

namespace usentry::platform::systrap {

// The code region: code in its first page, then the FPU init image XRSTOR reads (up to
// the host's whole XSAVE size, which can exceed a page).
inline constexpr uint64_t kCodeSize = 4 * 4096;

// Zygote request pages are taken from this many pages just below the code page, one
// per live SystrapPlatform in the process.
inline constexpr int kZygotePages = 32;

// Flags of the clone that starts an app thread in a stub (checked by the stub filter).
inline constexpr uint64_t kThreadCloneFlags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
                                              CLONE_THREAD | CLONE_SYSVSEM | CLONE_CHILD_SETTID |
                                              CLONE_CHILD_CLEARTID;

// Host signals whose handler is the stub code, as a mask (bit sig-1).
inline constexpr uint64_t SigBit(int sig) { return uint64_t{1} << (sig - 1); }
inline constexpr int kInterruptSignal = SIGCHLD;
inline constexpr uint64_t kHandledSignals = SigBit(SIGSYS) | SigBit(SIGSEGV) | SigBit(SIGBUS) |
                                            SigBit(SIGFPE) | SigBit(SIGILL) | SigBit(SIGTRAP) |
                                            SigBit(kInterruptSignal);

struct StubCode {
  uint64_t code_page = 0;          // start of the code page; the region's top
  uint64_t ctx_base = 0;           // start of the context region; MaxUserAddress of a stub
  uint64_t zygote_entry = 0;       // StubChildArgs::entry of the zygote
  uint64_t handler = 0;            // sa_handler (SA_SIGINFO) of every handled signal
  uint64_t restorer = 0;           // sa_restorer (never used: the handler returns itself)
  uint64_t first_trap = 0;         // rip after the `int3` a new app thread traps on first
  uint64_t fast_entry = 0;         // where patched syscall sites arrive (table entry 0)
  uint64_t slow_trap = 0;          // rip after the `int3` of kOpSlow
  const HostVdso* vdso = nullptr;  // the host vDSO block every stub keeps, or null
};

// Maps the code page on first use (thread safe, once per process) and returns where
// everything is. The first free candidate address is used; all leave the context
// region above 0x7ff000000000 so the sentry's app layout fits below.
absl::StatusOr<StubCode> GetStubCode();

}  // namespace usentry::platform::systrap

#endif  // USENTRY_PLATFORM_SYSTRAP_STUB_CODE_UNSAFE_H_
