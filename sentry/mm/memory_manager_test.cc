// VMA bookkeeping and copy helpers of the MemoryManager, without a platform.
#include "sentry/mm/memory_manager.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <vector>

#include "gtest/gtest.h"

namespace usentry::sentry::mm {
namespace {

constexpr uint64_t kTop = 0x7ff000000000;

class MemoryManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto f = MemoryFile::Create(1ull << 30);
    ASSERT_TRUE(f.ok()) << f.status();
    mf_ = std::move(f).value();
    mm_ = std::make_unique<MemoryManager>(mf_.get(), kTop);
  }

  GuestAddr Map(uint64_t len, int prot = PROT_READ | PROT_WRITE, int flags = MAP_PRIVATE,
                GuestAddr addr = GuestAddr()) {
    MMapOpts o;
    o.addr = addr;
    o.len = len;
    o.prot = prot;
    o.flags = flags | MAP_ANONYMOUS;
    auto r = mm_->MMap(o);
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() ? r.value() : GuestAddr();
  }

  // A private mapping of a made-up file of `file_size` bytes, each byte its page number
  // plus one; `on_read` is told the file offset of every read.
  static MMapOpts FileOpts(GuestAddr addr, uint64_t len, int prot, uint64_t off,
                           std::shared_ptr<void> file, uint64_t file_size,
                           std::function<void(uint64_t)> on_read) {
    MMapOpts o;
    o.addr = addr;
    o.len = len;
    o.prot = prot;
    o.flags = MAP_PRIVATE | (addr.IsNull() ? 0 : MAP_FIXED);
    o.file_off = off;
    o.fill_is_whole_file = true;
    o.file_ref = std::move(file);
    o.fill = [file_size, on_read = std::move(on_read)](uint8_t* dst, uint64_t n,
                                                       uint64_t at) -> SysResult<uint64_t> {
      on_read(at);
      const uint64_t got = at >= file_size ? 0 : std::min(n, file_size - at);
      for (uint64_t i = 0; i < got; ++i) dst[i] = static_cast<uint8_t>((at + i) / kPageSize + 1);
      return got;
    };
    return o;
  }

  std::unique_ptr<MemoryFile> mf_;
  std::unique_ptr<MemoryManager> mm_;
};

TEST_F(MemoryManagerTest, AnonymousMappingIsZeroAndWritable) {
  GuestAddr a = Map(3 * kPageSize);
  ASSERT_TRUE(a.PageAligned());
  uint64_t v = 1;
  ASSERT_TRUE(mm_->CopyIn(a + 8, &v, sizeof(v)).ok());
  EXPECT_EQ(v, 0u);
  const char msg[] = "hello across pages";
  ASSERT_TRUE(mm_->CopyOut(a + kPageSize - 5, msg, sizeof(msg)).ok());
  char back[sizeof(msg)];
  ASSERT_TRUE(mm_->CopyIn(a + kPageSize - 5, back, sizeof(back)).ok());
  EXPECT_STREQ(back, msg);
  auto s = mm_->CopyInString(a + kPageSize - 5, 100);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value(), msg);
}

// Strings of any length up to max_len come back whole, also when they end on the last
// byte before an unmapped page.
TEST_F(MemoryManagerTest, CopyInStringReadsUpToTheNulAndNoFurther) {
  GuestAddr a = Map(2 * kPageSize);
  ASSERT_TRUE(mm_->MUnmap(a + kPageSize, kPageSize).ok());
  for (size_t len : {0, 1, 255, 256, 257, 1000, 4095}) {
    std::string want(len, 'x');
    for (size_t i = 0; i < len; ++i) want[i] = static_cast<char>('a' + i % 26);
    const GuestAddr at = a + kPageSize - (len + 1);  // the NUL is the page's last byte
    ASSERT_TRUE(mm_->CopyOut(at, want.c_str(), len + 1).ok());
    auto s = mm_->CopyInString(at, 4096);
    ASSERT_TRUE(s.ok()) << len << ": " << s.error();
    EXPECT_EQ(s.value(), want) << len;
    if (len > 0) {
      auto too_long = mm_->CopyInString(at, len - 1);
      ASSERT_FALSE(too_long.ok()) << len;
      EXPECT_EQ(too_long.error(), ENAMETOOLONG) << len;
    }
  }
  // No NUL before the hole: EFAULT.
  std::string full(300, 'y');
  ASSERT_TRUE(mm_->CopyOut(a + kPageSize - 300, full.data(), 300).ok());
  auto s = mm_->CopyInString(a + kPageSize - 300, 4096);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), EFAULT);
}

TEST_F(MemoryManagerTest, UnmappedAndProtectedAccessIsEfault) {
  GuestAddr a = Map(2 * kPageSize);
  char buf[16] = {};
  // Past the end of the mapping, and straddling it.
  EXPECT_EQ(mm_->CopyIn(a + 2 * kPageSize, buf, 1).error(), EFAULT);
  EXPECT_EQ(mm_->CopyIn(a + 2 * kPageSize - 8, buf, 16).error(), EFAULT);
  EXPECT_EQ(mm_->CopyOut(GuestAddr(0), buf, 1).error(), EFAULT);
  EXPECT_EQ(mm_->CopyOut(GuestAddr(~0ull - 4), buf, 8).error(), EFAULT);
  ASSERT_TRUE(mm_->MProtect(a + kPageSize, kPageSize, PROT_READ).ok());
  EXPECT_TRUE(mm_->CopyIn(a + kPageSize, buf, 8).ok());
  EXPECT_EQ(mm_->CopyOut(a + kPageSize, buf, 8).error(), EFAULT);
  ASSERT_TRUE(mm_->MProtect(a, kPageSize, PROT_NONE).ok());
  EXPECT_EQ(mm_->CopyIn(a, buf, 8).error(), EFAULT);
  // The loader's forced write ignores protections but not holes.
  EXPECT_TRUE(mm_->CopyOutForce(a, buf, 8).ok());
  EXPECT_EQ(mm_->CopyOutForce(a + 2 * kPageSize, buf, 8).error(), EFAULT);
}

TEST_F(MemoryManagerTest, MunmapInTheMiddleSplitsTheVma) {
  GuestAddr a = Map(3 * kPageSize);
  uint32_t marker = 0xabcd;
  ASSERT_TRUE(mm_->CopyOut(a + 2 * kPageSize, &marker, 4).ok());
  ASSERT_TRUE(mm_->MUnmap(a + kPageSize, kPageSize).ok());
  EXPECT_EQ(mm_->vmas().size(), 2u);
  char c;
  EXPECT_TRUE(mm_->CopyIn(a, &c, 1).ok());
  EXPECT_EQ(mm_->CopyIn(a + kPageSize, &c, 1).error(), EFAULT);
  uint32_t got = 0;
  ASSERT_TRUE(mm_->CopyIn(a + 2 * kPageSize, &got, 4).ok());
  EXPECT_EQ(got, marker);  // the tail kept its contents after the split
  EXPECT_EQ(mm_->MUnmap(a + 1, kPageSize).error(), EINVAL);
  EXPECT_EQ(mm_->MUnmap(a, 0).error(), EINVAL);
}

TEST_F(MemoryManagerTest, MprotectNeedsTheWholeRangeMapped) {
  GuestAddr a = Map(kPageSize);
  EXPECT_EQ(mm_->MProtect(a, 2 * kPageSize, PROT_READ).error(), ENOMEM);
  EXPECT_EQ(mm_->MProtect(a + 1, kPageSize, PROT_READ).error(), EINVAL);
  EXPECT_EQ(mm_->MProtect(a, kPageSize, 0x100).error(), EINVAL);
}

TEST_F(MemoryManagerTest, FixedAndNoReplace) {
  GuestAddr a = Map(2 * kPageSize);
  MMapOpts o;
  o.addr = a;
  o.len = kPageSize;
  o.prot = PROT_READ;
  o.flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE;
  EXPECT_EQ(mm_->MMap(o).error(), EEXIST);
  o.flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
  o.addr = a + 1;
  EXPECT_EQ(mm_->MMap(o).error(), EINVAL);
  o.addr = GuestAddr(0x1000);
  EXPECT_EQ(mm_->MMap(o).error(), EPERM);  // below mmap_min_addr
  o.addr = GuestAddr(kTop);
  EXPECT_EQ(mm_->MMap(o).error(), ENOMEM);  // the stub region is not the app's
  o.addr = a;
  auto r = mm_->MMap(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), a);
  EXPECT_EQ(mm_->vmas().size(), 2u);  // replaced the first page only
}

