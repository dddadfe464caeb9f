// ELF64 (x86-64) and "#!" script header parsing for execve: validates the headers and
// describes what to map. Pure functions over bytes the caller read; no I/O, no mapping.
//
// Expected use by the loader:
//   1. read the first kElfReadAhead bytes of the file;
//   2. LooksLikeScript(bytes) ? ParseShebang(bytes) and restart with the interpreter
//                             : ParseHeader(bytes);
//   3. read header.phnum * header.phentsize bytes at header.phoff (often already inside
//      the first read: PhdrsWithin() says so) and call ParseProgramHeaders;
//   4. if info.interp is set, read that range and call ParseInterpPath.
// ParseElf() does 2-4 at once when the caller already has every byte it needs.
// The interpreter (ld.so) goes through the same steps; as in Linux, a PT_INTERP of the
// interpreter itself is ignored by the caller, and a script interpreter that is itself
// a script is the caller's loop to bound.
// Every malformed input yields ENOEXEC, as execve reports it.
#ifndef USENTRY_SENTRY_LOADER_ELF_H_
#define USENTRY_SENTRY_LOADER_ELF_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "base/sys_result.h"

namespace usentry::sentry::loader {

// How much the loader should read first: Linux's exec reads one page too, which holds
// the ELF header and, for every usual linker output, the program headers and PT_INTERP.
inline constexpr size_t kElfReadAhead = 4096;
inline constexpr size_t kElfHeaderSize = 64;
inline constexpr size_t kElfPhdrSize = 56;
// Limits Linux applies (fs/binfmt_elf.c): program header table at most 64 KiB (we allow
// 256 entries, plenty for any real binary), interpreter path at most one page.
inline constexpr uint16_t kMaxPhnum = 256;
inline constexpr size_t kMaxInterpSize = 4096;
// Highest user address + 1 on x86-64 with 4-level paging; no segment may end above it.
inline constexpr uint64_t kUserAddressLimit = uint64_t{1} << 47;
inline constexpr uint64_t kElfPageSize = 4096;

enum class ElfType {
  kExec,  // ET_EXEC: loaded at its link addresses
  kDyn,   // ET_DYN: position independent; the loader picks a base (PIE, ld.so, static-pie)
};

// The validated ELF file header.
struct ElfHeader {
  ElfType type;
  uint64_t entry;      // link-time address (add the load bias for kDyn)
  uint64_t phoff;      // file offset of the program header table
  uint16_t phnum;      // 1..kMaxPhnum
  uint16_t phentsize;  // always kElfPhdrSize

  // Size in bytes of the program header table (no overflow: both factors are bounded).
  uint64_t PhdrsSize() const { return uint64_t{phnum} * phentsize; }
};

// A byte range of the file.
struct FileRange {
  uint64_t offset;
  uint64_t size;
};

// One PT_LOAD segment. [vaddr, vaddr + filesz) comes from the file at `offset`;
// [vaddr + filesz, vaddr + memsz) is zero-filled (bss), including the rest of the page
// holding vaddr + filesz when the segment is writable.
struct LoadSegment {
  uint64_t vaddr;
  uint64_t memsz;
  uint64_t filesz;  // <= memsz
  uint64_t offset;  // congruent to vaddr modulo kElfPageSize
  int prot;         // PROT_READ | PROT_WRITE | PROT_EXEC, from p_flags
};

// Everything exec needs from the program headers. Addresses are link-time addresses.
struct ElfInfo {
  ElfHeader header;
  std::vector<LoadSegment> loads;  // at least one, sorted by vaddr, non-overlapping
  // The PT_INTERP segment, if any: read it and pass the bytes to ParseInterpPath.
  std::optional<FileRange> interp_range;
  std::string interp;  // filled in by ParseElf (or by the caller from ParseInterpPath)
  bool has_gnu_stack = false;
  // Whether the stack must be executable: only if PT_GNU_STACK asks for PF_X. Without
  // PT_GNU_STACK, x86-64 Linux (since 5.8) no longer makes the stack executable.
  bool executable_stack = false;
  std::optional<uint64_t> phdr_vaddr;  // PT_PHDR's p_vaddr, if present
  // Page-aligned span of all loads: [load_start, load_end).
  uint64_t load_start = 0;
  uint64_t load_end = 0;
  uint64_t max_align = kElfPageSize;  // largest PT_LOAD p_align (a power of two)

  // The address of the program headers once loaded, for AT_PHDR: PT_PHDR if present,
  // else the address of file offset header.phoff inside the PT_LOAD that maps it.
  // nullopt if no segment maps the program headers (AT_PHDR cannot be provided).
  std::optional<uint64_t> PhdrAddress() const;
};

// Parses and validates the file header. `bytes` is the start of the file; fewer than
// kElfHeaderSize bytes is ENOEXEC.
SysResult<ElfHeader> ParseHeader(absl::Span<const uint8_t> bytes);

// True if the program header table lies within the first `available` bytes of the file.
bool PhdrsWithin(const ElfHeader& header, size_t available);

// Validates the program headers. `phdrs` holds the file bytes starting at
// header.phoff; it must hold at least header.PhdrsSize() bytes.
SysResult<ElfInfo> ParseProgramHeaders(const ElfHeader& header, absl::Span<const uint8_t> phdrs);

// Validates the contents of the PT_INTERP segment (NUL-terminated, no other NUL,
// non-empty, at most kMaxInterpSize bytes) and returns the path.
SysResult<std::string> ParseInterpPath(absl::Span<const uint8_t> interp_bytes);

// ParseHeader + ParseProgramHeaders + ParseInterpPath when `file` (a prefix of the
// file, or all of it) contains the program headers and the interpreter path; ENOEXEC
// if they lie beyond it.
SysResult<ElfInfo> ParseElf(absl::Span<const uint8_t> file);

// ---- Scripts -----------------------------------------------------------------------

// Linux reads this many bytes of a file to parse "#!" (BINPRM_BUF_SIZE).
inline constexpr size_t kShebangBufSize = 256;

struct Shebang {
  std::string interpreter;
  std::optional<std::string> arg;  // everything after the interpreter, as one argument
};

// The file starts with "#!".
bool LooksLikeScript(absl::Span<const uint8_t> bytes);

// Parses the "#!" line as Linux's binfmt_script does: only the first kShebangBufSize
// bytes count; spaces/tabs after "#!" are skipped; the interpreter ends at the first
// space, tab or NUL; the rest of the line, with surrounding spaces/tabs trimmed, is one
// optional argument. ENOEXEC if there is no "#!", no interpreter, or the line does not
// end within the buffer and the interpreter path itself may be truncated.
SysResult<Shebang> ParseShebang(absl::Span<const uint8_t> bytes);

}  // namespace usentry::sentry::loader

#endif  // USENTRY_SENTRY_LOADER_ELF_H_
