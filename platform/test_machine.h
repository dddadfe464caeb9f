// A platform with one address space and one context, and helpers to run small
// xbyak-generated programs in it: shared by the platform contract tests
// (platform_test.cc) and the platform-specific ones.
#ifndef USENTRY_PLATFORM_TEST_MACHINE_H_
#define USENTRY_PLATFORM_TEST_MACHINE_H_

#include <sys/mman.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "base/unique_fd.h"
#include "gtest/gtest.h"
#include "platform/platform.h"
#include "xbyak/xbyak.h"

namespace usentry::platform::test_support {

inline constexpr uint64_t kPage = 4096;
inline constexpr uint64_t kCode = 0x400000;
inline constexpr uint64_t kData = 0x500000;
inline constexpr uint64_t kUnmapped = 0x600000;
inline constexpr uint64_t kStack = 0x7f0000000000;
// Memory-file offsets of the pages above.
inline constexpr uint64_t kCodeOff = 0;
inline constexpr uint64_t kDataOff = 0x10000;
inline constexpr uint64_t kStackOff = 0x20000;

class TestMachine {
 public:
  static Xbyak::CodeGenerator Gen() {
    return Xbyak::CodeGenerator(kPage, Xbyak::DontSetProtectRWE);
  }

 protected:
  // A 1 MiB memory file, the platform `name`, one address space and one context.
  void Start(const std::string& name) {
    memfd_ = UniqueFd(memfd_create("usentry-test-memory", 0));
    ASSERT_TRUE(memfd_.valid());
    ASSERT_EQ(ftruncate(memfd_.get(), 1 << 20), 0);
    auto platform = NewPlatform(name, MemoryFileInfo{.fd = memfd_.get()});
    ASSERT_TRUE(platform.ok()) << platform.status();
    platform_ = std::move(*platform);
    auto as = platform_->NewAddressSpace();
    ASSERT_TRUE(as.ok()) << as.status();
    as_ = std::move(*as);
    auto ctx = platform_->NewContext();
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    ctx_ = std::move(*ctx);
  }

  // Puts `g`'s code at kCode (r-x) and maps a stack page at kStack (rw).
  void Load(const Xbyak::CodeGenerator& g) {
    ASSERT_EQ(pwrite(memfd_.get(), g.getCode(), g.getSize(), kCodeOff),
              static_cast<ssize_t>(g.getSize()));
    ASSERT_TRUE(as_->MapFile(kCode, kPage, kCodeOff, PROT_READ | PROT_EXEC).ok());
    ASSERT_TRUE(as_->MapFile(kStack, kPage, kStackOff, PROT_READ | PROT_WRITE).ok());
    regs_.gp.rip = kCode;
    regs_.gp.rsp = kStack + kPage;
    regs_.gp.eflags = 0x202;
  }

  // Switches into the app and loads all its registers, as the sentry's Task::regs() does.
  SwitchResult RunApp() {
    SwitchResult r = RunAppPartial();
    ctx_->CompleteRegisters(regs_);
    return r;
  }
  // The same, leaving regs_ as Switch did (perhaps only a syscall's registers).
  SwitchResult RunAppPartial() {
    absl::StatusOr<SwitchResult> r = ctx_->Switch(*as_, regs_);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : SwitchResult{};
  }

  uint8_t MemByte(uint64_t off) {
    uint8_t b = 0;
    EXPECT_EQ(pread(memfd_.get(), &b, 1, off), 1);
    return b;
  }

  UniqueFd memfd_;
  std::unique_ptr<Platform> platform_;
  std::unique_ptr<AddressSpace> as_;
  std::unique_ptr<Context> ctx_;
  Registers regs_;
};

}  // namespace usentry::platform::test_support

#endif  // USENTRY_PLATFORM_TEST_MACHINE_H_