TEST_F(MemoryManagerTest, BrkGrowsAndShrinks) {
  mm_->SetBrkBase(GuestAddr(0x600000));
  EXPECT_EQ(mm_->Brk(GuestAddr(0)).value(), GuestAddr(0x600000));
  EXPECT_EQ(mm_->Brk(GuestAddr(0x600000 + 3 * kPageSize + 7)).value(),
            GuestAddr(0x600000 + 3 * kPageSize + 7));
  char c = 'x';
  EXPECT_TRUE(mm_->CopyOut(GuestAddr(0x600000 + 3 * kPageSize + 6), &c, 1).ok());
  EXPECT_EQ(mm_->CopyOut(GuestAddr(0x600000 + 4 * kPageSize), &c, 1).error(), EFAULT);
  EXPECT_TRUE(mm_->Brk(GuestAddr(0x600000 + kPageSize)).ok());
  EXPECT_EQ(mm_->CopyOut(GuestAddr(0x600000 + kPageSize), &c, 1).error(), EFAULT);
  // Below the base: unchanged.
  EXPECT_EQ(mm_->Brk(GuestAddr(0x500000)).value(), GuestAddr(0x600000 + kPageSize));
}

TEST_F(MemoryManagerTest, ForkCopiesPrivateAndSharesShared) {
  GuestAddr priv = Map(kPageSize);
  GuestAddr shared = Map(kPageSize, PROT_READ | PROT_WRITE, MAP_SHARED);
  uint32_t one = 1;
  ASSERT_TRUE(mm_->CopyOut(priv, &one, 4).ok());
  ASSERT_TRUE(mm_->CopyOut(shared, &one, 4).ok());
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  ASSERT_NE(child, nullptr);
  uint32_t two = 2;
  ASSERT_TRUE(child->CopyOut(priv, &two, 4).ok());
  ASSERT_TRUE(child->CopyOut(shared, &two, 4).ok());
  uint32_t v = 0;
  ASSERT_TRUE(mm_->CopyIn(priv, &v, 4).ok());
  EXPECT_EQ(v, 1u);  // private: the parent's copy is untouched
  ASSERT_TRUE(mm_->CopyIn(shared, &v, 4).ok());
  EXPECT_EQ(v, 2u);  // shared: both see the write
}

TEST_F(MemoryManagerTest, MremapGrowsInPlaceOrMoves) {
  GuestAddr a = Map(kPageSize);
  uint32_t marker = 77;
  ASSERT_TRUE(mm_->CopyOut(a, &marker, 4).ok());
  // Block the space after `a` so that growth must move.
  Map(kPageSize, PROT_READ, MAP_PRIVATE | MAP_FIXED, a + kPageSize);
  EXPECT_EQ(mm_->MRemap(a, kPageSize, 4 * kPageSize, 0, GuestAddr()).error(), ENOMEM);
  auto moved = mm_->MRemap(a, kPageSize, 4 * kPageSize, MREMAP_MAYMOVE, GuestAddr());
  ASSERT_TRUE(moved.ok());
  EXPECT_NE(moved.value(), a);
  uint32_t v = 0;
  ASSERT_TRUE(mm_->CopyIn(moved.value(), &v, 4).ok());
  EXPECT_EQ(v, marker);
  EXPECT_TRUE(mm_->CopyIn(moved.value() + 3 * kPageSize, &v, 4).ok());
  EXPECT_EQ(mm_->CopyIn(a, &v, 4).error(), EFAULT);
}

TEST_F(MemoryManagerTest, DontNeedZeroesPrivateAnonymousPages) {
  GuestAddr a = Map(kPageSize);
  uint32_t one = 1;
  ASSERT_TRUE(mm_->CopyOut(a, &one, 4).ok());
  ASSERT_TRUE(mm_->MAdviseDontNeed(a, kPageSize).ok());
  uint32_t v = 5;
  ASSERT_TRUE(mm_->CopyIn(a, &v, 4).ok());
  EXPECT_EQ(v, 0u);
}

// The host pages the memory file holds (lseek's SEEK_DATA walk).
uint64_t ResidentBytes(const MemoryFile& mf) {
  uint64_t total = 0;
  off_t pos = 0;
  while (true) {
    off_t data = lseek(mf.fd(), pos, SEEK_DATA);
    if (data < 0) return total;  // ENXIO: no more data
    off_t hole = lseek(mf.fd(), data, SEEK_HOLE);
    total += static_cast<uint64_t>(hole - data);
    pos = hole;
  }
}

TEST_F(MemoryManagerTest, MunmapGivesThePagesBackUntilTheRunEnds) {
  const uint64_t len = 4 * kPageSize;
  GuestAddr a = Map(len);
  std::vector<uint8_t> ones(len, 1);
  ASSERT_TRUE(mm_->CopyOut(a, ones.data(), len).ok());
  EXPECT_EQ(ResidentBytes(*mf_), len);
  ASSERT_TRUE(mm_->MUnmap(a, len).ok());
  // The freed range waits for a reclaim (an idle sentry thread's), a part at a time.
  EXPECT_TRUE(mf_->reclaim_pending());
  EXPECT_EQ(ResidentBytes(*mf_), len);
  EXPECT_TRUE(mf_->ReclaimSome(kPageSize));
  EXPECT_EQ(ResidentBytes(*mf_), len - kPageSize);
  mf_->ReclaimAll();
  EXPECT_FALSE(mf_->reclaim_pending());
  EXPECT_EQ(ResidentBytes(*mf_), 0u);

  GuestAddr b = Map(len);
  ASSERT_TRUE(mm_->CopyOut(b, ones.data(), len).ok());
  mf_->EndRun();
  ASSERT_TRUE(mm_->MUnmap(b, len).ok());
  EXPECT_FALSE(mf_->ReclaimSome(len));
  EXPECT_EQ(ResidentBytes(*mf_), len);  // left for the sentry's exit to free
  // And nothing is handed out again, so those stale pages never reach a mapping.
  MMapOpts o;
  o.len = kPageSize;
  o.prot = PROT_READ | PROT_WRITE;
  o.flags = MAP_PRIVATE | MAP_ANONYMOUS;
  auto r = mm_->MMap(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), ENOMEM);
}

// A freed range is handed out again only once its pages are gone, however full the file.
TEST(MemoryFileTest, AFreedRangeComesBackOnlyAsZeroPages) {
  constexpr uint64_t kLen = 8 * kPageSize;
  auto f = MemoryFile::Create(kPageSize + kLen);  // offset 0 is never handed out
  ASSERT_TRUE(f.ok()) << f.status();
  MemoryFile& mf = **f;
  std::shared_ptr<MemoryRange> r = mf.Allocate(kLen);
  ASSERT_NE(r, nullptr);
  const uint64_t at = r->offset();
  std::vector<uint8_t> ones(kLen, 1);
  ASSERT_EQ(pwrite(mf.fd(), ones.data(), kLen, static_cast<off_t>(at)), static_cast<ssize_t>(kLen));
  r.reset();
  EXPECT_TRUE(mf.reclaim_pending());
  EXPECT_EQ(ResidentBytes(mf), kLen);
  r = mf.Allocate(kLen);  // only the waiting offsets fit: they are punched first
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->offset(), at);
  EXPECT_FALSE(mf.reclaim_pending());
  EXPECT_EQ(ResidentBytes(mf), 0u);
  std::vector<uint8_t> got(kLen, 0xee);
  ASSERT_EQ(pread(mf.fd(), got.data(), kLen, static_cast<off_t>(at)), static_cast<ssize_t>(kLen));
  EXPECT_EQ(got, std::vector<uint8_t>(kLen, 0));
}

// Past a bound on what waits, a freed range gives its pages back at once.
TEST(MemoryFileTest, FreesPastTheBoundAreReclaimedAtOnce) {
  auto f = MemoryFile::Create(1ull << 30);
  ASSERT_TRUE(f.ok()) << f.status();
  MemoryFile& mf = **f;
  std::shared_ptr<MemoryRange> small = mf.Allocate(kPageSize);
  std::shared_ptr<MemoryRange> big = mf.Allocate(MemoryFile::kMaxPendingFree);
  ASSERT_NE(small, nullptr);
  ASSERT_NE(big, nullptr);
  const uint8_t one = 1;
  ASSERT_EQ(pwrite(mf.fd(), &one, 1, static_cast<off_t>(small->offset())), 1);
  ASSERT_EQ(pwrite(mf.fd(), &one, 1, static_cast<off_t>(big->offset())), 1);
  small.reset();  // waits
  EXPECT_EQ(ResidentBytes(mf), 2 * kPageSize);
  big.reset();  // would pass the bound: punched now
  EXPECT_EQ(ResidentBytes(mf), kPageSize);
  mf.ReclaimAll();
  EXPECT_EQ(ResidentBytes(mf), 0u);
}

