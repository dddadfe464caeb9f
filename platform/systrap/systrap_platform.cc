// systrap AddressSpace, Context and Platform (semantics in systrap_platform.h).
#include "platform/systrap/systrap_platform.h"

#include <fcntl.h>
#include <immintrin.h>
#include <linux/audit.h>
#include <linux/falloc.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "abi/signal.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/cpu_pin.h"
#include "base/mono_clock.h"
#include "base/seqpacket.h"
#include "base/status_macros.h"
#include "base/tick_clock.h"
#include "platform/stub_child_unsafe.h"
#include "platform/stub_process.h"
#include "platform/systrap/spin_budget.h"
#include "platform/systrap/stub_filter.h"
#include "platform/xsave_layout.h"

namespace usentry::platform::systrap {
namespace {

// A sentry thread and the stub thread it waits for can end up on one vCPU (a wake-up
// placed one beside the other while the other vCPU was briefly busy); then every
// handoff is a context switch through sched_yield (~6-10 us here instead of ~0.2), and
// the scheduler may leave the pair so for the rest of a run (one python3 run of ten:
// 355 such switches over 6 ms) while the other vCPU idles. The sign: the app's report
// is first seen right after one of the sentry's yields that gave the CPU away (one that
// returned at once is no sign), this many times in a row; then
// the sentry thread moves (MoveOffThisCpu). Only app resumes count (SystrapContext::Run):
// counted over control calls too, with 4 or 8 signs, the sh fork loop got 2-6% slower.
constexpr int kSharedCpuSigns = 8;
// A sched_yield that lasted this long ran another thread meanwhile (alone on its CPU
// it returns in ~0.5 us on the AMD guest; a switch to the stub and back is 3-10 us).
constexpr absl::Duration kYieldGaveTheCpu = absl::Microseconds(2);
// At most one move per thread in this long (each costs ~2 syscalls and a migration).
constexpr absl::Duration kMinTimeBetweenMoves = absl::Milliseconds(2);
// How long one FUTEX_WAIT lasts before the sentry checks that the stub is alive.
constexpr long kTickNanos = 50 * 1000 * 1000;
// An app that ignores Interrupt() this many ticks (its stub thread blocked the host
// interrupt signal, which only hostile code does) gets its stub SIGKILLed.
constexpr int kInterruptTicksBeforeKill = 40;
// Page-fault error code bits (the frame's REG_ERR when REG_TRAPNO is 14).
constexpr uint64_t kPfWrite = 1 << 1;
constexpr uint64_t kPfInstr = 1 << 4;
constexpr uint64_t kTrapPageFault = 14;
constexpr uint64_t kEflagsTf = 0x100;
constexpr uint64_t kCanonicalTop = uint64_t{1} << 47;  // lowest non-canonical user address
// XSAVE frame layout: software bytes in the legacy area, magic values.
constexpr size_t kFxswOffset = 464;
constexpr size_t kXsaveHeaderOffset = 512;
constexpr uint32_t kFpXstateMagic1 = 0x46505853;
constexpr size_t kLegacyFpSize = 512;

std::atomic_ref<uint32_t> Word(uint32_t& w) { return std::atomic_ref<uint32_t>(w); }

long Futex(uint32_t* word, int op, uint32_t val, const timespec* timeout = nullptr) {
  return syscall(SYS_futex, word, op, val, timeout, nullptr, 0);
}

bool IsLinuxErrno(int64_t rax) { return rax < 0 && rax >= -4095; }

// The stub process `pid` (our child) has exited; fills `status` (wait status form).
bool ChildDead(pid_t pid, int* status) {
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT | __WALL) != 0) {
    return errno == ECHILD;  // already reaped: certainly gone
  }
  if (info.si_pid != pid) return false;
  *status = info.si_code == CLD_EXITED ? W_EXITCODE(info.si_status, 0) : info.si_status & 0x7f;
  return true;
}

// ucontext_t field offsets (the kernel's struct ucontext and glibc's agree up to
// uc_sigmask, which is all we touch).
constexpr size_t kGregsOffset = offsetof(ucontext_t, uc_mcontext.gregs);
constexpr size_t kFpregsOffset = offsetof(ucontext_t, uc_mcontext.fpregs);
constexpr size_t kUcontextSize = offsetof(ucontext_t, uc_sigmask) + 8;

}  // namespace

void SystrapContext::SetActive(bool active) {
  if (active == active_) return;
  active_ = active;
  AddActiveAppThreads(active ? 1 : -1);
}

bool MoveOffThisCpu() {
  thread_local absl::Duration last_move = absl::ZeroDuration();
  const absl::Duration now = MonotonicNow();
  if (last_move != absl::ZeroDuration() && now - last_move < kMinTimeBetweenMoves) return false;
  // A thread held on this CPU for its gofer calls (base/cpu_pin.h) lets go first: the
  // mask read next is then the one to move within and to restore.
  ReleaseThreadCpu();
  cpu_set_t all;
  if (sched_getaffinity(0, sizeof(all), &all) != 0) return false;
  const int cpu = sched_getcpu();
  if (cpu < 0 || !CPU_ISSET(cpu, &all) || CPU_COUNT(&all) < 2) return false;
  cpu_set_t others = all;
  CPU_CLR(cpu, &others);
  // The kernel migrates the caller before the call returns; restoring the mask leaves
  // it where it is.
  if (sched_setaffinity(0, sizeof(others), &others) != 0) return false;
  last_move = now;
  return sched_setaffinity(0, sizeof(all), &all) == 0;
}

// ---------------------------------------------------------------------------
// StubProcess

StubProcess::StubProcess(SystrapPlatform* platform, pid_t pid, int slice, uint8_t* local)
    : platform_(platform), pid_(pid), slice_(slice), local_(local) {}

StubProcess::~StubProcess() {
  // Dead from here on (SIGKILL cannot be caught); the kernel's teardown of the process
  // (~0.4 ms) is not waited for here, where an exiting task would wait for it.
  ::kill(pid_, SIGKILL);
  platform_->Bury(pid_, slice_);
}

uint64_t StubProcess::StubSlotAddress(int i) const {
  return platform_->code().ctx_base + static_cast<uint64_t>(i) * kSlotSize;
}

const StubCode& StubProcess::code() const { return platform_->code(); }

uint8_t* StubProcess::SignalStackPtr(int i, uint64_t addr, uint64_t len) const {
  const uint64_t lo = StubSlotAddress(i) + kAltStackOffset;
  const uint64_t hi = StubSlotAddress(i) + kSlotSize;
  if (addr < lo || len > hi - lo || addr > hi - len) return nullptr;
  return local_ + static_cast<uint64_t>(i) * kSlotSize + (addr - StubSlotAddress(i));
}

void StubProcess::Post(int i, SlotOp op) {
  SlotHeader* h = slot(i);
  h->op = op;
  if (h->stop_spinning != kKeepSpinning) h->stop_spinning = kKeepSpinning;  // layout.h: line 1
  Word(h->state).store(kStateGo);  // seq_cst: ordered before the load below
  if (Word(h->stub_sleeping).load() != 0) Futex(&h->state, FUTEX_WAKE, 1);
}

bool StubProcess::CheckDead() {
  if (!dead_ && ChildDead(pid_, &wait_status_)) dead_ = true;
  return dead_;
}

absl::Status StubProcess::DiedError(const char* what) {
  return absl::UnavailableError(
      absl::StrFormat("systrap stub pid=%d %s %s", pid_, DescribeWaitStatus(wait_status_), what));
}

namespace {
// Whether this sentry thread's last sched_yield in Wait gave its CPU away (another thread
// ran meanwhile, as when the stub it waits for shares the CPU): then its next wait yields
// after kSpinsPerYield pauses, otherwise only after kSentryFirstYieldAfter. Alone on its
// CPU a yield is ~0.55 us of nothing, which a report then waits for; sharing it, an early
// yield is what lets the stub run (in a run pinned to one CPU, the late first yield made
// python3 8% slower and patched getpid 6 -> 9.4 us).
thread_local bool last_yield_gave_the_cpu = false;
}  // namespace

