// What both platforms do the same way around their stub processes, on the sentry's
// side: placing the stub code at a fixed high address, and killing and reaping a stub.
#ifndef USENTRY_PLATFORM_STUB_PROCESS_H_
#define USENTRY_PLATFORM_STUB_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace usentry::platform {

// Maps `size` bytes at the first of `candidates` that is free in this process
// (MAP_FIXED_NOREPLACE), fills it with generate(address) and makes it read-only and
// executable. Returns the address. Forked stubs inherit the mapping at that address.
// `what` names the region in errors.
absl::StatusOr<uint64_t> MapCodeAtFirstFree(
    std::span<const uint64_t> candidates, uint64_t size,
    const std::function<std::vector<uint8_t>(uint64_t address)>& generate, const std::string& what);

// SIGKILLs `pid` (our child) and waits until it is reaped.
void KillAndReap(pid_t pid);

// The host's CPU-time figure for process `pid` (all its threads), or nullopt once it is
// gone. Linux lets any process read another's process CPU clock.
std::optional<absl::Duration> ProcessCpuTime(pid_t pid);

}  // namespace usentry::platform

#endif  // USENTRY_PLATFORM_STUB_PROCESS_H_
