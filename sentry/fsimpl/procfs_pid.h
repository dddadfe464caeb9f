// procfs internals: the per-process directory (/proc/PID and /proc/PID/task/TID).
#ifndef USENTRY_SENTRY_FSIMPL_PROCFS_PID_H_
#define USENTRY_SENTRY_FSIMPL_PROCFS_PID_H_

#include <cstdint>
#include <memory>

#include "sentry/vfs/inode.h"

namespace usentry::sentry {
class Kernel;
}

namespace usentry::sentry::fsimpl {

// /proc/`tgid` (tid == 0) or /proc/`tgid`/task/`tid`. ENOENT if the group is gone.
SysResult<std::shared_ptr<vfs::Inode>> NewPidDir(std::shared_ptr<vfs::Filesystem> fs, Kernel& k,
                                                 int32_t tgid, int32_t tid);
// /proc/PID/mounts-style listings, shared with the top-level /proc/mounts.
SysResult<std::string> MountsText(Kernel& k, bool mountinfo);

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_PROCFS_PID_H_
