// Extended attributes: the sandbox exposes none. Reads find nothing (ENODATA, an empty
// list) so ls/cp/tar treat files as attribute-free; writes are refused with ENOTSUP.
// The overlay's own "trusted.overlay.*" markers are never visible here.
#include <fcntl.h>

#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/sys_file.h"
#include "sentry/syscalls/sys_file_util.h"

namespace usentry::sentry {
namespace {

constexpr size_t kXattrNameMax = 255;
constexpr int kXattrCreate = 1;   // XATTR_CREATE
constexpr int kXattrReplace = 2;  // XATTR_REPLACE

// Validates the target (path or fd) and the attribute name like Linux does before
// looking anything up.
SysStatus CheckTarget(Task& task, mm::GuestAddr path, bool follow) {
  ASSIGN_OR_RETURN_ERRNO(Target t, ResolveTarget(task, AT_FDCWD, path, follow, false));
  (void)t;
  return SysOk();
}

SysStatus CheckName(Task& task, mm::GuestAddr name_addr) {
  ASSIGN_OR_RETURN_ERRNO(std::string name, task.mm().CopyInString(name_addr, kXattrNameMax + 1));
  if (name.empty() || name.size() > kXattrNameMax) return Errno{ERANGE};
  return SysOk();
}

SyscallResult Get(Task& task, SysStatus target, mm::GuestAddr name) {
  RETURN_IF_ERRNO(target);
  RETURN_IF_ERRNO(CheckName(task, name));
  return Errno{ENODATA};
}

SyscallResult Set(Task& task, SysStatus target, mm::GuestAddr name, int flags) {
  RETURN_IF_ERRNO(target);
  if (flags & ~(kXattrCreate | kXattrReplace)) return Errno{EINVAL};
  RETURN_IF_ERRNO(CheckName(task, name));
  return Errno{ENOTSUP};
}

SysStatus FdTarget(Task& task, int fd) {
  ASSIGN_OR_RETURN_ERRNO(auto f, GetIoFile(task, fd));
  (void)f;
  return SysOk();
}

}  // namespace

SyscallResult SysGetxattr(Task& task, const SyscallArgs& args) {
  return Get(task, CheckTarget(task, args.ptr(0), true), args.ptr(1));
}
SyscallResult SysLgetxattr(Task& task, const SyscallArgs& args) {
  return Get(task, CheckTarget(task, args.ptr(0), false), args.ptr(1));
}
SyscallResult SysFgetxattr(Task& task, const SyscallArgs& args) {
  return Get(task, FdTarget(task, args.i32(0)), args.ptr(1));
}

SyscallResult SysListxattr(Task& task, const SyscallArgs& args) {
  RETURN_IF_ERRNO(CheckTarget(task, args.ptr(0), true));
  return uint64_t{0};
}
SyscallResult SysLlistxattr(Task& task, const SyscallArgs& args) {
  RETURN_IF_ERRNO(CheckTarget(task, args.ptr(0), false));
  return uint64_t{0};
}
SyscallResult SysFlistxattr(Task& task, const SyscallArgs& args) {
  RETURN_IF_ERRNO(FdTarget(task, args.i32(0)));
  return uint64_t{0};
}

SyscallResult SysSetxattr(Task& task, const SyscallArgs& args) {
  return Set(task, CheckTarget(task, args.ptr(0), true), args.ptr(1), args.i32(4));
}
SyscallResult SysLsetxattr(Task& task, const SyscallArgs& args) {
  return Set(task, CheckTarget(task, args.ptr(0), false), args.ptr(1), args.i32(4));
}
SyscallResult SysFsetxattr(Task& task, const SyscallArgs& args) {
  return Set(task, FdTarget(task, args.i32(0)), args.ptr(1), args.i32(4));
}

SyscallResult SysRemovexattr(Task& task, const SyscallArgs& args) {
  return Get(task, CheckTarget(task, args.ptr(0), true), args.ptr(1));
}
SyscallResult SysLremovexattr(Task& task, const SyscallArgs& args) {
  return Get(task, CheckTarget(task, args.ptr(0), false), args.ptr(1));
}
SyscallResult SysFremovexattr(Task& task, const SyscallArgs& args) {
  return Get(task, FdTarget(task, args.i32(0)), args.ptr(1));
}

}  // namespace usentry::sentry
