// syscall_fuzz: a small syzkaller-style fuzzer for the sentry. It issues many random
// syscalls with random and adversarial arguments (bad pointers, huge lengths, negative
// fds, random flags) derived from a seed, so every run is reproducible. The sentry must
// never crash or hang, and the host must stay unchanged (tests/fuzz/run_fuzz.sh checks).
//
// Structure: the parent forks one child per batch. The child builds a fresh pool of
// resources (files, pipes, sockets, eventfd, epoll, memfd, mappings) and issues
// --batch random syscalls. A periodic SIGALRM (no SA_RESTART) interrupts calls that
// block; the parent kills a batch that outlives --timeout seconds, and reports a HANG
// (exit 3) when even SIGKILL does not end it. Each batch has its own PRNG stream
// (seed, batch), so `--seed S --only-batch B --verbose` replays one batch and prints
// every call before making it.
//
// DANGER: run natively, this program would issue random syscalls against the real
// kernel as the invoking user (unlink, rename, kill, chmod, ... with real paths). It
// refuses to run unless uname() reports the usentry sentry's kernel version.
#include <arpa/inet.h>
#include <asm/prctl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fs.h>
#include <linux/futex.h>
#include <linux/mman.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define PAGE 4096UL
#define BUF_PAGES 16
#define SLOT 512
#define NSLOTS (BUF_PAGES * PAGE / SLOT)
#define LOG_FD 900  // the child's log: out of reach of the small fds the fuzzer uses

// ---------------------------------------------------------------------------------
// PRNG: splitmix64 seeds a xorshift64* stream; one stream per (seed, batch).

static __thread uint64_t rng_state;  // per thread: each fuzzing thread has its own stream

