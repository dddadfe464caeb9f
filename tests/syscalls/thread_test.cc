// Threads: clone(CLONE_THREAD) through pthreads and raw clone, thread vs group exit,
// per-thread signals and masks, futex operations, robust mutexes, /proc/self/task and
// execve from a non-main thread.
#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

pid_t Gettid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

long Futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* ts = nullptr,
           std::atomic<uint32_t>* addr2 = nullptr, uint32_t val3 = 0) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, ts,
                 reinterpret_cast<uint32_t*>(addr2), val3);
}

// Runs `fn` in a forked child and returns its wait status (the child's exit code is
// what fn returns unless it exits or dies some other way).
template <typename Fn>
int InChild(Fn fn) {
  pid_t pid = fork();
  if (pid == 0) _exit(fn());
  int status = -1;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return status;
}

// Spins (yielding) until `flag` becomes true or ~5 s pass.
bool WaitFor(const std::atomic<bool>& flag) {
  for (int i = 0; i < 50000 && !flag.load(); i++) usleep(100);
  return flag.load();
}

template <typename Fn>
pthread_t Spawn(Fn* fn) {
  pthread_t th;
  int rc = pthread_create(
      &th, nullptr, [](void* p) -> void* { return (*static_cast<Fn*>(p))(); }, fn);
  if (rc != 0) abort();
  return th;
}

int CountTasks() {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') n++;
  }
  closedir(d);
  return n;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// ---------------------------------------------------------------------------
// Creation, join, identity

TEST(Thread, CreateJoinReturnsTheThreadsResult) {
  pthread_t th;
  ASSERT_EQ(pthread_create(
                &th, nullptr,
                [](void* arg) -> void* {
                  return reinterpret_cast<void*>(reinterpret_cast<intptr_t>(arg) * 2);
                },
                reinterpret_cast<void*>(21)),
            0);
  void* ret = nullptr;
  ASSERT_EQ(pthread_join(th, &ret), 0);
  EXPECT_EQ(reinterpret_cast<intptr_t>(ret), 42);
}

TEST(Thread, SixteenThreadsIncrementUnderAMutex) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static long counter = 0;
  counter = 0;
  std::vector<pthread_t> ths(16);
  for (auto& th : ths) {
    ASSERT_EQ(pthread_create(
                  &th, nullptr,
                  [](void*) -> void* {
                    for (int i = 0; i < 5000; i++) {
                      pthread_mutex_lock(&mu);
                      counter++;
                      pthread_mutex_unlock(&mu);
                    }
                    return nullptr;
                  },
                  nullptr),
              0);
  }
  for (auto& th : ths) ASSERT_EQ(pthread_join(th, nullptr), 0);
  EXPECT_EQ(counter, 16 * 5000);
}

TEST(Thread, ConditionVariablePingPong) {
  struct State {
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    int turn = 0;  // even: main, odd: thread
  } s;
  auto body = [&s]() -> void* {
    for (int i = 0; i < 200; i++) {
      pthread_mutex_lock(&s.mu);
      while (s.turn % 2 == 0) pthread_cond_wait(&s.cv, &s.mu);
      s.turn++;
      pthread_cond_signal(&s.cv);
      pthread_mutex_unlock(&s.mu);
    }
    return nullptr;
  };
  pthread_t th = Spawn(&body);
  for (int i = 0; i < 200; i++) {
    pthread_mutex_lock(&s.mu);
    while (s.turn % 2 == 1) pthread_cond_wait(&s.cv, &s.mu);
    s.turn++;
    pthread_cond_signal(&s.cv);
    pthread_mutex_unlock(&s.mu);
  }
  ASSERT_EQ(pthread_join(th, nullptr), 0);
  EXPECT_EQ(s.turn, 400);
}

TEST(Thread, BroadcastWakesEveryWaiter) {
  struct State {
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    bool go = false;
    int waiting = 0, done = 0;
  } s;
  auto body = [&s]() -> void* {
    pthread_mutex_lock(&s.mu);
    s.waiting++;
    while (!s.go) pthread_cond_wait(&s.cv, &s.mu);
    s.done++;
    pthread_mutex_unlock(&s.mu);
    return nullptr;
  };
  std::vector<pthread_t> ths;
  for (int i = 0; i < 8; i++) ths.push_back(Spawn(&body));
  for (int i = 0; i < 50000; i++) {
    pthread_mutex_lock(&s.mu);
    bool all = s.waiting == 8;
    pthread_mutex_unlock(&s.mu);
    if (all) break;
    usleep(100);
  }
  pthread_mutex_lock(&s.mu);
  s.go = true;
  pthread_cond_broadcast(&s.cv);
  pthread_mutex_unlock(&s.mu);
  for (auto& th : ths) ASSERT_EQ(pthread_join(th, nullptr), 0);
  EXPECT_EQ(s.done, 8);
}

