// Discretionary access checks against the emulated Credentials (never the host's).
#ifndef USENTRY_SENTRY_VFS_PERMISSIONS_H_
#define USENTRY_SENTRY_VFS_PERMISSIONS_H_

#include "sentry/kernel/credentials.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/vfs/inode.h"

namespace usentry::sentry::vfs {

inline constexpr int kMayExec = 1;
inline constexpr int kMayWrite = 2;
inline constexpr int kMayRead = 4;

// EACCES unless `creds` may access a file with `attr` for `may` (kMay* bits). Root
// bypasses r/w always and x for directories; x on a non-directory needs some x bit.
SysStatus CheckPermission(const Credentials& creds, const Attr& attr, int may);
// Owner or root (chmod, utimes to explicit times, setting flags): else EPERM.
SysStatus CheckOwner(const Credentials& creds, const Attr& attr);
// Sticky-directory rule for unlink/rename/rmdir of `victim` in `dir`: EPERM unless
// the caller owns the file or the directory, or is root.
SysStatus CheckSticky(const Credentials& creds, const Attr& dir, const Attr& victim);

}  // namespace usentry::sentry::vfs

#endif  // USENTRY_SENTRY_VFS_PERMISSIONS_H_
