// The systrap platform: app code runs in stub threads under a seccomp filter whose
// default action is SECCOMP_RET_TRAP. The stub's SIGSYS (or fault) handler leaves the
// signal frame in memory shared with the sentry and hands off through a futex word in
// that memory, spinning briefly first, so a syscall costs one host signal and two
// shared-memory handoffs instead of four ptrace stops.
//
// Processes and threads:
//  * a zygote (one per platform) forked before the sentry confines itself, so stubs do
//    not inherit the sentry's seccomp filter (its KILL would win over our TRAP). It
//    only clones new stub processes, with CLONE_PARENT: they are the sentry's children.
//  * one stub process per AddressSpace: a control thread (host mmap/munmap/mprotect
//    on request, thread creation) and one app thread per Context switched into it.
//
// Switch semantics are those of the ptrace platform (ptrace_platform.h): kSyscall with
// gp.orig_rax = number, gp.rax = -ENOSYS and rip after the instruction; kFault with
// fault_addr and, from the page-fault error code, fault_write / fault_exec; kSignal for
// other synchronous signals (int 0x80 / x32 as SIGSYS with si_arch / si_syscall);
// kInterrupted for Interrupt() (or spuriously). Differences:
//  * fs_base is the sentry's: the stub applies gp.fs_base with arch_prctl when it
//    changed (the host has no FSGSBASE for the app to change it behind our back; on a
//    host with FSGSBASE enabled, a wrfsbase by the app is not seen by the sentry).
//    gs_base is not applied.
//  * No threading contract: any thread may create and switch (one at a time per
//    Context).
//  * App code that jumps into the stub page can make the few host syscalls the stub
//    filter allows there (see stub_filter.h).
#ifndef USENTRY_PLATFORM_SYSTRAP_SYSTRAP_PLATFORM_H_
#define USENTRY_PLATFORM_SYSTRAP_SYSTRAP_PLATFORM_H_

#include <sys/types.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "base/unique_fd.h"
#include "platform/platform.h"
#include "platform/stub_process.h"
#include "platform/systrap/layout.h"
#include "platform/systrap/stub_code_unsafe.h"

