// NewPlatform: the explicit platform factory (no static registrars).
#include "platform/platform.h"

#include <fcntl.h>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "platform/ptrace/ptrace_platform.h"
#include "platform/systrap/systrap_platform.h"

namespace usentry::platform {

void PrewarmPlatform(const std::string& name) {
  if (name == "systrap" || name == "auto") (void)systrap::GetStubCode();
}

absl::StatusOr<std::unique_ptr<Platform>> NewPlatform(const std::string& name,
                                                      MemoryFileInfo memory_file,
                                                      PlatformOptions options) {
  if (name != "ptrace" && name != "systrap") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "NewPlatform(name=\"%s\"): unknown platform; available: ptrace, systrap", name));
  }
  // Read while /proc is still there: the stubs generated later keep the block.
  (void)FindHostVdso();
  if (memory_file.fd < 0 || fcntl(memory_file.fd, F_GETFD) < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "NewPlatform(name=\"%s\"): memory file fd %d is not an open file descriptor", name,
        memory_file.fd));
  }
  if (name == "systrap") {
    ASSIGN_OR_RETURN(std::unique_ptr<systrap::SystrapPlatform> p,
                     systrap::SystrapPlatform::Create(memory_file, options));
    return std::unique_ptr<Platform>(std::move(p));
  }
  return std::unique_ptr<Platform>(new ptrace::PtracePlatform(memory_file));
}

}  // namespace usentry::platform
