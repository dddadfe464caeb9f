// Tests for the classic-BPF seccomp evaluator, including a libseccomp-exported filter.
#include "base/bpf/interpreter.h"

#include <linux/audit.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

#include "base/bpf/seccomp_bpf.h"
#include "gtest/gtest.h"

namespace usentry::bpf {
namespace {

seccomp_data Data(int nr, uint64_t ip = 0, std::vector<uint64_t> args = {}) {
  seccomp_data d{};
  d.nr = nr;
  d.arch = AUDIT_ARCH_X86_64;
  d.instruction_pointer = ip;
  for (size_t i = 0; i < args.size() && i < 6; ++i) d.args[i] = args[i];
  return d;
}

TEST(InterpreterTest, ReturnsConstant) {
  std::vector<sock_filter> p = {Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  EXPECT_EQ(EvaluateSeccomp(p, Data(1)), SECCOMP_RET_ALLOW);
}

TEST(InterpreterTest, LoadsFieldsAndReturnsA) {
  seccomp_data d = Data(39, 0x1122334455667788, {0xaaaabbbbccccdddd});
  auto run = [&](uint32_t off) {
    std::vector<sock_filter> p = {Stmt(BPF_LD | BPF_W | BPF_ABS, off), Stmt(BPF_RET | BPF_A, 0)};
    return EvaluateSeccomp(p, d);
  };
  EXPECT_EQ(run(kNrOffset), 39u);
  EXPECT_EQ(run(kArchOffset), AUDIT_ARCH_X86_64);
  EXPECT_EQ(run(kIpOffset), 0x55667788u);
  EXPECT_EQ(run(kIpOffset + 4), 0x11223344u);
  EXPECT_EQ(run(ArgOffset(0)), 0xccccddddu);
  EXPECT_EQ(run(ArgOffset(0) + 4), 0xaaaabbbbu);
}

TEST(InterpreterTest, RejectsBadLoads) {
  for (uint32_t off : {uint32_t{sizeof(seccomp_data)}, 2u, 0x1000u}) {
    std::vector<sock_filter> p = {Stmt(BPF_LD | BPF_W | BPF_ABS, off), Stmt(BPF_RET | BPF_A, 0)};
    EXPECT_EQ(EvaluateSeccomp(p, Data(0)), kBpfInvalidProgram) << off;
    EXPECT_FALSE(RunSeccompFilter(p, Data(0)).ok());
  }
  std::vector<sock_filter> half = {Stmt(BPF_LD | BPF_H | BPF_ABS, 0), Stmt(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(EvaluateSeccomp(half, Data(0)), kBpfInvalidProgram);
  std::vector<sock_filter> mem = {Stmt(BPF_LD | BPF_MEM, 3), Stmt(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(EvaluateSeccomp(mem, Data(0)), kBpfInvalidProgram);
  std::vector<sock_filter> mem_oob = {Stmt(BPF_ST, 16), Stmt(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(EvaluateSeccomp(mem_oob, Data(0)), kBpfInvalidProgram);
}

TEST(InterpreterTest, RejectsStructuralErrors) {
  EXPECT_EQ(EvaluateSeccomp({}, Data(0)), kBpfInvalidProgram);
  // Falls off the end.
  std::vector<sock_filter> no_ret = {Stmt(BPF_LD | BPF_IMM, 1)};
  absl::StatusOr<uint32_t> r = RunSeccompFilter(no_ret, Data(0));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("without RET"), std::string::npos);
  // Jumps past the end (either branch, or JA).
  std::vector<sock_filter> jump = {Jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 5),
                                   Stmt(BPF_RET | BPF_K, 1)};
  EXPECT_EQ(EvaluateSeccomp(jump, Data(0)), kBpfInvalidProgram);
  std::vector<sock_filter> ja = {Stmt(BPF_JMP | BPF_JA, 1), Stmt(BPF_RET | BPF_K, 1)};
  EXPECT_EQ(EvaluateSeccomp(ja, Data(0)), kBpfInvalidProgram);
  // Unknown opcode, and opcodes seccomp does not allow.
  std::vector<sock_filter> unknown = {Stmt(0xffff, 0), Stmt(BPF_RET | BPF_K, 1)};
  EXPECT_EQ(EvaluateSeccomp(unknown, Data(0)), kBpfInvalidProgram);
  std::vector<sock_filter> ind = {Stmt(BPF_LD | BPF_W | BPF_IND, 0), Stmt(BPF_RET | BPF_K, 1)};
  EXPECT_EQ(EvaluateSeccomp(ind, Data(0)), kBpfInvalidProgram);
  std::vector<sock_filter> div0 = {Stmt(BPF_ALU | BPF_DIV | BPF_K, 0), Stmt(BPF_RET | BPF_K, 1)};
  EXPECT_EQ(EvaluateSeccomp(div0, Data(0)), kBpfInvalidProgram);
}

TEST(InterpreterTest, AluAndScratch) {
  std::vector<sock_filter> p = {
      Stmt(BPF_LD | BPF_IMM, 6),
      Stmt(BPF_ALU | BPF_MUL | BPF_K, 7),  // 42
      Stmt(BPF_ST, 0),
      Stmt(BPF_LDX | BPF_IMM, 2),
      Stmt(BPF_ALU | BPF_LSH | BPF_X, 0),     // 168
      Stmt(BPF_ALU | BPF_SUB | BPF_K, 8),     // 160
      Stmt(BPF_ALU | BPF_DIV | BPF_X, 0),     // 80
      Stmt(BPF_ALU | BPF_OR | BPF_K, 1),      // 81
      Stmt(BPF_ALU | BPF_XOR | BPF_K, 0x10),  // 65
      Stmt(BPF_ALU | BPF_AND | BPF_K, 0xff),  // 65
      Stmt(BPF_LDX | BPF_MEM, 0),             // X = 42
      Stmt(BPF_ALU | BPF_ADD | BPF_X, 0),     // 107
      Stmt(BPF_ALU | BPF_RSH | BPF_K, 1),     // 53
      Stmt(BPF_MISC | BPF_TAX, 0),
      Stmt(BPF_LD | BPF_IMM, 0),
      Stmt(BPF_MISC | BPF_TXA, 0),
      Stmt(BPF_RET | BPF_A, 0),
  };
  EXPECT_EQ(EvaluateSeccomp(p, Data(0)), 53u);
  std::vector<sock_filter> neg = {Stmt(BPF_LD | BPF_IMM, 1), Stmt(BPF_ALU | BPF_NEG, 0),
                                  Stmt(BPF_RET | BPF_A, 0)};
  EXPECT_EQ(EvaluateSeccomp(neg, Data(0)), 0xffffffffu);
  // Division by X == 0 ends the program with 0, as in the kernel.
  std::vector<sock_filter> divx = {Stmt(BPF_LDX | BPF_IMM, 0), Stmt(BPF_ALU | BPF_DIV | BPF_X, 0),
                                   Stmt(BPF_RET | BPF_K, 7)};
  EXPECT_EQ(EvaluateSeccomp(divx, Data(0)), 0u);
}

TEST(InterpreterTest, ConditionalJumpsWithKAndX) {
  auto run = [](uint16_t op, uint16_t src, uint32_t a, uint32_t operand) {
    std::vector<sock_filter> p = {Stmt(BPF_LD | BPF_IMM, a), Stmt(BPF_LDX | BPF_IMM, operand),
                                  Jump(BPF_JMP | op | src, operand, 1, 0), Stmt(BPF_RET | BPF_K, 0),
                                  Stmt(BPF_RET | BPF_K, 1)};
    return EvaluateSeccomp(p, Data(0));
  };
  for (uint16_t src : {uint16_t{BPF_K}, uint16_t{BPF_X}}) {
    EXPECT_EQ(run(BPF_JEQ, src, 5, 5), 1u);
    EXPECT_EQ(run(BPF_JEQ, src, 5, 6), 0u);
    EXPECT_EQ(run(BPF_JGT, src, 6, 5), 1u);
    EXPECT_EQ(run(BPF_JGT, src, 5, 5), 0u);
    EXPECT_EQ(run(BPF_JGE, src, 5, 5), 1u);
    EXPECT_EQ(run(BPF_JGE, src, 4, 5), 0u);
    EXPECT_EQ(run(BPF_JSET, src, 6, 2), 1u);
    EXPECT_EQ(run(BPF_JSET, src, 5, 2), 0u);
    EXPECT_EQ(run(BPF_JGT, src, 0x80000000, 1), 1u);  // unsigned compare
  }
}

TEST(SeccompProgramBuilderTest, LabelsResolveToForwardOffsets) {
  SeccompProgramBuilder b;
  Label allow = b.NewLabel();
  Label deny = b.NewLabel();
  b.LoadNr();
  b.JumpIf(Cond::kEq, SYS_getpid, allow, SeccompProgramBuilder::kNext);
  b.JumpIf(Cond::kEq, SYS_read, allow, deny);
  b.Bind(deny);
  b.Return(SECCOMP_RET_ERRNO | 1);
  b.Bind(allow);
  b.Return(SECCOMP_RET_ALLOW);
  absl::StatusOr<std::vector<sock_filter>> p = b.Build();
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(EvaluateSeccomp(*p, Data(SYS_getpid)), SECCOMP_RET_ALLOW);
  EXPECT_EQ(EvaluateSeccomp(*p, Data(SYS_read)), SECCOMP_RET_ALLOW);
  EXPECT_EQ(EvaluateSeccomp(*p, Data(SYS_write)), SECCOMP_RET_ERRNO | 1);
}

TEST(SeccompProgramBuilderTest, GotoAndArgs) {
  SeccompProgramBuilder b;
  Label out = b.NewLabel();
  b.LoadArg(1, Half::kHigh);
  b.JumpIf(Cond::kEq, 0x1, SeccompProgramBuilder::kNext, out);
  b.LoadArg(1, Half::kLow);
  b.Goto(out);
  b.Return(0);  // skipped
  b.Bind(out);
  b.Emit(Stmt(BPF_RET | BPF_A, 0));
  absl::StatusOr<std::vector<sock_filter>> p = b.Build();
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(EvaluateSeccomp(*p, Data(0, 0, {0, 0x00000001deadbeef})), 0xdeadbeefu);
  EXPECT_EQ(EvaluateSeccomp(*p, Data(0, 0, {0, 0x00000002deadbeef})), 2u);
}

TEST(SeccompProgramBuilderTest, ReportsLabelErrors) {
  {
    SeccompProgramBuilder b;
    Label never = b.NewLabel();
    b.LoadNr();
    b.JumpIf(Cond::kEq, 1, never, SeccompProgramBuilder::kNext);
    b.Return(0);
    EXPECT_FALSE(b.Build().ok());
  }
  {
    SeccompProgramBuilder b;
    Label back = b.NewLabel();
    b.Bind(back);
    b.LoadNr();
    b.Goto(back);
    b.Return(0);
    EXPECT_FALSE(b.Build().ok());
  }
  {
    SeccompProgramBuilder b;
    Label far = b.NewLabel();
    b.LoadNr();
    b.JumpIf(Cond::kEq, 1, far, SeccompProgramBuilder::kNext);
    for (int i = 0; i < 300; ++i) b.LoadNr();
    b.Bind(far);
    b.Return(0);
    EXPECT_FALSE(b.Build().ok());
  }
}

// The evaluator must understand what libseccomp generates (the sentry's own filter is
// tested this way).
TEST(InterpreterTest, EvaluatesLibseccompExport) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
  ASSERT_NE(ctx, nullptr);
  ASSERT_EQ(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(getpid), 0), 0);
  ASSERT_EQ(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(13), SCMP_SYS(openat), 0), 0);
  ASSERT_EQ(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
                             SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)),
            0);
  ASSERT_EQ(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1,
                             SCMP_A0(SCMP_CMP_GT, 0x100000000ull)),
            0);
  int fd = memfd_create("bpf", 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(seccomp_export_bpf(ctx, fd), 0);
  seccomp_release(ctx);
  off_t size = lseek(fd, 0, SEEK_END);
  ASSERT_GT(size, 0);
  std::vector<sock_filter> prog(size / sizeof(sock_filter));
  ASSERT_EQ(pread(fd, prog.data(), size, 0), size);
  close(fd);

  EXPECT_EQ(EvaluateSeccomp(prog, Data(SYS_getpid)), SECCOMP_RET_ALLOW);
  EXPECT_EQ(EvaluateSeccomp(prog, Data(SYS_openat)), SECCOMP_RET_ERRNO | 13);
  EXPECT_EQ(EvaluateSeccomp(prog, Data(SYS_write)), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(EvaluateSeccomp(prog, Data(SYS_mmap, 0, {0, 4096, PROT_READ})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(EvaluateSeccomp(prog, Data(SYS_mmap, 0, {0, 4096, PROT_READ | PROT_EXEC})),
            SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(EvaluateSeccomp(prog, Data(SYS_kill, 0, {0x200000000ull, 9})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(EvaluateSeccomp(prog, Data(SYS_kill, 0, {5, 9})), SECCOMP_RET_KILL_PROCESS);
  seccomp_data wrong_arch = Data(SYS_getpid);
  wrong_arch.arch = AUDIT_ARCH_I386;
  // libseccomp's default bad-arch action is SECCOMP_RET_KILL_THREAD (0).
  EXPECT_EQ(EvaluateSeccomp(prog, wrong_arch), SECCOMP_RET_KILL_THREAD);
}

}  // namespace
}  // namespace usentry::bpf
