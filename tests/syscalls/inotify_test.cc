// inotify: instance flags, inotify_add_watch/rm_watch argument checks, the events each
// change produces (and their order, names, cookies), merging, IN_ONESHOT, IN_IGNORED,
// overflow, the read(2) record format, FIONREAD, poll and blocking reads, fdinfo.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

struct Ev {
  int wd;
  uint32_t mask;
  uint32_t cookie;
  std::string name;
};

std::string Describe(const std::vector<Ev>& evs) {
  std::ostringstream o;
  for (const Ev& e : evs) {
    o << "{wd " << e.wd << " mask 0x" << std::hex << e.mask << std::dec << " cookie " << e.cookie
      << " '" << e.name << "'} ";
  }
  return o.str();
}

// Every event queued now (the instance must be non-blocking).
std::vector<Ev> Drain(int fd) {
  std::vector<Ev> out;
  alignas(inotify_event) char buf[64 * 1024];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      out.push_back({e->wd, e->mask, e->cookie, e->len ? std::string(e->name) : ""});
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
  return out;
}

// The masks only, in order.
std::vector<uint32_t> Masks(const std::vector<Ev>& evs) {
  std::vector<uint32_t> m;
  for (const Ev& e : evs) m.push_back(e.mask);
  return m;
}

void Touch(const std::string& path) {
  int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_SYS_OK(fd);
  close(fd);
}

class Inotify : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    ASSERT_SYS_OK(fd_);
  }
  void TearDown() override { close(fd_); }
  int Watch(const std::string& path, uint32_t mask) {
    return inotify_add_watch(fd_, path.c_str(), mask);
  }
  int fd_ = -1;
  TempDir dir_;
};

TEST(InotifyInit, FlagsAndUnknownFlags) {
  EXPECT_ERRNO(inotify_init1(0x1), EINVAL);
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_SYS_OK(fd);
  EXPECT_TRUE(fcntl(fd, F_GETFL) & O_NONBLOCK);
  EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
  char buf[256];
  EXPECT_ERRNO(read(fd, buf, sizeof(buf)), EAGAIN);
  close(fd);
  fd = inotify_init();
  ASSERT_SYS_OK(fd);
  EXPECT_FALSE(fcntl(fd, F_GETFL) & O_NONBLOCK);
  EXPECT_EQ(fcntl(fd, F_GETFD), 0);
  close(fd);
}

TEST_F(Inotify, AddWatchArgumentErrors) {
  const std::string file = dir_.Child("f");
  Touch(file);
  EXPECT_ERRNO(Watch(file, 0), EINVAL);
  EXPECT_ERRNO(Watch(file, IN_MODIFY | 0x1000), EINVAL);  // no such bit
  EXPECT_ERRNO(Watch(file, IN_MODIFY | IN_MASK_ADD | IN_MASK_CREATE), EINVAL);
  EXPECT_ERRNO(inotify_add_watch(9999, file.c_str(), IN_MODIFY), EBADF);
  ScopedFd not_inotify(open(file.c_str(), O_RDONLY));
  EXPECT_ERRNO(inotify_add_watch(not_inotify.get(), file.c_str(), IN_MODIFY), EINVAL);
  EXPECT_ERRNO(Watch(dir_.Child("missing"), IN_MODIFY), ENOENT);
  EXPECT_ERRNO(Watch(file, IN_MODIFY | IN_ONLYDIR), ENOTDIR);
  EXPECT_ERRNO(inotify_add_watch(fd_, reinterpret_cast<const char*>(8), IN_MODIFY), EFAULT);
  EXPECT_ERRNO(inotify_rm_watch(fd_, 12345), EINVAL);
  EXPECT_ERRNO(inotify_rm_watch(not_inotify.get(), 1), EINVAL);
}

TEST_F(Inotify, OneWatchDescriptorPerInode) {
  const std::string a = dir_.Child("a"), b = dir_.Child("b");
  Touch(a);
  Touch(b);
  ASSERT_EQ(link(a.c_str(), dir_.Child("a2").c_str()), 0);
  int wa = Watch(a, IN_MODIFY);
  ASSERT_SYS_OK(wa);
  EXPECT_EQ(Watch(a, IN_ATTRIB), wa);
  EXPECT_EQ(Watch(dir_.Child("a2"), IN_ATTRIB), wa);  // the same inode by another name
  EXPECT_ERRNO(Watch(a, IN_ATTRIB | IN_MASK_CREATE), EEXIST);
  int wb = Watch(b, IN_MODIFY);
  ASSERT_SYS_OK(wb);
  EXPECT_NE(wa, wb);
}

