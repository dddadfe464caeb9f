// End-to-end gofer tests: Client <-> Serve() over a socketpair against temp directories.
// Reads, FD donation, directory listing, mutations on a rw tree checked on the host disk,
// EROFS on a ro tree.
#include "gofer/server.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/cpu_pin.h"
#include "gofer/client.h"
#include "gofer/gofer_test_util.h"
#include "gtest/gtest.h"

namespace usentry::gofer {
namespace {

using testing::GoferHarness;
using testing::TempDir;

class GoferServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ro_.WriteFile("file.txt", "hello");
    ro_.Mkdir("dir");
    ro_.WriteFile("dir/inner", "in");
    rw_.WriteFile("existing", "old");
    rw_.Mkdir("sub");
    GoferConfig config;
    config.trees.push_back(RootfsTree(ro_.path()));
    config.trees.push_back(MountTree(0, rw_.path(), /*read_only=*/false));
    config.trees.push_back(MountTree(1, rw2_.path(), /*read_only=*/false));
    harness_ = std::make_unique<GoferHarness>(config);
  }
  Client& c() { return harness_->client(); }
  Handle AttachOk(const std::string& tree) {
    auto r = c().Attach(tree);
    EXPECT_TRUE(r.ok()) << tree << " errno " << r.error();
    return r.ok() ? r->first.handle : 0;
  }
  Handle WalkOk(Handle dir, const std::string& name) {
    auto r = c().Walk(dir, name);
    EXPECT_TRUE(r.ok()) << name << " errno " << r.error();
    return r.ok() ? r->handle : 0;
  }
  static struct stat HostStat(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
    return st;
  }

  TempDir ro_, rw_, rw2_;
  std::unique_ptr<GoferHarness> harness_;
};

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  return out;
}

TEST_F(GoferServerTest, AttachWalkStatOpenRead) {
  auto root = c().Attach("root");
  ASSERT_TRUE(root.ok());
  EXPECT_TRUE(root->second);
  EXPECT_TRUE(S_ISDIR(root->first.attr.mode));
  auto mount = c().Attach("mount0");
  ASSERT_TRUE(mount.ok());
  EXPECT_FALSE(mount->second);

  auto file = c().Walk(root->first.handle, "file.txt");
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE(S_ISREG(file->attr.mode));
  EXPECT_EQ(file->attr.size, 5);
  EXPECT_EQ(file->attr.ino, HostStat(ro_.Join("file.txt")).st_ino);

  auto st = c().Stat(file->handle);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->ino, file->attr.ino);
  EXPECT_EQ(st->size, 5);

  auto fd = c().Open(file->handle, O_RDONLY);
  ASSERT_TRUE(fd.ok());
  ASSERT_TRUE(fd->valid());
  EXPECT_EQ(ReadAll(fd->get()), "hello");
  EXPECT_TRUE(fcntl(fd->get(), F_GETFD) & FD_CLOEXEC);

  Handle dir = WalkOk(root->first.handle, "dir");
  Handle inner = WalkOk(dir, "inner");
  auto fd2 = c().Open(inner, O_RDONLY);
  ASSERT_TRUE(fd2.ok());
  EXPECT_EQ(ReadAll(fd2->get()), "in");
  EXPECT_TRUE(harness_->Stop().ok());
}

TEST_F(GoferServerTest, AttachUnknownTreeAndWalkErrors) {
  EXPECT_EQ(c().Attach("nope").error(), ENOENT);
  Handle root = AttachOk("root");
  EXPECT_EQ(c().Walk(root, "missing").error(), ENOENT);
  Handle file = WalkOk(root, "file.txt");
  EXPECT_EQ(c().Walk(file, "x").error(), ENOTDIR);
  EXPECT_EQ(c().ReadDir(file).error(), ENOTDIR);
}

TEST_F(GoferServerTest, ReadDirListsEntries) {
  Handle root = AttachOk("root");
  auto entries = c().ReadDir(root);
  ASSERT_TRUE(entries.ok());
  std::set<std::string> names;
  for (const DirEntry& e : *entries) {
    names.insert(e.name);
    if (e.name == "dir") {
      EXPECT_EQ(e.type, DT_DIR);
    }
    if (e.name == "file.txt") {
      EXPECT_EQ(e.type, DT_REG);
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"file.txt", "dir"}));
}

std::vector<int> CpusOf(pid_t tid) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  EXPECT_EQ(sched_getaffinity(tid, sizeof(mask), &mask), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mask)) cpus.push_back(c);
  }
  return cpus;
}

void HoldOn(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
}