absl::Status StubProcess::Wait(int i, const char* what, AppWait* app) {
  IdleWork* idle = app != nullptr ? app->idle : nullptr;
  SlotHeader* h = slot(i);
  auto state = Word(h->state);
  // kSentrySpinBudget from the first yield point on: a quick handoff reads no clock.
  absl::Duration deadline = absl::ZeroDuration();
  absl::Duration idle_from = absl::ZeroDuration();
  bool yielded = false;
  int64_t last_look = 0;
  static const uint32_t late_first_yield =
      std::max(PausesFor(kSentryFirstYieldAfter), kSpinsPerYield);
  uint32_t next_yield = (last_yield_gave_the_cpu ? kSpinsPerYield : late_first_yield) - 1;
  for (uint32_t n = 0;; ++n) {
    if (state.load(std::memory_order_acquire) == kStateTrapped) {
      // The stub thread spins while this one handles its report, unless the CPUs are
      // oversubscribed (spin_budget.h): then it sleeps, and Post wakes it.
      if (app != nullptr && CpusOversubscribed()) h->stop_spinning = kStopNow;
      if (app != nullptr) {
        app->after_yield = yielded;  // seen on the first look after a yield
        // After a yield, the stub may have run app code on this CPU for all of it.
        app->trapped_at = last_look != 0 && !yielded ? last_look : TickNow();
      }
      return absl::OkStatus();
    }
    yielded = false;
    if (app != nullptr) last_look = TickNow();
    _mm_pause();
    if (n == next_yield) {
      next_yield += kSpinsPerYield;
      const absl::Duration now = MonotonicNow();
      if (deadline == absl::ZeroDuration()) {
        deadline = now + kSentrySpinBudget;
        idle_from = now + kIdleWorkAfter;
      }
      if (app != nullptr && CpusOversubscribed()) break;  // sleep: spin_budget.h
      // A step of idle work instead of a yield (it holds this CPU a while either way),
      // budget or not: the budget bounds spinning, and the work is bounded by itself.
      // (On a busy host a yield can take milliseconds: the first look past idle_from
      // may already be past the budget.)
      if (idle != nullptr && now >= idle_from && idle->Pending() && idle->Step()) continue;
      if (now >= deadline) break;
      const int64_t before_yield = TickNow();
      sched_yield();  // layout.h
      // Only a yield that gave the CPU away says the stub may share it: alone on its CPU
      // the call returns at once, and a trap that takes longer than the spins before the
      // first yield (a SIGSYS on this AMD guest: ~2.3 us) is no sign.
      const absl::Duration took = TicksToDuration(TickNow() - before_yield);
      yielded = took >= kYieldGaveTheCpu;
      last_yield_gave_the_cpu = yielded;
      if (took >= kYieldLostASlice) break;  // more threads than CPUs: sleep (spin_budget.h)
    }
  }
  // Its wake-up may then go to whichever CPU is idle (a gofer call held it: cpu_pin.h).
  ReleaseThreadCpu();
  Word(h->sentry_sleeping).store(1);  // seq_cst: ordered before the state load
  absl::Status result = absl::OkStatus();
  for (;;) {
    const uint32_t v = state.load();
    if (v == kStateTrapped) break;
    const timespec tick{.tv_sec = 0, .tv_nsec = kTickNanos};
    if (Futex(&h->state, FUTEX_WAIT, v, &tick) != 0 && errno == ETIMEDOUT) {
      if (CheckDead()) {
        result = DiedError(what);
        break;
      }
      if (app != nullptr && app->on_tick != nullptr && app->on_tick(app->tick_arg)) {
        ::kill(pid_, SIGKILL);
      }
    }
  }
  Word(h->sentry_sleeping).store(0);
  if (app != nullptr) {
    app->after_yield = false;
    app->trapped_at = TickNow();
  }
  return result;
}

absl::Status StubProcess::Call(int i, SlotOp op, const char* what, AppWait* app) {
  if (dead_) return DiedError(what);
  Post(i, op);
  if (app != nullptr && app->running_since != nullptr) {
    app->running_since->store(TickNow(), std::memory_order_relaxed);
  }
  return Wait(i, what, app);
}

StubProcess::SlotLoan StubProcess::ControlSlot() {
  for (int k = 1; k < kMaxSlots; ++k) {
    uint8_t parked = kSlotParked;
    // Acquire: the thread's last switch is done with the slot (Park releases it).
    if (parked_[k].compare_exchange_strong(parked, kSlotLent, std::memory_order_acquire)) {
      return SlotLoan(this, k);
    }
  }
  control_spinning_.store(true, std::memory_order_relaxed);
  return SlotLoan(this, 0);
}

absl::StatusOr<int64_t> StubProcess::ControlSyscall(int nr, std::array<uint64_t, 6> args) {
  std::lock_guard<std::mutex> lock(mu_);
  const SlotLoan loan = ControlSlot();
  const int i = loan.index();
  SlotHeader* h = slot(i);
  h->nr = static_cast<uint64_t>(nr);
  for (int k = 0; k < 6; ++k) h->args[k] = args[k];
  RETURN_IF_ERROR(Call(i, kOpSyscall, "during a host syscall for the sentry"));
  return h->result;
}

namespace {
// Builds a StubFdMessage at `local` (slot `slot_addr`'s header page as the sentry sees
// it) pointing at itself in the stub's addresses.
StubFdMessage* BuildFdMessage(uint8_t* local_slot, uint64_t slot_addr) {
  auto* m = reinterpret_cast<StubFdMessage*>(local_slot + kFdMessageOffset);
  const uint64_t at = slot_addr + kFdMessageOffset;
  std::memset(m, 0, sizeof(*m));
  m->iov.iov_base = reinterpret_cast<void*>(at + offsetof(StubFdMessage, byte));
  m->iov.iov_len = 1;
  m->msg.msg_iov = reinterpret_cast<iovec*>(at + offsetof(StubFdMessage, iov));
  m->msg.msg_iovlen = 1;
  m->msg.msg_control = reinterpret_cast<void*>(at + offsetof(StubFdMessage, control));
  m->msg.msg_controllen = sizeof(m->control);
  return m;
}

// The descriptor number a recvmsg left in `m`, or -1. The slot is app-writable, like all
// of it: the number is only trusted to be some number, which only ever names a
// descriptor of that stub.
int ReceivedFd(const StubFdMessage* m) {
  cmsghdr c;
  std::memcpy(&c, m->control, sizeof(c));
  if (c.cmsg_level != SOL_SOCKET || c.cmsg_type != SCM_RIGHTS ||
      c.cmsg_len != CMSG_LEN(sizeof(int))) {
    return -1;
  }
  int fd = -1;
  std::memcpy(&fd, m->control + (CMSG_DATA(&c) - reinterpret_cast<unsigned char*>(&c)),
              sizeof(int));
  return fd;
}

// Sends `fd` as SCM_RIGHTS (with one byte) on `sock`.
absl::Status SendFd(int sock, int fd) {
  if (SysStatus s = SendPacket(sock, std::string_view("", 1), fd); !s.ok()) {
    return ErrnoStatus("sendmsg(SCM_RIGHTS) to a systrap stub", s.error());
  }
  return absl::OkStatus();
}
}  // namespace

absl::StatusOr<int> StubProcess::ReceiveFd(int sock) {
  std::lock_guard<std::mutex> lock(mu_);
  const SlotLoan loan = ControlSlot();
  const int i = loan.index();
  StubFdMessage* m = BuildFdMessage(reinterpret_cast<uint8_t*>(slot(i)), StubSlotAddress(i));
  SlotHeader* h = slot(i);
  h->nr = SYS_recvmsg;
  h->args[0] = static_cast<uint64_t>(sock);
  h->args[1] = StubSlotAddress(i) + kFdMessageOffset + offsetof(StubFdMessage, msg);
  h->args[2] = MSG_DONTWAIT;  // the message is queued already; never block the stub
  for (int k = 3; k < 6; ++k) h->args[k] = 0;
  RETURN_IF_ERROR(Call(i, kOpSyscall, "while receiving a host file"));
  if (h->result != 1) {
    return ErrnoStatus(absl::StrFormat("recvmsg in systrap stub pid=%d", pid_),
                       IsLinuxErrno(h->result) ? static_cast<int>(-h->result) : EPROTO);
  }
  const int fd = ReceivedFd(m);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrFormat("systrap stub pid=%d: recvmsg brought no descriptor", pid_));
  }
  return fd;
}

absl::Status StubProcess::Connected(UniqueFd sock) {
  const int fd = ReceivedFd(reinterpret_cast<const StubFdMessage*>(
      reinterpret_cast<uint8_t*>(slot(0)) + kFdMessageOffset));
  if (fd < 0) {
    return absl::InternalError(
        absl::StrFormat("systrap stub pid=%d started without its socket", pid_));
  }
  sock_ = std::move(sock);
  sock_in_stub_ = fd;
  return absl::OkStatus();
}

absl::StatusOr<int> StubProcess::HostFdInStub(const std::shared_ptr<const UniqueFd>& file) {
  std::lock_guard<std::mutex> lock(host_fds_mu_);
  for (const HostFd& h : host_fds_) {
    if (h.file == file) return h.in_stub;
  }
  if (!sock_.valid()) return absl::FailedPreconditionError("systrap stub has no socket");
  if (host_fds_.size() >= kMaxHostFds) {
    (void)ControlSyscall(SYS_close, {static_cast<uint64_t>(host_fds_.front().in_stub)});
    host_fds_.pop_front();
  }
  RETURN_IF_ERROR(SendFd(sock_.get(), file->get()));
  absl::StatusOr<int> fd = ReceiveFd(sock_in_stub_);
  if (!fd.ok()) {
    // What stays queued would answer the next request with this file: no more host
    // files for this stub (its mappings fall back to memory-file copies).
    sock_.reset();
    return fd.status();
  }
  host_fds_.push_back({file, *fd});
  return *fd;
}

void StubProcess::Park(int i) {
  // Release: this thread is done with the slot before a lender uses it.
  parked_[i].store(kSlotParked, std::memory_order_release);
}

