// inotify instances: watches, the event queue and its read(2) format (Linux
// fs/notify/inotify behaviour: identical consecutive events merge, one IN_Q_OVERFLOW
// past the queue limit, IN_IGNORED when a watch ends).
#include "sentry/fsimpl/inotify.h"

#include <poll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "sentry/kernel/task.h"
#include "sentry/vfs/dentry.h"

namespace usentry::sentry::fsimpl {
namespace {

// Watches in the sandbox, for the limit (Linux counts per user; one sandbox is one
// user's share here).
int total_watches = 0;

}  // namespace

int InotifyDescription::instances_ = 0;

size_t InotifyDescription::Event::Size() const {
  // The name is NUL-terminated and padded to a multiple of the header's size.
  size_t len = name.empty() ? 0
                            : (name.size() + 1 + sizeof(inotify_event) - 1) /
                                  sizeof(inotify_event) * sizeof(inotify_event);
  return sizeof(inotify_event) + len;
}

InotifyDescription::InotifyDescription(std::shared_ptr<vfs::NotifyHub> hub, int flags)
    : FileDescription(vfs::Path{}, O_RDONLY | (flags & O_NONBLOCK)), hub_(std::move(hub)) {
  ++instances_;
}

InotifyDescription::~InotifyDescription() {
  for (const auto& [wd, w] : watches_) hub_->Remove(w.inode, this, wd);
  total_watches -= static_cast<int>(watches_.size());
  --instances_;
}

SysResult<int> InotifyDescription::AddWatch(const vfs::Path& p, uint32_t mask) {
  const vfs::Inode* inode = p.inode();
  auto it = by_inode_.find(inode);
  if (it != by_inode_.end()) {
    if (mask & IN_MASK_CREATE) return Errno{EEXIST};
    Watch& w = watches_.at(it->second);
    w.mask = (mask & IN_MASK_ADD) ? (w.mask | mask) : mask;
    w.mask &= ~IN_MASK_ADD;
    hub_->SetMask(inode, this, it->second, w.mask);
    return it->second;
  }
  if (total_watches >= kInotifyMaxUserWatches) return Errno{ENOSPC};
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr a, p.dentry->inode()->Stat());
  int wd = next_wd_++;
  watches_[wd] = Watch{inode, mask & ~(IN_MASK_ADD | IN_MASK_CREATE), a.ino, a.dev};
  by_inode_[inode] = wd;
  ++total_watches;
  hub_->Add(p.dentry, this, wd, watches_[wd].mask);
  return wd;
}

SysStatus InotifyDescription::RemoveWatch(int wd) {
  auto it = watches_.find(wd);
  if (it == watches_.end()) return Errno{EINVAL};
  hub_->Remove(it->second.inode, this, wd);
  Dropped(wd);
  return SysOk();
}

bool InotifyDescription::Deliver(int wd, uint32_t mask, uint32_t cookie, std::string_view name) {
  auto it = watches_.find(wd);
  if (it == watches_.end()) return false;
  Queue(Event{wd, mask & ~vfs::kRenameInDir, cookie, std::string(name)});
  return it->second.mask & IN_ONESHOT;
}

void InotifyDescription::Dropped(int wd) {
  auto it = watches_.find(wd);
  if (it == watches_.end()) return;
  by_inode_.erase(it->second.inode);
  watches_.erase(it);
  --total_watches;
  Queue(Event{wd, IN_IGNORED, 0, ""});
}

void InotifyDescription::Queue(Event e) {
  if (!queue_.empty()) {
    const Event& last = queue_.back();
    if (last.wd == e.wd && last.mask == e.mask && last.cookie == e.cookie && last.name == e.name) {
      return;  // merged with the identical event before it
    }
  }
  if (queue_.size() >= kInotifyMaxQueuedEvents) {
    if (queue_.back().mask == IN_Q_OVERFLOW) return;
    e = Event{-1, IN_Q_OVERFLOW, 0, ""};
  }
  queued_bytes_ += e.Size();
  queue_.push_back(std::move(e));
  wq_.Notify(POLLIN | POLLRDNORM);
}

SysResult<size_t> InotifyDescription::Read(Task*, absl::Span<const iovec> dst, int64_t offset) {
  if (offset != -1) return Errno{ESPIPE};
  ASSIGN_OR_RETURN_ERRNO(size_t room, vfs::IovecsLength(dst));
  if (queue_.empty()) return Errno{EAGAIN};
  std::vector<char> out;
  while (!queue_.empty()) {
    const Event& e = queue_.front();
    size_t size = e.Size();
    if (out.size() + size > room) break;
    size_t at = out.size();
    out.resize(at + size, '\0');
    inotify_event h{};
    h.wd = e.wd;
    h.mask = e.mask;
    h.cookie = e.cookie;
    h.len = static_cast<uint32_t>(size - sizeof(inotify_event));
    memcpy(out.data() + at, &h, sizeof(h));
    memcpy(out.data() + at + sizeof(h), e.name.data(), e.name.size());
    queued_bytes_ -= size;
    queue_.pop_front();
  }
  if (out.empty()) return Errno{EINVAL};  // the first event does not fit
  vfs::CopyToIovecs(dst, out.data(), out.size());
  return out.size();
}

EventMask InotifyDescription::Readiness(EventMask mask) {
  return queue_.empty() ? 0 : (POLLIN | POLLRDNORM) & mask;
}

SysResult<uint64_t> InotifyDescription::Ioctl(Task& task, uint64_t cmd, uint64_t arg) {
  if (cmd != FIONREAD) return Errno{ENOTTY};
  int n = static_cast<int>(queued_bytes_);
  RETURN_IF_ERRNO(task.mm().CopyOutObj(mm::GuestAddr(arg), n));
  return uint64_t{0};
}

std::string InotifyDescription::FdInfo() {
  std::string out;
  for (const auto& [wd, w] : watches_) {
    absl::StrAppendFormat(&out, "inotify wd:%x ino:%x sdev:%x mask:%x ignored_mask:0\n", wd, w.ino,
                          w.dev, w.mask & (IN_ALL_EVENTS | IN_ONESHOT | IN_EXCL_UNLINK));
  }
  return out;
}

}  // namespace usentry::sentry::fsimpl
