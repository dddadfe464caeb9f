// Loader implementation. The ELF/shebang parsing is in elf.cc; this file reads files
// through the VFS and maps them with the MemoryManager.
#include "sentry/loader/loader.h"

#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>

#include <cstring>

#include "platform/platform.h"
#include "sentry/fsimpl/overlay.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/loader/elf.h"
#include "sentry/vfs/task_context.h"

namespace usentry::sentry::loader {

namespace {

constexpr int kMaxScriptDepth = 4;        // Linux allows 4 levels of interpreter nesting
constexpr size_t kMaxArgBytes = 2 << 20;  // ARG_MAX-like bound on argv+envp

using mm::GuestAddr;
using mm::kPageSize;

uint64_t PageDown(uint64_t v) { return v & ~(kPageSize - 1); }
uint64_t PageUp(uint64_t v) { return (v + kPageSize - 1) & ~(kPageSize - 1); }

struct OpenedElf {
  std::shared_ptr<vfs::FileDescription> file;
  std::string path;  // sandbox path, for /proc maps and AT_EXECFN
  ElfInfo info;
};

// Reads exactly n bytes at off unless the file ends first; returns bytes read.
SysResult<size_t> ReadFully(vfs::FileDescription& f, void* buf, size_t n, int64_t off) {
  size_t done = 0;
  while (done < n) {
    ASSIGN_OR_RETURN_ERRNO(size_t got, vfs::ReadAt(f, static_cast<uint8_t*>(buf) + done, n - done,
                                                   off + static_cast<int64_t>(done)));
    if (got == 0) break;
    done += got;
  }
  return done;
}

SysResult<ElfInfo> ReadElf(vfs::FileDescription& f, absl::Span<const uint8_t> head) {
  ASSIGN_OR_RETURN_ERRNO(ElfHeader h, ParseHeader(head));
  std::vector<uint8_t> phdrs;
  absl::Span<const uint8_t> ph;
  if (PhdrsWithin(h, head.size())) {
    ph = head.subspan(h.phoff, h.PhdrsSize());
  } else {
    phdrs.resize(h.PhdrsSize());
    ASSIGN_OR_RETURN_ERRNO(size_t got, ReadFully(f, phdrs.data(), phdrs.size(), h.phoff));
    if (got != phdrs.size()) return Errno{ENOEXEC};
    ph = phdrs;
  }
  ASSIGN_OR_RETURN_ERRNO(ElfInfo info, ParseProgramHeaders(h, ph));
  if (info.interp_range) {
    std::vector<uint8_t> ib(info.interp_range->size);
    ASSIGN_OR_RETURN_ERRNO(size_t got,
                           ReadFully(f, ib.data(), ib.size(), info.interp_range->offset));
    if (got != ib.size()) return Errno{ENOEXEC};
    ASSIGN_OR_RETURN_ERRNO(info.interp, ParseInterpPath(ib));
  }
  return info;
}

// Maps every PT_LOAD of `elf` at `bias`.
SysStatus MapElf(mm::MemoryManager& mm, const OpenedElf& elf, uint64_t bias) {
  auto attr = vfs::FileAttr(*elf.file);
  for (const LoadSegment& seg : elf.info.loads) {
    uint64_t vaddr = bias + seg.vaddr;
    uint64_t start = PageDown(vaddr);
    uint64_t page_off = vaddr - start;
    uint64_t end = PageUp(vaddr + seg.memsz);
    if (end <= start) continue;
    mm::MMapOpts o;
    o.addr = GuestAddr(start);
    o.len = end - start;
    o.prot = seg.prot;
    o.flags = MAP_PRIVATE | MAP_FIXED;
    o.file_off = seg.offset - page_off;
    // Only filesz bytes come from the file: the rest of the mapping is bss (zero).
    uint64_t file_bytes = seg.filesz + page_off;
    std::shared_ptr<vfs::FileDescription> file = elf.file;
    // The filler may be called in pieces; `off` is an offset in the file.
    const uint64_t seg_file_off = o.file_off;
    o.fill = [file, file_bytes, seg_file_off](uint8_t* dst, uint64_t len,
                                              uint64_t off) -> SysResult<uint64_t> {
      const uint64_t rel = off - seg_file_off;
      if (rel >= file_bytes) return uint64_t{0};
      // A short file leaves zeros, as a mapping past EOF would (SIGBUS aside).
      ASSIGN_OR_RETURN_ERRNO(size_t got, ReadFully(*file, dst, std::min(len, file_bytes - rel),
                                                   static_cast<int64_t>(off)));
      return static_cast<uint64_t>(got);
    };
    o.name = elf.path;
    if (attr.ok()) {
      o.dev = attr->dev;
      o.ino = attr->ino;
    }
    o.file_ref = elf.file;
    // A segment the app cannot write and that is all file bytes (no bss to zero) may be
    // the host's own pages of the file.
    if (!(seg.prot & PROT_WRITE) && seg.memsz == seg.filesz) {
      o.host_file = elf.file->HostFileForMapping();
    }
    ASSIGN_OR_RETURN_ERRNO(GuestAddr got, mm.MMap(o));
    (void)got;
  }
  return SysOk();
}

// Writes the initial stack: strings, AT_RANDOM bytes, auxv, envp, argv, argc.
SysResult<uint64_t> BuildStack(mm::MemoryManager& mm, const std::vector<std::string>& argv,
                               const std::vector<std::string>& envp, const std::string& execfn,
                               std::vector<uint64_t> auxv) {
  ASSIGN_OR_RETURN_ERRNO(GuestAddr stack_lo, [&]() -> SysResult<GuestAddr> {
    mm::MMapOpts o;
    o.addr = GuestAddr(kMaxUserAddress - kStackSize);
    o.len = kStackSize;
    o.prot = PROT_READ | PROT_WRITE;
    o.flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_GROWSDOWN;
    o.name = "[stack]";
    return mm.MMap(o);
  }());
  mm.set_stack_range(stack_lo, GuestAddr(kMaxUserAddress));

  // Strings block at the top: argv strings, envp strings, execfn, platform, random.
  std::string block;
  std::vector<uint64_t> argv_off, envp_off;
  for (const auto& a : argv) argv_off.push_back(block.size()), block.append(a).push_back('\0');
  for (const auto& e : envp) envp_off.push_back(block.size()), block.append(e).push_back('\0');
  uint64_t execfn_off = block.size();
  block.append(execfn).push_back('\0');
  uint64_t platform_off = block.size();
  block.append("x86_64").push_back('\0');
  uint64_t random_off = block.size();
  uint8_t rnd[16];
  if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) memset(rnd, 0x5a, sizeof(rnd));
  block.append(reinterpret_cast<char*>(rnd), sizeof(rnd));
  if (block.size() > kMaxArgBytes) return Errno{E2BIG};