namespace usentry::platform::systrap {

class SystrapPlatform;

// Moves the calling thread to another CPU of its affinity mask, which it then has again
// (the mask without this CPU, then the mask). False if it did not: one CPU allowed, an
// error, or this thread moved less than 2 ms ago. For a sentry thread that finds itself
// handing off to its stub on one vCPU (SystrapContext::Run).
bool MoveOffThisCpu();

// One stub process. Shared by its AddressSpace and the Contexts bound to it.
class StubProcess {
 public:
  StubProcess(SystrapPlatform* platform, pid_t pid, int slice, uint8_t* local);
  ~StubProcess();  // SIGKILLs and reaps the process, frees its context slice
  StubProcess(const StubProcess&) = delete;
  StubProcess& operator=(const StubProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Slot `i` as the sentry sees it (its header first).
  SlotHeader* slot(int i) const { return reinterpret_cast<SlotHeader*>(local_ + i * kSlotSize); }
  // Sentry pointer for stub address [addr, addr+len) if it lies inside slot `i`'s
  // signal stack, else nullptr (the slot is app-writable: never trust its pointers).
  uint8_t* SignalStackPtr(int i, uint64_t addr, uint64_t len) const;
  uint64_t StubSlotAddress(int i) const;
  const StubCode& code() const;

  // Runs syscall `nr` in the stub and returns rax (negative errno): on a parked app
  // thread when there is one (it is likely still spinning, so this is a shared-memory
  // round trip), else on the control thread.
  absl::StatusOr<int64_t> ControlSyscall(int nr, std::array<uint64_t, 6> args);

  // Host files for MapHostFile travel to the stub as SCM_RIGHTS on a socketpair of its
  // own, whose other end the stub took at startup from the zygote socket (which it then
  // closed, before any app code runs in it: an app could otherwise receive what is meant
  // for another stub; layout.h, ZygotePage::sock_fd). Connected records the sentry's
  // end and the number the stub got.
  absl::Status Connected(UniqueFd sock);
  // The stub's descriptor for `file`, sent over first if it has none yet. The stub keeps
  // up to kMaxHostFds of them (the oldest is closed; its mappings stay).
  absl::StatusOr<int> HostFdInStub(const std::shared_ptr<const UniqueFd>& file);
  static constexpr size_t kMaxHostFds = 64;
  // Starts an app thread in a free slot and waits for its first trap. Returns the slot.
  absl::StatusOr<int> StartThread();
  // Tells the app thread in `slot` to exit and frees the slot (no wait).
  void ReleaseThread(int slot);
  // An app thread waiting for its Context's next Switch may run ControlSyscall ops.
  void Park(int slot);
  void Unpark(int slot);  // waits for an op running on it

  // The app mappings, as MapFile/Unmap/Protect made them: for reading and patching app
  // code through the memory file.
  void RecordMap(uint64_t addr, uint64_t len, uint64_t offset, int prot);
  void RecordHostFileMap(uint64_t addr, uint64_t len, int prot);  // no memory-file bytes
  void RecordUnmap(uint64_t addr, uint64_t len);
  void RecordProtect(uint64_t addr, uint64_t len, int prot);
  void RecordPagesShared(uint64_t addr, uint64_t len, bool shared);
  // Memory-file offset of [addr, addr+len) if one mapping with all of `prot` covers it.
  std::optional<uint64_t> Translate(uint64_t addr, uint64_t len, int prot);
  // After a trapped syscall `nr` whose instruction ended at `rip`: if the site is one
  // of the patchable forms (layout.h), rewrite it into a jump to its trampoline.
  // Returns where this call must return to (rip, or the cmp form's trampoline tail).
  // Code in pages this process may not rewrite (a host-file mapping, copy-on-write
  // pages shared with another process) cannot be patched: after enough traps there,
  // sets *unpatchable to rip instead (SwitchResult::unpatchable_site).
  // `self` is the calling thread's slot: the others must all be parked (see the body).
  uint64_t MaybePatch(int self, uint64_t rip, int nr, uint64_t* unpatchable);
  // If `rip` is where the `syscall` of a patched site used to be (a restart: rip was
  // stepped back by 2), the site's start, which does the same; else rip.
  uint64_t RestartTarget(uint64_t rip);
  // Whether `site` holds a patched jump in this address space (to slot `slot`'s
  // trampoline, unless 0).
  bool PatchedHere(uint64_t site, int slot);

  // What a wait for app code (SystrapContext::Run) takes and tells beyond a control op's.
  struct AppWait {
    // Runs every tick of a sleeping wait (~50 ms); true asks to SIGKILL the stub.
    bool (*on_tick)(void*) = nullptr;
    void* tick_arg = nullptr;
    // Gets steps of work while the wait spins (Context::SetIdleWork); may be null.
    IdleWork* idle = nullptr;
    // Set to TickNow() right after the hand-off (Context::running_since).
    std::atomic<int64_t>* running_since = nullptr;
    // Out: the report was first seen right after a sched_yield of the wait that gave the
    // CPU away, a sign that the stub thread ran on this thread's CPU meanwhile.
    bool after_yield = false;
    // Out: TickNow() at the wait's last look before the one that saw the report (each
    // spin reads the clock, so that no read sits between the report and the resume), or
    // at that look when a yield came between (the app may have run on this CPU meanwhile).
    int64_t trapped_at = 0;
  };
  // Posts `op` to slot `i` and waits until the stub reports back.
  absl::Status Call(int i, SlotOp op, const char* what, AppWait* app = nullptr);
  // Posts without waiting.
  void Post(int i, SlotOp op);
  // Waits for slot `i` to report (state trapped). Error if the stub died.
  absl::Status Wait(int i, const char* what, AppWait* app = nullptr);

 private:
  absl::Status DiedError(const char* what);
  // A slot's use by app code (parked_): running it, parked (its thread waits in the
  // sentry's hands), or lent to a control op while parked.
  enum SlotUse : uint8_t { kSlotRunning = 0, kSlotParked = 1, kSlotLent = 2 };
  // The slot a control op runs in, given back (parked again) when this goes.
  class SlotLoan {
   public:
    SlotLoan(StubProcess* stub, int i) : stub_(stub), i_(i) {}
    ~SlotLoan() {
      if (i_ > 0) stub_->parked_[i_].store(kSlotParked, std::memory_order_release);
    }
    SlotLoan(const SlotLoan&) = delete;
    SlotLoan& operator=(const SlotLoan&) = delete;
    int index() const { return i_; }

   private:
    StubProcess* stub_;
    int i_;
  };
  // Where ControlSyscall runs: a parked app thread's slot, else 0 (and then the control
  // thread counts as spinning until the next Unpark quiets it).
  SlotLoan ControlSlot() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // recvmsg of one SCM_RIGHTS descriptor on `sock` in the stub: its number there.
  absl::StatusOr<int> ReceiveFd(int sock);
  // The stub is gone (exited or killed): reaps it and remembers how it died.
  bool CheckDead();

  SystrapPlatform* const platform_;
  const pid_t pid_;
  const int slice_;
  uint8_t* const local_;
  // The control slot and slot allocation; held by a control op for its whole length.
  std::mutex mu_;
  bool used_[kMaxSlots] ABSL_GUARDED_BY(mu_) = {};
  // SlotUse of each slot. Park and Unpark, twice per switch, take no lock (two lock/unlock
  // pairs were ~15 ns of a patched syscall's ~430): a lender moves a slot from parked to
  // lent only under mu_, so an Unpark that finds it lent takes mu_ to wait for it back.
  std::atomic<uint8_t> parked_[kMaxSlots] = {};
  // The control thread ran an op since the last Unpark, so it may still be spinning.
  // Written under mu_; Unpark reads it first without.
  std::atomic<bool> control_spinning_{false};
  struct Mapping {
    uint64_t end;
    uint64_t offset;
    int prot;
    bool shared_pages = false;  // AddressSpace::SetPagesShared
    bool host_file = false;     // MapHostFile: `offset` means nothing
  };
  void EraseMappings(uint64_t lo, uint64_t hi) ABSL_EXCLUSIVE_LOCKS_REQUIRED(maps_mu_);
  // Whether any page of [addr, addr+len) is shared with another address space.
  bool PagesShared(uint64_t addr, uint64_t len) ABSL_EXCLUSIVE_LOCKS_REQUIRED(maps_mu_);
  std::optional<uint64_t> TranslateLocked(uint64_t addr, uint64_t len, int prot)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(maps_mu_);
  // MaybePatch's rewrite, with every other app thread parked and lent.
  uint64_t PatchLocked(uint64_t rip, int nr) ABSL_EXCLUSIVE_LOCKS_REQUIRED(maps_mu_);
  // Lends every other app slot in use (parked -> lent) into `lent`; false, with none
  // lent, if one of them runs app code. ReturnSlots parks them again.
  bool LendOtherSlots(int self, std::vector<int>& lent) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReturnSlots(std::vector<int>& lent);
  // Applies `change` to the mappings of [addr, addr+len), split at its ends.
  void UpdateMappings(uint64_t addr, uint64_t len, const std::function<void(Mapping&)>& change);
  std::mutex maps_mu_;
  std::map<uint64_t, Mapping> maps_ ABSL_GUARDED_BY(maps_mu_);  // by start address
  std::unordered_set<uint64_t> not_patchable_ ABSL_GUARDED_BY(maps_mu_);
  // Traps so far at each syscall site in pages this process may not rewrite
  // (MaybePatch).
  std::unordered_map<uint64_t, uint32_t> unpatchable_traps_ ABSL_GUARDED_BY(maps_mu_);
  bool dead_ = false;
  int wait_status_ = 0;
  UniqueFd sock_;  // the sentry's end of the stub's socketpair (Connected)
  int sock_in_stub_ = -1;
  std::mutex host_fds_mu_;
  struct HostFd {
    std::shared_ptr<const UniqueFd> file;  // held: its number cannot be reused meanwhile
    int in_stub;
  };
  std::deque<HostFd> host_fds_ ABSL_GUARDED_BY(host_fds_mu_);  // oldest first
};

class SystrapAddressSpace final : public AddressSpace {
 public:
  SystrapAddressSpace(std::shared_ptr<StubProcess> stub, uint64_t max_user, int memory_fd)
      : stub_(std::move(stub)), max_user_(max_user), memory_fd_(memory_fd) {}
  absl::Status MapFile(uint64_t addr, uint64_t len, uint64_t offset, Prot prot) override;
  absl::Status MapHostFile(uint64_t addr, uint64_t len, const std::shared_ptr<const UniqueFd>& file,
                           uint64_t offset, Prot prot) override;
  absl::Status Unmap(uint64_t addr, uint64_t len) override;
  absl::Status Protect(uint64_t addr, uint64_t len, Prot prot) override;
  void SetPagesShared(uint64_t addr, uint64_t len, bool shared) override {
    stub_->RecordPagesShared(addr, len, shared);
  }
  std::optional<absl::Duration> CpuTime() const override { return ProcessCpuTime(stub_->pid()); }
  uint64_t MaxUserAddress() const override { return max_user_; }

