// Stub process helpers shared by the platforms (see stub_process.h).
#include "platform/stub_process.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace usentry::platform {

absl::StatusOr<uint64_t> MapCodeAtFirstFree(
    std::span<const uint64_t> candidates, uint64_t size,
    const std::function<std::vector<uint8_t>(uint64_t address)>& generate,
    const std::string& what) {
  for (uint64_t addr : candidates) {
    void* want = reinterpret_cast<void*>(addr);
    void* got = mmap(want, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == MAP_FAILED) {
      if (errno == EEXIST) continue;
      return ErrnoStatus(absl::StrFormat("mmap(0x%x, %s, MAP_FIXED_NOREPLACE)", addr, what));
    }
    if (got != want) {  // kernels before 4.17 treat the flag as a hint
      munmap(got, size);
      continue;
    }
    const std::vector<uint8_t> code = generate(addr);
    std::memcpy(got, code.data(), std::min<size_t>(code.size(), size));
    if (mprotect(got, size, PROT_READ | PROT_EXEC) != 0) {
      const int err = errno;
      munmap(got, size);
      return ErrnoStatus(absl::StrFormat("mprotect(0x%x, %s, PROT_READ|PROT_EXEC)", addr, what),
                         err);
    }
    return addr;
  }
  return absl::ResourceExhaustedError(
      absl::StrFormat("mmap(%s): every candidate address is in use in the sentry", what));
}

void KillAndReap(pid_t pid) {
  ::kill(pid, SIGKILL);
  // After SIGKILL the only remaining wait result is its death.
  for (;;) {
    int st = 0;
    const pid_t r = waitpid(pid, &st, __WALL);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || WIFEXITED(st) || WIFSIGNALED(st)) break;
  }
}

std::optional<absl::Duration> ProcessCpuTime(pid_t pid) {
  // MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED), as glibc's clock_getcpuclockid builds it.
  constexpr clockid_t kSched = 2;
  const clockid_t clock = static_cast<clockid_t>((~static_cast<unsigned>(pid) << 3) | kSched);
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return std::nullopt;
  return absl::DurationFromTimespec(ts);
}

}  // namespace usentry::platform
