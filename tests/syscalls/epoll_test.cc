// epoll: creation, epoll_ctl errnos, level/edge/one-shot semantics on pipes, interest
// items vs dup'd and closed fds, nested epolls, timeouts, epoll_pwait signal masks.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <set>
#include <string>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

struct Pipe {
  Pipe() {
    int fds[2];
    if (pipe(fds) != 0) abort();
    r.reset(fds[0]);
    w.reset(fds[1]);
  }
  ScopedFd r, w;
};

int Add(int ep, int fd, uint32_t events, uint64_t data) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = data;
  return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

int Mod(int ep, int fd, uint32_t events, uint64_t data) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = data;
  return epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// A child that sleeps `ms` then runs `fn` and exits. Returns its pid.
template <typename Fn>
pid_t ForkAfter(int ms, Fn fn) {
  pid_t pid = fork();
  if (pid == 0) {
    usleep(ms * 1000);
    fn();
    _exit(0);
  }
  return pid;
}

void Reap(pid_t pid) {
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(EpollCreate, SizeMustBePositive) {
  EXPECT_ERRNO(epoll_create(0), EINVAL);
  EXPECT_ERRNO(epoll_create(-1), EINVAL);
  ScopedFd ep(epoll_create(1));
  ASSERT_SYS_OK(ep.get());
  EXPECT_EQ(fcntl(ep.get(), F_GETFD), 0);
}

TEST(EpollCreate1, CloexecFlagAndBadFlags) {
  ScopedFd ep(epoll_create1(EPOLL_CLOEXEC));
  ASSERT_SYS_OK(ep.get());
  EXPECT_EQ(fcntl(ep.get(), F_GETFD), FD_CLOEXEC);
  EXPECT_ERRNO(epoll_create1(O_NONBLOCK), EINVAL);
  EXPECT_ERRNO(epoll_create1(1), EINVAL);
}

TEST(EpollCreate1, ProcFdNameAndReadIsEinval) {
  ScopedFd ep(epoll_create1(0));
  ASSERT_SYS_OK(ep.get());
  char buf[64] = {};
  std::string link = "/proc/self/fd/" + std::to_string(ep.get());
  ASSERT_SYS_OK(readlink(link.c_str(), buf, sizeof(buf) - 1));
  EXPECT_STREQ(buf, "anon_inode:[eventpoll]");
  char c;
  EXPECT_ERRNO(read(ep.get(), &c, 1), EINVAL);
  EXPECT_ERRNO(write(ep.get(), &c, 1), EINVAL);
}

TEST(EpollCreate1, FdinfoListsTheItems) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN | EPOLLET, 0x5a));
  std::string path = "/proc/self/fdinfo/" + std::to_string(ep.get());
  FILE* f = fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string info;
  char buf[256];
  while (fgets(buf, sizeof(buf), f)) info += buf;
  fclose(f);
  // ERR and HUP are part of every item's events; the inode/device numbers differ.
  char want[128];
  snprintf(want, sizeof(want),
           "tfd: %8d events: 80000019 data:               5a  pos:0 ino:", p.r.get());
  EXPECT_NE(info.find(want), std::string::npos) << info;
}

TEST(EpollCtl, BadDescriptorsAndNonEpollAreRefused) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  EXPECT_ERRNO(Add(-1, p.r.get(), EPOLLIN, 0), EBADF);
  EXPECT_ERRNO(Add(ep.get(), -1, EPOLLIN, 0), EBADF);
  EXPECT_ERRNO(Add(ep.get(), 999, EPOLLIN, 0), EBADF);
  // The "epoll" is a pipe: EINVAL.
  EXPECT_ERRNO(Add(p.w.get(), p.r.get(), EPOLLIN, 0), EINVAL);
  // An epoll cannot watch itself.
  EXPECT_ERRNO(Add(ep.get(), ep.get(), EPOLLIN, 0), EINVAL);
  // O_PATH descriptors count as bad.
  ScopedFd path(open("/tmp", O_PATH));
  ASSERT_SYS_OK(path.get());
  EXPECT_ERRNO(Add(ep.get(), path.get(), EPOLLIN, 0), EBADF);
}

