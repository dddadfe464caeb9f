// netgate's confinement (its allowlist is netgate_filter.cc; docs/security.md, "netgate").
#include "sentry/confine/netgate_confine.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/unique_fd.h"
#include "sentry/confine/bpf_programs.h"

namespace usentry::sentry::confine {
namespace {

// An empty directory, entered as root and removed: no path names anything any more.
ConfineLayer EnterEmptyRoot() {
  ConfineLayer layer{"empty-root", false, ""};
  char dir[] = "/tmp/usentry-netgate-root-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    layer.detail = absl::StrCat("mkdtemp: ", strerror(errno));
    return layer;
  }
  UniqueFd parent(open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC));
  const char* name = dir + strlen("/tmp/");
  // Without CAP_SYS_CHROOT, a user namespace of our own grants it (the host network
  // namespace stays ours: only the credentials change).
  bool ok = chroot(dir) == 0;
  if (!ok && errno == EPERM && geteuid() != 0 && unshare(CLONE_NEWUSER) == 0) {
    ok = chroot(dir) == 0;
  }
  int err = errno;
  if (!ok) {
    rmdir(dir);
    layer.detail = absl::StrCat("chroot: ", strerror(err));
    return layer;
  }
  if (chdir("/") != 0 || !parent.valid() || unlinkat(parent.get(), name, AT_REMOVEDIR) != 0) {
    layer.detail = absl::StrCat("leaving the old root: ", strerror(errno));
    return layer;
  }
  layer.applied = true;
  layer.detail = "an empty, deleted directory";
  return layer;
}

}  // namespace

absl::StatusOr<ConfineReport> ConfineNetgate() {
  ConfineReport report;
  const bool host_root = geteuid() == 0;
  report.layers.push_back(EnterEmptyRoot());  // may enter a user namespace (not root)
  report.layers.push_back(DropCapabilities(true, host_root ? kSetIdCapabilities : 0));
  report.layers.push_back(BecomeHostNobody(host_root));
  RETURN_IF_ERROR(LockDown(report, "netgate", NetgateBpfProgram(),
                           [](uint32_t action) { return BuildNetgateFilter(action); }));
  return report;
}

}  // namespace usentry::sentry::confine
