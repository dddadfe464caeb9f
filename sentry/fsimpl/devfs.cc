// devfs: device inodes and their descriptions.
#include "sentry/fsimpl/devfs.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <termios.h>

#include <cstring>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "sentry/fsimpl/host_file.h"
#include "sentry/fsimpl/procfs.h"
#include "sentry/fsimpl/pty.h"
#include "sentry/fsimpl/tmpfs.h"
#include "sentry/fsimpl/tty.h"
#include "sentry/kernel/kernel.h"

namespace usentry::sentry::fsimpl {
namespace {

constexpr uint64_t kDevShmBytes = 64ull << 20;

enum class Dev { kNull, kZero, kFull, kRandom, kURandom, kTty, kPts0 };

class DevFilesystem : public vfs::Filesystem {
 public:
  DevFilesystem() : Filesystem("devtmpfs") {}
};

// Zero-fills every iovec (reads of /dev/zero and /dev/full).
size_t ZeroFill(absl::Span<const iovec> dst) {
  size_t n = 0;
  for (const iovec& v : dst) {
    memset(v.iov_base, 0, v.iov_len);
    n += v.iov_len;
  }
  return n;
}

// getrandom(2) never blocks once the host pool is initialized (always, by the time a
// sandbox runs); urandom semantics for both nodes, as Linux >= 5.6 gives /dev/random.
SysResult<size_t> RandomFill(absl::Span<const iovec> dst) {
  size_t n = 0;
  for (const iovec& v : dst) {
    size_t off = 0;
    while (off < v.iov_len) {
      ssize_t r = getrandom(static_cast<uint8_t*>(v.iov_base) + off, v.iov_len - off, 0);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (n + off > 0) return n + off;
        return Errno{errno};
      }
      off += r;
    }
    n += off;
  }
  return n;
}

class DevDescription : public vfs::FileDescription {
 public:
  DevDescription(vfs::Path path, int flags, Dev dev)
      : FileDescription(std::move(path), flags), dev_(dev) {}

  SysResult<size_t> Read(Task*, absl::Span<const iovec> dst, int64_t) override {
    switch (dev_) {
      case Dev::kNull:
        return size_t{0};
      case Dev::kZero:
      case Dev::kFull:
        return ZeroFill(dst);
      default:
        return RandomFill(dst);
    }
  }
  SysResult<size_t> Write(Task*, absl::Span<const iovec> src, int64_t) override {
    if (dev_ == Dev::kFull) return Errno{ENOSPC};
    // null and zero discard; writes to random/urandom would mix into the pool: discard.
    return vfs::IovecsLength(src);
  }
  // Character devices accept any seek and stay at 0 (Linux's null/zero lseek).
  SysResult<int64_t> Seek(int64_t, int) override { return int64_t{0}; }
  SysStatus ConfigureMMap(mm::MMapOpts& opts) override {
    // mmap of /dev/zero is an anonymous mapping: no filler, zero pages.
    if (dev_ != Dev::kZero) return Errno{ENODEV};
    opts.fill = nullptr;
    return SysOk();
  }

 private:
  Dev dev_;
};

class DevInode : public vfs::Inode {
 public:
  // Inodes own their filesystem (it references no inode, so no cycle).
  DevInode(std::shared_ptr<vfs::Filesystem> fs, vfs::Attr attr) : fs_(std::move(fs)), attr_(attr) {}
  vfs::Filesystem& fs() override { return *fs_; }
  SysResult<vfs::Attr> Stat() override { return attr_; }
  uint32_t FileType() override { return attr_.mode & S_IFMT; }
  SysStatus SetAttr(const vfs::SetAttrRequest& req) override {
    // Sizes of devices are meaningless (O_TRUNC on /dev/null must succeed): ignored.
    struct timespec now = vfs::NowTimespec();
    if (req.mask & vfs::kSetMode) attr_.mode = (attr_.mode & S_IFMT) | (req.mode & 07777);
    if (req.mask & vfs::kSetUid) attr_.uid = req.uid;
    if (req.mask & vfs::kSetGid) attr_.gid = req.gid;
    if (req.mask & vfs::kSetAtime) attr_.atime = req.atime.tv_nsec == UTIME_NOW ? now : req.atime;
    if (req.mask & vfs::kSetMtime) attr_.mtime = req.mtime.tv_nsec == UTIME_NOW ? now : req.mtime;
    attr_.ctime = now;
    return SysOk();
  }

