// CPUID-driven XSAVE layout (see xsave_layout.h).
#include "platform/xsave_layout.h"

#include <cpuid.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "abi/signal.h"

namespace usentry::platform {
namespace {

// Legacy FXSAVE region (x87 and SSE, components 0 and 1) and the XSAVE header.
constexpr size_t kLegacyAndHeader = 512 + 64;
// Components 0 and 1 live in the legacy region; CPUID describes 2 and up.
constexpr int kFirstExtended = 2;
constexpr int kLastComponent = 63;

}  // namespace

SignalFrameXsave SignalFrameXsaveOf(uint64_t features,
                                    absl::FunctionRef<XsaveComponent(int index)> component) {
  SignalFrameXsave out{.features = features & 3, .size = kLegacyAndHeader};
  for (int i = kFirstExtended; i <= kLastComponent; ++i) {
    if ((features >> i & 1) == 0) continue;
    const XsaveComponent c = component(i);
    if (c.dynamic) continue;
    out.features |= uint64_t{1} << i;
    out.size = std::max(out.size, size_t{c.offset} + c.size);
  }
  return out;
}

uint64_t HostXsaveFeatures() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & bit_OSXSAVE) == 0) return 3;  // FXSAVE only
  uint32_t lo, hi;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return uint64_t{hi} << 32 | lo;
}

XsaveComponent HostXsaveComponent(int index) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  __cpuid_count(0xd, index, a, b, c, d);
  return XsaveComponent{.size = a, .offset = b, .dynamic = (c & 4) != 0};
}

const SignalFrameXsave& HostSignalFrameXsave() {
  static const SignalFrameXsave frame = SignalFrameXsaveOf(HostXsaveFeatures(), HostXsaveComponent);
  return frame;
}

uint32_t HostMxcsrMask() {
  static const uint32_t mask = [] {
    alignas(16) uint8_t area[512] = {};
    asm volatile("fxsave64 %0" : "=m"(area));
    uint32_t m;
    std::memcpy(&m, area + 28, sizeof(m));
    return m != 0 ? m : 0xffbf;  // Intel SDM: a zero mask means the default
  }();
  return mask;
}

void ResetToInitialFpState(uint8_t* img, size_t size) {
  // The legacy area up to its reserved bytes: the x87 and SSE registers and their control
  // and status words.
  abi::FxsaveArea legacy;
  memcpy(&legacy, img, sizeof(legacy));
  const uint32_t mxcsr_mask = legacy.mxcsr_mask;
  memset(&legacy, 0, offsetof(abi::FxsaveArea, reserved2));
  legacy.cwd = abi::kFpuCwdDefault;
  legacy.mxcsr = abi::kMxcsrDefault;
  legacy.mxcsr_mask = mxcsr_mask;
  memcpy(img, &legacy, sizeof(legacy));
  ResetExtendedFpState(img, size);
}

void ResetExtendedFpState(uint8_t* img, size_t size) {
  if (size < kLegacyAndHeader) return;
  // XSTATE_BV: x87 and SSE given by the legacy area (an XRSTOR, or ptrace's SETREGSET,
  // takes MXCSR from it only so), every other component but PKRU in its initial
  // configuration, which XRSTOR sets for a clear bit whatever the image holds.
  SetXstateBv(img, (XstateBv(img) & abi::kXfeaturePkru) | abi::kXfeatureFp | abi::kXfeatureSse);
}

uint64_t XstateBv(const uint8_t* img) {
  uint64_t xstate_bv;
  memcpy(&xstate_bv, img + abi::kXsaveHeaderOffset, sizeof(xstate_bv));
  return xstate_bv;
}

void SetXstateBv(uint8_t* img, uint64_t xstate_bv) {
  memcpy(img + abi::kXsaveHeaderOffset, &xstate_bv, sizeof(xstate_bv));
}

}  // namespace usentry::platform
