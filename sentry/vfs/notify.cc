// NotifyHub: which watches an event reaches (see notify.h).
#include "sentry/vfs/notify.h"

#include <algorithm>
#include <string>

#include "sentry/vfs/dentry.h"

namespace usentry::sentry::vfs {

void NotifyHub::Add(std::shared_ptr<Dentry> dentry, NotifyWatcher* owner, int wd, uint32_t mask) {
  const Inode* key = dentry->inode().get();
  watches_[key].push_back(Watch{owner, wd, mask, std::move(dentry)});
}

void NotifyHub::SetMask(const Inode* inode, NotifyWatcher* owner, int wd, uint32_t mask) {
  auto it = watches_.find(inode);
  if (it == watches_.end()) return;
  for (Watch& w : it->second) {
    if (w.owner == owner && w.wd == wd) w.mask = mask;
  }
}

void NotifyHub::Remove(const Inode* inode, NotifyWatcher* owner, int wd) {
  auto it = watches_.find(inode);
  if (it == watches_.end()) return;
  std::vector<Watch>& v = it->second;
  v.erase(std::remove_if(v.begin(), v.end(),
                         [&](const Watch& w) { return w.owner == owner && w.wd == wd; }),
          v.end());
  if (v.empty()) watches_.erase(it);
}

void NotifyHub::Drop(const Inode* inode, NotifyWatcher* owner, int wd) {
  Remove(inode, owner, wd);
  owner->Dropped(wd);
}

void NotifyHub::Emit(const Inode* inode, uint32_t mask, uint32_t cookie, std::string_view name) {
  auto it = watches_.find(inode);
  if (it == watches_.end()) return;
  // Delivering may end a watch (IN_ONESHOT), so the matches are taken first.
  struct Match {
    NotifyWatcher* owner;
    int wd;
  };
  std::vector<Match> matches;
  for (const Watch& w : it->second) {
    if (w.mask & mask & IN_ALL_EVENTS) matches.push_back({w.owner, w.wd});
  }
  for (const Match& m : matches) {
    if (m.owner->Deliver(m.wd, mask, cookie, name)) Drop(inode, m.owner, m.wd);
  }
}

void NotifyHub::DropAll(const Inode* inode) {
  auto it = watches_.find(inode);
  if (it == watches_.end()) return;
  std::vector<Watch> gone = std::move(it->second);
  watches_.erase(it);
  for (const Watch& w : gone) w.owner->Dropped(w.wd);
}

NotifyHub* HubOf(const Path& p) { return p.mount ? p.mount->notify.get() : nullptr; }

void NotifyFile(const Path& p, uint32_t mask) {
  NotifyHub* hub = HubOf(p);
  if (!hub || hub->empty() || !p.dentry) return;
  Inode* inode = p.inode();
  if (inode->IsDir()) mask |= IN_ISDIR;
  // The parent's watch first, as Linux queues them for one inotify instance.
  const std::shared_ptr<Dentry>& parent = p.dentry->parent();
  if (parent && (mask & kChildEvents)) hub->Emit(parent->inode().get(), mask, 0, p.dentry->name());
  hub->Emit(inode, mask, 0, "");
}

void NotifySelf(const Path& p, uint32_t mask) {
  NotifyHub* hub = HubOf(p);
  if (!hub || hub->empty() || !p.dentry) return;
  hub->Emit(p.inode(), mask | (p.inode()->IsDir() ? IN_ISDIR : 0), 0, "");
}

void DropWatches(const Path& p) {
  NotifyHub* hub = HubOf(p);
  if (!hub || hub->empty() || !p.dentry) return;
  hub->DropAll(p.inode());
}

void NotifyEntry(const Path& dir, std::string_view name, uint32_t mask, bool is_dir,
                 uint32_t cookie) {
  NotifyHub* hub = HubOf(dir);
  if (!hub || hub->empty() || !dir.dentry) return;
  hub->Emit(dir.inode(), mask | (is_dir ? IN_ISDIR : 0), cookie, name);
}

}  // namespace usentry::sentry::vfs