TEST_F(Inotify, CreateInAWatchedDirectoryNamesTheEntry) {
  int wd = Watch(dir_.path(), IN_CREATE);
  ASSERT_SYS_OK(wd);
  Touch(dir_.Child("new"));
  ASSERT_EQ(mkdir(dir_.Child("sub").c_str(), 0755), 0);
  ASSERT_EQ(symlink("new", dir_.Child("ln").c_str()), 0);
  std::vector<Ev> evs = Drain(fd_);
  ASSERT_EQ(evs.size(), 3u) << Describe(evs);
  EXPECT_EQ(evs[0].wd, wd);
  EXPECT_EQ(evs[0].mask, uint32_t{IN_CREATE});
  EXPECT_EQ(evs[0].cookie, 0u);
  EXPECT_EQ(evs[0].name, "new");
  EXPECT_EQ(evs[1].mask, uint32_t{IN_CREATE | IN_ISDIR});
  EXPECT_EQ(evs[1].name, "sub");
  EXPECT_EQ(evs[2].mask, uint32_t{IN_CREATE});
  EXPECT_EQ(evs[2].name, "ln");
}

TEST_F(Inotify, RecordLengthIsPaddedToTheHeaderSize) {
  ASSERT_SYS_OK(Watch(dir_.path(), IN_CREATE));
  Touch(dir_.Child("abc"));
  alignas(inotify_event) char buf[256];
  ssize_t n = read(fd_, buf, sizeof(buf));
  ASSERT_EQ(n, static_cast<ssize_t>(sizeof(inotify_event) + 16));
  const auto* e = reinterpret_cast<const inotify_event*>(buf);
  EXPECT_EQ(e->len, 16u);
  EXPECT_STREQ(e->name, "abc");
  for (uint32_t i = 3; i < e->len; ++i) EXPECT_EQ(e->name[i], '\0') << i;
}

TEST_F(Inotify, WriteSequenceOnAWatchedFile) {
  const std::string file = dir_.Child("f");
  Touch(file);
  int wd = Watch(file, IN_ALL_EVENTS);
  ASSERT_SYS_OK(wd);
  int fd = open(file.c_str(), O_WRONLY);
  ASSERT_SYS_OK(fd);
  ASSERT_EQ(write(fd, "xy", 2), 2);
  ASSERT_EQ(write(fd, "z", 1), 1);  // merged with the identical event before it
  close(fd);
  std::vector<Ev> evs = Drain(fd_);
  EXPECT_EQ(Masks(evs), (std::vector<uint32_t>{IN_OPEN, IN_MODIFY, IN_CLOSE_WRITE}))
      << Describe(evs);
  for (const Ev& e : evs) {
    EXPECT_EQ(e.wd, wd);
    EXPECT_EQ(e.name, "");
  }
}

TEST_F(Inotify, ReadSequenceOnAWatchedFile) {
  const std::string file = dir_.Child("f");
  {
    ScopedFd w(open(file.c_str(), O_CREAT | O_WRONLY, 0644));
    ASSERT_EQ(write(w.get(), "data", 4), 4);
  }
  ASSERT_SYS_OK(Watch(file, IN_ALL_EVENTS));
  int fd = open(file.c_str(), O_RDONLY);
  ASSERT_SYS_OK(fd);
  char buf[8];
  ASSERT_EQ(read(fd, buf, sizeof(buf)), 4);
  ASSERT_EQ(read(fd, buf, sizeof(buf)), 0);  // nothing read: no event
  close(fd);
  std::vector<Ev> evs = Drain(fd_);
  EXPECT_EQ(Masks(evs), (std::vector<uint32_t>{IN_OPEN, IN_ACCESS, IN_CLOSE_NOWRITE}))
      << Describe(evs);
}