void StubProcess::Unpark(int i) {
  uint8_t use = kSlotParked;
  if (!parked_[i].compare_exchange_strong(use, kSlotRunning, std::memory_order_acquire) &&
      use == kSlotLent) {
    // A control op runs in the slot and holds mu_ until it has given the slot back.
    std::lock_guard<std::mutex> lock(mu_);
    parked_[i].store(kSlotRunning, std::memory_order_relaxed);
  }
  // App code is about to run here. A control thread still spinning after the last
  // control op (4000 spins, a yield every 64) would share a vCPU with it for nothing:
  // in python3's run the two switched 62 times each, the control thread's whole budget.
  if (control_spinning_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (control_spinning_.load(std::memory_order_relaxed)) {
      slot(0)->stop_spinning = kStopNow;  // the next Post(0) clears it and wakes the thread
      control_spinning_.store(false, std::memory_order_relaxed);
    }
  }
}

absl::StatusOr<int> StubProcess::StartThread() {
  std::lock_guard<std::mutex> lock(mu_);
  int i = 1;
  // A released slot is reusable once its thread is gone: the kernel clears `tid`
  // (CLONE_CHILD_CLEARTID) when the thread exits.
  while (i < kMaxSlots && (used_[i] || std::atomic_ref<uint64_t>(slot(i)->tid).load() != 0)) ++i;
  if (i == kMaxSlots) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("systrap stub pid=%d: all %d thread slots in use", pid_, kMaxSlots - 1));
  }
  std::memset(slot(i), 0, sizeof(SlotHeader));
  SlotHeader* control = slot(0);
  control->args[0] = StubSlotAddress(i);
  control_spinning_.store(true, std::memory_order_relaxed);
  RETURN_IF_ERROR(Call(0, kOpNewThread, "starting an app thread"));
  if (IsLinuxErrno(control->result)) {
    return ErrnoStatus(absl::StrFormat("clone(app thread) in systrap stub pid=%d", pid_),
                       static_cast<int>(-control->result));
  }
  RETURN_IF_ERROR(Wait(i, "while an app thread started"));
  const uint64_t first = platform_->code().first_trap;
  uint8_t* uc = SignalStackPtr(i, slot(i)->ucontext, kUcontextSize);
  uint64_t rip = 0;
  if (uc != nullptr) std::memcpy(&rip, uc + kGregsOffset + REG_RIP * 8, 8);
  if (slot(i)->signo != SIGTRAP || rip != first) {
    return absl::InternalError(
        absl::StrFormat("systrap stub pid=%d: new thread trapped with signal %d at 0x%x, not its "
                        "first trap at 0x%x",
                        pid_, slot(i)->signo, rip, first));
  }
  used_[i] = true;
  return i;
}

void StubProcess::EraseMappings(uint64_t lo, uint64_t hi) {
  auto it = maps_.upper_bound(lo);
  if (it != maps_.begin()) --it;
  while (it != maps_.end() && it->first < hi) {
    const uint64_t start = it->first;
    const Mapping m = it->second;
    if (m.end <= lo) {
      ++it;
      continue;
    }
    it = maps_.erase(it);
    if (start < lo) {
      Mapping head = m;
      head.end = lo;
      maps_[start] = head;
    }
    if (m.end > hi) {
      Mapping tail = m;
      tail.offset = m.offset + (hi - start);
      maps_[hi] = tail;
    }
  }
}

void StubProcess::RecordMap(uint64_t addr, uint64_t len, uint64_t offset, int prot) {
  std::lock_guard<std::mutex> lock(maps_mu_);
  EraseMappings(addr, addr + len);
  maps_[addr] = Mapping{addr + len, offset, prot};
}

void StubProcess::RecordHostFileMap(uint64_t addr, uint64_t len, int prot) {
  std::lock_guard<std::mutex> lock(maps_mu_);
  EraseMappings(addr, addr + len);
  maps_[addr] = Mapping{.end = addr + len, .offset = 0, .prot = prot, .host_file = true};
}

void StubProcess::RecordUnmap(uint64_t addr, uint64_t len) {
  std::lock_guard<std::mutex> lock(maps_mu_);
  EraseMappings(addr, addr + len);
}

void StubProcess::UpdateMappings(uint64_t addr, uint64_t len,
                                 const std::function<void(Mapping&)>& change) {
  std::lock_guard<std::mutex> lock(maps_mu_);
  std::vector<std::pair<uint64_t, Mapping>> covered;
  for (auto it = maps_.lower_bound(addr); it != maps_.end() && it->first < addr + len; ++it) {
    covered.push_back(*it);
  }
  auto before = maps_.lower_bound(addr);
  if (before != maps_.begin() && std::prev(before)->second.end > addr) {
    covered.insert(covered.begin(), *std::prev(before));
  }
  EraseMappings(addr, addr + len);
  for (auto [start, m] : covered) {
    const uint64_t lo = std::max(start, addr);
    Mapping part = m;
    part.end = std::min(m.end, addr + len);
    part.offset = m.offset + (lo - start);
    change(part);
    maps_[lo] = part;
  }
}

void StubProcess::RecordProtect(uint64_t addr, uint64_t len, int prot) {
  UpdateMappings(addr, len, [prot](Mapping& m) { m.prot = prot; });
}

void StubProcess::RecordPagesShared(uint64_t addr, uint64_t len, bool shared) {
  UpdateMappings(addr, len, [shared](Mapping& m) { m.shared_pages = shared; });
}

bool StubProcess::PagesShared(uint64_t addr, uint64_t len) {
  auto it = maps_.upper_bound(addr);
  if (it != maps_.begin()) --it;
  for (; it != maps_.end() && it->first < addr + len; ++it) {
    if (it->second.end > addr && it->second.shared_pages) return true;
  }
  return false;
}

std::optional<uint64_t> StubProcess::Translate(uint64_t addr, uint64_t len, int prot) {
  std::lock_guard<std::mutex> lock(maps_mu_);
  return TranslateLocked(addr, len, prot);
}

std::optional<uint64_t> StubProcess::TranslateLocked(uint64_t addr, uint64_t len, int prot) {
  auto it = maps_.upper_bound(addr);
  if (it == maps_.begin()) return std::nullopt;
  --it;
  const Mapping& m = it->second;
  if (m.host_file || addr + len > m.end || (m.prot & prot) != prot) return std::nullopt;
  return m.offset + (addr - it->first);
}

namespace {
// `mov $imm32, %eax; syscall` and `jmp *abs32` (the patched form).
constexpr uint8_t kMovEax = 0xb8;
// A site in host-file code, or in copy-on-write pages shared since a fork, is patched at
// its this-many-th trap, not its first: patching there first copies the site's page(s)
// or chunk into pages of this process's own and remaps them, which several trapped calls
// (2-4.5 us each, against ~0.2-0.45 us patched) pay for. Most of a short program's sites
// (ld.so's, libc's start-up calls) trap once or twice.
constexpr uint32_t kTrapsBeforeOwnPages = 16;
constexpr size_t kMaxCountedSites = 65536;
constexpr uint8_t kJmpAbs[3] = {0xff, 0x24, 0x25};
constexpr size_t kSiteSize = 7;
}  // namespace

bool StubProcess::LendOtherSlots(int self, std::vector<int>& lent) {
  for (int k = 1; k < kMaxSlots; ++k) {
    if (k == self || !used_[k]) continue;
    uint8_t parked = kSlotParked;
    // Acquire: the thread's last switch is done with the slot (Park releases it).
    if (!parked_[k].compare_exchange_strong(parked, kSlotLent, std::memory_order_acquire)) {
      ReturnSlots(lent);
      return false;
    }
    lent.push_back(k);
  }
  return true;
}

void StubProcess::ReturnSlots(std::vector<int>& lent) {
  for (int k : lent) parked_[k].store(kSlotParked, std::memory_order_release);
  lent.clear();
}

uint64_t StubProcess::MaybePatch(int self, uint64_t rip, int nr, uint64_t* unpatchable) {
  // Never rt_sigreturn, which always needs a frame.
  if (!platform_->syscall_patching() || rip < kSiteSize || nr < 0 || nr == SYS_rt_sigreturn) {
    return rip;
  }
  {
    std::lock_guard<std::mutex> lock(maps_mu_);
    if (not_patchable_.count(rip)) return rip;
    // Nor in pages that are not this process's alone to rewrite: code another process
    // may be running (copy-on-write pages since a fork), or the host's pages of a file
    // (MapHostFile). The sentry can give the site's pages to this process alone (a copy
    // of its chunk): worth it for a site that keeps trapping.
    auto it = maps_.upper_bound(rip - 1);
    const bool host_file =
        it != maps_.begin() && std::prev(it)->second.host_file && std::prev(it)->second.end >= rip;
    if (host_file || PagesShared(rip - kSiteSize, 13)) {
      // Past the bound, sites are reported at their first trap.
      auto count = unpatchable_traps_.find(rip);
      if (count == unpatchable_traps_.end() && unpatchable_traps_.size() < kMaxCountedSites) {
        count = unpatchable_traps_.emplace(rip, 0).first;
      }
      if (count != unpatchable_traps_.end() && ++count->second < kTrapsBeforeOwnPages) {
        return rip;
      }
      if (count != unpatchable_traps_.end()) count->second = 0;  // again if still shared
      *unpatchable = rip;
      return rip;
    }
  }
  // The 7-8 bytes are not written atomically, and the site is two instructions: a
  // thread of this process running app code could execute them half-written, or stand
  // between the mov and the syscall. So the site is patched only while every other
  // thread waits in the sentry's hands, their slots lent to this patch so that none
  // goes back to app code until it is written (Unpark waits for mu_). They come back
  // through the sentry, whose RestartTarget moves a resume inside a patched site to its
  // start. A thread that runs app code now defers the patch to a later trap of the site.
  // mu_ also keeps out control ops; maps_mu_, held to the write, mapping changes (which
  // record themselves before they take effect and before the pages are freed).
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> lent;
  if (!LendOtherSlots(self, lent)) return rip;
  std::lock_guard<std::mutex> maps_lock(maps_mu_);
  const uint64_t out = PatchLocked(rip, nr);
  ReturnSlots(lent);
  return out;
}