TEST(Thread, GettidIsDistinctAndGetpidIsShared) {
  struct Ids {
    pid_t pid, tid;
  };
  std::vector<Ids> ids(4);
  std::vector<pthread_t> ths(4);
  for (int i = 0; i < 4; i++) {
    ASSERT_EQ(pthread_create(
                  &ths[i], nullptr,
                  [](void* p) -> void* {
                    auto* id = static_cast<Ids*>(p);
                    id->pid = getpid();
                    id->tid = Gettid();
                    return nullptr;
                  },
                  &ids[i]),
              0);
  }
  for (auto& th : ths) ASSERT_EQ(pthread_join(th, nullptr), 0);
  std::set<pid_t> tids{Gettid()};
  EXPECT_EQ(Gettid(), getpid());
  for (const Ids& id : ids) {
    EXPECT_EQ(id.pid, getpid());
    EXPECT_NE(id.tid, getpid());
    tids.insert(id.tid);
  }
  EXPECT_EQ(tids.size(), 5u);
}

TEST(Thread, ThreadLocalStorageIsPerThread) {
  static thread_local int tls_value = 1;
  tls_value = 100;
  auto body = []() -> void* {
    int before = tls_value;  // a fresh copy of the initializer, not main's 100
    tls_value = 7;
    return reinterpret_cast<void*>(static_cast<intptr_t>(before * 1000 + tls_value));
  };
  pthread_t th = Spawn(&body);
  void* ret;
  ASSERT_EQ(pthread_join(th, &ret), 0);
  EXPECT_EQ(reinterpret_cast<intptr_t>(ret), 1007);
  EXPECT_EQ(tls_value, 100);
}

TEST(Thread, CreateAndJoinManyInSequence) {
  for (int i = 0; i < 100; i++) {
    pthread_t th;
    ASSERT_EQ(pthread_create(
                  &th, nullptr, [](void* p) -> void* { return p; },
                  reinterpret_cast<void*>(static_cast<intptr_t>(i))),
              0);
    void* ret;
    ASSERT_EQ(pthread_join(th, &ret), 0);
    ASSERT_EQ(reinterpret_cast<intptr_t>(ret), i);
  }
}

TEST(Thread, DetachedThreadsFinish) {
  static std::atomic<int> finished{0};
  finished = 0;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  for (int i = 0; i < 8; i++) {
    pthread_t th;
    ASSERT_EQ(pthread_create(
                  &th, &attr,
                  [](void*) -> void* {
                    finished++;
                    return nullptr;
                  },
                  nullptr),
              0);
  }
  pthread_attr_destroy(&attr);
  for (int i = 0; i < 50000 && finished.load() < 8; i++) usleep(100);
  EXPECT_EQ(finished.load(), 8);
}

// Many threads alive at once: each creation succeeds or fails cleanly with EAGAIN (a
// thread limit), and the process goes on either way.
TEST(Thread, HundredLiveThreadsOrACleanEagain) {
  static int release[2];  // the threads sleep in read() until the write end closes
  static std::atomic<int> running{0};
  ASSERT_SYS_OK(pipe(release));
  running = 0;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  std::vector<pthread_t> ths;
  int eagain = 0;
  for (int i = 0; i < 100; i++) {
    pthread_t th;
    int rc = pthread_create(
        &th, &attr,
        [](void*) -> void* {
          running++;
          char c;
          (void)read(release[0], &c, 1);
          return nullptr;
        },
        nullptr);
    if (rc == 0) {
      ths.push_back(th);
    } else {
      ASSERT_EQ(rc, EAGAIN);
      eagain++;
    }
  }
  pthread_attr_destroy(&attr);
  EXPECT_GE(ths.size(), 32u);
  for (int i = 0; i < 50000 && running.load() < static_cast<int>(ths.size()); i++) usleep(100);
  EXPECT_EQ(running.load(), static_cast<int>(ths.size()));
  close(release[1]);
  for (auto& th : ths) ASSERT_EQ(pthread_join(th, nullptr), 0);
  close(release[0]);
  // Once they are gone, creating threads works again (a limit frees up promptly).
  pthread_t th;
  int rc = EAGAIN;
  for (int i = 0; i < 1000 && rc == EAGAIN; i++) {
    rc = pthread_create(
        &th, nullptr, [](void*) -> void* { return nullptr; }, nullptr);
    if (rc == EAGAIN) usleep(1000);
  }
  ASSERT_EQ(rc, 0);
  pthread_join(th, nullptr);
}