  const std::shared_ptr<StubProcess>& stub() const { return stub_; }
  pid_t stub_pid() const { return stub_->pid(); }

 private:
  absl::Status CheckRange(const char* call, uint64_t addr, uint64_t len) const;
  // Runs one host syscall in the stub. `what` describes it for an error message and is
  // only called on failure: mm ops are frequent, and formatting each cost more than the
  // rest of the sentry's share of the op.
  absl::Status Run(absl::FunctionRef<std::string()> what, int nr, std::array<uint64_t, 6> args);

  std::shared_ptr<StubProcess> stub_;
  const uint64_t max_user_;
  const int memory_fd_;
};

class SystrapContext final : public Context {
 public:
  // Binds to a stub thread of `stub` ahead of the first Switch (NewThreadContext).
  absl::Status BindTo(const std::shared_ptr<StubProcess>& stub) { return Bind(stub); }
  ~SystrapContext() override;
  absl::StatusOr<SwitchResult> Switch(AddressSpace& as, Registers& regs) override;
  absl::Status LoadFpState(AddressSpace& as, Registers& regs) override;
  void CompleteRegisters(Registers& regs) override;
  void Interrupt() override;
  void WillBlock() override;
  void SetIdleWork(IdleWork* work) override { idle_ = work; }

 private:
  absl::Status Bind(const std::shared_ptr<StubProcess>& stub);
  void Unbind();
  absl::Status WriteFrame(const Registers& regs);
  absl::StatusOr<SwitchResult> ReadFrame(Registers& regs);
  absl::StatusOr<SwitchResult> ReadFast(Registers& regs);
  // The thread reported from the fast entry: true if `regs` differ from what it
  // reported only in rax (a syscall result), so it can return without a frame. Registers
  // never loaded (gp_partial) are unchanged.
  bool CanResumeFast(const Registers& regs) const;
  // Turns a fast report into a signal frame (kOpSlow) for the general path.
  absl::Status ConvertToFrame();
  // Runs op on the bound thread with the interrupt bookkeeping around it. For
  // kOpFastResume, `fast_rax` is the result the thread returns to the app with: written
  // with the op, in the same cache line, right before it is posted. Sets *ran_ticks to
  // how long app code ran (SwitchResult::ran_ticks).
  absl::Status Run(SlotOp op, uint64_t fast_rax, int64_t* ran_ticks);
  // The frame's ucontext / fpstate in the sentry's view, validated.
  absl::StatusOr<uint8_t*> Ucontext();
  absl::StatusOr<std::pair<uint8_t*, size_t>> FpState(uint8_t* uc);
  static bool OnTick(void* self);
  // Whether the thread counts in AddActiveAppThreads (spin_budget.h): from Run until
  // WillBlock or Unbind.
  void SetActive(bool active);