uint64_t StubProcess::PatchLocked(uint64_t rip, int nr) {
  if (PagesShared(rip - kSiteSize, 13)) return rip;
  // Bytes [rip-7, rip+6): the mov form ends at rip, the cmp form starts at rip-2.
  uint8_t code[13];
  const std::optional<uint64_t> off = TranslateLocked(rip - kSiteSize, sizeof(code), PROT_EXEC);
  const std::optional<uint64_t> off_short = TranslateLocked(rip - kSiteSize, kSiteSize, PROT_EXEC);
  size_t have = 0;
  if (off && pread(platform_->memory_fd(), code, sizeof(code), static_cast<off_t>(*off)) ==
                 static_cast<ssize_t>(sizeof(code))) {
    have = sizeof(code);
  } else if (off_short &&
             pread(platform_->memory_fd(), code, kSiteSize, static_cast<off_t>(*off_short)) ==
                 static_cast<ssize_t>(kSiteSize)) {
    have = kSiteSize;
  }
  uint64_t site = 0, file_off = 0;
  uint8_t patch[8];
  size_t patch_len = 0;
  int slot = 0;
  uint32_t imm = 0;
  if (have >= kSiteSize) std::memcpy(&imm, code + 1, 4);
  if (have >= kSiteSize && code[0] == kMovEax && imm == static_cast<uint32_t>(nr) &&
      code[5] == 0x0f && code[6] == 0x05) {
    site = rip - kSiteSize;
    file_off = *off_short;
    slot = platform_->PatchSlot(site, imm);
    patch_len = kSiteSize;
  } else if (have == sizeof(code) && code[5] == 0x0f && code[6] == 0x05 && code[7] == 0x48 &&
             code[8] == 0x3d && (code[9] == 0x01 || code[9] == 0x00) && code[10] == 0xf0 &&
             code[11] == 0xff && code[12] == 0xff) {
    int32_t cmp_imm;
    std::memcpy(&cmp_imm, code + 9, 4);
    site = rip - 2;
    file_off = *off + (kSiteSize - 2);
    slot = platform_->PatchSlotCmp(site, cmp_imm);
    patch_len = 8;
  }
  if (slot == 0) {
    if (not_patchable_.size() < 65536) not_patchable_.insert(rip);
    return rip;
  }
  std::memcpy(patch, kJmpAbs, 3);
  const uint32_t target = static_cast<uint32_t>(kPatchBase + 8 * static_cast<uint64_t>(slot));
  std::memcpy(patch + 3, &target, 4);
  patch[7] = 0x90;  // nop: the cmp form's 8th byte
  if (pwrite(platform_->memory_fd(), patch, patch_len, static_cast<off_t>(file_off)) !=
      static_cast<ssize_t>(patch_len)) {
    return rip;
  }
  // The cmp form's return point (site+2) is now inside the jump: continue at the
  // trampoline's tail, which does the cmp, as every later call will.
  return patch_len == kSiteSize ? rip : platform_->CmpTail(slot);
}

bool StubProcess::PatchedHere(uint64_t site, int slot) {
  const std::optional<uint64_t> off = Translate(site, kSiteSize, PROT_EXEC);
  uint8_t code[kSiteSize];
  if (!off ||
      pread(platform_->memory_fd(), code, kSiteSize, static_cast<off_t>(*off)) !=
          static_cast<ssize_t>(kSiteSize) ||
      std::memcmp(code, kJmpAbs, 3) != 0) {
    return false;
  }
  uint32_t target;
  std::memcpy(&target, code + 3, 4);
  return slot == 0 || target == kPatchBase + 8 * static_cast<uint64_t>(slot);
}

uint64_t StubProcess::RestartTarget(uint64_t rip) {
  if (const uint64_t entry = platform_->CmpRestartTarget(rip); entry != 0) return entry;
  // The cmp form's `cmp` (after its syscall) is inside the jump now: a thread that
  // trapped at the site before it was patched (another thread, or a signal frame's saved
  // rip) goes on at the trampoline's cmp instead.
  constexpr uint64_t kCmpOffset = 2;
  if (rip >= kCmpOffset) {
    if (const int slot = platform_->CmpSiteSlot(rip - kCmpOffset);
        slot != 0 && PatchedHere(rip - kCmpOffset, slot)) {
      return platform_->CmpTail(slot);
    }
  }
  constexpr uint64_t kSyscallOffset = 5;  // the `syscall` within the 7-byte site
  if (rip < kSyscallOffset || !platform_->HasPatchedSite(rip - kSyscallOffset)) return rip;
  const uint64_t site = rip - kSyscallOffset;
  return PatchedHere(site, 0) ? site : rip;  // else not patched in this address space
}

void StubProcess::ReleaseThread(int i) {
  std::lock_guard<std::mutex> lock(mu_);
  if (dead_ || i <= 0 || i >= kMaxSlots || !used_[i]) return;
  Post(i, kOpExitThread);
  used_[i] = false;
  parked_[i].store(kSlotRunning, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------
// AddressSpace

absl::Status SystrapAddressSpace::CheckRange(const char* call, uint64_t addr, uint64_t len) const {
  if ((addr % kPageSize) != 0 || (len % kPageSize) != 0 || len == 0 || addr + len < addr ||
      addr + len > MaxUserAddress()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s(addr=0x%x, len=0x%x): not a page-aligned range below MaxUserAddress 0x%x", call, addr,
        len, MaxUserAddress()));
  }
  return absl::OkStatus();
}

absl::Status SystrapAddressSpace::Run(absl::FunctionRef<std::string()> what, int nr,
                                      std::array<uint64_t, 6> args) {
  absl::StatusOr<int64_t> r = stub_->ControlSyscall(nr, args);
  if (!r.ok()) {
    return absl::Status(r.status().code(), absl::StrCat(what(), ": ", r.status().message()));
  }
  const int64_t rax = *r;
  if (IsLinuxErrno(rax)) {
    return ErrnoStatus(absl::StrFormat("%s in systrap stub pid=%d", what(), stub_->pid()),
                       static_cast<int>(-rax));
  }
  if (nr == SYS_mmap && static_cast<uint64_t>(rax) != args[0]) {
    return absl::InternalError(absl::StrFormat("%s returned 0x%x", what(), rax));
  }
  return absl::OkStatus();
}

absl::Status SystrapAddressSpace::MapFile(uint64_t addr, uint64_t len, uint64_t offset, Prot prot) {
  RETURN_IF_ERROR(CheckRange("MapFile", addr, len));
  if (offset % kPageSize != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MapFile(offset=0x%x): offset not page aligned", offset));
  }
  stub_->RecordMap(addr, len, offset, prot);
  return Run(
      [&] {
        return absl::StrFormat(
            "mmap(addr=0x%x, len=0x%x, prot=0x%x, MAP_SHARED|MAP_FIXED, memory file, offset=0x%x)",
            addr, len, prot, offset);
      },
      SYS_mmap,
      {addr, len, static_cast<uint64_t>(prot), MAP_SHARED | MAP_FIXED,
       static_cast<uint64_t>(memory_fd_), offset});
}

absl::Status SystrapAddressSpace::MapHostFile(uint64_t addr, uint64_t len,
                                              const std::shared_ptr<const UniqueFd>& file,
                                              uint64_t offset, Prot prot) {
  RETURN_IF_ERROR(CheckRange("MapHostFile", addr, len));
  if (offset % kPageSize != 0 || (prot & PROT_WRITE) || file == nullptr || !file->valid()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "MapHostFile(offset=0x%x, prot=0x%x): needs a page-aligned offset, an open file and "
        "no PROT_WRITE",
        offset, prot));
  }
  ASSIGN_OR_RETURN(const int fd, stub_->HostFdInStub(file));
  // Recorded first, like MapFile: patching must never treat these pages as ours, even
  // if the mmap below fails half-way.
  stub_->RecordHostFileMap(addr, len, prot);
  return Run(
      [&] {
        return absl::StrFormat(
            "mmap(addr=0x%x, len=0x%x, prot=0x%x, MAP_PRIVATE|MAP_FIXED, host file, offset=0x%x)",
            addr, len, prot, offset);
      },
      SYS_mmap,
      {addr, len, static_cast<uint64_t>(prot), MAP_PRIVATE | MAP_FIXED, static_cast<uint64_t>(fd),
       offset});
}

absl::Status SystrapAddressSpace::Unmap(uint64_t addr, uint64_t len) {
  RETURN_IF_ERROR(CheckRange("Unmap", addr, len));
  stub_->RecordUnmap(addr, len);
  return Run([&] { return absl::StrFormat("munmap(addr=0x%x, len=0x%x)", addr, len); }, SYS_munmap,
             {addr, len});
}