static uint64_t SplitMix(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static uint64_t Rand(void) {
  uint64_t x = rng_state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  rng_state = x;
  return x * 0x2545f4914f6cdd1dULL;
}

static uint64_t Below(uint64_t n) { return n == 0 ? 0 : Rand() % n; }
static int Chance(int percent) { return (int)Below(100) < percent; }

// ---------------------------------------------------------------------------------
// Options and shared state.

struct Options {
  uint64_t seed;
  uint64_t iterations;
  uint64_t batch;
  int timeout;  // seconds per batch before the parent kills it
  int verbose;
  int threads;         // fuzzing threads per batch; more than 1 trades replayability for races
  int64_t only_batch;  // -1: all
  const char* canary;  // a host path the run must not change; used in path arguments
};

static struct Options opt = {1, 2000, 200, 5, 0, 1, -1, NULL};

// The child records the call it is about to make here (a MAP_SHARED page), so the
// parent can name the last call of a batch that died or hung.
struct LastCall {
  uint64_t batch;
  uint64_t index;
  long nr;
  uint64_t args[6];
  uint64_t calls;  // calls issued in this batch
};
static volatile struct LastCall* last;

// ---------------------------------------------------------------------------------
// The child's resource pool.

#define MAX_FDS 48
static int pool_fds[MAX_FDS];
static int npool;
static char* buf;      // BUF_PAGES read-write pages followed by a PROT_NONE guard page
static char* ro_page;  // one read-only page
static pid_t self_pid, parent_pid;
static pid_t child_pids[2];  // a sleeping child and a zombie, targets for wait/kill/ptrace
// Ports of the pool's loopback TCP listener and UDP socket (the address class uses them).
static uint16_t inet_ports[2];

static void AddFd(int fd) {
  if (fd >= 0 && npool < MAX_FDS) pool_fds[npool++] = fd;
}

static const char* const kPaths[] = {
    "/tmp/fz/a",
    "/tmp/fz/b",
    "/tmp/fz/dir",
    "/tmp/fz/link",
    "/tmp/fz",
    "/tmp",
    ".",
    "..",
    "/",
    "",
    "a",
    "/dev/null",
    "/dev/zero",
    "/dev/urandom",
    "/proc/self/fd/0",
    "/proc/self/mem",
    "/proc/self/maps",
    "/proc/self/status",
    "/proc/self/exe",
    "/proc/1/root",
    "/proc/self/cwd/..",
    "/etc/passwd",
    "/etc",
    "/fuzz",
    "/tmp/fz/../../..",
    "/tmp/fz/a/",
    "/tmp/fz/dir/x",
    "/sys",
    "/dev/shm/fz",
    "/workspace",
    "/workspace/fz",
};
#define NPATHS (sizeof(kPaths) / sizeof(kPaths[0]))

static uint64_t RandomArg(int depth);

// A pointer to a fresh slot of buf, filled with one of several shapes of content.
static uint64_t FilledSlot(int depth) {
  char* p = buf + Below(NSLOTS) * SLOT;
  switch (Below(6)) {
    case 5: {  // an internet address the netstack routes somewhere: the sandbox's
               // loopback (often a pooled socket's port), its resolver and gateway, blocked
               // ranges, v4-mapped forms. Only a sandbox sees these calls (see main).
      static const uint32_t v4[] = {0x7f000001, 0x7f00000b, 0x0a000202, 0x0a00020f, 0,
                                    0xa9fea9fe, 0xc0a80001, 0xcb00710a, 0xffffffff};
      memset(p, 0, SLOT);
      uint16_t port =
          Chance(50) ? inet_ports[Below(2)] : (uint16_t)(Chance(30) ? 53 : Below(65536));
      if (Chance(60)) {
        struct sockaddr_in* sin = (struct sockaddr_in*)p;
        sin->sin_family = Chance(90) ? AF_INET : (sa_family_t)Below(50);
        sin->sin_port = htons(port);
        sin->sin_addr.s_addr = htonl(v4[Below(sizeof(v4) / sizeof(v4[0]))]);
      } else {
        struct sockaddr_in6* sin6 = (struct sockaddr_in6*)p;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(port);
        if (Chance(50)) {  // v4-mapped
          sin6->sin6_addr.s6_addr[10] = sin6->sin6_addr.s6_addr[11] = 0xff;
          uint32_t a = htonl(v4[Below(sizeof(v4) / sizeof(v4[0]))]);
          memcpy(&sin6->sin6_addr.s6_addr[12], &a, 4);
        } else {
          sin6->sin6_addr.s6_addr[15] = Chance(50) ? 1 : 0;  // ::1 or ::
        }
        sin6->sin6_scope_id = Chance(10) ? (uint32_t)Rand() : 0;
      }
      break;
    }
    case 0:  // random bytes
      for (int i = 0; i < SLOT; i += 8) {
        uint64_t r = Rand();
        memcpy(p + i, &r, 8);
      }
      break;
    case 1:  // zeros
      memset(p, 0, SLOT);
      break;
    case 2: {  // a path
      const char* s = (opt.canary != NULL && Chance(15)) ? opt.canary : kPaths[Below(NPATHS)];
      if (opt.canary != NULL && Chance(10)) {
        snprintf(p, SLOT, "%s/%s", opt.canary, Chance(50) ? "file" : "sub/inner");
      } else {
        snprintf(p, SLOT, "%s", s);
      }
      break;
    }
    case 3: {  // words drawn from the argument classes: iovecs, msghdrs, sigactions, ...
      uint64_t* w = (uint64_t*)p;
      for (int i = 0; i < SLOT / 8; i++) w[i] = depth < 2 ? RandomArg(depth + 1) : Rand();
      break;
    }
    default: {  // small 32-bit values: fds, lengths, flags in int-sized structs
      int* w = (int*)p;
      for (int i = 0; i < SLOT / 4; i++) {
        w[i] = Chance(30) && npool > 0 ? pool_fds[Below(npool)] : (int)Below(Chance(50) ? 8 : 4097);
      }
      break;
    }
  }
  return (uint64_t)(uintptr_t)p;
}

static const uint64_t kHuge[] = {
    1ULL << 63,
    UINT64_MAX,
    (uint64_t)INT32_MAX + 1,
    UINT32_MAX,
    INT32_MAX,
    1ULL << 32,
    (1ULL << 40),
    (1ULL << 47),
    INT64_MAX,
    (uint64_t)INT32_MIN,
    (uint64_t)-4096,
    0x7ffffffff000,
    PAGE - 1,
    PAGE + 1,
    65536,
    1ULL << 31,
    (uint64_t)-2,
};

// One argument from the adversarial classes.
static uint64_t RandomArg(int depth) {
  switch (Below(20)) {
    case 0:
      return 0;
    case 1:
      return (uint64_t)-1;
    case 2:
      return Below(16);
    case 3:
    case 4:  // a pooled fd
      return npool > 0 ? (uint64_t)pool_fds[Below(npool)] : 0;
    case 5: {  // bad fds
      static const int64_t bad[] = {-1, -100 /* AT_FDCWD */, -2, 1 << 20, 999, INT32_MIN, 63};
      return (uint64_t)bad[Below(sizeof(bad) / sizeof(bad[0]))];
    }
    case 6:
      return kHuge[Below(sizeof(kHuge) / sizeof(kHuge[0]))];
    case 7:
    case 8:
      return FilledSlot(depth);
    case 9:  // just before the guard page: a struct that straddles into unmapped memory
      return (uint64_t)(uintptr_t)(buf + BUF_PAGES * PAGE - 1 - Below(64));
    case 10:  // unaligned pointer into the buffer
      return ((uint64_t)(uintptr_t)buf + Below(BUF_PAGES * PAGE - 64)) | 1;
    case 11:  // kernel, non-canonical and low addresses
      switch (Below(5)) {
        case 0:
          return 0xffff800000000000ULL + (Below(1 << 20) << 12);
        case 1:
          return 0xffffffffff600000ULL;  // vsyscall page
        case 2:
          return 0x0000800000000000ULL;  // first non-canonical address
        case 3:
          return Below(65536);
        default:
          return 0x7fffffffe000ULL;
      }
    case 12:  // the read-only page: copy-out must fail with EFAULT
      return (uint64_t)(uintptr_t)(ro_page + Below(PAGE));
    case 13: {  // flags: a few random bits, or many
      uint64_t f = 0;
      int n = (int)Below(4) + 1;
      for (int i = 0; i < n; i++) f |= 1ULL << Below(32);
      return Chance(20) ? (uint32_t)Rand() : f;
    }
    case 14:  // lengths
      return Chance(50) ? Below(PAGE * 2) : PAGE * Below(BUF_PAGES + 2);
    case 15: {  // pids and signals
      static const int64_t ids[] = {0, 1, 2, -1, 99999, 65, 64, 32, 9, 19};
      if (Chance(30)) return (uint64_t)child_pids[Below(2)];
      return Chance(40) ? (uint64_t)self_pid : (uint64_t)ids[Below(sizeof(ids) / sizeof(ids[0]))];
    }
    case 16:
      return (uint64_t) - (int64_t)Below(4097);  // small negatives (-errno shaped)
    case 17:
    case 18: {  // constants real programs pass, so that calls get past flag validation
      static const uint64_t common[] = {
          O_RDWR | O_CREAT,
          O_RDONLY | O_DIRECTORY,
          O_WRONLY | O_TRUNC | O_APPEND,
          O_CLOEXEC,
          O_NONBLOCK,
          O_PATH,
          O_TMPFILE | O_RDWR,
          PROT_READ | PROT_WRITE,
          PROT_EXEC,
          MAP_PRIVATE | MAP_ANONYMOUS,
          MAP_SHARED,
          MAP_SHARED | MAP_ANONYMOUS,
          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
          MAP_GROWSDOWN | MAP_PRIVATE | MAP_ANONYMOUS,
          AF_UNIX,
          AF_INET,
          AF_INET6,
          AF_NETLINK,
          SOCK_STREAM,
          SOCK_DGRAM,
          SOCK_SEQPACKET,
          SOCK_RAW,
          MSG_DONTWAIT,
          MSG_PEEK,
          MSG_WAITALL,
          F_GETFL,
          F_SETFL,
          F_DUPFD_CLOEXEC,
          F_SETLK,
          F_OFD_SETLKW,
          F_SETPIPE_SZ,
          F_ADD_SEALS,
          F_SETOWN,
          F_GETLK,
          EPOLL_CTL_ADD,
          EPOLL_CTL_MOD,
          EPOLLIN | EPOLLET | EPOLLONESHOT,
          SIG_BLOCK,
          SIG_SETMASK,
          WNOHANG,
          __WALL,
          AT_EMPTY_PATH,
          AT_SYMLINK_NOFOLLOW,
          AT_REMOVEDIR,
          (uint64_t)AT_FDCWD,
          CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD,
          CLONE_VFORK | CLONE_VM,
          CLONE_PIDFD,
          CLONE_NEWUSER,
          CLONE_NEWNS,
          SEEK_DATA,
          SEEK_HOLE,
          SEEK_END,
          FUTEX_WAIT_PRIVATE,
          FUTEX_WAKE,
          FUTEX_REQUEUE,
          FUTEX_CMP_REQUEUE_PI,
          FUTEX_LOCK_PI,
          CLOCK_MONOTONIC,
          CLOCK_REALTIME,
          CLOCK_BOOTTIME_ALARM,
          TFD_TIMER_ABSTIME,
          SPLICE_F_MOVE,
          PR_SET_NAME,
          PR_SET_PDEATHSIG,
          PR_SET_NO_NEW_PRIVS,
          PR_SET_SECCOMP,
          ARCH_SET_FS,
          RLIMIT_NOFILE,
          RLIMIT_STACK,
          RLIMIT_AS,
          ITIMER_REAL,
          P_ALL,
          P_PIDFD,
          MADV_DONTNEED,
          MADV_FREE,
          MFD_ALLOW_SEALING,
          EFD_SEMAPHORE,
          IPC_PRIVATE,
          IPC_RMID,
          SHUT_RDWR,
          SOL_SOCKET,
          SO_RCVBUF,
          SO_PEERCRED,
          SCM_RIGHTS,
          FIONREAD,
          TCGETS,
          FICLONE,
      };
      return common[Below(sizeof(common) / sizeof(common[0]))];
    }
    default:
      return Rand();
  }
}

// ---------------------------------------------------------------------------------
// Syscall choice and the few arguments adjusted to keep the fuzzer itself alive.

static long RandomNr(void) {
  if (Chance(2)) {
    static const long invalid[] = {
        -1, 335, 400, 423, 463, 512, 547, 1000, 0x40000000 | 1, 0x7fffffff, (long)INT64_MIN};
    return invalid[Below(sizeof(invalid) / sizeof(invalid[0]))];
  }
  for (;;) {
    long nr = (long)Below(463);
    if (nr > 334 && nr < 424) continue;  // no syscalls there on x86_64
    if (nr == SYS_exit || nr == SYS_exit_group) continue;
    // A random rt_sigreturn frame nearly always kills the batch (as on Linux): keep it
    // rare so that batches get deep.
    if (nr == SYS_rt_sigreturn && !Chance(10)) continue;
    return nr;
  }
}

// Not for safety (the sandbox is the safety): only so that one call cannot end the
// whole run, which would stop the fuzzing. Signals and ptrace aimed at the parent, or
// at every process, are redirected at the batch's own process.
static void Sanitize(long nr, uint64_t a[6]) {
  int pid_arg = -1;
  switch (nr) {
    case SYS_kill:
    case SYS_rt_sigqueueinfo:
    case SYS_process_vm_readv:
    case SYS_process_vm_writev:
    case SYS_pidfd_open:
    case SYS_kcmp:
    case SYS_setpgid:
    case SYS_prlimit64:
    case SYS_sched_setaffinity:
    case SYS_sched_setscheduler:
    case SYS_sched_setparam:
    case SYS_sched_setattr:
    case SYS_migrate_pages:
    case SYS_move_pages:
    case SYS_tgkill:
    case SYS_rt_tgsigqueueinfo:
      pid_arg = 0;
      break;
    case SYS_ptrace:
    case SYS_tkill:
      pid_arg = nr == SYS_ptrace ? 1 : 0;
      break;
    case SYS_setpriority:
    case SYS_ioprio_set:
      pid_arg = 1;
      break;
  }
  // A child's exit signal goes to the batch: keep it SIGCHLD, which is harmless.
  if (nr == SYS_clone) a[0] = (a[0] & ~0xffULL) | SIGCHLD;
  if (nr == SYS_clone3 && a[0] >= (uint64_t)(uintptr_t)buf &&
      a[0] + 40 <= (uint64_t)(uintptr_t)buf + BUF_PAGES * PAGE) {
    ((uint64_t*)(uintptr_t)a[0])[4] = SIGCHLD;  // clone_args.exit_signal
  }
  if (pid_arg >= 0) {
    int64_t pid = (int64_t)a[pid_arg];
    int32_t pid32 = (int32_t)a[pid_arg];
    if (pid == -1 || pid32 == -1 || pid32 == parent_pid || pid32 == -parent_pid || pid32 == 1 ||
        pid32 == -1 * getpgid(parent_pid)) {
      a[pid_arg] = (uint64_t)self_pid;
    }
  }
}

// Fork-like calls: the new process or thread may run on a random stack (clone's stack
// argument), so it must not touch memory at all: it leaves with exit(0) straight from
// the registers.
static long ForkLike(long nr, const uint64_t a[6]) {
  long rc;
  register uint64_t r10 __asm__("r10") = a[3];
  register uint64_t r8 __asm__("r8") = a[4];
  register uint64_t r9 __asm__("r9") = a[5];
  __asm__ volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      "mov $60, %%eax\n\t"
      "xor %%edi, %%edi\n\t"
      "syscall\n\t"
      "1:\n\t"
      : "=a"(rc)
      : "a"(nr), "D"(a[0]), "S"(a[1]), "d"(a[2]), "r"(r10), "r"(r8), "r"(r9)
      : "rcx", "r11", "memory");
  return rc;
}

