// PrefaultReadOnlyImage maps every page of the test binary's code and constants, as
// /proc/self/pagemap shows (bit 63: the page is present in this process's page tables).
#include "base/prefault.h"

#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "base/unique_fd.h"
#include "gtest/gtest.h"

namespace usentry {
namespace {

constexpr uintptr_t kPage = 4096;

// The executable's read-only PT_LOAD ranges, found the loader's way (independently of
// the code under test).
std::vector<std::pair<uintptr_t, uintptr_t>> ReadOnlyRanges() {
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        auto* r = static_cast<std::vector<std::pair<uintptr_t, uintptr_t>>*>(out);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W)) continue;
          const uintptr_t start = (info->dlpi_addr + ph.p_vaddr) & ~(kPage - 1);
          const uintptr_t end =
              (info->dlpi_addr + ph.p_vaddr + ph.p_filesz + kPage - 1) & ~(kPage - 1);
          r->emplace_back(start, end);
        }
        return 1;  // the first object is the executable
      },
      &ranges);
  return ranges;
}

// Pages of `ranges` without a page-table entry in this process.
size_t AbsentPages(const std::vector<std::pair<uintptr_t, uintptr_t>>& ranges) {
  UniqueFd pagemap(open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(pagemap.valid());
  size_t absent = 0;
  for (const auto& [start, end] : ranges) {
    std::vector<uint64_t> entries((end - start) / kPage);
    const ssize_t want = static_cast<ssize_t>(entries.size() * sizeof(uint64_t));
    EXPECT_EQ(pread(pagemap.get(), entries.data(), want, (start / kPage) * sizeof(uint64_t)), want);
    for (uint64_t e : entries) absent += (e >> 63) == 0;
  }
  return absent;
}

TEST(PrefaultTest, MapsEveryPageOfTheCodeAndConstants) {
  const auto ranges = ReadOnlyRanges();
  ASSERT_FALSE(ranges.empty());
  // A test binary runs a small part of its code: most pages have no entry yet, which is
  // what makes this test able to fail.
  ASSERT_GT(AbsentPages(ranges), 0u);
  // Skipped only on kernels before 5.14, where the call is refused and changes nothing
  // (usentry then takes the faults as before); this project's machines run 6.x.
  if (!PrefaultReadOnlyImage()) GTEST_SKIP() << "MADV_POPULATE_READ needs Linux 5.14";
  EXPECT_EQ(AbsentPages(ranges), 0u);
}

// Pages in [start, start + len) without a page-table entry.
size_t AbsentIn(const void* start, size_t len) {
  const auto lo = reinterpret_cast<uintptr_t>(start) & ~(kPage - 1);
  const auto hi = (reinterpret_cast<uintptr_t>(start) + len + kPage - 1) & ~(kPage - 1);
  return AbsentPages({{lo, hi}});
}

TEST(PrefaultTest, HeapBlocksAreMappedBeforeTheirFirstWrite) {
  // A block that would have come from a fresh mmap (over the default 128 KiB threshold)
  // and whose pages nothing has written yet.
  void* before = malloc(1 << 20);
  ASSERT_GT(AbsentIn(before, 1 << 20), 0u);
  free(before);
  // Skipped only on kernels before 5.14, as above.
  if (!PopulateHeap(PrepareHeap(4 << 20))) GTEST_SKIP() << "MADV_POPULATE_WRITE needs Linux 5.14";
  void* after = malloc(1 << 20);
  EXPECT_EQ(AbsentIn(after, 1 << 20), 0u);
  free(after);
}

}  // namespace
}  // namespace usentry
