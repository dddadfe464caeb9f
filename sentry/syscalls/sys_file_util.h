// Helpers shared by the file syscall families: path copy-in, *at() resolution with
// AT_EMPTY_PATH, blocking I/O under the non-blocking file contract, stat conversion.
#ifndef USENTRY_SENTRY_SYSCALLS_SYS_FILE_UTIL_H_
#define USENTRY_SENTRY_SYSCALLS_SYS_FILE_UTIL_H_

#include <memory>
#include <string>

#include "abi/stat.h"
#include "absl/functional/function_ref.h"
#include "sentry/kernel/task.h"
#include "sentry/syscalls/syscall.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/task_context.h"

namespace usentry::sentry {

// Linux's MAX_RW_COUNT: reads/writes are clamped to this many bytes.
inline constexpr size_t kMaxRwCount = 0x7ffff000;

// A path argument: EFAULT for a bad pointer, ENAMETOOLONG at 4096 bytes or more.
SysResult<std::string> CopyInPath(Task& task, mm::GuestAddr addr);
// The open description behind `fd` (EBADF).
SysResult<std::shared_ptr<vfs::FileDescription>> GetFile(Task& task, int fd);
// Same, but EBADF for O_PATH descriptions (read/write/ioctl/fchmod...).
SysResult<std::shared_ptr<vfs::FileDescription>> GetIoFile(Task& task, int fd);

// What a *at() call with AT_EMPTY_PATH / AT_SYMLINK_NOFOLLOW designates: a path, or (for
// an empty path with AT_EMPTY_PATH) the dirfd's file itself, which may be anonymous.
struct Target {
  vfs::Path path;
  std::shared_ptr<vfs::FileDescription> file;  // set only for the AT_EMPTY_PATH case
  bool empty_path = false;                     // the AT_EMPTY_PATH case (file may be null)
};
// `open_intent`: the open(2) flags the caller expects the program to open the last
// component with next (ResolveContext::open_flags: a filesystem may open it during the
// lookup), or -1.
SysResult<Target> ResolveTarget(Task& task, int dirfd, mm::GuestAddr path_addr, bool follow,
                                bool empty_path_ok, int open_intent = -1);
// Attributes of a Target.
SysResult<vfs::Attr> StatTarget(const Target& t);

// Runs `op` until it stops returning EAGAIN, blocking on the file's wait queue for
// `events` between attempts unless the file is non-blocking (or cannot block). A signal
// turns into kERestartSys (the signal code decides between restart and EINTR).
SysResult<size_t> BlockingIo(Task& task, vfs::FileDescription& file, EventMask events,
                             absl::FunctionRef<SysResult<size_t>()> op);

abi::Stat ToAbiStat(const vfs::Attr& a);

// The S_IFMT type of an open file: its inode's, or for anonymous files (pipes, memfds)
// what their fstat says.
SysResult<uint32_t> FileTypeOf(vfs::FileDescription& file);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SYSCALLS_SYS_FILE_UTIL_H_