static int IsForkLike(long nr) {
  return nr == SYS_fork || nr == SYS_vfork || nr == SYS_clone || nr == SYS_clone3;
}

static const char* SigName(int sig) {
  const char* s = sigabbrev_np(sig);
  return s != NULL ? s : "?";
}

// ---------------------------------------------------------------------------------
// The child: one batch.

static void OnAlarm(int sig) { (void)sig; }

// The handler's own PRNG stream, so that signals arriving at timing-dependent moments
// do not shift the stream the calls are drawn from.
static __thread uint64_t handler_rng;

// Catches the signals the fuzzed calls send (kill(self, random)), so that they exercise
// delivery without ending the batch. A real fault re-raises with the default action.
// Now and then the handler scribbles on its signal frame (registers, the FPU/XSAVE area
// and its header, the fpstate pointer) before returning: rt_sigreturn must restore such
// a frame, or kill the app, without harming the sentry.
static void OnSignal(int sig, siginfo_t* info, void* uc) {
  if (info->si_code > 0 &&
      (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP)) {
    signal(sig, SIG_DFL);
    return;
  }
  uint64_t saved = rng_state;
  rng_state = handler_rng | 1;
  if (Chance(5)) {
    ucontext_t* u = uc;
    uint8_t* fp = (uint8_t*)u->uc_mcontext.fpregs;
    uint64_t value = RandomArg(2);
    switch (Below(4)) {
      case 0:
        u->uc_mcontext.gregs[Below(NGREG)] = value;
        break;
      case 1:  // legacy FXSAVE area, the XSAVE header or the software-reserved bytes
        if (fp != NULL) memcpy(fp + (Below(1024 - 8) & ~7UL), &value, 8);
        break;
      case 2:
        if (fp != NULL) fp[Below(1024)] = (uint8_t)value;
        break;
      default:
        u->uc_mcontext.fpregs = (void*)(uintptr_t)value;
        break;
    }
  }
  handler_rng = Rand();
  rng_state = saved;
}

