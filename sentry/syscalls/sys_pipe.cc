// pipe(2) and pipe2(2): a new anonymous pipe, its read end then its write end installed
// at the two lowest free FDs.
#include "sentry/syscalls/sys_pipe.h"

#include <fcntl.h>

#include "sentry/fsimpl/pipe.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry {
namespace {

SyscallResult DoPipe(Task& task, mm::GuestAddr fds_addr, int flags) {
  // O_DIRECT (packet mode) is not supported yet: refusing beats silently streaming.
  if (flags & ~(O_CLOEXEC | O_NONBLOCK)) return Errno{EINVAL};
  fsimpl::PipeEnds ends = fsimpl::NewPipe(flags & O_NONBLOCK);
  bool cloexec = flags & O_CLOEXEC;
  vfs::FdTable& fds = task.fds();
  ASSIGN_OR_RETURN_ERRNO(int rfd, fds.Install(ends.read, cloexec));
  auto wfd = fds.Install(ends.write, cloexec);
  if (!wfd.ok()) {
    (void)fds.Remove(rfd);
    return Errno{wfd.error()};
  }
  int32_t out[2] = {rfd, wfd.value()};
  auto st = task.mm().CopyOut(fds_addr, out, sizeof(out));
  if (!st.ok()) {
    // Linux installs the FDs only after the copy succeeded; undo ours.
    (void)fds.Remove(rfd);
    (void)fds.Remove(wfd.value());
    return Errno{st.error()};
  }
  return uint64_t{0};
}

}  // namespace

SyscallResult SysPipe(Task& task, const SyscallArgs& args) { return DoPipe(task, args.ptr(0), 0); }

SyscallResult SysPipe2(Task& task, const SyscallArgs& args) {
  return DoPipe(task, args.ptr(0), args.i32(1));
}

}  // namespace usentry::sentry
