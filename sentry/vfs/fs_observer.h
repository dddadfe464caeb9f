// FsObserver: told about the changes the app makes to files and the denials it meets,
// for the audit stream and --explain (implemented in sentry/vfs/task_context.cc on top
// of the kernel's AuditLog). The VFS calls it only when ResolveContext::observer is set,
// which TaskContext does only when auditing or --explain is on: no cost otherwise.
#ifndef USENTRY_SENTRY_VFS_FS_OBSERVER_H_
#define USENTRY_SENTRY_VFS_FS_OBSERVER_H_

#include <string>
#include <string_view>

namespace usentry::sentry::vfs {

struct Path;
struct ResolveContext;

class FsObserver {
 public:
  virtual ~FsObserver() = default;
  // A change: op is create|write|truncate|mkdir|mknod|symlink|link|delete|rmdir|rename|
  // exchange|chmod|chown; path is the sandbox path; `to` the second name (rename target,
  // symlink target, the existing file a hard link names) or empty.
  virtual void Changed(const ResolveContext& ctx, std::string_view op, const std::string& path,
                       const std::string& to) const = 0;
  // The app got `err` for `op` on `path` because of the sandbox's policy or identity.
  virtual void Denied(const ResolveContext& ctx, std::string_view op, const std::string& path,
                      int err, std::string_view reason, std::string_view policy) const = 0;
  // `op` on `path` failed with ENOENT: a denial if the path is a masked secret.
  virtual void Absent(const ResolveContext& ctx, std::string_view op,
                      const std::string& path) const = 0;
};

}  // namespace usentry::sentry::vfs

#endif  // USENTRY_SENTRY_VFS_FS_OBSERVER_H_
