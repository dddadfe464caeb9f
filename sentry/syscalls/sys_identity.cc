// Credentials syscalls: the emulated identity used by VFS permission checks. None of
// this changes the sentry's host identity.
#include <grp.h>

#include "sentry/mm/memory_manager.h"
#include "sentry/syscalls/sys_info.h"

namespace usentry::sentry {

namespace {

constexpr uint32_t kNoChange = static_cast<uint32_t>(-1);
constexpr int kNgroupsMax = 65536;

// Linux's rule for unprivileged set*id: the new id must be one of real/effective/saved.
bool Allowed(const Credentials& c, uint32_t id, bool gid) {
  if (c.euid == 0) return true;
  if (gid) return id == c.rgid || id == c.egid || id == c.sgid;
  return id == c.ruid || id == c.euid || id == c.suid;
}

SyscallResult CopyOutTriple(Task& t, const SyscallArgs& a, uint32_t r, uint32_t e, uint32_t s) {
  RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(0), r));
  RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(1), e));
  RETURN_IF_ERRNO(t.mm().CopyOutObj(a.ptr(2), s));
  return 0;
}

SyscallResult SetResId(Task& t, uint32_t r, uint32_t e, uint32_t s, bool gid) {
  Credentials& c = t.creds();
  for (uint32_t id : {r, e, s}) {
    if (id != kNoChange && !Allowed(c, id, gid)) return Errno{EPERM};
  }
  if (gid) {
    if (r != kNoChange) c.rgid = r;
    if (e != kNoChange) c.egid = e;
    if (s != kNoChange) c.sgid = s;
    c.fsgid = c.egid;
  } else {
    if (r != kNoChange) c.ruid = r;
    if (e != kNoChange) c.euid = e;
    if (s != kNoChange) c.suid = s;
    c.fsuid = c.euid;
  }
  return 0;
}

}  // namespace

SyscallResult SysGetuid(Task& t, const SyscallArgs&) { return t.creds().ruid; }
SyscallResult SysGeteuid(Task& t, const SyscallArgs&) { return t.creds().euid; }
SyscallResult SysGetgid(Task& t, const SyscallArgs&) { return t.creds().rgid; }
SyscallResult SysGetegid(Task& t, const SyscallArgs&) { return t.creds().egid; }

SyscallResult SysGetresuid(Task& t, const SyscallArgs& a) {
  const Credentials& c = t.creds();
  return CopyOutTriple(t, a, c.ruid, c.euid, c.suid);
}

SyscallResult SysGetresgid(Task& t, const SyscallArgs& a) {
  const Credentials& c = t.creds();
  return CopyOutTriple(t, a, c.rgid, c.egid, c.sgid);
}

SyscallResult SysSetuid(Task& t, const SyscallArgs& a) {
  uint32_t id = a.u32(0);
  if (id == kNoChange) return Errno{EINVAL};
  // Privileged setuid sets all three; unprivileged only the effective id.
  if (t.creds().euid == 0) return SetResId(t, id, id, id, false);
  return SetResId(t, kNoChange, id, kNoChange, false);
}

SyscallResult SysSetgid(Task& t, const SyscallArgs& a) {
  uint32_t id = a.u32(0);
  if (id == kNoChange) return Errno{EINVAL};
  if (t.creds().euid == 0) return SetResId(t, id, id, id, true);
  return SetResId(t, kNoChange, id, kNoChange, true);
}

SyscallResult SysSetreuid(Task& t, const SyscallArgs& a) {
  return SetResId(t, a.u32(0), a.u32(1), kNoChange, false);
}

SyscallResult SysSetregid(Task& t, const SyscallArgs& a) {
  return SetResId(t, a.u32(0), a.u32(1), kNoChange, true);
}

SyscallResult SysSetresuid(Task& t, const SyscallArgs& a) {
  return SetResId(t, a.u32(0), a.u32(1), a.u32(2), false);
}

SyscallResult SysSetresgid(Task& t, const SyscallArgs& a) {
  return SetResId(t, a.u32(0), a.u32(1), a.u32(2), true);
}

SyscallResult SysGetgroups(Task& t, const SyscallArgs& a) {
  int size = a.i32(0);
  const auto& groups = t.creds().groups;
  if (size < 0) return Errno{EINVAL};
  if (size == 0) return groups.size();
  if (static_cast<size_t>(size) < groups.size()) return Errno{EINVAL};
  RETURN_IF_ERRNO(t.mm().CopyOut(a.ptr(1), groups.data(), groups.size() * sizeof(gid_t)));
  return groups.size();
}

SyscallResult SysSetgroups(Task& t, const SyscallArgs& a) {
  int size = a.i32(0);
  if (size < 0 || size > kNgroupsMax) return Errno{EINVAL};
  if (t.creds().euid != 0) return Errno{EPERM};
  std::vector<gid_t> groups(size);
  RETURN_IF_ERRNO(t.mm().CopyIn(a.ptr(1), groups.data(), size * sizeof(gid_t)));
  t.creds().groups = std::move(groups);
  return 0;
}

SyscallResult SysSetfsuid(Task& t, const SyscallArgs& a) {
  Credentials& c = t.creds();
  uint32_t old = c.fsuid;
  uint32_t id = a.u32(0);
  if (id != kNoChange && (Allowed(c, id, false) || id == c.fsuid)) c.fsuid = id;
  return old;
}

SyscallResult SysSetfsgid(Task& t, const SyscallArgs& a) {
  Credentials& c = t.creds();
  uint32_t old = c.fsgid;
  uint32_t id = a.u32(0);
  if (id != kNoChange && (Allowed(c, id, true) || id == c.fsgid)) c.fsgid = id;
  return old;
}

}  // namespace usentry::sentry
