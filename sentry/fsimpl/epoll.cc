// epoll instances: interest items, the ready list, nested-epoll loop checks.
#include "sentry/fsimpl/epoll.h"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>

#include "absl/strings/str_format.h"

namespace usentry::sentry::fsimpl {

// One (file, fd) registration. It is a callback waiter on the file's queue and a
// release watcher of the file; it never owns the file.
class EpollDescription::Item : public Waiter, public vfs::FileDescription::ReleaseWatcher {
 public:
  Item(EpollDescription* ep, vfs::FileDescription* file, int fd, EpollEvent ev)
      : Waiter(nullptr), ep(ep), file(file), key(file, fd), ev(ev) {}

  void Notify(EventMask events) override {
    // A one-shot item that fired stays silent until EPOLL_CTL_MOD re-arms it; events
    // the item does not ask for are no edge for it.
    if ((ev.events & ~kEpollFlagBits & events) == 0) return;
    ep->MakeReady(this);
  }
  void QueueDestroyed(WaitQueue*) override { queue = nullptr; }
  void DescriptionReleased(vfs::FileDescription*) override {
    file = nullptr;
    ep->Erase(this);  // destroys *this: nothing may follow
  }

  EpollDescription* ep;
  vfs::FileDescription* file;  // null once released
  const Key key;               // keeps the released file's address: only compared
  EpollEvent ev;
  WaitQueue* queue = nullptr;  // where we are registered; null once it is gone
  bool on_ready = false;
  std::list<Item*>::iterator ready_it;
};

EpollDescription::EpollDescription(int flags) : FileDescription(vfs::Path{}, O_RDWR | flags) {}

EpollDescription::~EpollDescription() {
  for (auto& [key, item] : items_) Forget(item.get());
  ready_.clear();
  items_.clear();
}

int EpollDescription::DepthBelow(EpollDescription* stop) {
  int depth = 0;
  for (auto& [key, item] : items_) {
    auto* sub = dynamic_cast<EpollDescription*>(item->file);
    if (sub == nullptr) continue;
    if (sub == stop) return -1;
    int d = sub->DepthBelow(stop);
    if (d < 0) return -1;
    depth = std::max(depth, d + 1);
  }
  return depth;
}

int EpollDescription::DepthAbove() {
  int depth = 0;
  for (EpollDescription* p : parents_) depth = std::max(depth, p->DepthAbove() + 1);
  return depth;
}

SysStatus EpollDescription::Add(const std::shared_ptr<vfs::FileDescription>& file, int fd,
                                EpollEvent ev) {
  Key key{file.get(), fd};
  if (items_.count(key)) return Errno{EEXIST};
  auto* sub = dynamic_cast<EpollDescription*>(file.get());
  if (sub != nullptr) {
    // A cycle, or a chain of nested epolls longer than Linux allows.
    int below = sub == this ? -1 : sub->DepthBelow(this);
    if (below < 0 || below + 1 + DepthAbove() > kEpollMaxNests) return Errno{ELOOP};
    sub->parents_.insert(this);
  }
  // Errors and hang-ups are always reported, asked for or not.
  ev.events |= POLLERR | POLLHUP;
  auto owned = std::make_unique<Item>(this, file.get(), fd, ev);
  Item* item = owned.get();
  items_.emplace(key, std::move(owned));
  item->queue = file->wait_queue();
  // Registered for everything: MOD changes the interest without re-registering, and
  // Item::Notify filters.
  if (item->queue != nullptr) item->queue->Add(item, kAllEvents);
  file->AddReleaseWatcher(item);
  if (Poll(item) != 0) MakeReady(item);
  return SysOk();
}

SysStatus EpollDescription::Modify(vfs::FileDescription* file, int fd, EpollEvent ev) {
  auto it = items_.find(Key{file, fd});
  if (it == items_.end()) return Errno{ENOENT};
  Item* item = it->second.get();
  if (item->ev.events & kEpollExclusive) return Errno{EINVAL};
  ev.events |= POLLERR | POLLHUP;
  item->ev = ev;
  // Like Linux's ep_modify: a file already ready under the new interest is queued now,
  // which is how a one-shot item is re-armed without losing an edge.
  if (Poll(item) != 0) MakeReady(item);
  return SysOk();
}

SysStatus EpollDescription::Delete(vfs::FileDescription* file, int fd) {
  auto it = items_.find(Key{file, fd});
  if (it == items_.end()) return Errno{ENOENT};
  Erase(it->second.get());
  return SysOk();
}

void EpollDescription::Forget(Item* item) {
  if (item->queue != nullptr) item->queue->Remove(item);
  if (item->file == nullptr) return;
  item->file->RemoveReleaseWatcher(item);
  if (auto* sub = dynamic_cast<EpollDescription*>(item->file)) {
    sub->parents_.erase(sub->parents_.find(this));
  }
}

void EpollDescription::Erase(Item* item) {
  Forget(item);
  RemoveFromReady(item);
  Key key = item->key;  // erase destroys the item, key and all
  items_.erase(key);
}

void EpollDescription::MakeReady(Item* item) {
  if (!item->on_ready) {
    item->on_ready = true;
    item->ready_it = ready_.insert(ready_.end(), item);
  }
  // Our waiters: tasks in epoll_wait/poll on this epoll, and epolls watching this one.
  wq_.Notify(POLLIN | POLLRDNORM);
}

void EpollDescription::RemoveFromReady(Item* item) {
  if (!item->on_ready) return;
  ready_.erase(item->ready_it);
  item->on_ready = false;
}

EventMask EpollDescription::Poll(Item* item) {
  if (item->file == nullptr) return 0;
  EventMask want = item->ev.events & ~kEpollFlagBits;
  if (want == 0) return 0;  // a one-shot item that fired
  return item->file->Readiness(want) & want;
}

std::vector<EpollEvent> EpollDescription::Collect(size_t max) {
  std::vector<EpollEvent> out;
  // Work on a snapshot: level-triggered items re-queued below must not be seen twice.
  // splice keeps the items' iterators valid.
  std::list<Item*> batch;
  batch.splice(batch.end(), ready_);
  while (!batch.empty() && out.size() < max) {
    Item* item = batch.front();
    batch.pop_front();
    item->on_ready = false;
    EventMask revents = Poll(item);
    if (revents == 0) continue;  // no longer ready: dropped until the next Notify
    out.push_back({revents, item->ev.data});
    if (item->ev.events & kEpollOneShot) {
      item->ev.events &= kEpollFlagBits;  // disabled until EPOLL_CTL_MOD
    } else if (!(item->ev.events & kEpollEt) && !item->on_ready) {
      // Level-triggered: stays ready until a check finds it is not.
      item->on_ready = true;
      item->ready_it = ready_.insert(ready_.end(), item);
    }
  }
  // Items not looked at (maxevents reached) keep their place at the front.
  ready_.splice(ready_.begin(), batch);
  return out;
}

std::string EpollDescription::FdInfo() {
  std::string out;
  for (auto& [key, item] : items_) {
    uint64_t ino = 0, dev = 0;
    auto a = item->file->Stat();
    if (a.ok()) {
      ino = a->ino;
      dev = a->dev;
    }
    absl::StrAppendFormat(&out, "tfd: %8d events: %8x data: %16x  pos:%d ino:%x sdev:%x\n",
                          key.second, item->ev.events, item->ev.data, item->file->offset(), ino,
                          dev);
  }
  return out;
}

EventMask EpollDescription::Readiness(EventMask mask) {
  // Readable iff some queued item really has an event; stale ones leave the list.
  for (auto it = ready_.begin(); it != ready_.end();) {
    Item* item = *it;
    if (Poll(item) != 0) return (POLLIN | POLLRDNORM) & mask;
    it = ready_.erase(it);
    item->on_ready = false;
  }
  return 0;
}

}  // namespace usentry::sentry::fsimpl