TEST(EpollCtl, FilesWithoutPollAreEperm) {
  ScopedFd ep(epoll_create1(0));
  TempDir dir;
  ScopedFd file(open(dir.Child("f").c_str(), O_CREAT | O_RDWR, 0600));
  ASSERT_SYS_OK(file.get());
  EXPECT_ERRNO(Add(ep.get(), file.get(), EPOLLIN, 0), EPERM);
  ScopedFd d(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_SYS_OK(d.get());
  EXPECT_ERRNO(Add(ep.get(), d.get(), EPOLLIN, 0), EPERM);
  ScopedFd null(open("/dev/null", O_RDWR));
  ASSERT_SYS_OK(null.get());
  EXPECT_ERRNO(Add(ep.get(), null.get(), EPOLLIN, 0), EPERM);
}

TEST(EpollCtl, ExistAndNotFoundAndBadOp) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  EXPECT_ERRNO(Mod(ep.get(), p.r.get(), EPOLLIN, 0), ENOENT);
  EXPECT_ERRNO(epoll_ctl(ep.get(), EPOLL_CTL_DEL, p.r.get(), nullptr), ENOENT);
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN, 0));
  EXPECT_ERRNO(Add(ep.get(), p.r.get(), EPOLLIN, 0), EEXIST);
  epoll_event ev{};
  EXPECT_ERRNO(epoll_ctl(ep.get(), 77, p.r.get(), &ev), EINVAL);
  // DEL ignores its event argument (may be NULL); ADD/MOD copy it in.
  EXPECT_ERRNO(epoll_ctl(ep.get(), EPOLL_CTL_MOD, p.r.get(), nullptr), EFAULT);
  ASSERT_SYS_OK(epoll_ctl(ep.get(), EPOLL_CTL_DEL, p.r.get(), nullptr));
  EXPECT_ERRNO(epoll_ctl(ep.get(), EPOLL_CTL_ADD, p.r.get(), nullptr), EFAULT);
}

TEST(EpollCtl, ExclusiveRules) {
  ScopedFd ep(epoll_create1(0));
  ScopedFd inner(epoll_create1(0));
  Pipe p;
  EXPECT_ERRNO(Add(ep.get(), p.r.get(), EPOLLIN | EPOLLEXCLUSIVE | EPOLLONESHOT, 0), EINVAL);
  EXPECT_ERRNO(Add(ep.get(), inner.get(), EPOLLIN | EPOLLEXCLUSIVE, 0), EINVAL);
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN | EPOLLEXCLUSIVE | EPOLLET, 1));
  // An exclusive item cannot be modified at all; MOD with the flag is refused too.
  EXPECT_ERRNO(Mod(ep.get(), p.r.get(), EPOLLIN, 0), EINVAL);
  ASSERT_SYS_OK(Add(ep.get(), p.w.get(), EPOLLOUT, 2));
  EXPECT_ERRNO(Mod(ep.get(), p.w.get(), EPOLLOUT | EPOLLEXCLUSIVE, 2), EINVAL);
  // The exclusive item still reports.
  ASSERT_EQ(write(p.w.get(), "x", 1), 1);
  ASSERT_SYS_OK(epoll_ctl(ep.get(), EPOLL_CTL_DEL, p.w.get(), nullptr));
  epoll_event out[2];
  ASSERT_EQ(epoll_wait(ep.get(), out, 2, 0), 1);
  EXPECT_EQ(out[0].data.u64, 1u);
  EXPECT_EQ(out[0].events, uint32_t{EPOLLIN});
}

TEST(EpollWait, ArgumentErrors) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  epoll_event out[1];
  EXPECT_ERRNO(epoll_wait(ep.get(), out, 0, 0), EINVAL);
  EXPECT_ERRNO(syscall(SYS_epoll_wait, ep.get(), out, -1, 0), EINVAL);
  // More than INT_MAX / sizeof(epoll_event) is refused before anything is looked at.
  EXPECT_ERRNO(syscall(SYS_epoll_wait, ep.get(), out, INT_MAX / 12 + 1, 0), EINVAL);
  EXPECT_ERRNO(epoll_wait(-1, out, 1, 0), EBADF);
  EXPECT_ERRNO(epoll_wait(p.r.get(), out, 1, 0), EINVAL);
  // A ready event and an unwritable buffer: EFAULT.
  ASSERT_SYS_OK(Add(ep.get(), p.w.get(), EPOLLOUT, 0));
  EXPECT_ERRNO(syscall(SYS_epoll_wait, ep.get(), 8, 1, 0), EFAULT);
}

