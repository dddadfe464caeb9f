// Task-facing VFS glue: resolution contexts, exec lookup, loader reads, path names.
#include "sentry/vfs/task_context.h"

#include <fnmatch.h>

#include "absl/strings/match.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/fs_context.h"

namespace usentry::sentry::vfs {

namespace {

class AuditObserver : public FsObserver {
 public:
  AuditObserver(const audit::AuditLog& log, std::vector<std::string> masked)
      : log_(log), masked_(std::move(masked)) {}
  void Changed(const ResolveContext& ctx, std::string_view op, const std::string& path,
               const std::string& to) const override {
    nlohmann::json f = {{"pid", ctx.pid}, {"op", std::string(op)}, {"path", path}};
    if (!to.empty()) f["to"] = to;
    log_.Emit(audit::kFile, std::move(f));
  }
  void Denied(const ResolveContext& ctx, std::string_view op, const std::string& path, int err,
              std::string_view reason, std::string_view policy) const override {
    log_.Denied(ctx.pid, absl::string_view(op.data(), op.size()), path, err,
                absl::string_view(reason.data(), reason.size()),
                absl::string_view(policy.data(), policy.size()));
  }
  void Absent(const ResolveContext& ctx, std::string_view op,
              const std::string& path) const override {
    for (const std::string& m : masked_) {
      // The secret itself, or anything under a masked directory (/etc/sudoers.d/x).
      bool hit =
          fnmatch(m.c_str(), path.c_str(), FNM_PATHNAME) == 0 || (absl::StartsWith(path, m + "/"));
      if (hit) {
        Denied(ctx, op, path, ENOENT, "masked secret", "mounts");
        return;
      }
    }
  }

 private:
  const audit::AuditLog& log_;
  std::vector<std::string> masked_;
};

}  // namespace

std::unique_ptr<FsObserver> NewAuditObserver(const audit::AuditLog& log,
                                             std::vector<std::string> masked) {
  return std::make_unique<AuditObserver>(log, std::move(masked));
}

ResolveContext TaskContext(Task& task) {
  FsContext& fs = task.fs();
  ResolveContext ctx{&task.creds(), fs.root(), fs.cwd(), fs.umask()};
  ctx.observer = task.kernel().fs_observer();
  if (ctx.observer) ctx.pid = task.thread_group().pid();
  return ctx;
}

SysResult<ResolveContext> ContextAt(Task& task, int dirfd, std::string_view path) {
  ResolveContext ctx = TaskContext(task);
  if ((!path.empty() && path[0] == '/') || dirfd == AT_FDCWD) return ctx;
  ASSIGN_OR_RETURN_ERRNO(auto file, task.fds().Get(dirfd));
  if (!file->path().valid() || !file->path().inode()->IsDir()) return Errno{ENOTDIR};
  ctx.start = file->path();
  return ctx;
}

SysResult<std::shared_ptr<FileDescription>> OpenForExec(Task& task, std::string_view path) {
  return task.kernel().vfs().OpenForExec(TaskContext(task), path);
}

SysResult<size_t> ReadAt(FileDescription& file, void* buf, size_t n, int64_t off) {
  if (off < 0) return Errno{EINVAL};
  size_t done = 0;
  while (done < n) {
    iovec v{static_cast<char*>(buf) + done, n - done};
    ASSIGN_OR_RETURN_ERRNO(size_t r,
                           file.Read(nullptr, absl::MakeConstSpan(&v, 1), off + int64_t(done)));
    if (r == 0) break;
    done += r;
  }
  return done;
}

SysResult<Attr> FileAttr(FileDescription& file) { return file.Stat(); }

std::string FilePath(Task& task, const FileDescription& file) {
  if (!file.path().valid()) return file.AnonName();
  return task.kernel().vfs().PathOf(file.path(), task.fs().root());
}

std::string CwdPath(Task& task) {
  return task.kernel().vfs().PathOf(task.fs().cwd(), task.fs().root());
}

}  // namespace usentry::sentry::vfs