  // Held by Interrupt while it signals the bound thread, and by Unbind while it lets go
  // of the stub: the stub's pid cannot be reaped and reused under a tgkill.
  std::mutex mu_;
  std::shared_ptr<StubProcess> stub_;  // bound stub (written only by the switching thread)
  int slot_ = -1;
  pid_t pid_ ABSL_GUARDED_BY(mu_) = 0;  // the bound stub's pid and thread, for tgkill
  pid_t tid_ ABSL_GUARDED_BY(mu_) = 0;
  // Run sets running_ and then reads interrupt_pending_; Interrupt sets interrupt_pending_
  // and then reads running_, both in one total order (seq_cst): at least one of them sees
  // the other, so an interrupt either cancels the run or signals it. Atomics rather than
  // mu_: two lock/unlock pairs per switch were ~20 ns of a patched syscall's ~450.
  std::atomic<bool> running_{false};
  std::atomic<bool> interrupt_pending_{false};
  int interrupt_ticks_ = 0;  // the switching thread's only (Run, OnTick)
  bool fs_known_ = false;
  uint64_t applied_fs_ = 0;
  int shared_cpu_signs_ = 0;    // app reports in a row first seen right after a yield
  bool fast_ = false;           // the last report came from the fast entry
  user_regs_struct fast_gp_{};  // what it reported (only the arguments while gp_partial)
  IdleWork* idle_ = nullptr;    // SetIdleWork
  bool active_ = false;         // SetActive
};

class SystrapPlatform final : public Platform {
 public:
  // Forks the zygote. Must run before the process installs a seccomp filter that the
  // stubs must not inherit (the sentry's).
  static absl::StatusOr<std::unique_ptr<SystrapPlatform>> Create(MemoryFileInfo memory_file,
                                                                 PlatformOptions options);
  ~SystrapPlatform() override;

