// Thin wrappers over the host calls the gofer server resolves and lists files with:
// one-component openat2 beneath a directory, stat of an O_PATH FD, /proc/self/fd reopen
// paths, and a cursor-based getdents64 loop.
#ifndef USENTRY_GOFER_HOST_FS_H_
#define USENTRY_GOFER_HOST_FS_H_

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "base/sys_result.h"
#include "base/unique_fd.h"

namespace usentry::gofer {

// Opens `name` (one validated component, or ".") beneath dir_fd with openat2
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS; O_NOFOLLOW|O_CLOEXEC are
// always added. With O_PATH a trailing symlink yields an FD of the link itself. On
// kernels without openat2 falls back to openat(O_NOFOLLOW), equivalent for a single
// component that is neither "..", nor contains '/'.
SysResult<UniqueFd> OpenBeneath(int dir_fd, const std::string& name, int flags);

// fstatat(fd, "", AT_EMPTY_PATH|AT_SYMLINK_NOFOLLOW): works on O_PATH FDs.
SysResult<struct stat> StatFd(int fd);
// readlinkat(fd, ""): the target of the symlink an O_PATH FD holds (EINVAL for other
// types), at most kMaxSymlinkTargetLen bytes.
SysResult<std::string> ReadLinkFd(int fd);
// fstatat(dir_fd, name, AT_SYMLINK_NOFOLLOW).
SysResult<struct stat> StatAt(int dir_fd, const std::string& name);

// "/proc/self/fd/<fd>": reopening through it reaches exactly the inode the FD holds,
// which is how an O_PATH FD becomes an I/O FD without a path lookup that could race.
std::string ProcFdPath(int fd);

// Confinement step, after every tree root is open: makes this process's own /proc/self
// its root directory (chroot), so that no host path can be named any more, only the
// FDs it holds ("/fd/N", which ProcFdPath returns from then on). Needs CAP_SYS_CHROOT
// (root, or a user namespace of its own). Single-threaded callers only.
absl::Status EnterProcRoot();

// Called for each directory entry except "." and ".."; `next` is the cursor that resumes
// after this entry. Return false to stop before consuming this entry.
using DirEntryFn =
    std::function<bool(std::string_view name, uint64_t ino, uint8_t type, uint64_t next)>;
// Lists the directory dir_fd refers to (any FD, O_PATH included) from `cursor` (0 or a
// `next` from an earlier call) on a fresh O_RDONLY FD. Returns true if the end was
// reached, false if fn stopped early.
SysResult<bool> ListDir(int dir_fd, uint64_t cursor, const DirEntryFn& fn);

}  // namespace usentry::gofer

#endif  // USENTRY_GOFER_HOST_FS_H_
