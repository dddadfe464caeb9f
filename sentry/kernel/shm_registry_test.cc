// The SysV shm registry alone: id allocation, keys, limits, permissions, removal of
// attached segments and SHM_LOCK accounting (no tasks, no platform).
#include "sentry/kernel/shm_registry.h"

#include <linux/capability.h>

#include "abi/ipc.h"
#include "gtest/gtest.h"
#include "sentry/kernel/ipc_ids.h"

namespace usentry::sentry {
namespace {

constexpr int kRw = 0600;

Credentials User(uint32_t uid, uint32_t gid) {
  Credentials c;
  c.ruid = c.euid = c.suid = c.fsuid = uid;
  c.rgid = c.egid = c.sgid = c.fsgid = gid;
  if (uid != 0) c.cap_effective = c.cap_permitted = 0;
  return c;
}

bool Fits(uint64_t) { return true; }

class ShmRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto f = mm::MemoryFile::Create(1ull << 32);
    ASSERT_TRUE(f.ok()) << f.status();
    mf_ = std::move(f).value();
    reg_ = std::make_unique<ShmRegistry>(mf_.get(), [this] { return pid_; });
  }

  int32_t Create(int32_t key = abi::kIpcPrivate, uint64_t size = 100, int flags = kRw) {
    auto r = reg_->Get(root_, 10, key, size, flags | abi::kIpcCreat, Fits);
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() ? r.value() : -1;
  }
  ShmStatus StatOf(int32_t id) {
    auto s = reg_->Stat(root_, id, ShmRegistry::StatBy::kId);
    EXPECT_TRUE(s.ok()) << s.error();
    return s.ok() ? s.value() : ShmStatus{};
  }

  std::unique_ptr<mm::MemoryFile> mf_;
  std::unique_ptr<ShmRegistry> reg_;
  Credentials root_ = User(0, 0);
  int32_t pid_ = 10;
};

TEST(IpcIdsTest, IdsAreCyclicAndTheSequenceAdvancesOnWrap) {
  IpcIds ids;
  std::vector<int32_t> got;
  for (int i = 0; i < 3; i++) got.push_back(ids.Allocate(4096).value().id);
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 2}));
  ids.Release(0);
  EXPECT_EQ(ids.Allocate(4096).value().id, 3);  // not the freed index 0
  // 63 in use: the window is 1.5 times that, so allocation goes on upward.
  for (int i = 4; i < 64; i++) ASSERT_EQ(ids.Allocate(4096).value().index, i);
  EXPECT_EQ(ids.Allocate(4096).value().id, 64);
  EXPECT_EQ(ids.MaxIndexForInfo(), 64);
  // Once they are gone, the 64-index window is passed: allocation wraps to index 0 with
  // a new sequence number (what Linux answers: 32768).
  for (int i = 1; i <= 64; i++) ids.Release(i);
  EXPECT_EQ(ids.MaxIndexForInfo(), 0);
  IpcIds::Allocation wrapped = ids.Allocate(4096).value();
  EXPECT_EQ(wrapped.index, 0);
  EXPECT_EQ(wrapped.seq, 1);
  EXPECT_EQ(wrapped.id, IpcIds::kMaxIndices);
  for (int i = 1; i < 64; i++) ASSERT_TRUE(ids.Allocate(4096).ok());
  EXPECT_EQ(ids.Allocate(64).error(), ENOSPC);  // 64 in use, limit 64
}

TEST_F(ShmRegistryTest, KeysAreFoundPrivateOnesNever) {
  int32_t a = Create(1234);
  EXPECT_EQ(reg_->Get(root_, 10, 1234, 0, 0, Fits).value(), a);
  EXPECT_EQ(reg_->Get(root_, 10, 1234, 100, abi::kIpcCreat, Fits).value(), a);
  EXPECT_EQ(reg_->Get(root_, 10, 1234, 100, abi::kIpcCreat | abi::kIpcExcl, Fits).error(), EEXIST);
  EXPECT_EQ(reg_->Get(root_, 10, 1234, 101, 0, Fits).error(), EINVAL);  // bigger than it
  EXPECT_EQ(reg_->Get(root_, 10, 99, 100, 0, Fits).error(), ENOENT);
  int32_t p1 = Create(), p2 = Create();
  EXPECT_NE(p1, p2);
  EXPECT_NE(p1, a);
}