// The server waits for the next request on the CPU its client waited on for the last
// answer (base/cpu_pin.h), and the client gets the CPUs it had back when it lets go.
TEST_F(GoferServerTest, TheServerWaitsOnTheCpuItsClientWaitsOn) {
  const std::vector<int> mine = CpusOf(0);
  const pid_t server = harness_->server_tid();
  const std::vector<int> server_had = CpusOf(server);
  Handle root = AttachOk("root");
  Handle file = WalkOk(root, "file.txt");
  if (mine.size() < 2) {
    ASSERT_TRUE(c().Stat(file).ok());
    EXPECT_EQ(CpusOf(server), server_had);  // one CPU: nowhere to move
    return;
  }
  for (int cpu : {mine.back(), mine.front(), mine.back()}) {
    HoldOn(cpu);
    ASSERT_TRUE(c().Stat(file).ok());
    EXPECT_EQ(CpusOf(server), std::vector<int>{cpu});
    EXPECT_EQ(CpusOf(0), std::vector<int>{cpu});
  }
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int c : mine) CPU_SET(c, &all);
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
  // Free again, the client names the CPU it waits on and stays held there after the
  // call, until it is about to sleep (ReleaseThreadCpu).
  ASSERT_TRUE(c().Stat(file).ok());
  const std::vector<int> held = CpusOf(0);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(CpusOf(server), held);
  ASSERT_TRUE(c().Stat(file).ok());
  EXPECT_EQ(CpusOf(0), held);
  ReleaseThreadCpu();
  EXPECT_EQ(CpusOf(0), mine);
}

// The client counts what waited for an answer, by operation: each ReadDir page is one,
// a Close (no answer) none.
TEST_F(GoferServerTest, RoundTripsAreCountedByOperation) {
  EXPECT_TRUE(c().RoundTripsByOp().empty());
  Handle root = AttachOk("root");
  Handle file = WalkOk(root, "file.txt");
  ASSERT_TRUE(c().Stat(file).ok());
  ASSERT_TRUE(c().Stat(file).ok());
  EXPECT_EQ(c().Walk(root, "missing").error(), ENOENT);  // an error answer is a trip too
  c().Close(file);
  auto path = c().WalkPath(root, {"dir", "inner"}, /*open_last=*/true);
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(c().RoundTripsByOp(), (std::map<std::string, uint64_t>{
                                      {"attach", 1}, {"stat", 2}, {"walk", 2}, {"walk_path", 1}}));
  EXPECT_EQ(c().round_trips(), 6u);
}

TEST_F(GoferServerTest, ReadDirPaginatesLargeDirectories) {
  // 1000 names of 200 bytes are ~210 KiB encoded: several 64 KiB pages.
  std::set<std::string> expected;
  rw_.Mkdir("big");
  for (int i = 0; i < 1000; ++i) {
    std::string name = std::to_string(i) + std::string(200, 'n');
    rw_.WriteFile("big/" + name, "");
    expected.insert(name);
  }
  Handle big = WalkOk(AttachOk("mount0"), "big");
  auto entries = c().ReadDir(big);
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ(entries->size(), 1000u);  // no duplicates across pages
  std::set<std::string> got;
  for (const DirEntry& e : *entries) got.insert(e.name);
  EXPECT_EQ(got, expected);
}

