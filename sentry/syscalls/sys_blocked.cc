// Privileged syscalls refused by policy, with their audit record.
#include "sentry/syscalls/sys_blocked.h"

#include <linux/sched.h>

#include <cerrno>

#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"

namespace usentry::sentry {
namespace {

// The errno an unprivileged Linux process gets. The keyring calls answer ENOSYS (as on
// a kernel built without keys): programs that probe them fall back instead of failing.
int BlockedErrno(int nr) {
  switch (nr) {
    case 248:  // add_key
    case 249:  // request_key
    case 250:  // keyctl
      return ENOSYS;
    default:
      return EPERM;
  }
}

SyscallResult Refuse(Task& t, int nr, int err) {
  t.kernel().NoteBlocked(t.thread_group().pid(), nr, err);
  return Errno{err};
}

constexpr uint64_t kNamespaceFlags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                                     CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP |
                                     0x80 /* CLONE_NEWTIME */;

}  // namespace

SyscallResult SysBlocked(Task& t, const SyscallArgs& a) {
  return Refuse(t, a.nr, BlockedErrno(a.nr));
}

SyscallResult SysUnshare(Task& t, const SyscallArgs& a) {
  uint64_t flags = a.u64(0);
  if (flags == 0) return uint64_t{0};
  if (flags & kNamespaceFlags) return Refuse(t, a.nr, EPERM);
  return Errno{EINVAL};
}

}  // namespace usentry::sentry
