// RLIMIT_FSIZE (and --max-file-size, its ceiling): the largest file a process may make
// by writing, truncating or allocating. As Linux: a write starting at or past the limit
// fails with EFBIG and the writer gets SIGXFSZ; one crossing it is cut short at the limit
// (a partial write); growing a file's size past it is EFBIG + SIGXFSZ. Only regular
// files are limited. All functions require the kernel lock.
#ifndef USENTRY_SENTRY_SYSCALLS_FSIZE_LIMIT_H_
#define USENTRY_SENTRY_SYSCALLS_FSIZE_LIMIT_H_

#include <cstdint>

#include "sentry/kernel/sys_result.h"

namespace usentry::sentry {

class Task;
namespace vfs {
class FileDescription;
}

// How many of `len` bytes a write to `file` at `pos` (-1: the file offset, or the end
// for O_APPEND) may store: `len` when unlimited or not a regular file, fewer when the
// write crosses the limit, EFBIG (SIGXFSZ sent) when it starts at or past it.
SysResult<uint64_t> FsizeAllowedWrite(Task& t, vfs::FileDescription& file, int64_t pos,
                                      uint64_t len);
// Growing a regular file to `new_size` (truncate, ftruncate, fallocate): EFBIG (SIGXFSZ
// sent) past the limit.
SysStatus FsizeAllowedSize(Task& t, uint64_t new_size);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_FSIZE_LIMIT_H_