TEST_F(Inotify, DirectoryWatchSeesChildEventsWithTheirNames) {
  const std::string file = dir_.Child("child");
  Touch(file);
  int wd = Watch(dir_.path(), IN_MODIFY | IN_CLOSE_WRITE);
  ASSERT_SYS_OK(wd);
  {
    ScopedFd fd(open(file.c_str(), O_WRONLY));
    ASSERT_EQ(write(fd.get(), "x", 1), 1);
  }
  std::vector<Ev> evs = Drain(fd_);
  ASSERT_EQ(evs.size(), 2u) << Describe(evs);
  EXPECT_EQ(evs[0].mask, uint32_t{IN_MODIFY});
  EXPECT_EQ(evs[0].name, "child");
  EXPECT_EQ(evs[1].mask, uint32_t{IN_CLOSE_WRITE});
  EXPECT_EQ(evs[1].name, "child");
}

TEST_F(Inotify, ParentAndChildWatchesBothReport) {
  const std::string file = dir_.Child("f");
  Touch(file);
  int wdir = Watch(dir_.path(), IN_MODIFY);
  int wfile = Watch(file, IN_MODIFY);
  ASSERT_SYS_OK(wdir);
  ASSERT_SYS_OK(wfile);
  {
    ScopedFd fd(open(file.c_str(), O_WRONLY));
    ASSERT_EQ(write(fd.get(), "x", 1), 1);
  }
  std::vector<Ev> evs = Drain(fd_);
  ASSERT_EQ(evs.size(), 2u) << Describe(evs);
  EXPECT_EQ(evs[0].wd, wdir);
  EXPECT_EQ(evs[0].name, "f");
  EXPECT_EQ(evs[1].wd, wfile);
  EXPECT_EQ(evs[1].name, "");
}

TEST_F(Inotify, RenameEventsShareACookie) {
  Touch(dir_.Child("a"));
  ASSERT_EQ(mkdir(dir_.Child("other").c_str(), 0755), 0);
  int wd = Watch(dir_.path(), IN_MOVE);
  int wother = Watch(dir_.Child("other"), IN_MOVE);
  int wfile = Watch(dir_.Child("a"), IN_MOVE_SELF);
  ASSERT_SYS_OK(wd);
  ASSERT_SYS_OK(wother);
  ASSERT_SYS_OK(wfile);
  ASSERT_EQ(rename(dir_.Child("a").c_str(), dir_.Child("b").c_str()), 0);
  ASSERT_EQ(rename(dir_.Child("b").c_str(), dir_.Child("other/c").c_str()), 0);
  std::vector<Ev> evs = Drain(fd_);
  ASSERT_EQ(evs.size(), 6u) << Describe(evs);
  EXPECT_EQ(evs[0].mask, uint32_t{IN_MOVED_FROM});
  EXPECT_EQ(evs[0].name, "a");
  EXPECT_EQ(evs[1].mask, uint32_t{IN_MOVED_TO});
  EXPECT_EQ(evs[1].name, "b");
  EXPECT_NE(evs[0].cookie, 0u);
  EXPECT_EQ(evs[0].cookie, evs[1].cookie);
  EXPECT_EQ(evs[2].wd, wfile);
  EXPECT_EQ(evs[2].mask, uint32_t{IN_MOVE_SELF});
  EXPECT_EQ(evs[3].wd, wd);
  EXPECT_EQ(evs[3].name, "b");
  EXPECT_EQ(evs[4].wd, wother);
  EXPECT_EQ(evs[4].mask, uint32_t{IN_MOVED_TO});
  EXPECT_EQ(evs[4].name, "c");
  EXPECT_EQ(evs[3].cookie, evs[4].cookie);
  EXPECT_NE(evs[3].cookie, evs[0].cookie);
  EXPECT_EQ(evs[5].mask, uint32_t{IN_MOVE_SELF});
}

