// gofer fs: inodes backed by gofer Handles. Metadata and namespace operations are
// gofer::Client calls; file data moves with pread/pwrite on the host FD the gofer donated
// at open (the sentry never opens host paths). Used for --mount trees and as the lower
// layer of the root overlay.
//
// Modes are the host's. Owners are too, except that a --mount tree may swap one host
// uid/gid pair with the program's (OwnerSwap): the caller's own files are the program's
// own inside, as in a rootless container, and the program's files are the caller's on
// the host. The root view never swaps (/etc stays root's). Directory attributes are
// cached (they are read on every path step); other objects are re-read on Stat(). Each
// cached answer saves a gofer round trip (python3 start-up made ~250 of them):
// - symlink targets are always cached: a gofer handle names one inode, and a symlink's
//   target never changes;
// - in a tree the gofer serves read-only, reading descriptions of a file share one host
//   FD (the data stays live: they pread it);
// - in the root's lower layer, which the gofer serves read-only and the sandbox uses
//   exclusively, attributes, absent names and directory listings are cached for the
//   run too. Like gVisor's
//   exclusive file access for the root (and shared access for mounts), host-side
//   changes there are not noticed during a run; --mount trees, read-only or not, see
//   them (an agent may watch a log the host appends to).
#ifndef USENTRY_SENTRY_FSIMPL_GOFER_FS_H_
#define USENTRY_SENTRY_FSIMPL_GOFER_FS_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "base/unique_fd.h"
#include "gofer/client.h"
#include "sentry/fsimpl/gofer_mapped.h"
#include "sentry/vfs/file_description.h"
#include "sentry/vfs/inode.h"

namespace usentry::sentry::fsimpl {

// Exchanges host_uid with app_uid and host_gid with app_gid, in both directions (it is
// its own inverse, so no two host owners ever look the same inside). Identity when the
// pairs are equal.
struct OwnerSwap {
  uint32_t host_uid = 0, host_gid = 0;
  uint32_t app_uid = 0, app_gid = 0;
  uint32_t Uid(uint32_t uid) const {
    return uid == host_uid ? app_uid : uid == app_uid ? host_uid : uid;
  }
  uint32_t Gid(uint32_t gid) const {
    return gid == host_gid ? app_gid : gid == app_gid ? host_gid : gid;
  }
};

class GoferFilesystem : public vfs::Filesystem {
 public:
  // `client` must outlive the filesystem and every inode of it.
  // `exclusive`: the sandbox is the only user of the tree (see above).
  // `owners`: how host owners appear inside (and back), see OwnerSwap.
  // `mf`: where host files mapped MAP_SHARED keep their bytes (gofer_mapped.h); without
  // it writable shared mappings are ENODEV.
  GoferFilesystem(gofer::Client* client, std::string tree, bool exclusive = false,
                  OwnerSwap owners = {}, mm::MemoryFile* mf = nullptr);
  const OwnerSwap& owners() const { return owners_; }
  // Attaches to the tree: the root inode, and whether the gofer serves it read-only.
  SysResult<std::pair<std::shared_ptr<vfs::Inode>, bool>> Attach();
  SysResult<struct statfs> StatFs() override;
  gofer::Client& client() { return *client_; }
  // The gofer serves this tree read-only (known after Attach).
  bool read_only() const { return read_only_; }
  // Attributes and absent names may be cached: read-only and exclusive.
  bool cache_metadata() const { return read_only_ && exclusive_; }

  // --- host files mapped MAP_SHARED (gofer_mapped.h), by host (st_dev, st_ino) ---
  using HostKey = std::pair<uint64_t, uint64_t>;
  bool maps_shared() const { return mf_ != nullptr && !read_only_; }
  bool any_mapped() const { return !mapped_.empty(); }
  // The live MappedHostFile of `key`, if any.
  std::shared_ptr<MappedHostFile> Mapped(const HostKey& key);
  // The MappedHostFile of `key`, loaded from `fd` if there is none.
  SysResult<std::shared_ptr<MappedHostFile>> MapShared(const HostKey& key,
                                                       std::shared_ptr<UniqueFd> fd);

