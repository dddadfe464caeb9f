// Tests of ELF / "#!" parsing against real host binaries and hand-built malformed files.
#include "sentry/loader/elf.h"

#include <elf.h>
#include <sys/mman.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace usentry::sentry::loader {
namespace {

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

absl::Span<const uint8_t> Bytes(const std::string& s) {
  return absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// Checks that hold for every well-formed file.
void ExpectConsistent(const ElfInfo& info) {
  ASSERT_FALSE(info.loads.empty());
  for (size_t i = 0; i < info.loads.size(); ++i) {
    const LoadSegment& s = info.loads[i];
    EXPECT_LE(s.filesz, s.memsz);
    EXPECT_EQ((s.vaddr - s.offset) % kElfPageSize, 0u);
    EXPECT_GE(s.vaddr, info.load_start);
    EXPECT_LE(s.vaddr + s.memsz, info.load_end);
    if (i > 0) {
      EXPECT_GE(s.vaddr, info.loads[i - 1].vaddr + info.loads[i - 1].memsz);
    }
  }
  EXPECT_EQ(info.load_start % kElfPageSize, 0u);
  EXPECT_EQ(info.load_end % kElfPageSize, 0u);
  // The entry point is inside an executable segment.
  bool entry_ok = false;
  for (const LoadSegment& s : info.loads) {
    if (info.header.entry >= s.vaddr && info.header.entry < s.vaddr + s.memsz) {
      entry_ok = (s.prot & PROT_EXEC) != 0;
    }
  }
  EXPECT_TRUE(entry_ok) << std::hex << info.header.entry;
  EXPECT_TRUE(info.PhdrAddress().has_value());
}

// The loader's two-step path: header from the first page, then the phdrs on request.
SysResult<ElfInfo> ParseTwoStep(const std::vector<uint8_t>& file) {
  absl::Span<const uint8_t> all(file);
  auto first_page = all.subspan(0, kElfReadAhead);
  auto header = ParseHeader(first_page);
  if (!header.ok()) return Errno{header.error()};
  return ParseProgramHeaders(*header, all.subspan(header->phoff, header->PhdrsSize()));
}

TEST(ElfRealBinaries, DynamicPieLs) {
  auto file = ReadFile("/bin/ls");
  ASSERT_FALSE(file.empty());
  auto info = ParseElf(file);
  ASSERT_TRUE(info.ok()) << info.error();
  EXPECT_EQ(info->header.type, ElfType::kDyn);
  EXPECT_EQ(info->interp, "/lib64/ld-linux-x86-64.so.2");
  ASSERT_TRUE(info->interp_range.has_value());
  EXPECT_EQ(info->interp_range->size, info->interp.size() + 1);
  EXPECT_TRUE(info->has_gnu_stack);
  EXPECT_FALSE(info->executable_stack);
  ASSERT_TRUE(info->phdr_vaddr.has_value());
  EXPECT_EQ(info->PhdrAddress(), info->phdr_vaddr);
  EXPECT_EQ(info->load_start, 0u);
  ExpectConsistent(*info);

  auto two_step = ParseTwoStep(file);
  ASSERT_TRUE(two_step.ok());
  EXPECT_EQ(two_step->loads.size(), info->loads.size());
  EXPECT_TRUE(two_step->interp.empty());  // the caller reads interp_range itself
  EXPECT_TRUE(two_step->interp_range.has_value());
}

TEST(ElfRealBinaries, StaticBusybox) {
  auto file = ReadFile("/usr/bin/busybox");
  if (file.empty()) GTEST_SKIP() << "no /usr/bin/busybox";
  auto info = ParseElf(file);
  ASSERT_TRUE(info.ok()) << info.error();
  EXPECT_TRUE(info->interp.empty());
  EXPECT_FALSE(info->interp_range.has_value());
  ExpectConsistent(*info);
  if (info->header.type == ElfType::kExec) {
    EXPECT_GT(info->load_start, 0u);
    // No PT_PHDR in a static non-PIE binary: AT_PHDR comes from the first load.
    if (!info->phdr_vaddr) {
      EXPECT_EQ(*info->PhdrAddress(), info->loads[0].vaddr + info->header.phoff);
    }
  }
  // A writable data segment with bss.
  bool has_bss = false;
  for (const LoadSegment& s : info->loads) has_bss |= (s.prot & PROT_WRITE) && s.memsz > s.filesz;
  EXPECT_TRUE(has_bss);
}

TEST(ElfRealBinaries, DynamicLinkerItself) {
  auto file = ReadFile("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
  ASSERT_FALSE(file.empty());
  auto info = ParseElf(file);
  ASSERT_TRUE(info.ok()) << info.error();
  EXPECT_EQ(info->header.type, ElfType::kDyn);
  EXPECT_FALSE(info->interp_range.has_value());
  EXPECT_EQ(info->load_start, 0u);
  ExpectConsistent(*info);
}

#ifdef USENTRY_STATIC_PIE_PATH
TEST(ElfRealBinaries, StaticPie) {
  auto file = ReadFile(USENTRY_STATIC_PIE_PATH);
  ASSERT_FALSE(file.empty());
  auto info = ParseElf(file);
  ASSERT_TRUE(info.ok()) << info.error();
  EXPECT_EQ(info->header.type, ElfType::kDyn);
  EXPECT_FALSE(info->interp_range.has_value());
  ExpectConsistent(*info);
}
#endif

// ---- Malformed inputs --------------------------------------------------------------

// A minimal valid static executable: header, `nphdr` program headers, one load.
struct TestElf {
  Elf64_Ehdr eh{};
  std::vector<Elf64_Phdr> ph;

  TestElf() {
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_entry = 0x401000;
    eh.e_phoff = sizeof(Elf64_Ehdr);
    eh.e_ehsize = sizeof(Elf64_Ehdr);
    eh.e_phentsize = sizeof(Elf64_Phdr);
    ph.push_back(Load(0x400000, 0, 0x2000, 0x2000, PF_R | PF_X));
  }

  static Elf64_Phdr Load(uint64_t vaddr, uint64_t off, uint64_t filesz, uint64_t memsz,
                         uint32_t flags) {
    Elf64_Phdr p{};
    p.p_type = PT_LOAD;
    p.p_vaddr = p.p_paddr = vaddr;
    p.p_offset = off;
    p.p_filesz = filesz;
    p.p_memsz = memsz;
    p.p_flags = flags;
    p.p_align = 0x1000;
    return p;
  }

  std::vector<uint8_t> Build(size_t pad_to = 4096) {
    eh.e_phnum = ph.size();
    std::vector<uint8_t> out(sizeof(eh) + ph.size() * sizeof(Elf64_Phdr));
    std::memcpy(out.data(), &eh, sizeof(eh));
    if (!ph.empty()) std::memcpy(out.data() + sizeof(eh), ph.data(), ph.size() * sizeof(ph[0]));
    if (out.size() < pad_to) out.resize(pad_to);
    return out;
  }
};

int ErrorOf(const std::vector<uint8_t>& file) {
  auto r = ParseElf(file);
  return r.ok() ? 0 : r.error();
}

TEST(ElfMalformed, MinimalFileIsValid) {
  TestElf t;
  auto info = ParseElf(t.Build());
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->header.type, ElfType::kExec);
  EXPECT_EQ(info->loads.size(), 1u);
  EXPECT_EQ(info->loads[0].prot, PROT_READ | PROT_EXEC);
  EXPECT_EQ(info->load_start, 0x400000u);
  EXPECT_EQ(info->load_end, 0x402000u);
  EXPECT_FALSE(info->has_gnu_stack);
  EXPECT_FALSE(info->executable_stack);
  EXPECT_EQ(info->PhdrAddress(), 0x400040u);
}

TEST(ElfMalformed, Truncated) {
  TestElf t;
  auto file = t.Build(0);
  EXPECT_EQ(ErrorOf({}), ENOEXEC);
  EXPECT_EQ(ErrorOf(std::vector<uint8_t>(file.begin(), file.begin() + 63)), ENOEXEC);
  // Header complete, program headers cut off.
  EXPECT_EQ(ErrorOf(std::vector<uint8_t>(file.begin(), file.end() - 1)), ENOEXEC);
  auto header = ParseHeader(file);
  ASSERT_TRUE(header.ok());
  EXPECT_FALSE(PhdrsWithin(*header, file.size() - 1));
  EXPECT_EQ(ParseProgramHeaders(*header, absl::Span<const uint8_t>(file).subspan(64, 55)).error(),
            ENOEXEC);
}

TEST(ElfMalformed, HandMadeHeaderIsCheckedToo) {
  TestElf t;
  auto file = t.Build();
  auto header = ParseHeader(file);
  ASSERT_TRUE(header.ok());
  ElfHeader bad = *header;
  bad.phentsize = 8;  // a stride shorter than the entries we copy
  EXPECT_EQ(ParseProgramHeaders(bad, absl::Span<const uint8_t>(file).subspan(64)).error(), ENOEXEC);
}

TEST(ElfMalformed, WrongIdentOrMachine) {
  {
    TestElf t;
    t.eh.e_ident[1] = 'X';
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;
    t.eh.e_ident[EI_CLASS] = ELFCLASS32;
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;
    t.eh.e_ident[EI_DATA] = ELFDATA2MSB;
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;
    t.eh.e_machine = EM_AARCH64;
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;
    t.eh.e_type = ET_REL;
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
}

TEST(ElfMalformed, ProgramHeaderTable) {
  {
    TestElf t;
    t.eh.e_phentsize = 32;
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;
    t.ph.clear();
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);  // phnum 0
  }
  {
    TestElf t;
    t.ph.resize(257, t.ph[0]);
    EXPECT_EQ(ErrorOf(t.Build(1 << 16)), ENOEXEC);
  }
  {
    TestElf t;
    t.eh.e_phoff = ~uint64_t{0} - 10;  // phoff + size overflows
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;
    t.eh.e_phoff = 1 << 20;  // beyond the provided bytes
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;
    t.ph[0].p_type = PT_NOTE;  // no PT_LOAD at all
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
}

TEST(ElfMalformed, BadLoads) {
  {
    TestElf t;
    t.ph[0].p_filesz = t.ph[0].p_memsz + 1;
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;
    t.ph[0].p_offset = 0x10;  // not congruent with vaddr
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;
    t.ph[0].p_vaddr = ~uint64_t{0} - 0xfff;  // vaddr + memsz overflows
    t.ph[0].p_offset = 0;
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;
    t.ph[0].p_vaddr = kUserAddressLimit - 0x1000;  // ends above user space
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;
    t.ph[0].p_offset = ~uint64_t{0} & ~uint64_t{0xfff};  // offset + filesz overflows
    t.ph[0].p_vaddr = 0x400000;
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;  // overlapping
    t.ph.push_back(TestElf::Load(0x401000, 0x1000, 0x1000, 0x1000, PF_R | PF_W));
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;  // unsorted
    t.ph.insert(t.ph.begin(), TestElf::Load(0x600000, 0, 0x1000, 0x1000, PF_R | PF_W));
    EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
  }
  {
    TestElf t;  // disjoint and sorted: fine; bss rounds load_end up
    t.ph.push_back(TestElf::Load(0x402010, 0x2010, 0x10, 0x3000, PF_R | PF_W));
    auto info = ParseElf(t.Build(0x2020));
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->load_end, 0x406000u);
    EXPECT_EQ(info->loads[1].prot, PROT_READ | PROT_WRITE);
  }
}

TEST(ElfMalformed, Interp) {
  auto with_interp = [](const std::string& path_bytes) {
    TestElf t;
    Elf64_Phdr p{};
    p.p_type = PT_INTERP;
    p.p_offset = 0x800;
    p.p_filesz = path_bytes.size();
    t.ph.insert(t.ph.begin(), p);
    auto file = t.Build(0x800 + path_bytes.size());
    std::memcpy(file.data() + 0x800, path_bytes.data(), path_bytes.size());
    return ParseElf(file);
  };
  auto ok = with_interp(std::string("/lib/ld.so\0", 11));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->interp, "/lib/ld.so");
  EXPECT_EQ(with_interp("/lib/ld.so").error(), ENOEXEC);  // not NUL-terminated
  EXPECT_EQ(with_interp(std::string("/lib\0/ld.so\0", 12)).error(), ENOEXEC);
  EXPECT_EQ(with_interp(std::string("\0", 1)).error(), ENOEXEC);
  EXPECT_EQ(with_interp(std::string(4096, 'a') + '\0').error(), ENOEXEC);  // 4097 bytes
  auto longest = with_interp(std::string(4095, 'a') + '\0');
  EXPECT_TRUE(longest.ok());

  // The range lies beyond the bytes given.
  TestElf t;
  Elf64_Phdr p{};
  p.p_type = PT_INTERP;
  p.p_offset = 0x10000;
  p.p_filesz = 16;
  t.ph.push_back(p);
  EXPECT_EQ(ErrorOf(t.Build()), ENOEXEC);
}

TEST(ElfMalformed, GnuStackAndPhdr) {
  TestElf t;
  Elf64_Phdr stack{};
  stack.p_type = PT_GNU_STACK;
  stack.p_flags = PF_R | PF_W | PF_X;
  t.ph.push_back(stack);
  Elf64_Phdr phdr{};
  phdr.p_type = PT_PHDR;
  phdr.p_vaddr = 0x400040;
  t.ph.push_back(phdr);
  auto info = ParseElf(t.Build());
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->has_gnu_stack);
  EXPECT_TRUE(info->executable_stack);
  EXPECT_EQ(info->phdr_vaddr, 0x400040u);
}