// Raw clone: CLONE_PARENT_SETTID stores the tid, CLONE_CHILD_CLEARTID zeroes it and
// futex-wakes it when the thread exits (what pthread_join sleeps on).
TEST(Thread, RawCloneSetsAndClearsTheTidWord) {
  static std::atomic<uint32_t> ctid{0};
  static std::atomic<int> ran{0};
  ran = 0;
  std::vector<char> stack(64 * 1024);
  pid_t parent_tid = 0;
  ctid = 0xffffffff;
  int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
              CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
  // The child shares main's TLS, so it makes no libc calls that touch errno.
  int tid = clone(
      [](void*) -> int {
        ran = 1;
        return 0;
      },
      stack.data() + stack.size(), flags, nullptr, &parent_tid, nullptr,
      reinterpret_cast<uint32_t*>(&ctid));
  ASSERT_GT(tid, 0) << strerror(errno);
  EXPECT_EQ(parent_tid, tid);
  for (int i = 0; i < 1000; i++) {
    uint32_t v = ctid.load();
    if (v == 0) break;
    timespec ts{0, 10 * 1000 * 1000};
    Futex(&ctid, FUTEX_WAIT, v, &ts);
  }
  EXPECT_EQ(ctid.load(), 0u);
  EXPECT_EQ(ran.load(), 1);
}

TEST(Thread, CloneThreadWithoutSighandIsEinval) {
  std::vector<char> stack(16 * 1024);
  errno = 0;
  int r = clone([](void*) -> int { return 0; }, stack.data() + stack.size(),
                CLONE_VM | CLONE_THREAD, nullptr);
  EXPECT_EQ(r, -1);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  r = clone([](void*) -> int { return 0; }, stack.data() + stack.size(), CLONE_SIGHAND, nullptr);
  EXPECT_EQ(r, -1);
  EXPECT_EQ(errno, EINVAL);
}

// CLONE_VM without CLONE_THREAD: a separate process (own PID, waited for with waitpid)
// whose writes land in the parent's memory.
TEST(Thread, CloneVmProcessSharesMemory) {
  static std::atomic<int> shared{0};
  shared = 0;
  std::vector<char> stack(64 * 1024);
  pid_t pid = clone(
      [](void*) -> int {
        shared = 1234;  // no libc calls: the child shares the parent's TLS
        return 7;
      },
      stack.data() + stack.size(), CLONE_VM | SIGCHLD, nullptr);
  ASSERT_GT(pid, 0) << strerror(errno);
  EXPECT_NE(pid, getpid());
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_EQ(shared.load(), 1234);
}

// ---------------------------------------------------------------------------
// Exit

TEST(ThreadExit, ThreadExitLeavesTheProcessRunning) {
  pthread_t th;
  ASSERT_EQ(
      pthread_create(
          &th, nullptr, [](void*) -> void* { pthread_exit(reinterpret_cast<void*>(5)); }, nullptr),
      0);
  void* ret;
  ASSERT_EQ(pthread_join(th, &ret), 0);
  EXPECT_EQ(reinterpret_cast<intptr_t>(ret), 5);
  // Detached threads of earlier cases may take a moment to be gone.
  for (int i = 0; i < 2000 && CountTasks() != 1; i++) usleep(1000);
  EXPECT_EQ(CountTasks(), 1);
}

