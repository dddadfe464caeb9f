// procfs: the sandbox's synthetic /proc. Per-process directories for every thread group
// (stat, status, maps, cmdline, environ, fd/, exe, cwd, root, mounts, net/, task/...), "self"
// and "thread-self", and the system-wide files programs read (cpuinfo, meminfo, stat,
// uptime, loadavg, version, filesystems, mounts, sys/kernel/..., sys/vm/...,
// sysvipc/shm). File contents are generated at open time (a snapshot) and are read-only.
//
// "self" needs the calling task, but the VFS resolves paths without one: the run loop
// tells procfs which task runs on the current host thread (one host thread per task).
#ifndef USENTRY_SENTRY_FSIMPL_PROCFS_H_
#define USENTRY_SENTRY_FSIMPL_PROCFS_H_

#include <memory>

#include "absl/status/status.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/inode.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry {
class Kernel;
class Task;
}  // namespace usentry::sentry

namespace usentry::sentry::fsimpl {

// Sets the task whose syscalls run on this host thread: call once at the start of the
// task's host thread, and with nullptr when the thread is done with it. Thread-local;
// no lock needed.
void SetCurrentTask(Task* t);
// The task of the current host thread, or null (setup code, the poller thread).
Task* CurrentTask();

// The /proc root for `kernel`. The kernel must outlive it.
std::shared_ptr<vfs::Inode> NewProcfsRoot(Kernel& kernel);

// Mounts procfs on the sandbox's /proc (which must exist), noexec.
absl::Status MountProcfs(vfs::Vfs& vfs, Kernel& kernel);

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_PROCFS_H_