static void SetUpPool(void) {
  npool = 0;
  buf = mmap(NULL, (BUF_PAGES + 1) * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
             0);
  ro_page = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED || ro_page == MAP_FAILED) _exit(120);
  mprotect(buf + BUF_PAGES * PAGE, PAGE, PROT_NONE);
  for (size_t i = 0; i < BUF_PAGES * PAGE; i += 8) {
    uint64_t r = Rand();
    memcpy(buf + i, &r, 8);
  }

  mkdir("/tmp/fz", 0777);
  mkdir("/tmp/fz/dir", 0777);
  symlink("a", "/tmp/fz/link");
  int f = open("/tmp/fz/a", O_RDWR | O_CREAT, 0644);
  if (f >= 0) write(f, "hello fuzz\n", 11);
  AddFd(f);
  AddFd(open("/dev/null", O_RDWR));
  AddFd(open("/tmp/fz", O_RDONLY | O_DIRECTORY));
  AddFd(open("/etc/passwd", O_RDONLY));
  AddFd(open("/proc/self/maps", O_RDONLY));
  if (opt.canary != NULL) AddFd(open(opt.canary, O_RDONLY | O_DIRECTORY));
  int p[2];
  if (pipe2(p, O_NONBLOCK) == 0) AddFd(p[0]), AddFd(p[1]);
  if (pipe2(p, 0) == 0) AddFd(p[0]), AddFd(p[1]);
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p) == 0) AddFd(p[0]), AddFd(p[1]);
  if (socketpair(AF_UNIX, SOCK_DGRAM, 0, p) == 0) AddFd(p[0]), AddFd(p[1]);
  AddFd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
  AddFd(socket(AF_INET, SOCK_DGRAM, 0));
  AddFd(socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0));
  AddFd(socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK, 0));
  AddFd(socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK, 0));
  AddFd(socket(AF_UNIX, SOCK_STREAM, 0));
  // The sandbox's loopback: a TCP listener with one connection accepted and one queued,
  // and a connected pair of UDP sockets; their ports feed the address argument class.
  int tl = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in lo = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t lolen = sizeof(lo);
  if (tl >= 0 && bind(tl, (struct sockaddr*)&lo, sizeof(lo)) == 0 && listen(tl, 4) == 0 &&
      getsockname(tl, (struct sockaddr*)&lo, &lolen) == 0) {
    inet_ports[0] = ntohs(lo.sin_port);
    for (int i = 0; i < 2; i++) {
      int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      if (c >= 0) connect(c, (struct sockaddr*)&lo, sizeof(lo));
      AddFd(c);
    }
    AddFd(accept4(tl, NULL, NULL, SOCK_NONBLOCK));
  }
  AddFd(tl);
  int u1 = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  int u2 = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in ua = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t ualen = sizeof(ua);
  if (u1 >= 0 && u2 >= 0 && bind(u1, (struct sockaddr*)&ua, sizeof(ua)) == 0 &&
      getsockname(u1, (struct sockaddr*)&ua, &ualen) == 0) {
    inet_ports[1] = ntohs(ua.sin_port);
    connect(u2, (struct sockaddr*)&ua, sizeof(ua));
  }
  AddFd(u1);
  AddFd(u2);
  AddFd(eventfd(1, EFD_NONBLOCK));
  int ep = epoll_create1(0);
  if (ep >= 0) {
    for (int i = 0; i < npool; i++) {
      struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.u64 = (uint64_t)i};
      epoll_ctl(ep, EPOLL_CTL_ADD, pool_fds[i], &ev);
    }
  }
  AddFd(ep);
  int m = (int)syscall(SYS_memfd_create, "fz", 0);
  if (m >= 0) {
    ftruncate(m, 2 * PAGE);
    mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
  }
  AddFd(m);
  AddFd((int)syscall(SYS_timerfd_create, CLOCK_MONOTONIC, O_NONBLOCK));
  AddFd((int)syscall(SYS_pidfd_open, self_pid, 0));
  sigset_t usr;
  sigemptyset(&usr);
  sigaddset(&usr, SIGUSR1);
  AddFd((int)syscall(SYS_signalfd4, -1, &usr, 8, O_NONBLOCK));
  AddFd((int)syscall(SYS_inotify_init1, O_NONBLOCK));
  AddFd(open("/proc/self", O_RDONLY | O_DIRECTORY));
  AddFd(open("/dev/ptmx", O_RDWR | O_NOCTTY));
  // A listening AF_UNIX socket (abstract name) with one connection queued.
  int l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "fz%d", self_pid);
  socklen_t alen = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(addr.sun_path + 1);
  if (l >= 0 && bind(l, (struct sockaddr*)&addr, alen) == 0 && listen(l, 4) == 0) {
    int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (c >= 0) connect(c, (struct sockaddr*)&addr, alen);
    AddFd(c);
  }
  AddFd(l);
  // Children to wait for, signal and open: one sleeping, one already a zombie.
  pid_t sleeper = fork();
  if (sleeper == 0) {
    for (;;) pause();
  }
  pid_t zombie = fork();
  if (zombie == 0) _exit(7);
  if (sleeper > 0) AddFd((int)syscall(SYS_pidfd_open, sleeper, 0));
  if (zombie > 0) AddFd((int)syscall(SYS_pidfd_open, zombie, 0));
  child_pids[0] = sleeper;
  child_pids[1] = zombie;
}