absl::Status SystrapAddressSpace::Protect(uint64_t addr, uint64_t len, Prot prot) {
  RETURN_IF_ERROR(CheckRange("Protect", addr, len));
  stub_->RecordProtect(addr, len, prot);
  return Run(
      [&] { return absl::StrFormat("mprotect(addr=0x%x, len=0x%x, prot=0x%x)", addr, len, prot); },
      SYS_mprotect, {addr, len, static_cast<uint64_t>(prot)});
}

// ---------------------------------------------------------------------------
// Context

SystrapContext::~SystrapContext() { Unbind(); }

void SystrapContext::Unbind() {
  SetActive(false);
  if (stub_ && slot_ > 0) stub_->ReleaseThread(slot_);
  std::lock_guard<std::mutex> lock(mu_);
  stub_.reset();
  slot_ = -1;
  pid_ = tid_ = 0;
}

absl::Status SystrapContext::Bind(const std::shared_ptr<StubProcess>& stub) {
  Unbind();
  ASSIGN_OR_RETURN(const int slot, stub->StartThread());
  std::lock_guard<std::mutex> lock(mu_);
  stub_ = stub;
  slot_ = slot;
  pid_ = stub->pid();
  tid_ = static_cast<pid_t>(stub->slot(slot)->tid);
  fs_known_ = false;
  fast_ = false;  // a new thread starts from a frame (its first trap)
  return absl::OkStatus();
}

absl::StatusOr<uint8_t*> SystrapContext::Ucontext() {
  uint8_t* uc = stub_->SignalStackPtr(slot_, stub_->slot(slot_)->ucontext, kUcontextSize);
  if (uc == nullptr) {
    return absl::InternalError(
        absl::StrFormat("systrap stub pid=%d: the signal frame pointer 0x%x is outside its slot",
                        stub_->pid(), stub_->slot(slot_)->ucontext));
  }
  return uc;
}

absl::StatusOr<std::pair<uint8_t*, size_t>> SystrapContext::FpState(uint8_t* uc) {
  uint64_t addr;
  std::memcpy(&addr, uc + kFpregsOffset, 8);
  uint8_t* fp = stub_->SignalStackPtr(slot_, addr, kLegacyFpSize);
  if (fp == nullptr) {
    return absl::InternalError(absl::StrFormat(
        "systrap stub pid=%d: the frame's FPU state pointer 0x%x is outside its slot", stub_->pid(),
        addr));
  }
  uint32_t magic1, xstate_size;
  std::memcpy(&magic1, fp + kFxswOffset, 4);
  std::memcpy(&xstate_size, fp + kFxswOffset + 16, 4);
  if (magic1 != kFpXstateMagic1) return std::pair{fp, kLegacyFpSize};
  if (xstate_size < kXsaveHeaderOffset + 64 || xstate_size > kFpStateSize ||
      stub_->SignalStackPtr(slot_, addr, xstate_size) == nullptr) {
    return absl::InternalError(absl::StrFormat(
        "systrap stub pid=%d: bad XSAVE size %d in the signal frame", stub_->pid(), xstate_size));
  }
  return std::pair{fp, static_cast<size_t>(xstate_size)};
}