TEST(ThreadExit, LastThreadsExitStatusIsTheProcesss) {
  int status = InChild([] {
    pthread_t th;
    pthread_create(
        &th, nullptr,
        [](void*) -> void* {
          usleep(50 * 1000);
          syscall(SYS_exit, 9);  // only this thread; it is the last one
          return nullptr;
        },
        nullptr);
    syscall(SYS_exit, 0);  // main leaves first (no unwinding through gtest)
    return 1;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 9);
}

TEST(ThreadExit, ExitGroupFromAThreadEndsTheProcess) {
  int status = InChild([] {
    pthread_t th;
    pthread_create(
        &th, nullptr,
        [](void*) -> void* {
          usleep(20 * 1000);
          _exit(42);
        },
        nullptr);
    pause();  // main sleeps in a syscall: it must be interrupted and killed
    return 1;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 42);
}

TEST(ThreadExit, ExitGroupKillsAThreadBlockedInRead) {
  int status = InChild([] {
    static int fds[2];
    if (pipe(fds) != 0) return 1;
    pthread_t th;
    pthread_create(
        &th, nullptr,
        [](void*) -> void* {
          char c;
          (void)read(fds[0], &c, 1);  // never gets data
          _exit(2);
        },
        nullptr);
    usleep(30 * 1000);
    exit(3);
    return 1;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 3);
}

TEST(ThreadExit, ExitGroupKillsAThreadSpinningInUserCode) {
  int status = InChild([] {
    static std::atomic<bool> spinning{false};
    pthread_t th;
    pthread_create(
        &th, nullptr,
        [](void*) -> void* {
          spinning = true;
          volatile uint64_t x = 0;
          while (true) x = x + 1;
          return nullptr;
        },
        nullptr);
    WaitFor(spinning);
    exit(4);
    return 1;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 4);
}

TEST(ThreadExit, FatalSignalToOneThreadKillsTheGroup) {
  int status = InChild([] {
    static std::atomic<pid_t> tid{0};
    pthread_t th;
    pthread_create(
        &th, nullptr,
        [](void*) -> void* {
          tid = Gettid();
          while (true) pause();
          return nullptr;
        },
        nullptr);
    while (tid.load() == 0) usleep(100);
    syscall(SYS_tgkill, getpid(), tid.load(), SIGTERM);
    while (true) pause();
    return 1;
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

TEST(ThreadExit, ExecveFromANonMainThread) {
  int fds[2];
  ASSERT_SYS_OK(pipe(fds));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    static int out;
    out = fds[1];
    pthread_t th;
    pthread_create(
        &th, nullptr,
        [](void*) -> void* {
          dup2(out, 1);
          execl("/bin/sh", "sh", "-c", "echo $$; exit 42", nullptr);
          _exit(99);
        },
        nullptr);
    while (true) pause();  // killed by the exec
  }
  close(fds[1]);
  char buf[64] = {};
  size_t n = 0;
  while (n < sizeof(buf) - 1) {
    ssize_t r = read(fds[0], buf + n, sizeof(buf) - 1 - n);
    if (r <= 0) break;
    n += r;
  }
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 42);
  // The exec'd image runs as the process (it took over the leader's PID).
  EXPECT_EQ(atoi(buf), pid);
}

// ---------------------------------------------------------------------------
// Signals

std::atomic<pid_t> g_handler_tid{0};
void RecordTid(int) { g_handler_tid = Gettid(); }

TEST(ThreadSignal, TgkillRunsTheHandlerInTheTargetThread) {
  struct sigaction sa {};
  sa.sa_handler = RecordTid;
  ASSERT_SYS_OK(sigaction(SIGUSR1, &sa, nullptr));
  g_handler_tid = 0;
  static std::atomic<pid_t> tid{0};
  static std::atomic<bool> stop{false};
  tid = 0;
  stop = false;
  auto body = []() -> void* {
    tid = Gettid();
    while (!stop.load()) usleep(1000);
    return nullptr;
  };
  pthread_t th = Spawn(&body);
  while (tid.load() == 0) usleep(100);
  ASSERT_SYS_OK(syscall(SYS_tgkill, getpid(), tid.load(), SIGUSR1));
  for (int i = 0; i < 5000 && g_handler_tid.load() == 0; i++) usleep(1000);
  stop = true;
  pthread_join(th, nullptr);
  EXPECT_EQ(g_handler_tid.load(), tid.load());
  signal(SIGUSR1, SIG_DFL);
}

TEST(ThreadSignal, TgkillWithTheWrongTgidIsEsrch) {
  EXPECT_ERRNO(syscall(SYS_tgkill, getpid() + 100000, Gettid(), 0), ESRCH);
  EXPECT_ERRNO(syscall(SYS_tkill, 0x3fffffff, 0), ESRCH);
  EXPECT_EQ(syscall(SYS_tgkill, getpid(), Gettid(), 0), 0);
}

TEST(ThreadSignal, ProcessSignalGoesToAThreadThatDoesNotBlockIt) {
  struct sigaction sa {};
  sa.sa_handler = RecordTid;
  ASSERT_SYS_OK(sigaction(SIGUSR2, &sa, nullptr));
  g_handler_tid = 0;
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &set, &old), 0);  // main blocks it
  static std::atomic<pid_t> tid{0};
  static std::atomic<bool> stop{false};
  tid = 0;
  stop = false;
  auto body = []() -> void* {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR2);
    pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
    tid = Gettid();
    while (!stop.load()) usleep(1000);
    return nullptr;
  };
  pthread_t th = Spawn(&body);
  while (tid.load() == 0) usleep(100);
  ASSERT_SYS_OK(kill(getpid(), SIGUSR2));
  for (int i = 0; i < 5000 && g_handler_tid.load() == 0; i++) usleep(1000);
  stop = true;
  pthread_join(th, nullptr);
  EXPECT_EQ(g_handler_tid.load(), tid.load());
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  signal(SIGUSR2, SIG_DFL);
}

TEST(ThreadSignal, SignalMaskIsPerThread) {
  sigset_t before;
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &before), 0);
  auto body = []() -> void* {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &s, nullptr);
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, nullptr, &now);
    return reinterpret_cast<void*>(static_cast<intptr_t>(sigismember(&now, SIGHUP)));
  };
  pthread_t th = Spawn(&body);
  void* ret;
  ASSERT_EQ(pthread_join(th, &ret), 0);
  EXPECT_EQ(reinterpret_cast<intptr_t>(ret), 1);
  sigset_t after;
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &after), 0);
  EXPECT_EQ(sigismember(&after, SIGHUP), sigismember(&before, SIGHUP));
}

