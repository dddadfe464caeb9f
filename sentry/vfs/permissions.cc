// DAC checks as Linux's generic_permission() with CAP_DAC_OVERRIDE for sandbox root.
#include "sentry/vfs/permissions.h"

#include <sys/stat.h>

namespace usentry::sentry::vfs {

SysStatus CheckPermission(const Credentials& creds, const Attr& attr, int may) {
  uint32_t mode = attr.mode;
  bool is_dir = (mode & S_IFMT) == S_IFDIR;
  if (creds.IsRoot()) {
    // Root may read/write anything and search any directory, but only executes files
    // that somebody may execute.
    if ((may & kMayExec) && !is_dir && !(mode & (S_IXUSR | S_IXGRP | S_IXOTH))) {
      return Errno{EACCES};
    }
    return SysOk();
  }
  uint32_t bits;
  if (creds.fsuid == attr.uid) {
    bits = (mode >> 6) & 7;
  } else if (creds.InGroup(attr.gid)) {
    bits = (mode >> 3) & 7;
  } else {
    bits = mode & 7;
  }
  if ((bits & may) != static_cast<uint32_t>(may)) return Errno{EACCES};
  return SysOk();
}

SysStatus CheckOwner(const Credentials& creds, const Attr& attr) {
  if (creds.IsRoot() || creds.fsuid == attr.uid) return SysOk();
  return Errno{EPERM};
}

SysStatus CheckSticky(const Credentials& creds, const Attr& dir, const Attr& victim) {
  if (!(dir.mode & S_ISVTX)) return SysOk();
  if (creds.IsRoot() || creds.fsuid == victim.uid || creds.fsuid == dir.uid) return SysOk();
  return Errno{EPERM};
}

}  // namespace usentry::sentry::vfs
