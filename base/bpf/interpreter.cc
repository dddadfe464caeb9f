// Classic BPF evaluator for the seccomp subset (see interpreter.h).
#include "base/bpf/interpreter.h"

#include <array>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace usentry::bpf {
namespace {

// Same limit as the kernel (BPF_MAXINSNS).
constexpr size_t kMaxInsns = 4096;

absl::Status Bad(size_t pc, const sock_filter& insn, const char* why) {
  return absl::InvalidArgumentError(
      absl::StrFormat("bpf: instruction %d {code=0x%04x jt=%d jf=%d k=0x%x}: %s", pc, insn.code,
                      insn.jt, insn.jf, insn.k, why));
}

}  // namespace

absl::StatusOr<uint32_t> RunSeccompFilter(absl::Span<const sock_filter> prog,
                                          const seccomp_data& data) {
  if (prog.empty() || prog.size() > kMaxInsns) {
    return absl::InvalidArgumentError(
        absl::StrCat("bpf: program length ", prog.size(), " not in [1, ", kMaxInsns, "]"));
  }
  uint32_t a = 0;
  uint32_t x = 0;
  std::array<uint32_t, BPF_MEMWORDS> mem{};
  std::array<bool, BPF_MEMWORDS> mem_set{};
  const size_t len = prog.size();

  // Classic BPF only jumps forward, so the loop terminates after at most len steps.
  for (size_t pc = 0; pc < len; ++pc) {
    const sock_filter& insn = prog[pc];
    const uint16_t code = insn.code;
    const uint32_t k = insn.k;
    switch (BPF_CLASS(code)) {
      case BPF_LD:
      case BPF_LDX: {
        if (BPF_SIZE(code) != BPF_W) return Bad(pc, insn, "only 32-bit (BPF_W) loads");
        uint32_t v = 0;
        switch (BPF_MODE(code)) {
          case BPF_ABS:
            if (BPF_CLASS(code) != BPF_LD) return Bad(pc, insn, "LDX ABS is not allowed");
            if (k >= sizeof(seccomp_data) || (k & 3) != 0) {
              return Bad(pc, insn, "load offset outside seccomp_data or unaligned");
            }
            std::memcpy(&v, reinterpret_cast<const char*>(&data) + k, sizeof(v));
            break;
          case BPF_LEN:
            v = sizeof(seccomp_data);
            break;
          case BPF_IMM:
            v = k;
            break;
          case BPF_MEM:
            if (k >= BPF_MEMWORDS) return Bad(pc, insn, "scratch index out of range");
            if (!mem_set[k]) return Bad(pc, insn, "read of a scratch word never written");
            v = mem[k];
            break;
          default:
            return Bad(pc, insn, "load mode not allowed in seccomp");
        }
        (BPF_CLASS(code) == BPF_LD ? a : x) = v;
        break;
      }
      case BPF_ST:
      case BPF_STX:
        if (code != BPF_ST && code != BPF_STX) return Bad(pc, insn, "bad store");
        if (k >= BPF_MEMWORDS) return Bad(pc, insn, "scratch index out of range");
        mem[k] = BPF_CLASS(code) == BPF_ST ? a : x;
        mem_set[k] = true;
        break;
      case BPF_ALU: {
        if (BPF_OP(code) == BPF_NEG) {
          if (code != (BPF_ALU | BPF_NEG)) return Bad(pc, insn, "bad NEG");
          a = -a;
          break;
        }
        const bool use_x = BPF_SRC(code) == BPF_X;
        const uint32_t src = use_x ? x : k;
        switch (BPF_OP(code)) {
          case BPF_ADD:
            a += src;
            break;
          case BPF_SUB:
            a -= src;
            break;
          case BPF_MUL:
            a *= src;
            break;
          case BPF_AND:
            a &= src;
            break;
          case BPF_OR:
            a |= src;
            break;
          case BPF_XOR:
            a ^= src;
            break;
          case BPF_DIV:
            if (src == 0) {
              // The kernel rejects DIV K 0 at load time; DIV X with X == 0 returns 0.
              if (!use_x) return Bad(pc, insn, "division by constant zero");
              return 0u;
            }
            a /= src;
            break;
          case BPF_LSH:
          case BPF_RSH:
            if (!use_x && src >= 32) return Bad(pc, insn, "shift by 32 or more");
            a = BPF_OP(code) == BPF_LSH ? a << (src & 31) : a >> (src & 31);
            break;
          default:
            return Bad(pc, insn, "ALU op not allowed in seccomp");
        }
        break;
      }
      case BPF_JMP: {
        size_t target;
        if (BPF_OP(code) == BPF_JA) {
          if (code != (BPF_JMP | BPF_JA)) return Bad(pc, insn, "bad JA");
          target = pc + 1 + static_cast<size_t>(k);
        } else {
          const uint32_t src = BPF_SRC(code) == BPF_X ? x : k;
          bool taken;
          switch (BPF_OP(code)) {
            case BPF_JEQ:
              taken = a == src;
              break;
            case BPF_JGT:
              taken = a > src;
              break;
            case BPF_JGE:
              taken = a >= src;
              break;
            case BPF_JSET:
              taken = (a & src) != 0;
              break;
            default:
              return Bad(pc, insn, "jump op not allowed in seccomp");
          }
          // Both branches are checked, as the kernel does at load time.
          if (pc + 1 + insn.jt >= len || pc + 1 + insn.jf >= len) {
            return Bad(pc, insn, "jump past the end of the program");
          }
          target = pc + 1 + (taken ? insn.jt : insn.jf);
        }
        if (target >= len) return Bad(pc, insn, "jump past the end of the program");
        pc = target - 1;  // the loop increments
        break;
      }
      case BPF_RET:
        if (code == (BPF_RET | BPF_K)) return k;
        if (code == (BPF_RET | BPF_A)) return a;
        return Bad(pc, insn, "RET source not allowed in seccomp");
      case BPF_MISC:
        if (code == (BPF_MISC | BPF_TAX)) {
          x = a;
        } else if (code == (BPF_MISC | BPF_TXA)) {
          a = x;
        } else {
          return Bad(pc, insn, "MISC op not allowed");
        }
        break;
      default:
        return Bad(pc, insn, "unknown instruction class");
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("bpf: execution fell off the end of the program (",
                                                 len, " instructions) without RET"));
}

uint32_t EvaluateSeccomp(absl::Span<const sock_filter> prog, const seccomp_data& data) {
  absl::StatusOr<uint32_t> r = RunSeccompFilter(prog, data);
  return r.ok() ? *r : kBpfInvalidProgram;
}

}  // namespace usentry::bpf
