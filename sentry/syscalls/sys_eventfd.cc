// eventfd(2) and eventfd2: a new counter file (sentry/fsimpl/eventfd.h); read/write/poll
// go through the generic paths.
#include <fcntl.h>
#include <sys/eventfd.h>

#include <memory>

#include "sentry/fsimpl/eventfd.h"
#include "sentry/syscalls/sys_epoll.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry {
namespace {

SyscallResult CreateEventfd(Task& task, uint32_t initial, int flags) {
  if (flags & ~(EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE)) return Errno{EINVAL};
  auto file = std::make_shared<fsimpl::EventfdDescription>(initial, flags & EFD_NONBLOCK,
                                                           (flags & EFD_SEMAPHORE) != 0);
  ASSIGN_OR_RETURN_ERRNO(int fd, task.fds().Install(file, (flags & EFD_CLOEXEC) != 0));
  return static_cast<uint64_t>(fd);
}

}  // namespace

SyscallResult SysEventfd(Task& task, const SyscallArgs& args) {
  return CreateEventfd(task, args.u32(0), 0);
}

SyscallResult SysEventfd2(Task& task, const SyscallArgs& args) {
  return CreateEventfd(task, args.u32(0), args.i32(1));
}

}  // namespace usentry::sentry