// File mappings are read where they are touched, a 64 KiB chunk at a time, whether the
// app faults there or the sentry reads the memory; untouched chunks are never read.
TEST_F(MemoryManagerTest, FileMappingsReadOnlyTheChunksTouched) {
  constexpr uint64_t kChunk = kFaultChunk;
  constexpr uint64_t kFileSize = 4 * kChunk - 100;  // the last chunk ends before its end
  std::vector<uint64_t> reads;                      // file offsets asked for
  auto file = std::make_shared<int>(0);             // stands for the open file
  auto opts = [&](GuestAddr addr, uint64_t len, int prot, uint64_t off) {
    return FileOpts(addr, len, prot, off, file, kFileSize,
                    [&reads](uint64_t at) { reads.push_back(at); });
  };
  auto byte_at = [&](GuestAddr a) {
    uint8_t b = 0;
    EXPECT_TRUE(mm_->CopyIn(a, &b, 1).ok());
    return b;
  };
  auto span = mm_->MMap(opts(GuestAddr(), 4 * kChunk, PROT_READ, 0));
  ASSERT_TRUE(span.ok());
  const GuestAddr base = *span;
  EXPECT_TRUE(reads.empty());

  EXPECT_EQ(byte_at(base + 2 * kChunk + 5 * kPageSize), 2 * kChunk / kPageSize + 6);
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0], 2 * kChunk);
  EXPECT_EQ(mm_->HandleFault((base + 10).value(), false, false),
            MemoryManager::FaultResult::kResolved);
  EXPECT_EQ(reads.size(), 2u);
  EXPECT_EQ(byte_at(base), 1);
  EXPECT_EQ(reads.size(), 2u);  // filled once
  // Past the file's end the mapping reads zeros.
  EXPECT_EQ(byte_at(base + 4 * kChunk - 50), 0);

  // A segment mapped over chunk 1 from file offset 0, as ld.so does at other offsets.
  ASSERT_TRUE(mm_->MMap(opts(base + kChunk, kChunk, PROT_READ | PROT_EXEC, 0)).ok());
  EXPECT_EQ(byte_at(base + kChunk + kPageSize), 2);
  // Every chunk filled: the span's VMAs with the same protection joined again.
  EXPECT_EQ(mm_->vmas().size(), 3u);  // chunk 0 | chunk 1 (r-x) | chunks 2-3
  // A PROT_NONE part is not filled by a fault: the fault is the app's.
  ASSERT_TRUE(mm_->MProtect(base + 3 * kChunk, kChunk, PROT_NONE).ok());
  EXPECT_EQ(mm_->HandleFault((base + 3 * kChunk).value(), false, false),
            MemoryManager::FaultResult::kSignal);
}

// After fork both sides fill their untouched chunks with the file's bytes, and a write
// fills first, then copies.
TEST_F(MemoryManagerTest, ForkedFileMappingsFillAndCopy) {
  auto file = std::make_shared<int>(0);
  MMapOpts o;
  o.len = 2 * kFaultChunk;
  o.prot = PROT_READ | PROT_WRITE;
  o.flags = MAP_PRIVATE;
  o.file_ref = file;
  o.fill = [](uint8_t* dst, uint64_t len, uint64_t) -> SysResult<uint64_t> {
    memset(dst, 'f', len);
    return len;
  };
  auto a = mm_->MMap(o);
  ASSERT_TRUE(a.ok());
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  const uint8_t w = 'c';
  ASSERT_TRUE(child->CopyOut(*a + kFaultChunk, &w, 1).ok());
  uint8_t b = 0;
  ASSERT_TRUE(mm_->CopyIn(*a + kFaultChunk, &b, 1).ok());
  EXPECT_EQ(b, 'f');
  ASSERT_TRUE(child->CopyIn(*a + kFaultChunk, &b, 1).ok());
  EXPECT_EQ(b, 'c');
  ASSERT_TRUE(child->CopyIn(*a + kFaultChunk + 1, &b, 1).ok());
  EXPECT_EQ(b, 'f');
}

// What ld.so does for every library: map the whole span from offset 0, then map each
// segment over it with MAP_FIXED at the same offsets. Filled whole at mmap (ptrace), the
// file is read once; a segment at another offset, or over pages that were writable, is
// read again.
TEST_F(MemoryManagerTest, FilledWholeFixedRemapOfTheSameFileBytesReusesThePages) {
  mm_->set_demand_fill(false);
  constexpr uint64_t kFileSize = 4 * kPageSize;
  int reads = 0;
  auto file = std::make_shared<int>(0);  // stands for the open file
  auto opts = [&](GuestAddr addr, uint64_t len, int prot, uint64_t off) {
    return FileOpts(addr, len, prot, off, file, kFileSize, [&reads](uint64_t) { ++reads; });
  };
  auto page_byte = [&](GuestAddr a) {
    uint8_t b = 0;
    EXPECT_TRUE(mm_->CopyIn(a, &b, 1).ok());
    return b;
  };
  auto span = mm_->MMap(opts(GuestAddr(), kFileSize, PROT_READ, 0));
  ASSERT_TRUE(span.ok());
  ASSERT_EQ(reads, 1);
  const GuestAddr base = *span;

  // Text over pages 1-2 at their own offsets: no read, same bytes, new protection.
  ASSERT_TRUE(
      mm_->MMap(opts(base + kPageSize, 2 * kPageSize, PROT_READ | PROT_EXEC, kPageSize)).ok());
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(page_byte(base + kPageSize), 2);
  EXPECT_EQ(page_byte(base + 2 * kPageSize), 3);
  EXPECT_EQ(mm_->vmas().at((base + kPageSize).value()).prot, PROT_READ | PROT_EXEC);
  EXPECT_EQ(page_byte(base + 3 * kPageSize), 4);  // the untouched rest of the span

  // Page 3 mapped from file offset 0: other bytes, so a read.
  ASSERT_TRUE(mm_->MMap(opts(base + 3 * kPageSize, kPageSize, PROT_READ, 0)).ok());
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(page_byte(base + 3 * kPageSize), 1);

  // Once writable, pages may differ from the file: remapping them reads again.
  ASSERT_TRUE(mm_->MProtect(base, kPageSize, PROT_READ | PROT_WRITE).ok());
  const uint8_t scribble = 0x55;
  ASSERT_TRUE(mm_->CopyOut(base, &scribble, 1).ok());
  ASSERT_TRUE(mm_->MMap(opts(base, kPageSize, PROT_READ, 0)).ok());
  EXPECT_EQ(reads, 3);
  EXPECT_EQ(page_byte(base), 1);
}

TEST_F(MemoryManagerTest, TranslateIovecsChecksEveryElement) {
  GuestAddr a = Map(kPageSize);
  uint64_t iov[4] = {a.value() + 16, 8, 0x10, 8};  // second element points nowhere
  ASSERT_TRUE(mm_->CopyOut(a, iov, sizeof(iov)).ok());
  EXPECT_EQ(mm_->TranslateIovecs(a, 2, Access::kWrite).error(), EFAULT);
  auto one = mm_->TranslateIovecs(a, 1, Access::kWrite);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one.value().size(), 1u);
  EXPECT_EQ(one.value()[0].iov_len, 8u);
  EXPECT_EQ(mm_->TranslateIovecs(a, -1, Access::kRead).error(), EINVAL);
}

// Counts the VMAs that hold it, as SysV shm counts attachments.
struct CountingObserver final : MappingObserver {
  void VmaOpened() override { open++; }
  void VmaClosed() override { open--; }
  int open = 0;
};

class ObservedMappingTest : public MemoryManagerTest {
 protected:
  // A shared mapping of `pages_` (4 pages) observed by `obs_`.
  GuestAddr MapObserved(GuestAddr addr = GuestAddr(), int flags = MAP_SHARED) {
    MMapOpts o;
    o.addr = addr;
    o.len = 4 * kPageSize;
    o.prot = PROT_READ | PROT_WRITE;
    o.flags = flags;
    o.shared_pages = pages_;
    o.observer = obs_;
    auto r = mm_->MMap(o);
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() ? r.value() : GuestAddr();
  }

