// Stub process lifecycle and ptrace plumbing (see subprocess.h).
#include "platform/ptrace/subprocess.h"

#include <elf.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "base/sys_result.h"
#include "platform/ptrace/stub_filter.h"
#include "platform/stub_process.h"
#include "platform/xsave_layout.h"

namespace usentry::platform::ptrace {
namespace {

// Upper bound of stops we suppress while waiting for an expected one (a late interrupt
// signal or a signal sent from outside the sandbox); more means something is wrong.
constexpr int kMaxSpuriousStops = 100;

// Offset of MXCSR in the FXSAVE/XSAVE legacy region.
constexpr size_t kMxcsrOffset = 24;
// Keeps only `features` in an XSAVE image's XSTATE_BV.
void MaskXstateBv(uint8_t* image, uint64_t features) {
  SetXstateBv(image, XstateBv(image) & features);
}

const char* SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? abbrev : "?";
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Create(int memory_fd) {
  if (memory_fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ptrace stub: invalid memory file fd %d", memory_fd));
  }
  ASSIGN_OR_RETURN(const StubPage stub, GetStubPage());
  ASSIGN_OR_RETURN(const std::vector<sock_filter> filter, BuildStubFilter(stub.addr));
  // Everything the child reads is prepared here: it must not allocate.
  const sock_fprog prog{.len = static_cast<unsigned short>(filter.size()),
                        .filter = const_cast<sock_filter*>(filter.data())};
  const StubChildArgs args{.keep_fds = {memory_fd, -1, -1},
                           .parent_pid = getpid(),
                           .filter = &prog,
                           .entry = stub.entry,
                           .trace_me = true,
                           .death_signal = false};

  // A raw clone rather than fork(): no atfork handlers run in this multi-threaded
  // process, and the child only makes raw syscalls before leaving sentry code.
  const long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid < 0) return ErrnoStatus("clone(SIGCHLD) for the ptrace stub");
  if (pid == 0) StubChildMain(args);

