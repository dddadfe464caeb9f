// Credentials: the emulated identity of a task. Permission checks in the VFS use these,
// never the host identity of the sentry.
#ifndef USENTRY_SENTRY_KERNEL_CREDENTIALS_H_
#define USENTRY_SENTRY_KERNEL_CREDENTIALS_H_

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace usentry::sentry {

struct Credentials {
  uid_t ruid = 0, euid = 0, suid = 0, fsuid = 0;
  gid_t rgid = 0, egid = 0, sgid = 0, fsgid = 0;
  std::vector<gid_t> groups;
  // Emulated capability sets (capget/capset, sys_sched.cc), bit N = capability N. They
  // apply while an id is 0 (capget reports none otherwise); other privilege checks use
  // euid == 0 and only consult these where a syscall names its capability.
  static constexpr uint64_t kAllCaps = (uint64_t{1} << 41) - 1;  // CAP_LAST_CAP = 40
  uint64_t cap_permitted = kAllCaps, cap_effective = kAllCaps, cap_inheritable = 0;

  // Root inside the sandbox bypasses DAC checks like CAP_DAC_OVERRIDE would. It never
  // grants anything on the host: the gofer and the policy decide that.
  bool IsRoot() const { return fsuid == 0; }
  // Whether a check that names capability `cap` (CAP_IPC_OWNER, CAP_SYS_NICE...) passes.
  bool HasCapability(int cap) const { return euid == 0 && ((cap_effective >> cap) & 1) != 0; }
  bool InGroup(gid_t g) const {
    return g == fsgid || std::find(groups.begin(), groups.end(), g) != groups.end();
  }
};

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_KERNEL_CREDENTIALS_H_
