// Terminal ioctls on pseudo-terminal ends: termios and window size (shared by both
// ends, as Linux answers the master's with the replica's), queue sizes and flushes, the
// master's TIOCGPTN/TIOCSPTLCK/TIOCGPTPEER, and job control (see pty.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>

#include <cstring>

#include "sentry/fsimpl/pty_internal.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry::fsimpl {

void PtyDescription::Flush(bool input) {
  Pty& p = *pty_;
  // The replica's input is the master's output and the other way round.
  if (input == master_) {
    p.ld.FlushOutput();
    p.replica_wq.Notify(kPtyOut);
  } else {
    p.ld.FlushInput();
    p.master_wq.Notify(kPtyOut);
  }
}

SysResult<uint64_t> MasterDescription::EndIoctl(Task& task, uint64_t cmd, uint64_t arg) {
  mm::MemoryManager& mm = task.mm();
  mm::GuestAddr addr(arg);
  Pty& p = *pty_;
  switch (cmd) {
    case TIOCGPTN: {
      uint32_t n = p.index;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, n));
      return uint64_t{0};
    }
    case TIOCSPTLCK: {
      ASSIGN_OR_RETURN_ERRNO(int32_t lock, mm.CopyInObj<int32_t>(addr));
      p.locked = lock != 0;
      return uint64_t{0};
    }
    case TIOCGPTLCK: {
      int32_t lock = p.locked ? 1 : 0;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, lock));
      return uint64_t{0};
    }
    case TIOCGPTPEER: {
      int flags = static_cast<int>(arg);
      if (flags & ~(O_ACCMODE | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)) return Errno{EINVAL};
      if (!p.master_open) return Errno{EIO};
      auto d =
          std::make_shared<ReplicaDescription>(pty_, vfs::Path{}, flags & ~(O_NOCTTY | O_CLOEXEC));
      MaybeAcquireControlling(p, flags);
      ASSIGN_OR_RETURN_ERRNO(int fd, task.fds().Install(d, flags & O_CLOEXEC));
      return uint64_t(fd);
    }
    case TIOCPKT: {
      // Packet mode is not emulated: only "off" is accepted.
      ASSIGN_OR_RETURN_ERRNO(int32_t on, mm.CopyInObj<int32_t>(addr));
      if (on != 0) return Errno{EINVAL};
      return uint64_t{0};
    }
    case TIOCGPKT: {
      int32_t off = 0;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, off));
      return uint64_t{0};
    }
  }
  return Errno{ENOTTY};
}