TEST_F(GoferServerTest, OpenFlagsAndTypes) {
  Handle root = AttachOk("root");
  Handle dir = WalkOk(root, "dir");
  // Directories are listed with ReadDir; no host directory FD is donated.
  auto dfd = c().Open(dir, O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(dfd.ok());
  EXPECT_FALSE(dfd->valid());
  Handle file = WalkOk(root, "file.txt");
  EXPECT_EQ(c().Open(file, O_RDONLY | O_DIRECTORY).error(), ENOTDIR);
  EXPECT_EQ(c().Open(file, O_RDONLY | O_CREAT).error(), EINVAL);
  EXPECT_EQ(c().Open(file, O_ACCMODE).error(), EINVAL);

  Handle mount = AttachOk("mount0");
  Handle sub = WalkOk(mount, "sub");
  EXPECT_EQ(c().Open(sub, O_WRONLY).error(), EISDIR);
  // The donated FD carries no O_NONBLOCK.
  Handle existing = WalkOk(mount, "existing");
  auto fd = c().Open(existing, O_RDWR | O_APPEND);
  ASSERT_TRUE(fd.ok());
  int fl = fcntl(fd->get(), F_GETFL);
  EXPECT_EQ(fl & O_NONBLOCK, 0);
  EXPECT_NE(fl & O_APPEND, 0);
  ASSERT_EQ(write(fd->get(), "+new", 4), 4);
  EXPECT_EQ(rw_.ReadFile("existing"), "old+new");
  auto tfd = c().Open(existing, O_WRONLY | O_TRUNC);
  ASSERT_TRUE(tfd.ok());
  EXPECT_EQ(rw_.ReadFile("existing"), "");
}

TEST_F(GoferServerTest, DevicesFifosAndSocketsAreNeverOpened) {
  ASSERT_EQ(mkfifo(rw_.Join("fifo").c_str(), 0644), 0);
  ASSERT_EQ(mknod(rw_.Join("null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  Handle mount = AttachOk("mount0");
  auto fifo = c().Walk(mount, "fifo");
  ASSERT_TRUE(fifo.ok());
  EXPECT_TRUE(S_ISFIFO(fifo->attr.mode));
  EXPECT_EQ(c().Open(fifo->handle, O_RDONLY).error(), EACCES);
  auto dev = c().Walk(mount, "null");
  ASSERT_TRUE(dev.ok());
  EXPECT_TRUE(S_ISCHR(dev->attr.mode));
  EXPECT_EQ(dev->attr.rdev, makedev(1, 3));
  EXPECT_EQ(c().Open(dev->handle, O_RDWR).error(), EACCES);
}

// WalkOpen: the node and, in the same answer, the read-only Open the sentry would ask
// next; types the gofer never opens come back unopened.
TEST_F(GoferServerTest, WalkOpenAnswersTheReadOnlyOpenToo) {
  ASSERT_EQ(mkfifo(rw_.Join("fifo").c_str(), 0644), 0);
  ASSERT_EQ(symlink("existing", rw_.Join("lnk").c_str()), 0);
  Handle root = AttachOk("root");
  Handle mount = AttachOk("mount0");
  const uint64_t before = c().round_trips();
  auto file = c().WalkOpen(root, "file.txt");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(c().round_trips(), before + 1);
  EXPECT_TRUE(S_ISREG(file->node.attr.mode));
  EXPECT_EQ(file->open_err, 0);
  ASSERT_TRUE(file->fd.valid());
  EXPECT_EQ(ReadAll(file->fd.get()), "hello");
  EXPECT_EQ(write(file->fd.get(), "x", 1), -1);  // read-only

  auto dir = c().WalkOpen(root, "dir");
  ASSERT_TRUE(dir.ok());
  EXPECT_TRUE(S_ISDIR(dir->node.attr.mode));
  EXPECT_EQ(dir->open_err, 0);
  EXPECT_FALSE(dir->fd.valid());  // directories are listed with ReadDir, never donated
  EXPECT_TRUE(c().Walk(dir->node.handle, "inner").ok());

  auto fifo = c().WalkOpen(mount, "fifo");
  ASSERT_TRUE(fifo.ok());
  EXPECT_TRUE(S_ISFIFO(fifo->node.attr.mode));
  EXPECT_FALSE(fifo->fd.valid());
  EXPECT_FALSE(fifo->sibling.has_value());

  // A symlink to a name in the same directory comes with that name walked and opened
  // (the next step of an open that follows it), in the same round trip; any other
  // target, or one that does not walk, comes without.
  ASSERT_EQ(symlink("sub/../existing", rw_.Join("far").c_str()), 0);
  ASSERT_EQ(symlink("absent", rw_.Join("dangling").c_str()), 0);
  ASSERT_EQ(symlink("lnk", rw_.Join("lnk2").c_str()), 0);
  const uint64_t before_links = c().round_trips();
  auto lnk = c().WalkOpen(mount, "lnk");
  ASSERT_TRUE(lnk.ok());
  EXPECT_EQ(c().round_trips(), before_links + 1);
  EXPECT_EQ(lnk->node.link_target, "existing");
  ASSERT_TRUE(lnk->sibling.has_value());
  EXPECT_TRUE(S_ISREG(lnk->sibling->attr.mode));
  EXPECT_EQ(lnk->sibling->attr.ino, HostStat(rw_.Join("existing")).st_ino);
  EXPECT_EQ(lnk->open_err, 0);
  ASSERT_TRUE(lnk->fd.valid());
  EXPECT_EQ(ReadAll(lnk->fd.get()), "old");
  EXPECT_TRUE(c().Stat(lnk->sibling->handle).ok());
  for (const char* name : {"far", "dangling"}) {
    auto other = c().WalkOpen(mount, name);
    ASSERT_TRUE(other.ok()) << name;
    EXPECT_TRUE(S_ISLNK(other->node.attr.mode)) << name;
    EXPECT_FALSE(other->sibling.has_value()) << name;
    EXPECT_FALSE(other->fd.valid()) << name;
  }
  // One step only: a link to a link comes with the second link, unopened.
  auto chain = c().WalkOpen(mount, "lnk2");
  ASSERT_TRUE(chain.ok());
  ASSERT_TRUE(chain->sibling.has_value());
  EXPECT_TRUE(S_ISLNK(chain->sibling->attr.mode));
  EXPECT_EQ(chain->sibling->link_target, "existing");
  EXPECT_FALSE(chain->fd.valid());
  // WalkPath's last name gets the same.
  auto path_lnk = c().WalkPath(mount, {"lnk"}, /*open_last=*/true);
  ASSERT_TRUE(path_lnk.ok());
  ASSERT_TRUE(path_lnk->sibling.has_value());
  EXPECT_TRUE(path_lnk->fd.valid());
  auto no_open = c().WalkPath(mount, {"lnk"}, /*open_last=*/false);
  ASSERT_TRUE(no_open.ok());
  EXPECT_FALSE(no_open->sibling.has_value());

  EXPECT_EQ(c().WalkOpen(root, "missing").error(), ENOENT);
  EXPECT_EQ(c().WalkOpen(root, "..").error(), EINVAL);
  EXPECT_EQ(c().WalkOpen(file->node.handle, "x").error(), ENOTDIR);
}

// WalkPath: a path of directories in one round trip, ending at the end, at a file, at
// a symlink, or at the first name that fails; with open_last, the last name's open.
TEST_F(GoferServerTest, WalkPathWalksSeveralComponentsInOneRoundTrip) {
  rw_.Mkdir("sub/deep");
  rw_.WriteFile("sub/deep/f", "deep");
  ASSERT_EQ(symlink("deep", rw_.Join("sub/l").c_str()), 0);
  Handle mount = AttachOk("mount0");
  uint64_t before = c().round_trips();
  auto all = c().WalkPath(mount, {"sub", "deep", "f"}, /*open_last=*/true);
  ASSERT_TRUE(all.ok()) << all.error();
  EXPECT_EQ(c().round_trips(), before + 1);
  ASSERT_EQ(all->nodes.size(), 3u);
  EXPECT_TRUE(S_ISDIR(all->nodes[0].attr.mode));
  EXPECT_TRUE(S_ISDIR(all->nodes[1].attr.mode));
  EXPECT_TRUE(S_ISREG(all->nodes[2].attr.mode));
  EXPECT_EQ(all->nodes[2].attr.ino, HostStat(rw_.Join("sub/deep/f")).st_ino);
  EXPECT_EQ(all->stop_err, 0);
  EXPECT_EQ(all->open_err, 0);
  ASSERT_TRUE(all->fd.valid());
  EXPECT_EQ(ReadAll(all->fd.get()), "deep");
  EXPECT_EQ(write(all->fd.get(), "x", 1), -1);  // a read-only open, even in a rw tree
  // Every node is a handle of its own.
  EXPECT_TRUE(c().Walk(all->nodes[1].handle, "f").ok());

  auto no_open = c().WalkPath(mount, {"sub", "deep", "f"}, false);
  ASSERT_TRUE(no_open.ok());
  EXPECT_EQ(no_open->nodes.size(), 3u);
  EXPECT_FALSE(no_open->fd.valid());
  auto dir = c().WalkPath(mount, {"sub", "deep"}, true);
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->nodes.size(), 2u);
  EXPECT_EQ(dir->open_err, 0);
  EXPECT_FALSE(dir->fd.valid());  // directories are never donated

  auto link = c().WalkPath(mount, {"sub", "l", "f"}, true);
  ASSERT_TRUE(link.ok());
  ASSERT_EQ(link->nodes.size(), 2u);
  EXPECT_EQ(link->nodes[1].link_target, "deep");
  EXPECT_EQ(link->stop_err, 0);
  EXPECT_FALSE(link->fd.valid());
  auto file = c().WalkPath(mount, {"existing", "x"}, true);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->nodes.size(), 1u);
  EXPECT_EQ(file->stop_err, 0);
  EXPECT_FALSE(file->fd.valid());  // the walk did not reach the last name
  auto miss = c().WalkPath(mount, {"sub", "missing", "f"}, true);
  ASSERT_TRUE(miss.ok());
  EXPECT_EQ(miss->nodes.size(), 1u);
  EXPECT_EQ(miss->stop_err, ENOENT);

  EXPECT_EQ(c().WalkPath(mount, {"missing", "f"}, true).error(), ENOENT);
  EXPECT_EQ(c().WalkPath(mount, {}, true).error(), EINVAL);
  EXPECT_EQ(c().WalkPath(mount, {"sub", ".."}, true).error(), EINVAL);
  std::vector<std::string_view> many(Client::kMaxWalkNames + 1, "sub");
  EXPECT_EQ(c().WalkPath(mount, many, false).error(), EINVAL);
  many.resize(Client::kMaxWalkNames);
  auto longest = c().WalkPath(mount, many, false);  // sub, then "sub" is not in sub
  ASSERT_TRUE(longest.ok());
  EXPECT_EQ(longest->stop_err, ENOENT);
  // Read-only trees open the last name too.
  Handle root = AttachOk("root");
  auto ro = c().WalkPath(root, {"dir", "inner"}, true);
  ASSERT_TRUE(ro.ok());
  ASSERT_TRUE(ro->fd.valid());
  EXPECT_EQ(ReadAll(ro->fd.get()), "in");
}

// WalkSiblings: several names of one directory in one round trip, files, directories and
// symlinks alike, up to the first name that fails.
TEST_F(GoferServerTest, WalkSiblingsWalksSeveralNamesOfOneDirectoryInOneRoundTrip) {
  rw_.Mkdir("sibs");
  rw_.WriteFile("a", "a");
  ASSERT_EQ(symlink("sibs", rw_.Join("l").c_str()), 0);
  Handle mount = AttachOk("mount0");
  uint64_t before = c().round_trips();
  auto all = c().WalkSiblings(mount, {"a", "sibs", "l", "existing"});
  ASSERT_TRUE(all.ok()) << all.error();
  EXPECT_EQ(c().round_trips(), before + 1);
  ASSERT_EQ(all->nodes.size(), 4u);
  EXPECT_TRUE(S_ISREG(all->nodes[0].attr.mode));
  EXPECT_EQ(all->nodes[0].attr.ino, HostStat(rw_.Join("a")).st_ino);
  EXPECT_TRUE(S_ISDIR(all->nodes[1].attr.mode));
  EXPECT_TRUE(S_ISLNK(all->nodes[2].attr.mode));
  EXPECT_EQ(all->nodes[2].link_target, "sibs");  // a node, never followed
  EXPECT_EQ(all->nodes[3].attr.ino, HostStat(rw_.Join("existing")).st_ino);
  EXPECT_EQ(all->stop_err, 0);
  EXPECT_FALSE(all->fd.valid());
  // Every node is a handle of its own.
  EXPECT_EQ(c().Walk(all->nodes[1].handle, "x").error(), ENOENT);  // the empty directory
  EXPECT_TRUE(c().Stat(all->nodes[3].handle).ok());

  auto stop = c().WalkSiblings(mount, {"a", "missing", "sibs"});
  ASSERT_TRUE(stop.ok());
  EXPECT_EQ(stop->nodes.size(), 1u);
  EXPECT_EQ(stop->stop_err, ENOENT);
  EXPECT_EQ(c().WalkSiblings(mount, {"missing", "a"}).error(), ENOENT);
  EXPECT_EQ(c().WalkSiblings(mount, {}).error(), EINVAL);
  EXPECT_EQ(c().WalkSiblings(mount, {"a", "sibs/x"}).error(), EINVAL);
  std::vector<std::string_view> many(Client::kMaxWalkNames + 1, "a");
  EXPECT_EQ(c().WalkSiblings(mount, many).error(), EINVAL);
  many.resize(Client::kMaxWalkNames);
  auto longest = c().WalkSiblings(mount, many);
  ASSERT_TRUE(longest.ok());
  EXPECT_EQ(longest->nodes.size(), Client::kMaxWalkNames);
}

TEST_F(GoferServerTest, CreateWritesHostFileWithExactMode) {
  Handle mount = AttachOk("mount0");
  mode_t old_umask = umask(077);  // the gofer's umask must not change the mode
  auto created = c().Create(mount, "new.txt", O_RDWR, 0664);
  umask(old_umask);
  ASSERT_TRUE(created.ok());
  EXPECT_TRUE(S_ISREG(created->first.attr.mode));
  ASSERT_EQ(write(created->second.get(), "data", 4), 4);
  EXPECT_EQ(rw_.ReadFile("new.txt"), "data");
  struct stat st = HostStat(rw_.Join("new.txt"));
  EXPECT_EQ(st.st_mode & 07777, 0664u);
  EXPECT_EQ(st.st_ino, created->first.attr.ino);
  // O_EXCL: an existing name, or a dangling symlink, is never opened.
  EXPECT_EQ(c().Create(mount, "existing", O_RDWR, 0644).error(), EEXIST);
  ASSERT_EQ(symlink("/tmp/gofer_should_not_exist", rw_.Join("dangling").c_str()), 0);
  EXPECT_EQ(c().Create(mount, "dangling", O_RDWR, 0644).error(), EEXIST);
  EXPECT_NE(access("/tmp/gofer_should_not_exist", F_OK), 0);
  // No set-uid files from the sandbox.
  auto suid = c().Create(mount, "suid", O_RDWR, 04755);
  ASSERT_TRUE(suid.ok());
  EXPECT_EQ(HostStat(rw_.Join("suid")).st_mode & 07777, 0755u);
}

TEST_F(GoferServerTest, MkdirSymlinkLinkOnHost) {
  Handle mount = AttachOk("mount0");
  mode_t old_umask = umask(077);
  auto d = c().Mkdir(mount, "newdir", 0750);
  umask(old_umask);
  ASSERT_TRUE(d.ok());
  struct stat st = HostStat(rw_.Join("newdir"));
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  EXPECT_EQ(c().Mkdir(mount, "newdir", 0750).error(), EEXIST);
  auto nested = c().Mkdir(d->handle, "nested", 0700);
  ASSERT_TRUE(nested.ok());
  EXPECT_TRUE(S_ISDIR(HostStat(rw_.Join("newdir/nested")).st_mode));

  auto l = c().Symlink(mount, "lnk", "../../somewhere");
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(S_ISLNK(l->attr.mode));
  char buf[64] = {};
  ASSERT_EQ(readlink(rw_.Join("lnk").c_str(), buf, sizeof(buf)), 15);
  EXPECT_STREQ(buf, "../../somewhere");
  EXPECT_EQ(l->link_target, "../../somewhere");
  auto target = c().Readlink(l->handle);
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(*target, "../../somewhere");
  // A walk brings the target along (the sentry then never asks Readlink); other nodes
  // carry none.
  auto walked = c().Walk(mount, "lnk");
  ASSERT_TRUE(walked.ok());
  EXPECT_EQ(walked->link_target, "../../somewhere");
  EXPECT_EQ(c().Walk(mount, "newdir")->link_target, "");
  Handle existing = WalkOk(mount, "existing");
  EXPECT_EQ(c().Readlink(existing).error(), EINVAL);

  auto hard = c().Link(d->handle, "hard", existing);
  ASSERT_TRUE(hard.ok());
  EXPECT_EQ(HostStat(rw_.Join("newdir/hard")).st_ino, HostStat(rw_.Join("existing")).st_ino);
  EXPECT_EQ(HostStat(rw_.Join("existing")).st_nlink, 2u);
  // Linking a symlink node links the link, not its target.
  auto lnk2 = c().Link(mount, "lnk2", l->handle);
  ASSERT_TRUE(lnk2.ok());
  EXPECT_TRUE(S_ISLNK(HostStat(rw_.Join("lnk2")).st_mode));
  // A link's target must be in the same tree.
  Handle other = AttachOk("mount1");
  EXPECT_EQ(c().Link(other, "x", existing).error(), EXDEV);
  Handle ro_file = WalkOk(AttachOk("root"), "file.txt");
  EXPECT_EQ(c().Link(mount, "y", ro_file).error(), EXDEV);
  EXPECT_EQ(c().Link(mount, "z", d->handle).error(), EPERM);
}

TEST_F(GoferServerTest, UnlinkAndRenameOnHost) {
  Handle mount = AttachOk("mount0");
  ASSERT_TRUE(c().Unlink(mount, "existing", 0).ok());
  EXPECT_NE(access(rw_.Join("existing").c_str(), F_OK), 0);
  EXPECT_EQ(c().Unlink(mount, "existing", 0).error(), ENOENT);
  EXPECT_EQ(c().Unlink(mount, "sub", 0).error(), EISDIR);
  EXPECT_EQ(c().Unlink(mount, "sub", 0x4000).error(), EINVAL);
  ASSERT_TRUE(c().Unlink(mount, "sub", AT_REMOVEDIR).ok());
  EXPECT_NE(access(rw_.Join("sub").c_str(), F_OK), 0);

  rw_.WriteFile("a", "A");
  rw_.WriteFile("b", "B");
  rw_.Mkdir("d");
  Handle d = WalkOk(mount, "d");
  ASSERT_TRUE(c().Rename(mount, "a", d, "a2", 0).ok());
  EXPECT_EQ(rw_.ReadFile("d/a2"), "A");
  EXPECT_EQ(c().Rename(d, "a2", mount, "b", RENAME_NOREPLACE).error(), EEXIST);
  ASSERT_TRUE(c().Rename(d, "a2", mount, "b", RENAME_EXCHANGE).ok());
  EXPECT_EQ(rw_.ReadFile("b"), "A");
  EXPECT_EQ(rw_.ReadFile("d/a2"), "B");
  EXPECT_EQ(c().Rename(mount, "b", mount, "c", RENAME_WHITEOUT).error(), EINVAL);
  Handle other = AttachOk("mount1");
  EXPECT_EQ(c().Rename(mount, "b", other, "b", 0).error(), EXDEV);
  EXPECT_EQ(rw_.ReadFile("b"), "A");
}

TEST_F(GoferServerTest, SetAttrOnHost) {
  Handle mount = AttachOk("mount0");
  Handle f = WalkOk(mount, "existing");
  SetAttrRequest req;
  req.mask = kSetMode | kSetSize | kSetMtime | kSetAtime;
  req.mode = 0600;
  req.size = 1;
  req.atime = {1000, 0};
  req.mtime = {2000, 500};
  ASSERT_TRUE(c().SetAttr(f, req).ok());
  struct stat st = HostStat(rw_.Join("existing"));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_size, 1);
  EXPECT_EQ(st.st_atim.tv_sec, 1000);
  EXPECT_EQ(st.st_mtim.tv_sec, 2000);
  EXPECT_EQ(st.st_mtim.tv_nsec, 500);
  auto attr = c().Stat(f);
  ASSERT_TRUE(attr.ok());
  EXPECT_EQ(attr->mtime.tv_sec, 2000);

  // UTIME_OMIT leaves a time alone; set-uid is stripped.
  req = {};
  req.mask = kSetMode | kSetMtime;
  req.mode = 04755;
  req.mtime = {0, UTIME_OMIT};
  ASSERT_TRUE(c().SetAttr(f, req).ok());
  st = HostStat(rw_.Join("existing"));
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(st.st_mtim.tv_sec, 2000);

  req = {};
  req.mask = kSetUid | kSetGid;
  req.uid = 1234;
  req.gid = 5678;
  ASSERT_TRUE(c().SetAttr(f, req).ok());  // the tests run as root
  st = HostStat(rw_.Join("existing"));
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 5678u);

  Handle sub = WalkOk(mount, "sub");
  req = {};
  req.mask = kSetSize;
  EXPECT_EQ(c().SetAttr(sub, req).error(), EISDIR);
  req.mask = 1u << 20;
  EXPECT_EQ(c().SetAttr(f, req).error(), EINVAL);
  auto lnk = c().Symlink(mount, "l", "existing");
  ASSERT_TRUE(lnk.ok());
  req = {};
  req.mask = kSetMode;
  req.mode = 0;
  EXPECT_EQ(c().SetAttr(lnk->handle, req).error(), EOPNOTSUPP);
  EXPECT_EQ(HostStat(rw_.Join("existing")).st_mode & 07777, 0755u);
}