static void LogCall(int thread, uint64_t index, long nr, const uint64_t a[6]) {
  char line[256];
  int n = snprintf(line, sizeof(line),
                   "seed=%llu batch=%llu thread=%d call=%llu nr=%ld args=%#llx %#llx %#llx %#llx "
                   "%#llx %#llx\n",
                   (unsigned long long)opt.seed, (unsigned long long)last->batch, thread,
                   (unsigned long long)index, nr, (unsigned long long)a[0],
                   (unsigned long long)a[1], (unsigned long long)a[2], (unsigned long long)a[3],
                   (unsigned long long)a[4], (unsigned long long)a[5]);
  syscall(SYS_write, LOG_FD, line, (size_t)n);
}

// The periodic SIGALRM that interrupts blocking calls: armed at the start of a batch
// and again after a fuzzed call that may have disarmed it.
static void ArmInterrupts(void) {
  struct sigaction sa = {.sa_handler = OnAlarm};  // no SA_RESTART: blocking calls end
  sigaction(SIGALRM, &sa, NULL);
  sigset_t alrm;
  sigemptyset(&alrm);
  sigaddset(&alrm, SIGALRM);
  sigprocmask(SIG_UNBLOCK, &alrm, NULL);
  struct itimerval it = {{0, 20000}, {0, 20000}};
  setitimer(ITIMER_REAL, &it, NULL);
}

