// FdTable: lowest-free allocation, dup semantics, close-on-exec.
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry::vfs {

SysResult<int> FdTable::Install(std::shared_ptr<FileDescription> file, bool cloexec, int min_fd) {
  if (min_fd < 0) return Errno{EINVAL};
  if (static_cast<uint64_t>(min_fd) >= limit_) return Errno{min_fd == 0 ? EMFILE : EINVAL};
  int fd = min_fd;
  for (auto it = fds_.lower_bound(min_fd); it != fds_.end() && it->first == fd; ++it) ++fd;
  if (static_cast<uint64_t>(fd) >= limit_) return Errno{EMFILE};
  fds_[fd] = FdEntry{std::move(file), cloexec};
  return fd;
}

SysResult<std::shared_ptr<FileDescription>> FdTable::Get(int fd) const {
  auto it = fds_.find(fd);
  if (it == fds_.end()) return Errno{EBADF};
  return it->second.file;
}

SysResult<FdEntry> FdTable::GetEntry(int fd) const {
  auto it = fds_.find(fd);
  if (it == fds_.end()) return Errno{EBADF};
  return it->second;
}

SysResult<std::shared_ptr<FileDescription>> FdTable::Remove(int fd) {
  auto it = fds_.find(fd);
  if (it == fds_.end()) return Errno{EBADF};
  auto f = std::move(it->second.file);
  fds_.erase(it);
  return f;
}

SysResult<int> FdTable::DupTo(int old_fd, int new_fd, bool cloexec) {
  auto it = fds_.find(old_fd);
  if (it == fds_.end()) return Errno{EBADF};
  if (new_fd < 0 || static_cast<uint64_t>(new_fd) >= limit_) return Errno{EBADF};
  auto file = it->second.file;
  // Keep the replaced description alive until the table is consistent again.
  auto old = std::move(fds_[new_fd].file);
  fds_[new_fd] = FdEntry{std::move(file), cloexec};
  return new_fd;
}

SysStatus FdTable::SetCloexec(int fd, bool cloexec) {
  auto it = fds_.find(fd);
  if (it == fds_.end()) return Errno{EBADF};
  it->second.cloexec = cloexec;
  return SysOk();
}

void FdTable::CloseRange(unsigned first, unsigned last, bool cloexec_only) {
  std::vector<std::shared_ptr<FileDescription>> dropped;
  for (auto it = fds_.lower_bound(static_cast<int>(std::min<unsigned>(first, INT32_MAX)));
       it != fds_.end() && static_cast<unsigned>(it->first) <= last;) {
    if (cloexec_only) {
      it->second.cloexec = true;
      ++it;
    } else {
      dropped.push_back(std::move(it->second.file));
      it = fds_.erase(it);
    }
  }
}

void FdTable::CloseOnExec() {
  std::vector<std::shared_ptr<FileDescription>> dropped;
  for (auto it = fds_.begin(); it != fds_.end();) {
    if (it->second.cloexec) {
      dropped.push_back(std::move(it->second.file));
      it = fds_.erase(it);
    } else {
      ++it;
    }
  }
}

std::shared_ptr<FdTable> FdTable::Fork() const { return std::make_shared<FdTable>(*this); }

void FdTable::Clear() {
  auto old = std::move(fds_);
  fds_.clear();
}

}  // namespace usentry::sentry::vfs
