// overlay semantics over a tmpfs-backed fake lower layer (the gofer-backed lower is
// exercised in gofer_fs_test.cc).
#include "sentry/fsimpl/overlay.h"

#include <dirent.h>
#include <linux/fs.h>
#include <sys/mman.h>

#include <cstring>

#include "gtest/gtest.h"
#include "sentry/fsimpl/tmpfs.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry::fsimpl {
namespace {

using vfs::Attr;
using vfs::ResolveContext;

class OverlayTest : public ::testing::Test {
 protected:
  OverlayTest() {
    budget_ = std::make_shared<ByteBudget>(1 << 20);
    lower_fs_ = std::make_shared<TmpfsFilesystem>(std::make_shared<ByteBudget>(1 << 20), mf_.get());
    lower_root_ = lower_fs_->NewRoot(0755, 0, 0);
    // Lower tree: /etc/passwd, /etc/dir/a, /bin/sh -> busybox, /bin/busybox (0755)
    auto etc = *lower_root_->Mkdir("etc", 0755, 0, 0);
    WriteInode(*etc->Create("passwd", 0644, 0, 0), "root:x:0:0");
    auto dir = *etc->Mkdir("dir", 0755, 0, 0);
    WriteInode(*dir->Create("a", 0600, 1000, 1000), "A");
    auto bin = *lower_root_->Mkdir("bin", 0755, 0, 0);
    WriteInode(*bin->Create("busybox", 0755, 0, 0), "ELF");
    (void)bin->Symlink("sh", "busybox", 0, 0);
    upper_fs_ = std::make_shared<TmpfsFilesystem>(budget_, mf_.get());
    ov_ = std::make_shared<OverlayFilesystem>(upper_fs_, upper_fs_->NewRoot(0755, 0, 0), lower_fs_,
                                              lower_root_);
    vfs_ = std::make_unique<vfs::Vfs>(ov_, ov_->root());
  }

  static void WriteInode(std::shared_ptr<vfs::Inode> i, const std::string& s) {
    auto* t = dynamic_cast<TmpfsInode*>(i.get());
    iovec v{const_cast<char*>(s.data()), s.size()};
    ASSERT_TRUE(t->WriteData(absl::MakeConstSpan(&v, 1), 0).ok());
  }
  ResolveContext Ctx() { return ResolveContext{&root_, vfs_->root(), vfs_->root(), 022}; }
  std::string Read(const std::string& path) {
    auto f = vfs_->Open(Ctx(), path, O_RDONLY, 0);
    if (!f.ok()) return "<errno " + std::to_string(f.error()) + ">";
    std::string out(4096, '\0');
    iovec v{out.data(), out.size()};
    auto n = (*f)->Read(nullptr, absl::MakeConstSpan(&v, 1), -1);
    out.resize(n.ok() ? *n : 0);
    return out;
  }
  void Append(const std::string& path, const std::string& s) {
    auto f = vfs_->Open(Ctx(), path, O_WRONLY | O_APPEND, 0);
    ASSERT_TRUE(f.ok()) << f.error();
    iovec v{const_cast<char*>(s.data()), s.size()};
    ASSERT_TRUE((*f)->Write(nullptr, absl::MakeConstSpan(&v, 1), -1).ok());
  }
  std::string LowerRead(const std::string& dir, const std::string& name) {
    auto d = lower_root_->Lookup(dir);
    auto f = (*d)->Lookup(name);
    if (!f.ok()) return "<absent>";
    std::string out(4096, '\0');
    iovec v{out.data(), out.size()};
    auto n = dynamic_cast<TmpfsInode*>(f->get())->ReadData(absl::MakeConstSpan(&v, 1), 0);
    out.resize(*n);
    return out;
  }
  std::vector<std::string> List(const std::string& path) {
    auto f = vfs_->Open(Ctx(), path, O_RDONLY | O_DIRECTORY, 0);
    std::vector<std::string> out;
    if (!f.ok()) return {"<errno " + std::to_string(f.error()) + ">"};
    EXPECT_TRUE((*f)->IterateDir([&](const vfs::DirEntry& e, int64_t) {
                      out.push_back(e.name);
                      return true;
                    })
                    .ok());
    return out;
  }
  Attr StatOf(const std::string& path) {
    auto p = vfs_->Resolve(Ctx(), path, false);
    EXPECT_TRUE(p.ok()) << path;
    return p.ok() ? *p->inode()->Stat() : Attr{};
  }