  std::shared_ptr<MemoryRange> pages_;
  std::shared_ptr<CountingObserver> obs_ = std::make_shared<CountingObserver>();

  void SetUp() override {
    MemoryManagerTest::SetUp();
    pages_ = mf_->Allocate(4 * kPageSize);
  }
};

TEST_F(ObservedMappingTest, SplitsAndRemovalsAreCounted) {
  GuestAddr a = MapObserved();
  EXPECT_EQ(obs_->open, 1);
  // mprotect of the middle page: three VMAs, as Linux counts shm_nattch.
  ASSERT_TRUE(mm_->MProtect(a + kPageSize, kPageSize, PROT_READ).ok());
  EXPECT_EQ(obs_->open, 3);
  ASSERT_TRUE(mm_->MUnmap(a + kPageSize, kPageSize).ok());
  EXPECT_EQ(obs_->open, 2);
  ASSERT_TRUE(mm_->MUnmap(a, 4 * kPageSize).ok());
  EXPECT_EQ(obs_->open, 0);
}

TEST_F(ObservedMappingTest, ForkCountsTheChildsCopyAndDestructionCloses) {
  MapObserved();
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(obs_->open, 2);
  child.reset();  // exit of the child
  EXPECT_EQ(obs_->open, 1);
  mm_.reset();
  EXPECT_EQ(obs_->open, 0);
}

TEST_F(ObservedMappingTest, FixedMappingOverItCloses) {
  GuestAddr a = MapObserved();
  Map(kPageSize, PROT_READ, MAP_PRIVATE | MAP_FIXED, a);
  EXPECT_EQ(obs_->open, 1);  // the remaining three pages are still one VMA
  Map(3 * kPageSize, PROT_READ, MAP_PRIVATE | MAP_FIXED, a + kPageSize);
  EXPECT_EQ(obs_->open, 0);
}

TEST_F(ObservedMappingTest, MremapWithinThePagesStaysOneVmaAndMovesKeepTheCount) {
  GuestAddr a = MapObserved();
  ASSERT_TRUE(mm_->MRemap(a, 4 * kPageSize, 2 * kPageSize, 0, GuestAddr()).ok());
  EXPECT_EQ(obs_->open, 1);
  // Growing back over the same pages, in place: the VMA grows, no new one.
  ASSERT_TRUE(mm_->MRemap(a, 2 * kPageSize, 4 * kPageSize, 0, GuestAddr()).ok());
  EXPECT_EQ(obs_->open, 1);
  EXPECT_EQ(mm_->vmas().size(), 1u);
  uint32_t v = 5;
  ASSERT_TRUE(mm_->CopyOut(a + 3 * kPageSize, &v, 4).ok());
  EXPECT_EQ(*reinterpret_cast<uint32_t*>(pages_->data() + 3 * kPageSize), 5u);
  auto moved = mm_->MRemap(a, 4 * kPageSize, 4 * kPageSize, MREMAP_MAYMOVE | MREMAP_FIXED,
                           a + 64 * kPageSize);
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(obs_->open, 1);
  // Growing past the pages makes a private copy, which is no longer observed.
  Map(kPageSize, PROT_READ, MAP_PRIVATE | MAP_FIXED, moved.value() + 4 * kPageSize);
  auto grown =
      mm_->MRemap(moved.value(), 4 * kPageSize, 8 * kPageSize, MREMAP_MAYMOVE, GuestAddr());
  ASSERT_TRUE(grown.ok());
  EXPECT_EQ(obs_->open, 0);
}

}  // namespace
}  // namespace usentry::sentry::mm

namespace usentry::sentry::mm {
namespace {

// Records, page by page, what the memory manager asked the platform to map.
class FakeAddressSpace : public platform::AddressSpace {
 public:
  struct Page {
    uint64_t offset;  // in the memory file, or in host_file
    int prot;
    bool shared;
    const UniqueFd* host_file = nullptr;  // MapHostFile's
  };
  absl::Status MapFile(uint64_t addr, uint64_t len, uint64_t offset, platform::Prot prot) override {
    if (refuse_maps) return absl::ResourceExhaustedError("mmap: ENOMEM");
    ++maps;
    for (uint64_t p = 0; p < len; p += kPageSize) pages[addr + p] = Page{offset + p, prot, false};
    return absl::OkStatus();
  }
  bool refuse_maps = false;  // as a host at vm.max_map_count would
  int maps = 0;              // MapFile calls
  int unmaps = 0;
  absl::Status MapHostFile(uint64_t addr, uint64_t len, const std::shared_ptr<const UniqueFd>& file,
                           uint64_t offset, platform::Prot prot) override {
    if (!maps_host_files) return AddressSpace::MapHostFile(addr, len, file, offset, prot);
    EXPECT_EQ(prot & PROT_WRITE, 0);
    for (uint64_t p = 0; p < len; p += kPageSize) {
      pages[addr + p] = Page{offset + p, prot, false, file.get()};
    }
    return absl::OkStatus();
  }
  bool maps_host_files = true;
  absl::Status Unmap(uint64_t addr, uint64_t len) override {
    ++unmaps;
    for (uint64_t p = 0; p < len; p += kPageSize) pages.erase(addr + p);
    return absl::OkStatus();
  }
  absl::Status Protect(uint64_t addr, uint64_t len, platform::Prot prot) override {
    for (uint64_t p = 0; p < len; p += kPageSize) {
      if (auto it = pages.find(addr + p); it != pages.end()) it->second.prot = prot;
    }
    return absl::OkStatus();
  }
  void SetPagesShared(uint64_t addr, uint64_t len, bool shared) override {
    for (uint64_t p = 0; p < len; p += kPageSize) {
      if (auto it = pages.find(addr + p); it != pages.end()) it->second.shared = shared;
    }
  }
  uint64_t MaxUserAddress() const override { return kTop; }
  std::map<uint64_t, Page> pages;
};

constexpr uint64_t kChunk = 64 << 10;

class CowTest : public MemoryManagerTest {
 protected:
  // Binds a FakeAddressSpace to `m` and returns it (owned by m).
  FakeAddressSpace* Activate(MemoryManager& m) {
    auto as = std::make_unique<FakeAddressSpace>();
    FakeAddressSpace* raw = as.get();
    EXPECT_TRUE(m.Activate(std::move(as)).ok());
    return raw;
  }
  uint8_t Byte(const MemoryManager& m, GuestAddr a) {
    uint8_t b = 0xee;
    EXPECT_TRUE(m.CopyIn(a, &b, 1).ok());
    return b;
  }
  void Put(MemoryManager& m, GuestAddr a, uint8_t b) { ASSERT_TRUE(m.CopyOut(a, &b, 1).ok()); }