TEST(ThreadSignal, NewThreadInheritsTheCreatorsMask) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGWINCH);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &set, &old), 0);
  auto body = []() -> void* {
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, nullptr, &now);
    return reinterpret_cast<void*>(static_cast<intptr_t>(sigismember(&now, SIGWINCH)));
  };
  pthread_t th = Spawn(&body);
  void* ret;
  ASSERT_EQ(pthread_join(th, &ret), 0);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(reinterpret_cast<intptr_t>(ret), 1);
}

std::atomic<uintptr_t> g_handler_sp{0};
void RecordStack(int) {
  int local;
  g_handler_sp = reinterpret_cast<uintptr_t>(&local);
}

TEST(ThreadSignal, AlternateStackIsPerThreadAndNotInherited) {
  struct sigaction sa {};
  sa.sa_handler = RecordStack;
  sa.sa_flags = SA_ONSTACK;
  ASSERT_SYS_OK(sigaction(SIGUSR1, &sa, nullptr));
  static std::vector<char> alt(64 * 1024);
  stack_t ss{};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  ASSERT_SYS_OK(sigaltstack(&ss, nullptr));  // main's
  auto body = []() -> void* {
    stack_t cur{};
    sigaltstack(nullptr, &cur);
    // A new thread starts without the creator's alternate stack.
    bool inherited = !(cur.ss_flags & SS_DISABLE);
    g_handler_sp = 0;
    raise(SIGUSR1);  // handled on this thread's normal stack
    uintptr_t sp = g_handler_sp.load();
    bool on_alt = sp >= reinterpret_cast<uintptr_t>(alt.data()) &&
                  sp < reinterpret_cast<uintptr_t>(alt.data() + alt.size());
    return reinterpret_cast<void*>(static_cast<intptr_t>((inherited ? 1 : 0) | (on_alt ? 2 : 0)));
  };
  pthread_t th = Spawn(&body);
  void* ret;
  ASSERT_EQ(pthread_join(th, &ret), 0);
  EXPECT_EQ(reinterpret_cast<intptr_t>(ret), 0);
  g_handler_sp = 0;
  raise(SIGUSR1);  // main's handler runs on main's alternate stack
  uintptr_t sp = g_handler_sp.load();
  EXPECT_GE(sp, reinterpret_cast<uintptr_t>(alt.data()));
  EXPECT_LT(sp, reinterpret_cast<uintptr_t>(alt.data() + alt.size()));
  ss.ss_flags = SS_DISABLE;
  ASSERT_SYS_OK(sigaltstack(&ss, nullptr));
  signal(SIGUSR1, SIG_DFL);
}

// ---------------------------------------------------------------------------
// Blocking across threads