  std::unique_ptr<mm::MemoryFile> mf_ = *mm::MemoryFile::Create(1ull << 32);  // file data
  Credentials root_;
  std::shared_ptr<ByteBudget> budget_;
  std::shared_ptr<TmpfsFilesystem> lower_fs_, upper_fs_;
  std::shared_ptr<vfs::Inode> lower_root_;
  std::shared_ptr<OverlayFilesystem> ov_;
  std::unique_ptr<vfs::Vfs> vfs_;
};

TEST_F(OverlayTest, ReadsThroughToLower) {
  EXPECT_EQ(Read("/etc/passwd"), "root:x:0:0");
  EXPECT_EQ(Read("/bin/sh"), "ELF");
  EXPECT_EQ(List("/"), (std::vector<std::string>{".", "..", "bin", "etc"}));
}

TEST_F(OverlayTest, CopyUpKeepsDataModeOwnerInoAndLeavesLowerUntouched) {
  Attr before = StatOf("/etc/dir/a");
  Append("/etc/dir/a", "B");
  EXPECT_EQ(Read("/etc/dir/a"), "AB");
  EXPECT_EQ(LowerRead("etc", "passwd"), "root:x:0:0");
  auto d = lower_root_->Lookup("etc");
  auto dir = (*d)->Lookup("dir");
  auto a = (*dir)->Lookup("a");
  std::string lower(8, '\0');
  iovec v{lower.data(), lower.size()};
  lower.resize(*dynamic_cast<TmpfsInode*>(a->get())->ReadData(absl::MakeConstSpan(&v, 1), 0));
  EXPECT_EQ(lower, "A");
  Attr after = StatOf("/etc/dir/a");
  EXPECT_EQ(after.ino, before.ino);
  EXPECT_EQ(after.dev, before.dev);
  EXPECT_EQ(after.mode, before.mode);
  EXPECT_EQ(after.uid, 1000u);
  EXPECT_EQ(after.gid, 1000u);
  EXPECT_EQ(after.mtime.tv_sec >= before.mtime.tv_sec, true);
}

// Opening a lower file for writing copies it up; a MAP_SHARED mapping of it then maps
// the upper copy's own pages: stores through them are what read() returns, the lower
// file stays untouched, and the mapping reports the overlay's identity.
TEST_F(OverlayTest, SharedMappingOfCopiedUpFileMapsTheUpperPages) {
  Attr st = StatOf("/etc/passwd");
  auto f = vfs_->Open(Ctx(), "/etc/passwd", O_RDWR, 0);
  ASSERT_TRUE(f.ok()) << f.error();
  mm::MMapOpts opts;
  opts.len = 4096;
  opts.prot = PROT_READ | PROT_WRITE;
  opts.flags = MAP_SHARED;
  ASSERT_TRUE((*f)->ConfigureMMap(opts).ok());
  ASSERT_NE(opts.shared_pages, nullptr);
  EXPECT_EQ(opts.ino, st.ino);
  EXPECT_EQ(opts.max_prot & PROT_WRITE, PROT_WRITE);
  char* pages = reinterpret_cast<char*>(opts.shared_pages->data());
  EXPECT_EQ(std::string(pages, 10), "root:x:0:0");
  memcpy(pages, "toor", 4);
  EXPECT_EQ(Read("/etc/passwd"), "toor:x:0:0");
  EXPECT_EQ(LowerRead("etc", "passwd"), "root:x:0:0");
  // A write through the description is seen in the pages.
  iovec v{const_cast<char*>("R"), 1};
  ASSERT_TRUE((*f)->Write(nullptr, absl::MakeConstSpan(&v, 1), 0).ok());
  EXPECT_EQ(pages[0], 'R');
}

// A read-only open of a lower file gives a read-only shared mapping (no PROT_WRITE even
// later through mprotect); writable shared mappings need a description opened for write.
TEST_F(OverlayTest, SharedMappingOfReadOnlyDescriptionIsNotWritable) {
  auto f = vfs_->Open(Ctx(), "/etc/passwd", O_RDONLY, 0);
  ASSERT_TRUE(f.ok());
  mm::MMapOpts opts;
  opts.len = 4096;
  opts.prot = PROT_READ | PROT_WRITE;
  opts.flags = MAP_SHARED;
  EXPECT_EQ((*f)->ConfigureMMap(opts).error(), EACCES);
  opts.prot = PROT_READ;
  ASSERT_TRUE((*f)->ConfigureMMap(opts).ok());
  EXPECT_EQ(opts.max_prot & PROT_WRITE, 0);
}

TEST_F(OverlayTest, ChmodCopiesUpWithoutChangingLower) {
  auto p = vfs_->Resolve(Ctx(), "/bin/busybox", true);
  vfs::SetAttrRequest req;
  req.mask = vfs::kSetMode;
  req.mode = 0700;
  ASSERT_TRUE(vfs_->SetAttr(Ctx(), *p, req).ok());
  EXPECT_EQ(StatOf("/bin/busybox").mode & 07777, 0700u);
  auto lb = *(*lower_root_->Lookup("bin"))->Lookup("busybox");
  EXPECT_EQ(lb->Stat()->mode & 07777, 0755u);
  EXPECT_EQ(Read("/bin/busybox"), "ELF");
}

TEST_F(OverlayTest, UnlinkLowerFileWhitesOut) {
  ASSERT_TRUE(vfs_->Unlink(Ctx(), "/etc/passwd").ok());
  EXPECT_EQ(vfs_->Resolve(Ctx(), "/etc/passwd", true).error(), ENOENT);
  EXPECT_EQ(List("/etc"), (std::vector<std::string>{".", "..", "dir"}));
  EXPECT_EQ(LowerRead("etc", "passwd"), "root:x:0:0");
  // Recreate over the whiteout.
  auto f = vfs_->Open(Ctx(), "/etc/passwd", O_CREAT | O_EXCL | O_WRONLY, 0600);
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(Read("/etc/passwd"), "");
  EXPECT_EQ(List("/etc"), (std::vector<std::string>{".", "..", "dir", "passwd"}));
  EXPECT_EQ(StatOf("/etc/passwd").mode & 07777, 0600u);
}

TEST_F(OverlayTest, RmdirThenMkdirIsOpaque) {
  EXPECT_EQ(vfs_->Rmdir(Ctx(), "/etc/dir").error(), ENOTEMPTY);
  ASSERT_TRUE(vfs_->Unlink(Ctx(), "/etc/dir/a").ok());
  EXPECT_EQ(List("/etc/dir"), (std::vector<std::string>{".", ".."}));
  ASSERT_TRUE(vfs_->Rmdir(Ctx(), "/etc/dir").ok());
  EXPECT_EQ(vfs_->Resolve(Ctx(), "/etc/dir", true).error(), ENOENT);
  ASSERT_TRUE(vfs_->Mkdir(Ctx(), "/etc/dir", 0755).ok());
  EXPECT_EQ(List("/etc/dir"), (std::vector<std::string>{".", ".."}));
  EXPECT_EQ(vfs_->Resolve(Ctx(), "/etc/dir/a", true).error(), ENOENT);
}

TEST_F(OverlayTest, RenameLowerFileAndOverExisting) {
  Attr orig = StatOf("/etc/passwd");
  ASSERT_TRUE(vfs_->Rename(Ctx(), "/etc/passwd", Ctx(), "/etc/passwd.bak", 0).ok());
  EXPECT_EQ(vfs_->Resolve(Ctx(), "/etc/passwd", true).error(), ENOENT);
  EXPECT_EQ(Read("/etc/passwd.bak"), "root:x:0:0");
  EXPECT_EQ(StatOf("/etc/passwd.bak").ino, orig.ino);
  // Rename over an existing lower file.
  ASSERT_TRUE(vfs_->Rename(Ctx(), "/etc/passwd.bak", Ctx(), "/bin/busybox", 0).ok());
  EXPECT_EQ(Read("/bin/busybox"), "root:x:0:0");
  EXPECT_EQ(List("/etc"), (std::vector<std::string>{".", "..", "dir"}));
  EXPECT_EQ(List("/bin"), (std::vector<std::string>{".", "..", "busybox", "sh"}));
  EXPECT_EQ(LowerRead("bin", "busybox"), "ELF");
}

TEST_F(OverlayTest, RenameLowerDirIsExdevUpperDirWorks) {
  EXPECT_EQ(vfs_->Rename(Ctx(), "/etc/dir", Ctx(), "/etc/dir2", 0).error(), EXDEV);
  ASSERT_TRUE(vfs_->Mkdir(Ctx(), "/new", 0755).ok());
  ASSERT_TRUE(vfs_->Mkdir(Ctx(), "/new/sub", 0755).ok());
  ASSERT_TRUE(vfs_->Rename(Ctx(), "/new", Ctx(), "/moved", 0).ok());
  EXPECT_TRUE(vfs_->Resolve(Ctx(), "/moved/sub", true).ok());
  EXPECT_EQ(vfs_->Rename(Ctx(), "/moved", Ctx(), "/moved/sub/x", 0).error(), EINVAL);
}

TEST_F(OverlayTest, ReaddirInodesStable) {
  auto ino_in_listing = [&](const std::string& dir, const std::string& name) -> uint64_t {
    auto f = vfs_->Open(Ctx(), dir, O_RDONLY | O_DIRECTORY, 0);
    uint64_t ino = 0;
    (void)(*f)->IterateDir([&](const vfs::DirEntry& e, int64_t) {
      if (e.name == name) ino = e.ino;
      return true;
    });
    return ino;
  };
  uint64_t before = ino_in_listing("/etc", "passwd");
  EXPECT_EQ(before, StatOf("/etc/passwd").ino);
  Append("/etc/passwd", "x");
  EXPECT_EQ(ino_in_listing("/etc", "passwd"), before);
  EXPECT_EQ(StatOf("/etc/passwd").ino, before);
  ASSERT_TRUE(vfs_->Mkdir(Ctx(), "/etc/newdir", 0755).ok());
  EXPECT_EQ(ino_in_listing("/etc", "newdir"), StatOf("/etc/newdir").ino);
  EXPECT_EQ(ino_in_listing("/", "etc"), StatOf("/etc").ino);
}

TEST_F(OverlayTest, HardLinkOfLowerFileCopiesUp) {
  ASSERT_TRUE(vfs_->Link(Ctx(), "/etc/passwd", Ctx(), "/etc/passwd2", false).ok());
  Append("/etc/passwd2", "!");
  EXPECT_EQ(Read("/etc/passwd"), "root:x:0:0!");
  EXPECT_EQ(StatOf("/etc/passwd").nlink, 2u);
}

TEST_F(OverlayTest, TruncateCopiesUpEmpty) {
  auto f = vfs_->Open(Ctx(), "/etc/passwd", O_WRONLY | O_TRUNC, 0);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(Read("/etc/passwd"), "");
  EXPECT_EQ(LowerRead("etc", "passwd"), "root:x:0:0");
}

TEST_F(OverlayTest, ExchangeUpperFiles) {
  ASSERT_TRUE(vfs_->Symlink(Ctx(), "x", "/l").ok());
  ASSERT_TRUE(vfs_->Rename(Ctx(), "/l", Ctx(), "/etc/passwd", RENAME_EXCHANGE).ok());
  EXPECT_EQ(Read("/l"), "root:x:0:0");
  auto t = vfs_->Readlink(Ctx(), "/etc/passwd");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "x");
}

TEST_F(OverlayTest, UpperBudgetEnospc) {
  auto f = vfs_->Open(Ctx(), "/big", O_CREAT | O_WRONLY, 0644);
  ASSERT_TRUE(f.ok());
  std::string chunk(1 << 19, 'x');
  iovec v{chunk.data(), chunk.size()};
  EXPECT_TRUE((*f)->Write(nullptr, absl::MakeConstSpan(&v, 1), -1).ok());
  EXPECT_TRUE((*f)->Write(nullptr, absl::MakeConstSpan(&v, 1), -1).ok());
  EXPECT_EQ((*f)->Write(nullptr, absl::MakeConstSpan(&v, 1), -1).error(), ENOSPC);
}

}  // namespace
}  // namespace usentry::sentry::fsimpl
