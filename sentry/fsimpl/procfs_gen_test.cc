// procfs text formats: stat's 52 fields, maps columns, mounts, status, system files.
#include "sentry/fsimpl/procfs_gen.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "sentry/fsimpl/procfs_nodes.h"

namespace usentry::sentry::fsimpl {
namespace {

TEST(ProcfsGenTest, StatHas52FieldsAndParsesAfterComm) {
  ProcStatInfo s;
  s.pid = 42;
  s.comm = "my prog) x";  // parsers split at the last ')'
  s.state = 'R';
  s.ppid = 1;
  s.pgrp = 42;
  s.session = 7;
  s.num_threads = 3;
  s.vsize = 1 << 20;
  s.arg_start = 0x1000;
  s.exit_code = 0;
  std::string line = FormatStat(s);
  ASSERT_EQ(line.back(), '\n');
  size_t close = line.rfind(')');
  EXPECT_EQ(line.substr(0, 4), "42 (");
  std::vector<std::string> rest =
      absl::StrSplit(line.substr(close + 2, line.size() - close - 3), ' ');
  ASSERT_EQ(rest.size(), 50u);  // fields 3..52
  EXPECT_EQ(rest[0], "R");
  EXPECT_EQ(rest[1], "1");         // ppid
  EXPECT_EQ(rest[2], "42");        // pgrp
  EXPECT_EQ(rest[3], "7");         // session
  EXPECT_EQ(rest[17], "3");        // num_threads (field 20)
  EXPECT_EQ(rest[20], "1048576");  // vsize (field 23)
  EXPECT_EQ(rest[45], "4096");     // arg_start (field 48)
}

TEST(ProcfsGenTest, MapsLine) {
  ProcMapsEntry anon{0x7f0000000000, 0x7f0000001000, PROT_READ | PROT_WRITE, false, 0, 0, 0, ""};
  EXPECT_EQ(FormatMapsLine(anon), "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n");
  ProcMapsEntry file{0x400000,        0x401000, PROT_READ | PROT_EXEC, false, 0x2000,
                     (8ull << 8) | 1, 1234,     "/usr/bin/true"};
  std::string line = FormatMapsLine(file);
  EXPECT_EQ(line.substr(0, 44), "00400000-00401000 r-xp 00002000 08:01 1234  ");
  EXPECT_EQ(line.find("/usr/bin/true"), 73u);
  ProcMapsEntry shared{0x1000, 0x2000, PROT_READ, true, 0, 0, 0, "[heap]"};
  EXPECT_NE(FormatMapsLine(shared).find(" r--s "), std::string::npos);
}

TEST(ProcfsGenTest, LimitsAsLinuxPrintsThem) {
  std::vector<ProcLimit> l(16, ProcLimit{RLIM_INFINITY, RLIM_INFINITY});
  l[RLIMIT_NOFILE] = {1024, 4096};
  const std::string text = FormatLimits(l);
  EXPECT_NE(
      text.find("Max open files            1024                 4096                 files     \n"),
      std::string::npos);
  // No unit: the line ends after the hard limit's padding.
  EXPECT_NE(text.find("Max nice priority         unlimited            unlimited            \n"),
            std::string::npos);
}

TEST(ProcfsGenTest, SmapsRollupFields) {
  ProcSmapsRollup r;
  r.start = 0x400000;
  r.end = 0x7ffff000;
  r.rss = r.pss = r.private_dirty = r.anonymous = r.pss_anon = 2048 * 1024;
  const std::string text = FormatSmapsRollup(r);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "00400000-7ffff000 ---p 00000000 00:00 0                                  [rollup]");
  EXPECT_NE(text.find("\nRss:                2048 kB\n"), std::string::npos);
  EXPECT_NE(text.find("\nPss_Dirty:          2048 kB\n"), std::string::npos);
  EXPECT_NE(text.find("\nLocked:                0 kB\n"), std::string::npos);
}

TEST(ProcfsGenTest, Mounts) {
  ProcMountEntry m{3, 1, 0x10, "/tmp", "tmpfs", false, false};
  EXPECT_EQ(FormatMountsLine(m), "tmpfs /tmp tmpfs rw 0 0\n");
  ProcMountEntry p{4, 1, 0x11, "/proc", "proc", true, true};
  EXPECT_EQ(FormatMountsLine(p), "proc /proc proc ro,noexec 0 0\n");
  EXPECT_EQ(FormatMountinfoLine(m), "3 1 0:16 / /tmp rw - tmpfs tmpfs rw\n");
}

TEST(ProcfsGenTest, Status) {
  ProcStatusInfo s;
  s.name = "sh";
  s.tgid = s.pid = 5;
  s.ppid = 1;
  s.uid[0] = s.uid[1] = 1000;
  s.threads = 2;
  s.sig_blk = 1 << 1;
  s.ncpus = 4;
  std::string t = FormatStatus(s);
  EXPECT_NE(t.find("Name:\tsh\n"), std::string::npos);
  EXPECT_NE(t.find("State:\tS (sleeping)\n"), std::string::npos);
  EXPECT_NE(t.find("Tgid:\t5\n"), std::string::npos);
  EXPECT_NE(t.find("PPid:\t1\n"), std::string::npos);
  EXPECT_NE(t.find("Uid:\t1000\t1000\t0\t0\n"), std::string::npos);
  EXPECT_NE(t.find("Threads:\t2\n"), std::string::npos);
  EXPECT_NE(t.find("SigBlk:\t0000000000000002\n"), std::string::npos);
  EXPECT_NE(t.find("Cpus_allowed_list:\t0-3\n"), std::string::npos);
}

TEST(ProcfsGenTest, SystemFiles) {
  std::string cpu = GenerateCpuinfo(2);
  EXPECT_NE(cpu.find("processor\t: 0\n"), std::string::npos);
  EXPECT_NE(cpu.find("processor\t: 1\n"), std::string::npos);
  EXPECT_EQ(cpu.find("processor\t: 2\n"), std::string::npos);
  EXPECT_NE(cpu.find("flags\t\t: fpu"), std::string::npos);
  std::string stat = GenerateProcStat(2, 1700000000, 3, 1);
  EXPECT_NE(stat.find("\ncpu1 "), std::string::npos);
  EXPECT_NE(stat.find("btime 1700000000\n"), std::string::npos);
  std::string mem = GenerateMeminfo(1000, 400);
  EXPECT_NE(mem.find("MemTotal:           1000 kB\n"), std::string::npos);
  EXPECT_NE(mem.find("MemFree:             600 kB\n"), std::string::npos);
  EXPECT_NE(mem.find("MemAvailable:"), std::string::npos);
  EXPECT_EQ(GenerateUptime(12.5, 2), "12.50 25.00\n");
  EXPECT_EQ(GenerateLoadavg(1, 4, 9), "0.00 0.00 0.00 1/4 9\n");
  EXPECT_EQ(GenerateVersion().rfind("Linux version ", 0), 0u);
  EXPECT_GE(HostCpuCount(), 1);
  std::string u = RandomUuid();
  ASSERT_EQ(u.size(), 37u);
  EXPECT_EQ(u[14], '4');
  EXPECT_NE(u, RandomUuid());
}

TEST(ProcfsNodesTest, GeneratedFileIsSnapshotAndReadOnly) {
  auto fs = std::make_shared<ProcFilesystem>();
  int calls = 0;
  auto inode = NewProcFile(fs, "x/y", ProcOwner{}, [&]() -> SysResult<std::string> {
    ++calls;
    return std::string("hello world\n");
  });
  EXPECT_EQ(inode->Open(vfs::Path{}, O_WRONLY).error(), EACCES);
  EXPECT_EQ(inode->Open(vfs::Path{}, O_RDWR).error(), EACCES);
  auto f = inode->Open(vfs::Path{}, O_RDONLY);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(calls, 1);
  std::string buf(5, '\0');
  iovec v{buf.data(), buf.size()};
  ASSERT_EQ((*f)->Read(nullptr, absl::MakeConstSpan(&v, 1), -1).value(), 5u);
  EXPECT_EQ(buf, "hello");
  ASSERT_EQ((*f)->Read(nullptr, absl::MakeConstSpan(&v, 1), 6).value(), 5u);
  EXPECT_EQ(buf, "world");
  EXPECT_EQ((*f)->Seek(0, SEEK_END).value(), 12);
  EXPECT_EQ((*f)->Read(nullptr, absl::MakeConstSpan(&v, 1), -1).value(), 0u);
  EXPECT_EQ(calls, 1);  // reads never regenerate
  auto a = inode->Stat();
  EXPECT_EQ(a->mode, static_cast<uint32_t>(S_IFREG | 0444));
  EXPECT_EQ(a->ino, ProcIno("x/y"));
  EXPECT_EQ(a->ino, NewProcFile(fs, "x/y", ProcOwner{}, nullptr)->Stat()->ino);
}

TEST(ProcfsNodesTest, StaticDirAndSymlink) {
  auto fs = std::make_shared<ProcFilesystem>();
  auto link = NewProcSymlink(fs, "l", ProcOwner{},
                             []() -> SysResult<std::string> { return std::string("self/mounts"); });
  auto dir = NewProcStaticDir(fs, "d", {{"l", link}});
  EXPECT_TRUE(dir->IsDir());
  EXPECT_EQ(dir->Lookup("l").value(), link);
  EXPECT_EQ(dir->Lookup("m").error(), ENOENT);
  EXPECT_EQ(link->Readlink().value(), "self/mounts");
  auto entries = dir->ReadDir();
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].type, DT_LNK);
  EXPECT_EQ(fs->StatFs()->f_type, 0x9fa0);
}

}  // namespace
}  // namespace usentry::sentry::fsimpl
