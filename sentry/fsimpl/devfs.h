// devfs: the synthetic /dev of the sandbox: null, zero, full, random, urandom, tty (the
// caller's controlling pty if its session has one, else the host terminal if usentry's
// stdio has one), ptmx and pts/ (pseudo-terminals, pty.h; pts/0 is the host terminal
// under its ttyname), the fd/stdin/stdout/stderr symlinks into /proc/self/fd, and shm (a
// 64 MiB tmpfs mounted by MountDevfs). Fixed directory except pts/.
#ifndef USENTRY_SENTRY_FSIMPL_DEVFS_H_
#define USENTRY_SENTRY_FSIMPL_DEVFS_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sentry/vfs/inode.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry {
class Kernel;
}

namespace usentry::sentry::fsimpl {

// Builds the /dev tree. `kernel` may be null (tests): /dev/tty is then ENXIO.
// `host_tty_fd` is a host FD of the user's terminal (one of the stdio FDs), or -1.
std::shared_ptr<vfs::Inode> NewDevfsRoot(Kernel* kernel, int host_tty_fd, uint32_t uid,
                                         uint32_t gid);

// Mounts devfs on the sandbox's /dev (which must exist). `stdio_host_fds` are the host
// FDs behind the app's 0/1/2 (SentryConfig::stdio_fds); the first that is a terminal
// backs /dev/tty and /dev/pts/0. Requires Kernel::mu.
absl::Status MountDevfs(vfs::Vfs& vfs, Kernel& kernel, absl::Span<const int> stdio_host_fds = {});

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_DEVFS_H_
