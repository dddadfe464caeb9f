// Emulated pseudo-terminals (pty(7)): /dev/ptmx and /dev/pts/ptmx open a new master and
// create /dev/pts/N, the replica ("slave"); the line discipline between them is in
// pty_line.h. The sandbox's /dev/pts directory (Devpts) also shows the host terminal as
// /dev/pts/0 when usentry's stdio is one (tty.h); emulated indices then start at 1.
//
// Job control: each pair has a foreground process group and a controlling session
// (TIOCSCTTY, or a session leader opening the replica without O_NOCTTY); /dev/tty opens
// the caller's session's controlling pty. Closing the master hangs the replica up (reads
// 0, writes EIO) and sends the controlling session's leader SIGHUP and SIGCONT; closing
// every replica makes master reads EIO once the output is drained. TIOCSTI is refused.
//
// All of it runs under Kernel::mu.
#ifndef USENTRY_SENTRY_FSIMPL_PTY_H_
#define USENTRY_SENTRY_FSIMPL_PTY_H_

#include <cstdint>
#include <map>
#include <memory>

#include "sentry/kernel/sys_result.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/inode.h"

namespace usentry::sentry {
class Kernel;
class Task;
}  // namespace usentry::sentry

namespace usentry::sentry::fsimpl {

class Pty;
class PtsNodeInode;

// The /dev/pts directory: "ptmx", the host tty as "0" (if any), one node per live pair.
class Devpts : public vfs::Inode {
 public:
  // `fs`: the devfs filesystem the directory belongs to; `kernel` may be null (tests).
  // `host_tty_node` (may be null) is shown as "0". `ptmx_attr`: of the ptmx node.
  static std::shared_ptr<Devpts> Create(std::shared_ptr<vfs::Filesystem> fs, Kernel* kernel,
                                        vfs::Attr dir_attr, vfs::Attr ptmx_attr,
                                        std::shared_ptr<vfs::Inode> host_tty_node);
  Devpts(std::shared_ptr<vfs::Filesystem> fs, Kernel* kernel, vfs::Attr dir_attr,
         std::shared_ptr<vfs::Inode> host_tty_node);

  vfs::Filesystem& fs() override { return *fs_; }
  SysResult<vfs::Attr> Stat() override { return attr_; }
  SysStatus SetAttr(const vfs::SetAttrRequest&) override { return Errno{EPERM}; }
  uint32_t FileType() override { return S_IFDIR; }
  SysResult<std::shared_ptr<vfs::Inode>> Lookup(std::string_view name) override;
  SysResult<std::vector<vfs::DirEntry>> ReadDir() override;
  bool CachesChildren() override { return false; }  // pts/N come and go

  // The inode of /dev/ptmx and /dev/pts/ptmx: every open makes a new pair.
  std::shared_ptr<vfs::Inode> ptmx() const { return ptmx_; }
  // Opens a new master: allocates an index and makes /dev/pts/N. EIO without a kernel.
  SysResult<std::shared_ptr<vfs::FileDescription>> OpenMaster(const vfs::Path& path, int flags);
  // /dev/tty: a replica description of the pty controlling `task`'s session, opened
  // through `path`; null when the session has no controlling pty.
  std::shared_ptr<vfs::FileDescription> OpenControlling(Task& task, const vfs::Path& path,
                                                        int flags);
  // The live pair controlling session `sid`, or null.
  std::shared_ptr<Pty> ControllingPty(int32_t sid) const;

  // Called by a master when it closes: /dev/pts/N disappears.
  void Remove(int index);

 private:
  std::shared_ptr<vfs::Filesystem> fs_;
  Kernel* kernel_;
  vfs::Attr attr_;
  std::shared_ptr<vfs::Inode> ptmx_;
  std::shared_ptr<vfs::Inode> host_tty_;
  std::map<int, std::shared_ptr<PtsNodeInode>> nodes_;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_PTY_H_
