// In-process evaluator for classic-BPF seccomp programs, so filters are tested by
// running them against fake syscalls instead of installing them.
#ifndef USENTRY_BASE_BPF_INTERPRETER_H_
#define USENTRY_BASE_BPF_INTERPRETER_H_

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace usentry::bpf {

// Returned by EvaluateSeccomp for a program the kernel would refuse or that misbehaves
// at run time (load out of range, jump past the end, falling off the end, unknown
// opcode, read of an unwritten scratch word). Not a value a valid filter in our tree
// returns; use RunSeccompFilter to learn why.
inline constexpr uint32_t kBpfInvalidProgram = 0xffffffffu;

// Runs `prog` on `data` and returns the filter's 32-bit result (SECCOMP_RET_*), or
// InvalidArgument naming the instruction that the kernel would reject or that failed.
// Supports what seccomp accepts: LD W ABS/LEN/IMM/MEM, LDX W IMM/MEM/LEN, ST, STX,
// ALU (ADD SUB MUL DIV AND OR XOR LSH RSH, K and X; NEG), JMP (JA, JEQ JGT JGE JSET with
// K and X), RET K/A, TAX, TXA. Like the kernel, division by X == 0 makes the program
// return 0 and shifts by X use the low 5 bits.
absl::StatusOr<uint32_t> RunSeccompFilter(absl::Span<const sock_filter> prog,
                                          const seccomp_data& data);

// RunSeccompFilter, with any error mapped to kBpfInvalidProgram.
uint32_t EvaluateSeccomp(absl::Span<const sock_filter> prog, const seccomp_data& data);

}  // namespace usentry::bpf

#endif  // USENTRY_BASE_BPF_INTERPRETER_H_
