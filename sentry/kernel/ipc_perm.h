// The ownership and permission rules every System V IPC object shares (Linux's
// kern_ipc_perm with ipcperms and the IPC_SET/IPC_RMID owner check), judged against the
// task's emulated credentials, never the sentry's host identity.
#ifndef USENTRY_SENTRY_KERNEL_IPC_PERM_H_
#define USENTRY_SENTRY_KERNEL_IPC_PERM_H_

#include <cstdint>

#include "sentry/kernel/credentials.h"
#include "sentry/kernel/sys_result.h"

namespace usentry::sentry {

struct IpcPerm {
  int32_t key = 0;              // IPC_PRIVATE once removed
  uint32_t uid = 0, gid = 0;    // owner (IPC_SET may change it)
  uint32_t cuid = 0, cgid = 0;  // creator
  // The low 9 bits are permissions; higher bits are the object's flags (SHM_DEST...).
  uint32_t mode = 0;
  uint16_t seq = 0;  // the id's sequence part
};

// Whether `c` may use the object for `requested`: rwx bits in any of the three classes
// (shmget's mode argument, or 0444/0222/0111 for read/write/execute). The owner's or
// creator's class applies to either uid, else the group class to either gid, else
// others; CAP_IPC_OWNER overrides.
bool IpcAccessAllowed(const Credentials& c, const IpcPerm& p, uint32_t requested);

// Whether `c` is the owner or the creator (by effective uid).
bool IpcIsOwnerOrCreator(const Credentials& c, const IpcPerm& p);

// IPC_SET and IPC_RMID: the owner, the creator or CAP_SYS_ADMIN; EPERM otherwise.
SysStatus IpcMayChange(const Credentials& c, const IpcPerm& p);

// IPC_SET's update: owner uid/gid and the 9 permission bits (EINVAL for the id -1,
// which no user namespace maps).
SysStatus IpcSetOwnerAndMode(IpcPerm& p, uint32_t uid, uint32_t gid, uint32_t mode);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_IPC_PERM_H_
