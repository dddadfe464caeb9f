// HostPoller: epoll set + one thread; see host_poller.h for the arming protocol.
#include "sentry/fsimpl/host_poller.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace usentry::sentry::fsimpl {
namespace {

// poll bits and epoll bits have the same values for the events we use.
static_assert(POLLIN == EPOLLIN && POLLOUT == EPOLLOUT && POLLPRI == EPOLLPRI &&
              POLLERR == EPOLLERR && POLLHUP == EPOLLHUP);
constexpr uint32_t kArmable = EPOLLIN | EPOLLOUT | EPOLLPRI;

}  // namespace

HostPoller::HostPoller(absl::Mutex* mu) : mu_(mu) {}

HostPoller::~HostPoller() {
  Stop();
  if (epfd_ >= 0) close(epfd_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

void HostPoller::Stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof(one));
  thread_.join();
}

absl::Status HostPoller::Start() {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) return absl::ErrnoToStatus(errno, "epoll_create1(EPOLL_CLOEXEC)");
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) return absl::ErrnoToStatus(errno, "eventfd(0, EFD_CLOEXEC|EFD_NONBLOCK)");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = stop_fd_;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, stop_fd_, &ev) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("epoll_ctl(ADD, eventfd ", stop_fd_, ")"));
  }
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void HostPoller::Subscribe(int fd, const void* key, Callback cb) {
  fds_[fd].subs.emplace_back(key, std::move(cb));
}

void HostPoller::Unsubscribe(int fd, const void* key) {
  auto it = fds_.find(fd);
  if (it == fds_.end()) return;
  auto& subs = it->second.subs;
  subs.erase(
      std::remove_if(subs.begin(), subs.end(), [key](const auto& s) { return s.first == key; }),
      subs.end());
  if (!subs.empty()) return;
  if (it->second.added) epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
  fds_.erase(it);
}

SysStatus HostPoller::Arm(int fd, EventMask events) {
  Entry& e = fds_[fd];
  uint32_t want = (events & kArmable) | e.armed;
  // Already armed for these: the pending notification will come (or is being
  // dispatched and waits for the lock we hold).
  if (e.added && e.armed != 0 && (e.armed | (events & kArmable)) == e.armed) return SysOk();
  epoll_event ev{};
  ev.events = want | EPOLLONESHOT;
  ev.data.fd = fd;
  int op = e.added ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  if (epoll_ctl(epfd_, op, fd, &ev) != 0) return Errno{errno};
  e.added = true;
  e.armed = want;
  return SysOk();
}

void HostPoller::Dispatch(int fd, uint32_t epoll_events) {
  absl::MutexLock lock(mu_);
  auto it = fds_.find(fd);
  if (it == fds_.end()) return;  // unsubscribed meanwhile
  it->second.armed = 0;          // EPOLLONESHOT disabled it
  EventMask ev = epoll_events & (POLLIN | POLLOUT | POLLPRI | POLLERR | POLLHUP);
  // A hang-up or error wakes readers and writers alike: their next attempt sees it.
  if (ev & (POLLERR | POLLHUP)) ev |= POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
  if (ev & POLLIN) ev |= POLLRDNORM;
  if (ev & POLLOUT) ev |= POLLWRNORM;
  // Callbacks may unsubscribe (never here, but be safe): iterate over a copy.
  auto subs = it->second.subs;
  for (auto& [key, cb] : subs) cb(ev);
}

void HostPoller::Run() {
  epoll_event events[16];
  while (true) {
    int n = epoll_wait(epfd_, events, 16, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // the epoll fd is gone: nothing more to watch
    }
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == stop_fd_) return;
      Dispatch(events[i].data.fd, events[i].events);
    }
  }
}

}  // namespace usentry::sentry::fsimpl
