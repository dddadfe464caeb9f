// Evaluates the ptrace stub's seccomp filter in-process against fake syscalls.
#include "platform/ptrace/stub_filter.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include "base/bpf/interpreter.h"
#include "gtest/gtest.h"

namespace usentry::platform::ptrace {
namespace {

constexpr uint64_t kStub = 0x7fffffffe000;

seccomp_data Call(int nr, uint64_t ip, uint32_t arch = AUDIT_ARCH_X86_64) {
  seccomp_data d{};
  d.nr = nr;
  d.arch = arch;
  d.instruction_pointer = ip;
  return d;
}

class StubFilterTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(StubFilterTest, AllowsStubCallsFromTheStubPage) {
  const uint64_t stub = GetParam();
  absl::StatusOr<std::vector<sock_filter>> f = BuildStubFilter(stub);
  ASSERT_TRUE(f.ok()) << f.status();
  for (int nr :
       {SYS_mmap, SYS_munmap, SYS_mprotect, SYS_exit, SYS_exit_group, SYS_getpid, SYS_kill}) {
    EXPECT_EQ(bpf::EvaluateSeccomp(*f, Call(nr, stub + 0x42)), SECCOMP_RET_ALLOW) << nr;
    EXPECT_EQ(bpf::EvaluateSeccomp(*f, Call(nr, stub)), SECCOMP_RET_ALLOW) << nr;
    EXPECT_EQ(bpf::EvaluateSeccomp(*f, Call(nr, stub + 4095)), SECCOMP_RET_ALLOW) << nr;
  }
}

TEST_P(StubFilterTest, KillsOtherCallsFromTheStubPage) {
  const uint64_t stub = GetParam();
  absl::StatusOr<std::vector<sock_filter>> f = BuildStubFilter(stub);
  ASSERT_TRUE(f.ok()) << f.status();
  for (int nr : {SYS_read, SYS_write, SYS_openat, SYS_execve, SYS_ptrace, SYS_clone, SYS_fork,
                 SYS_socket, SYS_tgkill, SYS_mremap, SYS_process_vm_writev, 0x3ff}) {
    EXPECT_EQ(bpf::EvaluateSeccomp(*f, Call(nr, stub + 0x42)), SECCOMP_RET_KILL_PROCESS) << nr;
  }
}

TEST_P(StubFilterTest, AllowsOnlyTheThreadCloneFromTheStubPage) {
  const uint64_t stub = GetParam();
  absl::StatusOr<std::vector<sock_filter>> f = BuildStubFilter(stub);
  ASSERT_TRUE(f.ok()) << f.status();
  seccomp_data d = Call(SYS_clone, stub + 0x42);
  d.args[0] = kStubThreadCloneFlags;
  EXPECT_EQ(bpf::EvaluateSeccomp(*f, d), SECCOMP_RET_ALLOW);
  for (uint64_t flags :
       {uint64_t{SIGCHLD}, uint64_t{kStubThreadCloneFlags | CLONE_NEWUSER},
        uint64_t{kStubThreadCloneFlags} | (uint64_t{1} << 32), uint64_t{CLONE_VM | CLONE_VFORK}}) {
    d.args[0] = flags;
    EXPECT_EQ(bpf::EvaluateSeccomp(*f, d), SECCOMP_RET_KILL_PROCESS) << std::hex << flags;
  }
  d = Call(SYS_clone, 0x400000);
  d.args[0] = kStubThreadCloneFlags;
  EXPECT_EQ(bpf::EvaluateSeccomp(*f, d), SECCOMP_RET_KILL_PROCESS);
}

TEST_P(StubFilterTest, KillsEverythingFromAppAddresses) {
  const uint64_t stub = GetParam();
  absl::StatusOr<std::vector<sock_filter>> f = BuildStubFilter(stub);
  ASSERT_TRUE(f.ok()) << f.status();
  for (uint64_t ip : {uint64_t{0x400000}, stub - 1, stub - 4096, stub + 4096, stub + 0x100000000,
                      stub - 0x100000000, uint64_t{0xffffffffff600000}, uint64_t{0}}) {
    EXPECT_EQ(bpf::EvaluateSeccomp(*f, Call(SYS_getpid, ip)), SECCOMP_RET_KILL_PROCESS)
        << std::hex << ip;
    EXPECT_EQ(bpf::EvaluateSeccomp(*f, Call(SYS_mmap, ip)), SECCOMP_RET_KILL_PROCESS)
        << std::hex << ip;
  }
}

TEST_P(StubFilterTest, KillsX32AndWrongArch) {
  const uint64_t stub = GetParam();
  absl::StatusOr<std::vector<sock_filter>> f = BuildStubFilter(stub);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(bpf::EvaluateSeccomp(*f, Call(0x40000000 | SYS_mmap, stub + 8)),
            SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(bpf::EvaluateSeccomp(*f, Call(0x40000000 | SYS_getpid, stub + 8)),
            SECCOMP_RET_KILL_PROCESS);
  // i386 mmap2 is 192; i386 getpid is 20 (x86-64 getpid is 39).
  EXPECT_EQ(bpf::EvaluateSeccomp(*f, Call(20, stub + 8, AUDIT_ARCH_I386)),
            SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(bpf::EvaluateSeccomp(*f, Call(SYS_mmap, stub + 8, AUDIT_ARCH_I386)),
            SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(bpf::EvaluateSeccomp(*f, Call(SYS_mmap, stub + 8, AUDIT_ARCH_AARCH64)),
            SECCOMP_RET_KILL_PROCESS);
}

INSTANTIATE_TEST_SUITE_P(Addresses, StubFilterTest,
                         ::testing::Values(kStub, uint64_t{0x7ff7fffff000},
                                           uint64_t{0x7ff000000000}, uint64_t{0x12345000}));

TEST(StubFilterBuildTest, RejectsUnalignedPage) {
  EXPECT_FALSE(BuildStubFilter(kStub + 1).ok());
  EXPECT_FALSE(BuildStubFilter(0).ok());
}

}  // namespace
}  // namespace usentry::platform::ptrace
