// NotifyHub: filesystem change notification (inotify, dnotify) for changes made inside
// the sandbox. The VFS and the syscall layer report events on inodes; the hub hands
// each to the watches on that inode. Changes the host makes behind the sandbox's back
// (a rw --mount changed by a host process) are not seen, as in gVisor.
//
// One hub per Vfs, reached from any Path through its Mount. All calls run under
// Kernel::mu. With no watch anywhere every report returns at its first test.
#ifndef USENTRY_SENTRY_VFS_NOTIFY_H_
#define USENTRY_SENTRY_VFS_NOTIFY_H_

#include <sys/inotify.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace usentry::sentry::vfs {

class Dentry;
class Inode;
struct Path;

// Events a directory watch also gets for its children (with the child's name).
inline constexpr uint32_t kChildEvents = IN_ACCESS | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE |
                                         IN_CLOSE_NOWRITE | IN_OPEN | IN_MOVED_FROM | IN_MOVED_TO |
                                         IN_CREATE | IN_DELETE;

// Added to IN_MOVED_FROM when the entry stays in its directory (dnotify's DN_RENAME);
// never shown to inotify readers.
inline constexpr uint32_t kRenameInDir = 0x10000000;

// The owner of watches: an inotify instance or a dnotify registration.
class NotifyWatcher {
 public:
  // Event `mask` (with IN_ISDIR when the subject is a directory) matched watch `wd`.
  // `name` is the child's for a directory watch, else empty. Returns true to remove the
  // watch now (IN_ONESHOT); the hub then calls Dropped(wd).
  virtual bool Deliver(int wd, uint32_t mask, uint32_t cookie, std::string_view name) = 0;
  // The hub removed watch `wd` (its inode was deleted, or Deliver asked to).
  virtual void Dropped(int wd) = 0;

 protected:
  ~NotifyWatcher() = default;
};

class NotifyHub {
 public:
  // Adds watch `wd` of `owner` on `dentry`'s inode for the events in `mask`; the dentry
  // (and so the inode and its cached place in the tree) stays alive while watched.
  void Add(std::shared_ptr<Dentry> dentry, NotifyWatcher* owner, int wd, uint32_t mask);
  // Changes the events of an existing watch.
  void SetMask(const Inode* inode, NotifyWatcher* owner, int wd, uint32_t mask);
  // Removes a watch without telling its owner (the owner asked).
  void Remove(const Inode* inode, NotifyWatcher* owner, int wd);

  bool empty() const { return watches_.empty(); }
  // Reports `mask` on `inode` to its watches (name: the child's, for a directory watch).
  void Emit(const Inode* inode, uint32_t mask, uint32_t cookie, std::string_view name);
  // Drops every watch on `inode` (it is gone), telling each owner (IN_IGNORED).
  void DropAll(const Inode* inode);
  // A fresh cookie tying IN_MOVED_FROM to its IN_MOVED_TO.
  uint32_t NewCookie() { return ++last_cookie_; }

 private:
  struct Watch {
    NotifyWatcher* owner;
    int wd;
    uint32_t mask;
    std::shared_ptr<Dentry> dentry;
  };
  void Drop(const Inode* inode, NotifyWatcher* owner, int wd);
  std::unordered_map<const Inode*, std::vector<Watch>> watches_;
  uint32_t last_cookie_ = 0;
};

// The hub of the Vfs `p` belongs to, or null (anonymous files, test mounts without one).
NotifyHub* HubOf(const Path& p);

// An event on the file at `p` itself (IN_ACCESS, IN_MODIFY, IN_ATTRIB, IN_OPEN,
// IN_CLOSE_*): to the watches on it and, with its name, to those on its parent
// directory. IN_ISDIR is added for directories.
void NotifyFile(const Path& p, uint32_t mask);
// An event for the watches on `p`'s inode only (IN_ATTRIB of a link count change,
// IN_MOVE_SELF, IN_DELETE_SELF).
void NotifySelf(const Path& p, uint32_t mask);
// Ends every watch on `p`'s inode (it is gone): each owner queues IN_IGNORED.
void DropWatches(const Path& p);
// An event on the entry `name` of directory `dir` (IN_CREATE, IN_DELETE, IN_MOVED_*),
// whose subject is a directory when `is_dir`.
void NotifyEntry(const Path& dir, std::string_view name, uint32_t mask, bool is_dir,
                 uint32_t cookie = 0);

}  // namespace usentry::sentry::vfs

#endif  // USENTRY_SENTRY_VFS_NOTIFY_H_