absl::Status SystrapContext::WriteFrame(const Registers& regs) {
  ASSIGN_OR_RETURN(uint8_t * uc, Ucontext());
  const user_regs_struct& g = regs.gp;
  uint64_t gregs[NGREG];
  std::memcpy(gregs, uc + kGregsOffset, sizeof(gregs));
  gregs[REG_R8] = g.r8;
  gregs[REG_R9] = g.r9;
  gregs[REG_R10] = g.r10;
  gregs[REG_R11] = g.r11;
  gregs[REG_R12] = g.r12;
  gregs[REG_R13] = g.r13;
  gregs[REG_R14] = g.r14;
  gregs[REG_R15] = g.r15;
  gregs[REG_RDI] = g.rdi;
  gregs[REG_RSI] = g.rsi;
  gregs[REG_RBP] = g.rbp;
  gregs[REG_RBX] = g.rbx;
  gregs[REG_RDX] = g.rdx;
  gregs[REG_RAX] = g.rax;
  gregs[REG_RCX] = g.rcx;
  gregs[REG_RSP] = g.rsp;
  gregs[REG_RIP] = stub_->RestartTarget(g.rip);
  gregs[REG_EFL] = g.eflags;
  // cs/gs/fs/ss stay as the kernel wrote them: 64-bit user mode.
  std::memcpy(uc + kGregsOffset, gregs, sizeof(gregs));
  if (regs.fp_dirty) {
    ASSIGN_OR_RETURN(auto fp, FpState(uc));
    auto [ptr, size] = fp;
    if (regs.fp_size != 0 && regs.fp_size != size) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "systrap Context::Switch: regs.fp_size=%d but the frame's XSAVE size is %d", regs.fp_size,
          size));
    }
    // Everything but the kernel's software bytes (it checks them in rt_sigreturn).
    std::memcpy(ptr, regs.fp, std::min(size, kFxswOffset));
    if (size > kXsaveHeaderOffset) {
      uint64_t frame_features;
      std::memcpy(&frame_features, ptr + kFxswOffset + 8, 8);
      std::memcpy(ptr + kXsaveHeaderOffset, regs.fp + kXsaveHeaderOffset,
                  size - kXsaveHeaderOffset);
      // The header must be one the kernel accepts: known features, standard format.
      SetXstateBv(ptr, XstateBv(ptr) & frame_features);
      std::memset(ptr + kXsaveHeaderOffset + 8, 0, 56);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SwitchResult> SystrapContext::ReadFast(Registers& regs) {
  // Line 0 only (layout.h): the rest stays in the stub's cache unless it is asked for.
  const uint64_t* a = stub_->slot(slot_)->fast_args;
  user_regs_struct& g = regs.gp;
  g.orig_rax = a[kArgRax] & 0xffffffff;  // eax = nr (the trampoline's mov)
  g.rax = static_cast<uint64_t>(-ENOSYS);
  g.rdi = a[kArgRdi];
  g.rsi = a[kArgRsi];
  g.rdx = a[kArgRdx];
  g.r10 = a[kArgR10];
  g.r8 = a[kArgR8];
  g.r9 = a[kArgR9];
  regs.gp_partial = true;
  regs.fp_valid = false;
  fast_ = true;
  fast_gp_ = g;
  return SwitchResult{.kind = SwitchKind::kSyscall};
}

void SystrapContext::CompleteRegisters(Registers& regs) {
  if (!regs.gp_partial) return;
  // The thread waits in the fast entry or, after ConvertToFrame, in the handler; either
  // way its fast save is as it reported it (control ops use other fields).
  const SlotHeader* h = stub_->slot(slot_);
  const uint64_t* r = h->fast_regs;
  user_regs_struct& g = regs.gp;
  g.rbx = r[kFastRbx];
  g.rcx = r[kFastRcx];  // the return address, as the syscall instruction leaves it
  g.rbp = r[kFastRbp];
  g.r11 = h->fast_rflags;  // likewise rflags
  g.r12 = r[kFastR12];
  g.r13 = r[kFastR13];
  g.r14 = r[kFastR14];
  g.r15 = r[kFastR15];
  g.rsp = h->fast_rsp;
  g.rip = r[kFastRcx];
  g.eflags = h->fast_rflags;
  g.cs = abi::kUserCs;
  g.ss = abi::kUserDs;
  g.ds = g.es = g.fs = g.gs = 0;
  regs.gp_partial = false;
  fast_gp_.rbx = g.rbx;
  fast_gp_.rcx = g.rcx;
  fast_gp_.rbp = g.rbp;
  fast_gp_.r11 = g.r11;
  fast_gp_.r12 = g.r12;
  fast_gp_.r13 = g.r13;
  fast_gp_.r14 = g.r14;
  fast_gp_.r15 = g.r15;
  fast_gp_.rsp = g.rsp;
  fast_gp_.rip = g.rip;
  fast_gp_.eflags = g.eflags;
}

bool SystrapContext::CanResumeFast(const Registers& regs) const {
  const user_regs_struct& a = regs.gp;
  const user_regs_struct& b = fast_gp_;
  if (regs.fp_dirty || a.rdx != b.rdx || a.rsi != b.rsi || a.rdi != b.rdi || a.r8 != b.r8 ||
      a.r9 != b.r9 || a.r10 != b.r10) {
    return false;
  }
  return regs.gp_partial || (a.rbx == b.rbx && a.rcx == b.rcx && a.rbp == b.rbp && a.r11 == b.r11 &&
                             a.r12 == b.r12 && a.r13 == b.r13 && a.r14 == b.r14 && a.r15 == b.r15 &&
                             a.rsp == b.rsp && a.rip == b.rip && a.eflags == b.eflags);
}

absl::Status SystrapContext::ConvertToFrame() {
  RETURN_IF_ERROR(stub_->Call(slot_, kOpSlow, "while making a signal frame"));
  fast_ = false;
  ASSIGN_OR_RETURN(uint8_t * uc, Ucontext());
  uint64_t rip;
  std::memcpy(&rip, uc + kGregsOffset + REG_RIP * 8, 8);
  if (stub_->slot(slot_)->kind != kTrapFrame || rip != stub_->code().slow_trap) {
    return absl::InternalError(absl::StrFormat(
        "systrap stub pid=%d: expected the slow-path trap at 0x%x, got signal %d at 0x%x",
        stub_->pid(), stub_->code().slow_trap, stub_->slot(slot_)->signo, rip));
  }
  return absl::OkStatus();
}

absl::StatusOr<SwitchResult> SystrapContext::ReadFrame(Registers& regs) {
  if (stub_->slot(slot_)->kind == kTrapFast) return ReadFast(regs);
  fast_ = false;
  regs.gp_partial = false;
  ASSIGN_OR_RETURN(uint8_t * uc, Ucontext());
  SlotHeader* h = stub_->slot(slot_);
  uint8_t* si = stub_->SignalStackPtr(slot_, h->siginfo, sizeof(siginfo_t));
  if (si == nullptr) {
    return absl::InternalError(
        absl::StrFormat("systrap stub pid=%d: the siginfo pointer 0x%x is outside its slot",
                        stub_->pid(), h->siginfo));
  }
  uint64_t gregs[NGREG];
  std::memcpy(gregs, uc + kGregsOffset, sizeof(gregs));
  user_regs_struct& g = regs.gp;
  g.r8 = gregs[REG_R8];
  g.r9 = gregs[REG_R9];
  g.r10 = gregs[REG_R10];
  g.r11 = gregs[REG_R11];
  g.r12 = gregs[REG_R12];
  g.r13 = gregs[REG_R13];
  g.r14 = gregs[REG_R14];
  g.r15 = gregs[REG_R15];
  g.rdi = gregs[REG_RDI];
  g.rsi = gregs[REG_RSI];
  g.rbp = gregs[REG_RBP];
  g.rbx = gregs[REG_RBX];
  g.rdx = gregs[REG_RDX];
  g.rax = gregs[REG_RAX];
  g.rcx = gregs[REG_RCX];
  g.rsp = gregs[REG_RSP];
  g.rip = gregs[REG_RIP];
  g.eflags = gregs[REG_EFL];
  g.cs = abi::kUserCs;
  g.ss = abi::kUserDs;
  g.ds = g.es = g.fs = g.gs = 0;
  g.orig_rax = ~uint64_t{0};
  regs.fp_valid = false;

  SwitchResult result;
  siginfo_t info;
  std::memcpy(&info, si, sizeof(info));
  const StubCode& code = stub_->code();
  if (g.rip >= code.ctx_base && g.rip < code.code_page + kCodeSize) {
    // App code jumped into the stub's memory and trapped there: it is hostile or broken
    // beyond emulation (its registers may be anything).
    return absl::PermissionDeniedError(absl::StrFormat(
        "systrap stub pid=%d: app code trapped inside the stub region at rip=0x%x (signal %d)",
        stub_->pid(), g.rip, info.si_signo));
  }
  if (info.si_signo == kInterruptSignal) {
    interrupt_pending_.store(false);
    return SwitchResult{.kind = SwitchKind::kInterrupted};
  }
  if (info.si_signo == SIGSYS && info.si_code == 1 /*SYS_SECCOMP*/) {
    if (info.si_arch == AUDIT_ARCH_X86_64) {
      result.kind = SwitchKind::kSyscall;
      g.orig_rax = static_cast<uint64_t>(static_cast<int64_t>(info.si_syscall));
      g.rax = static_cast<uint64_t>(-ENOSYS);
      g.rip = stub_->MaybePatch(slot_, g.rip, info.si_syscall, &result.unpatchable_site);
      return result;
    }
    result.kind = SwitchKind::kSignal;
    result.info = info;
    return result;
  }
  if (!IsSynchronousSignal(info)) return SwitchResult{.kind = SwitchKind::kInterrupted};
  result.info = info;
  if ((info.si_signo == SIGSEGV || info.si_signo == SIGBUS) && info.si_code != SI_KERNEL) {
    result.kind = SwitchKind::kFault;
    result.fault_addr = reinterpret_cast<uint64_t>(info.si_addr);
    if (gregs[REG_TRAPNO] == kTrapPageFault) {
      result.fault_write = (gregs[REG_ERR] & kPfWrite) != 0;
      result.fault_exec = (gregs[REG_ERR] & kPfInstr) != 0;
    }
    return result;
  }
  result.kind = SwitchKind::kSignal;
  return result;
}

bool SystrapContext::OnTick(void* self) {
  auto* c = static_cast<SystrapContext*>(self);
  if (!c->interrupt_pending_.load()) return false;
  if (++c->interrupt_ticks_ > kInterruptTicksBeforeKill) return true;
  // The signal may have landed in stub code, which drops it: send it again.
  std::lock_guard<std::mutex> lock(c->mu_);
  syscall(SYS_tgkill, c->pid_, c->tid_, kInterruptSignal);
  return false;
}

absl::Status SystrapContext::Run(SlotOp op, uint64_t fast_rax, int64_t* ran_ticks) {
  *ran_ticks = 0;
  SlotHeader* h = stub_->slot(slot_);
  // Line 1 is written only when a value changes (layout.h); the stub clears set_fs.
  const uint64_t set_fs = (!fs_known_ || applied_fs_ != h->fs_base) ? 1 : 0;
  if (h->set_fs != set_fs) h->set_fs = set_fs;
  running_.store(true);  // seq_cst: before the load below (see running_)
  if (interrupt_pending_.load()) {
    running_.store(false, std::memory_order_release);
    return absl::CancelledError();  // see Switch
  }
  interrupt_ticks_ = 0;
  SetActive(true);
  if (op == kOpFastResume) h->fast_args[kArgRax] = fast_rax;
  StubProcess::AppWait wait{
      .on_tick = &OnTick, .tick_arg = this, .idle = idle_, .running_since = &running_since_};
  absl::Status st = stub_->Call(slot_, op, "while running app code", &wait);
  running_.store(false, std::memory_order_release);
  const int64_t since = running_since_.load(std::memory_order_relaxed);
  running_since_.store(0, std::memory_order_relaxed);
  if (since != 0 && wait.trapped_at > since) *ran_ticks = wait.trapped_at - since;
  if (!wait.after_yield) {
    shared_cpu_signs_ = 0;
  } else if (++shared_cpu_signs_ == kSharedCpuSigns) {
    shared_cpu_signs_ = 0;
    (void)MoveOffThisCpu();
  }
  fs_known_ = true;
  applied_fs_ = h->fs_base;
  return st;
}

absl::StatusOr<SwitchResult> SystrapContext::Switch(AddressSpace& as, Registers& regs) {
  auto* sas = dynamic_cast<SystrapAddressSpace*>(&as);
  if (sas == nullptr) {
    return absl::InvalidArgumentError("systrap Context::Switch: AddressSpace is not a systrap one");
  }
  if (stub_ != sas->stub()) RETURN_IF_ERROR(Bind(sas->stub()));
  stub_->Unpark(slot_);
  SlotHeader* h = stub_->slot(slot_);
  SlotOp op = kOpResume;
  if (fast_ && CanResumeFast(regs)) {
    op = kOpFastResume;
  } else {
    CompleteRegisters(regs);  // the frame gets them all
    if (fast_) RETURN_IF_ERROR(ConvertToFrame());
    RETURN_IF_ERROR(WriteFrame(regs));
    // The stub returns through the frame itself unless the kernel must check it: FPU
    // state we wrote from an app's image (XRSTOR would fault on a bad one where
    // rt_sigreturn sanitizes; the initial state is safe), a trap flag (it would trap in
    // the stub's own return code), or a non-canonical rip (the stub's jump would fault
    // on itself, in stub code, where the kernel's return faults in the app).
    if ((!regs.fp_dirty || regs.fp_initial) && (regs.gp.eflags & kEflagsTf) == 0 &&
        regs.gp.rip < kCanonicalTop) {
      op = kOpReturn;
    }
    regs.fp_dirty = false;
    regs.fp_initial = false;
  }
  if (h->fs_base != regs.gp.fs_base) h->fs_base = regs.gp.fs_base;  // line 1: see Run
  regs.fp_valid = false;
  int64_t ran_ticks;
  absl::Status st = Run(op, regs.gp.rax, &ran_ticks);
  if (absl::IsCancelled(st)) {
    // Interrupted before running: nothing ran; the registers stay as given.
    interrupt_pending_.store(false);
    stub_->Park(slot_);
    return SwitchResult{.kind = SwitchKind::kInterrupted};
  }
  RETURN_IF_ERROR(st);
  absl::StatusOr<SwitchResult> result = ReadFrame(regs);
  if (result.ok()) {
    result->ran_ticks = ran_ticks;
    stub_->Park(slot_);
  }
  return result;
}

absl::Status SystrapContext::LoadFpState(AddressSpace& as, Registers& regs) {
  auto* sas = dynamic_cast<SystrapAddressSpace*>(&as);
  if (sas == nullptr) {
    return absl::InvalidArgumentError("systrap LoadFpState: AddressSpace is not a systrap one");
  }
  // Never switched into `as`: its thread's state is the clean one a new thread has.
  if (stub_ != sas->stub()) RETURN_IF_ERROR(Bind(sas->stub()));
  if (fast_) {
    stub_->Unpark(slot_);  // no mm op may run on the thread while it changes state
    absl::Status st = ConvertToFrame();
    stub_->Park(slot_);
    RETURN_IF_ERROR(st);
  }
  ASSIGN_OR_RETURN(uint8_t * uc, Ucontext());
  ASSIGN_OR_RETURN(auto fp, FpState(uc));
  std::memcpy(regs.fp, fp.first, fp.second);
  regs.fp_size = fp.second;
  regs.fp_valid = true;
  regs.fp_dirty = false;
  regs.fp_initial = false;
  return absl::OkStatus();
}

void SystrapContext::WillBlock() {
  // Only the switching thread calls this (between Switches), like Switch itself.
  // With the CPUs oversubscribed even the short spin takes a CPU from threads with work.
  if (stub_ && slot_ > 0) {
    stub_->slot(slot_)->stop_spinning = CpusOversubscribed() ? kStopNow : kStopAfterShortSpin;
  }
  SetActive(false);
}

void SystrapContext::Interrupt() {
  interrupt_pending_.store(true);  // seq_cst: before the load of running_ (see running_)
  // mu_ keeps the bound stub (Unbind takes it), so the tgkill cannot hit a reused pid. A
  // signal that lands once the thread has trapped for another reason stays queued and
  // makes the next Switch return kInterrupted (a spurious one, which the contract allows).
  std::lock_guard<std::mutex> lock(mu_);
  if (running_.load() && pid_ != 0) syscall(SYS_tgkill, pid_, tid_, kInterruptSignal);
}

// ---------------------------------------------------------------------------
// Platform

absl::StatusOr<std::unique_ptr<SystrapPlatform>> SystrapPlatform::Create(MemoryFileInfo memory_file,
                                                                         PlatformOptions options) {
  ASSIGN_OR_RETURN(const StubCode code, GetStubCode());
  std::unique_ptr<SystrapPlatform> p(new SystrapPlatform(memory_file, options, code));
  RETURN_IF_ERROR(p->Start());
  return p;
}

absl::Status SystrapPlatform::Start() {
  ctx_fd_ = UniqueFd(memfd_create("usentry-systrap-contexts", MFD_CLOEXEC));
  if (!ctx_fd_.valid()) return ErrnoStatus("memfd_create(usentry-systrap-contexts)");
  if (ftruncate(ctx_fd_.get(), static_cast<off_t>(kCtxFileSize)) != 0) {
    return ErrnoStatus("ftruncate(systrap context memfd)");
  }
  // Low in the address space (a hint), as the sentry's memory file: left to the kernel,
  // these 16 GiB land right under the mmap base, and without ASLR that is where the stub
  // code page and the zygote page below it must go.
  constexpr uintptr_t kPlacementHint = 0x180000000000;
  void* map = mmap(reinterpret_cast<void*>(kPlacementHint), kCtxFileSize, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_NORESERVE, ctx_fd_.get(), 0);
  if (map == MAP_FAILED) return ErrnoStatus("mmap(systrap context memfd)");
  ctx_map_ = static_cast<uint8_t*>(map);
  // Table entry 0: where every trampoline jumps.
  std::memcpy(ctx_map_ + kPatchFileOffset, &code_.fast_entry, 8);

  // The zygote's request page: one of the pages reserved below the code page, so the
  // zygote can unmap everything else around it.
  for (int k = 1; k <= kZygotePages && zygote_ == nullptr; ++k) {
    void* want = reinterpret_cast<void*>(code_.code_page - k * kPageSize);
    void* got = mmap(want, kPageSize, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == want) {
      zygote_ = static_cast<ZygotePage*>(got);
    } else if (got != MAP_FAILED) {
      munmap(got, kPageSize);
    }
  }
  if (zygote_ == nullptr) {
    return absl::ResourceExhaustedError("systrap: no free zygote page below the stub code page");
  }
  zygote_->ctx_fd = static_cast<uint64_t>(ctx_fd_.get());

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return ErrnoStatus("socketpair(AF_UNIX) for the systrap zygote");
  }
  zygote_sock_ = UniqueFd(sv[0]);
  zygote_sock_stub_ = UniqueFd(sv[1]);
  zygote_->sock_fd = static_cast<uint64_t>(zygote_sock_stub_.get());

  ASSIGN_OR_RETURN(const std::vector<sock_filter> filter, BuildStubFilter(code_.code_page));
  const sock_fprog prog{.len = static_cast<unsigned short>(filter.size()),
                        .filter = const_cast<sock_filter*>(filter.data())};
  const StubChildArgs args{.keep_fds = {memory_file_.fd, ctx_fd_.get(), zygote_sock_stub_.get()},
                           .parent_pid = getpid(),
                           .filter = &prog,
                           .entry = code_.zygote_entry,
                           .entry_arg = reinterpret_cast<uint64_t>(zygote_),
                           .drop_caps = true,
                           .handler = code_.handler,
                           .restorer = code_.restorer,
                           .handled_mask = kHandledSignals,
                           // Read now, before the clone: the child of a confined
                           // sentry could not open /proc (its filter kills on openat).
                           .reset_mask = NonDefaultSignalsOfThisProcess().value_or(~uint64_t{0})};
  // A raw clone rather than fork(): no atfork handlers run in this multi-threaded
  // process, and the child only makes raw syscalls before leaving sentry code.
  const long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid < 0) return ErrnoStatus("clone(SIGCHLD) for the systrap zygote");
  if (pid == 0) StubChildMain(args);
  zygote_pid_ = static_cast<pid_t>(pid);
  // Wait until the zygote is running its loop under its filter: this is where a host
  // without what systrap needs (seccomp TRAP, signal handling) shows up.
  for (int ticks = 0; Word(zygote_->ready).load() == 0; ++ticks) {
    int status = 0;
    if (ChildDead(zygote_pid_, &status)) {
      return absl::UnavailableError(
          absl::StrFormat("systrap zygote %s during startup", DescribeWaitStatus(status)));
    }
    if (ticks > 100) return absl::DeadlineExceededError("systrap zygote did not start in 5 s");
    const timespec tick{.tv_sec = 0, .tv_nsec = kTickNanos};
    Futex(&zygote_->ready, FUTEX_WAIT, 0, &tick);
  }
  absl::StatusOr<PendingStub> first = BeginStub();
  if (!first.ok()) return first.status();
  std::lock_guard<std::mutex> lock(connect_mu_);
  first_ = std::move(first).value();
  return absl::OkStatus();
}

