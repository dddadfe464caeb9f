// The sentry allowlist, compiled to BPF and evaluated in-process on fake syscalls (not
// installed): forbidden families kill, what the sentry needs is allowed, argument
// filters (newfstatat, ioctl, clone, prctl, kill, ptrace) hold.
#include "sentry/confine/seccomp_policy.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <array>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "base/bpf/interpreter.h"
#include "gtest/gtest.h"
#include "sentry/confine/bpf_programs.h"

namespace usentry::sentry::confine {
namespace {

constexpr uint32_t kKill = SECCOMP_RET_KILL_PROCESS;
constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;

class SentryFilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<ScmpFilter> filter = BuildSentryFilter();
    ASSERT_TRUE(filter.ok()) << filter.status();
    absl::StatusOr<std::vector<sock_filter>> prog = ExportBpf(*filter);
    ASSERT_TRUE(prog.ok()) << prog.status();
    prog_ = std::move(*prog);
  }

  uint32_t Eval(int nr, std::initializer_list<uint64_t> args = {},
                uint32_t arch = AUDIT_ARCH_X86_64) const {
    seccomp_data data = {};
    data.nr = nr;
    data.arch = arch;
    data.instruction_pointer = 0x401000;
    int i = 0;
    for (uint64_t a : args) data.args[i++] = a;
    return bpf::EvaluateSeccomp(prog_, data);
  }

  std::vector<sock_filter> prog_;
};

// The app's data on donated sockets moves with sendmsg/recvmsg; nothing else that could
// aim, bind or filter them.
TEST_F(SentryFilterTest, DonatedSocketsCannotBeAimedElsewhere) {
  EXPECT_EQ(Eval(__NR_sendto, {5, 0x1000, 10, 0, 0, 0}), kKill);
  EXPECT_EQ(Eval(__NR_sendto, {5, 0x1000, 10, 0, 0x2000, 16}), kKill);
  EXPECT_EQ(Eval(__NR_getsockname, {5, 0x1000, 0x2000}), kKill);
  EXPECT_EQ(Eval(__NR_shutdown, {5, SHUT_WR}), kAllow);
  EXPECT_EQ(Eval(__NR_setsockopt, {5, IPPROTO_TCP, TCP_NODELAY, 0x1000, 4}), kAllow);
  EXPECT_EQ(Eval(__NR_setsockopt, {5, SOL_SOCKET, SO_KEEPALIVE, 0x1000, 4}), kAllow);
  for (int opt : {SO_BINDTODEVICE, SO_MARK, SO_REUSEADDR, SO_ATTACH_FILTER}) {
    EXPECT_EQ(Eval(__NR_setsockopt, {5, SOL_SOCKET, static_cast<uint64_t>(opt), 0x1000, 4}), kKill)
        << opt;
  }
  EXPECT_EQ(Eval(__NR_getsockopt, {5, SOL_SOCKET, SO_PEERCRED, 0x1000, 0x2000}), kKill);
}

TEST_F(SentryFilterTest, ForbiddenFamiliesKill) {
  for (int nr : {__NR_open,
                 __NR_openat,
                 __NR_openat2,
                 __NR_creat,
                 __NR_socket,
                 __NR_connect,
                 __NR_bind,
                 __NR_listen,
                 __NR_accept4,
                 __NR_socketpair,
                 __NR_execve,
                 __NR_execveat,
                 __NR_mount,
                 __NR_umount2,
                 __NR_chroot,
                 __NR_pivot_root,
                 __NR_unshare,
                 __NR_setns,
                 __NR_bpf,
                 __NR_kexec_load,
                 __NR_kexec_file_load,
                 __NR_init_module,
                 __NR_finit_module,
                 __NR_delete_module,
                 __NR_setuid,
                 __NR_setgroups,
                 __NR_capset,
                 __NR_keyctl,
                 __NR_add_key,
                 __NR_userfaultfd,
                 __NR_perf_event_open,
                 __NR_io_uring_setup,
                 __NR_process_vm_writev,
                 __NR_mkdir,
                 __NR_unlink,
                 __NR_rename,
                 __NR_symlink,
                 __NR_chmod,
                 __NR_stat,
                 __NR_readlink,
                 __NR_reboot,
                 __NR_iopl,
                 __NR_ioperm,
                 __NR_mknod,
                 __NR_open_by_handle_at,
                 __NR_name_to_handle_at,
                 __NR_fsopen,
                 __NR_move_mount,
                 __NR_open_tree,
                 __NR_pidfd_getfd}) {
    EXPECT_EQ(Eval(nr), kKill) << "syscall " << nr;
  }
}

