// The gofer-backed fs and the assembled sandbox view, against a real gofer server on a
// thread serving temporary host directories.
#include "sentry/fsimpl/gofer_fs.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gofer/gofer_test_util.h"
#include "gtest/gtest.h"
#include "sentry/fsimpl/sandbox_vfs.h"

namespace usentry::sentry::fsimpl {
namespace {

using gofer::testing::GoferHarness;
using gofer::testing::TempDir;

class SandboxVfsTest : public ::testing::Test {
 protected:
  SandboxVfsTest() {
    chmod(root_.path().c_str(), 0755);  // mkdtemp makes it 0700: others could not search "/"
    root_.Mkdir("etc");
    root_.WriteFile("etc/passwd", "root:x:0:0");
    root_.Mkdir("bin");
    root_.WriteFile("bin/tool", "#!/bin/sh\n", 0755);
    rw_.WriteFile("data.txt", "hello");
    ro_.WriteFile("ro.txt", "ro");
    gofer::GoferConfig gc;
    gc.trees.push_back(gofer::TreeConfig{"root", root_.path(), true, std::nullopt, {}});
    gc.trees.push_back(gofer::TreeConfig{"mount0", rw_.path(), false, std::nullopt, {}});
    gc.trees.push_back(gofer::TreeConfig{"mount1", ro_.path(), true, std::nullopt, {}});
    harness_ = std::make_unique<GoferHarness>(gc);
    VfsConfig cfg;
    cfg.mounts = {MountSpec{"mount0", "/work/rw", false}, MountSpec{"mount1", "/mnt/ro", true}};
    cfg.workdir = "/workspace";
    cfg.tmpfs_limit_bytes = 1 << 20;
    cfg.memory_file = mf_.get();
    auto v = BuildSandboxVfs(harness_->client(), cfg);
    EXPECT_TRUE(v.ok()) << v.status();
    if (v.ok()) vfs_ = std::move(v).value();
  }
  ~SandboxVfsTest() override { vfs_.reset(); }

  vfs::ResolveContext Ctx() { return {&creds_, vfs_->root(), vfs_->root(), 022}; }
  std::string Read(const std::string& path) {
    auto f = vfs_->Open(Ctx(), path, O_RDONLY, 0);
    if (!f.ok()) return "<errno " + std::to_string(f.error()) + ">";
    std::string out(4096, '\0');
    iovec v{out.data(), out.size()};
    auto n = (*f)->Read(nullptr, absl::MakeConstSpan(&v, 1), -1);
    out.resize(n.ok() ? *n : 0);
    return out;
  }
  SysStatus Write(const std::string& path, const std::string& s, int flags) {
    auto f = vfs_->Open(Ctx(), path, O_WRONLY | flags, 0644);
    if (!f.ok()) return Errno{f.error()};
    iovec v{const_cast<char*>(s.data()), s.size()};
    auto n = (*f)->Write(nullptr, absl::MakeConstSpan(&v, 1), -1);
    if (!n.ok()) return Errno{n.error()};
    return SysOk();
  }
  std::vector<std::string> List(const std::string& path) {
    std::vector<std::string> out;
    auto f = vfs_->Open(Ctx(), path, O_RDONLY | O_DIRECTORY, 0);
    if (!f.ok()) return {"<errno>"};
    (void)(*f)->IterateDir([&](const vfs::DirEntry& e, int64_t) {
      out.push_back(e.name);
      return true;
    });
    return out;
  }

