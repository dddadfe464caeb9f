// Platform: how application code runs and how its traps reach the sentry.
//
// Shape follows gVisor's pkg/sentry/platform: a Platform makes AddressSpaces (one host
// process image holding app memory) and Contexts (one app thread's execution). The
// sentry calls Context::Switch to run app code until it traps back.
//
// Threading contract (ptrace needs it; systrap tolerates it): an AddressSpace and the
// Contexts that run in it are created, switched and destroyed by one host thread, the
// task goroutine-equivalent that owns them. Only Context::Interrupt may be called from
// any thread. A platform whose SharedAddressSpaces() is true lifts that restriction:
// Contexts owned by other host threads may Switch into (and mm operations may be made
// on) an AddressSpace concurrently, provided each such Context was made with
// NewThreadContext (or is the AddressSpace creator's) and mm operations come from a
// host thread whose Context has switched into it (ptrace injects them into that
// thread's own stub thread). A Context is destroyed on the host thread that switches it.
#ifndef USENTRY_PLATFORM_PLATFORM_H_
#define USENTRY_PLATFORM_PLATFORM_H_

#include <signal.h>
#include <sys/user.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/unique_fd.h"
#include "platform/host_vdso.h"

namespace usentry::platform {

// Size of the buffer that holds one thread's extended FPU state (XSAVE layout, as
// PTRACE_GETREGSET NT_X86_XSTATE returns it). 4 KiB covers AVX-512 (2.7 KiB).
inline constexpr size_t kFpStateSize = 4096;

// App thread register state. General registers are always valid after Switch;
// FPU state is loaded only on demand (signal delivery, fork) because fetching it costs
// an extra host call per switch.
struct Registers {
  user_regs_struct gp{};
  alignas(64) uint8_t fp[kFpStateSize]{};
  bool fp_valid = false;  // fp holds this thread's state (loaded or set by the sentry)
  bool fp_dirty = false;  // fp was changed by the sentry and must be written back
  // ...to the initial state (ResetToInitialFpState: constants and the thread's own PKRU),
  // which XRSTOR takes without a check, unlike an image an app's signal frame supplied.
  bool fp_initial = false;
  size_t fp_size = 0;  // bytes of fp in use (the host signal frame's XSAVE size)
  // After a Switch that returned kSyscall: gp holds only what a syscall's dispatch reads
  // and writes (orig_rax, rax, the six argument registers, and fs_base/gs_base, which are
  // the sentry's); the platform loads the rest on Context::CompleteRegisters. The
  // systrap platform's patched calls report so: their other registers stay in lines of
  // the shared slot that would otherwise move between CPUs on every call.
  bool gp_partial = false;
};

enum class SwitchKind {
  kSyscall,      // app executed `syscall`; gp.orig_rax is the number, args in gp
  kFault,        // SIGSEGV/SIGBUS from an app memory access; fault_addr set
  kSignal,       // another synchronous host signal (SIGFPE, SIGILL, SIGTRAP...): info
  kInterrupted,  // Interrupt() was called (may also be spurious)
};

struct SwitchResult {
  SwitchKind kind = SwitchKind::kInterrupted;
  uint64_t fault_addr = 0;
  bool fault_write = false;
  bool fault_exec = false;
  siginfo_t info{};  // for kFault and kSignal: the host siginfo of the app's fault
  // systrap, kSyscall: the call came from code whose pages the platform may not rewrite
  // (a MapHostFile mapping, or memory-file pages shared with another address space
  // since a fork, SetPagesShared), often enough that patching it pays; once the sentry
  // gives this address memory-file pages of its own (FillForPatching), the site's next
  // call is patched. 0 if not.
  uint64_t unpatchable_site = 0;
  // How long app code ran in this Switch, in TickNow() ticks (base/tick_clock.h): the
  // app's CPU accounting. Timed where the platform waits anyway (systrap: right after its
  // hand-off, and while it spins for the trap), not on the path from a trap to the next
  // resume, where two clock reads cost a patched syscall ~8% more. 0 if none ran.
  int64_t ran_ticks = 0;
};

// Memory protections, same bits as PROT_READ/WRITE/EXEC.
using Prot = int;

// AddressSpace is one app address space, populated with ranges of the sentry's
// memory file. Destroying it destroys the host process image.
class AddressSpace {
 public:
  virtual ~AddressSpace() = default;
  // Maps [addr, addr+len) to memory-file bytes [offset, offset+len) MAP_SHARED|MAP_FIXED.
  // addr, len and offset are page aligned. Replaces whatever was mapped there.
  virtual absl::Status MapFile(uint64_t addr, uint64_t len, uint64_t offset, Prot prot) = 0;
  // Maps [addr, addr+len) to bytes [offset, offset+len) of the host file `file` (opened
  // read-only) MAP_PRIVATE|MAP_FIXED with `prot`, which has no PROT_WRITE: the app reads
  // the host's page cache and nothing is copied. The sentry does not see these pages
  // (they are not in the memory file), so it maps this way only file bytes it need not
  // read itself (unfilled read-only mappings, sentry/mm/fill.cc) and maps memory-file
  // pages over them before it reads or writes there. The platform keeps `file` open as
  // long as it needs. Unimplemented where the platform cannot (ptrace).
  virtual absl::Status MapHostFile(uint64_t addr, uint64_t len,
                                   const std::shared_ptr<const UniqueFd>& file, uint64_t offset,
                                   Prot prot) {
    (void)addr, (void)len, (void)file, (void)offset, (void)prot;
    return absl::UnimplementedError("MapHostFile: not on this platform");
  }
  virtual absl::Status Unmap(uint64_t addr, uint64_t len) = 0;
  virtual absl::Status Protect(uint64_t addr, uint64_t len, Prot prot) = 0;
  // Whether [addr, addr+len) maps pages that another address space may map too
  // (copy-on-write after fork; MapFile starts every range unshared). The platform must
  // not write such pages itself: systrap's syscall patching rewrites app code in place,
  // and another process could be running those very bytes.
  virtual void SetPagesShared(uint64_t addr, uint64_t len, bool shared) = 0;
  // CPU time the host has charged so far to the stub process behind this address space:
  // the app's code, and the stub's own brief waiting for the sentry (which stands where
  // Linux would count system time). nullopt where the platform cannot tell.
  virtual std::optional<absl::Duration> CpuTime() const { return std::nullopt; }
  // Highest address (exclusive) the app may use; the platform's own stub code lives
  // above it and the sentry must refuse mappings that overlap it.
  virtual uint64_t MaxUserAddress() const = 0;
};

// Work the sentry can do on the thread that waits for app code to trap, in time it
// would otherwise spend spinning (Context::SetIdleWork).
class IdleWork {
 public:
  virtual ~IdleWork() = default;
  // Whether Step may find work; cheap, and called without any lock.
  virtual bool Pending() const = 0;
  // One step of it, at most a few tens of microseconds (the app's next trap waits for
  // it to end); false when there was nothing to do.
  virtual bool Step() = 0;
};

// Context is one app thread's execution vehicle.
class Context {
 public:
  virtual ~Context() = default;
  // Runs app code in `as` with `regs` until the app traps. On return regs.gp holds the
  // app's registers at the trap; regs.fp is written back first if regs.fp_dirty.
  // A non-OK status means the platform itself failed (e.g. the stub died); the task
  // cannot continue.
  virtual absl::StatusOr<SwitchResult> Switch(AddressSpace& as, Registers& regs) = 0;
  // Loads the FPU state of the thread last switched into regs.fp (sets fp_valid).
  virtual absl::Status LoadFpState(AddressSpace& as, Registers& regs) = 0;
  // Fills the rest of regs.gp after a Switch that left it partial (Registers::gp_partial)
  // and clears the flag. Only between that Switch and the next.
  virtual void CompleteRegisters(Registers& regs) { regs.gp_partial = false; }
  // Makes a concurrent or future Switch return kInterrupted soon. Thread safe.
  virtual void Interrupt() = 0;
  // A hint between Switches: the sentry is about to sleep for this task (a blocking
  // syscall), so the app thread need not wait busily for its result.
  virtual void WillBlock() {}
  // From now on, Switch may call `work` while app code runs and the platform would
  // only be spinning for the next trap (systrap; ptrace waits in the kernel and never
  // calls it). `work` must outlive the context, or be replaced first; nullptr: none.
  virtual void SetIdleWork(IdleWork* work) { (void)work; }
  // While a Switch runs app code: when that began, on TickNow()'s clock; else 0. Any
  // thread may read it (the watchdog's reading of a stretch of app code in progress).
  int64_t running_since() const { return running_since_.load(std::memory_order_relaxed); }