  std::unique_ptr<Subprocess> sp(new Subprocess(static_cast<pid_t>(pid), static_cast<pid_t>(pid),
                                                memory_fd, stub, static_cast<pid_t>(gettid()),
                                                /*owns_process=*/true));
  RETURN_IF_ERROR(sp->FinishSetup());  // on error the destructor kills and reaps
  return sp;
}

absl::Status Subprocess::FinishSetup() {
  // The child stops itself with SIGSTOP at the end of the stub's startup code.
  for (int spurious = 0;; ++spurious) {
    ASSIGN_OR_RETURN(const int st, Wait());
    if (dead_) return DiedError("during startup", st);
    if (WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP) break;
    if (spurious >= kMaxSpuriousStops) {
      return absl::InternalError(
          absl::StrFormat("ptrace stub pid=%d: unexpected stop: %s", pid_, DescribeWaitStatus(st)));
    }
    RETURN_IF_ERROR(Resume(PTRACE_CONT, "PTRACE_CONT"));
  }
  // EXITKILL: if the tracer thread exits the stub dies with it (PDEATHSIG also does).
  // TRACESYSGOOD: syscall stops report SIGTRAP|0x80, distinct from a real SIGTRAP.
  const long options = PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD;
  if (::ptrace(PTRACE_SETOPTIONS, pid_, 0, options) != 0) {
    return ErrnoStatus(
        absl::StrFormat("ptrace(PTRACE_SETOPTIONS, pid=%d, EXITKILL|TRACESYSGOOD)", pid_));
  }
  RETURN_IF_ERROR(GetRegs(initial_regs_));
  if (initial_regs_.rip < stub_.addr || initial_regs_.rip >= stub_.addr + kStubPageSize) {
    return absl::InternalError(
        absl::StrFormat("ptrace stub pid=%d stopped at rip=0x%x, outside the stub page 0x%x", pid_,
                        initial_regs_.rip, stub_.addr));
  }
  // Sanity check of the injection path itself.
  ASSIGN_OR_RETURN(const int64_t got, Inject(SYS_getpid, {}));
  if (got != pid_) {
    return absl::InternalError(
        absl::StrFormat("ptrace stub pid=%d: injected getpid() returned %d", pid_, got));
  }
  // The XSAVE size the kernel wants back in PTRACE_SETREGSET; probed with a buffer
  // larger than any current XSAVE layout (AMX is ~11 KiB).
  std::vector<uint8_t> probe(64 * 1024);
  size_t len = probe.size();
  RETURN_IF_ERROR(GetXstate(probe.data(), len));
  xstate_size_ = len;
  frame_xstate_features_ = HostSignalFrameXsave().features;
  frame_xstate_size_ = std::min(xstate_size_, HostSignalFrameXsave().size);
  if (frame_xstate_size_ < xstate_size_) xstate_scratch_.resize(xstate_size_);
  // The child inherited the sentry thread's FPU/SSE/AVX registers, which hold sentry
  // data (memcpy goes through vector registers). Reset them to the architectural
  // init state: XSTATE_BV = 0 (every component initial, PKRU 0) and the default MXCSR.
  std::fill(probe.begin(), probe.begin() + xstate_size_, 0);
  constexpr uint32_t kDefaultMxcsr = 0x1f80;  // all exceptions masked
  std::memcpy(probe.data() + kMxcsrOffset, &kDefaultMxcsr, sizeof(kDefaultMxcsr));
  return SetXstate(probe.data(), xstate_size_);
}

Subprocess::~Subprocess() {
  if (owns_process_ && !dead_) KillAndReap(tgid_);
}

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Adopt(const Subprocess& process,
                                                              pid_t tid) {
  std::unique_ptr<Subprocess> sp(new Subprocess(tid, process.tgid_, process.memory_fd_,
                                                process.stub_, static_cast<pid_t>(gettid()),
                                                /*owns_process=*/false));
  sp->initial_regs_ = process.initial_regs_;
  sp->xstate_size_ = process.xstate_size_;
  sp->frame_xstate_size_ = process.frame_xstate_size_;
  sp->frame_xstate_features_ = process.frame_xstate_features_;
  sp->xstate_scratch_.resize(process.xstate_scratch_.size());
  // EXITKILL as for the first thread: if this tracer dies, the stub must not run on.
  const long options = PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD;
  if (::ptrace(PTRACE_SEIZE, tid, 0, options) != 0) {
    return ErrnoStatus(
        absl::StrFormat("ptrace(PTRACE_SEIZE, tid=%d of stub pid=%d)", tid, process.tgid_));
  }
  if (::ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0) {
    return ErrnoStatus(absl::StrFormat("ptrace(PTRACE_INTERRUPT, tid=%d)", tid));
  }
  for (int spurious = 0;; ++spurious) {
    ASSIGN_OR_RETURN(const int st, sp->Wait());
    if (sp->dead_) return sp->DiedError("while being seized", st);
    if (WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP) break;
    if (spurious >= kMaxSpuriousStops) {
      return absl::InternalError(absl::StrFormat("ptrace stub thread %d: unexpected stop: %s", tid,
                                                 DescribeWaitStatus(st)));
    }
    // A signal-delivery-stop before the interrupt's stop: suppress it.
    RETURN_IF_ERROR(sp->Resume(PTRACE_CONT, "PTRACE_CONT"));
  }
  return sp;
}

absl::StatusOr<pid_t> Subprocess::CloneThread() {
  ASSIGN_OR_RETURN(const int64_t rax, InjectAt(stub_.clone_site, stub_.clone_trap_rip, SYS_clone,
                                               {kStubThreadCloneFlags, 0, 0, 0, 0, 0}, 0));
  if (rax < 0) {
    return ErrnoStatus(absl::StrFormat("clone(app thread) in stub pid=%d", tgid_),
                       static_cast<int>(-rax));
  }
  return static_cast<pid_t>(rax);
}

absl::Status Subprocess::ExitThread() {
  RETURN_IF_ERROR(CheckTracer("thread exit"));
  if (dead_ || detached_) return absl::OkStatus();
  user_regs_struct r = initial_regs_;
  r.rip = stub_.syscall_site;
  r.rax = SYS_exit;
  r.rdi = 0;
  r.orig_rax = ~uint64_t{0};
  RETURN_IF_ERROR(ExplainFailure(SetRegs(r), "before its exit"));
  // Detached, it runs exit(0) from the stub page (which the stub filter allows); EXITKILL
  // no longer applies to it.
  if (::ptrace(PTRACE_DETACH, pid_, 0, 0) != 0) {
    return ExplainFailure(ErrnoStatus(absl::StrFormat("ptrace(PTRACE_DETACH, tid=%d)", pid_)),
                          "while detaching");
  }
  detached_ = true;
  return absl::OkStatus();
}

absl::StatusOr<int> Subprocess::Wait() {
  int st = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &st, __WALL);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return ErrnoStatus(absl::StrFormat("waitpid(pid=%d, __WALL)", pid_));
  if (WIFEXITED(st) || WIFSIGNALED(st)) dead_ = true;
  return st;
}

