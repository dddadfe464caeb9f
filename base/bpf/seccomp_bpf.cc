// Label resolution for SeccompProgramBuilder.
#include "base/bpf/seccomp_bpf.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace usentry::bpf {

Label SeccompProgramBuilder::NewLabel() {
  label_pos_.push_back(-1);
  return Label{static_cast<int>(label_pos_.size()) - 1};
}

void SeccompProgramBuilder::Bind(Label label) {
  // Out-of-range or double binds are reported by Build (label_pos_ stays -1 / -3).
  if (label.id < 0 || label.id >= static_cast<int>(label_pos_.size())) return;
  label_pos_[label.id] = label_pos_[label.id] == -1 ? static_cast<int>(prog_.size()) : -3;
}

void SeccompProgramBuilder::JumpIf(Cond cond, uint32_t k, Label jt, Label jf) {
  Emit(Jump(BPF_JMP | static_cast<uint16_t>(cond) | BPF_K, k, 0, 0));
  fixups_.back().jt = jt.id;
  fixups_.back().jf = jf.id;
}

void SeccompProgramBuilder::Goto(Label target) {
  Emit(Stmt(BPF_JMP | BPF_JA, 0));
  fixups_.back().jt = target.id;
  fixups_.back().ja = true;
}

void SeccompProgramBuilder::JumpUnlessIpIn(uint64_t start, uint64_t size, Label outside) {
  const uint32_t high = static_cast<uint32_t>(start >> 32);
  const uint32_t low = static_cast<uint32_t>(start);
  LoadIp(Half::kHigh);
  JumpIf(Cond::kEq, high, kNext, outside);
  LoadIp(Half::kLow);
  JumpIf(Cond::kGe, low, kNext, outside);
  // Compared with the last byte: low + size overflows 32 bits for a range that ends at a
  // 4 GiB boundary (e.g. the page 0x7ff7fffff000).
  JumpIf(Cond::kGt, low + static_cast<uint32_t>(size - 1), outside, kNext);
}

absl::StatusOr<std::vector<sock_filter>> SeccompProgramBuilder::Build() const {
  std::vector<sock_filter> out = prog_;
  // Returns the forward offset from instruction `at` to label `id` (kNext -> 0).
  auto offset = [&](size_t at, int id) -> absl::StatusOr<uint32_t> {
    if (id == kNext.id) return 0;
    if (id < 0 || id >= static_cast<int>(label_pos_.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("bpf: instruction ", at, " uses unknown label ", id));
    }
    const int pos = label_pos_[id];
    if (pos == -3)
      return absl::InvalidArgumentError(absl::StrCat("bpf: label ", id, " bound twice"));
    if (pos < 0) return absl::InvalidArgumentError(absl::StrCat("bpf: label ", id, " never bound"));
    if (pos <= static_cast<int>(at)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bpf: backward jump from instruction ", at, " to label ", id));
    }
    if (pos >= static_cast<int>(out.size())) {
      return absl::InvalidArgumentError(absl::StrCat("bpf: label ", id, " bound past the end"));
    }
    return static_cast<uint32_t>(pos - static_cast<int>(at) - 1);
  };
  for (size_t i = 0; i < out.size(); ++i) {
    const Fixup& f = fixups_[i];
    if (f.jt == -1 && f.jf == -1) continue;
    if (f.ja) {
      absl::StatusOr<uint32_t> off = offset(i, f.jt);
      if (!off.ok()) return off.status();
      out[i].k = *off;
      continue;
    }
    for (auto [id, field] : {std::pair{f.jt, &out[i].jt}, std::pair{f.jf, &out[i].jf}}) {
      absl::StatusOr<uint32_t> off = offset(i, id);
      if (!off.ok()) return off.status();
      if (*off > 255) {
        return absl::InvalidArgumentError(
            absl::StrCat("bpf: conditional jump at ", i, " spans ", *off, " > 255 instructions"));
      }
      *field = static_cast<uint8_t>(*off);
    }
  }
  return out;
}

}  // namespace usentry::bpf
