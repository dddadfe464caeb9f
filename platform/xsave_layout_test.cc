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