absl::Status Subprocess::DiedError(const std::string& during, int status) {
  return absl::UnavailableError(
      absl::StrFormat("ptrace stub pid=%d %s %s", pid_, DescribeWaitStatus(status), during));
}

absl::Status Subprocess::CheckTracer(const char* op) const {
  const pid_t self = static_cast<pid_t>(gettid());
  if (self != tracer_tid_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "ptrace %s for stub pid=%d called on thread %d, but only its tracer thread %d may "
        "(see the threading contract in platform.h)",
        op, pid_, self, tracer_tid_));
  }
  return absl::OkStatus();
}

absl::Status Subprocess::ExplainFailure(absl::Status st, const std::string& during) {
  if (st.ok() || dead_ || !absl::IsNotFound(st)) return st;  // ESRCH maps to NotFound
  // A tracee that is not in a ptrace-stop also gives ESRCH; we only call ptrace on a
  // stopped stub, so it is dead or dying: wait for that (or for a stop, which then
  // leaves `st` as the error).
  absl::StatusOr<int> wst = Wait();
  if (wst.ok() && dead_) return DiedError(during, *wst);
  return st;
}

absl::StatusOr<int64_t> Subprocess::InjectAt(uint64_t site, uint64_t trap_rip, int nr,
                                             const std::array<uint64_t, 6>& args, int restarts) {
  RETURN_IF_ERROR(CheckTracer("syscall injection"));
  if (detached_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("ptrace stub thread %d: injection after its exit", pid_));
  }
  user_regs_struct r = initial_regs_;
  r.rip = site;
  r.rax = static_cast<uint64_t>(nr);
  r.orig_rax = ~uint64_t{0};  // not in a syscall: no kernel restart logic on resume
  r.rdi = args[0];
  r.rsi = args[1];
  r.rdx = args[2];
  r.r10 = args[3];
  r.r8 = args[4];
  r.r9 = args[5];
  RETURN_IF_ERROR(ExplainFailure(SetRegs(r), absl::StrFormat("before injected syscall %d", nr)));
  RETURN_IF_ERROR(Resume(PTRACE_CONT, "PTRACE_CONT"));
  for (int spurious = 0;; ++spurious) {
    ASSIGN_OR_RETURN(const int st, Wait());
    if (dead_) return DiedError(absl::StrFormat("while running injected syscall %d", nr), st);
    if (WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP) {
      RETURN_IF_ERROR(GetRegs(r));
      if (r.rip == trap_rip) {
        const int64_t rax = static_cast<int64_t>(r.rax);
        // A signal interrupted the call and the kernel asks for a restart, which it
        // did not do itself (it only does that on signal delivery; we suppress those).
        if (rax == -kERestartSys || rax == -kERestartNoIntr || rax == -kERestartNoHand ||
            rax == -kERestartRestartBlock) {
          if (++restarts > kMaxSpuriousStops) {
            return absl::InternalError(absl::StrFormat(
                "ptrace stub pid=%d: injected syscall %d keeps asking for a restart", pid_, nr));
          }
          return InjectAt(site, trap_rip, nr, args, restarts);
        }
        return rax;
      }
    }
    // A fault in the stub itself means the stub code or its page is broken.
    siginfo_t info{};
    if (WIFSTOPPED(st) && GetSiginfo(info).ok() && IsSynchronousSignal(info) &&
        !(info.si_signo == SIGTRAP && info.si_code == SI_KERNEL)) {
      return absl::InternalError(absl::StrFormat(
          "ptrace stub pid=%d: signal %d (SIG%s, code %d, addr %p) during injected syscall %d",
          pid_, info.si_signo, SignalName(info.si_signo), info.si_code, info.si_addr, nr));
    }
    // Anything else is an asynchronous signal that arrived before the int3 (e.g. an
    // interrupt meant for an earlier Switch): suppress it and let the stub go on.
    if (spurious >= kMaxSpuriousStops) {
      return absl::InternalError(absl::StrFormat(
          "ptrace stub pid=%d: injected syscall %d never reached its int3; last: %s", pid_, nr,
          DescribeWaitStatus(st)));
    }
    RETURN_IF_ERROR(Resume(PTRACE_CONT, "PTRACE_CONT"));
  }
}

