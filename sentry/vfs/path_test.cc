// Path resolution: "..", symlinks, loops, mounts, trailing slashes, name limits.
#include <map>

#include "gtest/gtest.h"
#include "sentry/vfs/vfs_test_util.h"

namespace usentry::sentry::vfs {
namespace {

using testing::TmpfsVfs;

TEST(PathTest, DotDotAtRootStays) {
  TmpfsVfs t;
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/a", 0755).ok());
  auto p = t.vfs->Resolve(t.Ctx(), "/../../a/../..", true);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(t.vfs->PathOf(*p), "/");
}

TEST(PathTest, DotDotStaysAtTaskRoot) {
  TmpfsVfs t;
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/jail", 0755).ok());
  t.Write("/secret", "s");
  auto jail = t.vfs->Resolve(t.Ctx(), "/jail", true);
  ASSERT_TRUE(jail.ok());
  ResolveContext ctx{&t.root, *jail, *jail, 022};
  EXPECT_EQ(t.vfs->Resolve(ctx, "../secret", true).error(), ENOENT);
  EXPECT_EQ(t.vfs->Resolve(ctx, "/secret", true).error(), ENOENT);
  auto p = t.vfs->Resolve(ctx, "..", true);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(t.vfs->PathOf(*p, *jail), "/");
}

TEST(PathTest, SymlinksRelativeAbsoluteAndLoops) {
  TmpfsVfs t;
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/d", 0755).ok());
  t.Write("/d/f", "hello");
  ASSERT_TRUE(t.vfs->Symlink(t.Ctx(), "f", "/d/rel").ok());
  ASSERT_TRUE(t.vfs->Symlink(t.Ctx(), "/d/f", "/abs").ok());
  ASSERT_TRUE(t.vfs->Symlink(t.Ctx(), "../d", "/d/up").ok());
  ASSERT_TRUE(t.vfs->Symlink(t.Ctx(), "loop2", "/loop1").ok());
  ASSERT_TRUE(t.vfs->Symlink(t.Ctx(), "loop1", "/loop2").ok());
  EXPECT_EQ(t.Read("/d/rel"), "hello");
  EXPECT_EQ(t.Read("/abs"), "hello");
  EXPECT_EQ(t.Read("/d/up/up/up/f"), "hello");
  EXPECT_EQ(t.vfs->Resolve(t.Ctx(), "/loop1", true).error(), ELOOP);
  auto nofollow = t.vfs->Resolve(t.Ctx(), "/loop1", false);
  ASSERT_TRUE(nofollow.ok());
  EXPECT_TRUE(nofollow->inode()->IsSymlink());
  EXPECT_EQ(t.vfs->Open(t.Ctx(), "/abs", O_RDONLY | O_NOFOLLOW, 0).error(), ELOOP);
  EXPECT_TRUE(t.vfs->Open(t.Ctx(), "/abs", O_PATH | O_NOFOLLOW, 0).ok());
  auto target = t.vfs->Readlink(t.Ctx(), "/d/up");
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(*target, "../d");
  EXPECT_EQ(t.vfs->Readlink(t.Ctx(), "/d/f").error(), EINVAL);
}

TEST(PathTest, AbsoluteSymlinkRestartsAtTaskRoot) {
  TmpfsVfs t;
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/jail", 0755).ok());
  t.Write("/etc_passwd", "host");
  t.Write("/jail/etc_passwd", "jail");
  ASSERT_TRUE(t.vfs->Symlink(t.Ctx(), "/etc_passwd", "/jail/link").ok());
  auto jail = t.vfs->Resolve(t.Ctx(), "/jail", true);
  ResolveContext ctx{&t.root, *jail, *jail, 022};
  auto f = t.vfs->Open(ctx, "/link", O_RDONLY, 0);
  ASSERT_TRUE(f.ok());
  char buf[8] = {};
  iovec v{buf, sizeof(buf)};
  ASSERT_TRUE((*f)->Read(nullptr, absl::MakeConstSpan(&v, 1), -1).ok());
  EXPECT_STREQ(buf, "jail");
}

TEST(PathTest, FortySymlinksOkFortyOneLoops) {
  TmpfsVfs t;
  t.Write("/l0", "x");
  for (int i = 1; i <= 41; ++i) {
    ASSERT_TRUE(
        t.vfs->Symlink(t.Ctx(), "l" + std::to_string(i - 1), "/l" + std::to_string(i)).ok());
  }
  EXPECT_TRUE(t.vfs->Resolve(t.Ctx(), "/l40", true).ok());
  EXPECT_EQ(t.vfs->Resolve(t.Ctx(), "/l41", true).error(), ELOOP);
}

TEST(PathTest, TrailingSlashAndNotDir) {
  TmpfsVfs t;
  t.Write("/f", "x");
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/d", 0755).ok());
  EXPECT_EQ(t.vfs->Resolve(t.Ctx(), "/f/", true).error(), ENOTDIR);
  EXPECT_EQ(t.vfs->Resolve(t.Ctx(), "/f/x", true).error(), ENOTDIR);
  EXPECT_TRUE(t.vfs->Resolve(t.Ctx(), "/d/", true).ok());
  EXPECT_TRUE(t.vfs->Resolve(t.Ctx(), "//d//.//", true).ok());
  EXPECT_EQ(t.vfs->Open(t.Ctx(), "/f", O_RDONLY | O_DIRECTORY, 0).error(), ENOTDIR);
  EXPECT_EQ(t.vfs->Open(t.Ctx(), "/d", O_WRONLY, 0).error(), EISDIR);
  EXPECT_EQ(t.vfs->Open(t.Ctx(), "/new/", O_CREAT | O_WRONLY, 0644).error(), EISDIR);
  EXPECT_EQ(t.vfs->Resolve(t.Ctx(), "", true).error(), ENOENT);
}

TEST(PathTest, NameTooLong) {
  TmpfsVfs t;
  std::string long_name(256, 'a');
  EXPECT_EQ(t.vfs->Resolve(t.Ctx(), "/" + long_name, true).error(), ENAMETOOLONG);
  EXPECT_EQ(t.vfs->Mkdir(t.Ctx(), "/" + long_name, 0755).error(), ENAMETOOLONG);
  EXPECT_EQ(t.vfs->Mkdir(t.Ctx(), "/" + std::string(255, 'a'), 0755).error(), 0);
  std::string long_path;
  while (long_path.size() < 4096) long_path += "/.";
  EXPECT_EQ(t.vfs->Resolve(t.Ctx(), long_path, true).error(), ENAMETOOLONG);
}

TEST(PathTest, MountCrossingBothWays) {
  TmpfsVfs t;
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/mnt", 0755).ok());
  t.Write("/mnt/hidden", "under");
  auto fs2 = std::make_shared<fsimpl::TmpfsFilesystem>(t.budget, t.mf.get());
  auto m = t.vfs->MountAt("/mnt", fs2, fs2->NewRoot(0755, 0, 0), 0);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(t.vfs->Resolve(t.Ctx(), "/mnt/hidden", true).error(), ENOENT);
  t.Write("/mnt/new", "over");
  EXPECT_EQ(t.Read("/mnt/../mnt/new"), "over");
  auto p = t.vfs->Resolve(t.Ctx(), "/mnt/..", true);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(t.vfs->PathOf(*p), "/");
  auto n = t.vfs->Resolve(t.Ctx(), "/mnt/new", true);
  EXPECT_EQ(t.vfs->PathOf(*n), "/mnt/new");
  EXPECT_EQ(t.vfs->Rmdir(t.Ctx(), "/mnt").error(), EBUSY);
  // Hard links and renames cannot cross mounts.
  t.Write("/top", "t");
  EXPECT_EQ(t.vfs->Link(t.Ctx(), "/top", t.Ctx(), "/mnt/top", false).error(), EXDEV);
  EXPECT_EQ(t.vfs->Rename(t.Ctx(), "/top", t.Ctx(), "/mnt/top", 0).error(), EXDEV);
}

TEST(PathTest, ReadOnlyMount) {
  TmpfsVfs t;
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/ro", 0755).ok());
  auto fs2 = std::make_shared<fsimpl::TmpfsFilesystem>(t.budget, t.mf.get());
  auto root2 = fs2->NewRoot(0755, 0, 0);
  ASSERT_TRUE(root2->Create("f", 0644, 0, 0).ok());
  ASSERT_TRUE(t.vfs->MountAt("/ro", fs2, root2, kMountReadOnly).ok());
  EXPECT_EQ(t.vfs->Open(t.Ctx(), "/ro/f", O_WRONLY, 0).error(), EROFS);
  EXPECT_TRUE(t.vfs->Open(t.Ctx(), "/ro/f", O_RDONLY, 0).ok());
  EXPECT_EQ(t.vfs->Open(t.Ctx(), "/ro/g", O_CREAT | O_WRONLY, 0644).error(), EROFS);
  EXPECT_EQ(t.vfs->Mkdir(t.Ctx(), "/ro/d", 0755).error(), EROFS);
  EXPECT_EQ(t.vfs->Mkdir(t.Ctx(), "/ro/f", 0755).error(), EEXIST);
  EXPECT_EQ(t.vfs->Unlink(t.Ctx(), "/ro/f").error(), EROFS);
  auto p = t.vfs->Resolve(t.Ctx(), "/ro/f", true);
  EXPECT_EQ(t.vfs->Access(t.Ctx(), *p, W_OK).error(), EROFS);
  SetAttrRequest req;
  req.mask = kSetMode;
  req.mode = 0600;
  EXPECT_EQ(t.vfs->SetAttr(t.Ctx(), *p, req).error(), EROFS);
}

TEST(PathTest, PathOfDeletedAndRenamed) {
  TmpfsVfs t;
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/a", 0755).ok());
  t.Write("/a/f", "x");
  auto p = t.vfs->Resolve(t.Ctx(), "/a/f", true);
  ASSERT_TRUE(t.vfs->Rename(t.Ctx(), "/a", t.Ctx(), "/b", 0).ok());
  EXPECT_EQ(t.vfs->PathOf(*p), "/b/f");
  ASSERT_TRUE(t.vfs->Unlink(t.Ctx(), "/b/f").ok());
  EXPECT_EQ(t.vfs->PathOf(*p), "/b/f (deleted)");
}

}  // namespace
}  // namespace usentry::sentry::vfs

