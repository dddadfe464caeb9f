// Dentry cache bookkeeping and Mount construction.
#include "sentry/vfs/dentry.h"

namespace usentry::sentry::vfs {

Dentry::Dentry(std::string name, std::shared_ptr<Dentry> parent, std::shared_ptr<Inode> inode)
    : name_(std::move(name)), parent_(std::move(parent)), inode_(std::move(inode)) {}

std::shared_ptr<Dentry> Dentry::CachedChild(const std::string& name) {
  auto it = children_.find(name);
  if (it == children_.end()) return nullptr;
  auto d = it->second.lock();
  if (!d) children_.erase(it);
  return d;
}

std::shared_ptr<Dentry> Dentry::ChildFor(const std::string& name, std::shared_ptr<Inode> inode) {
  if (auto d = CachedChild(name)) {
    if (d->inode_ == inode) return d;
    // The name now refers to another object (changed behind the cache, e.g. overlay
    // copy-up replaced the inode object): keep the old dentry valid but unreachable.
    // Its mounts (if any) keep working through their own references.
    if (d->mount_count > 0) return d;
    d->dead_ = true;
  }
  auto d = std::make_shared<Dentry>(name, shared_from_this(), std::move(inode));
  children_[name] = d;
  return d;
}

void Dentry::Forget(const std::string& name) {
  auto it = children_.find(name);
  if (it == children_.end()) return;
  if (auto d = it->second.lock()) d->dead_ = true;
  children_.erase(it);
}

void Dentry::MoveChild(const std::string& old_name, Dentry& new_parent,
                       const std::string& new_name) {
  new_parent.Forget(new_name);
  auto it = children_.find(old_name);
  if (it == children_.end()) return;
  auto d = it->second.lock();
  children_.erase(it);
  if (!d) return;
  d->name_ = new_name;
  d->parent_ = new_parent.shared_from_this();
  new_parent.children_[new_name] = d;
}

void Dentry::ExchangeChildren(const std::string& a, Dentry& other_dir, const std::string& b) {
  std::shared_ptr<Dentry> da = CachedChild(a);
  std::shared_ptr<Dentry> db = other_dir.CachedChild(b);
  children_.erase(a);
  other_dir.children_.erase(b);
  if (da) {
    da->name_ = b;
    da->parent_ = other_dir.shared_from_this();
    other_dir.children_[b] = da;
  }
  if (db) {
    db->name_ = a;
    db->parent_ = shared_from_this();
    children_[a] = db;
  }
}

Mount::Mount(uint64_t id, std::shared_ptr<Filesystem> fs, std::shared_ptr<Dentry> root, int flags,
             std::shared_ptr<Mount> parent, std::shared_ptr<Dentry> mountpoint)
    : id_(id),
      fs_(std::move(fs)),
      root_(std::move(root)),
      flags_(flags),
      parent_(std::move(parent)),
      mountpoint_(std::move(mountpoint)) {}

}  // namespace usentry::sentry::vfs