TEST(EpollWait, LevelTriggeredReportsUntilDrained) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN, 0x1122334455667788ull));
  epoll_event out[4];
  EXPECT_EQ(epoll_wait(ep.get(), out, 4, 0), 0);
  ASSERT_EQ(write(p.w.get(), "ab", 2), 2);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(epoll_wait(ep.get(), out, 4, 0), 1);
    EXPECT_EQ(out[0].events, uint32_t{EPOLLIN});
    EXPECT_EQ(out[0].data.u64, 0x1122334455667788ull);
  }
  char buf[2];
  ASSERT_EQ(read(p.r.get(), buf, 2), 2);
  EXPECT_EQ(epoll_wait(ep.get(), out, 4, 0), 0);
}

TEST(EpollWait, EdgeTriggeredReportsEachNewWrite) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN | EPOLLET, 7));
  epoll_event out[4];
  ASSERT_EQ(write(p.w.get(), "a", 1), 1);
  ASSERT_EQ(epoll_wait(ep.get(), out, 4, 0), 1);
  EXPECT_EQ(out[0].data.u64, 7u);
  // Data is still there, but no new edge.
  EXPECT_EQ(epoll_wait(ep.get(), out, 4, 0), 0);
  // A write to a pipe that already had data is a new edge.
  ASSERT_EQ(write(p.w.get(), "b", 1), 1);
  ASSERT_EQ(epoll_wait(ep.get(), out, 4, 0), 1);
  EXPECT_EQ(out[0].events, uint32_t{EPOLLIN});
  EXPECT_EQ(epoll_wait(ep.get(), out, 4, 0), 0);
  // Reading does not make a read edge.
  char buf[2];
  ASSERT_EQ(read(p.r.get(), buf, 2), 2);
  EXPECT_EQ(epoll_wait(ep.get(), out, 4, 0), 0);
}

TEST(EpollWait, WriteEndOutAndFullPipe) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(fcntl(p.w.get(), F_SETFL, O_NONBLOCK));
  ASSERT_SYS_OK(Add(ep.get(), p.w.get(), EPOLLOUT, 3));
  epoll_event out[2];
  ASSERT_EQ(epoll_wait(ep.get(), out, 2, 0), 1);
  EXPECT_EQ(out[0].events, uint32_t{EPOLLOUT});
  std::string chunk(4096, 'x');
  while (write(p.w.get(), chunk.data(), chunk.size()) > 0) {
  }
  EXPECT_EQ(epoll_wait(ep.get(), out, 2, 0), 0);
  // Draining makes room again.
  char buf[4096];
  for (int i = 0; i < 4; ++i) ASSERT_GT(read(p.r.get(), buf, sizeof(buf)), 0);
  ASSERT_EQ(epoll_wait(ep.get(), out, 2, 0), 1);
  EXPECT_EQ(out[0].data.u64, 3u);
}

TEST(EpollWait, EdgeTriggeredWriteEndIgnoresReadsFromANonFullPipe) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(ep.get(), p.w.get(), EPOLLOUT | EPOLLET, 1));
  epoll_event out[1];
  ASSERT_EQ(epoll_wait(ep.get(), out, 1, 0), 1);
  ASSERT_EQ(write(p.w.get(), "ab", 2), 2);
  EXPECT_EQ(epoll_wait(ep.get(), out, 1, 0), 0);
  char c;
  ASSERT_EQ(read(p.r.get(), &c, 1), 1);
  EXPECT_EQ(epoll_wait(ep.get(), out, 1, 0), 0);
}

TEST(EpollWait, HangupAndErrorAreAlwaysReported) {
  ScopedFd ep(epoll_create1(0));
  Pipe a, b;
  // Interest 0 still reports HUP/ERR.
  ASSERT_SYS_OK(Add(ep.get(), a.r.get(), 0, 1));
  ASSERT_SYS_OK(Add(ep.get(), b.w.get(), 0, 2));
  epoll_event out[4];
  EXPECT_EQ(epoll_wait(ep.get(), out, 4, 0), 0);
  a.w.reset();
  b.r.reset();
  ASSERT_EQ(epoll_wait(ep.get(), out, 4, 0), 2);
  std::sort(out, out + 2,
            [](const epoll_event& x, const epoll_event& y) { return x.data.u64 < y.data.u64; });
  EXPECT_EQ(out[0].events, uint32_t{EPOLLHUP});
  EXPECT_EQ(out[1].events, uint32_t{EPOLLERR});
}

