// FindHostVdso: the vDSO block from /proc/self/maps.
#include "platform/host_vdso.h"

#include <sys/auxv.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <mutex>

namespace usentry::platform {
namespace {

HostVdso Read() {
  HostVdso v;
  const uint64_t ehdr = getauxval(AT_SYSINFO_EHDR);
  if (ehdr == 0) return v;
  FILE* f = fopen("/proc/self/maps", "re");
  if (f == nullptr) return v;
  char line[512];
  while (fgets(line, sizeof(line), f) != nullptr) {
    unsigned long long lo = 0, hi = 0;
    char perms[8] = {};
    char name[64] = {};
    if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %63s", &lo, &hi, perms, name) != 4) continue;
    if (strcmp(name, "[vdso]") != 0 && strncmp(name, "[vvar", 5) != 0) continue;
    HostVdso::Part p{lo, hi, 0, name};
    if (perms[0] == 'r') p.prot |= PROT_READ;
    if (perms[1] == 'w') p.prot |= PROT_WRITE;
    if (perms[2] == 'x') p.prot |= PROT_EXEC;
    if (!v.parts.empty() && v.parts.back().end != p.start) {
      fclose(f);
      return HostVdso{};  // not one block: leave the vDSO out
    }
    v.parts.push_back(p);
  }
  fclose(f);
  if (v.parts.empty()) return HostVdso{};
  v.start = v.parts.front().start;
  v.end = v.parts.back().end;
  if (ehdr < v.start || ehdr >= v.end) return HostVdso{};
  v.ehdr = ehdr;
  return v;
}

}  // namespace

const HostVdso& FindHostVdso() {
  static std::once_flag once;
  static HostVdso* vdso = nullptr;
  std::call_once(once, [] { vdso = new HostVdso(Read()); });
  return *vdso;
}

const HostVdso* VdsoWithin(uint64_t lowest, uint64_t limit) {
  const HostVdso& v = FindHostVdso();
  if (!v.present() || v.start < lowest || v.end > limit) return nullptr;
  return &v;
}

}  // namespace usentry::platform
