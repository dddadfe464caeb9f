// Ways into the kernel other than the x86-64 `syscall` instruction. Each attack runs
// in a forked child so the parent can report how it ended and then show that the
// sandbox still serves it ("after=..." lines): the attack may fail or kill the child,
// but must never be executed by the host kernel.
//
//   syscall_path ATTACK...
//   int80_write   i386 write(1, "ESCAPED-int80\n") through int $0x80
//   int80_getpid  i386 getpid through int $0x80; prints the result
//   x32_write     write(1, "ESCAPED-x32\n") with the x32 bit set in the number
//   x32_getpid    getpid with the x32 bit set
//   sysenter      i386 write through sysenter
//   vsyscall      call the legacy vsyscall page's gettimeofday (0xffffffffff600000)
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"

static const char kInt80Msg[] = "ESCAPED-int80\n";
static const char kX32Msg[] = "ESCAPED-x32\n";
static const char kSysenterMsg[] = "ESCAPED-sysenter\n";
static const long kX32Bit = 0x40000000;

// i386 numbers: write is 4, getpid is 20. The buffer is in the low 4 GiB (static
// data of a non-PIE binary), so its address survives truncation to 32 bits.
static long Int80(long nr, long a, long b, long c) {
  long ret;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
  return ret;
}

static void Attack(const char* which) {
  long rc = -1;
  if (strcmp(which, "int80_write") == 0) {
    rc = Int80(4, 1, (long)(uintptr_t)kInt80Msg, sizeof(kInt80Msg) - 1);
  } else if (strcmp(which, "int80_getpid") == 0) {
    rc = Int80(20, 0, 0, 0);
  } else if (strcmp(which, "x32_write") == 0) {
    rc = syscall(SYS_write | kX32Bit, 1, kX32Msg, sizeof(kX32Msg) - 1);
    if (rc < 0) rc = -errno;
  } else if (strcmp(which, "x32_getpid") == 0) {
    rc = syscall(SYS_getpid | kX32Bit);
    if (rc < 0) rc = -errno;
  } else if (strcmp(which, "sysenter") == 0) {
    // AMD raises #UD for sysenter in 64-bit mode; Intel enters the compat path.
    long a = 4, b = 1, c = (long)(uintptr_t)kSysenterMsg, d = sizeof(kSysenterMsg) - 1;
    __asm__ volatile("sysenter" : "+a"(a), "+b"(b), "+c"(c), "+d"(d) : : "memory", "r11");
    rc = a;
  } else if (strcmp(which, "vsyscall") == 0) {
    struct timeval tv = {0, 0};
    typedef long (*Gettimeofday)(struct timeval*, void*);
    rc = ((Gettimeofday)0xffffffffff600000UL)(&tv, NULL);
    printf("%s:tv_sec=%ld\n", which, (long)tv.tv_sec);
  } else {
    fprintf(stderr, "syscall_path: unknown attack %s\n", which);
    _exit(2);
  }
  // A negative value is -errno in the raw conventions used above.
  printf("%s:returned=%ld\n", which, rc);
  fflush(stdout);
  _exit(0);
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) Attack(argv[i]);
    int status = 0;
    if (Report(Name("%s:wait", argv[i]), waitpid(child, &status, 0)) < 0) return 1;
    if (WIFSIGNALED(status)) {
      printf("%s=signal %s\n", argv[i], sigabbrev_np(WTERMSIG(status)));
    } else {
      printf("%s=exit %d\n", argv[i], WEXITSTATUS(status));
    }
    // The sandbox still works for the parent: a syscall, a fork, a write.
    pid_t again = fork();
    if (again == 0) _exit(7);
    waitpid(again, &status, 0);
    printf("%s:after=%s\n", argv[i],
           getpid() > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 7 ? "alive" : "broken");
    fflush(stdout);
  }
  return 0;
}
