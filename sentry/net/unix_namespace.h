// UnixNamespace: the AF_UNIX names of one sandbox — abstract names, and which socket is
// bound to which socket inode of the sandbox's filesystem. Sockets never reach the host:
// a path bind creates an S_IFSOCK node through the VFS (only filesystems the sentry owns,
// tmpfs and the overlay's upper layer, can make one) and records the binding here.
//
// All methods run under Kernel::mu. Entries are weak: a socket removes its names when it
// is destroyed, and a lookup of a dying socket finds nothing.
#ifndef USENTRY_SENTRY_NET_UNIX_NAMESPACE_H_
#define USENTRY_SENTRY_NET_UNIX_NAMESPACE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "sentry/kernel/sys_result.h"
#include "sentry/net/unix_address.h"

namespace usentry::sentry {
class Task;
}

namespace usentry::sentry::net {

class UnixSocket;

// Identity of a socket inode: (st_dev, st_ino) as the VFS reports them (stable for the
// node's life, and across renames and hard links, like Linux's inode-based lookup).
using InodeKey = std::pair<uint64_t, uint64_t>;

class UnixNamespace {
 public:
  UnixNamespace() = default;
  UnixNamespace(const UnixNamespace&) = delete;
  UnixNamespace& operator=(const UnixNamespace&) = delete;

  // Abstract names are per socket type, as on Linux (whose abstract hash mixes in the
  // type): a stream and a datagram socket may hold the same name, and connecting to a
  // name only finds sockets of the caller's type.
  // EADDRINUSE if the abstract name is taken by a live socket of that type.
  SysStatus BindAbstract(int type, const std::string& name, const std::shared_ptr<UnixSocket>& s);
  std::shared_ptr<UnixSocket> FindAbstract(int type, const std::string& name) const;
  // A free 5-hex-digit abstract name, as Linux's autobind picks.
  SysResult<std::string> AutobindName(int type);

  void BindInode(InodeKey key, const std::shared_ptr<UnixSocket>& s);
  std::shared_ptr<UnixSocket> FindInode(InodeKey key) const;

  // Drops `s`'s entries (only if they still point at `s`).
  void UnbindAbstract(int type, const std::string& name, const UnixSocket* s);
  void UnbindInode(InodeKey key, const UnixSocket* s);

 private:
  struct Entry {
    const UnixSocket* raw;
    std::weak_ptr<UnixSocket> socket;
  };
  std::map<std::pair<int, std::string>, Entry> abstract_;
  std::map<InodeKey, Entry> inodes_;
  uint32_t next_autobind_ = 0;
};

// The socket an address names, for connect/sendto: abstract names from the namespace,
// paths resolved through the task's VFS view (ENOENT/ENOTDIR/ELOOP..., EACCES without
// write permission on the node, ECONNREFUSED for a node that is not a socket or that no
// live socket is bound to).
// `type` is the caller's socket type (abstract lookups only see that type).
SysResult<std::shared_ptr<UnixSocket>> LookupUnixAddress(Task& task, const UnixAddress& addr,
                                                         int type);

// Creates the socket node for a path bind (mode 0777 & ~umask). EADDRINUSE if the name
// exists; other errors from the VFS (EROFS, EACCES, ENOENT, EPERM on filesystems that
// cannot hold sentry sockets such as --mount trees). Returns the node's identity.
SysResult<InodeKey> CreateSocketNode(Task& task, const std::string& path);
// Removes a node made by CreateSocketNode when the bind fails afterwards.
void RemoveSocketNode(Task& task, const std::string& path);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_UNIX_NAMESPACE_H_