TEST_F(Inotify, RenamingOverAWatchedFileEndsItsWatch) {
  Touch(dir_.Child("src"));
  Touch(dir_.Child("dst"));
  int wsrc = Watch(dir_.Child("src"), IN_ALL_EVENTS);
  int wdst = Watch(dir_.Child("dst"), IN_ALL_EVENTS);
  ASSERT_SYS_OK(wsrc);
  ASSERT_SYS_OK(wdst);
  ASSERT_EQ(rename(dir_.Child("src").c_str(), dir_.Child("dst").c_str()), 0);
  std::vector<Ev> evs = Drain(fd_);
  ASSERT_EQ(evs.size(), 4u) << Describe(evs);
  EXPECT_EQ(evs[0].wd, wdst);
  EXPECT_EQ(evs[0].mask, uint32_t{IN_ATTRIB});
  EXPECT_EQ(evs[1].wd, wsrc);
  EXPECT_EQ(evs[1].mask, uint32_t{IN_MOVE_SELF});
  EXPECT_EQ(evs[2].wd, wdst);
  EXPECT_EQ(evs[2].mask, uint32_t{IN_DELETE_SELF});
  EXPECT_EQ(evs[3].wd, wdst);
  EXPECT_EQ(evs[3].mask, uint32_t{IN_IGNORED});
}

TEST_F(Inotify, UnlinkingTheLastLinkEndsTheWatch) {
  const std::string file = dir_.Child("f");
  Touch(file);
  ASSERT_EQ(link(file.c_str(), dir_.Child("g").c_str()), 0);
  int wdir = Watch(dir_.path(), IN_DELETE);
  int wfile = Watch(file, IN_ATTRIB | IN_DELETE_SELF);
  ASSERT_SYS_OK(wdir);
  ASSERT_SYS_OK(wfile);
  ASSERT_EQ(unlink(dir_.Child("g").c_str()), 0);  // one link left: only its count changed
  ASSERT_EQ(unlink(file.c_str()), 0);
  std::vector<Ev> evs = Drain(fd_);
  ASSERT_EQ(evs.size(), 6u) << Describe(evs);
  EXPECT_EQ(evs[0].wd, wfile);
  EXPECT_EQ(evs[0].mask, uint32_t{IN_ATTRIB});
  EXPECT_EQ(evs[1].wd, wdir);
  EXPECT_EQ(evs[1].mask, uint32_t{IN_DELETE});
  EXPECT_EQ(evs[1].name, "g");
  EXPECT_EQ(evs[2].mask, uint32_t{IN_ATTRIB});
  EXPECT_EQ(evs[3].wd, wfile);
  EXPECT_EQ(evs[3].mask, uint32_t{IN_DELETE_SELF});
  EXPECT_EQ(evs[4].wd, wfile);
  EXPECT_EQ(evs[4].mask, uint32_t{IN_IGNORED});
  EXPECT_EQ(evs[5].wd, wdir);
  EXPECT_EQ(evs[5].mask, uint32_t{IN_DELETE});
  EXPECT_EQ(evs[5].name, "f");
  EXPECT_ERRNO(inotify_rm_watch(fd_, wfile), EINVAL);
}

TEST_F(Inotify, RemovingAWatchedDirectory) {
  const std::string sub = dir_.Child("sub");
  ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
  int wdir = Watch(dir_.path(), IN_DELETE);
  int wsub = Watch(sub, IN_ALL_EVENTS);
  ASSERT_SYS_OK(wdir);
  ASSERT_SYS_OK(wsub);
  ASSERT_EQ(rmdir(sub.c_str()), 0);
  std::vector<Ev> evs = Drain(fd_);
  ASSERT_EQ(evs.size(), 3u) << Describe(evs);
  EXPECT_EQ(evs[0].wd, wsub);
  EXPECT_EQ(evs[0].mask & ~uint32_t{IN_ISDIR}, uint32_t{IN_DELETE_SELF});
  EXPECT_EQ(evs[1].wd, wsub);
  EXPECT_EQ(evs[1].mask, uint32_t{IN_IGNORED});
  EXPECT_EQ(evs[2].wd, wdir);
  EXPECT_EQ(evs[2].mask, uint32_t{IN_DELETE | IN_ISDIR});
  EXPECT_EQ(evs[2].name, "sub");
}