  uint64_t top = kMaxUserAddress - 16;
  uint64_t strings = (top - block.size()) & ~uint64_t{15};
  RETURN_IF_ERRNO(mm.CopyOut(GuestAddr(strings), block.data(), block.size()));

  auxv.insert(auxv.end(), {AT_EXECFN, strings + execfn_off, AT_PLATFORM, strings + platform_off,
                           AT_RANDOM, strings + random_off, AT_NULL, 0});
  std::vector<uint64_t> words;
  words.push_back(argv.size());
  for (uint64_t off : argv_off) words.push_back(strings + off);
  words.push_back(0);
  for (uint64_t off : envp_off) words.push_back(strings + off);
  words.push_back(0);
  words.insert(words.end(), auxv.begin(), auxv.end());
  uint64_t sp = (strings - words.size() * 8) & ~uint64_t{15};
  RETURN_IF_ERRNO(mm.CopyOut(GuestAddr(sp), words.data(), words.size() * 8));

  mm.arg_start = argv_off.empty() ? strings : strings + argv_off.front();
  mm.arg_end = strings + (envp_off.empty() ? execfn_off : envp_off.front());
  mm.env_start = mm.arg_end;
  mm.env_end = strings + execfn_off;
  mm.auxv = std::move(auxv);
  return sp;
}

// The policy's exec allowlist, checked on the file execve resolved (symlinks followed)
// and on a script's interpreter alike: allowing a script does not allow whatever its
// "#!" line names. The ELF interpreter (ld.so) is part of the program, not checked.
// With an allowlist, a file written in the sandbox's writable layer is never run, even
// at an allowed path: the app could otherwise copy any binary over /usr/bin/python3.
SysStatus CheckExecRules(Task& task, const vfs::FileDescription& file,
                         const std::string& resolved) {
  const Kernel& k = task.kernel();
  const policy::ExecRules& rules = k.options().exec_rules;
  if (!rules.restricted) return SysOk();
  const char* reason = nullptr;
  if (!rules.Allows(resolved)) {
    reason = "not in the exec allowlist";
  } else if (auto* o = dynamic_cast<const fsimpl::OverlayInode*>(file.inode());
             o && o->has_upper()) {
    reason = "allowed path, but the file was written in the sandbox";
  }
  if (reason == nullptr) return SysOk();
  k.audit().Denied(task.thread_group().pid(), "exec", resolved, EACCES, reason, "exec.allow");
  return Errno{EACCES};
}

}  // namespace