TEST_F(SentryFilterTest, WhatTheSentryNeedsIsAllowed) {
  for (int nr : {__NR_getpid, __NR_read, __NR_write, __NR_close, __NR_mmap, __NR_munmap,
                 __NR_mprotect, __NR_memfd_create, __NR_futex, __NR_wait4, __NR_sendmsg,
                 __NR_recvmsg, __NR_exit_group, __NR_rt_sigreturn, __NR_epoll_wait, __NR_getrandom,
                 __NR_clock_gettime, __NR_fstat, __NR_getdents64}) {
    EXPECT_EQ(Eval(nr), kAllow) << "syscall " << nr;
  }
}

// systrap's per-stub socketpairs; no other kind of socket.
TEST_F(SentryFilterTest, SocketpairOnlyUnixSeqpacket) {
  EXPECT_EQ(Eval(__NR_socketpair, {AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, 0x1000}), kAllow);
  EXPECT_EQ(Eval(__NR_socketpair, {AF_UNIX, SOCK_STREAM, 0, 0x1000}), kKill);
  EXPECT_EQ(Eval(__NR_socketpair, {AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, 0x1000}), kKill);
  EXPECT_EQ(Eval(__NR_socketpair, {AF_INET, SOCK_SEQPACKET, 0, 0x1000}), kKill);
  EXPECT_EQ(Eval(__NR_socketpair, {AF_NETLINK, SOCK_SEQPACKET, 0, 0x1000}), kKill);
}

TEST_F(SentryFilterTest, NewfstatatOnlyWithEmptyPath) {
  EXPECT_EQ(Eval(__NR_newfstatat, {static_cast<uint64_t>(AT_FDCWD), 0x1000, 0x2000, 0}), kKill);
  EXPECT_EQ(
      Eval(__NR_newfstatat, {static_cast<uint64_t>(AT_FDCWD), 0x1000, 0x2000, AT_SYMLINK_NOFOLLOW}),
      kKill);
  EXPECT_EQ(Eval(__NR_newfstatat, {3, 0x1000, 0x2000, AT_EMPTY_PATH}), kAllow);
}

TEST_F(SentryFilterTest, OnlyTerminalIoctlsAndNeverTiocsti) {
  EXPECT_EQ(Eval(__NR_ioctl, {0, TIOCSTI, 0x1000}), kKill);
  EXPECT_EQ(Eval(__NR_ioctl, {0, TIOCSCTTY, 0}), kKill);
  EXPECT_EQ(Eval(__NR_ioctl, {0, TIOCSTI | (1ull << 32), 0x1000}), kKill);
  for (uint64_t cmd :
       {TCGETS, TCSETS, TCSETSW, TCSETSF, TIOCGWINSZ, TIOCSWINSZ, TIOCGPGRP, TIOCSPGRP, FIONREAD}) {
    EXPECT_EQ(Eval(__NR_ioctl, {1, cmd, 0x1000}), kAllow) << std::hex << cmd;
  }
}

