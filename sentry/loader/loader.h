// Loader: builds a fresh address space for execve — ELF segments (static, static-PIE,
// dynamic with PT_INTERP loaded from the sandbox filesystem), "#!" scripts, and the
// initial stack with argv, envp and the auxiliary vector.
#ifndef USENTRY_SENTRY_LOADER_LOADER_H_
#define USENTRY_SENTRY_LOADER_LOADER_H_

#include <memory>
#include <string>
#include <vector>

#include "sentry/kernel/sys_result.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/memory_manager.h"

namespace usentry::sentry::loader {

// Top of the app's address range: below the platform's stub region
// (platform::AddressSpace::MaxUserAddress() is at least this).
inline constexpr uint64_t kMaxUserAddress = 0x7ff000000000;
// Where position-independent main executables go (Linux: ELF_ET_DYN_BASE, unrandomized).
inline constexpr uint64_t kPieBase = 0x555555554000;
inline constexpr uint64_t kStackSize = 8ull << 20;

struct LoadedImage {
  std::shared_ptr<mm::MemoryManager> mm;
  uint64_t entry = 0;  // where execution starts (the interpreter's entry if any)
  uint64_t sp = 0;     // initial stack pointer (points at argc)
  std::string comm;    // thread name: basename of the executed file
};

// Loads `path` (resolved in `task`'s filesystem view) with `argv`/`envp`. Does not touch
// the task: the caller commits the result (point of no return) or drops it.
// Errors are execve's: ENOENT, EACCES, ENOEXEC, ELOOP (script nesting), E2BIG, ENOMEM.
SysResult<LoadedImage> Load(Task& task, const std::string& path, std::vector<std::string> argv,
                            const std::vector<std::string>& envp);

}  // namespace usentry::sentry::loader

#endif  // USENTRY_SENTRY_LOADER_LOADER_H_