TEST(ThreadBlocking, ReadOnAPipeIsWokenByAnotherThreadsWrite) {
  static int fds[2];
  ASSERT_SYS_OK(pipe(fds));
  auto body = []() -> void* {
    char buf[8] = {};
    ssize_t n = read(fds[0], buf, sizeof(buf));
    return reinterpret_cast<void*>(static_cast<intptr_t>(n == 3 && buf[0] == 'x' ? 1 : 0));
  };
  pthread_t th = Spawn(&body);
  usleep(30 * 1000);  // let it block
  ASSERT_EQ(write(fds[1], "xyz", 3), 3);
  void* ret;
  ASSERT_EQ(pthread_join(th, &ret), 0);
  EXPECT_EQ(reinterpret_cast<intptr_t>(ret), 1);
  close(fds[0]);
  close(fds[1]);
}

TEST(Futex, WaitIsWokenByWakeFromAnotherThread) {
  static std::atomic<uint32_t> word{0};
  static std::atomic<bool> about_to_wait{false};
  word = 0;
  about_to_wait = false;
  auto body = []() -> void* {
    about_to_wait = true;
    while (word.load() == 0) Futex(&word, FUTEX_WAIT_PRIVATE, 0);
    return nullptr;
  };
  pthread_t th = Spawn(&body);
  WaitFor(about_to_wait);
  usleep(20 * 1000);
  word = 1;
  long woken = Futex(&word, FUTEX_WAKE_PRIVATE, 1);
  ASSERT_EQ(pthread_join(th, nullptr), 0);
  EXPECT_GE(woken, 0);
  EXPECT_LE(woken, 1);
}

TEST(Futex, WaitWithAMismatchedValueIsEagain) {
  std::atomic<uint32_t> word{5};
  EXPECT_ERRNO(Futex(&word, FUTEX_WAIT_PRIVATE, 4), EAGAIN);
}

TEST(Futex, WaitTimesOut) {
  std::atomic<uint32_t> word{0};
  timespec ts{0, 30 * 1000 * 1000};
  timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  EXPECT_ERRNO(Futex(&word, FUTEX_WAIT_PRIVATE, 0, &ts), ETIMEDOUT);
  clock_gettime(CLOCK_MONOTONIC, &end);
  double elapsed = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
  EXPECT_GE(elapsed, 0.025);
}

TEST(Futex, WakeBitsetWakesOnlyMatchingWaiters) {
  static std::atomic<uint32_t> word{0};
  static std::atomic<int> ready{0}, woke{0};
  word = 0;
  ready = 0;
  woke = 0;
  auto body = []() -> void* {
    ready++;
    while (word.load() == 0) {
      syscall(SYS_futex, &word, FUTEX_WAIT_BITSET_PRIVATE, 0, nullptr, nullptr, 0x1);
    }
    woke++;
    return nullptr;
  };
  pthread_t th = Spawn(&body);
  while (ready.load() == 0) usleep(100);
  usleep(30 * 1000);
  // A wake for bit 0x2 does not reach the waiter on 0x1.
  EXPECT_EQ(syscall(SYS_futex, &word, FUTEX_WAKE_BITSET_PRIVATE, 1, nullptr, nullptr, 0x2), 0);
  EXPECT_EQ(woke.load(), 0);
  word = 1;
  EXPECT_EQ(syscall(SYS_futex, &word, FUTEX_WAKE_BITSET_PRIVATE, 1, nullptr, nullptr, 0x1), 1);
  ASSERT_EQ(pthread_join(th, nullptr), 0);
  EXPECT_EQ(woke.load(), 1);
}

TEST(Futex, CmpRequeueMovesWaitersToTheSecondWord) {
  static std::atomic<uint32_t> f1{0}, f2{0};
  static std::atomic<int> ready{0};
  f1 = 0;
  f2 = 0;
  ready = 0;
  auto body = []() -> void* {
    ready++;
    Futex(&f1, FUTEX_WAIT_PRIVATE, 0);  // woken through f2 after the requeue
    return nullptr;
  };
  pthread_t a = Spawn(&body), b = Spawn(&body);
  while (ready.load() < 2) usleep(100);
  usleep(50 * 1000);
  // Wake none, move both; val3 must equal *f1.
  EXPECT_ERRNO(syscall(SYS_futex, &f1, FUTEX_CMP_REQUEUE_PRIVATE, 0, 2, &f2, 1), EAGAIN);
  EXPECT_EQ(syscall(SYS_futex, &f1, FUTEX_CMP_REQUEUE_PRIVATE, 0, 2, &f2, 0), 2);
  EXPECT_EQ(Futex(&f1, FUTEX_WAKE_PRIVATE, 10), 0);
  EXPECT_EQ(Futex(&f2, FUTEX_WAKE_PRIVATE, 10), 2);
  ASSERT_EQ(pthread_join(a, nullptr), 0);
  ASSERT_EQ(pthread_join(b, nullptr), 0);
}