 protected:
  std::shared_ptr<vfs::Filesystem> fs_;
  vfs::Attr attr_;
};

class DevCharInode : public DevInode {
 public:
  DevCharInode(std::shared_ptr<vfs::Filesystem> fs, vfs::Attr attr, Dev dev, Kernel* k,
               int host_tty_fd)
      : DevInode(std::move(fs), attr), dev_(dev), kernel_(k), host_tty_fd_(host_tty_fd) {}
  // /dev/tty: the caller's controlling pty comes first.
  void set_devpts(std::weak_ptr<Devpts> d) { devpts_ = std::move(d); }
  SysResult<std::shared_ptr<vfs::FileDescription>> Open(const vfs::Path& path, int flags) override {
    if (dev_ == Dev::kTty) {
      auto devpts = devpts_.lock();
      Task* t = CurrentTask();
      if (devpts && t != nullptr) {
        if (auto f = devpts->OpenControlling(*t, path, flags)) return f;
      }
    }
    if (dev_ == Dev::kTty || dev_ == Dev::kPts0) {
      // No controlling terminal in the sandbox without a host one (Linux: ENXIO).
      if (kernel_ == nullptr || host_tty_fd_ < 0) return Errno{ENXIO};
      return NewHostFile(*kernel_, host_tty_fd_, flags);
    }
    return std::shared_ptr<vfs::FileDescription>(
        std::make_shared<DevDescription>(path, flags, dev_));
  }

 private:
  Dev dev_;
  Kernel* kernel_;
  int host_tty_fd_;
  std::weak_ptr<Devpts> devpts_;
};

class DevSymlinkInode : public DevInode {
 public:
  DevSymlinkInode(std::shared_ptr<vfs::Filesystem> fs, vfs::Attr attr, std::string target)
      : DevInode(std::move(fs), attr), target_(std::move(target)) {}
  SysResult<std::string> Readlink() override { return target_; }

 private:
  std::string target_;
};

// A fixed directory: its entries are made once at mount.
class DevDirInode : public DevInode {
 public:
  using DevInode::DevInode;
  void Add(std::string name, std::shared_ptr<vfs::Inode> inode) {
    children_[std::move(name)] = std::move(inode);
  }
  SysResult<std::shared_ptr<vfs::Inode>> Lookup(std::string_view name) override {
    auto it = children_.find(std::string(name));
    if (it == children_.end()) return Errno{ENOENT};
    return it->second;
  }
  SysResult<std::vector<vfs::DirEntry>> ReadDir() override {
    std::vector<vfs::DirEntry> out;
    for (const auto& [name, inode] : children_) {
      auto a = inode->Stat();
      out.push_back({name, a.ok() ? a->ino : 0, vfs::DirentTypeOf(inode->FileType())});
    }
    return out;
  }

 private:
  std::map<std::string, std::shared_ptr<vfs::Inode>> children_;
};

}  // namespace

