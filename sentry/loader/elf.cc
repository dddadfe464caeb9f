// ELF64 / "#!" parsing for execve. Every check mirrors a reason Linux's binfmt_elf or
// binfmt_script refuses a file, plus a few stricter ones (duplicate PT_INTERP,
// overlapping loads) that no real linker output violates.
#include "sentry/loader/elf.h"

#include <elf.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>

namespace usentry::sentry::loader {
namespace {

SysResult<ElfHeader> NoExec() { return Errno{ENOEXEC}; }

bool AddOverflows(uint64_t a, uint64_t b, uint64_t* sum) {
  return __builtin_add_overflow(a, b, sum);
}

int ProtFromFlags(uint32_t p_flags) {
  int prot = 0;
  if (p_flags & PF_R) prot |= PROT_READ;
  if (p_flags & PF_W) prot |= PROT_WRITE;
  if (p_flags & PF_X) prot |= PROT_EXEC;
  return prot;
}

// Validates one PT_LOAD against its predecessor (loads must be sorted and disjoint).
bool ValidLoad(const Elf64_Phdr& ph, const LoadSegment* prev) {
  if (ph.p_filesz > ph.p_memsz) return false;
  // mmap can only map a file page at an address with the same page offset.
  if ((ph.p_vaddr - ph.p_offset) % kElfPageSize != 0) return false;
  // p_align is 0/1 (none) or a power of two; Linux ignores a bad one but a loader that
  // honours large alignments (PIE base) must not be fed garbage.
  if (ph.p_align > 1 && (ph.p_align & (ph.p_align - 1)) != 0) return false;
  uint64_t vend, fend;
  if (AddOverflows(ph.p_vaddr, ph.p_memsz, &vend) || vend > kUserAddressLimit) return false;
  if (AddOverflows(ph.p_offset, ph.p_filesz, &fend)) return false;
  if (prev != nullptr && ph.p_vaddr < prev->vaddr + prev->memsz) return false;
  return true;
}

}  // namespace

std::optional<uint64_t> ElfInfo::PhdrAddress() const {
  if (phdr_vaddr) return phdr_vaddr;
  const uint64_t size = header.PhdrsSize();
  for (const LoadSegment& s : loads) {
    if (header.phoff >= s.offset && header.phoff - s.offset <= s.filesz &&
        size <= s.filesz - (header.phoff - s.offset)) {
      return s.vaddr + (header.phoff - s.offset);
    }
  }
  return std::nullopt;
}

SysResult<ElfHeader> ParseHeader(absl::Span<const uint8_t> bytes) {
  if (bytes.size() < kElfHeaderSize) return NoExec();
  Elf64_Ehdr eh;
  static_assert(sizeof(eh) == kElfHeaderSize);
  std::memcpy(&eh, bytes.data(), sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return NoExec();
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_ident[EI_VERSION] != EV_CURRENT) {
    return NoExec();
  }
  if (eh.e_machine != EM_X86_64) return NoExec();
  ElfHeader h;
  if (eh.e_type == ET_EXEC) {
    h.type = ElfType::kExec;
  } else if (eh.e_type == ET_DYN) {
    h.type = ElfType::kDyn;
  } else {
    return NoExec();  // ET_REL, ET_CORE: not executable
  }
  if (eh.e_phentsize != kElfPhdrSize) return NoExec();
  if (eh.e_phnum == 0 || eh.e_phnum > kMaxPhnum) return NoExec();
  h.entry = eh.e_entry;
  h.phoff = eh.e_phoff;
  h.phnum = eh.e_phnum;
  h.phentsize = eh.e_phentsize;
  uint64_t end;
  if (AddOverflows(h.phoff, h.PhdrsSize(), &end)) return NoExec();
  return h;
}

bool PhdrsWithin(const ElfHeader& header, size_t available) {
  uint64_t end;
  return !AddOverflows(header.phoff, header.PhdrsSize(), &end) && end <= available;
}

SysResult<ElfInfo> ParseProgramHeaders(const ElfHeader& header, absl::Span<const uint8_t> phdrs) {
  // The header may not come from ParseHeader; the stride must be what we copy.
  if (header.phentsize != kElfPhdrSize || header.phnum == 0 || header.phnum > kMaxPhnum ||
      phdrs.size() < header.PhdrsSize()) {
    return Errno{ENOEXEC};
  }
  ElfInfo info;
  info.header = header;
  bool saw_phdr = false;
  for (uint16_t i = 0; i < header.phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, phdrs.data() + size_t{i} * header.phentsize, sizeof(ph));
    switch (ph.p_type) {
      case PT_LOAD: {
        if (!ValidLoad(ph, info.loads.empty() ? nullptr : &info.loads.back())) {
          return Errno{ENOEXEC};
        }
        if (ph.p_memsz == 0) break;  // maps nothing; Linux skips it as well
        info.loads.push_back(
            {ph.p_vaddr, ph.p_memsz, ph.p_filesz, ph.p_offset, ProtFromFlags(ph.p_flags)});
        info.max_align = std::max<uint64_t>(info.max_align, ph.p_align);
        break;
      }
      case PT_INTERP: {
        uint64_t end;
        if (info.interp_range || ph.p_filesz < 2 || ph.p_filesz > kMaxInterpSize ||
            AddOverflows(ph.p_offset, ph.p_filesz, &end)) {
          return Errno{ENOEXEC};
        }
        info.interp_range = FileRange{ph.p_offset, ph.p_filesz};
        break;
      }
      case PT_GNU_STACK:
        info.has_gnu_stack = true;
        info.executable_stack = (ph.p_flags & PF_X) != 0;
        break;
      case PT_PHDR:
        if (saw_phdr) return Errno{ENOEXEC};
        saw_phdr = true;
        info.phdr_vaddr = ph.p_vaddr;
        break;
      default:
        break;  // PT_DYNAMIC, PT_TLS, PT_NOTE, ...: the dynamic linker's business
    }
  }
  if (info.loads.empty()) return Errno{ENOEXEC};
  info.load_start = info.loads.front().vaddr & ~(kElfPageSize - 1);
  const LoadSegment& last = info.loads.back();
  // Cannot overflow: ValidLoad bounded vaddr + memsz by kUserAddressLimit.
  info.load_end = (last.vaddr + last.memsz + kElfPageSize - 1) & ~(kElfPageSize - 1);
  if (info.header.type == ElfType::kExec && info.load_start == 0) {
    return Errno{ENOEXEC};  // a fixed mapping at page 0 can never be placed
  }
  return info;
}