  std::string Name() const override { return "systrap"; }
  // Every Context is its own stub thread; mm operations go through the stub.
  bool SharedAddressSpaces() const override { return true; }
  bool FaultsAreCheap() const override { return true; }
  const HostVdso* Vdso() const override { return code_.vdso; }
  absl::StatusOr<std::unique_ptr<AddressSpace>> NewAddressSpace() override;
  absl::StatusOr<std::unique_ptr<Context>> NewContext() override;
  // Starts the new thread's stub thread now, so that running out of thread slots
  // (kMaxSlots) fails the clone (ResourceExhausted) instead of the new task.
  absl::StatusOr<std::unique_ptr<Context>> NewThreadContext(AddressSpace& as,
                                                            Context& parent) override;

  pid_t zygote_pid() const { return zygote_pid_; }
  const StubCode& code() const { return code_; }
  // Returns a context slice to the pool after zeroing it (hole punch).
  void FreeSlice(int slice);
  // A stub process that was SIGKILLed: a thread of the platform reaps it and then frees
  // its slice.
  void Bury(pid_t pid, int slice);
  void EndRun() override;
  int memory_fd() const { return memory_file_.fd; }
  bool syscall_patching() const { return options_.syscall_patching; }
  // Table slot of the trampoline for the site at `site` with syscall `nr`, written on
  // first use; 0 when the table is full.
  int PatchSlot(uint64_t site, uint32_t nr);
  // Same for a `syscall; cmp $imm, %rax` site (cmp_imm is -4095 or -4096).
  int PatchSlotCmp(uint64_t site, int32_t cmp_imm);
  // If `rip` is 2 bytes before a cmp-form trampoline's tail (a restart of its syscall),
  // the trampoline's entry, which makes the same call again; else 0.
  uint64_t CmpRestartTarget(uint64_t rip);
  uint64_t CmpTail(int slot);  // where a cmp-form trampoline's syscall returns
  // Whether some address space has a patched site at `site`.
  bool HasPatchedSite(uint64_t site);
  // The trampoline slot of a cmp-form site patched in some address space, or 0.
  int CmpSiteSlot(uint64_t site);

