// Linux errno names ("ENOENT") for strace output and the audit record.
//
// The values themselves are the host's <cerrno> macros: usentry only runs on x86-64
// Linux, where they are the kernel's numbers. Kernel-internal restart errnos are in
// base/sys_result.h.
#ifndef USENTRY_ABI_ERRNO_H_
#define USENTRY_ABI_ERRNO_H_

namespace usentry::abi {

// Highest errno the kernel returns to user space (EHWPOISON).
inline constexpr int kMaxErrno = 133;

// "EPERM" for 1 ... "EHWPOISON" for 133, the kernel-internal restart codes
// (512..516, "ERESTARTSYS"...), nullptr for anything else (including the unused
// numbers 41 and 58, which only exist as aliases EWOULDBLOCK / EDEADLOCK).
const char* ErrnoName(int err);

}  // namespace usentry::abi

#endif  // USENTRY_ABI_ERRNO_H_
