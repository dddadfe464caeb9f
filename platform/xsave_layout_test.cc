#include "platform/xsave_layout.h"

#include <signal.h>
#include <ucontext.h>

#include <cstring>
#include <map>

#include "gtest/gtest.h"

namespace usentry::platform::ptrace {
namespace {

// CPUID leaf 0DH of a Sapphire Rapids part (XCR0 0x602e7): AVX, AVX-512, PKRU and AMX.
const std::map<int, XsaveComponent> kSapphireRapids = {
    {2, {256, 576, false}},   {5, {64, 1088, false}}, {6, {512, 1152, false}},
    {7, {1024, 1664, false}}, {9, {8, 2688, false}},  {17, {64, 2752, false}},
    {18, {8192, 2816, true}},
};
constexpr uint64_t kSapphireRapidsXcr0 = 0x602e7;

XsaveComponent FromTable(const std::map<int, XsaveComponent>& table, int i) {
  auto it = table.find(i);
  return it == table.end() ? XsaveComponent{} : it->second;
}

TEST(XsaveLayoutTest, AmxTileDataIsLeftOutOfTheSignalFrame) {
  auto spr = [](int i) { return FromTable(kSapphireRapids, i); };
  // The kernel's signal frames on such a CPU: 2816 bytes, TILECFG in, TILEDATA out;
  // PTRACE_GETREGSET returns all 11008.
  const SignalFrameXsave frame = SignalFrameXsaveOf(kSapphireRapidsXcr0, spr);
  EXPECT_EQ(frame.size, 2816u);
  EXPECT_EQ(frame.features, kSapphireRapidsXcr0 & ~(1u << 18));
}

TEST(XsaveLayoutTest, SizeEndsAtTheLastEnabledComponent) {
  auto spr = [](int i) { return FromTable(kSapphireRapids, i); };
  EXPECT_EQ(SignalFrameXsaveOf(0x3, spr).size, 576u);     // x87 and SSE: legacy area + header
  EXPECT_EQ(SignalFrameXsaveOf(0x7, spr).size, 832u);     // + AVX
  EXPECT_EQ(SignalFrameXsaveOf(0x207, spr).size, 2696u);  // + PKRU, past the AVX-512 gap
}

TEST(XsaveLayoutTest, InitialFpStateKeepsPkruMxcsrMaskAndSoftwareBytes) {
  uint8_t img[2696];
  std::memset(img, 0xa5, sizeof(img));
  const uint64_t bv = 0x2e7;  // x87, SSE, AVX, AVX-512 and PKRU in use
  std::memcpy(img + 512, &bv, 8);
  ResetToInitialFpState(img, sizeof(img));
  uint16_t cwd, swd;
  uint32_t mxcsr, mxcsr_mask, sw_magic;
  uint64_t xmm0, new_bv;
  std::memcpy(&cwd, img, 2);
  std::memcpy(&swd, img + 2, 2);
  std::memcpy(&mxcsr, img + 24, 4);
  std::memcpy(&mxcsr_mask, img + 28, 4);
  std::memcpy(&xmm0, img + 160, 8);
  std::memcpy(&sw_magic, img + 464, 4);
  std::memcpy(&new_bv, img + 512, 8);
  EXPECT_EQ(cwd, 0x37f);
  EXPECT_EQ(swd, 0);
  EXPECT_EQ(mxcsr, 0x1f80u);
  EXPECT_EQ(mxcsr_mask, 0xa5a5a5a5u);
  EXPECT_EQ(xmm0, 0u);
  EXPECT_EQ(sw_magic, 0xa5a5a5a5u);
  EXPECT_EQ(new_bv, 0x203u);  // AVX and AVX-512 to their initial state by XRSTOR
}

TEST(XsaveLayoutTest, ExtendedResetLeavesTheLegacyArea) {
  uint8_t img[832];
  std::memset(img, 0xa5, sizeof(img));
  const uint64_t bv = 0x207;  // x87, SSE, AVX and PKRU
  std::memcpy(img + 512, &bv, 8);
  ResetExtendedFpState(img, sizeof(img));
  uint64_t new_bv;
  std::memcpy(&new_bv, img + 512, 8);
  EXPECT_EQ(new_bv, 0x203u);
  EXPECT_EQ(img[24], 0xa5);   // MXCSR as it was
  EXPECT_EQ(img[160], 0xa5);  // xmm0 as it was
}

TEST(XsaveLayoutTest, InitialFpStateOfAnFxsaveImageLeavesWhatFollowsAlone) {
  uint8_t img[600];
  std::memset(img, 0xa5, sizeof(img));
  ResetToInitialFpState(img, 512);
  uint32_t mxcsr;
  std::memcpy(&mxcsr, img + 24, 4);
  EXPECT_EQ(mxcsr, 0x1f80u);
  EXPECT_EQ(img[512], 0xa5);
}

uint32_t g_frame_magic1;
uint32_t g_frame_xstate_size;

void RecordFrame(int, siginfo_t*, void* ucontext) {
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
  const auto* fp = reinterpret_cast<const uint8_t*>(uc->uc_mcontext.fpregs);
  std::memcpy(&g_frame_magic1, fp + 464, 4);  // fpx_sw_bytes in the FXSAVE sw_reserved area
  std::memcpy(&g_frame_xstate_size, fp + 464 + 16, 4);
}

TEST(XsaveLayoutTest, HostSizeIsWhatTheKernelPutsInASignalFrame) {
  struct sigaction sa {};
  sa.sa_sigaction = RecordFrame;
  sa.sa_flags = SA_SIGINFO;
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  raise(SIGUSR1);
  ASSERT_EQ(sigaction(SIGUSR1, &old, nullptr), 0);
  ASSERT_EQ(g_frame_magic1, 0x46505853u);  // FP_XSTATE_MAGIC1: the frame holds XSAVE state
  EXPECT_EQ(HostSignalFrameXsave().size, g_frame_xstate_size);
}

}  // namespace
}  // namespace usentry::platform::ptrace