namespace usentry::sentry::vfs {
namespace {

// A symlink inode that behaves like /proc/self/fd/N.
class FakeMagicLink : public fsimpl::TmpfsInode {
 public:
  FakeMagicLink(fsimpl::TmpfsFilesystem* fs, MagicLink target)
      : TmpfsInode(fs, S_IFLNK | 0777, 0, 0), target_(std::move(target)) {}
  bool GetMagicLink(MagicLink* out) override {
    *out = target_;
    return true;
  }
  SysResult<std::string> Readlink() override { return std::string("pipe:[1]"); }

 private:
  MagicLink target_;
};

class FakeDir : public fsimpl::TmpfsInode {
 public:
  FakeDir(fsimpl::TmpfsFilesystem* fs, std::map<std::string, std::shared_ptr<Inode>> links)
      : TmpfsInode(fs, S_IFDIR | 0755, 0, 0), links_(std::move(links)) {}
  SysResult<std::shared_ptr<Inode>> Lookup(std::string_view name) override {
    auto it = links_.find(std::string(name));
    if (it == links_.end()) return Errno{ENOENT};
    return it->second;
  }

 private:
  std::map<std::string, std::shared_ptr<Inode>> links_;
};

// An anonymous read-only object: reopening it for reading makes a new description.
class AnonFile : public FileDescription {
 public:
  AnonFile() : FileDescription(Path{}, O_RDONLY) {}
  SysResult<std::shared_ptr<FileDescription>> Reopen(int flags) override {
    if ((flags & O_ACCMODE) != O_RDONLY) return Errno{EACCES};
    reopened++;
    return std::shared_ptr<FileDescription>(std::make_shared<AnonFile>());
  }
  int reopened = 0;
};

TEST(PathTest, MagicLinksJumpToTheirObject) {
  TmpfsVfs t;
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/real", 0755).ok());
  t.Write("/real/f", "real");
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/fd", 0755).ok());
  auto real = t.vfs->Resolve(t.Ctx(), "/real", true);
  auto anon = std::make_shared<AnonFile>();
  auto fs2 = std::make_shared<fsimpl::TmpfsFilesystem>(t.budget, t.mf.get());
  std::map<std::string, std::shared_ptr<Inode>> links;
  links["cwd"] = std::make_shared<FakeMagicLink>(fs2.get(), MagicLink{*real, nullptr});
  links["63"] = std::make_shared<FakeMagicLink>(fs2.get(), MagicLink{Path{}, anon});
  ASSERT_TRUE(t.vfs->MountAt("/fd", fs2, std::make_shared<FakeDir>(fs2.get(), links), 0).ok());
  EXPECT_EQ(t.Read("/fd/cwd/f"), "real");
  auto f = t.vfs->Open(t.Ctx(), "/fd/63", O_RDONLY, 0);
  ASSERT_TRUE(f.ok());
  EXPECT_NE(f->get(), anon.get());  // a new description of the same object
  EXPECT_EQ(anon->reopened, 1);
  EXPECT_EQ(t.vfs->Open(t.Ctx(), "/fd/63", O_WRONLY, 0).error(), EACCES);
  EXPECT_EQ(t.vfs->Resolve(t.Ctx(), "/fd/63/x", true).error(), ENOENT);
  auto text = t.vfs->Readlink(t.Ctx(), "/fd/63");
  EXPECT_EQ(*text, "pipe:[1]");
}

}  // namespace
}  // namespace usentry::sentry::vfs
