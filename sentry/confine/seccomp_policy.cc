// The sentry's host-syscall allowlist. Every entry is justified in docs/security.md.
#include "sentry/confine/seccomp_policy.h"

#include <fcntl.h>
#include <linux/membarrier.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/unique_fd.h"
#include "sentry/confine/filter_rules.h"

namespace usentry::sentry::confine {
namespace {

// Syscalls allowed with any arguments. Grouped by the sentry subsystem that needs them.
constexpr int kUnconditional[] = {
    // I/O on FDs the sentry already holds (memory file, gofer-donated files, stdio).
    SCMP_SYS(read),
    SCMP_SYS(write),
    SCMP_SYS(pread64),
    SCMP_SYS(pwrite64),
    SCMP_SYS(readv),
    SCMP_SYS(writev),
    SCMP_SYS(preadv),
    SCMP_SYS(pwritev),
    SCMP_SYS(close),
    SCMP_SYS(close_range),
    SCMP_SYS(fstat),
    SCMP_SYS(lseek),
    SCMP_SYS(getdents64),
    SCMP_SYS(ftruncate),
    SCMP_SYS(fsync),
    SCMP_SYS(fdatasync),
    SCMP_SYS(fallocate),
    // fork/brk/mremap copy app pages between memory-file ranges in the kernel.
    SCMP_SYS(copy_file_range),
    SCMP_SYS(dup),
    SCMP_SYS(dup3),
    SCMP_SYS(fcntl),
    // Memory: the sentry's own heap and the MemoryFile memfd.
    SCMP_SYS(mmap),
    SCMP_SYS(munmap),
    SCMP_SYS(mprotect),
    SCMP_SYS(mremap),
    SCMP_SYS(madvise),
    SCMP_SYS(brk),
    SCMP_SYS(memfd_create),
    // Platform: driving stub processes.
    SCMP_SYS(wait4),
    SCMP_SYS(waitid),
    // Threads and process exit.
    SCMP_SYS(exit),
    SCMP_SYS(exit_group),
    SCMP_SYS(futex),
    SCMP_SYS(set_robust_list),
    SCMP_SYS(rseq),
    SCMP_SYS(restart_syscall),
    // Signals of the sentry itself.
    SCMP_SYS(rt_sigaction),
    SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(rt_sigreturn),
    SCMP_SYS(sigaltstack),
    // Gofer/netgate protocol (SOCK_SEQPACKET + SCM_RIGHTS); no socket() or connect().
    // sendmsg's msg_name cannot redirect anything: the only host internet sockets the
    // sentry holds are connected TCP sockets (which ignore it); UDP goes through
    // netgate's AF_UNIX relays.
    SCMP_SYS(sendmsg),
    SCMP_SYS(recvmsg),
    // The app's half-closes on sockets netgate donated (their data moves with
    // sendmsg/recvmsg above).
    SCMP_SYS(shutdown),
    // Waiting.
    SCMP_SYS(poll),
    SCMP_SYS(ppoll),
    SCMP_SYS(epoll_create1),
    SCMP_SYS(epoll_ctl),
    SCMP_SYS(epoll_wait),
    SCMP_SYS(epoll_pwait),
    SCMP_SYS(eventfd2),
    SCMP_SYS(timerfd_create),
    SCMP_SYS(timerfd_settime),
    SCMP_SYS(timerfd_gettime),
    // Identity and time (the app sees emulated values; these are the sentry's own).
    SCMP_SYS(getpid),
    SCMP_SYS(gettid),
    SCMP_SYS(getppid),
    SCMP_SYS(getuid),
    SCMP_SYS(geteuid),
    SCMP_SYS(getgid),
    SCMP_SYS(getegid),
    SCMP_SYS(clock_gettime),
    SCMP_SYS(clock_getres),
    SCMP_SYS(gettimeofday),
    SCMP_SYS(clock_nanosleep),
    SCMP_SYS(nanosleep),
    SCMP_SYS(sched_yield),
    SCMP_SYS(sched_getaffinity),
    SCMP_SYS(getrandom),
    // pthread_create reads the creator's scheduling parameters so the thread inherits them.
    SCMP_SYS(sched_getparam),
    SCMP_SYS(sched_getscheduler),
    SCMP_SYS(getrusage),
    SCMP_SYS(prlimit64),
    // Stubs install their own (stricter) filter; a filter can only remove rights.
    SCMP_SYS(seccomp),
};

// Namespace-creating clone flags. A sentry must never make a new namespace: a fresh user
// namespace would hand it capabilities again.
constexpr uint64_t kCloneNamespaceFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS |
                                          CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                                          CLONE_NEWNET;

// Terminal ioctls the sentry forwards for the app's stdio. Never TIOCSTI (injects input
// into the host terminal) or TIOCSCTTY/TIOCCONS.
constexpr uint64_t kIoctls[] = {TCGETS,     TCSETS,    TCSETSW,   TCSETSF, TIOCGWINSZ,
                                TIOCSWINSZ, TIOCGPGRP, TIOCSPGRP, FIONREAD};

struct SockOpt {
  int level;
  int name;
};
constexpr SockOpt kSockOpts[] = {
    {SOL_SOCKET, SO_KEEPALIVE},   {IPPROTO_TCP, TCP_NODELAY}, {IPPROTO_TCP, TCP_KEEPIDLE},
    {IPPROTO_TCP, TCP_KEEPINTVL}, {IPPROTO_TCP, TCP_KEEPCNT},
};

constexpr uint64_t kPrctlOptions[] = {PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_NAME,
                                      PR_GET_NAME, PR_SET_SECCOMP};

// ptrace requests the platform uses on its stubs. Excluded: the seccomp-introspection
// requests (PTRACE_SECCOMP_GET_FILTER/METADATA) and syscall user dispatch config.
constexpr uint64_t kPtraceRequests[] = {
    PTRACE_TRACEME,
    PTRACE_PEEKTEXT,
    PTRACE_PEEKDATA,
    PTRACE_PEEKUSER,
    PTRACE_POKETEXT,
    PTRACE_POKEDATA,
    PTRACE_POKEUSER,
    PTRACE_CONT,
    PTRACE_KILL,
    PTRACE_SINGLESTEP,
    PTRACE_GETREGS,
    PTRACE_SETREGS,
    PTRACE_GETFPREGS,
    PTRACE_SETFPREGS,
    PTRACE_ATTACH,
    PTRACE_DETACH,
    PTRACE_SYSCALL,
    PTRACE_ARCH_PRCTL,
    PTRACE_SYSEMU,
    PTRACE_SYSEMU_SINGLESTEP,
    PTRACE_SETOPTIONS,
    PTRACE_GETEVENTMSG,
    PTRACE_GETSIGINFO,
    PTRACE_SETSIGINFO,
    PTRACE_GETREGSET,
    PTRACE_SETREGSET,
    PTRACE_SEIZE,
    PTRACE_INTERRUPT,
    PTRACE_LISTEN,
    PTRACE_PEEKSIGINFO,
    PTRACE_GETSIGMASK,
    PTRACE_SETSIGMASK,
    PTRACE_GET_SYSCALL_INFO,
};

}  // namespace

absl::StatusOr<ScmpFilter> NewFilter(uint32_t default_action, uint32_t badarch_action) {
  ScmpFilter filter(seccomp_init(default_action));
  if (!filter) return absl::InternalError("seccomp_init failed");
  int rc = seccomp_attr_set(filter.get(), SCMP_FLTATR_ACT_BADARCH, badarch_action);
  if (rc < 0) return ErrnoStatus("seccomp_attr_set(SCMP_FLTATR_ACT_BADARCH)", -rc);
  // Syscall numbers as a binary tree, not a list. Loading a program costs the kernel a
  // run of it per syscall number (the cache of numbers allowed whatever their arguments)
  // on top of its JIT: on the 2-vCPU test VM the sentry's 254-instruction list took
  // 0.35 ms to load, its 277-instruction tree 0.17 ms, the gofer's 0.20 -> 0.10 ms; and
  // an argument-checked call walks ~8 comparisons to its rule instead of up to ~250.
  rc = seccomp_attr_set(filter.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2);
  if (rc < 0) return ErrnoStatus("seccomp_attr_set(SCMP_FLTATR_CTL_OPTIMIZE, 2)", -rc);
  return filter;
}

absl::Status AddRule(scmp_filter_ctx ctx, int nr, std::initializer_list<scmp_arg_cmp> args,
                     uint32_t action) {
  int rc = seccomp_rule_add_array(ctx, action, nr, args.size(), args.begin());
  if (rc < 0) {
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    absl::Status st =
        ErrnoStatus(absl::StrCat("seccomp_rule_add(", name ? name : "?", " nr=", nr, ")"), -rc);
    free(name);
    return st;
  }
  return absl::OkStatus();
}

absl::StatusOr<ScmpFilter> BuildSentryFilter(uint32_t default_action, bool allow_ptrace) {
  // A syscall from a foreign ABI (int 0x80, x32) is never on our list.
  ASSIGN_OR_RETURN(ScmpFilter filter, NewFilter(default_action, default_action));
  scmp_filter_ctx ctx = filter.get();

  for (int nr : kUnconditional) RETURN_IF_ERROR(AddRule(ctx, nr));

  // fstat is newfstatat(fd, "", buf, AT_EMPTY_PATH) in glibc; a path lookup is not needed.
  RETURN_IF_ERROR(AddRule(ctx, SCMP_SYS(newfstatat),
                          {SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH)}));
  // Threads and stub processes, never new namespaces.
  RETURN_IF_ERROR(
      AddRule(ctx, SCMP_SYS(clone), {SCMP_A0(SCMP_CMP_MASKED_EQ, kCloneNamespaceFlags, 0)}));
  // The systrap platform's socketpair to each stub (host files for MapHostFile travel
  // on it as SCM_RIGHTS): connected to nothing but itself. SEQPACKET only.
  constexpr uint64_t kTypeMask = 0xf;  // the type without SOCK_CLOEXEC, SOCK_NONBLOCK
  RETURN_IF_ERROR(AddRule(
      ctx, SCMP_SYS(socketpair),
      {SCMP_A0(SCMP_CMP_EQ, AF_UNIX), SCMP_A1(SCMP_CMP_MASKED_EQ, kTypeMask, SOCK_SEQPACKET)}));
  // clone3 passes flags in memory seccomp cannot read: refuse it so glibc uses clone.
  RETURN_IF_ERROR(AddRule(ctx, SCMP_SYS(clone3), {}, SCMP_ACT_ERRNO(ENOSYS)));
  // The app's membarrier across its threads (which run in stub processes) is the host's
  // global barrier; no other command (registration changes what the host does later).
  RETURN_IF_ERROR(
      AddRule(ctx, SCMP_SYS(membarrier), {SCMP_A0(SCMP_CMP_EQ, MEMBARRIER_CMD_GLOBAL)}));
  // systrap moves a sentry thread off a vCPU it shares with its stub (its own affinity).
  RETURN_IF_ERROR(AddRule(ctx, SCMP_SYS(sched_setaffinity), {SCMP_A0(SCMP_CMP_EQ, 0)}));
  // The socket options the app's TCP connections pass through to the host socket;
  // nothing that binds to a device, marks packets or attaches a filter.
  for (const SockOpt& o : kSockOpts) {
    RETURN_IF_ERROR(AddRule(ctx, SCMP_SYS(setsockopt),
                            {SCMP_A1(SCMP_CMP_EQ, static_cast<uint64_t>(o.level)),
                             SCMP_A2(SCMP_CMP_EQ, static_cast<uint64_t>(o.name))}));
  }
  for (uint64_t cmd : kIoctls) {
    RETURN_IF_ERROR(AddRule(ctx, SCMP_SYS(ioctl), {SCMP_A1(SCMP_CMP_EQ, cmd)}));
  }
  for (uint64_t option : kPrctlOptions) {
    RETURN_IF_ERROR(AddRule(ctx, SCMP_SYS(prctl), {SCMP_A0(SCMP_CMP_EQ, option)}));
  }
  for (uint64_t request : kPtraceRequests) {
    if (allow_ptrace)
      RETURN_IF_ERROR(AddRule(ctx, SCMP_SYS(ptrace), {SCMP_A0(SCMP_CMP_EQ, request)}));
  }
  // Signals only to a positive pid (a stub): never pid 0 (our process group, which holds
  // the CLI when there is no PID namespace) or -1 (everything we may signal). pid_t is
  // 32-bit and sign-extended, and libseccomp allows one comparison per argument, so
  // 1..INT_MAX is spelled as 31 rules "upper 33 bits clear and bit k set".
  for (int bit = 0; bit < 31; ++bit) {
    const uint64_t mask = 0xFFFFFFFF80000000ull | (1ull << bit);
    for (int nr : {SCMP_SYS(kill), SCMP_SYS(tgkill)}) {
      RETURN_IF_ERROR(AddRule(ctx, nr, {SCMP_A0(SCMP_CMP_MASKED_EQ, mask, 1ull << bit)}));
    }
  }
  return filter;
}

