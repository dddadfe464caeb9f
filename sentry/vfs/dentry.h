// Dentry, Mount and Path: the cached name tree the VFS walks, the mount tree on top of
// it, and the (mount, dentry) pair that names a place in the sandbox namespace.
//
// Ownership: a Dentry holds its parent strongly and its children weakly (a cache), so a
// subtree lives exactly as long as something (a Path in an FD, a cwd, a mount) uses it.
// Mounts are owned by the Vfs; a Path holds its Mount strongly.
#ifndef USENTRY_SENTRY_VFS_DENTRY_H_
#define USENTRY_SENTRY_VFS_DENTRY_H_

#include <map>
#include <memory>
#include <string>

#include "sentry/vfs/inode.h"

namespace usentry::sentry::vfs {

class Dentry;
class Mount;
class NotifyHub;

class Dentry : public std::enable_shared_from_this<Dentry> {
 public:
  // `parent` is null for a filesystem root.
  Dentry(std::string name, std::shared_ptr<Dentry> parent, std::shared_ptr<Inode> inode);

  const std::string& name() const { return name_; }
  const std::shared_ptr<Dentry>& parent() const { return parent_; }
  const std::shared_ptr<Inode>& inode() const { return inode_; }
  // Unlinked (or renamed-over) dentries stay valid for their holders but are no longer
  // reachable by name; PathOf appends " (deleted)" like Linux.
  bool dead() const { return dead_; }

  // Cached child, or nullptr.
  std::shared_ptr<Dentry> CachedChild(const std::string& name);
  // Child for `inode` under `name`, reusing the cached one if it has the same inode.
  std::shared_ptr<Dentry> ChildFor(const std::string& name, std::shared_ptr<Inode> inode);
  // Cache bookkeeping after namespace changes (called by the VFS).
  void Forget(const std::string& name);  // marks the cached child dead, drops it
  void MoveChild(const std::string& old_name, Dentry& new_parent, const std::string& new_name);
  void ExchangeChildren(const std::string& a, Dentry& other_dir, const std::string& b);

  // Number of mounts whose mountpoint is this dentry (rmdir/rename refuse EBUSY).
  int mount_count = 0;

 private:
  std::string name_;
  std::shared_ptr<Dentry> parent_;
  std::shared_ptr<Inode> inode_;
  std::map<std::string, std::weak_ptr<Dentry>> children_;
  bool dead_ = false;
};

// Mount flags.
inline constexpr int kMountReadOnly = 1;
inline constexpr int kMountNoExec = 2;

class Mount {
 public:
  Mount(uint64_t id, std::shared_ptr<Filesystem> fs, std::shared_ptr<Dentry> root, int flags,
        std::shared_ptr<Mount> parent, std::shared_ptr<Dentry> mountpoint);

  uint64_t id() const { return id_; }
  Filesystem& fs() const { return *fs_; }
  const std::shared_ptr<Filesystem>& fs_ptr() const { return fs_; }
  const std::shared_ptr<Dentry>& root() const { return root_; }
  int flags() const { return flags_; }
  bool read_only() const { return flags_ & kMountReadOnly; }
  // Null for the root mount.
  const std::shared_ptr<Mount>& parent() const { return parent_; }
  const std::shared_ptr<Dentry>& mountpoint() const { return mountpoint_; }

  // Change notification of the Vfs this mount belongs to (set by the Vfs).
  std::shared_ptr<NotifyHub> notify;

 private:
  uint64_t id_;
  std::shared_ptr<Filesystem> fs_;
  std::shared_ptr<Dentry> root_;
  int flags_;
  std::shared_ptr<Mount> parent_;
  std::shared_ptr<Dentry> mountpoint_;
};

// A place in the sandbox namespace. Both members are null for anonymous files (pipes,
// sockets, eventfds...).
struct Path {
  std::shared_ptr<Mount> mount;
  std::shared_ptr<Dentry> dentry;

  bool valid() const { return mount && dentry; }
  Inode* inode() const { return dentry ? dentry->inode().get() : nullptr; }
  bool operator==(const Path& o) const { return mount == o.mount && dentry == o.dentry; }
};

// Where a magic link points (Inode::GetMagicLink): a place in the namespace, or for
// anonymous files (pipes, sockets) the open description itself. Opening a magic link to
// an anonymous file calls its FileDescription::Reopen (a new description of the same
// object, like Linux); stat of it stats that description.
struct MagicLink {
  Path path;
  std::shared_ptr<FileDescription> file;
};

}  // namespace usentry::sentry::vfs

#endif  // USENTRY_SENTRY_VFS_DENTRY_H_
