// Terminal ioctls: host pass-through for termios/winsize, sentry emulation for job
// control. Only the ioctls the sentry's seccomp filter allows reach the host.
#include "sentry/fsimpl/tty.h"

#include <sys/ioctl.h>
#include <termios.h>

#include <cerrno>

#include "abi/misc.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"

namespace usentry::sentry::fsimpl {
namespace {

// Host ioctl with a sentry buffer; the argument is never an app pointer.
SysStatus HostIoctl(int fd, unsigned long cmd, void* buf) {
  if (ioctl(fd, cmd, buf) < 0) return Errno{errno};
  return SysOk();
}

SysResult<int32_t> CallerPgid(Task& task) { return task.thread_group().pgid; }

}  // namespace

vfs::Attr HostTtyAttr(uint32_t uid, uint32_t gid) {
  vfs::Attr a;
  a.dev = kDevptsDev;
  a.ino = kHostTtyIno;
  a.mode = S_IFCHR | 0620;
  a.uid = uid;
  a.gid = gid;
  a.rdev = kHostTtyRdev;
  a.blksize = 1024;
  a.atime = a.mtime = a.ctime = vfs::NowTimespec();
  return a;
}

bool IsTtyIoctl(uint64_t cmd) {
  switch (cmd) {
    case TCGETS:
    case TCSETS:
    case TCSETSW:
    case TCSETSF:
    case TIOCGWINSZ:
    case TIOCSWINSZ:
    case TIOCGPGRP:
    case TIOCSPGRP:
    case TIOCGSID:
    case TIOCSCTTY:
    case TIOCNOTTY:
    case TIOCSTI:
    case TCSBRK:
    case TCXONC:
    case TCFLSH:
    case TIOCOUTQ:
    case TIOCGETD:
    case TIOCSETD:
    case TIOCEXCL:
    case TIOCNXCL:
    case TIOCGPTN:
    case TIOCSPTLCK:
    case TCGETA:
    case TCSETA:
    case TCSETAW:
    case TCSETAF:
      return true;
  }
  return false;
}

SysResult<uint64_t> TtyIoctl(Task& task, int host_fd, Terminal& term, uint64_t cmd, uint64_t arg) {
  mm::MemoryManager& mm = task.mm();
  mm::GuestAddr addr(arg);
  ThreadGroup& tg = task.thread_group();
  switch (cmd) {
    case TCGETS: {
      abi::Termios t;
      RETURN_IF_ERRNO(HostIoctl(host_fd, TCGETS, &t));
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, t));
      return uint64_t{0};
    }
    case TCSETS:
    case TCSETSW:
    case TCSETSF: {
      // TCSETSW/TCSETSF wait for output to drain on the host: bounded by the terminal.
      ASSIGN_OR_RETURN_ERRNO(abi::Termios t, mm.CopyInObj<abi::Termios>(addr));
      RETURN_IF_ERRNO(HostIoctl(host_fd, cmd, &t));
      return uint64_t{0};
    }
    case TIOCGWINSZ: {
      abi::Winsize w;
      RETURN_IF_ERRNO(HostIoctl(host_fd, TIOCGWINSZ, &w));
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, w));
      return uint64_t{0};
    }
    case TIOCSWINSZ: {
      ASSIGN_OR_RETURN_ERRNO(abi::Winsize w, mm.CopyInObj<abi::Winsize>(addr));
      RETURN_IF_ERRNO(HostIoctl(host_fd, TIOCSWINSZ, &w));
      return uint64_t{0};
    }
    case TIOCGPGRP: {
      ASSIGN_OR_RETURN_ERRNO(int32_t pgid, CallerPgid(task));
      int32_t fg = term.fg_pgrp != 0 ? term.fg_pgrp : pgid;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, fg));
      return uint64_t{0};
    }
    case TIOCSPGRP: {
      ASSIGN_OR_RETURN_ERRNO(int32_t pgrp, mm.CopyInObj<int32_t>(addr));
      if (pgrp < 0) return Errno{EINVAL};
      if (term.sid == -1) return Errno{ENOTTY};
      // The group must exist, in the caller's session (tcsetpgrp(3)).
      bool found = false;
      for (const auto& [tid, t] : task.kernel().tasks()) {
        ThreadGroup& other = t->thread_group();
        if (other.pgid != pgrp) continue;
        if (other.sid != tg.sid) return Errno{EPERM};
        found = true;
        break;
      }
      if (!found) return Errno{ESRCH};
      term.fg_pgrp = pgrp;
      return uint64_t{0};
    }
    case TIOCGSID: {
      if (term.sid == -1) return Errno{ENOTTY};
      int32_t sid = term.sid != 0 ? term.sid : tg.sid;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, sid));
      return uint64_t{0};
    }
    case TIOCSCTTY:
      // Only a session leader may acquire a controlling terminal.
      if (tg.sid != tg.pid()) return Errno{EPERM};
      term.sid = tg.sid;
      term.fg_pgrp = tg.pgid;
      return uint64_t{0};
    case TIOCNOTTY:
      if (term.sid != 0 && term.sid != tg.sid) return Errno{ENOTTY};
      if (tg.sid == tg.pid()) term.sid = -1;  // the session leader gives it up
      return uint64_t{0};
    case TIOCSTI:
      // Would inject input into the user's real terminal: never.
      return Errno{EPERM};
    case TCSBRK:
    case TCFLSH:
    case TCXONC:
      // tcdrain/tcflush/tcflow: our writes reach the host synchronously, so draining
      // is already done; flushing and flow control are not forwarded (not in the
      // sentry's seccomp allowlist) and are accepted as no-ops.
      return uint64_t{0};
    case TIOCOUTQ: {
      int32_t zero = 0;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, zero));
      return uint64_t{0};
    }
    case TIOCGETD: {
      int32_t n_tty = 0;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, n_tty));
      return uint64_t{0};
    }
  }
  return Errno{ENOTTY};
}

}  // namespace usentry::sentry::fsimpl
