#include "base/phases.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace usentry {
namespace {
bool g_phases = false;
}  // namespace

void EnablePhasesFromEnv() {
  const char* env = getenv("USENTRY_DEBUG_PHASES");
  g_phases = env != nullptr && strcmp(env, "1") == 0;
}

void Phase(const char* name) {
  if (!g_phases) return;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  char line[128];
  const int n = snprintf(line, sizeof(line), "usentry: phase %lld.%09ld %s\n",
                         static_cast<long long>(now.tv_sec), now.tv_nsec, name);
  if (n > 0)
    (void)!write(STDERR_FILENO, line, static_cast<size_t>(std::min<int>(n, sizeof(line) - 1)));
}

}  // namespace usentry