TEST(EpollWait, RdhupAcceptedOnPipesAndHupReported) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN | EPOLLRDHUP | EPOLLWAKEUP, 0));
  ASSERT_EQ(write(p.w.get(), "x", 1), 1);
  p.w.reset();
  epoll_event out[1];
  ASSERT_EQ(epoll_wait(ep.get(), out, 1, 0), 1);
  // Pipes do not report RDHUP (only sockets do); EPOLLWAKEUP never shows up.
  EXPECT_EQ(out[0].events, uint32_t{EPOLLIN | EPOLLHUP});
}

TEST(EpollWait, OneShotIsRearmedByMod) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN | EPOLLONESHOT, 5));
  ASSERT_EQ(write(p.w.get(), "a", 1), 1);
  epoll_event out[1];
  ASSERT_EQ(epoll_wait(ep.get(), out, 1, 0), 1);
  EXPECT_EQ(out[0].data.u64, 5u);
  EXPECT_EQ(epoll_wait(ep.get(), out, 1, 0), 0);
  // Disabled: a new write does not report either.
  ASSERT_EQ(write(p.w.get(), "b", 1), 1);
  EXPECT_EQ(epoll_wait(ep.get(), out, 1, 0), 0);
  // Still registered: ADD is EEXIST; MOD re-arms, and the pending data reports at once.
  EXPECT_ERRNO(Add(ep.get(), p.r.get(), EPOLLIN, 0), EEXIST);
  ASSERT_SYS_OK(Mod(ep.get(), p.r.get(), EPOLLIN | EPOLLONESHOT, 6));
  ASSERT_EQ(epoll_wait(ep.get(), out, 1, 0), 1);
  EXPECT_EQ(out[0].data.u64, 6u);
  EXPECT_EQ(epoll_wait(ep.get(), out, 1, 0), 0);
}

TEST(EpollWait, ModChangesInterestAndData) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(ep.get(), p.w.get(), EPOLLIN, 1));
  epoll_event out[1];
  EXPECT_EQ(epoll_wait(ep.get(), out, 1, 0), 0);
  ASSERT_SYS_OK(Mod(ep.get(), p.w.get(), EPOLLOUT, 2));
  ASSERT_EQ(epoll_wait(ep.get(), out, 1, 0), 1);
  EXPECT_EQ(out[0].events, uint32_t{EPOLLOUT});
  EXPECT_EQ(out[0].data.u64, 2u);
  ASSERT_SYS_OK(epoll_ctl(ep.get(), EPOLL_CTL_DEL, p.w.get(), nullptr));
  EXPECT_EQ(epoll_wait(ep.get(), out, 1, 0), 0);
}

TEST(EpollWait, MaxeventsLimitsAndRotates) {
  ScopedFd ep(epoll_create1(0));
  Pipe p[3];
  for (int i = 0; i < 3; ++i) {
    ASSERT_SYS_OK(Add(ep.get(), p[i].r.get(), EPOLLIN, i));
    ASSERT_EQ(write(p[i].w.get(), "x", 1), 1);
  }
  std::set<uint64_t> seen;
  epoll_event out[3];
  ASSERT_EQ(epoll_wait(ep.get(), out, 2, 0), 2);
  seen.insert(out[0].data.u64);
  seen.insert(out[1].data.u64);
  // Level-triggered items go to the back: the third comes first now.
  ASSERT_EQ(epoll_wait(ep.get(), out, 1, 0), 1);
  seen.insert(out[0].data.u64);
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(epoll_wait(ep.get(), out, 3, 0), 3);
}

TEST(EpollItems, CloseOfOneDupKeepsTheItemLastCloseRemovesIt) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_EQ(write(p.w.get(), "x", 1), 1);
  int r = p.r.release();
  ASSERT_SYS_OK(Add(ep.get(), r, EPOLLIN, 9));
  ScopedFd copy(dup(r));
  ASSERT_SYS_OK(copy.get());
  ASSERT_SYS_OK(close(r));
  // The description is still open: its item lives on and still reports.
  epoll_event out[1];
  ASSERT_EQ(epoll_wait(ep.get(), out, 1, 0), 1);
  EXPECT_EQ(out[0].data.u64, 9u);
  // Items are keyed by (description, fd): the dup's number is not registered.
  EXPECT_ERRNO(epoll_ctl(ep.get(), EPOLL_CTL_DEL, copy.get(), nullptr), ENOENT);
  // Releasing the description removes the item.
  copy.reset();
  EXPECT_EQ(epoll_wait(ep.get(), out, 1, 0), 0);
}

