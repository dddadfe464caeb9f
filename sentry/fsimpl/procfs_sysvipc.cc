#include "sentry/fsimpl/procfs_sysvipc.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/fsimpl/procfs_nodes.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/limits.h"
#include "sentry/kernel/shm_registry.h"
#include "sentry/mm/memory_file.h"

namespace usentry::sentry::fsimpl {

std::string GenerateSysvipcShm(const std::vector<ShmStatus>& segments,
                               const std::function<uint64_t(const ShmStatus&)>& rss) {
  std::string out =
      "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  "
      "cgid      atime      dtime      ctime                   rss                  swap\n";
  for (const ShmStatus& s : segments) {
    absl::StrAppendFormat(
        &out, "%10d %10d  %4o %21u %5u %5u  %5u %5u %5u %5u %5u %10u %10u %10u %21u %21u\n",
        s.perm.key, s.id, s.perm.mode, s.size, s.cpid, s.lpid, s.nattch, s.perm.uid, s.perm.gid,
        s.perm.cuid, s.perm.cgid, s.atime, s.dtime, s.ctime, rss(s), 0);
  }
  return out;
}

std::shared_ptr<vfs::Inode> NewSysvipcDir(std::shared_ptr<vfs::Filesystem> fs, Kernel& k) {
  Kernel* kp = &k;
  auto shm = NewProcFile(fs, "sysvipc/shm", ProcOwner{}, [kp]() -> SysResult<std::string> {
    const int memfd = kp->memory_file().fd();
    return GenerateSysvipcShm(kp->shm().List(), [memfd](const ShmStatus& s) {
      return ResidentInRange(memfd, s.pages->offset(), s.pages->len());
    });
  });
  return NewProcStaticDir(fs, "sysvipc", {{"shm", shm}});
}

std::map<std::string, std::shared_ptr<vfs::Inode>> NewShmSysctls(
    std::shared_ptr<vfs::Filesystem> fs) {
  auto fixed = [&](const char* name, std::string value) {
    return NewProcFile(fs, absl::StrCat("sys/kernel/", name), ProcOwner{},
                       [value = std::move(value)]() -> SysResult<std::string> { return value; });
  };
  return {{"shmmax", fixed("shmmax", absl::StrCat(kShmMax, "\n"))},
          {"shmall", fixed("shmall", absl::StrCat(kShmAll, "\n"))},
          {"shmmni", fixed("shmmni", absl::StrCat(kShmMni, "\n"))},
          // Segments outlive their creator until IPC_RMID, Linux's default.
          {"shm_rmid_forced", fixed("shm_rmid_forced", "0\n")}};
}

}  // namespace usentry::sentry::fsimpl
