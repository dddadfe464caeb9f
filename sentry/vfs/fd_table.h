// FdTable: a process's file descriptor table (shared by CLONE_FILES tasks through
// shared_ptr). FD_CLOEXEC lives here, per FD; everything else is in the description.
#ifndef USENTRY_SENTRY_VFS_FD_TABLE_H_
#define USENTRY_SENTRY_VFS_FD_TABLE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "sentry/kernel/sys_result.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry::vfs {

struct FdEntry {
  std::shared_ptr<FileDescription> file;
  bool cloexec = false;
};

class FdTable {
 public:
  static constexpr uint64_t kDefaultLimit = 1024;  // RLIMIT_NOFILE soft, like Linux
  static constexpr uint64_t kMaxLimit = 1u << 20;  // fs.nr_open default

  FdTable() = default;

  // Lowest free FD >= min_fd (EMFILE at the limit, EINVAL if min_fd >= limit).
  SysResult<int> Install(std::shared_ptr<FileDescription> file, bool cloexec, int min_fd = 0);
  SysResult<std::shared_ptr<FileDescription>> Get(int fd) const;
  SysResult<FdEntry> GetEntry(int fd) const;
  // Removes and returns the description (EBADF if not open). The caller drops it,
  // possibly releasing the file.
  SysResult<std::shared_ptr<FileDescription>> Remove(int fd);
  // dup2/dup3 core: makes `new_fd` refer to old_fd's description (closing what was
  // there). EBADF for a bad old_fd or new_fd outside [0, limit). old_fd == new_fd is the
  // caller's business (dup2 returns it, dup3 fails EINVAL).
  SysResult<int> DupTo(int old_fd, int new_fd, bool cloexec);
  SysStatus SetCloexec(int fd, bool cloexec);
  // close_range(first, last, CLOSE_RANGE_CLOEXEC?): removes (or marks) FDs in range.
  void CloseRange(unsigned first, unsigned last, bool cloexec_only);
  // execve: closes every FD_CLOEXEC descriptor.
  void CloseOnExec();
  // A copy for fork() without CLONE_FILES (descriptions shared, like Linux).
  std::shared_ptr<FdTable> Fork() const;
  // Drops everything (process exit).
  void Clear();

  uint64_t limit() const { return limit_; }
  void set_limit(uint64_t l) { limit_ = l; }
  size_t size() const { return fds_.size(); }
  // In FD order (for /proc/self/fd and close_range).
  const std::map<int, FdEntry>& entries() const { return fds_; }

 private:
  std::map<int, FdEntry> fds_;
  uint64_t limit_ = kDefaultLimit;
};

}  // namespace usentry::sentry::vfs

#endif  // USENTRY_SENTRY_VFS_FD_TABLE_H_