void SystrapPlatform::Bury(pid_t pid, int slice) {
  std::lock_guard<std::mutex> lock(reaper_mu_);
  if (leave_to_namespace_) return;
  dead_.push_back({pid, slice});
  reaper_cv_.notify_one();
  if (!reaper_.joinable()) reaper_ = std::thread([this] { Reap(); });
}

// At the end of a run in the sentry, PID 1 of its own namespace: the stubs (the sentry's
// children, killed by now) are reaped by the kernel when the sentry exits, which waits
// for every process of the namespace. Waiting for each here first put the teardown of
// the last app's address space (0.4-0.9 ms for python3) before the sentry's own exit
// instead of beside it, and the reaper thread's start (~40 us) before both. A platform
// in any other process (the tests') keeps reaping: its stubs would stay zombies.
void SystrapPlatform::EndRun() {
  if (getpid() != 1) return;
  std::lock_guard<std::mutex> lock(reaper_mu_);
  leave_to_namespace_ = true;
}

void SystrapPlatform::Reap() {
  std::unique_lock<std::mutex> lock(reaper_mu_);
  for (;;) {
    reaper_cv_.wait(lock, [this] { return !dead_.empty() || stop_reaper_; });
    if (dead_.empty() || leave_to_namespace_) return;  // stopping, or the namespace reaps
    const auto [pid, slice] = dead_.front();
    dead_.pop_front();
    lock.unlock();
    KillAndReap(pid);
    // Its context slice is free once nothing maps it any more.
    FreeSlice(slice);
    lock.lock();
  }
}

SystrapPlatform::~SystrapPlatform() {
  bool leave_to_namespace = false;
  {
    std::lock_guard<std::mutex> lock(reaper_mu_);
    stop_reaper_ = true;
    leave_to_namespace = leave_to_namespace_;
    reaper_cv_.notify_one();
  }
  if (reaper_.joinable()) reaper_.join();  // after the stubs buried so far
  {
    // init's stub, when no address space was ever made (its program did not load).
    std::lock_guard<std::mutex> lock(connect_mu_);
    if (first_) {
      absl::StatusOr<pid_t> pid = AwaitFork(first_->fork_seq);
      if (pid.ok()) KillAndReap(*pid);
      first_.reset();
    }
  }
  if (zygote_pid_ > 0) {
    if (leave_to_namespace) {
      ::kill(zygote_pid_, SIGKILL);
    } else {
      KillAndReap(zygote_pid_);
    }
  }
  if (zygote_ != nullptr) munmap(zygote_, kPageSize);
  if (ctx_map_ != nullptr) munmap(ctx_map_, kCtxFileSize);
}