TEST_F(GoferServerTest, ReadOnlyTreeRefusesEveryWrite) {
  Handle root = AttachOk("root");
  Handle file = WalkOk(root, "file.txt");
  Handle dir = WalkOk(root, "dir");
  EXPECT_EQ(c().Open(file, O_WRONLY).error(), EROFS);
  EXPECT_EQ(c().Open(file, O_RDWR).error(), EROFS);
  EXPECT_EQ(c().Open(file, O_RDONLY | O_TRUNC).error(), EROFS);
  EXPECT_EQ(c().Create(root, "n", O_RDWR, 0644).error(), EROFS);
  EXPECT_EQ(c().Mkdir(root, "n", 0755).error(), EROFS);
  EXPECT_EQ(c().Symlink(root, "n", "x").error(), EROFS);
  EXPECT_EQ(c().Link(root, "n", file).error(), EROFS);
  EXPECT_EQ(c().Unlink(root, "file.txt", 0).error(), EROFS);
  EXPECT_EQ(c().Unlink(root, "dir", AT_REMOVEDIR).error(), EROFS);
  EXPECT_EQ(c().Rename(root, "file.txt", dir, "moved", 0).error(), EROFS);
  SetAttrRequest req;
  req.mask = kSetMode;
  req.mode = 0777;
  EXPECT_EQ(c().SetAttr(file, req).error(), EROFS);
  req.mask = kSetSize;
  EXPECT_EQ(c().SetAttr(file, req).error(), EROFS);

  EXPECT_EQ(ro_.ReadFile("file.txt"), "hello");
  EXPECT_EQ(HostStat(ro_.Join("file.txt")).st_mode & 07777, 0644u);
  EXPECT_NE(access(ro_.Join("n").c_str(), F_OK), 0);
  EXPECT_NE(access(ro_.Join("dir/moved").c_str(), F_OK), 0);
  // Reading still works.
  auto fd = c().Open(file, O_RDONLY);
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(ReadAll(fd->get()), "hello");
}

