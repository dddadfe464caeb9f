// memfd_create: anonymous memory-backed files (sentry/fsimpl/memfd.h).
#include <sys/mman.h>

#include "sentry/fsimpl/memfd.h"
#include "sentry/kernel/kernel.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/sys_splice.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry {

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

// memfd_create(name, flags). MFD_HUGETLB is EINVAL (no huge pages here).
SyscallResult SysMemfdCreate(Task& task, const SyscallArgs& args) {
  unsigned flags = args.u32(1);
  constexpr unsigned kKnown = MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL | MFD_EXEC;
  if (flags & ~kKnown) return Errno{EINVAL};
  if ((flags & MFD_NOEXEC_SEAL) && (flags & MFD_EXEC)) return Errno{EINVAL};
  SysResult<std::string> name = task.mm().CopyInString(args.ptr(0), fsimpl::kMemfdNameMax + 1);
  if (!name.ok()) return Errno{name.error() == ENAMETOOLONG ? EINVAL : name.error()};
  if (name->size() > fsimpl::kMemfdNameMax) return Errno{EINVAL};
  const bool sealing = flags & (MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
  auto file = fsimpl::NewMemfd(&task.kernel().memory_file(), *std::move(name), sealing,
                               task.creds().euid, task.creds().egid);
  if (flags & MFD_NOEXEC_SEAL) {
    auto& m = static_cast<fsimpl::MemfdDescription&>(*file);
    RETURN_IF_ERRNO(m.file().AddSeals(0x0020 /* F_SEAL_EXEC */));
  }
  ASSIGN_OR_RETURN_ERRNO(int fd, task.fds().Install(std::move(file), flags & MFD_CLOEXEC));
  return static_cast<uint64_t>(fd);
}

}  // namespace usentry::sentry
