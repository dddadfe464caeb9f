// epoll(7): an epoll instance as an open file. It holds interest items keyed by (file
// description, fd number) like Linux, learns about readiness changes through callback
// waiters on each watched file's wait queue, and keeps a ready list from which
// epoll_wait takes events (level-triggered items go back on the list after being
// reported; edge-triggered ones wait for the next Notify; one-shot ones are disabled
// until EPOLL_CTL_MOD re-arms them).
//
// Lifetimes: items do not own the watched descriptions. An item disappears when its
// description is released (FileDescription::ReleaseWatcher), when it is deleted, or
// with the epoll itself; a queue destroyed before the item is forgotten through
// Waiter::QueueDestroyed. All methods run under Kernel::mu.
#ifndef USENTRY_SENTRY_FSIMPL_EPOLL_H_
#define USENTRY_SENTRY_FSIMPL_EPOLL_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "sentry/kernel/sys_result.h"
#include "sentry/kernel/wait_queue.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry::fsimpl {

// struct epoll_event of x86-64 (packed: 12 bytes).
struct __attribute__((packed)) EpollEvent {
  uint32_t events;
  uint64_t data;
};
static_assert(sizeof(EpollEvent) == 12);

// Flag bits of epoll_event.events that are not poll bits.
inline constexpr uint32_t kEpollExclusive = 1u << 28;
inline constexpr uint32_t kEpollWakeup = 1u << 29;
inline constexpr uint32_t kEpollOneShot = 1u << 30;
inline constexpr uint32_t kEpollEt = 1u << 31;
inline constexpr uint32_t kEpollFlagBits =
    kEpollExclusive | kEpollWakeup | kEpollOneShot | kEpollEt;

// Most epoll-in-epoll links one chain may have (Linux's EP_MAX_NESTS, counted above and
// below the epoll being added to, as Linux 6.x does).
inline constexpr int kEpollMaxNests = 4;

class EpollDescription : public vfs::FileDescription {
 public:
  explicit EpollDescription(int flags);
  ~EpollDescription() override;

  // EPOLL_CTL_ADD/MOD/DEL on (file, fd). The syscall layer has done the EBADF, EPERM
  // (file not pollable) and EINVAL (self, EPOLLEXCLUSIVE) checks. Add: EEXIST, ELOOP.
  // Modify/Delete: ENOENT; Modify of an EPOLLEXCLUSIVE item: EINVAL.
  SysStatus Add(const std::shared_ptr<vfs::FileDescription>& file, int fd, EpollEvent ev);
  SysStatus Modify(vfs::FileDescription* file, int fd, EpollEvent ev);
  SysStatus Delete(vfs::FileDescription* file, int fd);

  // Takes up to `max` ready events off the ready list (non-blocking).
  std::vector<EpollEvent> Collect(size_t max);

  EventMask Readiness(EventMask mask) override;
  WaitQueue* wait_queue() override { return &wq_; }
  std::string AnonName() const override { return "anon_inode:[eventpoll]"; }
  // One "tfd:" line per item, in key order like Linux's tree.
  std::string FdInfo() override;

 private:
  class Item;
  using Key = std::pair<vfs::FileDescription*, int>;

  // Puts `item` on the ready list (if not there) and wakes our own waiters.
  void MakeReady(Item* item);
  void RemoveFromReady(Item* item);
  // The events `item` reports now (0 if disabled or nothing ready).
  EventMask Poll(Item* item);
  // Unregisters an item from its file (queue, release watcher, nesting links).
  void Forget(Item* item);
  // Forgets and destroys an item.
  void Erase(Item* item);

  // Longest chain of epolls this one watches, transitively (0: none); -1 if `stop` is
  // among them (a cycle).
  int DepthBelow(EpollDescription* stop);
  // Longest chain of epolls watching this one, transitively (0: none).
  int DepthAbove();

  std::map<Key, std::unique_ptr<Item>> items_;
  // Epolls with an item on this one (once per item), for the nesting limit.
  std::multiset<EpollDescription*> parents_;
  std::list<Item*> ready_;
  WaitQueue wq_;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_EPOLL_H_