TEST(EpollItems, TwoFdsOfOneDescriptionAreTwoItems) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ScopedFd copy(dup(p.r.get()));
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN, 1));
  ASSERT_SYS_OK(Add(ep.get(), copy.get(), EPOLLIN, 2));
  ASSERT_EQ(write(p.w.get(), "x", 1), 1);
  epoll_event out[4];
  ASSERT_EQ(epoll_wait(ep.get(), out, 4, 0), 2);
  EXPECT_EQ(out[0].data.u64 + out[1].data.u64, 3u);
}

TEST(EpollItems, ClosingTheEpollWhileWatchedFilesLiveOn) {
  Pipe p;
  {
    ScopedFd ep(epoll_create1(0));
    ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN, 1));
    ASSERT_SYS_OK(Add(ep.get(), p.w.get(), EPOLLOUT, 2));
  }
  // The pipe works normally afterwards.
  ASSERT_EQ(write(p.w.get(), "x", 1), 1);
  char c;
  ASSERT_EQ(read(p.r.get(), &c, 1), 1);
}

TEST(EpollNested, InnerReadinessPropagatesToOuterAndPoll) {
  ScopedFd outer(epoll_create1(0));
  ScopedFd inner(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(inner.get(), p.r.get(), EPOLLIN, 1));
  ASSERT_SYS_OK(Add(outer.get(), inner.get(), EPOLLIN, 2));
  epoll_event out[2];
  EXPECT_EQ(epoll_wait(outer.get(), out, 2, 0), 0);
  pollfd pfd{inner.get(), POLLIN, 0};
  EXPECT_EQ(poll(&pfd, 1, 0), 0);
  ASSERT_EQ(write(p.w.get(), "x", 1), 1);
  ASSERT_EQ(epoll_wait(outer.get(), out, 2, 0), 1);
  EXPECT_EQ(out[0].data.u64, 2u);
  EXPECT_EQ(out[0].events, uint32_t{EPOLLIN});
  ASSERT_EQ(poll(&pfd, 1, 0), 1);
  EXPECT_EQ(pfd.revents, POLLIN);
  fd_set rs;
  FD_ZERO(&rs);
  FD_SET(inner.get(), &rs);
  timeval tv{0, 0};
  EXPECT_EQ(select(inner.get() + 1, &rs, nullptr, nullptr, &tv), 1);
  ASSERT_EQ(epoll_wait(inner.get(), out, 2, 0), 1);
  EXPECT_EQ(out[0].data.u64, 1u);
  // Drained: the outer one is quiet again.
  char c;
  ASSERT_EQ(read(p.r.get(), &c, 1), 1);
  EXPECT_EQ(epoll_wait(outer.get(), out, 2, 0), 0);
}

TEST(EpollNested, CyclesAreEloop) {
  ScopedFd a(epoll_create1(0)), b(epoll_create1(0)), c(epoll_create1(0));
  ASSERT_SYS_OK(Add(a.get(), b.get(), EPOLLIN, 0));
  ASSERT_SYS_OK(Add(b.get(), c.get(), EPOLLIN, 0));
  EXPECT_ERRNO(Add(b.get(), a.get(), EPOLLIN, 0), ELOOP);
  EXPECT_ERRNO(Add(c.get(), a.get(), EPOLLIN, 0), ELOOP);
  // No cycle: fine.
  ScopedFd d(epoll_create1(0));
  ASSERT_SYS_OK(Add(d.get(), a.get(), EPOLLIN, 0));
}

// Linux counts the links above and below: at most 5 epolls in one chain.
TEST(EpollNested, ChainsOfMoreThanFiveAreEloop) {
  ScopedFd up[6];
  for (auto& e : up) ASSERT_SYS_OK((e = ScopedFd(epoll_create1(0))).get());
  for (int i = 1; i < 5; ++i) ASSERT_SYS_OK(Add(up[i].get(), up[i - 1].get(), EPOLLIN, 0));
  EXPECT_ERRNO(Add(up[5].get(), up[4].get(), EPOLLIN, 0), ELOOP);
  ScopedFd down[6];
  for (auto& e : down) ASSERT_SYS_OK((e = ScopedFd(epoll_create1(0))).get());
  for (int i = 1; i < 5; ++i) ASSERT_SYS_OK(Add(down[i - 1].get(), down[i].get(), EPOLLIN, 0));
  EXPECT_ERRNO(Add(down[4].get(), down[5].get(), EPOLLIN, 0), ELOOP);
  // Closing the head releases its items: the chain is shorter now.
  down[0].reset();
  ASSERT_SYS_OK(Add(down[4].get(), down[5].get(), EPOLLIN, 0));
}

