// Vfs: the sandbox's mount tree and the path-based operations on it (resolution,
// open, mkdir, unlink, rename, ...). Syscall handlers build a ResolveContext from the
// task (vfs/task_context.h) and call these; tests call them directly.
//
// Resolution semantics follow path_resolution(7): absolute paths start at the context
// root, relative ones at `start`; ".." never leaves the context root and crosses mount
// roots to the mountpoint's parent; symlinks are followed inside the sandbox namespace
// (at most 40, ELOOP beyond; absolute targets restart at the context root); every
// directory walked needs search permission; ENAMETOOLONG for components > 255 bytes or
// paths > 4095 bytes.
#ifndef USENTRY_SENTRY_VFS_VFS_H_
#define USENTRY_SENTRY_VFS_VFS_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sentry/kernel/credentials.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/vfs/dentry.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/fs_observer.h"
#include "sentry/vfs/inode.h"
#include "sentry/vfs/notify.h"

namespace usentry::sentry::vfs {

inline constexpr int kMaxSymlinks = 40;
inline constexpr size_t kNameMax = 255;
inline constexpr size_t kPathMax = 4096;  // including the NUL

// Who resolves, and from where.
struct ResolveContext {
  const Credentials* creds = nullptr;
  Path root;   // the task's root ("/" of its view)
  Path start;  // cwd or the dirfd's path, for relative paths
  uint32_t umask = 022;
  // Audit/--explain hooks (null: nobody listens) and the pid they report.
  const FsObserver* observer = nullptr;
  int32_t pid = 0;
  // Set by open(2) (not O_CREAT, not O_PATH) to its flags, and by execve's lookup to
  // O_RDONLY: the path's last component is looked up with Inode::LookupForOpen. -1
  // otherwise.
  int open_flags = -1;
};

// Result of resolving all but the last component.
struct ParentAndName {
  Path parent;       // a directory
  std::string name;  // last component; may be "." or ".." or empty (path "/")
  bool trailing_slash = false;
};

class Vfs {
 public:
  // The root mount: `root_inode` of `fs` at "/".
  Vfs(std::shared_ptr<Filesystem> fs, std::shared_ptr<Inode> root_inode, int mount_flags = 0);
  ~Vfs();

  Path root() const;

  // Mounts `root_inode` of `fs` on the directory `mountpoint`. EBUSY-free: mounting on a
  // mountpoint stacks (the newest wins), like Linux.
  SysResult<std::shared_ptr<Mount>> MountAt(const Path& mountpoint, std::shared_ptr<Filesystem> fs,
                                            std::shared_ptr<Inode> root_inode, int mount_flags);
  // Convenience for setup code: resolves `abs_path` from the root as sandbox root and
  // mounts there (the directory must exist).
  SysResult<std::shared_ptr<Mount>> MountAt(std::string_view abs_path,
                                            std::shared_ptr<Filesystem> fs,
                                            std::shared_ptr<Inode> root_inode, int mount_flags);
  // The mount stacked on (mount, dentry), or null.
  std::shared_ptr<Mount> MountedOn(const Mount& m, const Dentry& d) const;
  // Every mount, parents before children (for /proc/self/mounts).
  std::vector<std::shared_ptr<Mount>> Mounts() const;

  // --- resolution ---
  // Full path. follow: follow a final symlink. Empty path is ENOENT (AT_EMPTY_PATH is
  // the caller's business). A trailing slash requires a directory (ENOTDIR) and forces
  // following.
  SysResult<Path> Resolve(const ResolveContext& ctx, std::string_view path, bool follow);
  // Like Resolve(follow=true), but a final chain of symlinks that ends in a magic link to
  // an anonymous file (/dev/stdin -> /proc/self/fd/0 -> a pipe) yields that file instead
  // of ENOENT. Exactly one of the result's path / file is set. For open and stat.
  struct Final {
    Path path;
    std::shared_ptr<FileDescription> file;
  };
  SysResult<Final> ResolveFinal(const ResolveContext& ctx, std::string_view path);
  // All but the last component, for create/unlink/rename.
  SysResult<ParentAndName> ResolveParent(const ResolveContext& ctx, std::string_view path);
  // One step from a directory: handles ".", "..", mounts; checks search permission on
  // `dir`. Does not follow a symlink result.
  // `last`: name is the path's last component (see ResolveContext::open_flags).
  // `ahead`: where the walk goes next, for a lookup that is not the last
  // (Inode::LookupAhead).
  SysResult<Path> Step(const ResolveContext& ctx, const Path& dir, std::string_view name,
                       bool last = false, const WalkAhead* ahead = nullptr);

