// Resource attacks the sandbox's hard limits must contain (limits_attack_test.cc runs
// each under the limit flags): a fork bomb, a memory bomb, memory churn under a limit,
// FD exhaustion, a disk fill, an endless loop (also in 32 threads at once), a CPU burner
// and a file-size bomb. Reports are "name=outcome"
// lines (report.h); "done" means the program survived its own attack.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"

static void Done(void) {
  printf("done\n");
  fflush(stdout);
}

// Forks until fork fails; every child sleeps until killed. Reports how many.
static int ForkBomb(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NPROC, &rl) == 0) {
    printf("nproc_cur=%llu\nnproc_max=%llu\n", (unsigned long long)rl.rlim_cur,
           (unsigned long long)rl.rlim_max);
  }
  pid_t kids[100000];
  int n = 0;
  for (; n < 100000; n++) {
    pid_t p = fork();
    if (p == 0) {
      for (;;) pause();
    }
    if (p < 0) {
      Report("fork", -1);
      break;
    }
    kids[n] = p;
  }
  printf("forked=%d\n", n);
  for (int i = 0; i < n; i++) kill(kids[i], SIGKILL);
  for (int i = 0; i < n; i++) waitpid(kids[i], NULL, 0);
  // Once the bomb is gone, fork works again.
  pid_t p = fork();
  if (p == 0) _exit(0);
  Report("fork_after", p);
  if (p > 0) waitpid(p, NULL, 0);
  Done();
  return 0;
}

// One mapping far larger than the limit: refused at once.
static int MmapHuge(void) {
  void* p = mmap(NULL, 1ul << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  Report("mmap_1g", p == MAP_FAILED ? -1 : 0);
  // PROT_NONE reservations are not accountable (as with Linux's overcommit).
  void* r = mmap(NULL, 1ul << 30, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  Report("mmap_1g_prot_none", r == MAP_FAILED ? -1 : 0);
  Done();
  return 0;
}

// Maps and touches 1 MiB at a time until something stops it: ENOMEM or SIGKILL.
static int MemBomb(void) {
  size_t total = 0;
  for (int i = 0; i < 4096; i++) {
    char* p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      Report("mmap", -1);
      printf("touched_mib=%zu\n", total >> 20);
      Done();
      return 0;
    }
    for (size_t off = 0; off < (1 << 20); off += 4096) p[off] = 1;
    total += 1 << 20;
    if ((total >> 20) % 16 == 0) {
      printf("touched_mib=%zu\n", total >> 20);
      fflush(stdout);
    }
  }
  printf("touched_mib=%zu\nmembomb=not stopped\n", total >> 20);
  return 0;
}

// Maps, touches and unmaps half the limit again and again: what an allocator that
// returns its arenas does. Freed pages count until the sandbox has given them back,
// which must never make an allocation under the limit fail.
static int Churn(void) {
  const size_t len = 24 << 20;
  for (int i = 0; i < 8; i++) {
    char* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      printf("round=%d\n", i);
      Report("churn", -1);
      return 0;
    }
    for (size_t off = 0; off < len; off += 4096) p[off] = 1;
    munmap(p, len);
  }
  Report("churn", 0);
  Done();
  return 0;
}

// Reserves twice the limit in two mappings (each fits when made: nothing is resident
// yet), then touches them all: only the watchdog can stop this one.
static int Oom(void) {
  size_t len = 48 << 20;
  char* a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char* b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (Report("mmap_a", a == MAP_FAILED ? -1 : 0) < 0 ||
      Report("mmap_b", b == MAP_FAILED ? -1 : 0) < 0)
    return 1;
  for (size_t off = 0; off < len; off += 4096) a[off] = 1;
  for (size_t off = 0; off < len; off += 4096) b[off] = 1;
  // Give the watchdog time to notice before claiming victory.
  usleep(500000);
  printf("oom=not stopped\n");
  return 0;
}

// Opens /dev/null until EMFILE; returns how many FDs were open then.
static int OpenAll(void) {
  int last = -1;
  for (;;) {
    int fd = open("/dev/null", O_RDONLY);
    if (fd < 0) break;
    last = fd;
  }
  return last;
}

