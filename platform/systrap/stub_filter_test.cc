// Evaluates the systrap stub's seccomp filter in-process against fake syscalls.
#include "platform/systrap/stub_filter.h"

#include <asm/prctl.h>
#include <linux/audit.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <array>

#include "base/bpf/interpreter.h"
#include "gtest/gtest.h"
#include "platform/systrap/stub_code_unsafe.h"

namespace usentry::platform::systrap {
namespace {

seccomp_data Call(int nr, uint64_t ip, std::array<uint64_t, 6> args = {},
                  uint32_t arch = AUDIT_ARCH_X86_64) {
  seccomp_data d{};
  d.nr = nr;
  d.arch = arch;
  d.instruction_pointer = ip;
  for (int i = 0; i < 6; ++i) d.args[i] = args[i];
  return d;
}

class StubFilterTest : public ::testing::TestWithParam<uint64_t> {
 protected:
  uint32_t Eval(const seccomp_data& d) {
    absl::StatusOr<std::vector<sock_filter>> f = BuildStubFilter(GetParam());
    EXPECT_TRUE(f.ok()) << f.status();
    return f.ok() ? bpf::EvaluateSeccomp(*f, d) : 0;
  }
};

TEST_P(StubFilterTest, AppSyscallsTrapWhateverTheirNumberOrArch) {
  const uint64_t code = GetParam();
  for (uint64_t ip : {uint64_t{0x400000}, code - 1, code + kCodeSize, uint64_t{0x10000},
                      code - 0x100000000, uint64_t{0xffffffffff600000}}) {
    for (int nr : {SYS_getpid, SYS_mmap, SYS_execve, SYS_ptrace, 0x40000000 | SYS_read, 0x3ff}) {
      EXPECT_EQ(Eval(Call(nr, ip)), SECCOMP_RET_TRAP) << std::hex << ip << " " << nr;
    }
    EXPECT_EQ(Eval(Call(20, ip, {}, AUDIT_ARCH_I386)), SECCOMP_RET_TRAP) << std::hex << ip;
  }
}

TEST_P(StubFilterTest, AllowsTheStubsOwnCallsFromItsCode) {
  const uint64_t code = GetParam();
  for (uint64_t ip : {code, code + 0x42, code + kCodeSize - 1}) {
    for (int nr : {SYS_munmap, SYS_mmap, SYS_mprotect, SYS_close, SYS_recvmsg, SYS_gettid,
                   SYS_sigaltstack, SYS_rt_sigreturn, SYS_exit, SYS_exit_group, SYS_sched_yield}) {
      EXPECT_EQ(Eval(Call(nr, ip)), SECCOMP_RET_ALLOW) << nr;
    }
    EXPECT_EQ(Eval(Call(SYS_futex, ip, {0, FUTEX_WAIT})), SECCOMP_RET_ALLOW);
    EXPECT_EQ(Eval(Call(SYS_futex, ip, {0, FUTEX_WAKE})), SECCOMP_RET_ALLOW);
    EXPECT_EQ(Eval(Call(SYS_clone, ip, {CLONE_PARENT})), SECCOMP_RET_ALLOW);
    EXPECT_EQ(Eval(Call(SYS_clone, ip, {kThreadCloneFlags})), SECCOMP_RET_ALLOW);
    EXPECT_EQ(Eval(Call(SYS_prctl, ip, {PR_SET_PDEATHSIG, SIGKILL})), SECCOMP_RET_ALLOW);
    EXPECT_EQ(Eval(Call(SYS_arch_prctl, ip, {ARCH_SET_FS})), SECCOMP_RET_ALLOW);
    EXPECT_EQ(Eval(Call(SYS_arch_prctl, ip, {ARCH_SET_GS})), SECCOMP_RET_ALLOW);
  }
}

TEST_P(StubFilterTest, KillsEverythingElseFromItsCode) {
  const uint64_t ip = GetParam() + 0x80;
  for (int nr : {SYS_read, SYS_write, SYS_openat, SYS_execve, SYS_ptrace, SYS_fork, SYS_socket,
                 SYS_kill, SYS_tgkill, SYS_mremap, SYS_process_vm_writev, SYS_seccomp, SYS_sendmsg,
                 0x3ff, 0x40000000 | SYS_mmap}) {
    EXPECT_EQ(Eval(Call(nr, ip)), SECCOMP_RET_KILL_PROCESS) << nr;
  }
  // The allowed calls only with the stub's own arguments.
  EXPECT_EQ(Eval(Call(SYS_futex, ip, {0, FUTEX_REQUEUE})), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(Eval(Call(SYS_futex, ip, {0, uint64_t{1} << 32 | FUTEX_WAIT})),
            SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(Eval(Call(SYS_clone, ip, {SIGCHLD})), SECCOMP_RET_KILL_PROCESS);  // plain fork
  EXPECT_EQ(Eval(Call(SYS_clone, ip, {CLONE_NEWUSER | CLONE_PARENT})), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(Eval(Call(SYS_clone, ip, {kThreadCloneFlags | CLONE_NEWNS})), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(Eval(Call(SYS_prctl, ip, {PR_SET_SECCOMP})), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(Eval(Call(SYS_prctl, ip, {PR_SET_DUMPABLE, 1})), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(Eval(Call(SYS_arch_prctl, ip, {ARCH_GET_FS})), SECCOMP_RET_KILL_PROCESS);
  // Foreign ABIs from the stub's code are never the stub's.
  EXPECT_EQ(Eval(Call(SYS_mmap, ip, {}, AUDIT_ARCH_I386)), SECCOMP_RET_KILL_PROCESS);
}

INSTANTIATE_TEST_SUITE_P(Addresses, StubFilterTest,
                         ::testing::Values(uint64_t{0x7ffe00000000}, uint64_t{0x7ff100000000},
                                           uint64_t{0x7ffffffec000}, uint64_t{0x12344000}));

TEST(StubFilterBuildTest, RejectsUnalignedAddress) {
  EXPECT_FALSE(BuildStubFilter(0x7ffe00000001).ok());
  EXPECT_FALSE(BuildStubFilter(0).ok());
}

}  // namespace
}  // namespace usentry::platform::systrap