SysResult<uint64_t> PtyDescription::Ioctl(Task& task, uint64_t cmd, uint64_t arg) {
  mm::MemoryManager& mm = task.mm();
  mm::GuestAddr addr(arg);
  Pty& p = *pty_;
  ThreadGroup& tg = task.thread_group();
  // A hung-up replica answers nothing (Linux's hung_up_tty_ioctl).
  if (!master_ && !p.master_open) return Errno{cmd == TIOCSPGRP ? ENOTTY : EIO};
  // Job-control queries on the replica need it to be the caller's controlling tty; on
  // the master they are about the replica.
  const bool controlling = IsControllingFor(p, tg);
  switch (cmd) {
    case TCGETS: {
      abi::Termios t = p.ld.termios();
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, t));
      return uint64_t{0};
    }
    case TCSETSF:
    case TCSETSW:
    case TCSETS: {
      ASSIGN_OR_RETURN_ERRNO(abi::Termios t, mm.CopyInObj<abi::Termios>(addr));
      // TCSETSW would wait for the master to read pending output; it is applied at once.
      if (cmd == TCSETSF) p.ld.FlushInput();
      p.ld.SetTermios(t);
      // A mode change may make input readable (raw bytes, pushed lines).
      p.replica_wq.Notify(kPtyIn);
      return uint64_t{0};
    }
    case TIOCGWINSZ:
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, p.winsize));
      return uint64_t{0};
    case TIOCSWINSZ: {
      ASSIGN_OR_RETURN_ERRNO(abi::Winsize w, mm.CopyInObj<abi::Winsize>(addr));
      if (memcmp(&w, &p.winsize, sizeof(w)) == 0) return uint64_t{0};
      p.winsize = w;
      p.SignalGroup(p.fg_pgrp, SIGWINCH);
      return uint64_t{0};
    }
    case FIONREAD: {
      int32_t n = static_cast<int32_t>(master_ ? p.ld.OutputAvailable() : p.ld.InputAvailable());
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, n));
      return uint64_t{0};
    }
    case TIOCOUTQ: {
      int32_t n = static_cast<int32_t>(master_ ? p.ld.InputAvailable() : p.ld.OutputAvailable());
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, n));
      return uint64_t{0};
    }
    case TCFLSH:
      if (arg == TCIFLUSH || arg == TCIOFLUSH) Flush(true);
      if (arg == TCOFLUSH || arg == TCIOFLUSH) Flush(false);
      if (arg > TCIOFLUSH) return Errno{EINVAL};
      return uint64_t{0};
    case TCSBRK:
    case TCSBRKP:
      return uint64_t{0};  // tcdrain / break: nothing to wait for
    case TCXONC:
      if (arg > TCION) return Errno{EINVAL};
      return uint64_t{0};  // no IXON flow control is emulated
    case TIOCGETD: {
      int32_t n_tty = 0;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, n_tty));
      return uint64_t{0};
    }
    case TIOCSETD: {
      ASSIGN_OR_RETURN_ERRNO(int32_t ldisc, mm.CopyInObj<int32_t>(addr));
      if (ldisc != 0) return Errno{EINVAL};  // only N_TTY
      return uint64_t{0};
    }
    case TIOCEXCL:
    case TIOCNXCL:
      p.exclusive = cmd == TIOCEXCL;
      return uint64_t{0};
    case TIOCSTI:
      // Injecting input is how a sandboxed program would type into someone's shell.
      return Errno{EPERM};
    case TIOCGPGRP: {
      if (!master_ && !controlling) return Errno{ENOTTY};
      int32_t pg = p.fg_pgrp;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, pg));
      return uint64_t{0};
    }
    case TIOCGSID: {
      if (!master_ && !controlling) return Errno{ENOTTY};
      if (p.sid == 0) return Errno{ENOTTY};
      int32_t sid = p.sid;
      RETURN_IF_ERRNO(mm.CopyOutObj(addr, sid));
      return uint64_t{0};
    }
    case TIOCSPGRP: {
      if (!controlling) return Errno{ENOTTY};
      ASSIGN_OR_RETURN_ERRNO(int32_t pgrp, mm.CopyInObj<int32_t>(addr));
      if (pgrp < 0) return Errno{EINVAL};
      bool found = false;
      for (auto& g : task.kernel().ThreadGroups()) {
        if (g->pgid != pgrp || g->zombie) continue;
        if (g->sid != tg.sid) return Errno{EPERM};
        found = true;
      }
      if (!found) return Errno{ESRCH};
      p.fg_pgrp = pgrp;
      return uint64_t{0};
    }
    case TIOCSCTTY: {
      if (controlling && tg.sid == tg.pid()) return uint64_t{0};  // already ours
      if (tg.sid != tg.pid()) return Errno{EPERM};                // not a session leader
      if (auto dir = p.dir.lock(); dir && dir->ControllingPty(tg.sid)) return Errno{EPERM};
      if (!readable() && !task.creds().IsRoot()) return Errno{EPERM};
      if (p.sid != 0) {
        // Stealing another session's terminal: arg 1 and privilege (Linux).
        if (arg != 1 || !task.creds().IsRoot()) return Errno{EPERM};
      }
      p.sid = tg.sid;
      p.fg_pgrp = tg.pgid;
      return uint64_t{0};
    }
    case TIOCNOTTY: {
      if (master_ || !controlling) return Errno{ENOTTY};
      if (tg.sid == tg.pid()) {
        // The session leader gives the terminal up: its foreground group hears SIGHUP
        // and SIGCONT, as on Linux.
        int32_t fg = p.fg_pgrp;
        p.sid = 0;
        p.fg_pgrp = 0;
        p.SignalGroup(fg, SIGHUP);
        p.SignalGroup(fg, SIGCONT);
      }
      return uint64_t{0};
    }
  }
  return EndIoctl(task, cmd, arg);
}

}  // namespace usentry::sentry::fsimpl