  TempDir root_, rw_, ro_;
  std::unique_ptr<mm::MemoryFile> mf_ = *mm::MemoryFile::Create(1ull << 32);  // tmpfs data
  std::unique_ptr<GoferHarness> harness_;
  std::unique_ptr<vfs::Vfs> vfs_;
  Credentials creds_;
};

TEST_F(SandboxVfsTest, LayoutAndLowerReads) {
  ASSERT_TRUE(vfs_);
  EXPECT_EQ(Read("/etc/passwd"), "root:x:0:0");
  auto tmp = vfs_->Resolve(Ctx(), "/tmp", true);
  ASSERT_TRUE(tmp.ok());
  EXPECT_EQ(tmp->inode()->Stat()->mode & 07777, 01777u);
  EXPECT_EQ(tmp->mount->fs().name(), "tmpfs");
  EXPECT_TRUE(vfs_->Resolve(Ctx(), "/workspace", true).ok());
  EXPECT_TRUE(vfs_->Resolve(Ctx(), "/dev", true).ok());
  EXPECT_TRUE(vfs_->Resolve(Ctx(), "/proc", true).ok());
  auto l = List("/");
  EXPECT_NE(std::find(l.begin(), l.end(), "etc"), l.end());
  EXPECT_NE(std::find(l.begin(), l.end(), "workspace"), l.end());
}

TEST_F(SandboxVfsTest, OverlayWritesNeverReachTheHostLower) {
  ASSERT_TRUE(vfs_);
  ASSERT_TRUE(Write("/etc/passwd", "+evil", O_APPEND).ok());
  EXPECT_EQ(Read("/etc/passwd"), "root:x:0:0+evil");
  EXPECT_EQ(root_.ReadFile("etc/passwd"), "root:x:0:0");
  ASSERT_TRUE(vfs_->Unlink(Ctx(), "/bin/tool").ok());
  EXPECT_EQ(vfs_->Resolve(Ctx(), "/bin/tool", true).error(), ENOENT);
  EXPECT_EQ(List("/bin"), (std::vector<std::string>{".", ".."}));
  EXPECT_EQ(root_.ReadFile("bin/tool"), "#!/bin/sh\n");
  ASSERT_TRUE(Write("/bin/tool", "new", O_CREAT).ok());
  EXPECT_EQ(Read("/bin/tool"), "new");
}

TEST_F(SandboxVfsTest, RwMountWritesThroughRoMountRefuses) {
  ASSERT_TRUE(vfs_);
  EXPECT_EQ(Read("/work/rw/data.txt"), "hello");
  ASSERT_TRUE(Write("/work/rw/data.txt", " world", O_APPEND).ok());
  EXPECT_EQ(rw_.ReadFile("data.txt"), "hello world");
  ASSERT_TRUE(Write("/work/rw/new.txt", "n", O_CREAT | O_EXCL).ok());
  EXPECT_EQ(rw_.ReadFile("new.txt"), "n");
  ASSERT_TRUE(vfs_->Mkdir(Ctx(), "/work/rw/sub", 0755).ok());
  ASSERT_TRUE(vfs_->Rename(Ctx(), "/work/rw/new.txt", Ctx(), "/work/rw/sub/moved", 0).ok());
  EXPECT_EQ(rw_.ReadFile("sub/moved"), "n");
  ASSERT_TRUE(vfs_->Unlink(Ctx(), "/work/rw/sub/moved").ok());
  ASSERT_TRUE(vfs_->Rmdir(Ctx(), "/work/rw/sub").ok());
  EXPECT_EQ(List("/work/rw"), (std::vector<std::string>{".", "..", "data.txt"}));
  EXPECT_EQ(Read("/mnt/ro/ro.txt"), "ro");
  EXPECT_EQ(Write("/mnt/ro/ro.txt", "x", 0).error(), EROFS);
  EXPECT_EQ(vfs_->Mkdir(Ctx(), "/mnt/ro/d", 0755).error(), EROFS);
  EXPECT_EQ(vfs_->Rename(Ctx(), "/work/rw/data.txt", Ctx(), "/data.txt", 0).error(), EXDEV);
}

// Host-side changes: --mount trees (writable or read-only) are asked every time; the
// root's lower layer is cached for the run (attributes and absent names), the
// documented trade.
TEST_F(SandboxVfsTest, HostChangesSeenInMountsCachedInTheRoot) {
  ASSERT_TRUE(vfs_);
  auto size_of = [&](const std::string& path) -> int64_t {
    auto p = vfs_->Resolve(Ctx(), path, true);
    if (!p.ok()) return -p.error();
    auto a = p->inode()->Stat();
    return a.ok() ? a->size : -a.error();
  };
  EXPECT_EQ(size_of("/work/rw/later.txt"), -ENOENT);
  rw_.WriteFile("later.txt", "abc");
  EXPECT_EQ(Read("/work/rw/later.txt"), "abc");
  rw_.WriteFile("later.txt", "abcdef");
  EXPECT_EQ(size_of("/work/rw/later.txt"), 6);

  EXPECT_EQ(size_of("/mnt/ro/later.log"), -ENOENT);
  ro_.WriteFile("later.log", "abc");
  EXPECT_EQ(size_of("/mnt/ro/later.log"), 3);
  ro_.WriteFile("later.log", "abcdef");
  EXPECT_EQ(size_of("/mnt/ro/later.log"), 6);
  EXPECT_EQ(Read("/mnt/ro/later.log"), "abcdef");

  EXPECT_EQ(size_of("/etc/later"), -ENOENT);
  root_.WriteFile("etc/later", "abc");
  EXPECT_EQ(size_of("/etc/later"), -ENOENT);
  EXPECT_EQ(size_of("/etc/passwd"), 10);
  root_.WriteFile("etc/passwd", "root:x:0:0:extended");
  EXPECT_EQ(size_of("/etc/passwd"), 10);
}

// In the root's lower layer a directory's names are remembered once it was listed, or
// after its second miss; later misses and listings there are answered without the gofer
// (which the host-side files created afterwards show: they stay invisible). Mount trees
// keep asking.
TEST_F(SandboxVfsTest, ListedOrTwiceMissedRootDirectoriesAnswerMissesThemselves) {
  ASSERT_TRUE(vfs_);
  auto exists = [&](const std::string& path) { return vfs_->Resolve(Ctx(), path, true).ok(); };
  root_.WriteFile("etc/listed-later", "x");  // on the host before the listing below
  EXPECT_FALSE(exists("/etc/a"));
  root_.WriteFile("etc/after-one-miss", "x");
  EXPECT_TRUE(exists("/etc/after-one-miss"));  // one miss: still asked
  EXPECT_FALSE(exists("/etc/b"));              // the second miss lists /etc
  root_.WriteFile("etc/after-listing", "x");
  EXPECT_FALSE(exists("/etc/after-listing"));
  EXPECT_TRUE(exists("/etc/listed-later"));  // listed, first looked up now
  EXPECT_TRUE(exists("/etc/passwd"));

  EXPECT_EQ(List("/bin"), (std::vector<std::string>{".", "..", "tool"}));
  root_.WriteFile("bin/two", "x");
  EXPECT_FALSE(exists("/bin/two"));
  EXPECT_TRUE(exists("/bin/tool"));
  // The listing itself is kept: listing again asks the gofer nothing.
  const uint64_t n = harness_->client().round_trips();
  EXPECT_EQ(List("/bin"), (std::vector<std::string>{".", "..", "tool"}));
  EXPECT_EQ(harness_->client().round_trips(), n);

  EXPECT_FALSE(exists("/mnt/ro/a"));
  EXPECT_FALSE(exists("/mnt/ro/b"));
  EXPECT_EQ(List("/mnt/ro"), (std::vector<std::string>{".", "..", "ro.txt"}));
  ro_.WriteFile("c", "x");
  EXPECT_TRUE(exists("/mnt/ro/c"));
}

// A program that looks up a listed directory's names in the listing's order (`ls -l`)
// gets the names after the third walked ahead, up to 16 a round trip; lookups in another
// order walk one name a round trip and speculate nothing.
TEST_F(SandboxVfsTest, LookupsInListingOrderWalkTheNamesAheadTogether) {
  ASSERT_TRUE(vfs_);
  for (const char* dir : {"etc/many", "etc/shuffled"}) {
    root_.Mkdir(dir);
    for (int i = 0; i < 40; ++i) {
      root_.WriteFile(absl::StrCat(dir, "/f", i), std::string(i, 'x'));
    }
  }
  gofer::Client& gc = harness_->client();
  auto names_of = [&](const std::string& dir) {
    std::vector<std::string> names = List(dir);
    std::erase_if(names, [](const std::string& n) { return n == "." || n == ".."; });
    return names;
  };
  auto size_of = [&](const std::string& path) -> int64_t {
    auto p = vfs_->Resolve(Ctx(), path, true);
    if (!p.ok()) return -1;
    auto a = p->inode()->Stat();
    return a.ok() ? a->size : -1;
  };

  std::vector<std::string> in_order = names_of("/etc/many");
  ASSERT_EQ(in_order.size(), 40u);
  uint64_t n = gc.round_trips();
  for (const std::string& name : in_order) {
    EXPECT_EQ(size_of("/etc/many/" + name), std::stoi(name.substr(1))) << name;
  }
  // Two single walks, then 38 names in batches of at most 16.
  EXPECT_EQ(gc.round_trips(), n + 2 + 3);
  EXPECT_EQ(gc.RoundTripsByOp()["walk_siblings"], 3u);

  std::vector<std::string> reversed = names_of("/etc/shuffled");
  std::reverse(reversed.begin(), reversed.end());
  n = gc.round_trips();
  for (const std::string& name : reversed) {
    EXPECT_EQ(size_of("/etc/shuffled/" + name), std::stoi(name.substr(1))) << name;
  }
  EXPECT_EQ(gc.round_trips(), n + 40);
  EXPECT_EQ(gc.RoundTripsByOp()["walk_siblings"], 3u);
}

// Round trips to the gofer that opening files of the read-only root costs: the open of
// a file (or directory) not looked up before is answered with its lookup, a second
// open of it costs none, and so does a miss in a directory whose names are known.
TEST_F(SandboxVfsTest, ReadOnlyOpensTakeOneRoundTrip) {
  ASSERT_TRUE(vfs_);
  root_.Mkdir("etc/sub");
  root_.WriteFile("etc/sub/f", "sub");
  gofer::Client& gc = harness_->client();
  ASSERT_TRUE(vfs_->Resolve(Ctx(), "/etc", true).ok());
  uint64_t n = gc.round_trips();
  EXPECT_EQ(Read("/etc/passwd"), "root:x:0:0");
  EXPECT_EQ(gc.round_trips(), n + 1);
  EXPECT_EQ(Read("/etc/passwd"), "root:x:0:0");
  EXPECT_EQ(gc.round_trips(), n + 1);
  EXPECT_EQ(Read("/etc/sub/f"), "sub");  // the directory on the way is walked with it
  EXPECT_EQ(gc.round_trips(), n + 2);
  n = gc.round_trips();
  EXPECT_EQ(List("/bin"), (std::vector<std::string>{".", "..", "tool"}));
  EXPECT_EQ(gc.round_trips(), n + 2);  // WalkOpen, then ReadDir
  n = gc.round_trips();
  EXPECT_EQ(Read("/bin/missing"), "<errno " + std::to_string(ENOENT) + ">");
  EXPECT_EQ(Read("/bin/tool"), "#!/bin/sh\n");
  EXPECT_EQ(gc.round_trips(), n + 1);
  // Writing opens (which copy up into the overlay) and mount trees keep their paths.
  EXPECT_TRUE(Write("/etc/sub/f", "w", O_APPEND).ok());
  EXPECT_EQ(Read("/etc/sub/f"), "subw");
  EXPECT_EQ(root_.ReadFile("etc/sub/f"), "sub");
  EXPECT_EQ(Read("/work/rw/data.txt"), "hello");
  EXPECT_EQ(Read("/mnt/ro/ro.txt"), "ro");
}

// In the root's lower layer a walk through directories not looked up before is one
// round trip (LookupAhead): to a file it opens, to a miss, and on from a symlink. The VFS
// still checks each step: what the gofer walked ahead for a caller who may not search a
// directory on the way stays hidden from them.
TEST_F(SandboxVfsTest, NewDirectoriesOnAPathTakeOneRoundTrip) {
  ASSERT_TRUE(vfs_);
  // (Under /etc: the fixture made the root's names known, and "usr" is not among them.)
  root_.Mkdir("etc/lib");
  root_.Mkdir("etc/lib/py");
  root_.Mkdir("etc/lib/py/enc");
  root_.WriteFile("etc/lib/py/enc/mod.py", "m");
  root_.Mkdir("etc/share");
  ASSERT_EQ(symlink("py", root_.Join("etc/lib/link").c_str()), 0);
  root_.Mkdir("etc/lib/closed");
  ASSERT_EQ(chmod(root_.Join("etc/lib/closed").c_str(), 0700), 0);
  root_.WriteFile("etc/lib/closed/f", "secret");
  gofer::Client& gc = harness_->client();
  uint64_t n = gc.round_trips();
  EXPECT_EQ(Read("/etc/lib/py/enc/mod.py"), "m");
  EXPECT_EQ(gc.round_trips(), n + 1);
  n = gc.round_trips();
  EXPECT_EQ(vfs_->Resolve(Ctx(), "/etc/share/missing", true).error(), ENOENT);
  EXPECT_EQ(gc.round_trips(), n + 1);  // "share", and its miss, in one
  EXPECT_EQ(vfs_->Resolve(Ctx(), "/etc/share/missing", true).error(), ENOENT);
  EXPECT_EQ(gc.round_trips(), n + 1);
  EXPECT_EQ(vfs_->Resolve(Ctx(), "/etc/lib/py/nothere/x", true).error(), ENOENT);
  EXPECT_EQ(vfs_->Resolve(Ctx(), "/etc/lib/py/enc/mod.py/x", true).error(), ENOTDIR);
  n = gc.round_trips();
  EXPECT_EQ(Read("/etc/lib/link/enc/mod.py"), "m");  // the walk stops at the link
  EXPECT_EQ(gc.round_trips(), n + 1);
  EXPECT_EQ(Read("/etc/lib/py/../py/./enc/mod.py"), "m");
  // A symlink on the way: its target's walk looks ahead to the rest of the path too.
  root_.Mkdir("etc/lib/py2");
  root_.Mkdir("etc/lib/py2/sub");
  root_.Mkdir("etc/lib/py2/sub/x");
  root_.WriteFile("etc/lib/py2/sub/x/f", "f");
  ASSERT_EQ(symlink("py2/sub", root_.Join("etc/lib/deep").c_str()), 0);
  n = gc.round_trips();
  EXPECT_EQ(Read("/etc/lib/deep/x/f"), "f");
  EXPECT_EQ(gc.round_trips(), n + 2);  // deep (a link, the walk stops), py2/sub/x/f

  Credentials user;
  user.ruid = user.euid = user.suid = user.fsuid = 1000;
  user.rgid = user.egid = user.sgid = user.fsgid = 1000;
  const vfs::ResolveContext as_user{&user, vfs_->root(), vfs_->root(), 022};
  n = gc.round_trips();
  EXPECT_EQ(vfs_->Open(as_user, "/etc/lib/closed/f", O_RDONLY, 0).error(), EACCES);
  EXPECT_EQ(vfs_->Resolve(as_user, "/etc/lib/closed/f", true).error(), EACCES);
  EXPECT_EQ(gc.round_trips(), n + 1);
  // What was walked ahead serves the next caller who may search there.
  EXPECT_EQ(Read("/etc/lib/closed/f"), "secret");
  EXPECT_EQ(gc.round_trips(), n + 1);
  // Mount trees (not cached) still walk one component at a time.
  rw_.Mkdir("a");
  rw_.WriteFile("a/b", "ab");
  n = gc.round_trips();
  EXPECT_EQ(Read("/work/rw/a/b"), "ab");
  EXPECT_EQ(gc.round_trips(), n + 4);  // Walk a, Walk b, Stat b (live), Open b
}

// execve's open (the binary, then its interpreter) of a file not looked up before is one
// round trip too; execute permission is enough, read permission is not needed, and a
// file without it or a directory is EACCES.
TEST_F(SandboxVfsTest, ExecOpensTakeOneRoundTripAndNeedOnlyExecute) {
  ASSERT_TRUE(vfs_);
  root_.WriteFile("bin/xonly", "#!/bin/x\n", 0711);
  root_.WriteFile("bin/plain", "data", 0644);
  gofer::Client& gc = harness_->client();
  ASSERT_TRUE(vfs_->Resolve(Ctx(), "/bin", true).ok());
  Credentials user;
  user.ruid = user.euid = user.suid = user.fsuid = 1000;
  user.rgid = user.egid = user.sgid = user.fsgid = 1000;
  const vfs::ResolveContext as_user{&user, vfs_->root(), vfs_->root(), 022};
  const auto first_line = [](vfs::FileDescription& f) {
    std::string out(64, '\0');
    iovec v{out.data(), out.size()};
    auto got = f.Read(nullptr, absl::MakeConstSpan(&v, 1), 0);
    out.resize(got.ok() ? *got : 0);
    return out;
  };
  uint64_t n = gc.round_trips();
  auto x = vfs_->OpenForExec(as_user, "/bin/xonly");
  ASSERT_TRUE(x.ok()) << x.error();
  EXPECT_EQ(gc.round_trips(), n + 1);
  EXPECT_EQ(first_line(**x), "#!/bin/x\n");
  EXPECT_EQ(vfs_->Open(as_user, "/bin/xonly", O_RDONLY, 0).error(), EACCES);
  EXPECT_EQ(vfs_->OpenForExec(as_user, "/bin/plain").error(), EACCES);
  EXPECT_EQ(vfs_->OpenForExec(Ctx(), "/bin/plain").error(), EACCES);  // root needs an x bit
  EXPECT_EQ(vfs_->OpenForExec(Ctx(), "/bin").error(), EACCES);
  EXPECT_EQ(vfs_->OpenForExec(Ctx(), "/bin/missing").error(), ENOENT);
  EXPECT_EQ(vfs_->OpenForExec(Ctx(), "").error(), ENOENT);
}

// Reading descriptions of one read-only file share a host FD: offsets stay separate,
// and closing one leaves the others working.
TEST_F(SandboxVfsTest, ReadersOfOneFileKeepTheirOwnOffsets) {
  ASSERT_TRUE(vfs_);
  auto a = vfs_->Open(Ctx(), "/etc/passwd", O_RDONLY, 0);
  auto b = vfs_->Open(Ctx(), "/etc/passwd", O_RDONLY, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  auto read = [](vfs::FileDescription& f, size_t n) {
    std::string out(n, '\0');
    iovec v{out.data(), out.size()};
    auto got = f.Read(nullptr, absl::MakeConstSpan(&v, 1), -1);
    out.resize(got.ok() ? *got : 0);
    return out;
  };
  EXPECT_EQ(read(**a, 5), "root:");
  EXPECT_EQ(read(**b, 4), "root");
  a->reset();
  EXPECT_EQ(read(**b, 100), ":x:0:0");
  EXPECT_EQ(Read("/etc/passwd"), "root:x:0:0");
}

TEST_F(SandboxVfsTest, MmapFillerReadsHostFile) {
  ASSERT_TRUE(vfs_);
  auto f = vfs_->Open(Ctx(), "/work/rw/data.txt", O_RDONLY, 0);
  ASSERT_TRUE(f.ok());
  mm::MMapOpts opts;
  opts.len = 4096;
  opts.prot = PROT_READ;
  opts.flags = MAP_PRIVATE;
  ASSERT_TRUE((*f)->ConfigureMMap(opts).ok());
  std::vector<uint8_t> page(4096, 0xff);
  std::fill(page.begin(), page.end(), 0);
  ASSERT_TRUE(opts.fill(page.data(), page.size(), 0).ok());
  EXPECT_EQ(std::string(page.begin(), page.begin() + 5), "hello");
  EXPECT_EQ(page[5], 0);
  EXPECT_EQ(opts.name, "/work/rw/data.txt");
  mm::MMapOpts shared = opts;
  shared.flags = MAP_SHARED;
  shared.prot = PROT_READ | PROT_WRITE;
  EXPECT_EQ((*f)->ConfigureMMap(shared).error(), EACCES);
}

TEST_F(SandboxVfsTest, TmpIsStickyAndSeparate) {
  ASSERT_TRUE(vfs_);
  Credentials alice, bob;
  alice.fsuid = alice.euid = 1000;
  bob.fsuid = bob.euid = 1001;
  vfs::ResolveContext a{&alice, vfs_->root(), vfs_->root(), 022};
  vfs::ResolveContext b{&bob, vfs_->root(), vfs_->root(), 022};
  ASSERT_TRUE(vfs_->Open(a, "/tmp/alice", O_CREAT | O_WRONLY, 0666).ok());
  EXPECT_EQ(vfs_->Unlink(b, "/tmp/alice").error(), EPERM);
  EXPECT_EQ(vfs_->Rename(b, "/tmp/alice", b, "/tmp/bob", 0).error(), EPERM);
  EXPECT_TRUE(vfs_->Unlink(a, "/tmp/alice").ok());
  // Bob cannot create in the read-only-for-others overlay root.
  EXPECT_EQ(vfs_->Open(b, "/bobfile", O_CREAT | O_WRONLY, 0644).error(), EACCES);
}

}  // namespace
}  // namespace usentry::sentry::fsimpl

namespace usentry::sentry::fsimpl {
namespace {

// The default host view: list real host directories (symlinks, many entries), then tear
// the whole tree down while the gofer is still connected.
TEST(SandboxVfsHostTest, ListHostDirectoriesAndTearDown) {
  gofer::GoferConfig gc;
  gc.trees.push_back(gofer::DefaultRootTree());
  GoferHarness h(gc);
  VfsConfig cfg;
  auto mf = *mm::MemoryFile::Create(1ull << 32);
  cfg.memory_file = mf.get();
  auto v = BuildSandboxVfs(h.client(), cfg);
  ASSERT_TRUE(v.ok()) << v.status();
  Credentials root;
  vfs::ResolveContext ctx{&root, (*v)->root(), (*v)->root(), 022};
  for (const char* dir : {"/usr", "/usr/local", "/etc", "/"}) {
    auto f = (*v)->Open(ctx, dir, O_RDONLY | O_DIRECTORY, 0);
    ASSERT_TRUE(f.ok()) << dir;
    std::vector<std::string> names;
    ASSERT_TRUE((*f)->IterateDir([&](const vfs::DirEntry& e, int64_t) {
                      names.push_back(e.name);
                      return true;
                    })
                    .ok());
    EXPECT_GT(names.size(), 2u) << dir;
    for (const auto& n : names) {
      if (n == "." || n == "..") continue;
      std::string p = std::string(dir) + (std::string(dir) == "/" ? "" : "/") + n;
      (void)(*v)->Resolve(ctx, p, false);
    }
  }
  v->reset();
}

}  // namespace
}  // namespace usentry::sentry::fsimpl