TEST(Futex, WakeOpChangesTheSecondWordAndWakesItsWaiter) {
  static std::atomic<uint32_t> f1{0}, f2{0};
  static std::atomic<int> ready{0};
  f1 = 0;
  f2 = 0;
  ready = 0;
  auto body = []() -> void* {
    ready++;
    while (f2.load() == 0) Futex(&f2, FUTEX_WAIT_PRIVATE, 0);
    return nullptr;
  };
  pthread_t th = Spawn(&body);
  while (ready.load() == 0) usleep(100);
  usleep(30 * 1000);
  // *f2 = 1; wake 1 on f1 (none); wake 1 on f2 if the old value was 0.
  uint32_t op = FUTEX_OP(FUTEX_OP_SET, 1, FUTEX_OP_CMP_EQ, 0);
  long r = syscall(SYS_futex, &f1, FUTEX_WAKE_OP_PRIVATE, 1, 1, &f2, op);
  EXPECT_EQ(r, 1);
  EXPECT_EQ(f2.load(), 1u);
  ASSERT_EQ(pthread_join(th, nullptr), 0);
  // ADD with a failing comparison changes the word and wakes nobody on it.
  op = FUTEX_OP(FUTEX_OP_ADD, 5, FUTEX_OP_CMP_GT, 10);
  EXPECT_EQ(syscall(SYS_futex, &f1, FUTEX_WAKE_OP_PRIVATE, 1, 1, &f2, op), 0);
  EXPECT_EQ(f2.load(), 6u);
}

// A shared (not FUTEX_PRIVATE) futex in MAP_SHARED memory reaches another process:
// what process-shared semaphores and mutexes (Python's multiprocessing) rely on.
TEST(Futex, SharedFutexWakesAnotherProcess) {
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* word = static_cast<std::atomic<uint32_t>*>(mem);
  auto* waiting = static_cast<std::atomic<uint32_t>*>(mem) + 1;
  *word = 0;
  *waiting = 0;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    *waiting = 1;
    timespec ts{5, 0};
    while (word->load() == 0) {
      if (Futex(word, FUTEX_WAIT, 0, &ts) == -1 && errno == ETIMEDOUT) _exit(1);
    }
    _exit(0);
  }
  while (waiting->load() == 0) usleep(100);
  usleep(50 * 1000);
  *word = 1;
  long woken = Futex(word, FUTEX_WAKE, 1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(woken, 1);
  munmap(mem, 4096);
}

TEST(Futex, ProcessSharedSemaphoreAcrossFork) {
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* sem = static_cast<sem_t*>(mem);
  ASSERT_SYS_OK(sem_init(sem, /*pshared=*/1, 0));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    _exit(sem_timedwait(sem, &deadline) == 0 ? 0 : 1);
  }
  usleep(50 * 1000);  // the child is blocked in sem_timedwait by now
  ASSERT_SYS_OK(sem_post(sem));
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  sem_destroy(sem);
  munmap(mem, 4096);
}

TEST(Futex, RobustMutexOwnerDeathIsEownerdead) {
  static pthread_mutex_t mu;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  ASSERT_EQ(pthread_mutex_init(&mu, &attr), 0);
  pthread_mutexattr_destroy(&attr);
  auto body = []() -> void* {
    pthread_mutex_lock(&mu);
    return nullptr;  // exits holding it
  };
  pthread_t th = Spawn(&body);
  ASSERT_EQ(pthread_join(th, nullptr), 0);
  ASSERT_EQ(pthread_mutex_lock(&mu), EOWNERDEAD);
  EXPECT_EQ(pthread_mutex_consistent(&mu), 0);
  EXPECT_EQ(pthread_mutex_unlock(&mu), 0);
  EXPECT_EQ(pthread_mutex_lock(&mu), 0);
  EXPECT_EQ(pthread_mutex_unlock(&mu), 0);
  pthread_mutex_destroy(&mu);
}