absl::StatusOr<pid_t> SystrapPlatform::AwaitFork(uint32_t seq) {
  for (;;) {
    const uint32_t done = Word(zygote_->done).load();
    if (done == seq) break;
    const timespec tick{.tv_sec = 0, .tv_nsec = kTickNanos};
    if (Futex(&zygote_->done, FUTEX_WAIT, done, &tick) != 0 && errno == ETIMEDOUT) {
      int status = 0;
      if (ChildDead(zygote_pid_, &status)) {
        return absl::UnavailableError(
            absl::StrFormat("systrap zygote pid=%d %s", zygote_pid_, DescribeWaitStatus(status)));
      }
    }
  }
  const int64_t r = zygote_->result;
  if (r <= 0) {
    return ErrnoStatus("clone(CLONE_PARENT) of a systrap stub", static_cast<int>(r < 0 ? -r : EIO));
  }
  return static_cast<pid_t>(r);
}

namespace {
uint64_t TrampolineAddress(int slot) {
  return kPatchBase + kTrampolineOffset + static_cast<uint64_t>(slot) * kTrampolineSize;
}
// Appends bytes to a trampoline being assembled.
struct Asm {
  uint8_t b[kTrampolineSize] = {};
  size_t n = 0;
  void Bytes(std::initializer_list<uint8_t> v) {
    for (uint8_t x : v) b[n++] = x;
  }
  template <typename T>
  void Imm(T v) {
    std::memcpy(b + n, &v, sizeof(v));
    n += sizeof(v);
  }
  void JmpFastEntry() {  // jmp *kPatchBase (table entry 0)
    Bytes({0xff, 0x24, 0x25});
    Imm(static_cast<uint32_t>(kPatchBase));
  }
};
// Offset of the tail in a cmp-form trampoline: movabs rcx (10) + jmp (7).
constexpr uint64_t kCmpTailOffset = 17;
}  // namespace

int SystrapPlatform::NewTrampoline(const uint8_t* code, size_t len) {
  if (next_patch_slot_ >= kPatchSlots) return 0;
  const int slot = next_patch_slot_++;
  uint8_t* area = ctx_map_ + kPatchFileOffset;
  std::memcpy(area + kTrampolineOffset + slot * kTrampolineSize, code, len);
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(area + 8 * slot))
      .store(TrampolineAddress(slot));
  return slot;
}

int SystrapPlatform::PatchSlot(uint64_t site, uint32_t nr) {
  std::lock_guard<std::mutex> lock(patch_mu_);
  auto it = patch_slots_.find({site, nr});
  if (it != patch_slots_.end()) return it->second;
  // mov $nr, %eax; movabs $site+7, %rcx; jmp *kPatchBase
  Asm a;
  a.Bytes({0xb8});
  a.Imm(nr);
  a.Bytes({0x48, 0xb9});
  a.Imm(site + 7);
  a.JmpFastEntry();
  const int slot = NewTrampoline(a.b, a.n);
  if (slot == 0) return 0;
  patch_slots_[{site, nr}] = slot;
  patched_sites_.insert(site);
  return slot;
}

int SystrapPlatform::PatchSlotCmp(uint64_t site, int32_t cmp_imm) {
  std::lock_guard<std::mutex> lock(patch_mu_);
  const std::pair<uint64_t, uint64_t> key{site,
                                          (uint64_t{1} << 40) | static_cast<uint32_t>(cmp_imm)};
  auto it = patch_slots_.find(key);
  if (it != patch_slots_.end()) return it->second;
  const int slot = next_patch_slot_;
  // movabs $tail, %rcx; jmp *kPatchBase; tail: cmp $imm, %rax; jmp *0(%rip) -> site+8
  Asm a;
  a.Bytes({0x48, 0xb9});
  a.Imm(CmpTail(slot));
  a.JmpFastEntry();
  a.Bytes({0x48, 0x3d});
  a.Imm(cmp_imm);
  a.Bytes({0xff, 0x25});
  a.Imm(uint32_t{0});
  a.Imm(site + 8);
  if (NewTrampoline(a.b, a.n) == 0) return 0;
  patch_slots_[key] = slot;
  cmp_slots_.insert(slot);
  cmp_sites_[site] = slot;
  return slot;
}

uint64_t SystrapPlatform::CmpTail(int slot) { return TrampolineAddress(slot) + kCmpTailOffset; }

uint64_t SystrapPlatform::CmpRestartTarget(uint64_t rip) {
  const uint64_t tail = rip + 2;
  const uint64_t first = kPatchBase + kTrampolineOffset;
  if (tail < first + kCmpTailOffset || tail >= kPatchBase + kPatchSize) return 0;
  if ((tail - first) % kTrampolineSize != kCmpTailOffset) return 0;
  const int slot = static_cast<int>((tail - first) / kTrampolineSize);
  std::lock_guard<std::mutex> lock(patch_mu_);
  return cmp_slots_.count(slot) ? TrampolineAddress(slot) : 0;
}

bool SystrapPlatform::HasPatchedSite(uint64_t site) {
  std::lock_guard<std::mutex> lock(patch_mu_);
  return patched_sites_.count(site) != 0;
}

int SystrapPlatform::CmpSiteSlot(uint64_t site) {
  std::lock_guard<std::mutex> lock(patch_mu_);
  auto it = cmp_sites_.find(site);
  return it == cmp_sites_.end() ? 0 : it->second;
}

void SystrapPlatform::FreeSlice(int slice) {
  // Zero it for the next stub (and give the pages back).
  fallocate(ctx_fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
            static_cast<off_t>(slice) * static_cast<off_t>(kCtxRegionSize),
            static_cast<off_t>(kCtxRegionSize));
  std::lock_guard<std::mutex> lock(mu_);
  free_slices_.push_back(slice);
}

absl::StatusOr<SystrapPlatform::PendingStub> SystrapPlatform::BeginStub() {
  PendingStub p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_slices_.empty()) {
      p.slice = free_slices_.back();
      free_slices_.pop_back();
    } else if (next_slice_ < kMaxStubs) {
      p.slice = next_slice_++;
    } else {
      return absl::ResourceExhaustedError(
          absl::StrFormat("systrap: %d stub processes alive, the most supported", kMaxStubs));
    }
  }
  // The new stub's own socket waits on the zygote socket; the stub takes it during its
  // startup (layout.h, ZygotePage::sock_fd).
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    FreeSlice(p.slice);
    return ErrnoStatus("socketpair(AF_UNIX) for a systrap stub");
  }
  p.mine = UniqueFd(sv[0]);
  UniqueFd theirs(sv[1]);
  const uint64_t slice_offset = static_cast<uint64_t>(p.slice) * kCtxRegionSize;
  BuildFdMessage(ctx_map_ + slice_offset, code_.ctx_base);
  if (absl::Status sent = SendFd(zygote_sock_.get(), theirs.get()); !sent.ok()) {
    FreeSlice(p.slice);
    return sent;
  }
  zygote_->slice_offset = slice_offset;
  p.fork_seq = Word(zygote_->seq).load() + 1;
  Word(zygote_->seq).store(p.fork_seq);
  Futex(&zygote_->seq, FUTEX_WAKE, 1);
  return p;
}

absl::StatusOr<std::unique_ptr<AddressSpace>> SystrapPlatform::FinishStub(PendingStub p) {
  absl::StatusOr<pid_t> pid = AwaitFork(p.fork_seq);
  if (!pid.ok()) {
    FreeSlice(p.slice);
    DrainZygoteSocket();
    return pid.status();
  }
  uint8_t* local = ctx_map_ + static_cast<uint64_t>(p.slice) * kCtxRegionSize;
  auto stub = std::make_shared<StubProcess>(this, *pid, p.slice, local);
  // The control thread reports once it is set up.
  absl::Status st = stub->Wait(0, "during startup");
  if (st.ok()) st = stub->Connected(std::move(p.mine));
  if (!st.ok()) {
    DrainZygoteSocket();
    return st;
  }
  return std::unique_ptr<AddressSpace>(
      new SystrapAddressSpace(std::move(stub), code_.ctx_base, memory_file_.fd));
}

absl::StatusOr<std::unique_ptr<AddressSpace>> SystrapPlatform::NewAddressSpace() {
  std::lock_guard<std::mutex> lock(connect_mu_);
  std::optional<PendingStub> p = std::move(first_);
  first_.reset();
  if (!p) {
    absl::StatusOr<PendingStub> begun = BeginStub();
    if (!begun.ok()) return begun.status();
    p = std::move(begun).value();
  }
  return FinishStub(std::move(*p));
}

void SystrapPlatform::DrainZygoteSocket() {
  // Whatever a failed start left queued would reach the next stub: drop it (RecvPacket
  // closes the descriptors that came along).
  for (;;) {
    SysResult<Packet> p = RecvPacket(zygote_sock_stub_.get(), MSG_DONTWAIT);
    if (!p.ok() || p->bytes.empty()) return;
  }
}

absl::StatusOr<std::unique_ptr<Context>> SystrapPlatform::NewContext() {
  return std::unique_ptr<Context>(new SystrapContext());
}

absl::StatusOr<std::unique_ptr<Context>> SystrapPlatform::NewThreadContext(AddressSpace& as,
                                                                           Context& parent) {
  (void)parent;
  auto* sas = dynamic_cast<SystrapAddressSpace*>(&as);
  if (sas == nullptr) {
    return absl::InvalidArgumentError(
        "systrap NewThreadContext: AddressSpace is not a systrap one");
  }
  auto ctx = std::make_unique<SystrapContext>();
  RETURN_IF_ERROR(ctx->BindTo(sas->stub()));
  return std::unique_ptr<Context>(std::move(ctx));
}

}  // namespace usentry::platform::systrap