TEST_F(SentryFilterTest, DonatedSocketsGetShutdownAndTcpOptionsOnly) {
  EXPECT_EQ(Eval(__NR_shutdown, {5, SHUT_WR}), kAllow);
  EXPECT_EQ(Eval(__NR_setsockopt, {5, SOL_SOCKET, SO_KEEPALIVE, 0x1000, 4}), kAllow);
  for (uint64_t opt : {TCP_NODELAY, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT}) {
    EXPECT_EQ(Eval(__NR_setsockopt, {5, IPPROTO_TCP, opt, 0x1000, 4}), kAllow) << opt;
  }
  EXPECT_EQ(Eval(__NR_setsockopt, {5, SOL_SOCKET, SO_BINDTODEVICE, 0x1000, 4}), kKill);
  EXPECT_EQ(Eval(__NR_setsockopt, {5, SOL_SOCKET, SO_ATTACH_FILTER, 0x1000, 16}), kKill);
  EXPECT_EQ(Eval(__NR_setsockopt, {5, IPPROTO_TCP, TCP_ULP, 0x1000, 4}), kKill);
  EXPECT_EQ(Eval(__NR_getsockopt, {5, SOL_SOCKET, SO_ERROR, 0x1000, 0x2000}), kKill);
}

TEST_F(SentryFilterTest, CloneWithoutNamespacesOnly) {
  constexpr uint64_t kThreadFlags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
                                    CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS |
                                    CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
  EXPECT_EQ(Eval(__NR_clone, {kThreadFlags}), kAllow);
  EXPECT_EQ(Eval(__NR_clone, {SIGCHLD}), kAllow);
  for (uint64_t ns : {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC,
                      CLONE_NEWUTS, CLONE_NEWCGROUP}) {
    EXPECT_EQ(Eval(__NR_clone, {SIGCHLD | ns}), kKill) << std::hex << ns;
  }
  // glibc falls back to clone when clone3 is ENOSYS.
  EXPECT_EQ(Eval(__NR_clone3, {0x1000, 88}), SECCOMP_RET_ERRNO | ENOSYS);
}

// systrap moves a sentry thread off a vCPU it shares with its stub: its own affinity.
TEST_F(SentryFilterTest, SchedSetaffinityOfTheCallingThreadOnly) {
  EXPECT_EQ(Eval(__NR_sched_setaffinity, {0, 128, 0x1000}), kAllow);
  EXPECT_EQ(Eval(__NR_sched_setaffinity, {42, 128, 0x1000}), kKill);
  EXPECT_EQ(Eval(__NR_sched_setaffinity, {1ull << 32, 128, 0x1000}), kKill);
  EXPECT_EQ(Eval(__NR_sched_setscheduler, {0, 0, 0x1000}), kKill);
}

TEST_F(SentryFilterTest, PrctlOptions) {
  EXPECT_EQ(Eval(__NR_prctl, {PR_SET_PDEATHSIG, SIGKILL}), kAllow);
  EXPECT_EQ(Eval(__NR_prctl, {PR_SET_NAME, 0x1000}), kAllow);
  EXPECT_EQ(Eval(__NR_prctl, {PR_SET_NO_NEW_PRIVS, 1}), kAllow);
  EXPECT_EQ(Eval(__NR_prctl, {PR_SET_DUMPABLE, 0}), kKill);
  EXPECT_EQ(Eval(__NR_prctl, {PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE}), kKill);
  EXPECT_EQ(Eval(__NR_prctl, {PR_SET_MM, 0}), kKill);
}

TEST_F(SentryFilterTest, SignalsOnlyToPositivePids) {
  EXPECT_EQ(Eval(__NR_kill, {42, SIGKILL}), kAllow);
  EXPECT_EQ(Eval(__NR_tgkill, {42, 43, SIGSTOP}), kAllow);
  EXPECT_EQ(Eval(__NR_kill, {0, SIGKILL}), kKill);
  EXPECT_EQ(Eval(__NR_kill, {static_cast<uint64_t>(-1), SIGKILL}), kKill);
  EXPECT_EQ(Eval(__NR_kill, {static_cast<uint64_t>(-42), SIGKILL}), kKill);
  EXPECT_EQ(Eval(__NR_kill, {0xffffffffull, SIGKILL}), kKill);  // -1 without sign extension
}

