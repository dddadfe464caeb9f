// The standard-format XSAVE layout, read from CPUID, and the part of it a signal frame
// holds. PTRACE_GETREGSET NT_X86_XSTATE returns (and SETREGSET insists on) the host's
// whole layout, which on CPUs with AMX is ~11 KiB because TILEDATA is included even
// for a task that never asked for it; the kernel's signal frames leave such
// dynamically enabled components out. The ptrace platform shows the app the
// signal-frame part, as a signal frame would, so both platforms agree on fp_size.
#ifndef USENTRY_PLATFORM_XSAVE_LAYOUT_H_
#define USENTRY_PLATFORM_XSAVE_LAYOUT_H_

#include <cstddef>
#include <cstdint>

#include "absl/functional/function_ref.h"

namespace usentry::platform {

// One state component as CPUID.(EAX=0DH, ECX=i) describes it.
struct XsaveComponent {
  uint32_t size = 0;     // EAX
  uint32_t offset = 0;   // EBX: in the standard (non-compacted) format
  bool dynamic = false;  // ECX bit 2: XFD-capable, enabled per task on request (AMX tiles)
};

// The part of a standard-format XSAVE image a signal frame holds.
struct SignalFrameXsave {
  uint64_t features = 0;  // the components in it: the given ones minus dynamic ones
  size_t size = 0;        // legacy area and header, then up to the end of the last one
};
SignalFrameXsave SignalFrameXsaveOf(uint64_t features,
                                    absl::FunctionRef<XsaveComponent(int index)> component);

// This CPU: XCR0 and CPUID leaf 0DH.
uint64_t HostXsaveFeatures();
XsaveComponent HostXsaveComponent(int index);
// SignalFrameXsaveOf this CPU, read once (CPUID traps to the hypervisor in a VM).
const SignalFrameXsave& HostSignalFrameXsave();
// The MXCSR bits this CPU accepts (FXSAVE's MXCSR_MASK; 0xffbf where it stores 0). A
// set bit outside it makes FXRSTOR and XRSTOR fault.
uint32_t HostMxcsrMask();

// Turns `img`, a standard-format XSAVE image of `size` bytes (or a 512-byte FXSAVE one),
// into the state Linux gives a signal handler, and a thread whose rt_sigreturn frame has
// no FP state (fpu__clear_user_states): x87 and SSE at their reset values (control word
// 0x37f, MXCSR 0x1f80, registers zero), AVX and the later components initial. PKRU is
// kept, as protection keys are not emulated. MXCSR_MASK and the software bytes of the
// legacy area stay, since the platforms write the image back into a frame holding them.
void ResetToInitialFpState(uint8_t* img, size_t size);
// Only the part after the legacy area: every component but x87, SSE and PKRU initial
// (XSTATE_BV), as Linux leaves a thread whose rt_sigreturn frame held only the legacy
// 512 bytes. No-op for an FXSAVE image.
void ResetExtendedFpState(uint8_t* img, size_t size);
// XSTATE_BV, the first word of an XSAVE image's header (which components it holds;
// XRSTOR sets a component with a clear bit to its initial state).
uint64_t XstateBv(const uint8_t* img);
void SetXstateBv(uint8_t* img, uint64_t xstate_bv);

}  // namespace usentry::platform

#endif  // USENTRY_PLATFORM_XSAVE_LAYOUT_H_
