// Terminal ioctls for host-tty-backed files (the app's stdio when usentry runs in a
// terminal, and /dev/tty, /dev/pts/0): termios and window size pass through to the host
// tty; job-control state (foreground process group, session) is emulated in the sentry
// because sandbox PIDs mean nothing to the host. TIOCSTI is always refused.
#ifndef USENTRY_SENTRY_FSIMPL_TTY_H_
#define USENTRY_SENTRY_FSIMPL_TTY_H_

#include <cstdint>

#include "sentry/kernel/sys_result.h"
#include "sentry/vfs/inode.h"

namespace usentry::sentry {
class Task;
}

namespace usentry::sentry::fsimpl {

// Emulated job-control state of one host terminal, shared by every description on it.
struct Terminal {
  int32_t fg_pgrp = 0;  // 0: not set yet, report the caller's process group
  int32_t sid = 0;      // controlling session; 0: the session of whoever asks; -1: none
};

// Linux's dev_t encoding (glibc's makedev is not constexpr).
constexpr uint64_t LinuxMakedev(uint32_t major, uint32_t minor) {
  return (minor & 0xffull) | ((major & 0xfffull) << 8) | ((uint64_t{minor} & ~0xffull) << 12) |
         ((uint64_t{major} & ~0xfffull) << 32);
}

// The host tty is shown as /dev/pts/0 of a devpts-like device: fstat of a stdio FD and
// stat("/dev/pts/0") agree, so ttyname(3) finds the name.
inline constexpr uint64_t kHostTtyRdev = LinuxMakedev(136, 0);
inline constexpr uint64_t kDevptsDev = LinuxMakedev(0, 0x1f);
inline constexpr uint64_t kHostTtyIno = 3;
inline constexpr const char* kHostTtyPath = "/dev/pts/0";
vfs::Attr HostTtyAttr(uint32_t uid, uint32_t gid);

// True for the ioctl numbers that only make sense on a terminal (ENOTTY elsewhere).
bool IsTtyIoctl(uint64_t cmd);

// A terminal ioctl on `host_fd` (a tty) by `task`. TIOCSTI: EPERM. Unknown: ENOTTY.
SysResult<uint64_t> TtyIoctl(Task& task, int host_fd, Terminal& term, uint64_t cmd, uint64_t arg);

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_TTY_H_