TEST_F(SentryFilterTest, PtraceRequests) {
  for (uint64_t req : {PTRACE_SYSEMU, PTRACE_GETREGS, PTRACE_SETREGS, PTRACE_CONT, PTRACE_GETREGSET,
                       PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_GETSIGINFO}) {
    EXPECT_EQ(Eval(__NR_ptrace, {req, 5}), kAllow) << req;
  }
  EXPECT_EQ(Eval(__NR_ptrace, {PTRACE_SECCOMP_GET_FILTER, 5}), kKill);
}

// Under systrap the sentry never ptraces: the request list is left out.
TEST(SentryFilterWithoutPtraceTest, EveryPtraceRequestKills) {
  absl::StatusOr<ScmpFilter> filter = BuildSentryFilter(SCMP_ACT_KILL_PROCESS, false);
  ASSERT_TRUE(filter.ok()) << filter.status();
  absl::StatusOr<std::vector<sock_filter>> prog = ExportBpf(*filter);
  ASSERT_TRUE(prog.ok()) << prog.status();
  for (uint64_t req : {PTRACE_SYSEMU, PTRACE_GETREGS, PTRACE_CONT, PTRACE_TRACEME, PTRACE_SEIZE}) {
    seccomp_data data = {};
    data.nr = __NR_ptrace;
    data.arch = AUDIT_ARCH_X86_64;
    data.args[0] = req;
    data.args[1] = 5;
    EXPECT_EQ(bpf::EvaluateSeccomp(*prog, data), kKill) << req;
  }
}

// Every allowlist the policy builds, with the copy of it compiled into the binary
// (bpf_programs.h; none for the debug variant, which is only ever built at run time).
struct BuiltFilter {
  const char* name;
  absl::StatusOr<ScmpFilter> filter;
  absl::Span<const sock_filter> built_in;
};
std::vector<BuiltFilter> EveryFilter() {
  std::vector<BuiltFilter> out;
  out.push_back(
      {"sentry", BuildSentryFilter(SCMP_ACT_KILL_PROCESS, false), SentryBpfProgram(false)});
  out.push_back(
      {"sentry+ptrace", BuildSentryFilter(SCMP_ACT_KILL_PROCESS, true), SentryBpfProgram(true)});
  out.push_back({"sentry (debug)", BuildSentryFilter(SCMP_ACT_TRAP, true), {}});
  out.push_back({"gofer", BuildGoferFilter(SCMP_ACT_KILL_PROCESS), GoferBpfProgram()});
  out.push_back({"netgate", BuildNetgateFilter(SCMP_ACT_KILL_PROCESS), NetgateBpfProgram()});
  out.push_back({"calibration", BuildCalibrationFilter(), CalibrationBpfProgram()});
  return out;
}