 private:
  gofer::Client* client_;
  std::string tree_;
  bool exclusive_;
  OwnerSwap owners_;
  bool read_only_ = false;
  mm::MemoryFile* mf_;
  std::map<HostKey, std::weak_ptr<MappedHostFile>> mapped_;
};

class GoferInode : public vfs::Inode {
 public:
  GoferInode(GoferFilesystem* fs, gofer::Node node);
  ~GoferInode() override;

  vfs::Filesystem& fs() override { return *fs_; }
  SysResult<vfs::Attr> Stat() override;
  SysStatus SetAttr(const vfs::SetAttrRequest& req) override;
  uint32_t FileType() override { return attr_.mode & S_IFMT; }
  SysResult<std::shared_ptr<vfs::FileDescription>> Open(const vfs::Path& path, int flags) override;

  SysResult<std::shared_ptr<vfs::Inode>> Lookup(std::string_view name) override;
  // In a read-only tree, a read-only open's lookup also makes the gofer Open (one round
  // trip, not two): the FD or the permission rides on the new inode for Open to use.
  SysResult<std::shared_ptr<vfs::Inode>> LookupForOpen(std::string_view name, int flags) override;
  // In the root's lower layer (cache_metadata), one WalkPath resolves the components
  // ahead too: each is kept on its parent for the lookup that follows, with a miss as an
  // absent name and a read-only open's FD as LookupForOpen would get it. A path of new
  // directories costs one round trip, not one per component.
  SysResult<std::shared_ptr<vfs::Inode>> LookupAhead(std::string_view name,
                                                     const vfs::WalkAhead& ahead) override;
  SysResult<std::shared_ptr<vfs::Inode>> Create(std::string_view name, uint32_t mode, uint32_t uid,
                                                uint32_t gid) override;
  SysResult<std::shared_ptr<vfs::Inode>> Mkdir(std::string_view name, uint32_t mode, uint32_t uid,
                                               uint32_t gid) override;
  SysResult<std::shared_ptr<vfs::Inode>> Symlink(std::string_view name, std::string_view target,
                                                 uint32_t uid, uint32_t gid) override;
  SysStatus Link(std::string_view name, vfs::Inode& target) override;
  SysStatus Unlink(std::string_view name) override;
  SysStatus Rmdir(std::string_view name) override;
  SysStatus Rename(std::string_view old_name, vfs::Inode& new_dir, std::string_view new_name,
                   uint32_t flags) override;
  SysResult<std::vector<vfs::DirEntry>> ReadDir() override;
  SysResult<std::string> Readlink() override;

  gofer::Handle handle() const { return handle_; }