TEST(Futex, RobustMutexWaiterIsWokenWhenTheOwnerDies) {
  static pthread_mutex_t mu;
  static std::atomic<bool> locked{false};
  locked = false;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  ASSERT_EQ(pthread_mutex_init(&mu, &attr), 0);
  pthread_mutexattr_destroy(&attr);
  auto owner = []() -> void* {
    pthread_mutex_lock(&mu);
    locked = true;
    usleep(50 * 1000);  // main is blocked in the lock by now
    return nullptr;
  };
  pthread_t th = Spawn(&owner);
  WaitFor(locked);
  EXPECT_EQ(pthread_mutex_lock(&mu), EOWNERDEAD);
  pthread_mutex_consistent(&mu);
  pthread_mutex_unlock(&mu);
  ASSERT_EQ(pthread_join(th, nullptr), 0);
  pthread_mutex_destroy(&mu);
}

TEST(Futex, PiLockIsUnsupportedOrWorks) {
  // PI futexes may be unimplemented (ENOSYS); with no owner, LOCK_PI takes the lock.
  std::atomic<uint32_t> word{0};
  long r = Futex(&word, FUTEX_LOCK_PI_PRIVATE, 0);
  if (r == -1) {
    EXPECT_EQ(errno, ENOSYS);
  } else {
    EXPECT_EQ(word.load() & FUTEX_TID_MASK, static_cast<uint32_t>(Gettid()));
  }
  SUCCEED();
}

// ---------------------------------------------------------------------------
// /proc and names

TEST(ThreadProc, TaskDirectoryListsEveryThread) {
  static std::atomic<bool> stop{false};
  static std::atomic<int> started{0};
  stop = false;
  started = 0;
  auto body = []() -> void* {
    started++;
    while (!stop.load()) usleep(1000);
    return nullptr;
  };
  std::vector<pthread_t> ths;
  for (int i = 0; i < 3; i++) ths.push_back(Spawn(&body));
  while (started.load() < 3) usleep(100);
  for (int i = 0; i < 2000 && CountTasks() != 4; i++) usleep(1000);
  EXPECT_EQ(CountTasks(), 4);
  std::string status = ReadFile("/proc/self/status");
  EXPECT_NE(status.find("Threads:\t4\n"), std::string::npos) << status;
  stop = true;
  for (auto& th : ths) pthread_join(th, nullptr);
  for (int i = 0; i < 2000 && CountTasks() != 1; i++) usleep(1000);
  EXPECT_EQ(CountTasks(), 1);
}

TEST(ThreadProc, PerThreadNamesShowInTaskComm) {
  static std::atomic<pid_t> tid{0};
  static std::atomic<bool> stop{false};
  tid = 0;
  stop = false;
  char main_name[16] = {};
  ASSERT_SYS_OK(prctl(PR_GET_NAME, main_name));
  auto body = []() -> void* {
    prctl(PR_SET_NAME, "worker-one");
    tid = Gettid();
    while (!stop.load()) usleep(1000);
    return nullptr;
  };
  pthread_t th = Spawn(&body);
  while (tid.load() == 0) usleep(100);
  std::string comm = ReadFile("/proc/self/task/" + std::to_string(tid.load()) + "/comm");
  EXPECT_EQ(comm, "worker-one\n");
  struct stat st;
  EXPECT_EQ(
      stat(("/proc/" + std::to_string(getpid()) + "/task/" + std::to_string(tid.load())).c_str(),
           &st),
      0);
  char now[16] = {};
  ASSERT_SYS_OK(prctl(PR_GET_NAME, now));
  EXPECT_STREQ(now, main_name);  // main's own name is unchanged
  stop = true;
  pthread_join(th, nullptr);
}

TEST(ThreadProc, PthreadNamesRoundTrip) {
  static std::atomic<bool> stop{false};
  stop = false;
  auto body = []() -> void* {
    while (!stop.load()) usleep(1000);
    return nullptr;
  };
  pthread_t th = Spawn(&body);
  // For another thread glibc writes /proc/self/task/TID/comm.
  int rc = pthread_setname_np(th, "named");
  char name[16] = {};
  if (rc == 0) {
    ASSERT_EQ(pthread_getname_np(th, name, sizeof(name)), 0);
    EXPECT_STREQ(name, "named");
  }
  ASSERT_EQ(pthread_setname_np(pthread_self(), "mainthr"), 0);
  ASSERT_EQ(pthread_getname_np(pthread_self(), name, sizeof(name)), 0);
  EXPECT_STREQ(name, "mainthr");
  stop = true;
  pthread_join(th, nullptr);
}

}  // namespace
}  // namespace syscall_test