// ---- Scripts -----------------------------------------------------------------------

TEST(Shebang, Basic) {
  EXPECT_TRUE(LooksLikeScript(Bytes("#!/bin/sh\n")));
  EXPECT_FALSE(LooksLikeScript(Bytes("#/bin/sh\n")));
  EXPECT_FALSE(LooksLikeScript(Bytes("#")));

  auto s = ParseShebang(Bytes("#!/bin/sh\necho hi\n"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->interpreter, "/bin/sh");
  EXPECT_FALSE(s->arg.has_value());
}

TEST(Shebang, SpacesAndOneArgument) {
  auto s = ParseShebang(Bytes("#! \t/usr/bin/env  python3 -u  \t\nprint(1)\n"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->interpreter, "/usr/bin/env");
  ASSERT_TRUE(s->arg.has_value());
  EXPECT_EQ(*s->arg, "python3 -u");  // one argument, inner spaces kept

  auto t = ParseShebang(Bytes("#!/bin/sh   \n"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->interpreter, "/bin/sh");
  EXPECT_FALSE(t->arg.has_value());
}

TEST(Shebang, NoNewline) {
  auto s = ParseShebang(Bytes("#!/bin/sh -e"));  // short file, no newline
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->interpreter, "/bin/sh");
  EXPECT_EQ(s->arg, "-e");

  // A line longer than the buffer: fine if the interpreter ends inside it, the
  // argument is truncated.
  std::string long_arg = "#!/bin/sh " + std::string(400, 'x');
  auto l = ParseShebang(Bytes(long_arg));
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->interpreter, "/bin/sh");
  EXPECT_EQ(l->arg->size(), kShebangBufSize - 1 - 10);

  // ENOEXEC if the interpreter path itself may be cut off.
  std::string long_name = "#!/" + std::string(400, 'x');
  EXPECT_EQ(ParseShebang(Bytes(long_name)).error(), ENOEXEC);
}

TEST(Shebang, Empty) {
  EXPECT_EQ(ParseShebang(Bytes("#!\n")).error(), ENOEXEC);
  EXPECT_EQ(ParseShebang(Bytes("#!   \t \n/bin/sh\n")).error(), ENOEXEC);
  EXPECT_EQ(ParseShebang(Bytes("#!")).error(), ENOEXEC);
  EXPECT_EQ(ParseShebang(Bytes("#!" + std::string(300, ' '))).error(), ENOEXEC);
  EXPECT_EQ(ParseShebang(Bytes("ELF")).error(), ENOEXEC);
}

}  // namespace
}  // namespace usentry::sentry::loader
