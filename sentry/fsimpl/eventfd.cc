// eventfd counter semantics (Linux fs/eventfd.c behaviour).
#include "sentry/fsimpl/eventfd.h"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "absl/strings/str_format.h"

namespace usentry::sentry::fsimpl {
namespace {

// Linux numbers eventfds for fdinfo (an IDA from 0; ours never reuses numbers).
std::atomic<uint32_t> next_eventfd_id{0};

}  // namespace

EventfdDescription::EventfdDescription(uint64_t initial, int flags, bool semaphore)
    : FileDescription(vfs::Path{}, O_RDWR | (flags & O_NONBLOCK)),
      count_(initial),
      semaphore_(semaphore),
      id_(next_eventfd_id++) {}

std::string EventfdDescription::FdInfo() {
  return absl::StrFormat("eventfd-count: %16x\neventfd-id: %d\neventfd-semaphore: %d\n", count_,
                         id_, semaphore_ ? 1 : 0);
}

SysResult<size_t> EventfdDescription::Read(Task*, absl::Span<const iovec> dst, int64_t offset) {
  if (offset != -1) return Errno{ESPIPE};
  ASSIGN_OR_RETURN_ERRNO(size_t len, vfs::IovecsLength(dst));
  if (len < sizeof(uint64_t)) return Errno{EINVAL};
  if (count_ == 0) return Errno{EAGAIN};
  uint64_t v = semaphore_ ? 1 : count_;
  count_ -= v;
  vfs::CopyToIovecs(dst, &v, sizeof(v));
  wq_.Notify(POLLOUT);
  return sizeof(uint64_t);
}

SysResult<size_t> EventfdDescription::Write(Task*, absl::Span<const iovec> src, int64_t offset) {
  if (offset != -1) return Errno{ESPIPE};
  ASSIGN_OR_RETURN_ERRNO(size_t len, vfs::IovecsLength(src));
  if (len < sizeof(uint64_t)) return Errno{EINVAL};
  uint64_t v = 0;
  vfs::CopyFromIovecs(src, &v, sizeof(v));
  if (v == ~uint64_t{0}) return Errno{EINVAL};
  if (v > kEventfdMax - count_) return Errno{EAGAIN};
  count_ += v;
  // Every write is a new edge for edge-triggered watchers, even of 0 (as Linux wakes).
  wq_.Notify(POLLIN);
  return sizeof(uint64_t);
}

EventMask EventfdDescription::Readiness(EventMask mask) {
  EventMask r = 0;
  // Linux reports the plain bits only (no POLLRDNORM/POLLWRNORM).
  if (count_ > 0) r |= POLLIN;
  if (count_ < kEventfdMax) r |= POLLOUT;
  if (count_ == ~uint64_t{0}) r |= POLLERR;  // unreachable through write; Linux's rule
  return r & (mask | POLLERR);
}

}  // namespace usentry::sentry::fsimpl
