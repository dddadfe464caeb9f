// Memory shared between the sentry and systrap stub processes, and where it lives.
//
// Every stub process has, at the same fixed addresses (above MaxUserAddress):
//
//   ctx_base ............ context region: kMaxSlots slots of kSlotSize, mapped
//                         MAP_SHARED from the platform's context memfd (one slice per
//                         stub process, also mapped in the sentry)
//   zygote_page ......... (only in the zygote) its request page, shared anonymous memory
//   code_page ........... the stub code (read-only, executable)
//
// Slot 0 belongs to the stub's control thread (host mmap/munmap/mprotect and thread
// creation on the sentry's request); slots 1.. to app threads, one per Context bound to
// this address space. Everything in a slot is writable by app code in that stub, so the
// sentry treats it as untrusted input: it validates every pointer it reads there.
#ifndef USENTRY_PLATFORM_SYSTRAP_LAYOUT_H_
#define USENTRY_PLATFORM_SYSTRAP_LAYOUT_H_

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace usentry::platform::systrap {

inline constexpr uint64_t kPageSize = 4096;
inline constexpr uint64_t kSlotSize = 64 * 1024;  // power of two: slot = rsp & ~(size-1)
inline constexpr int kMaxSlots = 64;              // control thread + 63 app threads
inline constexpr uint64_t kCtxRegionSize = kSlotSize * kMaxSlots;
// The context memfd: one region slice per live stub process, then the patch area.
inline constexpr int kMaxStubs = 4096;

// Inside a slot: the header page, the stack a new thread starts on (it only makes a
// few syscalls there), and the signal stack every trap's frame is written to.
inline constexpr uint64_t kThreadStackTop = 16 * 1024;
inline constexpr uint64_t kAltStackOffset = 16 * 1024;
inline constexpr uint64_t kAltStackSize = kSlotSize - kAltStackOffset;

// Syscall patching: two call-site forms in app code become `jmp *kPatchBase+8*k`
// (7 bytes): slot k of a table whose entry points at trampoline k, which jumps to the
// stub's fast entry (entry 0 of the table) with rcx = where to return.
//  * `mov $nr, %eax; syscall` (7 bytes): the trampoline sets eax = nr, returns to the
//    site's end.
//  * `syscall; cmp $-4095 (or -4096), %rax` (8 bytes; glibc's syscall() and wrappers
//    that load eax otherwise): patched as the jmp and a nop; eax already holds nr; the
//    return goes to the trampoline's tail, which does the cmp and jumps back. The area is shared by
//    every stub of a platform (a site patched
// before a fork stays valid in the child) and mapped read-only; only the sentry writes
// it. It sits below 2 GiB (absolute disp32 addressing) where apps do not map: the
// sentry's lowest app address (mm's kMinAddr) is above it.
inline constexpr uint64_t kPatchBase = 0x10000;
inline constexpr uint64_t kPatchSize = 64 * 1024;
inline constexpr int kPatchSlots = 1024;  // table entries; entry 0 is the fast entry
inline constexpr uint64_t kTrampolineOffset = 8 * kPatchSlots;
inline constexpr uint64_t kTrampolineSize = 48;
static_assert(kTrampolineOffset + kPatchSlots * kTrampolineSize <= kPatchSize);
inline constexpr uint64_t kPatchFileOffset = uint64_t{kMaxStubs} * kCtxRegionSize;
inline constexpr uint64_t kCtxFileSize = kPatchFileOffset + kPatchSize;

// Both sides spin before they sleep on SlotHeader::state, and every this many spins (a
// power of two) call sched_yield: when the sentry thread and the stub thread it waits
// for share one vCPU, each spinning while the other needs the CPU, a handoff otherwise
// lasts until a spin budget runs out or the tick preempts (the 9 host mmaps that map a
// fresh address space took 0.6-6 ms in one run of three, ~130 us each). Alone on its
// CPU the call returns at once. (The sentry's first yield comes later, after
// kSentryFirstYieldAfter: spin_budget.h.)
inline constexpr uint32_t kSpinsPerYield = 64;
static_assert((kSpinsPerYield & (kSpinsPerYield - 1)) == 0);

// SlotHeader::state, the futex word both sides wait on.
enum SlotState : uint32_t {
  kStateIdle = 0,     // fresh slot, no thread yet
  kStateTrapped = 1,  // the stub thread waits for the sentry (frame or op result valid)
  kStateGo = 2,       // the sentry posted `op`; the stub thread owns the slot
};

// SlotHeader::op.
enum SlotOp : uint32_t {
  kOpResume = 1,      // app thread: apply fs_base if set_fs, rt_sigreturn into the frame
  kOpSyscall = 2,     // run syscall `nr` with `args`, put rax in `result`, trap again
  kOpNewThread = 3,   // control thread: start an app thread in the slot at args[0]
  kOpExitThread = 4,  // app thread: exit(0) (the slot is being released)
  kOpFastResume = 5,  // fast entry: return to the app with rax = fast_args[kArgRax]
  kOpSlow = 6,        // fast entry: restore the app's registers and trap (int3) into the
                      // handler, so the sentry gets a full signal frame to work with
  // app thread: as kOpResume, but the stub loads the frame's registers and FPU state
  // itself and jumps, without rt_sigreturn (~0.4 us less per trap). Only for a frame
  // whose FPU state is the kernel's own save (the sentry wrote none: XRSTOR of it cannot
  // fault) and whose rflags has no TF; the handler runs with the app's signal mask
  // (stub_child_unsafe.h), so there is none to restore.
  kOpReturn = 7,
};

// SlotHeader::stop_spinning, a hint that changes only how the stub thread waits. Post
// resets it to kKeepSpinning.
enum StopSpinning : uint64_t {
  kKeepSpinning = 0,
  // The task is about to block (Context::WillBlock): sleep after a first short spin,
  // which still catches blocks that end at once (a wait for a child already gone...).
  kStopAfterShortSpin = 1,
  // App code resumed in this stub, so the control thread is not wanted soon (its next op
  // wakes it): sleep now rather than spin and yield on a vCPU the app may share.
  kStopNow = 2,
};

// SlotHeader::kind: how the thread reported.
enum TrapKind : uint64_t {
  kTrapFrame = 1,  // from the signal handler: a frame at `ucontext`
  kTrapFast = 2,   // from the fast entry (a patched site): registers in fast_args/fast_regs
};

// A patched call's registers. The ones a syscall reads and returns (FastArg) share the
// slot's line 0 with the state word; the rest (FastReg, and rsp and rflags) have lines of
// their own, which the sentry reads only when something needs the whole register set
// (Context::CompleteRegisters: a signal frame, clone, sigaltstack...).
enum FastArg : int {
  kArgRax,  // in: eax = the syscall number (the trampoline's mov); out: the result
  kArgRdi,
  kArgRsi,
  kArgRdx,
  kArgR10,
  kArgR8,
  kArgR9,
  kFastArgCount,
};
enum FastReg : int {
  kFastRbx,
  kFastRcx,  // the return address, as the syscall instruction leaves it
  kFastRbp,
  kFastR12,
  kFastR13,
  kFastR14,
  kFastR15,
  kFastRegCount,
};

// The first page of every slot. Offsets are used by the generated stub code.
//
// Laid out by cache line. Every line that one side writes and the other then reads
// moves between their cores, and on a patched call the moves are most of the cost: two
// processes handing a word back and forth take ~140 ns a round trip on the 2-vCPU VM of
// 2026-12-06, ~400-470 ns when the data travels in other lines than the word (the reader
// finds the word, then misses again on the data, and its write of a result into a data
// line costs another miss each way). So line 0 holds all a patched call hands over in the
// common case: the state word, the op, the syscall's number and arguments, its result.
// Line 1 holds what both sides read on every handoff but write rarely (each side writes
// there only when a value changes), so it stays in both caches. The rest of a patched
// call's registers follow in lines the sentry does not read unless asked.
struct SlotHeader {
  // --- line 0: a patched call's handoff ---
  alignas(64) uint32_t state;
  uint32_t op;
  uint64_t fast_args[kFastArgCount];  // FastArg
  // --- line 1: read on every handoff, written when they change ---
  alignas(64) uint32_t stub_sleeping;  // the stub thread sleeps in FUTEX_WAIT on state
  uint32_t sentry_sleeping;            // a sentry thread sleeps in FUTEX_WAIT on state
  uint64_t kind;                       // TrapKind of the last report
  uint64_t fs_base;  // kOpResume/kOpFastResume: arch_prctl(ARCH_SET_FS, fs_base) first if set_fs
  uint64_t set_fs;   // (the stub clears it once applied)
  uint64_t stop_spinning;  // StopSpinning: the sentry will be a while, the stub may sleep
  // --- lines 2-3: the rest of a patched call's registers ---
  alignas(64) uint64_t fast_regs[kFastRegCount];  // FastReg
  uint64_t fast_rsp;                              // the app's rsp at the fast entry
  uint64_t fast_rflags;                           // the app's rflags at the fast entry
  // --- slow paths: frames, stub syscalls, thread start ---
  alignas(64) uint64_t nr;
  uint64_t args[6];
  int64_t result;
  uint64_t signo;        // trap: signal number
  uint64_t siginfo;      // trap: stub address of the siginfo_t (on the signal stack)
  uint64_t ucontext;     // trap: stub address of the ucontext_t (on the signal stack)
  uint64_t tid;          // host tid, written by the thread when it starts
  uint64_t altstack[3];  // stack_t for sigaltstack, built by the thread itself
  // --- the stub thread's own: the sentry never reads them once the thread runs ---
  alignas(64) uint64_t self;  // this slot's stub address (the fast entry finds it via %gs)
  uint64_t fast_stack;        // top of the stack the fast entry switches to
  uint64_t return_rsp;        // kOpReturn: the app's rsp and rip, read through %gs once
  uint64_t return_rip;        // every register is the app's again
};
static_assert(sizeof(uint32_t) * 2 + sizeof(uint64_t) * kFastArgCount == 64);
static_assert(offsetof(SlotHeader, stub_sleeping) == 64 && offsetof(SlotHeader, fast_regs) == 128 &&
              offsetof(SlotHeader, nr) == 256);
static_assert(sizeof(SlotHeader) <= kPageSize);

// The zygote's request page (shared anonymous memory created by the sentry).
struct ZygotePage {
  uint32_t seq;           // incremented by the sentry to post a request (the zygote waits on it)
  uint32_t done;          // set to seq by the zygote when the request is done (the sentry waits)
  uint64_t slice_offset;  // request: context-memfd offset of the new stub's region
  int64_t result;         // the new stub's pid, or -errno
  uint64_t ctx_fd;        // the context memfd (the new stub maps its slice, then closes it)
  uint32_t ready;         // set to 1 by the zygote once it is filtered and unmapped
  // The zygote socket. Before each request the sentry queues the new stub's own socket
  // on it (SCM_RIGHTS) and builds a StubFdMessage in the new slice's slot 0; the new
  // stub receives it there and closes the zygote socket before its control thread first
  // reports, so no stub running app code holds it.
  uint64_t sock_fd;
};
static_assert(sizeof(ZygotePage) <= kPageSize);

// A recvmsg of one SCM_RIGHTS descriptor, built by the sentry at kFdMessageOffset in a
// slot's header page with stub addresses (host files for MapHostFile, and a new stub's
// own socket). The received number is in `control` after a cmsghdr.
struct StubFdMessage {
  msghdr msg;
  iovec iov;
  char byte;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
};
inline constexpr uint64_t kFdMessageOffset = 2048;
static_assert(sizeof(SlotHeader) <= kFdMessageOffset &&
              kFdMessageOffset + sizeof(StubFdMessage) <= kPageSize);

}  // namespace usentry::platform::systrap

#endif  // USENTRY_PLATFORM_SYSTRAP_LAYOUT_H_