 private:
  SystrapPlatform(MemoryFileInfo memory_file, PlatformOptions options, StubCode code)
      : memory_file_(memory_file), options_(options), code_(code) {}
  absl::Status Start();
  // A stub the zygote was asked to fork and that is not connected yet.
  struct PendingStub {
    int slice = -1;
    UniqueFd mine;          // the sentry's end of the stub's own socket
    uint32_t fork_seq = 0;  // the zygote request that forks it
  };
  // Queues a new stub's socket on the zygote socket and asks the zygote to fork the
  // stub, without waiting for either. Callers hold connect_mu_ (Start is alone) and
  // finish each pending stub before they begin the next: a stub takes the socket that
  // was queued first, and the zygote serves one request at a time.
  absl::StatusOr<PendingStub> BeginStub();
  // Waits for the fork and the stub's startup: the stub's address space.
  absl::StatusOr<std::unique_ptr<AddressSpace>> FinishStub(PendingStub p);
  absl::StatusOr<pid_t> AwaitFork(uint32_t seq);

  const MemoryFileInfo memory_file_;
  const PlatformOptions options_;
  const StubCode code_;
  UniqueFd ctx_fd_;
  uint8_t* ctx_map_ = nullptr;  // the whole context memfd, mapped in the sentry
  ZygotePage* zygote_ = nullptr;
  pid_t zygote_pid_ = 0;
  // The zygote socketpair: stubs inherit zygote_sock_stub_ (same number) and receive
  // their own socket on it (one at a time: connect_mu_); the sentry sends on
  // zygote_sock_.
  UniqueFd zygote_sock_, zygote_sock_stub_;
  std::mutex connect_mu_;
  // Begun by Start, so that the zygote forks init's stub while the sentry confines
  // itself and loads the program (~0.2 ms of every start); the first NewAddressSpace
  // finishes it instead of beginning one. Never begun again: a spare kept for later
  // address spaces would cost every run a stub it may not use.
  std::optional<PendingStub> first_ ABSL_GUARDED_BY(connect_mu_);
  void DrainZygoteSocket();
  void Reap();  // the reaper thread's body
  std::mutex reaper_mu_;
  std::condition_variable reaper_cv_;
  std::deque<std::pair<pid_t, int>> dead_ ABSL_GUARDED_BY(reaper_mu_);  // (pid, slice)
  bool stop_reaper_ ABSL_GUARDED_BY(reaper_mu_) = false;
  // EndRun in a PID namespace's init: the namespace's end reaps every stub (see EndRun).
  bool leave_to_namespace_ ABSL_GUARDED_BY(reaper_mu_) = false;
  std::thread reaper_;
  std::mutex mu_;
  std::vector<int> free_slices_ ABSL_GUARDED_BY(mu_);
  int next_slice_ ABSL_GUARDED_BY(mu_) = 0;
  std::mutex patch_mu_;
  // Key: (site, nr) for the mov form, (site, 1 << 40 | imm) for the cmp form.
  std::map<std::pair<uint64_t, uint64_t>, int> patch_slots_ ABSL_GUARDED_BY(patch_mu_);
  std::unordered_set<int> cmp_slots_ ABSL_GUARDED_BY(patch_mu_);
  int NewTrampoline(const uint8_t* code, size_t len) ABSL_EXCLUSIVE_LOCKS_REQUIRED(patch_mu_);
  std::unordered_set<uint64_t> patched_sites_ ABSL_GUARDED_BY(patch_mu_);
  std::unordered_map<uint64_t, int> cmp_sites_ ABSL_GUARDED_BY(patch_mu_);  // site -> slot
  int next_patch_slot_ ABSL_GUARDED_BY(patch_mu_) = 1;                      // 0 is the fast entry
};

}  // namespace usentry::platform::systrap

#endif  // USENTRY_PLATFORM_SYSTRAP_SYSTRAP_PLATFORM_H_