static int FdExhaust(void) {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  printf("nofile_cur=%llu\nnofile_max=%llu\n", (unsigned long long)rl.rlim_cur,
         (unsigned long long)rl.rlim_max);
  int last = OpenAll();
  Report("open_past_limit", open("/dev/null", O_RDONLY));
  printf("highest_fd=%d\n", last);
  struct rlimit up = {rl.rlim_max * 2, rl.rlim_max * 2};
  Report("setrlimit_raise", setrlimit(RLIMIT_NOFILE, &up));
  // Several processes at the limit at once (host files each): the sentry must cope.
  pid_t kids[8];
  for (int i = 0; i < 8; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      for (int fd = 3; fd < (int)rl.rlim_cur; fd++) close(fd);
      int n = 0;
      for (;;) {
        int fd = open("/attacks/limits_attacks", O_RDONLY);
        if (fd < 0) break;
        n++;
      }
      _exit(n > 0 ? 0 : 1);
    }
  }
  int ok = 0;
  for (int i = 0; i < 8; i++) {
    int st;
    if (kids[i] > 0 && waitpid(kids[i], &st, 0) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) ok++;
  }
  printf("children_ok=%d\n", ok);
  Done();
  return 0;
}

static int DiskFill(void) {
  static char buf[64 << 10];
  memset(buf, 'x', sizeof(buf));
  int fd = open("/tmp/fill", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (Report("open", fd) < 0) return 1;
  long long total = 0;
  for (;;) {
    ssize_t n = write(fd, buf, sizeof(buf));
    if (n < 0) {
      Report("write", -1);
      break;
    }
    total += n;
    if (total > (1ll << 30)) break;
  }
  printf("written=%lld\n", total);
  close(fd);
  Report("unlink", unlink("/tmp/fill"));
  // Space comes back once the file is gone.
  Report("write_after", write(open("/tmp/small", O_WRONLY | O_CREAT, 0644), buf, 4096));
  Done();
  return 0;
}

static int Spin(void) {
  printf("spinning\n");
  fflush(stdout);
  for (volatile uint64_t i = 0;; i++) {
  }
  return 0;
}

static void* SpinForever(void* arg) {
  (void)arg;
  for (volatile uint64_t i = 0;; i++) {
  }
  return NULL;
}

// More spinning threads than the sandbox has CPUs: the sentry's CPU gate hands its
// slots around by interrupting them, and a timeout or CPU limit must still end them all.
static int SpinThreads(void) {
  for (int i = 0; i < 32; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, SpinForever, NULL) != 0) {
      printf("thread=%s\n", strerror(errno));
      return 1;
    }
  }
  return Spin();
}

static int FileSize(void) {
  static char buf[(1 << 20) + 100];
  memset(buf, 'y', sizeof(buf));
  struct rlimit rl;
  getrlimit(RLIMIT_FSIZE, &rl);
  printf("fsize_cur=%llu\n", (unsigned long long)rl.rlim_cur);
  signal(SIGXFSZ, SIG_IGN);
  int fd = open("/tmp/big", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (Report("open", fd) < 0) return 1;
  Report("write_cross", write(fd, buf, sizeof(buf)));  // partial: up to the limit
  Report("write_at_limit", write(fd, buf, 10));        // EFBIG
  Report("ftruncate_past", ftruncate(fd, 2 << 20));    // EFBIG
  Report("ftruncate_below", ftruncate(fd, 1000));
  struct rlimit up = {RLIM_INFINITY, RLIM_INFINITY};
  Report("setrlimit_raise", setrlimit(RLIMIT_FSIZE, &up));
  // The default action of SIGXFSZ kills the writer.
  pid_t p = fork();
  if (p == 0) {
    signal(SIGXFSZ, SIG_DFL);
    lseek(fd, 1 << 20, SEEK_SET);
    write(fd, buf, 10);
    _exit(0);
  }
  int st = 0;
  waitpid(p, &st, 0);
  if (WIFSIGNALED(st)) {
    printf("child=signal %d\n", WTERMSIG(st));
  } else {
    printf("child=exit %d\n", WEXITSTATUS(st));
  }
  Done();
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* m = argv[1];
  if (strcmp(m, "forkbomb") == 0) return ForkBomb();
  if (strcmp(m, "mmap_huge") == 0) return MmapHuge();
  if (strcmp(m, "membomb") == 0) return MemBomb();
  if (strcmp(m, "oom") == 0) return Oom();
  if (strcmp(m, "churn") == 0) return Churn();
  if (strcmp(m, "fds") == 0) return FdExhaust();
  if (strcmp(m, "diskfill") == 0) return DiskFill();
  if (strcmp(m, "spin") == 0) return Spin();
  if (strcmp(m, "spin_threads") == 0) return SpinThreads();
  if (strcmp(m, "fsize") == 0) return FileSize();
  return 2;
}
