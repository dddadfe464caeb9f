// Builder for classic-BPF seccomp programs: loads from struct seccomp_data, labelled
// forward jumps and returns, so filters read like the policy they express.
#ifndef USENTRY_BASE_BPF_SECCOMP_BPF_H_
#define USENTRY_BASE_BPF_SECCOMP_BPF_H_

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace usentry::bpf {

// A jump target. Obtain with SeccompProgramBuilder::NewLabel, bind with Bind.
struct Label {
  int id = -1;
};

// Conditions of classic BPF conditional jumps (compare A with K, unsigned).
enum class Cond : uint16_t {
  kEq = BPF_JEQ,   // A == K
  kGt = BPF_JGT,   // A >  K
  kGe = BPF_JGE,   // A >= K
  kSet = BPF_JSET  // A & K != 0
};

// Which 32-bit half of a 64-bit seccomp_data field to load (BPF loads are 32 bit).
enum class Half { kLow, kHigh };

// Byte offsets into struct seccomp_data (little endian x86-64).
inline constexpr uint32_t kNrOffset = offsetof(seccomp_data, nr);
inline constexpr uint32_t kArchOffset = offsetof(seccomp_data, arch);
inline constexpr uint32_t kIpOffset = offsetof(seccomp_data, instruction_pointer);
inline constexpr uint32_t ArgOffset(int i) {
  return offsetof(seccomp_data, args) + 8 * static_cast<uint32_t>(i);
}

// Raw instruction constructors (the BPF_STMT / BPF_JUMP macros as functions).
inline sock_filter Stmt(uint16_t code, uint32_t k) { return sock_filter{code, 0, 0, k}; }
inline sock_filter Jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return sock_filter{code, jt, jf, k};
}

// Builds a program instruction by instruction. Conditional jumps name labels; a label
// must be bound after every jump that uses it (classic BPF only jumps forward). Errors
// (unbound label, backward jump, offset over 255) stick until Build().
class SeccompProgramBuilder {
 public:
  // The fall-through "label": continue with the next instruction.
  static constexpr Label kNext{-2};

  Label NewLabel();
  // Binds `label` to the next instruction emitted.
  void Bind(Label label);

  void LoadArch() { Emit(Stmt(BPF_LD | BPF_W | BPF_ABS, kArchOffset)); }
  void LoadNr() { Emit(Stmt(BPF_LD | BPF_W | BPF_ABS, kNrOffset)); }
  void LoadIp(Half half) { LoadAbs(kIpOffset + (half == Half::kHigh ? 4 : 0)); }
  void LoadArg(int i, Half half) { LoadAbs(ArgOffset(i) + (half == Half::kHigh ? 4 : 0)); }
  void LoadAbs(uint32_t offset) { Emit(Stmt(BPF_LD | BPF_W | BPF_ABS, offset)); }

  // if (A <cond> k) goto jt; else goto jf.
  void JumpIf(Cond cond, uint32_t k, Label jt, Label jf);
  // Unconditional jump (BPF_JA, 32-bit offset).
  void Goto(Label target);
  // Falls through if start <= instruction pointer < start + size, else jumps to
  // `outside`. The range must not straddle a 4 GiB boundary (the check is on the two
  // 32-bit halves); leaves the low half of the ip in A.
  void JumpUnlessIpIn(uint64_t start, uint64_t size, Label outside);
  void Return(uint32_t action) { Emit(Stmt(BPF_RET | BPF_K, action)); }
  // Any other instruction, emitted as is (no label fix-up).
  void Emit(sock_filter insn) {
    prog_.push_back(insn);
    fixups_.push_back({});
  }

  // Resolves labels and returns the program.
  absl::StatusOr<std::vector<sock_filter>> Build() const;

 private:
  struct Fixup {
    int jt = -1;  // label ids to resolve into jt/jf (or k for BPF_JA); -1: none
    int jf = -1;
    bool ja = false;
  };
  std::vector<sock_filter> prog_;
  std::vector<Fixup> fixups_;
  std::vector<int> label_pos_;  // instruction index per label, -1 while unbound
};

}  // namespace usentry::bpf

#endif  // USENTRY_BASE_BPF_SECCOMP_BPF_H_
