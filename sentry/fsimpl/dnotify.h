// dnotify (fcntl F_NOTIFY): a signal to the process that asked when an entry of a
// directory is accessed, modified, created, deleted, renamed or has its attributes
// changed; built on the Vfs's NotifyHub like inotify. All calls run under Kernel::mu.
#ifndef USENTRY_SENTRY_FSIMPL_DNOTIFY_H_
#define USENTRY_SENTRY_FSIMPL_DNOTIFY_H_

#include <cstdint>
#include <memory>

#include "sentry/kernel/sys_result.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry::fsimpl {

// fcntl(fd, F_NOTIFY, arg) by `task` on `file`, the description behind `fd`. The DN_*
// bits of `arg` add to those already asked for on this description (0, or
// DN_MULTISHOT alone, ends the notification); without DN_MULTISHOT the first signal
// ends it. The signal is F_SETSIG's (with si_fd and si_code POLL_MSG), or SIGIO. It
// lasts until the description is released. ENOTDIR for other files.
SysStatus SetDirNotify(Task& task, int fd, const std::shared_ptr<vfs::FileDescription>& file,
                       uint32_t arg);

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_DNOTIFY_H_
