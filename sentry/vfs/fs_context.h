// FsContext: a task's root, working directory and umask (shared by CLONE_FS tasks).
#ifndef USENTRY_SENTRY_VFS_FS_CONTEXT_H_
#define USENTRY_SENTRY_VFS_FS_CONTEXT_H_

#include <cstdint>
#include <memory>

#include "sentry/vfs/dentry.h"

namespace usentry::sentry::vfs {

class FsContext {
 public:
  FsContext(Path root, Path cwd, uint32_t umask = 022)
      : root_(std::move(root)), cwd_(std::move(cwd)), umask_(umask) {}

  const Path& root() const { return root_; }
  const Path& cwd() const { return cwd_; }
  uint32_t umask() const { return umask_; }
  void set_root(Path p) { root_ = std::move(p); }
  void set_cwd(Path p) { cwd_ = std::move(p); }
  // Returns the previous umask (umask(2)).
  uint32_t SetUmask(uint32_t m) {
    uint32_t old = umask_;
    umask_ = m & 0777;
    return old;
  }

  // An independent copy for fork() without CLONE_FS.
  std::shared_ptr<FsContext> Fork() const { return std::make_shared<FsContext>(*this); }

 private:
  Path root_;
  Path cwd_;
  uint32_t umask_;
};

}  // namespace usentry::sentry::vfs

#endif  // USENTRY_SENTRY_VFS_FS_CONTEXT_H_