absl::StatusOr<ScmpFilter> BuildCalibrationFilter() {
  // What Abseil's NominalCPUFrequency does (open/read/close of a /sys file, then
  // clock_gettime around nanosleeps) and what a glibc thread needs to block on a lock
  // and to exit. EPERM rather than a kill for the rest: this thread does nothing else.
  ASSIGN_OR_RETURN(ScmpFilter filter, NewFilter(SCMP_ACT_ERRNO(EPERM), SCMP_ACT_KILL_PROCESS));
  // Read-only opens only: nothing created, truncated or written.
  constexpr int kTmpfileBit = 020000000;  // O_TMPFILE less the O_DIRECTORY it includes
  constexpr int kWriteFlags = O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | kTmpfileBit;
  RETURN_IF_ERROR(
      AddRule(filter.get(), SCMP_SYS(openat), {SCMP_A2(SCMP_CMP_MASKED_EQ, kWriteFlags, 0)}));
  for (int nr :
       {SCMP_SYS(read), SCMP_SYS(close), SCMP_SYS(nanosleep), SCMP_SYS(clock_nanosleep),
        SCMP_SYS(clock_gettime), SCMP_SYS(futex), SCMP_SYS(sched_yield), SCMP_SYS(rt_sigprocmask),
        SCMP_SYS(rt_sigreturn), SCMP_SYS(restart_syscall), SCMP_SYS(madvise), SCMP_SYS(exit)}) {
    RETURN_IF_ERROR(AddRule(filter.get(), nr));
  }
  return filter;
}

absl::StatusOr<std::vector<sock_filter>> ExportBpf(const ScmpFilter& filter) {
  UniqueFd fd(memfd_create("usentry-seccomp-bpf", MFD_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("memfd_create(usentry-seccomp-bpf)");
  int rc = seccomp_export_bpf(filter.get(), fd.get());
  if (rc < 0) return ErrnoStatus("seccomp_export_bpf", -rc);
  off_t size = lseek(fd.get(), 0, SEEK_END);
  if (size < 0) return ErrnoStatus("lseek(memfd, 0, SEEK_END)");
  if (size % sizeof(sock_filter) != 0) {
    return absl::InternalError(absl::StrCat("seccomp_export_bpf wrote ", size,
                                            " bytes, not a multiple of sizeof(sock_filter)"));
  }
  std::vector<sock_filter> prog(size / sizeof(sock_filter));
  ssize_t n = pread(fd.get(), prog.data(), size, 0);
  if (n != size) return ErrnoStatus(absl::StrCat("pread(memfd, ", size, ")"));
  return prog;
}

}  // namespace usentry::sentry::confine