static int MayDisarm(long nr) {
  return nr == SYS_alarm || nr == SYS_setitimer || nr == SYS_rt_sigaction ||
         nr == SYS_rt_sigprocmask || nr == SYS_sigaltstack;
}

// Issues `calls` random syscalls. Thread 0 records each call for the parent.
static void FuzzLoop(int thread, uint64_t calls) {
  handler_rng = Rand();
  for (uint64_t i = 0; i < calls; i++) {
    long nr = RandomNr();
    uint64_t a[6];
    for (int k = 0; k < 6; k++) a[k] = RandomArg(0);
    if (Chance(40) && npool > 0) a[0] = (uint64_t)pool_fds[Below(npool)];
    Sanitize(nr, a);
    if (thread == 0) {
      last->index = i;
      last->nr = nr;
      for (int k = 0; k < 6; k++) last->args[k] = a[k];
      last->calls = i + 1;
    }
    if (opt.verbose) LogCall(thread, i, nr, a);
    if (IsForkLike(nr)) {
      ForkLike(nr, a);
    } else {
      syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    }
    if (MayDisarm(nr)) ArmInterrupts();
  }
}

struct ThreadStart {
  int thread;
  uint64_t seed;
  uint64_t calls;
};

static void* FuzzThread(void* p) {
  struct ThreadStart* start = p;
  rng_state = start->seed | 1;
  FuzzLoop(start->thread, start->calls);
  return NULL;  // the batch ends when thread 0 is done (exit_group kills the others)
}