 private:
  vfs::Attr ToAttr(const gofer::Attr& a) const;
  SysResult<std::shared_ptr<vfs::Inode>> Wrap(gofer::Node node);
  // Lookup and LookupForOpen: Walk, or (`open`) WalkOpen.
  SysResult<std::shared_ptr<vfs::Inode>> Find(std::string_view name, bool open);
  // What a lookup of `name` gets without asking the gofer (ENOTDIR, a child walked
  // ahead, a known absence), if anything.
  std::optional<SysResult<std::shared_ptr<vfs::Inode>>> Known(std::string_view name);
  // What a read-only open's lookup learnt (Find, LookupAhead): the FD, or that the
  // directory may be opened. A refusal is not kept: Open asks again and gets it then.
  void KeepOpened(int open_err, UniqueFd fd);
  // A name this directory is known not to hold (cache_metadata trees).
  bool KnownAbsent(std::string_view name) const;
  // A lookup of `name` failed with `err`: remembers an absent name; returns err.
  Errno Missed(std::string_view name, int err);
  GoferFilesystem* fs_;
  gofer::Handle handle_;
  vfs::Attr attr_;
  std::optional<std::string> link_target_;
  // Read-only trees: the host FD every reading description shares, and whether the
  // gofer already allowed opening this directory.
  std::shared_ptr<UniqueFd> read_fd_;
  bool dir_open_checked_ = false;
  // cache_metadata() trees: names this directory is known not to contain (bounded).
  std::set<std::string, std::less<>> absent_;
  // cache_metadata() trees: every name this directory holds, once it was listed (by
  // ReadDir, or here after a second miss; not for huge directories). A name outside it
  // is absent without asking the gofer: a compiler's include search or an interpreter's
  // module search misses in the same few directories again and again.
  SysStatus ListNames();
  void KeepNames(const std::vector<gofer::DirEntry>& entries);
  // Each name with its index in listing_.
  std::optional<absl::flat_hash_map<std::string, size_t>> names_;
  // With names_: the listing itself, which answers the next ReadDir (an interpreter lists
  // its search directories more than once).
  std::optional<std::vector<vfs::DirEntry>> listing_;
  int misses_ = 0;
  // The child a LookupAhead resolved before the VFS stepped into it, handed out (and
  // dropped from here) by the lookup that reaches it. Only an inode that LookupAhead
  // made holds one, so a walk that stops early (a search permission missing on the way)
  // leaves at most its own chain behind.
  std::string walked_name_;
  std::shared_ptr<GoferInode> walked_;
  // The target of a symlink child that a lookup for a read-only open found, when the
  // target is a name in this directory: the gofer walked and opened it in the same round
  // trip (gofer::Client::WalkOpened::sibling), and the lookup that follows the link
  // takes it from here.
  std::string sibling_name_;
  std::shared_ptr<GoferInode> sibling_;
  void KeepSibling(std::string name, gofer::Node node, int open_err, UniqueFd fd);
  // With a listing: a program that looks up this directory's names in the listing's
  // order (`ls -l` stats each entry as it reads it) gets the names after the one it asks
  // for walked in the same round trip (WalkSiblings), kept here for the lookups that
  // follow. in_order_ counts the lookups in a row that took the name at next_index_.
  bool NoteLookupOrder(std::string_view name);
  SysResult<std::shared_ptr<vfs::Inode>> WalkInListingOrder(std::string_view name);
  size_t next_index_ = 0;
  int in_order_ = 0;
  absl::flat_hash_map<std::string, std::shared_ptr<GoferInode>> ahead_;
  // The child walked ahead, the sibling, or a name walked in listing order named `name`,
  // handed out once.
  std::shared_ptr<GoferInode> TakeWalked(std::string_view name);
};

// A regular file opened through the gofer: I/O on the donated host FD.
class GoferFileDescription : public vfs::FileDescription {
 public:
  // `fd` may be shared with other descriptions of the same file (read-only trees).
  GoferFileDescription(GoferFilesystem* fs, vfs::Path path, int flags, std::shared_ptr<UniqueFd> fd,
                       uint64_t dev, OwnerSwap owners);
  SysResult<size_t> Read(Task* task, absl::Span<const iovec> dst, int64_t offset) override;
  SysResult<size_t> Write(Task* task, absl::Span<const iovec> src, int64_t offset) override;
  SysResult<int64_t> Seek(int64_t offset, int whence) override;
  SysResult<vfs::Attr> Stat() override;
  SysStatus Truncate(int64_t size) override;
  SysStatus Sync() override;
  SysStatus ConfigureMMap(mm::MMapOpts& opts) override;
  std::shared_ptr<const UniqueFd> HostFileForMapping() override;
  int host_fd() const { return fd_->get(); }

 private:
  SysResult<int64_t> HostSize();
  SysStatus ConfigureSharedMMap(mm::MMapOpts& opts);
  // While the file is mapped shared somewhere: its MappedHostFile, which reads and
  // writes go through.
  std::shared_ptr<MappedHostFile> Mapped();
  SysResult<GoferFilesystem::HostKey> Key();
  GoferFilesystem* fs_;
  std::optional<GoferFilesystem::HostKey> key_;
  std::shared_ptr<UniqueFd> fd_;      // shared with mmap fillers
  std::optional<bool> fd_read_only_;  // HostFileForMapping's check, once made
  uint64_t dev_;
  OwnerSwap owners_;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_GOFER_FS_H_