// The programs compiled into the binary at build time are, instruction for instruction,
// what this libseccomp makes of the rules now: a rule changed without the generator
// rerunning, or a libseccomp upgrade under an old build, fails here.
TEST(BpfProgramsTest, BuiltInProgramsAreWhatLibseccompBuilds) {
  for (const BuiltFilter& c : EveryFilter()) {
    if (c.built_in.empty()) continue;  // built at run time only
    ASSERT_TRUE(c.filter.ok()) << c.name << ": " << c.filter.status();
    absl::StatusOr<std::vector<sock_filter>> prog = ExportBpf(*c.filter);
    ASSERT_TRUE(prog.ok()) << prog.status();
    ASSERT_EQ(c.built_in.size(), prog->size()) << c.name;
    for (size_t i = 0; i < c.built_in.size(); ++i) {
      const sock_filter& a = c.built_in[i];
      const sock_filter& b = (*prog)[i];
      EXPECT_TRUE(a.code == b.code && a.jt == b.jt && a.jf == b.jf && a.k == b.k)
          << c.name << " instruction " << i;
    }
  }
  // And the two differ where they should: only the ptrace variant allows PTRACE_SYSEMU.
  seccomp_data data = {};
  data.nr = __NR_ptrace;
  data.arch = AUDIT_ARCH_X86_64;
  data.args[0] = PTRACE_SYSEMU;
  data.args[1] = 5;
  EXPECT_EQ(bpf::EvaluateSeccomp(SentryBpfProgram(true), data), SECCOMP_RET_ALLOW);
  EXPECT_EQ(bpf::EvaluateSeccomp(SentryBpfProgram(false), data), SECCOMP_RET_KILL_PROCESS);

  // The helpers' programs: each allows its job and nothing beside it.
  auto eval = [](absl::Span<const sock_filter> prog, int nr, std::vector<uint64_t> args) {
    seccomp_data d = {};
    d.nr = nr;
    d.arch = AUDIT_ARCH_X86_64;
    for (size_t i = 0; i < args.size(); ++i) d.args[i] = args[i];
    return bpf::EvaluateSeccomp(prog, d);
  };
  EXPECT_EQ(eval(GoferBpfProgram(), __NR_openat2, {}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(eval(GoferBpfProgram(), __NR_socket, {AF_INET, SOCK_STREAM}), SECCOMP_RET_KILL_PROCESS);
  // The gofer moves itself to its client's CPU (base/cpu_pin.h), never another task.
  EXPECT_EQ(eval(GoferBpfProgram(), __NR_sched_setaffinity, {0, 128, 0x1000}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(eval(GoferBpfProgram(), __NR_sched_setaffinity, {1, 128, 0x1000}),
            SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(eval(NetgateBpfProgram(), __NR_socket, {AF_INET, SOCK_STREAM}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(eval(NetgateBpfProgram(), __NR_socket, {AF_NETLINK, SOCK_RAW}),
            SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(eval(NetgateBpfProgram(), __NR_openat, {}), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(eval(CalibrationBpfProgram(), __NR_openat, {0, 0, O_RDONLY}), SECCOMP_RET_ALLOW);
  EXPECT_EQ(eval(CalibrationBpfProgram(), __NR_openat, {0, 0, O_WRONLY | O_CREAT}),
            SECCOMP_RET_ERRNO | EPERM);
  EXPECT_EQ(eval(CalibrationBpfProgram(), __NR_write, {2}), SECCOMP_RET_ERRNO | EPERM);
}

// Every program is built as a binary tree of syscall numbers (NewFilter), which loads in
// half the time of libseccomp's default list. The tree must decide every call as the
// list would: every number (and its x32 alias, and another ABI) with arguments that
// meet and miss the rules' comparisons.
TEST(BpfProgramsTest, TheTreeDecidesEveryCallAsTheListWould) {
  // Values the rules compare against (families, flags, requests, fds, pids), and ones
  // no rule names.
  const std::vector<std::array<uint64_t, 6>> arg_sets = {
      {0, 0, 0, 0, 0, 0},
      {1, 2, 3, 4, 5, 6},
      {~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull},
      {AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, 0, 0, 0},
      {AF_INET, SOCK_STREAM, IPPROTO_TCP, 0, 0, 0},
      {AF_INET6, SOCK_DGRAM, 0, 0, 0, 0},
      {AF_NETLINK, SOCK_RAW, 0, 0, 0, 0},
      {0, TCGETS, 0, 0, 0, 0},
      {0, TIOCSTI, 0, 0, 0, 0},
      {CLONE_VM | CLONE_THREAD | CLONE_SIGHAND, 0, 0, 0, 0, 0},
      {CLONE_NEWUSER, 0, 0, 0, 0, 0},
      {PR_SET_NAME, 0, 0, 0, 0, 0},
      {PR_SET_SECCOMP, 0, 0, 0, 0, 0},
      {PTRACE_SYSEMU, 5, 0, 0, 0, 0},
      {PTRACE_POKEUSER, 5, 0, 0, 0, 0},
      {0, 128, 0x1000, 0, 0, 0},
      {static_cast<uint64_t>(AT_FDCWD), 0, O_RDONLY, 0, 0, 0},
      {0, 0, O_WRONLY | O_CREAT, 0, 0, 0},
      {3, 0, 0, AT_EMPTY_PATH, 0, 0},
      {7, IPPROTO_TCP, TCP_NODELAY, 0, 0, 0},
      {static_cast<uint64_t>(-1), SIGKILL, 0, 0, 0, 0},
  };
  for (BuiltFilter& c : EveryFilter()) {
    ASSERT_TRUE(c.filter.ok()) << c.name << ": " << c.filter.status();
    absl::StatusOr<std::vector<sock_filter>> tree = ExportBpf(*c.filter);
    ASSERT_TRUE(tree.ok()) << tree.status();
    ASSERT_EQ(seccomp_attr_set(c.filter->get(), SCMP_FLTATR_CTL_OPTIMIZE, 1), 0) << c.name;
    absl::StatusOr<std::vector<sock_filter>> list = ExportBpf(*c.filter);
    ASSERT_TRUE(list.ok()) << list.status();
    ASSERT_FALSE(tree->size() == list->size() &&
                 memcmp(tree->data(), list->data(), tree->size() * sizeof(sock_filter)) == 0)
        << c.name << ": the two layouts came out the same";
    int differing = 0;
    for (uint32_t arch : {uint32_t{AUDIT_ARCH_X86_64}, uint32_t{AUDIT_ARCH_I386}}) {
      for (int nr = 0; nr < 1024; ++nr) {
        for (int x32 : {0, 0x40000000}) {
          for (const auto& args : arg_sets) {
            seccomp_data data = {};
            data.nr = nr | x32;
            data.arch = arch;
            data.instruction_pointer = 0x401000;
            for (size_t i = 0; i < args.size(); ++i) data.args[i] = args[i];
            const uint32_t from_tree = bpf::EvaluateSeccomp(*tree, data);
            const uint32_t from_list = bpf::EvaluateSeccomp(*list, data);
            if (from_tree != from_list && ++differing <= 5) {
              ADD_FAILURE() << c.name << ": nr " << data.nr << " arch " << arch << " args[0..2] "
                            << args[0] << " " << args[1] << " " << args[2] << ": tree 0x"
                            << std::hex << from_tree << ", list 0x" << from_list;
            }
          }
        }
      }
    }
    EXPECT_EQ(differing, 0) << c.name;
  }
}

TEST_F(SentryFilterTest, OtherAbisKill) {
  EXPECT_EQ(Eval(__NR_getpid, {}, AUDIT_ARCH_I386), kKill);
  EXPECT_EQ(Eval(__NR_getpid | 0x40000000 /* __X32_SYSCALL_BIT */), kKill);
}

TEST(SentryFilterDebugTest, DebugModeTrapsInsteadOfKilling) {
  absl::StatusOr<ScmpFilter> filter = BuildSentryFilter(SCMP_ACT_TRAP);
  ASSERT_TRUE(filter.ok()) << filter.status();
  absl::StatusOr<std::vector<sock_filter>> prog = ExportBpf(*filter);
  ASSERT_TRUE(prog.ok()) << prog.status();
  seccomp_data data = {};
  data.arch = AUDIT_ARCH_X86_64;
  data.nr = __NR_openat;
  EXPECT_EQ(bpf::EvaluateSeccomp(*prog, data), SECCOMP_RET_TRAP);
  data.nr = __NR_getpid;
  EXPECT_EQ(bpf::EvaluateSeccomp(*prog, data), SECCOMP_RET_ALLOW);
}

}  // namespace
}  // namespace usentry::sentry::confine