static void RunBatch(uint64_t calls) {
  self_pid = getpid();
  setpgid(0, 0);
  if (fcntl(2, F_DUPFD, LOG_FD) != LOG_FD) _exit(121);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  struct sigaction catch = {.sa_sigaction = OnSignal, .sa_flags = SA_SIGINFO};
  for (int sig = 1; sig < 65; sig++) {
    if (sig != SIGALRM && sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &catch, NULL);
  }
  // Interrupt any blocking call within 20 ms; the parent's timeout backs this up when a
  // fuzzed call escapes it (a new process, a handler that never returns).
  ArmInterrupts();
  if (chdir("/tmp") != 0) _exit(122);

  SetUpPool();
  static struct ThreadStart starts[16];
  for (int t = 1; t < opt.threads && t < 16; t++) {
    starts[t] = (struct ThreadStart){t, Rand(), calls};
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_create(&th, &attr, FuzzThread, &starts[t]);
  }
  FuzzLoop(0, calls);
  _exit(0);
}

// ---------------------------------------------------------------------------------
// The parent.

// Waits for `child` up to `seconds`; returns 1 with *status filled when it ended.
static int WaitTimed(pid_t child, int seconds, int* status) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += seconds;
  for (;;) {
    pid_t r = waitpid(child, status, WNOHANG | WUNTRACED);
    if (r == child && WIFSTOPPED(*status)) {  // kill(self, SIGSTOP): let it go on
      kill(child, SIGCONT);
      continue;
    }
    if (r == child) return 1;
    for (;;) {  // reap forked grandchildren reparented to us
      int st;
      r = waitpid(-1, &st, WNOHANG);
      if (r <= 0) break;
      if (r == child) {
        *status = st;
        return 1;
      }
    }
    struct timespec now, left;
    clock_gettime(CLOCK_MONOTONIC, &now);
    left.tv_sec = deadline.tv_sec - now.tv_sec;
    left.tv_nsec = deadline.tv_nsec - now.tv_nsec;
    if (left.tv_nsec < 0) left.tv_sec--, left.tv_nsec += 1000000000L;
    if (left.tv_sec < 0) return 0;
    if (left.tv_sec > 0 || left.tv_nsec > 200000000L) left.tv_sec = 0, left.tv_nsec = 200000000L;
    sigtimedwait(&chld, NULL, &left);
  }
}

static void PrintLast(const char* prefix) {
  printf("%s last call #%llu: nr=%ld args=%#llx %#llx %#llx %#llx %#llx %#llx\n", prefix,
         (unsigned long long)last->index, last->nr, (unsigned long long)last->args[0],
         (unsigned long long)last->args[1], (unsigned long long)last->args[2],
         (unsigned long long)last->args[3], (unsigned long long)last->args[4],
         (unsigned long long)last->args[5]);
}

// After a hang: the state of every process the sandbox still has, from its /proc.
static void DumpProcesses(void) {
  for (int pid = 2; pid < 4096; pid++) {
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE* f = fopen(path, "r");
    if (f == NULL) continue;
    printf("  pid %d:", pid);
    while (fgets(line, sizeof(line), f) != NULL) {
      if (strncmp(line, "State:", 6) == 0 || strncmp(line, "PPid:", 5) == 0 ||
          strncmp(line, "Threads:", 8) == 0 || strncmp(line, "SigBlk:", 7) == 0 ||
          strncmp(line, "SigPnd:", 7) == 0 || strncmp(line, "ShdPnd:", 7) == 0) {
        line[strcspn(line, "\n")] = 0;
        printf(" %s", line);
      }
    }
    printf("\n");
    fclose(f);
  }
}

// Removes /tmp/fz so that every batch starts from the same files (and a replayed batch
// sees what it saw in the full run).
static int RemoveEntry(const char* path, const struct stat* st, int type, struct FTW* ftw) {
  (void)st, (void)type, (void)ftw;
  remove(path);
  return 0;
}

static int InsideUsentry(void) {
  struct utsname u;
  return uname(&u) == 0 && strstr(u.version, "usentry") != NULL;
}