TEST_F(Inotify, RmWatchQueuesIgnoredOnce) {
  int wd = Watch(dir_.path(), IN_CREATE);
  ASSERT_SYS_OK(wd);
  ASSERT_EQ(inotify_rm_watch(fd_, wd), 0);
  EXPECT_ERRNO(inotify_rm_watch(fd_, wd), EINVAL);
  Touch(dir_.Child("after"));
  std::vector<Ev> evs = Drain(fd_);
  ASSERT_EQ(evs.size(), 1u) << Describe(evs);
  EXPECT_EQ(evs[0].wd, wd);
  EXPECT_EQ(evs[0].mask, uint32_t{IN_IGNORED});
}

TEST_F(Inotify, OneshotEndsAfterTheFirstEvent) {
  int wd = Watch(dir_.path(), IN_CREATE | IN_ONESHOT);
  ASSERT_SYS_OK(wd);
  Touch(dir_.Child("one"));
  Touch(dir_.Child("two"));
  std::vector<Ev> evs = Drain(fd_);
  ASSERT_EQ(evs.size(), 2u) << Describe(evs);
  EXPECT_EQ(evs[0].mask, uint32_t{IN_CREATE});
  EXPECT_EQ(evs[0].name, "one");
  EXPECT_EQ(evs[1].mask, uint32_t{IN_IGNORED});
  EXPECT_ERRNO(inotify_rm_watch(fd_, wd), EINVAL);
}

TEST_F(Inotify, MaskAddKeepsTheOldEvents) {
  const std::string file = dir_.Child("f");
  Touch(file);
  int wd = Watch(file, IN_ATTRIB);
  ASSERT_EQ(Watch(file, IN_MODIFY | IN_MASK_ADD), wd);
  ASSERT_EQ(chmod(file.c_str(), 0600), 0);
  ASSERT_EQ(truncate(file.c_str(), 10), 0);
  ASSERT_EQ(Watch(file, IN_MODIFY), wd);  // replaces: IN_ATTRIB is gone
  ASSERT_EQ(chmod(file.c_str(), 0644), 0);
  std::vector<Ev> evs = Drain(fd_);
  EXPECT_EQ(Masks(evs), (std::vector<uint32_t>{IN_ATTRIB, IN_MODIFY})) << Describe(evs);
}

TEST_F(Inotify, AttributeChangesAndTheirEvents) {
  const std::string file = dir_.Child("f");
  Touch(file);
  ASSERT_SYS_OK(Watch(file, IN_ALL_EVENTS));
  ASSERT_EQ(chmod(file.c_str(), 0600), 0);                      // IN_ATTRIB
  ASSERT_EQ(chown(file.c_str(), getuid(), getgid()), 0);        // IN_ATTRIB (merged)
  ASSERT_EQ(truncate(file.c_str(), 3), 0);                      // IN_MODIFY
  ASSERT_EQ(utimensat(AT_FDCWD, file.c_str(), nullptr, 0), 0);  // both times: IN_ATTRIB
  timespec mtime_only[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  ASSERT_EQ(utimensat(AT_FDCWD, file.c_str(), mtime_only, 0), 0);  // IN_MODIFY
  std::vector<Ev> evs = Drain(fd_);
  EXPECT_EQ(Masks(evs), (std::vector<uint32_t>{IN_ATTRIB, IN_MODIFY, IN_ATTRIB, IN_MODIFY}))
      << Describe(evs);
}

TEST_F(Inotify, ListingADirectory) {
  Touch(dir_.Child("x"));
  ASSERT_SYS_OK(Watch(dir_.path(), IN_OPEN | IN_ACCESS | IN_CLOSE_NOWRITE));
  DIR* d = opendir(dir_.path().c_str());
  ASSERT_NE(d, nullptr);
  while (readdir(d) != nullptr) {
  }
  closedir(d);
  std::vector<Ev> evs = Drain(fd_);
  ASSERT_GE(evs.size(), 3u) << Describe(evs);
  EXPECT_EQ(evs.front().mask, uint32_t{IN_OPEN | IN_ISDIR});
  EXPECT_EQ(evs[1].mask, uint32_t{IN_ACCESS | IN_ISDIR});
  EXPECT_EQ(evs.back().mask, uint32_t{IN_CLOSE_NOWRITE | IN_ISDIR});
  for (const Ev& e : evs) EXPECT_EQ(e.name, "");
}

TEST_F(Inotify, SmallBufferIsEinvalAndFionreadCountsBytes) {
  ASSERT_SYS_OK(Watch(dir_.path(), IN_CREATE));
  Touch(dir_.Child("a"));
  Touch(dir_.Child("b"));
  int avail = -1;
  ASSERT_EQ(ioctl(fd_, FIONREAD, &avail), 0);
  EXPECT_EQ(avail, static_cast<int>(2 * (sizeof(inotify_event) + 16)));
  char small[sizeof(inotify_event) + 8];
  EXPECT_ERRNO(read(fd_, small, sizeof(small)), EINVAL);
  // A buffer for one and a half events returns exactly one.
  alignas(inotify_event) char buf[sizeof(inotify_event) * 3];
  EXPECT_EQ(read(fd_, buf, sizeof(buf)), static_cast<ssize_t>(sizeof(inotify_event) + 16));
  ASSERT_EQ(ioctl(fd_, FIONREAD, &avail), 0);
  EXPECT_EQ(avail, static_cast<int>(sizeof(inotify_event) + 16));
}

TEST_F(Inotify, PollAndABlockingReadWakeOnAnEvent) {
  int fd = inotify_init();
  ASSERT_SYS_OK(fd);
  ASSERT_SYS_OK(inotify_add_watch(fd, dir_.path().c_str(), IN_CREATE));
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);
  const std::string target = dir_.Child("late");
  pid_t child = fork();
  if (child == 0) {
    usleep(100 * 1000);
    int f = open(target.c_str(), O_CREAT | O_WRONLY, 0644);
    _exit(f >= 0 ? 0 : 1);
  }
  alignas(inotify_event) char buf[256];
  ssize_t n = read(fd, buf, sizeof(buf));  // blocks until the child creates the file
  ASSERT_GT(n, 0);
  EXPECT_STREQ(reinterpret_cast<inotify_event*>(buf)->name, "late");
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(status, 0);
  p.revents = 0;
  EXPECT_EQ(poll(&p, 1, 0), 0);  // read took the only event
  close(fd);
}