TEST_F(GoferServerTest, DeadHandlesAreEbadf) {
  EXPECT_EQ(c().Stat(12345).error(), EBADF);
  EXPECT_EQ(c().Walk(0, "x").error(), EBADF);
  EXPECT_EQ(c().Open(~0ull, O_RDONLY).error(), EBADF);
  EXPECT_EQ(c().ReadDir(777).error(), EBADF);
  Handle root = AttachOk("mount0");
  EXPECT_EQ(c().Link(root, "x", 4242).error(), EBADF);
  EXPECT_EQ(c().Rename(root, "existing", 4242, "x", 0).error(), EBADF);
  Handle f = WalkOk(root, "existing");
  c().Close(f);
  EXPECT_EQ(c().Stat(f).error(), EBADF);
  EXPECT_EQ(c().Open(f, O_RDONLY).error(), EBADF);
  // Other handles are unaffected.
  EXPECT_TRUE(c().Stat(root).ok());
  // Closes are not answered, not even for dead handles: requests and responses stay
  // paired after them.
  c().Close(4242);
  c().Close(f);
  EXPECT_TRUE(c().Stat(root).ok());
  EXPECT_EQ(c().Walk(root, "existing").ok(), true);
}

TEST_F(GoferServerTest, HandlesFollowRenames) {
  Handle mount = AttachOk("mount0");
  rw_.WriteFile("sub/f", "x");
  Handle sub = WalkOk(mount, "sub");
  Handle f = WalkOk(sub, "f");
  ASSERT_TRUE(c().Rename(mount, "sub", mount, "moved", 0).ok());
  // The O_PATH handle keeps working after its directory moved.
  auto fd = c().Open(f, O_RDONLY);
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(ReadAll(fd->get()), "x");
  EXPECT_TRUE(c().Walk(sub, "f").ok());
}