 protected:
  std::atomic<int64_t> running_since_{0};
};

class Platform {
 public:
  virtual ~Platform() = default;
  virtual std::string Name() const = 0;
  virtual absl::StatusOr<std::unique_ptr<AddressSpace>> NewAddressSpace() = 0;
  virtual absl::StatusOr<std::unique_ptr<Context>> NewContext() = 0;
  // Whether tasks on different host threads may run in one AddressSpace (see the
  // threading contract above). vfork children share their parent's only where true.
  virtual bool SharedAddressSpaces() const { return false; }
  // Whether an app page fault reaching the sentry costs about a trapped syscall (systrap:
  // a signal handled in the stub) rather than a ptrace stop: the sentry fills file
  // mappings on demand only where faults are cheap.
  virtual bool FaultsAreCheap() const { return false; }
  // The Context of a new app thread (clone with CLONE_VM) that will run in `as`, where
  // `parent` (the caller's Context) last switched and is stopped now. Called on the
  // parent's host thread; the result is then switched by the new task's own host
  // thread. Only where SharedAddressSpaces(). ptrace creates the stub thread here.
  virtual absl::StatusOr<std::unique_ptr<Context>> NewThreadContext(AddressSpace& as,
                                                                    Context& parent) {
    (void)as;
    (void)parent;
    return NewContext();
  }
  // The host vDSO block (host_vdso.h) if every AddressSpace of this platform has it
  // mapped at its host address, below MaxUserAddress(); else null.
  virtual const HostVdso* Vdso() const { return nullptr; }
  // The run is over: init's last thread is leaving and every other app process was
  // killed. A platform may stop waiting for its host processes to die from here on.
  virtual void EndRun() {}
};

// Memory file handed to the platform: every page of app memory lives in this memfd.
struct MemoryFileInfo {
  int fd = -1;
};

struct PlatformOptions {
  // systrap: rewrite `mov $nr, %eax; syscall` call sites into jumps to a trampoline that
  // enters the sentry without a host signal (see platform/systrap/layout.h).
  bool syscall_patching = true;
};

// Explicit factory (no static registrars). `name` is "ptrace" or "systrap".
absl::StatusOr<std::unique_ptr<Platform>> NewPlatform(const std::string& name,
                                                      MemoryFileInfo memory_file,
                                                      PlatformOptions options = {});

// Does the part of NewPlatform(name) that is the same for every sandbox (systrap:
// generating and mapping its stub code, ~1 ms), so that a caller can run it early on
// another thread; NewPlatform does it itself otherwise. "auto" means systrap.
void PrewarmPlatform(const std::string& name);

}  // namespace usentry::platform

#endif  // USENTRY_PLATFORM_PLATFORM_H_
