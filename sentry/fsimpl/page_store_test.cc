// PageStore: bytes, growth under a shared mapping, and the space accounting tmpfs's
// byte budget relies on.
#include "sentry/fsimpl/page_store.h"

#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace usentry::sentry::fsimpl {
namespace {

constexpr uint64_t kPage = 4096;

class PageStoreTest : public ::testing::Test {
 protected:
  SysResult<size_t> Write(PageStore& s, const std::string& data, uint64_t off) {
    iovec v{const_cast<char*>(data.data()), data.size()};
    return s.Write(absl::MakeConstSpan(&v, 1), off);
  }
  std::string Read(PageStore& s, size_t n, uint64_t off) {
    std::string out(n, '\0');
    iovec v{out.data(), n};
    auto r = s.Read(absl::MakeConstSpan(&v, 1), off);
    out.resize(r.ok() ? *r : 0);
    return out;
  }
  PageStore::ChargeFn Counting(int64_t limit) {
    return [this, limit](int64_t delta) -> SysStatus {
      if (delta > 0 && charged_ + delta > limit) return Errno{ENOSPC};
      charged_ += delta;
      return SysOk();
    };
  }

  std::unique_ptr<mm::MemoryFile> mf_ = *mm::MemoryFile::Create(1ull << 36);
  int64_t charged_ = 0;
};

TEST_F(PageStoreTest, SparseWritesChargeOnlyTheirPages) {
  {
    PageStore s(mf_.get(), 1ull << 40, Counting(1 << 20));
    ASSERT_TRUE(Write(s, "x", 3ull << 30).ok());  // far past the 1 MiB limit: sparse
    EXPECT_EQ(s.size(), (3ull << 30) + 1);
    EXPECT_EQ(charged_, static_cast<int64_t>(kPage));
    ASSERT_TRUE(Write(s, std::string(2 * kPage, 'a'), 10).ok());  // pages 0..2
    EXPECT_EQ(charged_, static_cast<int64_t>(4 * kPage));
    ASSERT_TRUE(Write(s, "b", 5).ok());  // already charged
    EXPECT_EQ(charged_, static_cast<int64_t>(4 * kPage));
    EXPECT_EQ(Read(s, 7, 4), std::string("\0b\0\0\0\0a", 7));
    EXPECT_EQ(Read(s, 1, 1 << 20), std::string(1, '\0'));
    ASSERT_TRUE(s.Truncate(kPage + 1).ok());  // keeps pages 0 and 1
    EXPECT_EQ(charged_, static_cast<int64_t>(2 * kPage));
    EXPECT_EQ(Write(s, std::string((1 << 20) + kPage, 'c'), 0).error(), ENOSPC);
  }
  EXPECT_EQ(charged_, 0);  // given back with the store
}

TEST_F(PageStoreTest, WritableMappingChargesItsPartOfTheFile) {
  PageStore s(mf_.get(), 1ull << 40, Counting(1 << 20));
  ASSERT_TRUE(s.Truncate(8 * kPage).ok());
  EXPECT_EQ(charged_, 0);
  ASSERT_TRUE(s.ChargeMapping(2 * kPage, 100 * kPage).ok());  // clipped at EOF
  EXPECT_EQ(charged_, static_cast<int64_t>(6 * kPage));
  ASSERT_TRUE(s.Truncate(0).ok());
  EXPECT_EQ(charged_, 0);
}

TEST_F(PageStoreTest, SharedPagesStayCoherentWhileTheFileGrows) {
  PageStore s(mf_.get(), 1ull << 40);
  ASSERT_TRUE(Write(s, "head", 0).ok());
  auto pages = s.PagesCovering(kPage);
  ASSERT_TRUE(pages.ok());
  ASSERT_GE((*pages)->len(), PageStore::kMappedReserve);
  EXPECT_TRUE(s.mapped());
  EXPECT_EQ(std::string(reinterpret_cast<char*>((*pages)->data()), 4), "head");
  ASSERT_TRUE(Write(s, "tail", 32 << 20).ok());  // within the reservation: no move
  EXPECT_EQ(std::string(reinterpret_cast<char*>((*pages)->data()) + (32 << 20), 4), "tail");
  memcpy((*pages)->data(), "HEAD", 4);
  EXPECT_EQ(Read(s, 4, 0), "HEAD");
  // Shrinking clears what lies past the new end, also in the mapping.
  ASSERT_TRUE(s.Truncate(2).ok());
  EXPECT_EQ((*pages)->data()[2], 0);
}

}  // namespace
}  // namespace usentry::sentry::fsimpl
