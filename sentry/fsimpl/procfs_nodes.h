// Building blocks of procfs: files whose content is generated at open time (a snapshot,
// read-only), symlinks whose target is computed at readlink time, and directories
// whose entries are computed on lookup/readdir. They know nothing about tasks; the
// generators (closures) do. All calls happen under Kernel::mu.
#ifndef USENTRY_SENTRY_FSIMPL_PROCFS_NODES_H_
#define USENTRY_SENTRY_FSIMPL_PROCFS_NODES_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sentry/vfs/file_description.h"
#include "sentry/vfs/inode.h"

namespace usentry::sentry::fsimpl {

class ProcFilesystem : public vfs::Filesystem {
 public:
  ProcFilesystem() : Filesystem("proc") {}
  SysResult<struct statfs> StatFs() override;
};

// Stable inode number for a procfs path ("1234/status"), so that repeated lookups of
// the same file agree (find, du and tar compare st_ino).
uint64_t ProcIno(std::string_view key);

struct ProcOwner {
  uint32_t uid = 0;
  uint32_t gid = 0;
};

using ProcContent = std::function<SysResult<std::string>()>;
using ProcLookup = std::function<SysResult<std::shared_ptr<vfs::Inode>>(std::string_view)>;
using ProcList = std::function<SysResult<std::vector<vfs::DirEntry>>()>;

// A read-only file (mode 0444 unless given); opening for write is EACCES.
std::shared_ptr<vfs::Inode> NewProcFile(std::shared_ptr<vfs::Filesystem> fs, std::string_view key,
                                        ProcOwner owner, ProcContent content, uint32_t mode = 0444);
// `magic`, if set, makes the link "magic" (/proc/PID/fd/N): the VFS follows it to the
// object itself (Inode::GetMagicLink) rather than by its target text.
using ProcMagic = std::function<bool(vfs::MagicLink* out)>;
std::shared_ptr<vfs::Inode> NewProcSymlink(std::shared_ptr<vfs::Filesystem> fs,
                                           std::string_view key, ProcOwner owner,
                                           ProcContent target, ProcMagic magic = nullptr);
// A directory computed on each lookup/readdir.
std::shared_ptr<vfs::Inode> NewProcDir(std::shared_ptr<vfs::Filesystem> fs, std::string_view key,
                                       ProcOwner owner, ProcLookup lookup, ProcList list,
                                       uint32_t mode = 0555);
// A directory with fixed children.
std::shared_ptr<vfs::Inode> NewProcStaticDir(
    std::shared_ptr<vfs::Filesystem> fs, std::string_view key,
    std::map<std::string, std::shared_ptr<vfs::Inode>> kids);

// Description of a generated file: reads (and preads) a snapshot taken at open.
class ProcSnapshotDescription : public vfs::FileDescription {
 public:
  ProcSnapshotDescription(vfs::Path path, int flags, std::string data)
      : FileDescription(std::move(path), flags), data_(std::move(data)) {}
  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  SysResult<size_t> Write(Task*, absl::Span<const iovec>, int64_t) override { return Errno{EBADF}; }
  SysResult<int64_t> Seek(int64_t offset, int whence) override;
  const std::string& data() const { return data_; }

 private:
  std::string data_;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_PROCFS_NODES_H_
