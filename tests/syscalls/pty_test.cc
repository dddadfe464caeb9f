// Pseudo-terminals: /dev/ptmx pairs, ptsname/unlockpt, the line discipline (canonical
// editing, echo, ICRNL/ONLCR, raw mode, VMIN/VTIME), window size and job-control
// signals, controlling terminals, hangup on either side, readiness and TIOCSTI.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

struct Pair {
  ScopedFd master;
  ScopedFd replica;
};

// openpty(3): master and replica, both without becoming a controlling terminal.
Pair OpenPair(int extra_flags = 0) {
  int m = -1, s = -1;
  if (openpty(&m, &s, nullptr, nullptr, nullptr) != 0) {
    ADD_FAILURE() << "openpty: " << strerror(errno);
    return Pair{ScopedFd(), ScopedFd()};
  }
  if (extra_flags) {
    fcntl(m, F_SETFL, fcntl(m, F_GETFL) | extra_flags);
    fcntl(s, F_SETFL, fcntl(s, F_GETFL) | extra_flags);
  }
  return {ScopedFd(m), ScopedFd(s)};
}

bool Readable(int fd, int timeout_ms) {
  struct pollfd p = {fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

short Revents(int fd, short events) {
  struct pollfd p = {fd, events, 0};
  if (poll(&p, 1, 0) < 0) return -1;
  return p.revents;
}

// Reads until `n` bytes arrived or nothing more comes within a second.
std::string ReadN(int fd, size_t n) {
  std::string out;
  while (out.size() < n && Readable(fd, 1000)) {
    char buf[256];
    ssize_t r = read(fd, buf, std::min(sizeof(buf), n - out.size()));
    if (r <= 0) break;
    out.append(buf, r);
  }
  return out;
}

// Everything readable now (short waits for the rest).
std::string Drain(int fd) {
  std::string out;
  while (Readable(fd, 50)) {
    char buf[256];
    ssize_t r = read(fd, buf, sizeof(buf));
    if (r <= 0) break;
    out.append(buf, r);
  }
  return out;
}

void WriteStr(int fd, const std::string& s) {
  ASSERT_EQ(write(fd, s.data(), s.size()), static_cast<ssize_t>(s.size()));
}

void SetRaw(int fd, int vmin = 1, int vtime = 0) {
  struct termios t;
  ASSERT_EQ(tcgetattr(fd, &t), 0);
  cfmakeraw(&t);
  t.c_cc[VMIN] = vmin;
  t.c_cc[VTIME] = vtime;
  ASSERT_EQ(tcsetattr(fd, TCSANOW, &t), 0);
}

// Runs `child` in a forked process and returns its exit code (or 100 + signal). The
// child may call `ready()` to let the parent's `after_ready` run.
int RunChild(
    const std::function<int(const std::function<void()>&)>& child,
    const std::function<void()>& after_ready = [] {}) {
  int sync[2];
  if (pipe(sync) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(sync[0]);
    alarm(10);
    auto ready = [&] {
      char c = 'r';
      (void)!write(sync[1], &c, 1);
    };
    _exit(child(ready));
  }
  close(sync[1]);
  char c;
  if (read(sync[0], &c, 1) == 1) after_ready();
  close(sync[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

// In a child: waits up to 5 s for `sig` (blocked by the caller).
int AwaitSignal(int sig) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  struct timespec ts = {5, 0};
  return sigtimedwait(&set, nullptr, &ts) == sig ? 0 : 1;
}

void BlockSignal(int sig) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_BLOCK, &set, nullptr);
}

// A child that makes `replica_path` its controlling terminal (new session, TIOCSCTTY)
// with `sig` blocked, reports ready, and exits 0 if `sig` arrives.
int ControllingChildAwaiting(int sig, const char* replica_path, int master_to_close,
                             const std::function<void()>& ready) {
  BlockSignal(sig);
  if (master_to_close >= 0) close(master_to_close);
  if (setsid() < 0) return 10;
  int fd = open(replica_path, O_RDWR | O_NOCTTY);
  if (fd < 0) return 11;
  if (ioctl(fd, TIOCSCTTY, 0) != 0) return 12;
  ready();
  return AwaitSignal(sig);
}

TEST(Pty, OpenptyGivesATerminalPair) {
  Pair p = OpenPair();
  EXPECT_TRUE(isatty(p.master.get()));
  EXPECT_TRUE(isatty(p.replica.get()));
  const char* name = ptsname(p.master.get());
  ASSERT_NE(name, nullptr);
  char buf[64];
  ASSERT_EQ(ttyname_r(p.replica.get(), buf, sizeof(buf)), 0);
  EXPECT_STREQ(buf, name);
}

TEST(Pty, ReplicaNodeLooksLikeDevpts) {
  Pair p = OpenPair();
  unsigned n = 0;
  ASSERT_SYS_OK(ioctl(p.master.get(), TIOCGPTN, &n));
  EXPECT_EQ(std::string(ptsname(p.master.get())), "/dev/pts/" + std::to_string(n));
  struct stat st, fst;
  ASSERT_SYS_OK(stat(ptsname(p.master.get()), &st));
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(major(st.st_rdev), 136u + n / 256);
  EXPECT_EQ(minor(st.st_rdev), n % 256);
  EXPECT_EQ(st.st_uid, geteuid());
  EXPECT_EQ(st.st_mode & 0600, 0600u);
  ASSERT_SYS_OK(fstat(p.replica.get(), &fst));
  EXPECT_EQ(fst.st_rdev, st.st_rdev);
  EXPECT_EQ(fst.st_ino, st.st_ino);
  EXPECT_EQ(fst.st_dev, st.st_dev);
  ASSERT_SYS_OK(fstat(p.master.get(), &fst));
  EXPECT_TRUE(S_ISCHR(fst.st_mode));
  EXPECT_EQ(major(fst.st_rdev), 5u);
  EXPECT_EQ(minor(fst.st_rdev), 2u);
}

TEST(Pty, ReplicaIsLockedUntilUnlockpt) {
  ScopedFd m(posix_openpt(O_RDWR | O_NOCTTY));
  ASSERT_SYS_OK(m.get());
  ASSERT_SYS_OK(grantpt(m.get()));
  std::string name = ptsname(m.get());
  int locked = 0;
  ASSERT_SYS_OK(ioctl(m.get(), TIOCGPTLCK, &locked));
  EXPECT_EQ(locked, 1);
  EXPECT_ERRNO(open(name.c_str(), O_RDWR | O_NOCTTY), EIO);
  ASSERT_SYS_OK(unlockpt(m.get()));
  ScopedFd s(open(name.c_str(), O_RDWR | O_NOCTTY));
  EXPECT_GE(s.get(), 0);
}

TEST(Pty, PtsnameOfAReplicaFails) {
  Pair p = OpenPair();
  unsigned n;
  EXPECT_ERRNO(ioctl(p.replica.get(), TIOCGPTN, &n), ENOTTY);
}

TEST(Pty, EachPtmxOpenMakesANewIndexAndCloseRemovesIt) {
  Pair a = OpenPair();
  Pair b = OpenPair();
  std::string na = ptsname(a.master.get()), nb = ptsname(b.master.get());
  EXPECT_NE(na, nb);
  // The directory lists both.
  DIR* d = opendir("/dev/pts");
  ASSERT_NE(d, nullptr);
  int found = 0;
  while (struct dirent* e = readdir(d)) {
    std::string full = std::string("/dev/pts/") + e->d_name;
    if (full == na || full == nb) ++found;
  }
  closedir(d);
  EXPECT_EQ(found, 2);
  struct stat before;
  ASSERT_SYS_OK(stat(nb.c_str(), &before));
  b.replica.reset();
  b.master.reset();
  // On a shared host another process may get the freed index at once (ctest runs the
  // native side of two suites side by side): a node of that name is then a new one.
  struct stat st;
  if (stat(nb.c_str(), &st) == 0) {
    EXPECT_FALSE(st.st_ctim.tv_sec == before.st_ctim.tv_sec &&
                 st.st_ctim.tv_nsec == before.st_ctim.tv_nsec && st.st_ino == before.st_ino)
        << nb << " is still there";
  } else {
    EXPECT_EQ(errno, ENOENT);
  }
}

TEST(Pty, PtmxInsideDevptsOpensAPairToo) {
  int m = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY);
  if (m < 0 && errno == EACCES) GTEST_SKIP() << "devpts ptmxmode=000 and not root";
  ASSERT_SYS_OK(m);
  ScopedFd master(m);
  unsigned n;
  EXPECT_EQ(ioctl(m, TIOCGPTN, &n), 0);
}

TEST(Pty, TiocgptpeerOpensTheReplica) {
  Pair p = OpenPair();
  int fd = ioctl(p.master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_SYS_OK(fd);
  ScopedFd peer(fd);
  EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
  struct stat a, b;
  ASSERT_SYS_OK(fstat(fd, &a));
  ASSERT_SYS_OK(fstat(p.replica.get(), &b));
  EXPECT_EQ(a.st_rdev, b.st_rdev);
  WriteStr(fd, "peer\n");
  EXPECT_EQ(ReadN(p.master.get(), 6), "peer\r\n");
  // Reopening it through /proc reaches the same terminal.
  std::string proc = "/proc/self/fd/" + std::to_string(fd);
  ScopedFd again(open(proc.c_str(), O_RDWR | O_NOCTTY));
  ASSERT_SYS_OK(again.get());
  WriteStr(again.get(), "re\n");
  EXPECT_EQ(ReadN(p.master.get(), 4), "re\r\n");
}

TEST(Pty, DefaultTermiosIsLinuxs) {
  Pair p = OpenPair();
  struct termios t;
  ASSERT_SYS_OK(tcgetattr(p.replica.get(), &t));
  EXPECT_EQ(t.c_lflag & (ICANON | ECHO | ISIG | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN),
            tcflag_t(ICANON | ECHO | ISIG | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN));
  EXPECT_EQ(t.c_oflag & (OPOST | ONLCR), tcflag_t(OPOST | ONLCR));
  EXPECT_TRUE(t.c_iflag & ICRNL);
  EXPECT_EQ(t.c_cc[VINTR], 003);
  EXPECT_EQ(t.c_cc[VERASE], 0177);
  EXPECT_EQ(t.c_cc[VEOF], 004);
  EXPECT_EQ(t.c_cc[VMIN], 1);
  // The master shows and changes the same settings.
  t.c_lflag &= ~ECHO;
  ASSERT_SYS_OK(tcsetattr(p.master.get(), TCSANOW, &t));
  struct termios r;
  ASSERT_SYS_OK(tcgetattr(p.replica.get(), &r));
  EXPECT_FALSE(r.c_lflag & ECHO);
}

TEST(Pty, CanonicalReadWaitsForTheLine) {
  Pair p = OpenPair();
  WriteStr(p.master.get(), "abc");
  EXPECT_FALSE(Readable(p.replica.get(), 50));
  int n = -1;
  ASSERT_SYS_OK(ioctl(p.replica.get(), FIONREAD, &n));
  EXPECT_EQ(n, 0);
  WriteStr(p.master.get(), "\n");
  ASSERT_TRUE(Readable(p.replica.get(), 1000));
  ASSERT_SYS_OK(ioctl(p.replica.get(), FIONREAD, &n));
  EXPECT_EQ(n, 4);
  char buf[16];
  EXPECT_EQ(read(p.replica.get(), buf, sizeof(buf)), 4);
  EXPECT_EQ(std::string(buf, 4), "abc\n");
}

TEST(Pty, CanonicalReadReturnsOneLineAtATime) {
  Pair p = OpenPair();
  WriteStr(p.master.get(), "one\ntwo\n");
  ASSERT_TRUE(Readable(p.replica.get(), 1000));
  char buf[16];
  EXPECT_EQ(read(p.replica.get(), buf, sizeof(buf)), 4);
  EXPECT_EQ(read(p.replica.get(), buf, 2), 2);
  EXPECT_EQ(std::string(buf, 2), "tw");
  EXPECT_EQ(read(p.replica.get(), buf, sizeof(buf)), 2);
}

TEST(Pty, EchoWithCrNlTranslation) {
  Pair p = OpenPair();
  WriteStr(p.master.get(), "hi\r");  // ICRNL: CR arrives as NL
  EXPECT_EQ(ReadN(p.master.get(), 4), "hi\r\n");
  EXPECT_EQ(ReadN(p.replica.get(), 3), "hi\n");
}

TEST(Pty, EraseAndKillEditTheLine) {
  Pair p = OpenPair();
  WriteStr(p.master.get(),
           "ab\x7f"
           "c\n");
  EXPECT_EQ(ReadN(p.master.get(), 8), "ab\b \bc\r\n");
  EXPECT_EQ(ReadN(p.replica.get(), 3), "ac\n");
  WriteStr(p.master.get(), "junk\x15ok\n");
  EXPECT_EQ(ReadN(p.replica.get(), 3), "ok\n");
}

TEST(Pty, VeofEndsTheLineOrReadsAsEndOfFile) {
  Pair p = OpenPair();
  WriteStr(p.master.get(), "abc\x04");
  ASSERT_TRUE(Readable(p.replica.get(), 1000));
  char buf[16];
  EXPECT_EQ(read(p.replica.get(), buf, sizeof(buf)), 3);
  WriteStr(p.master.get(), "\x04");
  ASSERT_TRUE(Readable(p.replica.get(), 1000));
  EXPECT_EQ(read(p.replica.get(), buf, sizeof(buf)), 0);
}

TEST(Pty, OnlcrOnReplicaOutputAndOpostOff) {
  Pair p = OpenPair();
  WriteStr(p.replica.get(), "a\nb\n");
  EXPECT_EQ(ReadN(p.master.get(), 6), "a\r\nb\r\n");
  struct termios t;
  ASSERT_SYS_OK(tcgetattr(p.replica.get(), &t));
  t.c_oflag &= ~OPOST;
  ASSERT_SYS_OK(tcsetattr(p.replica.get(), TCSANOW, &t));
  WriteStr(p.replica.get(), "c\n");
  EXPECT_EQ(ReadN(p.master.get(), 2), "c\n");
}

TEST(Pty, RawModePassesBytesWithoutEcho) {
  Pair p = OpenPair();
  SetRaw(p.replica.get());
  WriteStr(p.master.get(), "\r\x03\x7fz");
  EXPECT_EQ(ReadN(p.replica.get(), 4), "\r\x03\x7fz");
  EXPECT_FALSE(Readable(p.master.get(), 50));  // no echo
  WriteStr(p.replica.get(), "\n");
  EXPECT_EQ(ReadN(p.master.get(), 1), "\n");
}

TEST(Pty, VminZeroVtimeZeroReturnsAtOnce) {
  Pair p = OpenPair();
  SetRaw(p.replica.get(), 0, 0);
  char buf[8];
  EXPECT_EQ(read(p.replica.get(), buf, sizeof(buf)), 0);
}

TEST(Pty, VtimeTimesOutWithZero) {
  Pair p = OpenPair();
  SetRaw(p.replica.get(), 0, 1);  // a tenth of a second
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  char buf[8];
  EXPECT_EQ(read(p.replica.get(), buf, sizeof(buf)), 0);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
  EXPECT_GE(ms, 60);
  WriteStr(p.master.get(), "q");
  EXPECT_EQ(read(p.replica.get(), buf, sizeof(buf)), 1);
}

TEST(Pty, VminWaitsForThatManyBytes) {
  Pair p = OpenPair();
  SetRaw(p.replica.get(), 3, 0);
  WriteStr(p.master.get(), "ab");
  EXPECT_FALSE(Readable(p.replica.get(), 50));
  WriteStr(p.master.get(), "c");
  ASSERT_TRUE(Readable(p.replica.get(), 1000));
  char buf[8];
  EXPECT_EQ(read(p.replica.get(), buf, sizeof(buf)), 3);
}

TEST(Pty, WindowSizeIsSharedByBothEnds) {
  Pair p = OpenPair();
  struct winsize w = {33, 99, 0, 0}, r = {};
  ASSERT_SYS_OK(ioctl(p.master.get(), TIOCSWINSZ, &w));
  ASSERT_SYS_OK(ioctl(p.replica.get(), TIOCGWINSZ, &r));
  EXPECT_EQ(r.ws_row, 33);
  EXPECT_EQ(r.ws_col, 99);
}

TEST(Pty, WindowChangeSendsSigwinchToTheForegroundGroup) {
  Pair p = OpenPair();
  std::string name = ptsname(p.master.get());
  int m = p.master.get();
  int rc = RunChild(
      [&](const std::function<void()>& ready) {
        return ControllingChildAwaiting(SIGWINCH, name.c_str(), -1, ready);
      },
      [&] {
        struct winsize w = {40, 120, 0, 0};
        ioctl(m, TIOCSWINSZ, &w);
      });
  EXPECT_EQ(rc, 0);
}

TEST(Pty, InterruptCharacterSendsSigintAndEchoesCaret) {
  Pair p = OpenPair();
  std::string name = ptsname(p.master.get());
  int m = p.master.get();
  int rc = RunChild(
      [&](const std::function<void()>& ready) {
        return ControllingChildAwaiting(SIGINT, name.c_str(), -1, ready);
      },
      [&] { WriteStr(m, "\x03"); });
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(ReadN(m, 2), "^C");
}

TEST(Pty, SuspendCharacterSendsSigtstp) {
  Pair p = OpenPair();
  std::string name = ptsname(p.master.get());
  int m = p.master.get();
  int rc = RunChild(
      [&](const std::function<void()>& ready) {
        return ControllingChildAwaiting(SIGTSTP, name.c_str(), -1, ready);
      },
      [&] { WriteStr(m, "\x1a"); });
  EXPECT_EQ(rc, 0);
}

TEST(Pty, SessionLeaderOpeningTheReplicaGetsAControllingTerminal) {
  Pair p = OpenPair();
  std::string name = ptsname(p.master.get());
  int m = p.master.get();
  int rc = RunChild([&](const std::function<void()>&) {
    if (setsid() < 0) return 1;
    int fd = open(name.c_str(), O_RDWR);  // no O_NOCTTY
    if (fd < 0) return 2;
    if (tcgetsid(fd) != getpid()) return 3;
    if (tcgetpgrp(fd) != getpgrp()) return 4;
    if (ioctl(fd, TIOCSCTTY, 0) != 0) return 5;  // already ours: fine
    // /dev/tty reaches it (fstat shows /dev/tty itself, 5:0, as on Linux).
    int tty = open("/dev/tty", O_RDWR);
    if (tty < 0) return 6;
    struct stat st;
    if (fstat(tty, &st) != 0 || major(st.st_rdev) != 5 || minor(st.st_rdev) != 0) return 7;
    if (write(tty, "t\n", 2) != 2) return 8;
    return ReadN(m, 3) == "t\r\n" ? 0 : 9;
  });
  EXPECT_EQ(rc, 0);
}

TEST(Pty, TiocscttyNeedsASessionLeader) {
  Pair p = OpenPair();
  int s = p.replica.get();
  int rc = RunChild([&](const std::function<void()>&) {
    if (getsid(0) == getpid()) return 1;  // a fork child never leads a session
    return ioctl(s, TIOCSCTTY, 0) == -1 && errno == EPERM ? 0 : 2;
  });
  EXPECT_EQ(rc, 0);
}

TEST(Pty, JobControlQueriesNeedTheControllingTerminal) {
  Pair p = OpenPair();
  // Not this process's controlling terminal.
  EXPECT_ERRNO(tcgetpgrp(p.replica.get()), ENOTTY);
  EXPECT_ERRNO(tcgetsid(p.replica.get()), ENOTTY);
  pid_t pg = getpgrp();
  EXPECT_ERRNO(tcsetpgrp(p.replica.get(), pg), ENOTTY);
  std::string name = ptsname(p.master.get());
  int rc = RunChild([&](const std::function<void()>&) {
    if (setsid() < 0) return 1;
    int fd = open(name.c_str(), O_RDWR);
    if (fd < 0) return 2;
    // Giving the terminal up hangs up the leader's foreground group: this one.
    signal(SIGHUP, SIG_IGN);
    if (tcsetpgrp(fd, getpgrp()) != 0) return 3;
    if (tcsetpgrp(fd, 999999) == 0 || errno != ESRCH) return 4;
    if (ioctl(fd, TIOCNOTTY) != 0) return 5;
    if (tcgetpgrp(fd) != -1 || errno != ENOTTY) return 6;
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

TEST(Pty, ForkptyChildIsSessionLeaderOnTheTerminal) {
  int m = -1;
  pid_t pid = forkpty(&m, nullptr, nullptr, nullptr);
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    bool ok = isatty(0) && isatty(1) && setsid() == -1 && errno == EPERM && tcgetsid(0) == getpid();
    printf(ok ? "child ok\n" : "child bad\n");
    fflush(stdout);
    _exit(ok ? 0 : 1);
  }
  ScopedFd master(m);
  std::string out;
  char buf[64];
  while (true) {
    ssize_t r = read(m, buf, sizeof(buf));
    if (r <= 0) {
      EXPECT_TRUE(r == 0 || errno == EIO) << strerror(errno);
      break;
    }
    out.append(buf, r);
  }
  EXPECT_EQ(out, "child ok\r\n");
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(Pty, MasterReadsEioAfterTheReplicaClosesOnceDrained) {
  Pair p = OpenPair();
  WriteStr(p.replica.get(), "x");
  p.replica.reset();
  EXPECT_TRUE(Revents(p.master.get(), POLLIN) & POLLHUP);
  char buf[8];
  EXPECT_EQ(read(p.master.get(), buf, sizeof(buf)), 1);
  EXPECT_ERRNO(read(p.master.get(), buf, sizeof(buf)), EIO);
}

TEST(Pty, ReplicaIsHungUpWhenTheMasterCloses) {
  Pair p = OpenPair();
  WriteStr(p.master.get(), "lost\n");
  p.master.reset();
  short r = Revents(p.replica.get(), POLLIN | POLLOUT);
  EXPECT_TRUE(r & POLLHUP);
  EXPECT_TRUE(r & POLLIN);
  char buf[8];
  EXPECT_EQ(read(p.replica.get(), buf, sizeof(buf)), 0);
  EXPECT_ERRNO(write(p.replica.get(), "x", 1), EIO);
  struct termios t;
  EXPECT_ERRNO(tcgetattr(p.replica.get(), &t), EIO);
}

TEST(Pty, MasterCloseSendsSighupToTheSessionLeader) {
  Pair p = OpenPair();
  std::string name = ptsname(p.master.get());
  int m = p.master.get();
  int rc = RunChild(
      [&](const std::function<void()>& ready) {
        return ControllingChildAwaiting(SIGHUP, name.c_str(), m, ready);
      },
      [&] {
        p.replica.reset();
        p.master.reset();
      });
  EXPECT_EQ(rc, 0);
}

TEST(Pty, PollReadinessOfBothEnds) {
  Pair p = OpenPair();
  EXPECT_EQ(Revents(p.replica.get(), POLLIN | POLLOUT), POLLOUT);
  EXPECT_EQ(Revents(p.master.get(), POLLIN | POLLOUT), POLLOUT);
  WriteStr(p.replica.get(), "y");
  EXPECT_EQ(Revents(p.master.get(), POLLIN | POLLOUT), POLLIN | POLLOUT);
}

TEST(Pty, EpollWakesOnReplicaOutput) {
  Pair p = OpenPair();
  ScopedFd ep(epoll_create1(0));
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ASSERT_SYS_OK(epoll_ctl(ep.get(), EPOLL_CTL_ADD, p.master.get(), &ev));
  EXPECT_EQ(epoll_wait(ep.get(), &ev, 1, 0), 0);
  int s = p.replica.get();
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    usleep(50000);
    _exit(write(s, "w", 1) == 1 ? 0 : 1);
  }
  EXPECT_EQ(epoll_wait(ep.get(), &ev, 1, 5000), 1);
  EXPECT_TRUE(ev.events & EPOLLIN);
  waitpid(pid, nullptr, 0);
}

TEST(Pty, BlockedReplicaReadWakesOnInput) {
  Pair p = OpenPair();
  int m = p.master.get();
  pid_t pid = fork();
  ASSERT_SYS_OK(pid);
  if (pid == 0) {
    usleep(50000);
    _exit(write(m, "late\n", 5) == 5 ? 0 : 1);
  }
  char buf[16];
  EXPECT_EQ(read(p.replica.get(), buf, sizeof(buf)), 5);
  waitpid(pid, nullptr, 0);
}

TEST(Pty, NonblockingEndsSayEagain) {
  Pair p = OpenPair(O_NONBLOCK);
  char buf[8];
  EXPECT_ERRNO(read(p.replica.get(), buf, sizeof(buf)), EAGAIN);
  EXPECT_ERRNO(read(p.master.get(), buf, sizeof(buf)), EAGAIN);
}

TEST(Pty, FullOutputQueueStopsTheWriter) {
  Pair p = OpenPair(O_NONBLOCK);
  SetRaw(p.replica.get());
  std::string chunk(4096, 'o');
  size_t total = 0;
  // Linux moves queued output on to the line discipline asynchronously, so right after
  // EAGAIN room may appear once more: fill again until a poll sees the queue full.
  bool full = false;
  for (int round = 0; round < 50 && !full; ++round) {
    while (true) {
      ssize_t r = write(p.replica.get(), chunk.data(), chunk.size());
      if (r < 0) {
        EXPECT_EQ(errno, EAGAIN);
        break;
      }
      total += r;
      ASSERT_LT(total, 16u << 20) << "the queue never fills";
    }
    full = !(Revents(p.replica.get(), POLLOUT) & POLLOUT);
  }
  EXPECT_GE(total, 4096u);
  EXPECT_TRUE(full) << "POLLOUT with the output queue full";
  Drain(p.master.get());
  EXPECT_TRUE(Revents(p.replica.get(), POLLOUT) & POLLOUT);
}

TEST(Pty, TcflushDropsPendingInput) {
  Pair p = OpenPair();
  WriteStr(p.master.get(), "gone\n");
  ASSERT_TRUE(Readable(p.replica.get(), 1000));
  ASSERT_SYS_OK(tcflush(p.replica.get(), TCIFLUSH));
  EXPECT_FALSE(Readable(p.replica.get(), 50));
  EXPECT_ERRNO(tcflush(p.replica.get(), 7), EINVAL);
}

// TIOCSTI pushes bytes into a terminal's input as if typed. The sandbox refuses it on
// every terminal; Linux lets only CAP_SYS_ADMIN do it on a terminal that is not the
// caller's controlling one.
TEST(Pty, TiocstiIsRefusedWithoutPrivilege) {
  Pair p = OpenPair();
  int s = p.replica.get();
  int rc = RunChild([&](const std::function<void()>&) {
    if (geteuid() == 0 && setresuid(65534, 65534, 65534) != 0) return 1;
    char c = 'x';
    if (ioctl(s, TIOCSTI, &c) == 0) return 2;
    return errno == EPERM || errno == EIO ? 0 : 3;
  });
  EXPECT_EQ(rc, 0);
  EXPECT_FALSE(Readable(s, 50));
}

TEST(Pty, TiocstiIsRefusedInTheSandboxEvenForRoot) {
  Pair p = OpenPair();
  char c = 'x';
  if (ioctl(p.replica.get(), TIOCSTI, &c) == 0) {
    GTEST_SKIP() << "the host lets a privileged caller inject input (the sandbox does not)";
  }
  EXPECT_TRUE(errno == EPERM || errno == EIO) << strerror(errno);
}

}  // namespace
}  // namespace syscall_test