  // The isolation copy-on-write must keep: a page of the memory file that one address
  // space may write in place is mapped by no other VMA anywhere, and every VMA stays
  // inside the pages it holds.
  static void ExpectNoSharedWritablePages(std::vector<const MemoryManager*> mms) {
    struct Use {
      uint64_t lo, hi;
      bool exclusive;
      const MemoryManager* mm;
      uint64_t addr;
    };
    std::vector<Use> uses;
    for (const MemoryManager* m : mms) {
      for (const auto& [start, v] : m->vmas()) {
        if (v.host || !v.range) continue;
        EXPECT_LE(v.range_off + (v.end - v.start), v.range->len())
            << "VMA at 0x" << std::hex << v.start << " maps past the end of its pages";
        const uint64_t lo = v.range->offset() + v.range_off;
        uses.push_back({lo, lo + (v.end - v.start), !v.shared && !v.cow, m, v.start});
      }
    }
    std::sort(uses.begin(), uses.end(), [](const Use& a, const Use& b) { return a.lo < b.lo; });
    for (size_t i = 0; i < uses.size(); i++) {
      for (size_t j = i + 1; j < uses.size() && uses[j].lo < uses[i].hi; j++) {
        EXPECT_FALSE(uses[i].exclusive || uses[j].exclusive)
            << "VMA at 0x" << std::hex << uses[i].addr << " and VMA at 0x" << uses[j].addr
            << " map the same memory-file pages, one of them writable in place";
      }
    }
  }
};

// MAP_FIXED over a mapping: the new host mapping replaces the old one in one call (ld.so
// maps each segment over its library's span), and the old pages go back only after.
// If the address space refuses the new mapping, the old one is unmapped there: no
// process keeps pages that the memory file hands out again.
TEST_F(CowTest, MapFixedReplacesTheHostMappingInOneCall) {
  FakeAddressSpace* as = Activate(*mm_);
  GuestAddr a = Map(2 * kChunk);
  Put(*mm_, a + kPageSize, 7);
  const uint64_t old_offset = as->pages[(a + kPageSize).value()].offset;
  const int unmaps = as->unmaps;
  GuestAddr b = Map(2 * kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, a);
  ASSERT_EQ(b, a);
  EXPECT_EQ(as->unmaps, unmaps);
  EXPECT_NE(as->pages[(a + kPageSize).value()].offset, old_offset);
  EXPECT_EQ(Byte(*mm_, a + kPageSize), 0);

  as->refuse_maps = true;
  EXPECT_EQ(Map(kChunk, PROT_READ, MAP_PRIVATE | MAP_FIXED, a), a);
  EXPECT_EQ(as->pages.count(a.value()), 0u);
  EXPECT_EQ(as->unmaps, unmaps + 1);
}

TEST_F(CowTest, ForkSharesPagesAndTheFirstWriteCopiesOneChunk) {
  FakeAddressSpace* pas = Activate(*mm_);
  GuestAddr a = Map(16 * kChunk);
  for (uint64_t c = 0; c < 16; c++) Put(*mm_, a + c * kChunk, static_cast<uint8_t>(c));
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  FakeAddressSpace* cas = Activate(*child);
  // Both address spaces map the same pages, read-only and marked shared on the host.
  EXPECT_EQ(pas->pages[a.value()].offset, cas->pages[a.value()].offset);
  EXPECT_EQ(pas->pages[a.value()].prot, PROT_READ);
  EXPECT_EQ(cas->pages[a.value()].prot, PROT_READ);
  EXPECT_TRUE(pas->pages[a.value()].shared);
  EXPECT_TRUE(cas->pages[a.value()].shared);

  Put(*child, a + 5 * kChunk + 100, 0xcc);
  EXPECT_EQ(child->cow_copied_bytes(), kChunk);
  EXPECT_EQ(mm_->cow_copied_bytes(), 0u);
  EXPECT_EQ(Byte(*child, a + 5 * kChunk + 100), 0xcc);
  EXPECT_EQ(Byte(*child, a + 5 * kChunk), 5);  // the rest of the chunk came along
  EXPECT_EQ(Byte(*mm_, a + 5 * kChunk + 100), 0);
  const auto& copied = cas->pages[(a + 5 * kChunk).value()];
  EXPECT_EQ(copied.prot, PROT_READ | PROT_WRITE);
  EXPECT_FALSE(copied.shared);
  EXPECT_NE(copied.offset, pas->pages[(a + 5 * kChunk).value()].offset);
  EXPECT_EQ(cas->pages[(a + 6 * kChunk).value()].prot, PROT_READ);  // the next chunk: still shared
  ExpectNoSharedWritablePages({mm_.get(), child.get()});
}

// systrap cannot patch a syscall site in code pages shared with another address space
// since a fork: FillForPatching gives this one a copy of the site's chunk, executable as
// before, and leaves the other's pages and the rest of the code shared.
TEST_F(CowTest, PatchingCopiesTheSitesChunkOfSharedCode) {
  FakeAddressSpace* pas = Activate(*mm_);
  GuestAddr a = Map(4 * kChunk, PROT_READ | PROT_WRITE | PROT_EXEC);
  for (uint64_t c = 0; c < 4; c++) Put(*mm_, a + c * kChunk + 10, static_cast<uint8_t>(c + 1));
  ASSERT_TRUE(mm_->MProtect(a, 4 * kChunk, PROT_READ | PROT_EXEC).ok());
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  FakeAddressSpace* cas = Activate(*child);
  const GuestAddr site = a + 2 * kChunk + 100;
  ASSERT_TRUE(pas->pages[site.PageDown().value()].shared);
  mm_->FillForPatching(site.value());
  const auto& mine = pas->pages[site.PageDown().value()];
  EXPECT_FALSE(mine.shared);
  EXPECT_EQ(mine.prot, PROT_READ | PROT_EXEC);
  EXPECT_NE(mine.offset, cas->pages[site.PageDown().value()].offset);
  EXPECT_TRUE(cas->pages[site.PageDown().value()].shared);
  EXPECT_TRUE(pas->pages[(a + kChunk).value()].shared);  // the other chunks: still shared
  EXPECT_EQ(mm_->cow_copied_bytes(), kChunk);
  EXPECT_EQ(Byte(*mm_, a + 2 * kChunk + 10), 3);  // the copy holds the code
  EXPECT_EQ(Byte(*child, a + 2 * kChunk + 10), 3);
  ExpectNoSharedWritablePages({mm_.get(), child.get()});
}

TEST_F(CowTest, WriteFaultsAreResolvedOthersAreNot) {
  Activate(*mm_);
  GuestAddr rw = Map(kChunk);
  GuestAddr ro = Map(kChunk, PROT_READ);
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  Activate(*child);
  using R = MemoryManager::FaultResult;
  EXPECT_EQ(child->HandleFault(rw.value() + 8, /*write=*/true, false), R::kResolved);
  // The copy happened, so the same fault again (another thread's) is stale.
  EXPECT_EQ(child->HandleFault(rw.value() + 8, true, false), R::kStale);
  // ptrace cannot say "write": an unknown-kind fault on a cow VMA is taken as one.
  EXPECT_EQ(mm_->HandleFault(rw.value(), /*write=*/false, false), R::kResolved);
  EXPECT_EQ(child->HandleFault(ro.value(), /*write=*/true, false), R::kSignal);
  EXPECT_EQ(child->HandleFault(rw.value(), false, /*exec=*/true), R::kSignal);
  EXPECT_EQ(child->HandleFault(0x30000, true, false), R::kSignal);  // unmapped
}

TEST_F(CowTest, WhenTheOtherSideIsGoneWritesNeedNoCopy) {
  FakeAddressSpace* pas = Activate(*mm_);
  GuestAddr a = Map(4 * kChunk);
  Put(*mm_, a, 1);
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  child.reset();  // exit (or exec) of the child
  Put(*mm_, a + 3 * kChunk, 2);
  EXPECT_EQ(mm_->cow_copied_bytes(), 0u);
  EXPECT_EQ(pas->pages[(a + kChunk).value()].prot, PROT_READ | PROT_WRITE);  // all of it
  EXPECT_FALSE(pas->pages[a.value()].shared);
  EXPECT_EQ(mm_->vmas().size(), 1u);
}

TEST_F(CowTest, CopiesOfEveryChunkMergeBackIntoOneVma) {
  Activate(*mm_);
  GuestAddr a = Map(8 * kChunk);
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  Activate(*child);
  for (uint64_t c : {3, 0, 7, 1, 2, 6, 5, 4}) Put(*child, a + c * kChunk + 1, 9);
  EXPECT_EQ(child->vmas().size(), 1u);
  EXPECT_FALSE(child->vmas().begin()->second.cow);
  EXPECT_EQ(mm_->vmas().size(), 1u);
  ExpectNoSharedWritablePages({mm_.get(), child.get()});
}

// Several generations with the heap growing in between: the case where a heap made
// writable again kept copying into a destination range it had outgrown.
TEST_F(CowTest, GenerationsOfForksWithAGrowingHeapStayIsolated) {
  Activate(*mm_);
  mm_->SetBrkBase(GuestAddr(0x600000));
  ASSERT_EQ(mm_->Brk(GuestAddr(0x600000 + 4 * kChunk)).value(), GuestAddr(0x600000 + 4 * kChunk));
  GuestAddr heap(0x600000);
  Put(*mm_, heap, 1);
  for (int gen = 0; gen < 4; gen++) {
    std::unique_ptr<MemoryManager> child = mm_->Fork();
    Activate(*child);
    Put(*mm_, heap + kChunk, static_cast<uint8_t>(10 + gen));   // the parent copies one
    if (gen > 0) Put(*mm_, GuestAddr(mm_->brk() - kChunk), 8);  // ...and the top it grew
    Put(*child, heap, static_cast<uint8_t>(20 + gen));
    ExpectNoSharedWritablePages({mm_.get(), child.get()});
    EXPECT_EQ(Byte(*mm_, heap), gen == 0 ? 1 : 30 + gen - 1);
    child.reset();
    // A write where no copy was made finds the pages the parent's alone; then the heap
    // grows (in place) and is written all over.
    Put(*mm_, heap + 2 * kChunk, 6);
    const uint64_t end = mm_->brk();
    ASSERT_EQ(mm_->Brk(GuestAddr(end + 4 * kChunk)).value(), GuestAddr(end + 4 * kChunk));
    for (uint64_t p = 0x600000; p < end + 4 * kChunk; p += kChunk) Put(*mm_, GuestAddr(p), 7);
    Put(*mm_, heap, static_cast<uint8_t>(30 + gen));
  }
  std::unique_ptr<MemoryManager> last = mm_->Fork();
  Activate(*last);
  for (uint64_t p = 0x600000; p < mm_->brk(); p += kChunk) Put(*last, GuestAddr(p), 5);
  ExpectNoSharedWritablePages({mm_.get(), last.get()});
  EXPECT_EQ(Byte(*mm_, heap + kChunk), 7);
  EXPECT_EQ(Byte(*last, heap + kChunk), 5);
}

// The memory file here holds 1 GiB: a 600 MiB mapping plus a copy destination of its
// whole size would not fit, destinations of one 256 MiB window each do.
TEST_F(CowTest, AHugeMappingWrittenInTwoPlacesTakesTwoWindows) {
  Activate(*mm_);
  constexpr uint64_t kLen = 600ull << 20;
  GuestAddr a = Map(kLen);
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  Activate(*child);
  Put(*child, a + 10 * kChunk, 1);
  Put(*child, a + kLen - kChunk, 2);
  ASSERT_TRUE(child->MAdviseDontNeed(a + 20 * kChunk, kChunk).ok());
  EXPECT_EQ(Byte(*child, a + 10 * kChunk), 1);
  EXPECT_EQ(Byte(*child, a + kLen - kChunk), 2);
  EXPECT_EQ(Byte(*mm_, a + kLen - kChunk), 0);
  EXPECT_EQ(child->cow_copied_bytes(), 2 * kChunk);
  ExpectNoSharedWritablePages({mm_.get(), child.get()});
}

TEST_F(CowTest, MremapOfACopiedRegionMovesAllOfIt) {
  Activate(*mm_);
  GuestAddr a = Map(4 * kChunk);
  for (uint64_t c = 0; c < 4; c++) Put(*mm_, a + c * kChunk, static_cast<uint8_t>(c + 1));
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  Activate(*child);
  Put(*child, a + 2 * kChunk, 0x33);  // three VMAs now: shared, copied, shared
  EXPECT_EQ(child->vmas().size(), 3u);
  // Linux has one VMA there, so mremap must work across the pieces.
  auto moved = child->MRemap(a, 4 * kChunk, 8 * kChunk, MREMAP_MAYMOVE, GuestAddr());
  ASSERT_TRUE(moved.ok()) << moved.error();
  EXPECT_EQ(Byte(*child, moved.value()), 1);
  EXPECT_EQ(Byte(*child, moved.value() + 2 * kChunk), 0x33);
  EXPECT_EQ(Byte(*child, moved.value() + 3 * kChunk), 4);
  EXPECT_EQ(Byte(*mm_, a + 2 * kChunk), 3);
  ExpectNoSharedWritablePages({mm_.get(), child.get()});
}

TEST_F(CowTest, DontNeedZeroesOnlyThisSide) {
  Activate(*mm_);
  GuestAddr a = Map(2 * kChunk);
  Put(*mm_, a, 4);
  Put(*mm_, a + kChunk, 4);
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  Activate(*child);
  ASSERT_TRUE(child->MAdviseDontNeed(a, kChunk).ok());
  EXPECT_EQ(Byte(*child, a), 0);
  EXPECT_EQ(Byte(*child, a + kChunk), 4);
  EXPECT_EQ(Byte(*mm_, a), 4);
  ExpectNoSharedWritablePages({mm_.get(), child.get()});
}

TEST_F(CowTest, ReapingTheChildLetsTheParentPatchItsCodeAgain) {
  FakeAddressSpace* pas = Activate(*mm_);
  GuestAddr code = Map(kChunk, PROT_READ | PROT_EXEC);
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  EXPECT_TRUE(pas->pages[code.value()].shared);
  mm_->ReclaimReadOnly();  // the child still maps it
  EXPECT_TRUE(pas->pages[code.value()].shared);
  child.reset();
  mm_->ReclaimReadOnly();
  EXPECT_FALSE(pas->pages[code.value()].shared);
  EXPECT_FALSE(mm_->vmas().begin()->second.cow);
}

// The host vDSO block may lie above the app's range (ASLR puts the host's there about
// one run in 16): it is recorded and the sentry reads it at its own identical address.
TEST_F(MemoryManagerTest, HostMappingAboveTheAppsRangeIsReadable) {
  const uint64_t at = kTop + 0x10000000;
  void* p = mmap(reinterpret_cast<void*>(at), kPageSize, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  // The test needs that one address free in its own process (ASLR may have put a
  // library there); nothing else can stand in for the sentry's identical mapping.
  if (p != reinterpret_cast<void*>(at)) GTEST_SKIP() << "0x" << std::hex << at << " is taken";
  std::memcpy(p,
              "\x7f"
              "ELF",
              4);
  ASSERT_TRUE(mm_->AddHostMappings({{at, at + kPageSize, PROT_READ, "[vdso]"}}).ok());
  char got[4] = {};
  EXPECT_TRUE(mm_->CopyIn(GuestAddr(at), got, 4).ok());
  EXPECT_EQ(std::memcmp(got,
                        "\x7f"
                        "ELF",
                        4),
            0);
  EXPECT_FALSE(mm_->CopyOut(GuestAddr(at), got, 4).ok());  // never written through us
  EXPECT_FALSE(mm_->AddHostMappings({{at, at + kPageSize, PROT_READ, "[vdso]"}}).ok());
  munmap(p, kPageSize);
}

// Unfilled read-only private file mappings come from the host file itself where the
// platform can map it (Vma::host_file), and move to memory-file pages chunk by chunk
// exactly when the sentry needs their bytes.
class HostFileTest : public CowTest {
 protected:
  MMapOpts Opts(uint64_t len, int prot, int flags = MAP_PRIVATE) {
    MMapOpts o = FileOpts(GuestAddr(), len, prot, 2 * kPageSize, file_, kFileSize,
                          [this](uint64_t at) { reads_.push_back(at); });
    o.flags = flags;
    o.host_file = host_;
    return o;
  }
  GuestAddr MapFile(uint64_t len, int prot, int flags = MAP_PRIVATE) {
    auto r = mm_->MMap(Opts(len, prot, flags));
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() ? *r : GuestAddr();
  }
  // Whether every page of [a, a+len) is mapped from the host file at its file offset.
  static bool FromHost(FakeAddressSpace* as, GuestAddr a, uint64_t len, uint64_t file_off) {
    for (uint64_t p = 0; p < len; p += kPageSize) {
      auto it = as->pages.find(a.value() + p);
      if (it == as->pages.end() || it->second.host_file == nullptr ||
          it->second.offset != file_off + p) {
        return false;
      }
    }
    return true;
  }
  static constexpr uint64_t kFileSize = 63 * kChunk + 100;  // ends mid-page
  std::shared_ptr<int> file_ = std::make_shared<int>(0);
  std::shared_ptr<const UniqueFd> host_ = std::make_shared<UniqueFd>();
  std::vector<uint64_t> reads_;
};

TEST_F(HostFileTest, UnfilledReadOnlyMappingIsTheHostsPages) {
  FakeAddressSpace* as = Activate(*mm_);
  GuestAddr a = MapFile(4 * kChunk, PROT_READ | PROT_EXEC);
  EXPECT_TRUE(FromHost(as, a, 4 * kChunk, 2 * kPageSize));
  EXPECT_EQ(as->pages[a.value()].prot, PROT_READ | PROT_EXEC);
  EXPECT_TRUE(reads_.empty());
}

TEST_F(HostFileTest, TheSentryReadsTheFileAndLeavesTheHostsPages) {
  FakeAddressSpace* as = Activate(*mm_);
  GuestAddr a = MapFile(65 * kChunk, PROT_READ);
  // Byte kChunk+5 of the mapping is file offset 2 pages + kChunk + 5: its page number + 1.
  EXPECT_EQ(Byte(*mm_, a + kChunk + 5), (2 * kPageSize + kChunk) / kPageSize + 1);
  ASSERT_EQ(reads_.size(), 1u);
  EXPECT_EQ(reads_[0], 2 * kPageSize + kChunk + 5);
  // Across a page boundary, and past the end of the file (zeros, as filled pages hold).
  uint8_t two[2] = {};
  ASSERT_TRUE(mm_->CopyIn(a + kPageSize - 1, two, 2).ok());
  EXPECT_EQ(two[0], 3);
  EXPECT_EQ(two[1], 4);
  const uint64_t past_eof = kFileSize - 2 * kPageSize;
  uint8_t tail[2] = {9, 9};
  ASSERT_TRUE(mm_->CopyIn(a + past_eof - 1, tail, 2).ok());
  EXPECT_EQ(tail[0], static_cast<uint8_t>(kFileSize / kPageSize + 1));
  EXPECT_EQ(tail[1], 0);
  EXPECT_TRUE(FromHost(as, a, 65 * kChunk, 2 * kPageSize));
}

// What write(2) reads out of app memory must be in the memory file (it is handed on as
// iovecs): that fills exactly the chunk.
TEST_F(HostFileTest, TranslatingForReadFillsOnlyThatChunk) {
  FakeAddressSpace* as = Activate(*mm_);
  GuestAddr a = MapFile(4 * kChunk, PROT_READ);
  ASSERT_TRUE(mm_->Translate(a + kChunk + 5, 1, Access::kRead).ok());
  ASSERT_EQ(reads_.size(), 1u);
  EXPECT_EQ(as->pages[(a + kChunk).value()].host_file, nullptr);
  EXPECT_EQ(as->pages[(a + kChunk).value()].prot, PROT_READ);
  EXPECT_TRUE(FromHost(as, a, kChunk, 2 * kPageSize));
  EXPECT_TRUE(FromHost(as, a + 2 * kChunk, 2 * kChunk, 2 * kPageSize + 2 * kChunk));
  EXPECT_EQ(Byte(*mm_, a + kChunk + 5), (2 * kPageSize + kChunk) / kPageSize + 1);
}

TEST_F(HostFileTest, MakingItWritableLeavesTheHostsPagesAndBackAgain) {
  FakeAddressSpace* as = Activate(*mm_);
  GuestAddr a = MapFile(4 * kChunk, PROT_READ);
  ASSERT_TRUE(mm_->MProtect(a, 4 * kChunk, PROT_READ | PROT_WRITE).ok());
  EXPECT_EQ(as->pages[a.value()].host_file, nullptr);
  EXPECT_EQ(as->pages[a.value()].prot, PROT_NONE);  // unfilled: filled at the first touch
  Put(*mm_, a + 3 * kChunk, 0x5a);
  ASSERT_TRUE(mm_->MProtect(a, 4 * kChunk, PROT_READ).ok());
  EXPECT_TRUE(FromHost(as, a, 3 * kChunk, 2 * kPageSize));
  EXPECT_EQ(as->pages[(a + 3 * kChunk).value()].host_file, nullptr);  // holds the write
  EXPECT_EQ(Byte(*mm_, a + 3 * kChunk), 0x5a);
  EXPECT_EQ(reads_.size(), 1u);
}

TEST_F(HostFileTest, PatchingFillsThePagesOfTheSite) {
  FakeAddressSpace* as = Activate(*mm_);
  GuestAddr a = MapFile(4 * kChunk, PROT_READ | PROT_EXEC);
  const GuestAddr page = a + 2 * kChunk;
  mm_->FillForPatching((page + 100).value());
  ASSERT_EQ(reads_.size(), 1u);
  EXPECT_EQ(as->pages[page.value()].host_file, nullptr);
  EXPECT_EQ(as->pages[page.value()].prot, PROT_READ | PROT_EXEC);
  EXPECT_TRUE(FromHost(as, a, 2 * kChunk, 2 * kPageSize));
  EXPECT_TRUE(
      FromHost(as, page + kPageSize, kChunk - kPageSize, 2 * kPageSize + 2 * kChunk + kPageSize));
  // A site across a page boundary ([addr-7, addr+6)) fills both pages, in one read.
  reads_.clear();
  mm_->FillForPatching((page + 2 * kPageSize + 3).value());
  ASSERT_EQ(reads_.size(), 1u);
  EXPECT_EQ(as->pages[(page + kPageSize).value()].host_file, nullptr);
  EXPECT_EQ(as->pages[(page + 2 * kPageSize).value()].host_file, nullptr);
  EXPECT_TRUE(
      FromHost(as, page + 3 * kPageSize, kPageSize, 2 * kPageSize + 2 * kChunk + 3 * kPageSize));
  // The filled pages hold the file's bytes.
  EXPECT_EQ(Byte(*mm_, page + kPageSize), (2 * kPageSize + 2 * kChunk) / kPageSize + 2);
}

TEST_F(HostFileTest, WritableSharedOrUnsupportedStayInTheMemoryFile) {
  FakeAddressSpace* as = Activate(*mm_);
  GuestAddr w = MapFile(2 * kChunk, PROT_READ | PROT_WRITE);
  GuestAddr sh = MapFile(kChunk, PROT_READ, MAP_SHARED);
  as->maps_host_files = false;
  GuestAddr r = MapFile(kChunk, PROT_READ);
  for (GuestAddr a : {w, sh, r}) {
    EXPECT_EQ(as->pages[a.value()].host_file, nullptr) << std::hex << a.value();
    EXPECT_EQ(as->pages[a.value()].prot, PROT_NONE) << std::hex << a.value();
  }
  EXPECT_EQ(Byte(*mm_, r + 10), 3);  // still filled on demand
}

// A writable private mapping of one chunk or less (a library's data segment, which
// ld.so writes at once) is filled at mmap and mapped as it will stay: no PROT_NONE
// mapping first, no fault.
TEST_F(HostFileTest, ASmallWritablePrivateMappingIsFilledAtOnce) {
  FakeAddressSpace* as = Activate(*mm_);
  GuestAddr w = MapFile(kChunk, PROT_READ | PROT_WRITE);
  EXPECT_EQ(reads_.size(), 1u);
  for (uint64_t p = 0; p < kChunk; p += kPageSize) {
    EXPECT_EQ(as->pages[w.value() + p].prot, PROT_READ | PROT_WRITE) << p;
    EXPECT_EQ(as->pages[w.value() + p].host_file, nullptr) << p;
  }
  EXPECT_EQ(Byte(*mm_, w + kPageSize + 1), (2 * kPageSize + kPageSize) / kPageSize + 1);
  EXPECT_EQ(mm_->HandleFault((w + 8).value(), /*write=*/true, false),
            MemoryManager::FaultResult::kStale);
  EXPECT_EQ(reads_.size(), 1u);
  // The same over pages another mapping held there (MAP_FIXED, as ld.so maps a data
  // segment over its library's span): the file's bytes, not what was there, not zeros.
  ASSERT_TRUE(mm_->MUnmap(w, kChunk).ok());
  MMapOpts anon;
  anon.addr = w;
  anon.len = kChunk;
  anon.prot = PROT_READ | PROT_WRITE;
  anon.flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
  ASSERT_TRUE(mm_->MMap(anon).ok());
  for (uint64_t p = 0; p < kChunk; p += kPageSize) {
    const uint8_t junk = 0x5a;
    ASSERT_TRUE(mm_->CopyOut(w + p, &junk, 1).ok());
  }
  MMapOpts over = Opts(kChunk, PROT_READ | PROT_WRITE);
  over.addr = w;
  over.flags = MAP_PRIVATE | MAP_FIXED;
  ASSERT_TRUE(mm_->MMap(over).ok());
  for (uint64_t p = 0; p < kChunk; p += kPageSize) {
    EXPECT_EQ(Byte(*mm_, w + p), (2 * kPageSize + p) / kPageSize + 1) << p;
  }
}

// Fill ahead (fill.cc): the sentry fills an unfilled writable private file mapping chunk
// by chunk while the app runs; the chunk stays unmapped for the app until its fault,
// which then reads nothing more from the file.
TEST_F(HostFileTest, FillAheadFillsWritableChunksBeforeTheirFault) {
  FakeAddressSpace* as = Activate(*mm_);
  GuestAddr ro = MapFile(2 * kChunk, PROT_READ);
  EXPECT_FALSE(mm_->fill_ahead_pending());  // read-only: the host's pages serve it
  GuestAddr w = MapFile(3 * kChunk, PROT_READ | PROT_WRITE);
  ASSERT_TRUE(reads_.empty());
  ASSERT_TRUE(mm_->fill_ahead_pending());
  ASSERT_TRUE(mm_->FillAhead());
  ASSERT_EQ(reads_.size(), 1u);
  EXPECT_EQ(reads_[0], 2 * kPageSize);              // the first chunk of w, at its file offset
  EXPECT_EQ(as->pages[w.value()].prot, PROT_NONE);  // the app's first touch still faults
  EXPECT_EQ(mm_->HandleFault((w + 8).value(), /*write=*/true, false),
            MemoryManager::FaultResult::kResolved);
  EXPECT_EQ(reads_.size(), 1u);  // ...but reads nothing
  EXPECT_EQ(as->pages[w.value()].prot, PROT_READ | PROT_WRITE);
  EXPECT_EQ(as->pages[w.value()].host_file, nullptr);
  EXPECT_EQ(Byte(*mm_, w + kPageSize + 1), (2 * kPageSize + kPageSize) / kPageSize + 1);
  // The other two chunks, then nothing: the read-only mapping is never filled ahead.
  EXPECT_TRUE(mm_->FillAhead());
  EXPECT_TRUE(mm_->FillAhead());
  EXPECT_FALSE(mm_->FillAhead());
  EXPECT_FALSE(mm_->fill_ahead_pending());
  ASSERT_EQ(reads_.size(), 3u);
  // The sentry's own read of the third chunk maps the second too (both filled ahead):
  // the app's touch there no longer needs the sentry.
  EXPECT_EQ(Byte(*mm_, w + 2 * kChunk + 3 * kPageSize),
            (2 * kPageSize + 2 * kChunk + 3 * kPageSize) / kPageSize + 1);
  EXPECT_EQ(mm_->HandleFault((w + kChunk).value(), /*write=*/false, false),
            MemoryManager::FaultResult::kStale);
  EXPECT_EQ(reads_.size(), 3u);
  EXPECT_TRUE(FromHost(as, ro, 2 * kChunk, 2 * kPageSize));
}

// The first fault on a chunk filled ahead maps every chunk filled ahead so far, with one
// host mapping per run of adjacent chunks of one VMA: the other chunks' first touches
// then reach no fault, and the pieces merge back into their VMAs.
TEST_F(HostFileTest, AFaultOnAChunkFilledAheadMapsEveryOne) {
  FakeAddressSpace* as = Activate(*mm_);
  GuestAddr w = MapFile(3 * kChunk, PROT_READ | PROT_WRITE);
  GuestAddr v = MapFile(2 * kChunk, PROT_READ | PROT_WRITE);
  while (mm_->FillAhead()) {
  }
  ASSERT_EQ(reads_.size(), 5u);
  const int maps = as->maps;
  EXPECT_EQ(mm_->HandleFault((w + kChunk + 8).value(), /*write=*/true, false),
            MemoryManager::FaultResult::kResolved);
  EXPECT_EQ(as->maps - maps, 2);
  for (auto [start, len] : {std::pair{w, 3 * kChunk}, std::pair{v, 2 * kChunk}}) {
    for (uint64_t p = 0; p < len; p += kPageSize) {
      EXPECT_EQ(as->pages[start.value() + p].prot, PROT_READ | PROT_WRITE) << p;
      EXPECT_EQ(as->pages[start.value() + p].host_file, nullptr) << p;
    }
    int pieces = 0;
    for (const auto& [s, vma] : mm_->vmas())
      pieces += s >= start.value() && s < (start + len).value();
    EXPECT_EQ(pieces, 1);
  }
  EXPECT_EQ(mm_->HandleFault((v + 8).value(), /*write=*/true, false),
            MemoryManager::FaultResult::kStale);
  EXPECT_EQ(reads_.size(), 5u);  // nothing read again
  EXPECT_EQ(Byte(*mm_, v + kChunk + kPageSize + 1),
            (2 * kPageSize + kChunk + kPageSize) / kPageSize + 1);
  EXPECT_EQ(Byte(*mm_, w + 2 * kChunk), (2 * kPageSize + 2 * kChunk) / kPageSize + 1);
}

// A chunk filled ahead and then shared by fork holds the file's bytes on both sides, and
// a write on one side is that side's alone.
TEST_F(HostFileTest, FillAheadThenForkKeepsBothSidesApart) {
  Activate(*mm_);
  GuestAddr w = MapFile(2 * kChunk, PROT_READ | PROT_WRITE);
  ASSERT_TRUE(mm_->FillAhead());
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  Activate(*child);
  Put(*child, w + 7, 0x77);
  EXPECT_EQ(Byte(*mm_, w + 7), 3);  // file offset 2 pages + 7: page 2, plus one
  EXPECT_EQ(Byte(*child, w + 7), 0x77);
  EXPECT_EQ(Byte(*child, w + kPageSize), 4);
  EXPECT_FALSE(child->FillAhead());  // copy-on-write pages are never filled ahead
  ExpectNoSharedWritablePages({mm_.get(), child.get()});
}

// A file mapping replaced by another (ld.so maps each library whole, then its segments
// over it) gives back the pages its filled and filled-ahead chunks hold, and punches no
// hole for the chunks never filled: their pages were never allocated.
TEST_F(HostFileTest, ReplacingAFileMappingGivesBackOnlyTheChunksWritten) {
  Activate(*mm_);
  // Chunk 4 stays mapped: the range lives on, so only Release punches holes in it.
  GuestAddr w = MapFile(5 * kChunk, PROT_READ | PROT_WRITE);
  ASSERT_TRUE(mm_->FillAhead());  // chunk 0, filled ahead
  EXPECT_EQ(Byte(*mm_, w + 2 * kChunk), (2 * kPageSize + 2 * kChunk) / kPageSize + 1);  // 2
  EXPECT_EQ(ResidentBytes(*mf_), 2 * kChunk);
  const uint64_t punches = mf_->decommits();
  MMapOpts o;
  o.addr = w;
  o.len = 4 * kChunk;
  o.prot = PROT_READ | PROT_WRITE;
  o.flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
  ASSERT_TRUE(mm_->MMap(o).ok());
  EXPECT_EQ(ResidentBytes(*mf_), 0u);
  EXPECT_EQ(mf_->decommits() - punches, 2u);  // chunks 0 and 2; not 1 nor 3
  EXPECT_EQ(Byte(*mm_, w + 2 * kChunk), 0);
}

// Filling ahead stops at a budget per address space (the pages count as resident), and
// at a file that cannot be read: its fault reports that.
TEST_F(HostFileTest, FillAheadStopsAtItsBudgetAndAtAReadError) {
  Activate(*mm_);
  MapFile(63 * kChunk, PROT_READ | PROT_WRITE);  // ~4 MB, all of the test file
  MapFile(63 * kChunk, PROT_READ | PROT_WRITE);
  int steps = 0;
  while (mm_->FillAhead()) ++steps;
  EXPECT_EQ(static_cast<uint64_t>(steps) * kChunk, uint64_t{4} << 20);
  EXPECT_FALSE(mm_->fill_ahead_pending());

  MemoryManager other(mf_.get(), kTop);
  MMapOpts o = Opts(2 * kChunk, PROT_READ | PROT_WRITE);
  o.fill = [](uint8_t*, uint64_t, uint64_t) -> SysResult<uint64_t> { return Errno{EIO}; };
  auto bad = other.MMap(o);
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(other.FillAhead());
  EXPECT_FALSE(other.fill_ahead_pending());
  EXPECT_EQ(other.HandleFault(bad->value(), false, false), MemoryManager::FaultResult::kNoMemory);
}

TEST_F(HostFileTest, AForkedChildMapsTheHostFileToo) {
  Activate(*mm_);
  GuestAddr a = MapFile(2 * kChunk, PROT_READ);
  std::unique_ptr<MemoryManager> child = mm_->Fork();
  FakeAddressSpace* cas = Activate(*child);
  EXPECT_TRUE(FromHost(cas, a, 2 * kChunk, 2 * kPageSize));
  EXPECT_EQ(Byte(*child, a + kChunk), (2 * kPageSize + kChunk) / kPageSize + 1);
  EXPECT_EQ(reads_.size(), 1u);
  ExpectNoSharedWritablePages({mm_.get(), child.get()});
}

}  // namespace
}  // namespace usentry::sentry::mm