SysResult<LoadedImage> Load(Task& task, const std::string& path, std::vector<std::string> argv,
                            const std::vector<std::string>& envp) {
  std::string cur = path;
  OpenedElf main;
  std::vector<uint8_t> head(kElfReadAhead);
  for (int depth = 0;; depth++) {
    if (depth > kMaxScriptDepth) return Errno{ELOOP};
    ASSIGN_OR_RETURN_ERRNO(main.file, vfs::OpenForExec(task, cur));
    RETURN_IF_ERRNO(CheckExecRules(task, *main.file, vfs::FilePath(task, *main.file)));
    ASSIGN_OR_RETURN_ERRNO(size_t got, ReadFully(*main.file, head.data(), head.size(), 0));
    absl::Span<const uint8_t> bytes(head.data(), got);
    if (LooksLikeScript(bytes)) {
      ASSIGN_OR_RETURN_ERRNO(Shebang sb, ParseShebang(bytes));
      // argv becomes: interpreter [arg] script-path original-argv[1:]
      std::vector<std::string> nargv{sb.interpreter};
      if (sb.arg) nargv.push_back(*sb.arg);
      nargv.push_back(cur);
      for (size_t i = 1; i < argv.size(); i++) nargv.push_back(std::move(argv[i]));
      argv = std::move(nargv);
      cur = sb.interpreter;
      continue;
    }
    ASSIGN_OR_RETURN_ERRNO(main.info, ReadElf(*main.file, bytes));
    break;
  }
  main.path = vfs::FilePath(task, *main.file);

  auto mm = std::make_shared<mm::MemoryManager>(&task.kernel().memory_file(), kMaxUserAddress);
  mm->set_demand_fill(task.kernel().platform().FaultsAreCheap());
  uint64_t bias = main.info.header.type == ElfType::kDyn ? kPieBase - main.info.load_start : 0;
  RETURN_IF_ERRNO(MapElf(*mm, main, bias));
  mm->SetBrkBase(GuestAddr(bias + main.info.load_end));
  mm->executable_path = main.path;
  // The host vDSO, where the platform keeps it in every address space (before the
  // interpreter takes a gap, so that it avoids the block), clear of the stack: below it,
  // or above the app's range (ASLR puts the host's there in ~1 run of 16; the platform
  // keeps it below its own pages either way).
  uint64_t vdso_ehdr = 0;
  if (const platform::HostVdso* v = task.kernel().platform().Vdso();
      v && (v->end <= kMaxUserAddress - kStackSize || v->start >= kMaxUserAddress)) {
    std::vector<mm::MemoryManager::HostMapping> parts;
    for (const auto& p : v->parts) parts.push_back({p.start, p.end, p.prot, p.name});
    if (mm->AddHostMappings(parts).ok()) vdso_ehdr = v->ehdr;
  }

  uint64_t entry = bias + main.info.header.entry;
  uint64_t interp_bias = 0;
  if (!main.info.interp.empty()) {
    OpenedElf interp;
    ASSIGN_OR_RETURN_ERRNO(interp.file, vfs::OpenForExec(task, main.info.interp));
    ASSIGN_OR_RETURN_ERRNO(size_t got, ReadFully(*interp.file, head.data(), head.size(), 0));
    auto info = ReadElf(*interp.file, absl::Span<const uint8_t>(head.data(), got));
    if (!info.ok() || !info->interp.empty()) return Errno{ELIBBAD};
    interp.info = std::move(info).value();
    interp.path = vfs::FilePath(task, *interp.file);
    uint64_t span = interp.info.load_end - interp.info.load_start;
    if (interp.info.header.type == ElfType::kDyn) {
      ASSIGN_OR_RETURN_ERRNO(GuestAddr base, mm->FindGap(span, GuestAddr()));
      interp_bias = base.value() - interp.info.load_start;
    }
    RETURN_IF_ERRNO(MapElf(*mm, interp, interp_bias));
    entry = interp_bias + interp.info.header.entry;
  }

  const Credentials& c = task.creds();
  std::optional<uint64_t> phdr = main.info.PhdrAddress();
  std::vector<uint64_t> auxv = {
      AT_HWCAP,
      getauxval(AT_HWCAP),
      AT_PAGESZ,
      kPageSize,
      AT_CLKTCK,
      100,
      AT_PHDR,
      phdr ? bias + *phdr : 0,
      AT_PHENT,
      kElfPhdrSize,
      AT_PHNUM,
      main.info.header.phnum,
      AT_BASE,
      interp_bias,
      AT_FLAGS,
      0,
      AT_ENTRY,
      bias + main.info.header.entry,
      AT_UID,
      c.ruid,
      AT_EUID,
      c.euid,
      AT_GID,
      c.rgid,
      AT_EGID,
      c.egid,
      AT_SECURE,
      0,
      AT_HWCAP2,
      getauxval(AT_HWCAP2),
      // glibc sizes signal stacks from this; AVX-512 hosts need more than MINSIGSTKSZ.
      AT_MINSIGSTKSZ,
      getauxval(AT_MINSIGSTKSZ),
  };
  if (vdso_ehdr != 0) auxv.insert(auxv.begin(), {AT_SYSINFO_EHDR, vdso_ehdr});
  ASSIGN_OR_RETURN_ERRNO(uint64_t sp, BuildStack(*mm, argv, envp, path, std::move(auxv)));

  LoadedImage img;
  img.mm = std::move(mm);
  img.entry = entry;
  img.sp = sp;
  // Like Linux, the name is that of the file execve was given (the script, not its
  // interpreter).
  std::string base = path.substr(path.find_last_of('/') + 1);
  img.comm = base.substr(0, 15);
  return img;
}

}  // namespace usentry::sentry::loader
