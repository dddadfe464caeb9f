// Builds the sandbox's filesystem view: "/" = overlay(tmpfs upper, gofer tree "root"
// lower), a fresh tmpfs at /tmp (1777), empty /dev and /proc directories (devfs/procfs
// get mounted there by their owners through Vfs::MountAt), the sandbox's own files
// (/etc/resolv.conf, /etc/hosts, /etc/hostname: new files of the upper layer, so they
// hide what the view has there, symlinks included, and the app may change them), each
// --mount at its target, and the workdir.
#ifndef USENTRY_SENTRY_FSIMPL_SANDBOX_VFS_H_
#define USENTRY_SENTRY_FSIMPL_SANDBOX_VFS_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gofer/client.h"
#include "sentry/mm/memory_file.h"
#include "sentry/sentry_main.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry::fsimpl {

struct VfsConfig {
  std::vector<MountSpec> mounts;
  std::string workdir = "/workspace";
  uint64_t tmpfs_limit_bytes = 1ull << 30;  // shared by the overlay upper and /tmp
  mm::MemoryFile* memory_file = nullptr;    // holds tmpfs file data; required
  // Called when a write needs more than tmpfs_limit_bytes (ByteBudget::on_exhausted).
  std::function<void(uint64_t limit, uint64_t wanted)> on_disk_full;
  // Files the sandbox brings along: {absolute path, content}, mode 0644, root-owned.
  std::vector<std::pair<std::string, std::string>> files;
  // The program's identity and home: the workdir and home, when the sandbox makes them
  // (they do not exist in the view), are made for it: owned by it, mode 0755.
  uint32_t app_uid = 0;
  uint32_t app_gid = 0;
  std::string home;
  // The gofer's host identity (the caller's): in --mount trees its files appear as the
  // program's and the program's as its (OwnerSwap in gofer_fs.h).
  uint32_t host_uid = 0;
  uint32_t host_gid = 0;
};

// `gofer` serves tree "root", and the mounts' trees too unless `mounts_gofer` is set;
// both must outlive the returned Vfs (a gofer fs keeps a pointer to its client).
absl::StatusOr<std::unique_ptr<vfs::Vfs>> BuildSandboxVfs(gofer::Client& gofer,
                                                          const VfsConfig& cfg,
                                                          gofer::Client* mounts_gofer = nullptr);

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_SANDBOX_VFS_H_
