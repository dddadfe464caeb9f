// The host kernel's vDSO and its data pages ([vvar], [vvar_vclock]) as mapped in this
// process. Stub processes inherit them at the same address, so a platform can leave
// them mapped there and the app's libc reads the host clocks without a trap: the
// sentry's clock_gettime returns the host clocks anyway (sentry/syscalls/sys_time.cc).
// A vDSO call the host cannot serve in user space makes a real syscall from the vDSO's
// code, which the platform traps and the sentry emulates like any other.
#ifndef USENTRY_PLATFORM_HOST_VDSO_H_
#define USENTRY_PLATFORM_HOST_VDSO_H_

#include <cstdint>
#include <string>
#include <vector>

namespace usentry::platform {

struct HostVdso {
  struct Part {
    uint64_t start = 0, end = 0;
    int prot = 0;      // PROT_*
    std::string name;  // "[vvar]", "[vvar_vclock]", "[vdso]"
  };
  uint64_t start = 0, end = 0;  // the whole block, page aligned
  uint64_t ehdr = 0;            // the vDSO's ELF header (AT_SYSINFO_EHDR)
  std::vector<Part> parts;      // in address order, contiguous
  bool present() const { return ehdr != 0; }
};

// Read from /proc/self/maps on first use (so first use must come before the process
// loses /proc, as platforms are created). Not present: no AT_SYSINFO_EHDR, no maps line
// naming [vdso], or the pieces are not one contiguous block.
const HostVdso& FindHostVdso();
// The block if it is present and lies within [lowest, limit): where a stub can keep it
// without it overlapping the stub's own pages or the app's reserved low range.
const HostVdso* VdsoWithin(uint64_t lowest, uint64_t limit);

}  // namespace usentry::platform

#endif  // USENTRY_PLATFORM_HOST_VDSO_H_
