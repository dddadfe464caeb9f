#include "sentry/kernel/ipc_perm.h"

#include <linux/capability.h>

namespace usentry::sentry {

bool IpcAccessAllowed(const Credentials& c, const IpcPerm& p, uint32_t requested) {
  // Fold the requested bits of every class into one rwx triple, as Linux does.
  const uint32_t want = ((requested >> 6) | (requested >> 3) | requested) & 07;
  uint32_t granted = p.mode;
  if (IpcIsOwnerOrCreator(c, p)) {
    granted >>= 6;
  } else if (c.InGroup(p.cgid) || c.InGroup(p.gid)) {
    granted >>= 3;
  }
  if ((want & ~granted & 07) == 0) return true;
  return c.HasCapability(CAP_IPC_OWNER);
}

bool IpcIsOwnerOrCreator(const Credentials& c, const IpcPerm& p) {
  return c.euid == p.cuid || c.euid == p.uid;
}

SysStatus IpcMayChange(const Credentials& c, const IpcPerm& p) {
  if (IpcIsOwnerOrCreator(c, p) || c.HasCapability(CAP_SYS_ADMIN)) return SysOk();
  return Errno{EPERM};
}

SysStatus IpcSetOwnerAndMode(IpcPerm& p, uint32_t uid, uint32_t gid, uint32_t mode) {
  if (uid == UINT32_MAX || gid == UINT32_MAX) return Errno{EINVAL};
  p.uid = uid;
  p.gid = gid;
  p.mode = (p.mode & ~0777u) | (mode & 0777u);
  return SysOk();
}

}  // namespace usentry::sentry
