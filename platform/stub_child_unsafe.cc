// Stub child setup shared by the platforms (see stub_child_unsafe.h).
#include "platform/stub_child_unsafe.h"

#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace usentry::platform {
namespace {

// The kernel's struct sigaction for rt_sigaction (not glibc's, whose mask is 128 bytes).
struct KernelSigaction {
  uint64_t handler;
  uint64_t flags;
  uint64_t restorer;
  uint64_t mask;
};

constexpr uint64_t kSaRestorer = 0x04000000;  // SA_RESTORER, not exported by glibc

[[noreturn]] void ChildExit(int code) {
  syscall(SYS_exit_group, code);
  __builtin_unreachable();
}

// close_range over [lo, hi] when it is not empty.
void CloseRange(long lo, long hi) {
  if (lo > hi) return;
  if (syscall(SYS_close_range, static_cast<unsigned>(lo), static_cast<unsigned>(hi), 0u) != 0) {
    ChildExit(kChildCloseRange);
  }
}

const char* SignalAbbrev(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? abbrev : "?";
}

}  // namespace

std::optional<uint64_t> NonDefaultSignalsOfThisProcess() {
  std::ifstream in("/proc/self/status");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return NonDefaultSignals(text.str());
}

std::optional<uint64_t> NonDefaultSignals(std::string_view status) {
  uint64_t actions = 0;
  for (std::string_view key : {"\nSigIgn:\t", "\nSigCgt:\t"}) {
    const size_t at = status.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view value = status.substr(at + key.size());
    value = value.substr(0, value.find('\n'));
    uint64_t mask = 0;
    // The kernel prints each mask as 16 hex digits.
    if (value.size() != 16 ||
        !absl::SimpleHexAtoi(absl::string_view(value.data(), value.size()), &mask)) {
      return std::nullopt;
    }
    actions |= mask;
  }
  return actions;
}

bool IsSynchronousSignal(const siginfo_t& info) {
  switch (info.si_signo) {
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGTRAP:
    case SIGSYS:
      return info.si_code > 0;
    default:
      return false;
  }
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    if (code >= kChildPdeathsig || code == kStubStartupFailedExit) {
      return absl::StrFormat("exited with status %d (%s failed)", code, StubChildExitName(code));
    }
    return absl::StrFormat("exited with status %d", code);
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return absl::StrFormat("killed by signal %d (SIG%s)%s", sig, SignalAbbrev(sig),
                           sig == SIGSYS ? ", a syscall denied by the stub seccomp filter" : "");
  }
  if (WIFSTOPPED(status)) {
    return absl::StrFormat("stopped by signal %d (SIG%s), event %d", WSTOPSIG(status) & 0x7f,
                           SignalAbbrev(WSTOPSIG(status) & 0x7f), status >> 16);
  }
  return absl::StrFormat("wait status 0x%x", status);
}

const char* StubChildExitName(int code) {
  switch (code) {
    case kChildPdeathsig:
      return "prctl(PR_SET_PDEATHSIG)";
    case kChildParentGone:
      return "parent died before PDEATHSIG was set";
    case kChildRseq:
      return "rseq(RSEQ_FLAG_UNREGISTER)";
    case kChildSigaction:
      return "rt_sigaction";
    case kChildSigmask:
      return "rt_sigprocmask(SIG_SETMASK, {})";
    case kChildCloseRange:
      return "close_range";
    case kChildTraceme:
      return "ptrace(PTRACE_TRACEME)";
    case kChildNoNewPrivs:
      return "prctl(PR_SET_NO_NEW_PRIVS)";
    case kChildSeccomp:
      return "seccomp(SECCOMP_SET_MODE_FILTER)";
    case kChildCapset:
      return "capset(none)";
    case kStubStartupFailedExit:
      return "stub startup code";
    default:
      return "unknown step";
  }
}