absl::Status Subprocess::GetRegs(user_regs_struct& regs) {
  if (::ptrace(PTRACE_GETREGS, pid_, 0, &regs) != 0) {
    return ErrnoStatus(absl::StrFormat("ptrace(PTRACE_GETREGS, pid=%d)", pid_));
  }
  return absl::OkStatus();
}

absl::Status Subprocess::SetRegs(const user_regs_struct& regs) {
  if (::ptrace(PTRACE_SETREGS, pid_, 0, &regs) != 0) {
    return ErrnoStatus(absl::StrFormat("ptrace(PTRACE_SETREGS, pid=%d, rip=0x%x, cs=0x%x)", pid_,
                                       regs.rip, regs.cs));
  }
  return absl::OkStatus();
}

absl::Status Subprocess::GetSiginfo(siginfo_t& info) {
  if (::ptrace(PTRACE_GETSIGINFO, pid_, 0, &info) != 0) {
    return ErrnoStatus(absl::StrFormat("ptrace(PTRACE_GETSIGINFO, pid=%d)", pid_));
  }
  return absl::OkStatus();
}

absl::Status Subprocess::GetXstate(void* buf, size_t& len) {
  iovec iov{.iov_base = buf, .iov_len = len};
  if (::ptrace(PTRACE_GETREGSET, pid_, NT_X86_XSTATE, &iov) != 0) {
    return ErrnoStatus(
        absl::StrFormat("ptrace(PTRACE_GETREGSET, pid=%d, NT_X86_XSTATE, len=%d)", pid_, len));
  }
  len = iov.iov_len;
  return absl::OkStatus();
}

absl::Status Subprocess::GetFrameXstate(uint8_t* buf) {
  if (xstate_scratch_.empty()) {
    size_t len = frame_xstate_size_;
    return GetXstate(buf, len);
  }
  size_t len = xstate_scratch_.size();
  RETURN_IF_ERROR(GetXstate(xstate_scratch_.data(), len));
  std::memcpy(buf, xstate_scratch_.data(), frame_xstate_size_);
  MaskXstateBv(buf, frame_xstate_features_);
  return absl::OkStatus();
}

absl::Status Subprocess::SetFrameXstate(const uint8_t* buf) {
  if (xstate_scratch_.empty()) return SetXstate(buf, frame_xstate_size_);
  // Components past the frame's end go back to their initial state: XSTATE_BV says so.
  std::memcpy(xstate_scratch_.data(), buf, frame_xstate_size_);
  std::fill(xstate_scratch_.begin() + frame_xstate_size_, xstate_scratch_.end(), 0);
  MaskXstateBv(xstate_scratch_.data(), frame_xstate_features_);
  return SetXstate(xstate_scratch_.data(), xstate_scratch_.size());
}

absl::Status Subprocess::SetXstate(const void* buf, size_t len) {
  iovec iov{.iov_base = const_cast<void*>(buf), .iov_len = len};
  if (::ptrace(PTRACE_SETREGSET, pid_, NT_X86_XSTATE, &iov) != 0) {
    return ErrnoStatus(
        absl::StrFormat("ptrace(PTRACE_SETREGSET, pid=%d, NT_X86_XSTATE, len=%d)", pid_, len));
  }
  return absl::OkStatus();
}

absl::Status Subprocess::Resume(int request, const char* request_name) {
  if (::ptrace(static_cast<__ptrace_request>(request), pid_, 0, 0) != 0) {
    return ErrnoStatus(absl::StrFormat("ptrace(%s, pid=%d, sig=0)", request_name, pid_));
  }
  return absl::OkStatus();
}

}  // namespace usentry::platform::ptrace