static void Usage(void) {
  fprintf(stderr,
          "usage: syscall_fuzz [--seed N] [--iterations N] [--batch N] [--timeout SEC]\n"
          "                    [--threads N] [--only-batch B] [--verbose] [--canary PATH]\n"
          "Runs only inside usentry: `usentry run --mount DIR:/fuzz:ro -- /fuzz/syscall_fuzz`.\n");
  exit(2);
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--verbose") == 0) {
      opt.verbose = 1;
      continue;
    }
    if (v == NULL) Usage();
    i++;
    if (strcmp(a, "--seed") == 0) {
      opt.seed = strtoull(v, NULL, 0);
    } else if (strcmp(a, "--iterations") == 0) {
      opt.iterations = strtoull(v, NULL, 0);
    } else if (strcmp(a, "--batch") == 0) {
      opt.batch = strtoull(v, NULL, 0);
    } else if (strcmp(a, "--timeout") == 0) {
      opt.timeout = atoi(v);
    } else if (strcmp(a, "--only-batch") == 0) {
      opt.only_batch = strtoll(v, NULL, 0);
    } else if (strcmp(a, "--threads") == 0) {
      opt.threads = atoi(v);
    } else if (strcmp(a, "--canary") == 0) {
      opt.canary = v;
    } else {
      Usage();
    }
  }
  if (opt.batch == 0 || opt.timeout <= 0 || opt.threads < 1 || opt.threads > 16) Usage();
  if (!InsideUsentry()) {
    fprintf(stderr,
            "syscall_fuzz: refusing to run: uname() does not report usentry. Natively this\n"
            "program would issue random syscalls against the host kernel.\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  last = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (last == MAP_FAILED) return perror("mmap"), 1;
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  parent_pid = getpid();

  uint64_t batches = (opt.iterations + opt.batch - 1) / opt.batch;
  uint64_t total_calls = 0, ran = 0, clean = 0, killed = 0, timeouts = 0;
  for (uint64_t b = 0; b < batches; b++) {
    if (opt.only_batch >= 0 && (uint64_t)opt.only_batch != b) continue;
    uint64_t calls = opt.batch;
    if (b == batches - 1 && opt.iterations % opt.batch != 0) calls = opt.iterations % opt.batch;
    uint64_t x = opt.seed * 0x100000001b3ULL ^ b;
    rng_state = SplitMix(&x) | 1;
    nftw("/tmp/fz", RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
    memset((void*)last, 0, sizeof(*last));
    last->batch = b;
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) return perror("fork"), 1;
    if (child == 0) RunBatch(calls);
    int status = 0;
    int ended = WaitTimed(child, opt.timeout, &status);
    kill(-child, SIGKILL);  // the batch's process group: forked leftovers
    ran++;
    // The shared page is within reach of the fuzzed calls (a write to a random pointer):
    // never trust it beyond the batch size.
    if (last->calls > calls) last->calls = calls;
    total_calls += last->calls;
    if (!ended) {
      timeouts++;
      kill(child, SIGKILL);
      if (!WaitTimed(child, 10, &status)) {
        printf("seed=%llu batch=%llu HANG: the batch survived SIGKILL for 10 s\n",
               (unsigned long long)opt.seed, (unsigned long long)b);
        PrintLast("  ");
        DumpProcesses();
        return 3;
      }
      printf("seed=%llu batch=%llu timeout after %llu calls (killed)\n",
             (unsigned long long)opt.seed, (unsigned long long)b, (unsigned long long)last->calls);
      PrintLast("  ");
      continue;
    }
    if (WIFEXITED(status)) {
      clean++;
      printf("seed=%llu batch=%llu exit %d after %llu calls\n", (unsigned long long)opt.seed,
             (unsigned long long)b, WEXITSTATUS(status), (unsigned long long)last->calls);
    } else {
      killed++;
      printf("seed=%llu batch=%llu signal %s after %llu calls\n", (unsigned long long)opt.seed,
             (unsigned long long)b, SigName(WTERMSIG(status)), (unsigned long long)last->calls);
      PrintLast("  ");
    }
  }
  // Never kill(-1): should this program ever run outside the sandbox, that would kill
  // every process of the user. Leftovers that left the batch's process group die with
  // the sandbox when this process, its init, exits.
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  printf(
      "\nsummary: seed=%llu threads=%d batches=%llu calls=%llu exited=%llu signaled=%llu "
      "timeouts=%llu\n",
      (unsigned long long)opt.seed, opt.threads, (unsigned long long)ran,
      (unsigned long long)total_calls, (unsigned long long)clean, (unsigned long long)killed,
      (unsigned long long)timeouts);
  return 0;
}
