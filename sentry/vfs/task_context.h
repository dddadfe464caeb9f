// Glue between a Task and the VFS: resolution contexts from a task's FsContext/FdTable,
// and the helpers the loader, exec, mmap and /proc code use. Compiled into
// usentry_sentry (it needs Task); the rest of the VFS does not know about tasks.
#ifndef USENTRY_SENTRY_VFS_TASK_CONTEXT_H_
#define USENTRY_SENTRY_VFS_TASK_CONTEXT_H_

#include <memory>
#include <string>
#include <string_view>

#include "sentry/audit/audit_log.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry::vfs {

// The FsObserver that writes "file" and "denied" records (and --explain lines) to `log`.
// `masked`: glob patterns of masked secrets (their ENOENT is reported as a denial).
std::unique_ptr<FsObserver> NewAuditObserver(const audit::AuditLog& log,
                                             std::vector<std::string> masked);

// Context for a path relative to `dirfd` (AT_FDCWD = cwd). For a relative path, dirfd
// must be an open directory (EBADF / ENOTDIR). Absolute paths ignore dirfd.
SysResult<ResolveContext> ContextAt(Task& task, int dirfd, std::string_view path);
// Context for absolute/cwd-relative paths.
ResolveContext TaskContext(Task& task);

// Vfs::OpenForExec in the task's root, cwd and credentials.
SysResult<std::shared_ptr<FileDescription>> OpenForExec(Task& task, std::string_view path);

// Reads up to n bytes at `off` into a sentry buffer (loader: ELF headers, segments).
SysResult<size_t> ReadAt(FileDescription& file, void* buf, size_t n, int64_t off);

// Attributes of an open file (mode/uid/gid for setuid handling, size for the loader).
SysResult<Attr> FileAttr(FileDescription& file);

// Sandbox path of an open file as seen from the task's root (/proc/self/exe, AT_EXECFN,
// /proc/self/fd/N), or its AnonName() for anonymous files.
std::string FilePath(Task& task, const FileDescription& file);
// getcwd's answer for the task (from its root).
std::string CwdPath(Task& task);

}  // namespace usentry::sentry::vfs

#endif  // USENTRY_SENTRY_VFS_TASK_CONTEXT_H_
