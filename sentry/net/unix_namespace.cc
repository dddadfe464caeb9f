// The sandbox's AF_UNIX name registry and path-based socket lookup.
#include "sentry/net/unix_namespace.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "absl/strings/str_format.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/net/unix_socket.h"
#include "sentry/vfs/fs_context.h"
#include "sentry/vfs/permissions.h"
#include "sentry/vfs/task_context.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry {

// Kernel::unix_namespace() lives here so that kernel.cc need not know the type.
const std::shared_ptr<net::UnixNamespace>& Kernel::unix_namespace() {
  if (!unix_ns_) unix_ns_ = std::make_shared<net::UnixNamespace>();
  return unix_ns_;
}

}  // namespace usentry::sentry

namespace usentry::sentry::net {

SysStatus UnixNamespace::BindAbstract(int type, const std::string& name,
                                      const std::shared_ptr<UnixSocket>& s) {
  if (FindAbstract(type, name)) return Errno{EADDRINUSE};
  abstract_[{type, name}] = Entry{s.get(), s};
  return SysOk();
}

std::shared_ptr<UnixSocket> UnixNamespace::FindAbstract(int type, const std::string& name) const {
  auto it = abstract_.find({type, name});
  return it == abstract_.end() ? nullptr : it->second.socket.lock();
}

SysResult<std::string> UnixNamespace::AutobindName(int type) {
  for (uint32_t tries = 0; tries < (1u << 20); ++tries) {
    std::string name = absl::StrFormat("%05x", next_autobind_);
    next_autobind_ = (next_autobind_ + 1) & 0xfffff;
    if (!FindAbstract(type, name)) return name;
  }
  return Errno{ENOSPC};
}

void UnixNamespace::BindInode(InodeKey key, const std::shared_ptr<UnixSocket>& s) {
  inodes_[key] = Entry{s.get(), s};
}

std::shared_ptr<UnixSocket> UnixNamespace::FindInode(InodeKey key) const {
  auto it = inodes_.find(key);
  return it == inodes_.end() ? nullptr : it->second.socket.lock();
}

void UnixNamespace::UnbindAbstract(int type, const std::string& name, const UnixSocket* s) {
  auto it = abstract_.find({type, name});
  if (it != abstract_.end() && it->second.raw == s) abstract_.erase(it);
}

void UnixNamespace::UnbindInode(InodeKey key, const UnixSocket* s) {
  auto it = inodes_.find(key);
  if (it != inodes_.end() && it->second.raw == s) inodes_.erase(it);
}

SysResult<std::shared_ptr<UnixSocket>> LookupUnixAddress(Task& task, const UnixAddress& addr,
                                                         int type) {
  const auto& ns = task.kernel().unix_namespace();
  if (addr.kind == UnixAddress::Kind::kAbstract) {
    auto s = ns->FindAbstract(type, addr.name);
    if (!s) return Errno{ECONNREFUSED};
    return s;
  }
  if (addr.kind != UnixAddress::Kind::kPath) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(vfs::ResolveContext ctx, vfs::ContextAt(task, AT_FDCWD, addr.name));
  ASSIGN_OR_RETURN_ERRNO(vfs::Path p, task.kernel().vfs().Resolve(ctx, addr.name, true));
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr a, p.inode()->Stat());
  if ((a.mode & S_IFMT) != S_IFSOCK) return Errno{ECONNREFUSED};
  RETURN_IF_ERRNO(vfs::CheckPermission(task.creds(), a, vfs::kMayWrite));
  auto s = ns->FindInode({a.dev, a.ino});
  if (!s) return Errno{ECONNREFUSED};
  if (s->type() != type) return Errno{EPROTOTYPE};
  return s;
}

SysResult<InodeKey> CreateSocketNode(Task& task, const std::string& path) {
  ASSIGN_OR_RETURN_ERRNO(vfs::ResolveContext ctx, vfs::ContextAt(task, AT_FDCWD, path));
  vfs::Vfs& v = task.kernel().vfs();
  SysStatus st = v.Mknod(ctx, path, S_IFSOCK | 0777, 0);
  if (!st.ok()) return Errno{st.error() == EEXIST ? EADDRINUSE : st.error()};
  ASSIGN_OR_RETURN_ERRNO(vfs::Path p, v.Resolve(ctx, path, false));
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr a, p.inode()->Stat());
  return InodeKey{a.dev, a.ino};
}

void RemoveSocketNode(Task& task, const std::string& path) {
  auto ctx = vfs::ContextAt(task, AT_FDCWD, path);
  if (ctx.ok()) (void)task.kernel().vfs().Unlink(ctx.value(), path);
}

}  // namespace usentry::sentry::net
