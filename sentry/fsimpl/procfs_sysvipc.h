// procfs internals: /proc/sysvipc/shm, the table of the sandbox's System V shared memory
// segments in Linux's exact format (what `ipcs -m` reads), and the /proc/sys/kernel
// limits those segments are held to.
#ifndef USENTRY_SENTRY_FSIMPL_PROCFS_SYSVIPC_H_
#define USENTRY_SENTRY_FSIMPL_PROCFS_SYSVIPC_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sentry/kernel/shm_segment.h"
#include "sentry/vfs/inode.h"

namespace usentry::sentry {
class Kernel;
}

namespace usentry::sentry::fsimpl {

// /proc/sysvipc. The kernel must outlive it.
std::shared_ptr<vfs::Inode> NewSysvipcDir(std::shared_ptr<vfs::Filesystem> fs, Kernel& k);

// /proc/sys/kernel entries shmmax, shmall, shmmni and shm_rmid_forced.
std::map<std::string, std::shared_ptr<vfs::Inode>> NewShmSysctls(
    std::shared_ptr<vfs::Filesystem> fs);

// The text of /proc/sysvipc/shm: a header and one line per segment, with the resident
// bytes `rss` gives.
std::string GenerateSysvipcShm(const std::vector<ShmStatus>& segments,
                               const std::function<uint64_t(const ShmStatus&)>& rss);

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_PROCFS_SYSVIPC_H_
