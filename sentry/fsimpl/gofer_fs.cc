// gofer fs: inodes over gofer::Client, file descriptions over donated host FDs.
#include "sentry/fsimpl/gofer_fs.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <climits>

namespace usentry::sentry::fsimpl {

using vfs::Attr;
using vfs::Inode;

GoferFilesystem::GoferFilesystem(gofer::Client* client, std::string tree, bool exclusive,
                                 OwnerSwap owners, mm::MemoryFile* mf)
    : vfs::Filesystem("9p"),
      client_(client),
      tree_(std::move(tree)),
      exclusive_(exclusive),
      owners_(owners),
      mf_(mf) {}

std::shared_ptr<MappedHostFile> GoferFilesystem::Mapped(const HostKey& key) {
  auto it = mapped_.find(key);
  if (it == mapped_.end()) return nullptr;
  std::shared_ptr<MappedHostFile> m = it->second.lock();
  if (!m) mapped_.erase(it);  // its last mapping is gone (and wrote back)
  return m;
}

SysResult<std::shared_ptr<MappedHostFile>> GoferFilesystem::MapShared(
    const HostKey& key, std::shared_ptr<UniqueFd> fd) {
  if (std::shared_ptr<MappedHostFile> m = Mapped(key)) return m;
  ASSIGN_OR_RETURN_ERRNO(std::shared_ptr<MappedHostFile> m, MappedHostFile::Load(mf_, fd));
  mapped_[key] = m;
  return m;
}

SysResult<std::pair<std::shared_ptr<Inode>, bool>> GoferFilesystem::Attach() {
  ASSIGN_OR_RETURN_ERRNO(auto attached, client_->Attach(tree_));
  read_only_ = attached.second;
  std::shared_ptr<Inode> root = std::make_shared<GoferInode>(this, attached.first);
  return std::make_pair(std::move(root), attached.second);
}

SysResult<struct statfs> GoferFilesystem::StatFs() {
  struct statfs s {};
  s.f_type = 0x01021997;  // V9FS_MAGIC, what gVisor reports for gofer mounts
  s.f_bsize = 4096;
  s.f_frsize = 4096;
  s.f_namelen = 255;
  return s;
}

GoferInode::GoferInode(GoferFilesystem* fs, gofer::Node node)
    : fs_(fs), handle_(node.handle), attr_(ToAttr(node.attr)) {
  if (FileType() == S_IFLNK) link_target_ = std::move(node.link_target);
}

GoferInode::~GoferInode() { fs_->client().Close(handle_); }

Attr GoferInode::ToAttr(const gofer::Attr& a) const {
  Attr out;
  out.dev = fs_->dev();
  out.ino = a.ino;
  out.mode = a.mode;
  out.nlink = a.nlink;
  out.uid = fs_->owners().Uid(a.uid);
  out.gid = fs_->owners().Gid(a.gid);
  out.rdev = a.rdev;
  out.size = a.size;
  out.blocks = a.blocks;
  out.blksize = a.blksize ? a.blksize : 4096;
  out.atime = a.atime;
  out.mtime = a.mtime;
  out.ctime = a.ctime;
  return out;
}

SysResult<Attr> GoferInode::Stat() {
  // Directories are stat'ed on every path step: serve them from the cache, which our
  // own changes keep current. Files may change size under open FDs: ask the gofer,
  // unless the tree's metadata is cached.
  if (FileType() != S_IFDIR && !fs_->cache_metadata()) {
    ASSIGN_OR_RETURN_ERRNO(gofer::Attr a, fs_->client().Stat(handle_));
    attr_ = ToAttr(a);
  }
  return attr_;
}

SysStatus GoferInode::SetAttr(const vfs::SetAttrRequest& req) {
  gofer::SetAttrRequest g;
  g.mask = req.mask & (gofer::kSetMode | gofer::kSetUid | gofer::kSetGid | gofer::kSetSize |
                       gofer::kSetAtime | gofer::kSetMtime);
  g.mode = req.mode;
  g.uid = fs_->owners().Uid(req.uid);
  g.gid = fs_->owners().Gid(req.gid);
  g.size = req.size;
  g.atime = req.atime;
  g.mtime = req.mtime;
  if (g.mask) RETURN_IF_ERRNO(fs_->client().SetAttr(handle_, g));
  ASSIGN_OR_RETURN_ERRNO(gofer::Attr a, fs_->client().Stat(handle_));
  attr_ = ToAttr(a);
  return SysOk();
}

SysResult<std::shared_ptr<vfs::FileDescription>> GoferInode::Open(const vfs::Path& path,
                                                                  int flags) {
  // In a read-only tree the gofer's answer for this inode cannot change: ask it once.
  // Reading descriptions share one host FD (each keeps its own offset and uses pread).
  const bool cacheable = fs_->read_only() && (flags & O_ACCMODE) == O_RDONLY;
  if (FileType() == S_IFDIR) {
    // Checks the gofer's policy (no FD is donated for directories); listing is ReadDir.
    if (!(cacheable && dir_open_checked_)) {
      ASSIGN_OR_RETURN_ERRNO(UniqueFd unused, fs_->client().Open(handle_, O_RDONLY | O_DIRECTORY));
      dir_open_checked_ = cacheable;
    }
    return Inode::Open(path, flags);
  }
  if (FileType() != S_IFREG) return Errno{ENXIO};
  std::shared_ptr<UniqueFd> fd = cacheable ? read_fd_ : nullptr;
  if (!fd) {
    // O_APPEND is emulated (pwrite at the size) so the file offset can be tracked.
    ASSIGN_OR_RETURN_ERRNO(UniqueFd opened, fs_->client().Open(handle_, flags & O_ACCMODE));
    fd = std::make_shared<UniqueFd>(std::move(opened));
    if (cacheable) read_fd_ = fd;
  }
  return std::shared_ptr<vfs::FileDescription>(std::make_shared<GoferFileDescription>(
      fs_, path, flags, std::move(fd), fs_->dev(), fs_->owners()));
}

SysResult<std::shared_ptr<Inode>> GoferInode::Wrap(gofer::Node node) {
  return std::shared_ptr<Inode>(std::make_shared<GoferInode>(fs_, node));
}

// Directories larger than this (st_size; on ext4 ~250 names) are not listed for their
// misses, and listings of more names than kMaxListedNames are not kept: in gcc's run a
// listing cost ~0.5 ms on average (/usr/bin has ~1300 names), more than the misses it
// would answer.
static constexpr int64_t kMaxListedDirBytes = 16 << 10;
static constexpr size_t kMaxListedNames = 8192;

SysResult<std::shared_ptr<Inode>> GoferInode::Lookup(std::string_view name) {
  return Find(name, /*open=*/false);
}

SysResult<std::shared_ptr<Inode>> GoferInode::LookupForOpen(std::string_view name, int flags) {
  return Find(name, fs_->read_only() && vfs::ReadOnlyOpen(flags));
}

std::optional<SysResult<std::shared_ptr<Inode>>> GoferInode::Known(std::string_view name) {
  if (FileType() != S_IFDIR) return Errno{ENOTDIR};
  if (std::shared_ptr<Inode> walked = TakeWalked(name)) return walked;
  if (KnownAbsent(name)) return Errno{ENOENT};
  return std::nullopt;
}

SysResult<std::shared_ptr<Inode>> GoferInode::Find(std::string_view name, bool open) {
  const bool in_listing_order = !open && NoteLookupOrder(name);
  if (auto known = Known(name)) return *std::move(known);
  if (in_listing_order) {
    SysResult<std::shared_ptr<Inode>> r = WalkInListingOrder(name);
    if (!r.ok()) return Missed(name, r.error());
    return r;
  }
  gofer::Client::WalkOpened w;
  if (open) {
    SysResult<gofer::Client::WalkOpened> r = fs_->client().WalkOpen(handle_, name);
    if (!r.ok()) return Missed(name, r.error());
    w = std::move(r).value();
  } else {
    SysResult<gofer::Node> r = fs_->client().Walk(handle_, name);
    if (!r.ok()) return Missed(name, r.error());
    w.node = std::move(r).value();
  }
  auto child = std::make_shared<GoferInode>(fs_, std::move(w.node));
  if (w.sibling) {
    KeepSibling(*child->link_target_, std::move(*w.sibling), w.open_err, std::move(w.fd));
  } else if (open) {
    child->KeepOpened(w.open_err, std::move(w.fd));
  }
  return std::shared_ptr<Inode>(std::move(child));
}

void GoferInode::KeepSibling(std::string name, gofer::Node node, int open_err, UniqueFd fd) {
  sibling_name_ = std::move(name);
  sibling_ = std::make_shared<GoferInode>(fs_, std::move(node));
  sibling_->KeepOpened(open_err, std::move(fd));
}

void GoferInode::KeepOpened(int open_err, UniqueFd fd) {
  if (open_err != 0) return;
  if (FileType() == S_IFDIR) dir_open_checked_ = true;
  if (fd.valid()) read_fd_ = std::make_shared<UniqueFd>(std::move(fd));
}

std::shared_ptr<GoferInode> GoferInode::TakeWalked(std::string_view name) {
  if (walked_ && name == walked_name_) return std::move(walked_);
  if (sibling_ && name == sibling_name_) return std::move(sibling_);
  if (auto it = ahead_.find(absl::string_view(name.data(), name.size())); it != ahead_.end()) {
    std::shared_ptr<GoferInode> taken = std::move(it->second);
    ahead_.erase(it);
    return taken;
  }
  return nullptr;
}

// Lookups in a row in listing order before the names after them are walked ahead: one
// or two in order happen by chance (a search that finds its name early).
static constexpr int kInOrderBeforeWalkingAhead = 3;

bool GoferInode::NoteLookupOrder(std::string_view name) {
  if (!names_) return false;
  auto it = names_->find(absl::string_view(name.data(), name.size()));
  if (it == names_->end()) return false;
  in_order_ = it->second == next_index_ ? in_order_ + 1 : 0;
  next_index_ = it->second + 1;
  // Out of order: what was walked ahead is not what comes next.
  if (in_order_ == 0) ahead_.clear();
  return in_order_ >= kInOrderBeforeWalkingAhead;
}

SysResult<std::shared_ptr<Inode>> GoferInode::WalkInListingOrder(std::string_view name) {
  // The name, then those after it that no lookup has asked for yet.
  std::vector<std::string_view> names{name};
  for (size_t i = next_index_; i < listing_->size(); ++i) {
    if (names.size() == gofer::Client::kMaxWalkNames) break;
    const std::string& n = (*listing_)[i].name;
    if (n == "." || n == ".." || ahead_.contains(n) || absent_.contains(n)) continue;
    names.push_back(n);
  }
  ASSIGN_OR_RETURN_ERRNO(gofer::Client::WalkedPath r, fs_->client().WalkSiblings(handle_, names));
  auto first = std::make_shared<GoferInode>(fs_, std::move(r.nodes[0]));
  for (size_t i = 1; i < r.nodes.size(); ++i) {
    ahead_[std::string(names[i])] = std::make_shared<GoferInode>(fs_, std::move(r.nodes[i]));
  }
  // A listed name the gofer does not walk is masked (or gone): absent for the run, as a
  // lookup's miss would make it.
  if (r.nodes.size() < names.size() && r.stop_err != 0)
    (void)Missed(names[r.nodes.size()], r.stop_err);
  return std::shared_ptr<Inode>(std::move(first));
}

SysResult<std::shared_ptr<Inode>> GoferInode::LookupAhead(std::string_view name,
                                                          const vfs::WalkAhead& ahead) {
  // The names the gofer can walk: up to a "." or ".." (the VFS resolves those) or the
  // request's limit.
  std::vector<std::string_view> names{name};
  for (std::string_view n : ahead.names) {
    if (names.size() == gofer::Client::kMaxWalkNames || n == "." || n == "..") break;
    names.push_back(n);
  }
  if (!fs_->cache_metadata() || names.size() == 1) return Find(name, /*open=*/false);
  if (auto known = Known(name)) return *std::move(known);
  const bool to_end = names.size() == ahead.names.size() + 1;
  const bool open_last =
      to_end && ahead.last_open_flags >= 0 && vfs::ReadOnlyOpen(ahead.last_open_flags);
  SysResult<gofer::Client::WalkedPath> r = fs_->client().WalkPath(handle_, names, open_last);
  if (!r.ok()) return Missed(name, r.error());
  // Each node but the first waits on its parent (fresh, so nothing waits there yet).
  auto first = std::make_shared<GoferInode>(fs_, std::move(r->nodes[0]));
  GoferInode* parent = this;  // of `at`
  GoferInode* at = first.get();
  for (size_t i = 1; i < r->nodes.size(); ++i) {
    at->walked_name_ = std::string(names[i]);
    at->walked_ = std::make_shared<GoferInode>(fs_, std::move(r->nodes[i]));
    parent = at;
    at = at->walked_.get();
  }
  const size_t walked = r->nodes.size();
  if (walked < names.size() && r->stop_err != 0) {
    (void)at->Missed(names[walked], r->stop_err);
  } else if (r->sibling) {
    parent->KeepSibling(*at->link_target_, std::move(*r->sibling), r->open_err, std::move(r->fd));
  } else if (walked == names.size() && open_last) {
    at->KeepOpened(r->open_err, std::move(r->fd));
  }
  return std::shared_ptr<Inode>(std::move(first));
}

bool GoferInode::KnownAbsent(std::string_view name) const {
  // (Debian's Abseil hashes its own string_view, not std's.)
  return absent_.contains(name) ||
         (names_ && !names_->contains(absl::string_view(name.data(), name.size())));
}

Errno GoferInode::Missed(std::string_view name, int err) {
  if (err != ENOENT || !fs_->cache_metadata()) return Errno{err};
  // Bounded so that a program probing random names cannot grow the sentry without
  // limit; past the bound, lookups just ask the gofer again.
  constexpr size_t kMaxAbsentPerDir = 4096;
  if (absent_.size() < kMaxAbsentPerDir) absent_.emplace(name);
  // One miss is common (a config file that is not there); a second predicts more.
  if (++misses_ == 2 && !names_ && attr_.size <= kMaxListedDirBytes) (void)ListNames();
  return Errno{err};
}

void GoferInode::KeepNames(const std::vector<gofer::DirEntry>& entries) {
  if (!fs_->cache_metadata() || entries.size() > kMaxListedNames) return;
  names_.emplace();
  names_->reserve(entries.size());
  listing_.emplace();
  listing_->reserve(entries.size());
  for (const gofer::DirEntry& e : entries) {
    names_->emplace(e.name, listing_->size());
    listing_->push_back(vfs::DirEntry{e.name, e.ino, e.type});
  }
  absent_.clear();  // names_ answers these now
}

SysStatus GoferInode::ListNames() {
  ASSIGN_OR_RETURN_ERRNO(auto entries, fs_->client().ReadDir(handle_));
  KeepNames(entries);
  return SysOk();
}

SysResult<std::shared_ptr<Inode>> GoferInode::Create(std::string_view name, uint32_t mode,
                                                     uint32_t uid, uint32_t gid) {
  ASSIGN_OR_RETURN_ERRNO(auto created, fs_->client().Create(handle_, name, O_RDONLY, mode & 07777));
  attr_.mtime = attr_.ctime = vfs::NowTimespec();
  return Wrap(created.first);  // the donated FD is closed: Open() asks again
}

SysResult<std::shared_ptr<Inode>> GoferInode::Mkdir(std::string_view name, uint32_t mode,
                                                    uint32_t uid, uint32_t gid) {
  ASSIGN_OR_RETURN_ERRNO(gofer::Node n, fs_->client().Mkdir(handle_, name, mode & 07777));
  attr_.nlink++;
  return Wrap(n);
}

SysResult<std::shared_ptr<Inode>> GoferInode::Symlink(std::string_view name,
                                                      std::string_view target, uint32_t uid,
                                                      uint32_t gid) {
  ASSIGN_OR_RETURN_ERRNO(gofer::Node n, fs_->client().Symlink(handle_, name, target));
  return Wrap(n);
}

SysStatus GoferInode::Link(std::string_view name, Inode& target) {
  auto* t = dynamic_cast<GoferInode*>(&target);
  if (!t || t->fs_ != fs_) return Errno{EXDEV};
  ASSIGN_OR_RETURN_ERRNO(gofer::Node n, fs_->client().Link(handle_, name, t->handle_));
  fs_->client().Close(n.handle);
  return SysOk();
}

SysStatus GoferInode::Unlink(std::string_view name) {
  return fs_->client().Unlink(handle_, name, 0);
}

SysStatus GoferInode::Rmdir(std::string_view name) {
  RETURN_IF_ERRNO(fs_->client().Unlink(handle_, name, AT_REMOVEDIR));
  if (attr_.nlink > 2) attr_.nlink--;
  return SysOk();
}

SysStatus GoferInode::Rename(std::string_view old_name, Inode& new_dir, std::string_view new_name,
                             uint32_t flags) {
  auto* nd = dynamic_cast<GoferInode*>(&new_dir);
  if (!nd || nd->fs_ != fs_) return Errno{EXDEV};
  return fs_->client().Rename(handle_, old_name, nd->handle_, new_name, flags);
}

SysResult<std::vector<vfs::DirEntry>> GoferInode::ReadDir() {
  if (FileType() != S_IFDIR) return Errno{ENOTDIR};
  if (listing_) return *listing_;
  ASSIGN_OR_RETURN_ERRNO(auto entries, fs_->client().ReadDir(handle_));
  KeepNames(entries);
  if (listing_) return *listing_;
  std::vector<vfs::DirEntry> out;
  out.reserve(entries.size());
  for (auto& e : entries) out.push_back(vfs::DirEntry{std::move(e.name), e.ino, e.type});
  return out;
}

SysResult<std::string> GoferInode::Readlink() {
  if (FileType() != S_IFLNK) return Errno{EINVAL};
  if (!link_target_) {
    ASSIGN_OR_RETURN_ERRNO(std::string target, fs_->client().Readlink(handle_));
    link_target_ = std::move(target);
  }
  return *link_target_;
}

// --- GoferFileDescription ---

GoferFileDescription::GoferFileDescription(GoferFilesystem* fs, vfs::Path path, int flags,
                                           std::shared_ptr<UniqueFd> fd, uint64_t dev,
                                           OwnerSwap owners)
    : FileDescription(std::move(path), flags),
      fs_(fs),
      fd_(std::move(fd)),
      dev_(dev),
      owners_(owners) {}

SysResult<GoferFilesystem::HostKey> GoferFileDescription::Key() {
  if (!key_) {
    struct stat st;
    if (fstat(fd_->get(), &st) != 0) return Errno{errno};
    key_ = GoferFilesystem::HostKey(st.st_dev, st.st_ino);
  }
  return *key_;
}

std::shared_ptr<MappedHostFile> GoferFileDescription::Mapped() {
  if (!fs_->any_mapped()) return nullptr;
  SysResult<GoferFilesystem::HostKey> key = Key();
  return key.ok() ? fs_->Mapped(key.value()) : nullptr;
}

SysResult<int64_t> GoferFileDescription::HostSize() {
  struct stat st;
  if (fstat(fd_->get(), &st) != 0) return Errno{errno};
  return static_cast<int64_t>(st.st_size);
}

namespace {
// preadv/pwritev over any number of iovecs (IOV_MAX per host call), stopping at a short
// transfer. Addresses are sentry addresses, so EFAULT cannot come from the app.
template <typename Fn>
SysResult<size_t> HostIov(Fn fn, absl::Span<const iovec> iovs, int64_t off) {
  size_t total = 0;
  while (!iovs.empty()) {
    size_t n = std::min<size_t>(iovs.size(), IOV_MAX);
    size_t want = 0;
    for (size_t i = 0; i < n; ++i) want += iovs[i].iov_len;
    ssize_t r;
    do {
      r = fn(iovs.data(), static_cast<int>(n), off);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
      if (total > 0) return total;
      return Errno{errno};
    }
    total += r;
    off += r;
    if (static_cast<size_t>(r) < want) break;
    iovs.remove_prefix(n);
  }
  return total;
}
}  // namespace

SysResult<size_t> GoferFileDescription::Read(Task*, absl::Span<const iovec> dst, int64_t offset) {
  int64_t off = offset < 0 ? offset_ : offset;
  if (std::shared_ptr<MappedHostFile> m = Mapped()) {
    ASSIGN_OR_RETURN_ERRNO(size_t n, m->Read(dst, static_cast<uint64_t>(off)));
    if (offset < 0) offset_ += n;
    return n;
  }
  int fd = fd_->get();
  ASSIGN_OR_RETURN_ERRNO(
      size_t n,
      HostIov([fd](const iovec* v, int c, int64_t o) { return preadv(fd, v, c, o); }, dst, off));
  if (offset < 0) offset_ += n;
  return n;
}

SysResult<size_t> GoferFileDescription::Write(Task*, absl::Span<const iovec> src, int64_t offset) {
  int64_t off = offset < 0 ? offset_ : offset;
  if (flags_ & O_APPEND) {
    ASSIGN_OR_RETURN_ERRNO(off, HostSize());
  }
  int fd = fd_->get();
  if (std::shared_ptr<MappedHostFile> m = Mapped()) {
    ASSIGN_OR_RETURN_ERRNO(size_t n, m->Write(fd, src, static_cast<uint64_t>(off)));
    if (offset < 0) offset_ = off + n;
    return n;
  }
  ASSIGN_OR_RETURN_ERRNO(
      size_t n,
      HostIov([fd](const iovec* v, int c, int64_t o) { return pwritev(fd, v, c, o); }, src, off));
  if (offset < 0) offset_ = off + n;
  return n;
}

SysResult<int64_t> GoferFileDescription::Seek(int64_t offset, int whence) {
  return SeekWithSize(offset, whence, [this] { return HostSize(); });
}

SysResult<Attr> GoferFileDescription::Stat() {
  struct stat st;
  if (fstat(fd_->get(), &st) != 0) return Errno{errno};
  Attr a;
  a.dev = dev_;
  a.ino = st.st_ino;
  a.mode = st.st_mode;
  a.nlink = st.st_nlink;
  a.uid = owners_.Uid(st.st_uid);
  a.gid = owners_.Gid(st.st_gid);
  a.rdev = st.st_rdev;
  a.size = st.st_size;
  a.blocks = st.st_blocks;
  a.blksize = st.st_blksize;
  a.atime = st.st_atim;
  a.mtime = st.st_mtim;
  a.ctime = st.st_ctim;
  return a;
}

SysStatus GoferFileDescription::Truncate(int64_t size) {
  if (std::shared_ptr<MappedHostFile> m = Mapped()) {
    return m->Truncate(fd_->get(), static_cast<uint64_t>(size));
  }
  if (ftruncate(fd_->get(), size) != 0) return Errno{errno};
  return SysOk();
}

SysStatus GoferFileDescription::Sync() {
  if (std::shared_ptr<MappedHostFile> m = Mapped()) RETURN_IF_ERRNO(m->WriteBack());
  if (fsync(fd_->get()) != 0 && errno != EINVAL && errno != EROFS) return Errno{errno};
  return SysOk();
}

SysStatus GoferFileDescription::ConfigureMMap(mm::MMapOpts& opts) {
  if ((opts.flags & MAP_TYPE) != MAP_PRIVATE && fs_->maps_shared())
    return ConfigureSharedMMap(opts);
  std::shared_ptr<UniqueFd> fd = fd_;
  mm::FileFiller fill = [fd](uint8_t* dst, uint64_t len, uint64_t file_off) -> SysResult<uint64_t> {
    uint64_t done = 0;
    while (len > 0) {
      ssize_t r = pread(fd->get(), dst, len, static_cast<off_t>(file_off));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Errno{errno};
      if (r == 0) break;  // past EOF: the rest stays zero
      dst += r;
      len -= r;
      file_off += r;
      done += r;
    }
    return done;
  };
  RETURN_IF_ERRNO(vfs::ConfigureCopyMMap(*this, opts, std::move(fill), fd_));
  opts.host_file = HostFileForMapping();
  return SysOk();
}

std::shared_ptr<const UniqueFd> GoferFileDescription::HostFileForMapping() {
  // Never a descriptor that can write (the platform hands it to the app's stub), nor one
  // whose host bytes may lag the sandbox's view (stores held by a shared mapping).
  if (!fd_read_only_) {  // (asked once: a descriptor's access mode never changes)
    const int fl = fcntl(fd_->get(), F_GETFL);
    fd_read_only_ = fl >= 0 && (fl & O_ACCMODE) == O_RDONLY;
  }
  if (!*fd_read_only_ || Mapped()) return nullptr;
  return fd_;
}

SysStatus GoferFileDescription::ConfigureSharedMMap(mm::MMapOpts& opts) {
  if (!readable()) return Errno{EACCES};
  if ((opts.prot & PROT_WRITE) && !writable()) return Errno{EACCES};
  const uint64_t len = (opts.len + mm::kPageSize - 1) & ~(mm::kPageSize - 1);
  if (len < opts.len || opts.file_off > MappedHostFile::kMaxSize ||
      len > MappedHostFile::kMaxSize - opts.file_off) {
    return Errno{ENOMEM};
  }
  ASSIGN_OR_RETURN_ERRNO(GoferFilesystem::HostKey key, Key());
  ASSIGN_OR_RETURN_ERRNO(std::shared_ptr<MappedHostFile> m, fs_->MapShared(key, fd_));
  m->UseFd(fd_, writable());
  if (writable()) {
    m->MappedWritable();
    opts.max_prot = PROT_READ | PROT_WRITE | PROT_EXEC;
  } else {
    opts.max_prot = PROT_READ | PROT_EXEC;
  }
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr a, Stat());
  opts.dev = a.dev;
  opts.ino = a.ino;
  opts.name = vfs::AbsolutePathOf(path());
  opts.file_ref = fd_;
  ASSIGN_OR_RETURN_ERRNO(opts.shared_pages, m->PagesCovering(opts.file_off + len));
  opts.observer = std::move(m);
  return SysOk();
}

}  // namespace usentry::sentry::fsimpl