int CountOpenFds() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++n;
  }
  return n;
}

TEST(GoferServeTest, NoFdLeaksAcrossASession) {
  TempDir dir;
  dir.WriteFile("f", "x");
  int before = CountOpenFds();
  {
    GoferConfig config;
    config.trees.push_back(MountTree(0, dir.path(), false));
    GoferHarness harness(config);
    Client& c = harness.client();
    auto root = c.Attach("mount0");
    ASSERT_TRUE(root.ok());
    int steady = 0;
    for (int i = 0; i < 50; ++i) {
      if (i == 1) {
        ASSERT_TRUE(c.Stat(root->first.handle).ok());  // iteration 0's Closes are done
        steady = CountOpenFds();
      }
      auto f = c.Walk(root->first.handle, "f");
      ASSERT_TRUE(f.ok());
      { auto fd = c.Open(f->handle, O_RDONLY); }
      (void)c.ReadDir(root->first.handle);
      (void)c.Open(root->first.handle, O_RDONLY);  // directory: opened, not donated
      auto created = c.Create(root->first.handle, "c" + std::to_string(i), O_RDWR, 0644);
      ASSERT_TRUE(created.ok());
      (void)c.Walk(root->first.handle, "missing");
      c.Close(f->handle);
      c.Close(created->first.handle);
    }
    // Closed handles and donated FDs are released while the session runs, not at its end.
    // Close is not answered; any later answered request shows it has been handled.
    ASSERT_TRUE(c.Stat(root->first.handle).ok());
    EXPECT_EQ(CountOpenFds(), steady);
    c.Close(root->first.handle);
    EXPECT_TRUE(harness.Stop().ok());
  }
  EXPECT_EQ(CountOpenFds(), before);
}

TEST(GoferServeTest, BadConfigFailsWithNamedCall) {
  GoferConfig config;
  config.trees.push_back(MountTree(0, "/nonexistent/gofer/dir", false));
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  close(sv[0]);
  absl::Status st = Serve(config, UniqueFd(sv[1]));
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(st.message().find("open(\"/nonexistent/gofer/dir\""), std::string::npos)
      << st.message();
}

TEST(GoferServeTest, BrokenSocketIsEio) {
  GoferConfig config;
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  close(sv[1]);
  Client client{UniqueFd(sv[0])};
  EXPECT_EQ(client.Attach("root").error(), EIO);
  EXPECT_EQ(client.Stat(1).error(), EIO);
}

}  // namespace
}  // namespace usentry::gofer