TEST_F(ShmRegistryTest, SizesAndLimits) {
  EXPECT_EQ(reg_->Get(root_, 10, 0, 0, kRw, Fits).error(), EINVAL);
  EXPECT_EQ(reg_->Get(root_, 10, 0, kShmMax + 1, kRw, Fits).error(), EINVAL);
  EXPECT_EQ(reg_->Get(root_, 10, 0, 8192, kRw, [](uint64_t) { return false; }).error(), ENOMEM);
  // SHM_NORESERVE skips the memory check.
  EXPECT_TRUE(
      reg_->Get(root_, 10, 0, 8192, kRw | abi::kShmNoreserve, [](uint64_t) { return false; }).ok());
  EXPECT_EQ(reg_->Get(root_, 10, 0, 8192, kRw | abi::kShmHugetlb, Fits).error(), ENOMEM);
  int32_t id = Create(abi::kIpcPrivate, 4097);
  ShmStatus s = StatOf(id);
  EXPECT_EQ(s.size, 4097u);
  EXPECT_EQ(s.pages->len(), 8192u);  // page-rounded
  EXPECT_EQ(reg_->total_pages(), 4u);
  EXPECT_EQ(reg_->used_ids(), 2);
}

TEST_F(ShmRegistryTest, ShmmniSegmentsAtMost) {
  for (int i = 0; i < kShmMni; i++) ASSERT_GE(Create(abi::kIpcPrivate, 1), 0) << i;
  EXPECT_EQ(reg_->Get(root_, 10, 0, 1, kRw, Fits).error(), ENOSPC);
  EXPECT_EQ(reg_->MaxIndex(), kShmMni - 1);
}

TEST_F(ShmRegistryTest, PermissionsFollowTheModeAndTheCallersIds) {
  int32_t id = Create(7, 100, 0640);
  Credentials group = User(1000, 0), other = User(1000, 1000), owner = User(5, 5);
  EXPECT_TRUE(reg_->Get(other, 1, 7, 0, 0, Fits).ok());  // asks for nothing
  EXPECT_EQ(reg_->Get(other, 1, 7, 0, 0400, Fits).error(), EACCES);
  EXPECT_TRUE(reg_->Get(group, 1, 7, 0, 0040, Fits).ok());
  EXPECT_EQ(reg_->ForAttach(group, id, 0666).error(), EACCES);
  EXPECT_TRUE(reg_->ForAttach(group, id, 0444).ok());
  EXPECT_EQ(reg_->Stat(other, id, ShmRegistry::StatBy::kId).error(), EACCES);
  EXPECT_TRUE(reg_->Stat(other, IpcIds::IndexOf(id), ShmRegistry::StatBy::kIndexAny).ok());
  EXPECT_EQ(reg_->Set(other, id, 5, 5, 0600).error(), EPERM);
  EXPECT_EQ(reg_->Remove(other, id).error(), EPERM);
  // Root hands it to uid 5: the new owner may change it, the creator (root) still may.
  ASSERT_TRUE(reg_->Set(root_, id, 5, 5, 0604 | abi::kShmDest).ok());
  ShmStatus s = StatOf(id);
  EXPECT_EQ(s.perm.uid, 5u);
  EXPECT_EQ(s.perm.cuid, 0u);
  EXPECT_EQ(s.perm.mode, 0604u);                       // only the permission bits are taken
  EXPECT_TRUE(reg_->ForAttach(other, id, 0444).ok());  // others may read now
  EXPECT_TRUE(reg_->Set(owner, id, 5, 5, 0600).ok());
  EXPECT_EQ(reg_->Set(owner, id, UINT32_MAX, 5, 0600).error(), EINVAL);
  EXPECT_TRUE(reg_->Remove(owner, id).ok());
}