std::shared_ptr<vfs::Inode> NewDevfsRoot(Kernel* kernel, int host_tty_fd, uint32_t uid,
                                         uint32_t gid) {
  auto fs = std::make_shared<DevFilesystem>();
  struct timespec now = vfs::NowTimespec();
  uint64_t next_ino = 1;
  auto attr = [&](uint32_t mode, uint64_t rdev) {
    vfs::Attr a;
    a.dev = fs->dev();
    a.ino = next_ino++;
    a.mode = mode;
    a.rdev = rdev;
    a.atime = a.mtime = a.ctime = now;
    return a;
  };
  auto root = std::make_shared<DevDirInode>(fs, attr(S_IFDIR | 0755, 0));
  struct Node {
    const char* name;
    Dev dev;
    uint32_t major, minor;
  };
  const Node nodes[] = {{"null", Dev::kNull, 1, 3},       {"zero", Dev::kZero, 1, 5},
                        {"full", Dev::kFull, 1, 7},       {"random", Dev::kRandom, 1, 8},
                        {"urandom", Dev::kURandom, 1, 9}, {"tty", Dev::kTty, 5, 0}};
  std::shared_ptr<DevCharInode> tty;
  for (const Node& n : nodes) {
    auto node = std::make_shared<DevCharInode>(
        fs, attr(S_IFCHR | 0666, LinuxMakedev(n.major, n.minor)), n.dev, kernel, host_tty_fd);
    if (n.dev == Dev::kTty) tty = node;
    root->Add(n.name, node);
  }
  auto link = [&](const char* name, std::string target) {
    root->Add(name,
              std::make_shared<DevSymlinkInode>(fs, attr(S_IFLNK | 0777, 0), std::move(target)));
  };
  link("fd", "/proc/self/fd");
  link("stdin", "/proc/self/fd/0");
  link("stdout", "/proc/self/fd/1");
  link("stderr", "/proc/self/fd/2");
  std::shared_ptr<vfs::Inode> host_pts;
  if (host_tty_fd >= 0) {
    // Same identity as fstat of a host-tty stdio FD, so ttyname(3) resolves to it.
    vfs::Attr a = HostTtyAttr(uid, gid);
    host_pts = std::make_shared<DevCharInode>(fs, a, Dev::kPts0, kernel, host_tty_fd);
  }
  // /dev/pts: pseudo-terminal pairs made by opening /dev/ptmx (or /dev/pts/ptmx, the
  // same node), beside the host terminal as pts/0.
  vfs::Attr ptmx_attr = attr(S_IFCHR | 0666, LinuxMakedev(5, 2));
  auto pts = Devpts::Create(fs, kernel, attr(S_IFDIR | 0755, 0), ptmx_attr, host_pts);
  tty->set_devpts(pts);
  root->Add("pts", pts);
  root->Add("ptmx", pts->ptmx());
  // Mountpoint of the sandbox's /dev/shm tmpfs (MountDevfs mounts it).
  root->Add("shm", std::make_shared<DevDirInode>(fs, attr(S_IFDIR | 01777, 0)));
  return root;
}

absl::Status MountDevfs(vfs::Vfs& vfs, Kernel& kernel, absl::Span<const int> stdio_host_fds) {
  int tty_fd = -1;
  for (int fd : stdio_host_fds) {
    struct termios t;
    if (ioctl(fd, TCGETS, &t) == 0) {
      tty_fd = fd;
      break;
    }
  }
  const Credentials& c = kernel.options().initial_creds;
  std::shared_ptr<vfs::Inode> root = NewDevfsRoot(&kernel, tty_fd, c.euid, c.egid);
  // The mount wants the Filesystem as a shared_ptr; the root inode owns it.
  std::shared_ptr<vfs::Filesystem> fs(root, &root->fs());
  auto m = vfs.MountAt("/dev", fs, root, 0);
  if (!m.ok()) {
    return absl::ErrnoToStatus(m.error(), "MountAt(/dev, devtmpfs)");
  }
  // POSIX shared memory and semaphores (shm_open, sem_open: Python multiprocessing) live
  // in /dev/shm: a small tmpfs of its own, sized like Docker's default.
  auto shm_fs = std::make_shared<TmpfsFilesystem>(std::make_shared<ByteBudget>(kDevShmBytes),
                                                  &kernel.memory_file());
  auto shm = vfs.MountAt("/dev/shm", shm_fs, shm_fs->NewRoot(01777, 0, 0), 0);
  if (!shm.ok()) return absl::ErrnoToStatus(shm.error(), "MountAt(/dev/shm, tmpfs)");
  return absl::OkStatus();
}

}  // namespace usentry::sentry::fsimpl
