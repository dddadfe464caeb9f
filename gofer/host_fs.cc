// Host file helpers for the gofer server (see host_fs.h).
#include "gofer/host_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gofer/protocol.h"

namespace usentry::gofer {

SysResult<UniqueFd> OpenBeneath(int dir_fd, const std::string& name, int flags) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_NOFOLLOW | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd;
  // openat2 answers EAGAIN when a concurrent rename may have raced the lookup; retry a
  // few times, then report it rather than spin on a tree someone keeps renaming.
  int tries = 0;
  do {
    fd = ::syscall(SYS_openat2, dir_fd, name.c_str(), &how, sizeof(how));
  } while (fd < 0 && errno == EAGAIN && ++tries < 16);
  if (fd < 0 && errno == ENOSYS) {
    fd = ::openat(dir_fd, name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) return Errno{errno};
  return UniqueFd(static_cast<int>(fd));
}

SysResult<struct stat> StatFd(int fd) {
  struct stat st;
  if (::fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) return Errno{errno};
  return st;
}

SysResult<std::string> ReadLinkFd(int fd) {
  std::string buf(kMaxSymlinkTargetLen + 1, '\0');
  const ssize_t n = ::readlinkat(fd, "", buf.data(), buf.size());
  if (n < 0) return Errno{errno};
  if (static_cast<size_t>(n) > kMaxSymlinkTargetLen) return Errno{ENAMETOOLONG};
  buf.resize(static_cast<size_t>(n));
  return buf;
}

SysResult<struct stat> StatAt(int dir_fd, const std::string& name) {
  struct stat st;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return Errno{errno};
  return st;
}

namespace {
// Where this process's /proc/self/fd is: EnterProcRoot moves it.
const char* g_proc_fd_prefix = "/proc/self/fd/";
}  // namespace

std::string ProcFdPath(int fd) { return absl::StrCat(g_proc_fd_prefix, fd); }

absl::Status EnterProcRoot() {
  if (chroot("/proc/self") != 0) return ErrnoStatus("chroot(\"/proc/self\")");
  if (chdir("/") != 0) return ErrnoStatus("chdir(\"/\") in /proc/self");
  g_proc_fd_prefix = "/fd/";
  return absl::OkStatus();
}

namespace {

// Layout of struct linux_dirent64 up to the name.
struct Dirent64Header {
  uint64_t d_ino;
  int64_t d_off;
  uint16_t d_reclen;
  uint8_t d_type;
};
constexpr size_t kDirentNameOffset = offsetof(Dirent64Header, d_type) + 1;

}  // namespace

SysResult<bool> ListDir(int dir_fd, uint64_t cursor, const DirEntryFn& fn) {
  ASSIGN_OR_RETURN_ERRNO(UniqueFd fd, OpenBeneath(dir_fd, ".", O_RDONLY | O_DIRECTORY));
  if (cursor > static_cast<uint64_t>(INT64_MAX)) return Errno{EINVAL};
  if (::lseek(fd.get(), static_cast<off_t>(cursor), SEEK_SET) < 0) return Errno{errno};
  alignas(8) char buf[32 * 1024];
  while (true) {
    long n = ::syscall(SYS_getdents64, fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno{errno};
    }
    if (n == 0) return true;
    for (long off = 0; off < n;) {
      Dirent64Header h;
      if (static_cast<size_t>(n - off) < kDirentNameOffset) return Errno{EIO};
      std::memcpy(&h, buf + off, kDirentNameOffset);
      if (h.d_reclen <= kDirentNameOffset || h.d_reclen > n - off) return Errno{EIO};
      const char* name_start = buf + off + kDirentNameOffset;
      size_t name_len = strnlen(name_start, h.d_reclen - kDirentNameOffset);
      std::string_view name(name_start, name_len);
      off += h.d_reclen;
      if (name == "." || name == "..") continue;
      if (!fn(name, h.d_ino, h.d_type, static_cast<uint64_t>(h.d_off))) return false;
    }
  }
}

}  // namespace usentry::gofer