SysResult<std::string> ParseInterpPath(absl::Span<const uint8_t> interp_bytes) {
  const size_t n = interp_bytes.size();
  if (n < 2 || n > kMaxInterpSize || interp_bytes[n - 1] != '\0') return Errno{ENOEXEC};
  const auto* begin = reinterpret_cast<const char*>(interp_bytes.data());
  // An embedded NUL would make the path the app sees differ from the one we open.
  if (std::memchr(begin, '\0', n - 1) != nullptr) return Errno{ENOEXEC};
  return std::string(begin, n - 1);
}

SysResult<ElfInfo> ParseElf(absl::Span<const uint8_t> file) {
  ASSIGN_OR_RETURN_ERRNO(ElfHeader header, ParseHeader(file));
  if (!PhdrsWithin(header, file.size())) return Errno{ENOEXEC};
  ASSIGN_OR_RETURN_ERRNO(ElfInfo info, ParseProgramHeaders(header, file.subspan(header.phoff)));
  if (info.interp_range) {
    const FileRange r = *info.interp_range;
    if (r.offset > file.size() || r.size > file.size() - r.offset) return Errno{ENOEXEC};
    ASSIGN_OR_RETURN_ERRNO(info.interp, ParseInterpPath(file.subspan(r.offset, r.size)));
  }
  return info;
}

// ---- Scripts -----------------------------------------------------------------------

bool LooksLikeScript(absl::Span<const uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == '#' && bytes[1] == '!';
}

namespace {

bool SpaceTab(char c) { return c == ' ' || c == '\t'; }
bool Terminator(char c) { return c == ' ' || c == '\t' || c == '\0'; }

// First position in [p, end) that is not a space/tab, or nullptr.
const char* NextNonSpaceTab(const char* p, const char* end) {
  for (; p < end; ++p) {
    if (!SpaceTab(*p)) return p;
  }
  return nullptr;
}

// First space/tab/NUL in [p, end), or nullptr.
const char* NextTerminator(const char* p, const char* end) {
  for (; p < end; ++p) {
    if (Terminator(*p)) return p;
  }
  return nullptr;
}

}  // namespace

SysResult<Shebang> ParseShebang(absl::Span<const uint8_t> bytes) {
  if (!LooksLikeScript(bytes)) return Errno{ENOEXEC};
  // Linux looks at a zero-filled buffer of kShebangBufSize bytes; a short file reads
  // as if followed by NULs, which terminate the interpreter.
  char buf[kShebangBufSize] = {};
  std::memcpy(buf, bytes.data(), std::min(bytes.size(), kShebangBufSize));
  const char* buf_end = buf + kShebangBufSize - 1;

  const char* i_end = static_cast<const char*>(std::memchr(buf, '\n', kShebangBufSize));
  if (i_end == nullptr) {
    // No newline in the buffer: accept only if the interpreter path visibly ends.
    const char* name = NextNonSpaceTab(buf + 2, buf_end);
    if (name == nullptr || NextTerminator(name, buf_end) == nullptr) return Errno{ENOEXEC};
    i_end = buf_end;
  }
  while (i_end > buf + 2 && SpaceTab(i_end[-1])) --i_end;

  const char* name = NextNonSpaceTab(buf + 2, i_end);
  if (name == nullptr || name == i_end) return Errno{ENOEXEC};
  const char* sep = NextTerminator(name, i_end);
  const char* name_end = sep != nullptr ? sep : i_end;

  Shebang result;
  result.interpreter.assign(name, name_end);
  if (result.interpreter.empty()) return Errno{ENOEXEC};
  if (sep != nullptr && *sep != '\0') {
    const char* arg = NextNonSpaceTab(sep, i_end);
    if (arg != nullptr) {
      // The kernel treats the argument as a C string: a NUL inside ends it.
      const char* nul = static_cast<const char*>(std::memchr(arg, '\0', i_end - arg));
      result.arg.emplace(arg, nul != nullptr ? nul : i_end);
    }
  }
  return result;
}

}  // namespace usentry::sentry::loader
