// The VFS reports file changes and denials to ResolveContext::observer (the audit
// stream's "file" and "denied" records), and nothing when no observer is set.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sentry/vfs/vfs_test_util.h"

namespace usentry::sentry::vfs {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::TmpfsVfs;
using testing::User;

class RecordingObserver : public FsObserver {
 public:
  void Changed(const ResolveContext& ctx, std::string_view op, const std::string& path,
               const std::string& to) const override {
    std::string s = std::to_string(ctx.pid) + " " + std::string(op) + " " + path;
    if (!to.empty()) s += " -> " + to;
    changes.push_back(s);
  }
  void Denied(const ResolveContext& ctx, std::string_view op, const std::string& path, int err,
              std::string_view reason, std::string_view policy) const override {
    denials.push_back(std::string(op) + " " + path + " " + std::to_string(err) + " " +
                      std::string(reason) + " (" + std::string(policy) + ")");
  }
  void Absent(const ResolveContext& ctx, std::string_view op,
              const std::string& path) const override {
    absent.push_back(std::string(op) + " " + path);
  }
  mutable std::vector<std::string> changes;
  mutable std::vector<std::string> denials;
  mutable std::vector<std::string> absent;
};

struct Fixture {
  TmpfsVfs t;
  RecordingObserver obs;
  ResolveContext Ctx(const Credentials* c = nullptr) {
    ResolveContext ctx = t.Ctx(c);
    ctx.observer = &obs;
    ctx.pid = 7;
    return ctx;
  }
};

TEST(FsObserverTest, CreateWriteAndNamespaceChanges) {
  Fixture f;
  ASSERT_TRUE(f.t.vfs->Mkdir(f.Ctx(), "/d", 0755).ok());
  ASSERT_TRUE(f.t.vfs->Open(f.Ctx(), "/d/a", O_CREAT | O_WRONLY, 0644).ok());
  ASSERT_TRUE(f.t.vfs->Open(f.Ctx(), "/d/a", O_WRONLY | O_APPEND, 0).ok());
  ASSERT_TRUE(f.t.vfs->Open(f.Ctx(), "/d/a", O_RDONLY, 0).ok());  // reads are not changes
  ASSERT_TRUE(f.t.vfs->Open(f.Ctx(), "/d/a", O_RDONLY | O_TRUNC, 0).ok());
  ASSERT_TRUE(f.t.vfs->Rename(f.Ctx(), "/d/a", f.Ctx(), "/d/b", 0).ok());
  ASSERT_TRUE(f.t.vfs->Symlink(f.Ctx(), "b", "/d/s").ok());
  ASSERT_TRUE(f.t.vfs->Link(f.Ctx(), "/d/b", f.Ctx(), "/d/h", false).ok());
  ASSERT_TRUE(f.t.vfs->Mknod(f.Ctx(), "/d/fifo", S_IFIFO | 0600, 0).ok());
  auto p = f.t.vfs->Resolve(f.Ctx(), "/d/b", false);
  ASSERT_TRUE(p.ok());
  SetAttrRequest chmod;
  chmod.mask = kSetMode;
  chmod.mode = 0600;
  ASSERT_TRUE(f.t.vfs->SetAttr(f.Ctx(), *p, chmod).ok());
  SetAttrRequest trunc;
  trunc.mask = kSetSize;
  trunc.size = 0;
  ASSERT_TRUE(f.t.vfs->SetAttr(f.Ctx(), *p, trunc).ok());
  SetAttrRequest times;
  times.mask = kSetAtime | kSetMtime;
  times.atime.tv_nsec = UTIME_NOW;
  times.mtime.tv_nsec = UTIME_NOW;
  ASSERT_TRUE(f.t.vfs->SetAttr(f.Ctx(), *p, times).ok());  // not a change worth a record
  ASSERT_TRUE(f.t.vfs->Unlink(f.Ctx(), "/d/h").ok());
  ASSERT_TRUE(f.t.vfs->Unlink(f.Ctx(), "/d/s").ok());
  ASSERT_TRUE(f.t.vfs->Unlink(f.Ctx(), "/d/fifo").ok());
  ASSERT_TRUE(f.t.vfs->Unlink(f.Ctx(), "/d/b").ok());
  ASSERT_TRUE(f.t.vfs->Rmdir(f.Ctx(), "/d").ok());
  EXPECT_THAT(f.obs.changes,
              ElementsAre("7 mkdir /d", "7 create /d/a", "7 write /d/a", "7 write /d/a",
                          "7 rename /d/a -> /d/b", "7 symlink /d/s -> b", "7 link /d/h -> /d/b",
                          "7 mknod /d/fifo", "7 chmod /d/b", "7 truncate /d/b", "7 delete /d/h",
                          "7 delete /d/s", "7 delete /d/fifo", "7 delete /d/b", "7 rmdir /d"));
  EXPECT_THAT(f.obs.denials, IsEmpty());
}

TEST(FsObserverTest, ExchangeIsOneRecord) {
  Fixture f;
  f.t.Write("/x", "1");
  f.t.Write("/y", "2");
  ASSERT_TRUE(f.t.vfs->Rename(f.Ctx(), "/x", f.Ctx(), "/y", RENAME_EXCHANGE).ok());
  EXPECT_THAT(f.obs.changes, ElementsAre("7 exchange /x -> /y"));
}

TEST(FsObserverTest, PermissionDenialsNameTheUid) {
  Fixture f;
  ASSERT_TRUE(f.t.vfs->Mkdir(f.t.Ctx(), "/locked", 0755).ok());
  f.t.Write("/locked/f", "x", nullptr, 0600);
  Credentials alice = User(1000, 1000);
  EXPECT_EQ(f.t.vfs->Open(f.Ctx(&alice), "/locked/f", O_RDONLY, 0).error(), EACCES);
  EXPECT_EQ(f.t.vfs->Open(f.Ctx(&alice), "/locked/g", O_CREAT | O_WRONLY, 0644).error(), EACCES);
  EXPECT_EQ(f.t.vfs->Unlink(f.Ctx(&alice), "/locked/f").error(), EACCES);
  EXPECT_EQ(f.t.vfs->Mkdir(f.Ctx(&alice), "/locked/d", 0755).error(), EACCES);
  const std::string why = " 13 permission denied for uid 1000 (identity)";
  EXPECT_THAT(f.obs.denials, ElementsAre("read /locked/f" + why, "create /locked/g" + why,
                                         "delete /locked/f" + why, "mkdir /locked/d" + why));
  EXPECT_THAT(f.obs.changes, IsEmpty());
}

TEST(FsObserverTest, ReadOnlyMountDenialsNameTheMount) {
  Fixture f;
  ASSERT_TRUE(f.t.vfs->Mkdir(f.t.Ctx(), "/data", 0755).ok());
  auto other = std::make_shared<fsimpl::TmpfsFilesystem>(f.t.budget, f.t.mf.get());
  auto root = other->NewRoot(0777, 0, 0);
  ASSERT_TRUE(f.t.vfs->MountAt("/data", other, root, kMountReadOnly).ok());
  EXPECT_EQ(f.t.vfs->Open(f.Ctx(), "/data/new", O_CREAT | O_WRONLY, 0644).error(), EROFS);
  EXPECT_EQ(f.t.vfs->Mkdir(f.Ctx(), "/data/d", 0755).error(), EROFS);
  EXPECT_THAT(f.obs.denials, ElementsAre("create /data/new 30 read-only mount /data (mounts)",
                                         "mkdir /data/d 30 read-only mount /data (mounts)"));
}

TEST(FsObserverTest, MissingFilesAreOfferedAsPossibleSecrets) {
  Fixture f;
  ASSERT_TRUE(f.t.vfs->Mkdir(f.t.Ctx(), "/etc", 0755).ok());
  EXPECT_EQ(f.t.vfs->Open(f.Ctx(), "/etc/../etc/./shadow", O_RDONLY, 0).error(), ENOENT);
  EXPECT_EQ(f.t.vfs->Open(f.Ctx(), "/etc/nope", O_WRONLY, 0).error(), ENOENT);
  EXPECT_THAT(f.obs.absent, ElementsAre("read /etc/shadow", "write /etc/nope"));
}

TEST(FsObserverTest, NoObserverNoCalls) {
  Fixture f;
  ASSERT_TRUE(f.t.vfs->Mkdir(f.t.Ctx(), "/d", 0755).ok());
  f.t.Write("/d/a", "x");
  EXPECT_THAT(f.obs.changes, IsEmpty());
}

}  // namespace
}  // namespace usentry::sentry::vfs