TEST_F(Inotify, QueueOverflowEndsWithOneOverflowEvent) {
  std::ifstream limit("/proc/sys/fs/inotify/max_queued_events");
  int max_events = 0;
  limit >> max_events;
  ASSERT_GT(max_events, 0);
  if (max_events > 20000) GTEST_SKIP() << "max_queued_events " << max_events;
  ASSERT_SYS_OK(Watch(dir_.path(), IN_CREATE));
  for (int i = 0; i < max_events + 5; ++i) {
    std::string name = dir_.Child("f" + std::to_string(i));
    ASSERT_EQ(mknod(name.c_str(), S_IFREG | 0644, 0), 0) << i;
  }
  std::vector<Ev> evs = Drain(fd_);
  ASSERT_EQ(evs.size(), static_cast<size_t>(max_events) + 1);
  EXPECT_EQ(evs.back().wd, -1);
  EXPECT_EQ(evs.back().mask, uint32_t{IN_Q_OVERFLOW});
  EXPECT_EQ(evs[max_events - 1].name, "f" + std::to_string(max_events - 1));
}

TEST_F(Inotify, FdinfoListsTheWatches) {
  int wd = Watch(dir_.path(), IN_CREATE);
  ASSERT_SYS_OK(wd);
  std::ifstream info("/proc/self/fdinfo/" + std::to_string(fd_));
  std::string all((std::istreambuf_iterator<char>(info)), std::istreambuf_iterator<char>());
  struct stat st;
  ASSERT_EQ(stat(dir_.path().c_str(), &st), 0);
  std::ostringstream want;
  want << "inotify wd:" << std::hex << wd << " ino:" << st.st_ino << " ";
  EXPECT_NE(all.find(want.str()), std::string::npos) << all;
  EXPECT_NE(all.find(" mask:100 ignored_mask:0"), std::string::npos) << all;
}

TEST(InotifyProc, LimitsAreShown) {
  for (const char* name : {"max_queued_events", "max_user_instances", "max_user_watches"}) {
    std::ifstream f(std::string("/proc/sys/fs/inotify/") + name);
    long v = 0;
    EXPECT_TRUE(static_cast<bool>(f >> v)) << name;
    EXPECT_GT(v, 0) << name;
  }
}

}  // namespace
}  // namespace syscall_test