TEST_F(ShmRegistryTest, StaleIdsAndIndicesAreEinval) {
  int32_t id = Create();
  EXPECT_EQ(reg_->Stat(root_, id + IpcIds::kMaxIndices, ShmRegistry::StatBy::kId).error(), EINVAL);
  EXPECT_EQ(reg_->Stat(root_, id + 1, ShmRegistry::StatBy::kIndex).error(), EINVAL);
  ASSERT_TRUE(reg_->Remove(root_, id).ok());
  EXPECT_EQ(reg_->Stat(root_, id, ShmRegistry::StatBy::kId).error(), EINVAL);
  EXPECT_EQ(reg_->Remove(root_, id).error(), EINVAL);
  EXPECT_EQ(reg_->total_pages(), 0u);
}

// An attached segment that is removed lives until its last VMA goes.
TEST_F(ShmRegistryTest, RemovedWhileAttachedLivesUntilTheLastDetach) {
  int32_t id = Create(42);
  std::shared_ptr<ShmSegment> seg = reg_->ForAttach(root_, id, 0666).value();
  pid_ = 20;
  mm::ObservedMapping vma(seg);
  mm::ObservedMapping forked = vma;  // fork copies the VMA
  pid_ = 21;
  EXPECT_EQ(StatOf(id).nattch, 2u);
  EXPECT_EQ(StatOf(id).lpid, 20);
  ASSERT_TRUE(reg_->Remove(root_, id).ok());
  ShmStatus s = StatOf(id);
  EXPECT_EQ(s.perm.mode & abi::kShmDest, abi::kShmDest);
  EXPECT_EQ(s.perm.key, 0);
  EXPECT_EQ(reg_->Get(root_, 10, 42, 0, 0, Fits).error(), ENOENT);
  EXPECT_NE(Create(42), id);  // the key is free for a new segment
  forked.reset();
  EXPECT_EQ(StatOf(id).nattch, 1u);
  EXPECT_EQ(StatOf(id).lpid, 21);
  EXPECT_NE(StatOf(id).dtime, 0);
  vma.reset();
  EXPECT_EQ(reg_->Stat(root_, id, ShmRegistry::StatBy::kId).error(), EINVAL);
  EXPECT_EQ(reg_->used_ids(), 1);
}

TEST_F(ShmRegistryTest, LockNeedsMemlockRoomUnlessCapable) {
  Credentials user = User(1000, 1000);
  int32_t small = reg_->Get(user, 1, 0, 4096, kRw, Fits).value();
  int32_t big = reg_->Get(user, 1, 0, 3 * 4096, kRw, Fits).value();
  EXPECT_EQ(reg_->Lock(user, small, true, 0).error(), EPERM);
  EXPECT_EQ(reg_->Lock(User(2000, 2000), small, true, 1 << 20).error(), EPERM);  // not owner
  ASSERT_TRUE(reg_->Lock(user, small, true, 2 * 4096).ok());
  EXPECT_EQ(StatOf(small).perm.mode & abi::kShmLocked, abi::kShmLocked);
  EXPECT_TRUE(reg_->Lock(user, small, true, 2 * 4096).ok());  // again: no second charge
  EXPECT_EQ(reg_->Lock(user, big, true, 2 * 4096).error(), ENOMEM);
  ASSERT_TRUE(reg_->Lock(user, small, false, 0).ok());
  EXPECT_EQ(StatOf(small).perm.mode & abi::kShmLocked, 0u);
  EXPECT_EQ(reg_->Lock(user, big, true, 2 * 4096).error(), ENOMEM);  // 3 pages > 2
  EXPECT_TRUE(reg_->Lock(user, big, true, 3 * 4096).ok());
  // Root inside has CAP_IPC_LOCK: any segment, no limit.
  EXPECT_TRUE(reg_->Lock(root_, small, true, 0).ok());
}

}  // namespace
}  // namespace usentry::sentry