void StubChildMain(const StubChildArgs& args) {
  // Die with the thread that forked us (also the ptrace tracer, when there is one).
  if (args.death_signal && syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    ChildExit(kChildPdeathsig);
  }
  if (syscall(SYS_getppid) != args.parent_pid) ChildExit(kChildParentGone);
  // Recognizable in ps/top instead of the sentry thread's name (best effort).
  static constexpr char kName[] = "usentry-stub";
  syscall(SYS_prctl, PR_SET_NAME, kName, 0, 0, 0);

  // glibc registered an rseq area for the forking thread and fork keeps the
  // registration. Once the stub unmaps the sentry's memory the kernel would fault
  // (SIGSEGV) on it at the next preemption, or write into whatever the app maps there.
  if (__rseq_size > 0) {
    void* area = static_cast<char*>(__builtin_thread_pointer()) + __rseq_offset;
    // glibc >= 2.40 reports the feature size (20) but registers at least 32 bytes.
    if (syscall(SYS_rseq, area, __rseq_size, RSEQ_FLAG_UNREGISTER, RSEQ_SIG) != 0 &&
        syscall(SYS_rseq, area, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG) != 0) {
      ChildExit(kChildRseq);
    }
  }

  // Handlers point into sentry code that is about to disappear; the mask is the sentry
  // thread's. The sentry emulates app signals: host ones stay default, except those the
  // stub code itself handles (systrap). Only reset_mask's actions are reset (see
  // StubChildArgs).
  const uint64_t reset = args.reset_mask;
  const KernelSigaction dfl{};
  const KernelSigaction stub{.handler = args.handler,
                             .flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | kSaRestorer,
                             .restorer = args.restorer,
                             .mask = 0};
  for (int sig = 1; sig <= 64; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    const uint64_t bit = uint64_t{1} << (sig - 1);
    const bool handled = args.handler != 0 && (args.handled_mask & bit);
    if (!handled && !(reset & bit)) continue;
    if (syscall(SYS_rt_sigaction, sig, handled ? &stub : &dfl, nullptr, sizeof(uint64_t)) != 0) {
      ChildExit(kChildSigaction);
    }
  }
  const uint64_t empty_mask = 0;
  if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &empty_mask, nullptr, sizeof(uint64_t)) != 0) {
    ChildExit(kChildSigmask);
  }

  // Keep only keep_fds: not the gofer socket, stdio, or anything else.
  long keep[3] = {args.keep_fds[0], args.keep_fds[1], args.keep_fds[2]};
  // Ascending (no library sort: this runs in a child of a multi-threaded process).
  for (int i = 0; i < 3; ++i) {
    for (int j = i + 1; j < 3; ++j) {
      if (keep[j] < keep[i]) std::swap(keep[i], keep[j]);
    }
  }
  long next = 0;
  for (long fd : keep) {
    if (fd < 0) continue;
    CloseRange(next, fd - 1);
    next = fd + 1;
  }
  CloseRange(next, static_cast<long>(~0u));

  if (args.trace_me && syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0) != 0) ChildExit(kChildTraceme);
  if (args.drop_caps) {
    __user_cap_header_struct hdr{.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    __user_cap_data_struct data[2] = {};
    if (syscall(SYS_capset, &hdr, data) != 0) ChildExit(kChildCapset);
  }
  if (syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ChildExit(kChildNoNewPrivs);
  // Last syscall outside the stub page: from here on the filter decides.
  if (syscall(SYS_seccomp, 1 /*SECCOMP_SET_MODE_FILTER*/, 0, args.filter) != 0) {
    ChildExit(kChildSeccomp);
  }
  JumpToStub(args.entry, args.entry_arg);
}

void JumpToStub(uint64_t entry, uint64_t arg) {
  // A plain indirect jump with `arg` in rdi: the stub never returns and uses no stack.
  asm volatile("jmp *%0" : : "r"(entry), "D"(arg) : "memory");
  __builtin_unreachable();
}

}  // namespace usentry::platform