TEST(EpollNested, BlockedOuterWokenThroughInner) {
  ScopedFd outer(epoll_create1(0));
  ScopedFd inner(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(inner.get(), p.r.get(), EPOLLIN, 1));
  ASSERT_SYS_OK(Add(outer.get(), inner.get(), EPOLLIN | EPOLLET, 2));
  int w = p.w.get();
  pid_t child = ForkAfter(100, [w] { (void)!write(w, "x", 1); });
  epoll_event out[1];
  ASSERT_EQ(epoll_wait(outer.get(), out, 1, 5000), 1);
  EXPECT_EQ(out[0].data.u64, 2u);
  Reap(child);
}

TEST(EpollWait, TimeoutZeroAndSmallTimeouts) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN, 0));
  epoll_event out[1];
  int64_t t0 = NowMs();
  EXPECT_EQ(epoll_wait(ep.get(), out, 1, 0), 0);
  EXPECT_LT(NowMs() - t0, 50);
  t0 = NowMs();
  EXPECT_EQ(epoll_wait(ep.get(), out, 1, 60), 0);
  int64_t took = NowMs() - t0;
  EXPECT_GE(took, 55);
  EXPECT_LT(took, 2000);
}

TEST(EpollWait, BlocksUntilAForkedChildWrites) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN, 4));
  int w = p.w.get();
  int64_t t0 = NowMs();
  pid_t child = ForkAfter(100, [w] { (void)!write(w, "x", 1); });
  epoll_event out[1];
  ASSERT_EQ(epoll_wait(ep.get(), out, 1, -1), 1);
  EXPECT_GE(NowMs() - t0, 80);
  EXPECT_EQ(out[0].data.u64, 4u);
  Reap(child);
}

TEST(EpollWait, EpollSharedWithForkedChild) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN, 8));
  ASSERT_EQ(write(p.w.get(), "x", 1), 1);
  int epfd = ep.get();
  pid_t pid = fork();
  if (pid == 0) {
    // The child sees the same interest list; its DEL is visible to the parent.
    epoll_event out[1];
    if (epoll_wait(epfd, out, 1, 0) != 1 || out[0].data.u64 != 8) _exit(1);
    _exit(0);
  }
  Reap(pid);
  epoll_event out[1];
  EXPECT_EQ(epoll_wait(epfd, out, 1, 0), 1);
}

int got_usr1 = 0;
void OnUsr1(int) { got_usr1 = 1; }

TEST(EpollPwait, SignalInterruptsWithTemporaryMask) {
  struct sigaction sa {};
  sa.sa_handler = OnUsr1;
  sa.sa_flags = SA_RESTART;  // epoll_pwait is never restarted anyway
  ASSERT_SYS_OK(sigaction(SIGUSR1, &sa, nullptr));
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ASSERT_SYS_OK(sigprocmask(SIG_BLOCK, &block, &old));
  got_usr1 = 0;
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN, 0));
  pid_t child = ForkAfter(100, [] { kill(getppid(), SIGUSR1); });
  sigset_t empty;
  sigemptyset(&empty);
  epoll_event out[1];
  EXPECT_ERRNO(epoll_pwait(ep.get(), out, 1, 5000, &empty), EINTR);
  EXPECT_EQ(got_usr1, 1);
  // The caller's mask is back: SIGUSR1 blocked again.
  sigset_t now;
  ASSERT_SYS_OK(sigprocmask(SIG_SETMASK, nullptr, &now));
  EXPECT_TRUE(sigismember(&now, SIGUSR1));
  Reap(child);
  ASSERT_SYS_OK(sigprocmask(SIG_SETMASK, &old, nullptr));
  signal(SIGUSR1, SIG_DFL);
}