  // --- operations (mode arguments are before umask; the VFS applies ctx.umask) ---
  SysResult<std::shared_ptr<FileDescription>> Open(const ResolveContext& ctx, std::string_view path,
                                                   int flags, uint32_t mode);
  // Reports an ENOENT of `op` on `path` to ctx.observer (masked secrets).
  void NoteAbsent(const ResolveContext& ctx, std::string_view op, std::string_view path);
  // Opens an already-resolved path (permission and type checks included).
  SysResult<std::shared_ptr<FileDescription>> OpenPath(const ResolveContext& ctx, const Path& p,
                                                       int flags);
  // execve's lookup: follows symlinks; ENOENT/ENOTDIR/ELOOP/ENAMETOOLONG from resolution;
  // EACCES unless a regular file with execute permission on a mount without noexec. The
  // description is opened read-only even without read permission (an --x binary runs).
  SysResult<std::shared_ptr<FileDescription>> OpenForExec(const ResolveContext& ctx,
                                                          std::string_view path);
  SysStatus Mkdir(const ResolveContext& ctx, std::string_view path, uint32_t mode);
  SysStatus Mknod(const ResolveContext& ctx, std::string_view path, uint32_t mode, uint64_t dev);
  SysStatus Rmdir(const ResolveContext& ctx, std::string_view path);
  SysStatus Unlink(const ResolveContext& ctx, std::string_view path);
  SysStatus Symlink(const ResolveContext& ctx, std::string_view target, std::string_view path);
  // follow: AT_SYMLINK_FOLLOW on oldpath.
  SysStatus Link(const ResolveContext& old_ctx, std::string_view old_path,
                 const ResolveContext& new_ctx, std::string_view new_path, bool follow);
  SysStatus Rename(const ResolveContext& old_ctx, std::string_view old_path,
                   const ResolveContext& new_ctx, std::string_view new_path, uint32_t flags);
  SysResult<std::string> Readlink(const ResolveContext& ctx, std::string_view path);
  // Permission-checked attribute change on a resolved path (chmod/chown/utimes/truncate).
  SysStatus SetAttr(const ResolveContext& ctx, const Path& p, SetAttrRequest req);
  // access/faccessat: mode is R_OK|W_OK|X_OK or F_OK; checks with ctx.creds as given
  // (the caller builds real-uid creds unless AT_EACCESS).
  SysStatus Access(const ResolveContext& ctx, const Path& p, int mode);

  // Sandbox path of `p` as seen from `root` ("/" for root itself); paths outside
  // `root` are shown from the real root; unlinked ones get " (deleted)".
  static std::string PathOf(const Path& p, const Path& root);
  // Whether changes under `p` are worth an audit record: not /proc, not /dev.
  static bool Audited(const Path& p);
  // Reports a denial of `op` on `p` (or on `name` in directory `p`) that failed with
  // `err` to ctx.observer, with the reason the policy gives: EROFS names the read-only
  // mount, EACCES/EPERM the emulated uid. Other errors are not denials.
  static void NoteDenied(const ResolveContext& ctx, std::string_view op, const Path& p,
                         std::string_view name, int err);
  std::string PathOf(const Path& p) const { return PathOf(p, root()); }
  // inotify/dnotify watches on this namespace's files (vfs/notify.h).
  const std::shared_ptr<NotifyHub>& notify() const { return notify_; }

 private:
  SysResult<std::shared_ptr<FileDescription>> OpenImpl(const ResolveContext& ctx,
                                                       std::string_view path, int flags,
                                                       uint32_t mode);
  // `tail`: when `path` is a symlink's target in the middle of a walk, the components
  // that walk goes on with afterwards (only lookups ahead see them).
  SysResult<Path> WalkComponents(const ResolveContext& ctx, Path cur, std::string_view path,
                                 bool follow_last, int* symlinks, bool* trailing_slash,
                                 std::string* last, const WalkAhead* tail = nullptr);
  SysResult<Path> FollowLink(const ResolveContext& ctx, const Path& dir, const Path& link,
                             int* symlinks, const WalkAhead* tail = nullptr);
  Path CrossMounts(Path p) const;
  // Keeps recently looked-up dentries alive so hot paths (/usr/lib/...) are not re-walked
  // through the gofer on every call. Bounded: each entry may pin a gofer handle (a host
  // FD in the gofer). Writable gofer mounts are skipped: their host side may change.
  void KeepRecent(const Mount& m, std::shared_ptr<Dentry> d);
  // Unlinked objects must not be pinned (tmpfs data stays charged while referenced).
  void DropRecent(const Dentry* d);
  static constexpr size_t kRecentDentries = 256;
  std::vector<std::shared_ptr<Dentry>> recent_;
  size_t recent_next_ = 0;
  uint64_t next_mount_id_ = 1;
  std::shared_ptr<NotifyHub> notify_ = std::make_shared<NotifyHub>();
  std::shared_ptr<Mount> root_mount_;
  // (parent mount, mountpoint dentry) -> mounts stacked there, newest last.
  std::map<std::pair<const Mount*, const Dentry*>, std::vector<std::shared_ptr<Mount>>> mounts_;
};

}  // namespace usentry::sentry::vfs

#endif  // USENTRY_SENTRY_VFS_VFS_H_
