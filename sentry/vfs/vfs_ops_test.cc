// Permissions, tmpfs namespace operations, rename variants and FdTable.
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/permissions.h"
#include "sentry/vfs/vfs_test_util.h"

namespace usentry::sentry::vfs {
namespace {

using testing::TmpfsVfs;
using testing::User;

Attr StatOf(TmpfsVfs& t, const std::string& path, bool follow = false) {
  auto p = t.vfs->Resolve(t.Ctx(), path, follow);
  EXPECT_TRUE(p.ok()) << path << " errno " << p.error();
  return p.ok() ? *p->inode()->Stat() : Attr{};
}

TEST(PermissionTest, OwnerGroupOtherAndRoot) {
  Attr a;
  a.mode = S_IFREG | 0640;
  a.uid = 1000;
  a.gid = 100;
  Credentials owner = User(1000, 1), group = User(2000, 100), other = User(3000, 3);
  Credentials root;
  EXPECT_TRUE(CheckPermission(owner, a, kMayRead | kMayWrite).ok());
  EXPECT_TRUE(CheckPermission(group, a, kMayRead).ok());
  EXPECT_EQ(CheckPermission(group, a, kMayWrite).error(), EACCES);
  EXPECT_EQ(CheckPermission(other, a, kMayRead).error(), EACCES);
  EXPECT_TRUE(CheckPermission(root, a, kMayRead | kMayWrite).ok());
  // Root needs some x bit to execute a file, but may search any directory.
  EXPECT_EQ(CheckPermission(root, a, kMayExec).error(), EACCES);
  Attr dir = a;
  dir.mode = S_IFDIR | 0700;
  EXPECT_TRUE(CheckPermission(root, dir, kMayExec).ok());
  // Supplementary groups count.
  Credentials supp = User(4000, 4);
  supp.groups = {100};
  EXPECT_TRUE(CheckPermission(supp, a, kMayRead).ok());
  // The owner class is used exclusively even if "other" would allow more.
  a.mode = S_IFREG | 0007;
  EXPECT_EQ(CheckPermission(owner, a, kMayRead).error(), EACCES);
}

TEST(VfsOpsTest, SearchPermissionOnEveryDirectory) {
  TmpfsVfs t;
  Credentials alice = User(1000, 1000);
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/locked", 0700).ok());
  t.Write("/locked/f", "x");
  EXPECT_EQ(t.vfs->Resolve(t.Ctx(&alice), "/locked/f", true).error(), EACCES);
  EXPECT_EQ(t.vfs->Open(t.Ctx(&alice), "/locked/f", O_RDONLY, 0).error(), EACCES);
  EXPECT_EQ(t.Read("/locked/f"), "x");  // root bypasses
}

TEST(VfsOpsTest, CreatePermissionsUmaskAndOwnership) {
  TmpfsVfs t;
  Credentials alice = User(1000, 1000);
  EXPECT_EQ(t.vfs->Open(t.Ctx(&alice), "/f", O_CREAT | O_WRONLY, 0666).error(), EACCES);
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/home", 0777).ok());
  EXPECT_EQ(StatOf(t, "/home").mode & 07777, 0755u);  // umask 022
  SetAttrRequest chmod;
  chmod.mask = kSetMode;
  chmod.mode = 0777;
  ASSERT_TRUE(t.vfs->SetAttr(t.Ctx(), *t.vfs->Resolve(t.Ctx(), "/home", true), chmod).ok());
  auto f = t.vfs->Open(t.Ctx(&alice), "/home/a", O_CREAT | O_RDWR, 0444);
  ASSERT_TRUE(f.ok());  // a new file opens read-write even with mode 0444
  Attr a = StatOf(t, "/home/a");
  EXPECT_EQ(a.mode, S_IFREG | 0444u);
  EXPECT_EQ(a.uid, 1000u);
  EXPECT_EQ(a.gid, 1000u);
  EXPECT_EQ(t.vfs->Open(t.Ctx(&alice), "/home/a", O_RDWR, 0).error(), EACCES);
  EXPECT_EQ(t.vfs->Open(t.Ctx(&alice), "/home/a", O_CREAT | O_EXCL | O_RDWR, 0).error(), EEXIST);
  // chmod by a non-owner: EPERM; chown to another user by non-root: EPERM.
  Credentials bob = User(1001, 1001);
  auto p = t.vfs->Resolve(t.Ctx(), "/home/a", true);
  EXPECT_EQ(t.vfs->SetAttr(t.Ctx(&bob), *p, chmod).error(), EPERM);
  SetAttrRequest chown;
  chown.mask = kSetUid;
  chown.uid = 1001;
  EXPECT_EQ(t.vfs->SetAttr(t.Ctx(&alice), *p, chown).error(), EPERM);
  EXPECT_TRUE(t.vfs->SetAttr(t.Ctx(), *p, chown).ok());
  EXPECT_EQ(StatOf(t, "/home/a").uid, 1001u);
}

TEST(VfsOpsTest, ChownClearsSetuid) {
  TmpfsVfs t;
  t.Write("/s", "x", nullptr, 0);
  auto p = t.vfs->Resolve(t.Ctx(), "/s", true);
  SetAttrRequest m;
  m.mask = kSetMode;
  m.mode = 06755;
  ASSERT_TRUE(t.vfs->SetAttr(t.Ctx(), *p, m).ok());
  SetAttrRequest c;
  c.mask = kSetUid | kSetGid;
  c.uid = 5;
  c.gid = 5;
  ASSERT_TRUE(t.vfs->SetAttr(t.Ctx(), *p, c).ok());
  EXPECT_EQ(StatOf(t, "/s").mode & 07777, 0755u);
}

TEST(VfsOpsTest, UtimesNowNeedsWriteExplicitNeedsOwner) {
  TmpfsVfs t;
  ASSERT_TRUE(t.vfs->Open(t.Ctx(), "/f", O_CREAT | O_WRONLY, 0666).ok());  // 0644 after umask
  auto p = t.vfs->Resolve(t.Ctx(), "/f", true);
  Credentials alice = User(1000, 1000);
  SetAttrRequest now;
  now.mask = kSetAtime | kSetMtime;
  now.atime.tv_nsec = now.mtime.tv_nsec = UTIME_NOW;
  EXPECT_EQ(t.vfs->SetAttr(t.Ctx(&alice), *p, now).error(), EACCES);
  SetAttrRequest exact;
  exact.mask = kSetMtime;
  exact.mtime = {12345, 6};
  EXPECT_EQ(t.vfs->SetAttr(t.Ctx(&alice), *p, exact).error(), EPERM);
  ASSERT_TRUE(t.vfs->SetAttr(t.Ctx(), *p, exact).ok());
  EXPECT_EQ(StatOf(t, "/f").mtime.tv_sec, 12345);
  EXPECT_EQ(StatOf(t, "/f").mtime.tv_nsec, 6);
}

TEST(VfsOpsTest, HardLinksAndNlink) {
  TmpfsVfs t;
  t.Write("/a", "data");
  ASSERT_TRUE(t.vfs->Link(t.Ctx(), "/a", t.Ctx(), "/b", false).ok());
  EXPECT_EQ(StatOf(t, "/a").nlink, 2u);
  EXPECT_EQ(StatOf(t, "/a").ino, StatOf(t, "/b").ino);
  EXPECT_EQ(t.vfs->Link(t.Ctx(), "/a", t.Ctx(), "/b", false).error(), EEXIST);
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/d", 0755).ok());
  EXPECT_EQ(t.vfs->Link(t.Ctx(), "/d", t.Ctx(), "/d2", false).error(), EPERM);
  EXPECT_EQ(StatOf(t, "/").nlink, 3u);
  // Open file survives unlink.
  auto f = t.vfs->Open(t.Ctx(), "/a", O_RDONLY, 0);
  ASSERT_TRUE(t.vfs->Unlink(t.Ctx(), "/a").ok());
  ASSERT_TRUE(t.vfs->Unlink(t.Ctx(), "/b").ok());
  char buf[8] = {};
  iovec v{buf, sizeof(buf)};
  EXPECT_EQ(*(*f)->Read(nullptr, absl::MakeConstSpan(&v, 1), 0), 4u);
  EXPECT_EQ((*f)->Stat()->nlink, 0u);
}

TEST(VfsOpsTest, UnlinkRmdirErrors) {
  TmpfsVfs t;
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/d", 0755).ok());
  t.Write("/d/f", "x");
  EXPECT_EQ(t.vfs->Unlink(t.Ctx(), "/d").error(), EISDIR);
  EXPECT_EQ(t.vfs->Rmdir(t.Ctx(), "/d").error(), ENOTEMPTY);
  EXPECT_EQ(t.vfs->Rmdir(t.Ctx(), "/d/f").error(), ENOTDIR);
  EXPECT_EQ(t.vfs->Rmdir(t.Ctx(), "/d/.").error(), EINVAL);
  EXPECT_EQ(t.vfs->Unlink(t.Ctx(), "/d/f/").error(), ENOTDIR);
  EXPECT_EQ(t.vfs->Unlink(t.Ctx(), "/nope").error(), ENOENT);
  EXPECT_EQ(t.vfs->Rmdir(t.Ctx(), "/").error(), EBUSY);
  ASSERT_TRUE(t.vfs->Unlink(t.Ctx(), "/d/f").ok());
  ASSERT_TRUE(t.vfs->Rmdir(t.Ctx(), "/d/").ok());
  EXPECT_EQ(StatOf(t, "/").nlink, 2u);
}

TEST(VfsOpsTest, RenameSemantics) {
  TmpfsVfs t;
  t.Write("/a", "A");
  t.Write("/b", "B");
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/d", 0755).ok());
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/e", 0755).ok());
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/d/sub", 0755).ok());
  EXPECT_EQ(t.vfs->Rename(t.Ctx(), "/a", t.Ctx(), "/b", RENAME_NOREPLACE).error(), EEXIST);
  ASSERT_TRUE(t.vfs->Rename(t.Ctx(), "/a", t.Ctx(), "/b", RENAME_EXCHANGE).ok());
  EXPECT_EQ(t.Read("/a"), "B");
  EXPECT_EQ(t.Read("/b"), "A");
  ASSERT_TRUE(t.vfs->Rename(t.Ctx(), "/a", t.Ctx(), "/b", 0).ok());  // replace
  EXPECT_EQ(t.Read("/b"), "B");
  EXPECT_EQ(t.vfs->Resolve(t.Ctx(), "/a", true).error(), ENOENT);
  EXPECT_EQ(t.vfs->Rename(t.Ctx(), "/b", t.Ctx(), "/d", 0).error(), EISDIR);
  EXPECT_EQ(t.vfs->Rename(t.Ctx(), "/d", t.Ctx(), "/b", 0).error(), ENOTDIR);
  EXPECT_EQ(t.vfs->Rename(t.Ctx(), "/e", t.Ctx(), "/d", 0).error(), ENOTEMPTY);
  EXPECT_EQ(t.vfs->Rename(t.Ctx(), "/d", t.Ctx(), "/d/sub/x", 0).error(), EINVAL);
  EXPECT_EQ(t.vfs->Rename(t.Ctx(), "/d", t.Ctx(), "/d/sub", 0).error(), EINVAL);
  EXPECT_EQ(t.vfs->Rename(t.Ctx(), "/a", t.Ctx(), "/x", RENAME_EXCHANGE).error(), ENOENT);
  // Replacing an empty directory moves the source dir there and fixes nlinks.
  ASSERT_TRUE(t.vfs->Rename(t.Ctx(), "/d/sub", t.Ctx(), "/e", 0).ok());
  EXPECT_EQ(StatOf(t, "/d").nlink, 2u);
  EXPECT_EQ(StatOf(t, "/").nlink, 4u);
  EXPECT_TRUE(t.vfs->Rename(t.Ctx(), "/b", t.Ctx(), "/b", 0).ok());
}

TEST(VfsOpsTest, StickyDirectory) {
  TmpfsVfs t;
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/tmp", 0).ok());
  SetAttrRequest m;
  m.mask = kSetMode;
  m.mode = 01777;
  ASSERT_TRUE(t.vfs->SetAttr(t.Ctx(), *t.vfs->Resolve(t.Ctx(), "/tmp", true), m).ok());
  Credentials alice = User(1000, 1000), bob = User(1001, 1001);
  t.Write("/tmp/a", "x", &alice);
  EXPECT_EQ(t.vfs->Unlink(t.Ctx(&bob), "/tmp/a").error(), EPERM);
  EXPECT_TRUE(t.vfs->Unlink(t.Ctx(&alice), "/tmp/a").ok());
}

TEST(VfsOpsTest, TmpfsBudgetAndTruncate) {
  TmpfsVfs t(8192);
  auto f = t.vfs->Open(t.Ctx(), "/f", O_CREAT | O_RDWR, 0644);
  ASSERT_TRUE(f.ok());
  std::string s(8192, 'x');
  iovec v{s.data(), s.size()};
  ASSERT_TRUE((*f)->Write(nullptr, absl::MakeConstSpan(&v, 1), -1).ok());
  EXPECT_EQ((*f)->Write(nullptr, absl::MakeConstSpan(&v, 1), -1).error(), ENOSPC);
  ASSERT_TRUE((*f)->Truncate(0).ok());
  EXPECT_EQ(t.budget->used, 0u);
  ASSERT_TRUE((*f)->Write(nullptr, absl::MakeConstSpan(&v, 1), 0).ok());
  // O_APPEND writes land at the end.
  auto g = t.vfs->Open(t.Ctx(), "/g", O_CREAT | O_WRONLY | O_APPEND, 0644);
  ASSERT_TRUE(t.vfs->Unlink(t.Ctx(), "/f").ok());
  f = Errno{EBADF};  // last reference: the data is freed
  EXPECT_EQ(t.budget->used, 0u);
  std::string ab = "ab";
  iovec w{ab.data(), 2};
  ASSERT_TRUE((*g)->Write(nullptr, absl::MakeConstSpan(&w, 1), -1).ok());
  ASSERT_TRUE((*g)->Seek(0, SEEK_SET).ok());
  ASSERT_TRUE((*g)->Write(nullptr, absl::MakeConstSpan(&w, 1), -1).ok());
  EXPECT_EQ(t.Read("/g"), "abab");
  EXPECT_EQ(*(*g)->Seek(0, SEEK_END), 4);
  EXPECT_EQ((*g)->Seek(-5, SEEK_END).error(), EINVAL);
}

TEST(VfsOpsTest, DirectoryListingAndRewind) {
  TmpfsVfs t;
  ASSERT_TRUE(t.vfs->Mkdir(t.Ctx(), "/d", 0755).ok());
  t.Write("/d/x", "");
  auto f = t.vfs->Open(t.Ctx(), "/d", O_RDONLY | O_DIRECTORY, 0);
  ASSERT_TRUE(f.ok());
  std::vector<std::string> names;
  auto collect = [&](const DirEntry& e, int64_t) {
    if (names.size() == 2) return false;  // accept two entries, refuse the third
    names.push_back(e.name);
    return true;
  };
  ASSERT_TRUE((*f)->IterateDir(collect).ok());
  EXPECT_EQ(names, (std::vector<std::string>{".", ".."}));
  names.clear();
  ASSERT_TRUE((*f)->IterateDir([&](const DirEntry& e, int64_t) {
                    names.push_back(e.name);
                    return true;
                  })
                  .ok());
  EXPECT_EQ(names, (std::vector<std::string>{"x"}));  // the refused entry comes next
  t.Write("/d/y", "");
  ASSERT_TRUE((*f)->Seek(0, SEEK_SET).ok());
  names.clear();
  ASSERT_TRUE((*f)->IterateDir([&](const DirEntry& e, int64_t) {
                    names.push_back(e.name);
                    return true;
                  })
                  .ok());
  EXPECT_EQ(names, (std::vector<std::string>{".", "..", "x", "y"}));
  EXPECT_EQ(t.vfs->Open(t.Ctx(), "/d", O_RDWR, 0).error(), EISDIR);
}

class FakeFile : public FileDescription {
 public:
  FakeFile() : FileDescription(Path{}, O_RDWR) {}
};

TEST(FdTableTest, LowestFreeDupCloexecForkLimit) {
  FdTable t;
  auto f = std::make_shared<FakeFile>();
  EXPECT_EQ(*t.Install(f, false), 0);
  EXPECT_EQ(*t.Install(f, true), 1);
  EXPECT_EQ(*t.Install(f, false, 10), 10);
  ASSERT_TRUE(t.Remove(0).ok());
  EXPECT_EQ(t.Remove(0).error(), EBADF);
  EXPECT_EQ(*t.Install(f, false), 0);
  EXPECT_EQ(*t.DupTo(0, 5, true), 5);
  EXPECT_TRUE(t.GetEntry(5)->cloexec);
  EXPECT_EQ(t.DupTo(7, 5, false).error(), EBADF);
  EXPECT_EQ(t.DupTo(0, 100000, false).error(), EBADF);
  auto child = t.Fork();
  t.CloseOnExec();
  EXPECT_EQ(t.Get(1).error(), EBADF);
  EXPECT_EQ(t.Get(5).error(), EBADF);
  EXPECT_TRUE(t.Get(10).ok());
  EXPECT_TRUE(child->Get(5).ok());  // the fork is independent
  t.CloseRange(0, ~0u, true);
  EXPECT_TRUE(t.GetEntry(0)->cloexec);
  t.CloseRange(3, ~0u, false);
  EXPECT_EQ(t.Get(10).error(), EBADF);
  t.set_limit(3);
  EXPECT_EQ(*t.Install(f, false), 1);
  EXPECT_EQ(*t.Install(f, false), 2);
  EXPECT_EQ(t.Install(f, false).error(), EMFILE);
  EXPECT_EQ(t.Install(f, false, 3).error(), EINVAL);
  EXPECT_EQ(f.use_count(), 1 + 3 + 4);  // ours + table {0,1,2} + fork {0,1,5,10}
}

}  // namespace
}  // namespace usentry::sentry::vfs

namespace usentry::sentry::vfs {
namespace {

// Recently used dentries are cached, but an unlinked file must release its tmpfs bytes.
TEST(VfsOpsTest, UnlinkReleasesBudgetDespiteDentryCache) {
  testing::TmpfsVfs t(1 << 16);
  std::string big(1 << 15, 'x');
  t.Write("/a", big);
  EXPECT_EQ(t.Read("/a").size(), big.size());
  ASSERT_TRUE(t.vfs->Unlink(t.Ctx(), "/a").ok());
  EXPECT_EQ(t.budget->used, 0u);
  t.Write("/b", big);
  t.Write("/c", big);
  ASSERT_TRUE(t.vfs->Rename(t.Ctx(), "/b", t.Ctx(), "/c", 0).ok());
  EXPECT_EQ(t.budget->used, static_cast<uint64_t>(big.size()));
}

}  // namespace
}  // namespace usentry::sentry::vfs