TEST(EpollPwait, BlockedSignalDoesNotInterrupt) {
  struct sigaction sa {};
  sa.sa_handler = OnUsr1;
  ASSERT_SYS_OK(sigaction(SIGUSR1, &sa, nullptr));
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ASSERT_SYS_OK(sigprocmask(SIG_SETMASK, nullptr, &old));
  got_usr1 = 0;
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN, 0));
  int w = p.w.get();
  pid_t child = ForkAfter(50, [w] {
    kill(getppid(), SIGUSR1);
    usleep(100 * 1000);
    (void)!write(w, "x", 1);
  });
  epoll_event out[1];
  // SIGUSR1 is blocked during the wait only: the write ends it, then the handler runs.
  ASSERT_EQ(epoll_pwait(ep.get(), out, 1, 5000, &block), 1);
  Reap(child);
  EXPECT_EQ(got_usr1, 1);
  ASSERT_SYS_OK(sigprocmask(SIG_SETMASK, &old, nullptr));
  signal(SIGUSR1, SIG_DFL);
}

TEST(EpollPwait, BadSigsetSizeIsEinval) {
  ScopedFd ep(epoll_create1(0));
  epoll_event out[1];
  uint64_t mask = 0;
  EXPECT_ERRNO(syscall(SYS_epoll_pwait, ep.get(), out, 1, 0, &mask, 4), EINVAL);
  EXPECT_EQ(syscall(SYS_epoll_pwait, ep.get(), out, 1, 0, &mask, 8), 0);
  // A null mask ignores the size.
  EXPECT_EQ(syscall(SYS_epoll_pwait, ep.get(), out, 1, 0, nullptr, 4), 0);
}

TEST(EpollPwait2, TimespecTimeouts) {
  ScopedFd ep(epoll_create1(0));
  Pipe p;
  ASSERT_SYS_OK(Add(ep.get(), p.r.get(), EPOLLIN, 3));
  epoll_event out[1];
  timespec bad{0, 1000000000};
  EXPECT_ERRNO(syscall(SYS_epoll_pwait2, ep.get(), out, 1, &bad, nullptr, 8), EINVAL);
  timespec neg{-1, 0};
  EXPECT_ERRNO(syscall(SYS_epoll_pwait2, ep.get(), out, 1, &neg, nullptr, 8), EINVAL);
  timespec ts{0, 50 * 1000 * 1000};
  int64_t t0 = NowMs();
  EXPECT_EQ(syscall(SYS_epoll_pwait2, ep.get(), out, 1, &ts, nullptr, 8), 0);
  EXPECT_GE(NowMs() - t0, 45);
  ASSERT_EQ(write(p.w.get(), "x", 1), 1);
  // NULL timeout blocks forever, but something is ready.
  ASSERT_EQ(syscall(SYS_epoll_pwait2, ep.get(), out, 1, nullptr, nullptr, 8), 1);
  EXPECT_EQ(out[0].data.u64, 3u);
}

TEST(EpollEventfd, EdgeOnEveryWrite) {
  ScopedFd ep(epoll_create1(0));
  ScopedFd efd(eventfd(0, EFD_NONBLOCK));
  ASSERT_SYS_OK(efd.get());
  ASSERT_SYS_OK(Add(ep.get(), efd.get(), EPOLLIN | EPOLLOUT | EPOLLET, 1));
  epoll_event out[1];
  // Writable from the start.
  ASSERT_EQ(epoll_wait(ep.get(), out, 1, 0), 1);
  EXPECT_EQ(out[0].events, uint32_t{EPOLLOUT});
  EXPECT_EQ(epoll_wait(ep.get(), out, 1, 0), 0);
  uint64_t v = 1;
  ASSERT_EQ(write(efd.get(), &v, 8), 8);
  ASSERT_EQ(epoll_wait(ep.get(), out, 1, 0), 1);
  EXPECT_EQ(out[0].events, uint32_t{EPOLLIN | EPOLLOUT});
  ASSERT_EQ(write(efd.get(), &v, 8), 8);
  ASSERT_EQ(epoll_wait(ep.get(), out, 1, 0), 1);
  ASSERT_EQ(read(efd.get(), &v, 8), 8);
  EXPECT_EQ(v, 2u);
  ASSERT_EQ(epoll_wait(ep.get(), out, 1, 0), 1);
  EXPECT_EQ(out[0].events, uint32_t{EPOLLOUT});
}

}  // namespace
}  // namespace syscall_test
