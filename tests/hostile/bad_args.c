// Syscalls with hostile arguments: huge sizes and counts, pointers into the kernel
// half or the stub's range, out-of-range numbers. A sentry that trusted a size (to
// allocate a buffer) or a pointer would crash; each call must return an error or a
// bounded result, and the run must reach "done".
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "report.h"

#define HUGE_LEN (1UL << 40)
#define KERNEL_PTR ((void*)0xffffffffff600000UL)
#define STUB_PTR ((void*)0x7fffffffe000UL)

int main(void) {
  char buf[256];
  int file = open("/etc/passwd", O_RDONLY);
  int dir = open("/etc", O_RDONLY | O_DIRECTORY);
  int tmp = open("/tmp/bad_args", O_RDWR | O_CREAT | O_TRUNC, 0644);
  int data = open("/data/bad_args", O_RDWR | O_CREAT | O_TRUNC, 0644);
  int fds[2];
  if (file < 0 || dir < 0 || tmp < 0 || pipe(fds) != 0) return Report("setup", -1), 1;

  Report("read_huge_count", read(file, buf, HUGE_LEN));
  Report("pread_huge_count", pread(file, buf, HUGE_LEN, 0));
  Report("read_kernel_ptr", read(file, KERNEL_PTR, 16));
  Report("read_stub_ptr", read(file, STUB_PTR, 16));
  Report("write_huge_count", write(fds[1], buf, HUGE_LEN));
  struct iovec iov[2] = {{buf, HUGE_LEN}, {buf, HUGE_LEN}};
  Report("readv_huge_iov", readv(file, iov, 2));
  Report("writev_huge_iov", writev(fds[1], iov, 2));
  Report("readv_huge_iovcnt", readv(file, iov, 1 << 30));
  Report("getdents_huge_count", syscall(SYS_getdents64, dir, buf, HUGE_LEN));
  Report("getcwd_huge", syscall(SYS_getcwd, buf, HUGE_LEN));
  Report("readlink_huge", readlink("/proc/self/exe", buf, HUGE_LEN));
  Report("getrandom_huge", syscall(SYS_getrandom, buf, HUGE_LEN, 0));
  Report("poll_huge_nfds", poll((struct pollfd*)buf, 1 << 30, 0));
  Report("select_huge_nfds", select(1 << 30, (fd_set*)buf, NULL, NULL, &(struct timeval){0, 0}));
  int ep = epoll_create1(0);
  Report("epoll_wait_huge", ep < 0 ? -1 : epoll_wait(ep, (struct epoll_event*)buf, 1 << 30, 0));
  Report("sched_getaffinity_huge", syscall(SYS_sched_getaffinity, 0, HUGE_LEN, buf));
  // The ordinary call, as nproc makes it, must work too.
  cpu_set_t set;
  CPU_ZERO(&set);
  Report("sched_getaffinity", sched_getaffinity(0, sizeof(set), &set));
  printf("cpus=%d\n", CPU_COUNT(&set));
  Report("getgroups_huge", syscall(SYS_getgroups, 1 << 30, buf));
  Report("uname_kernel_ptr", syscall(SYS_uname, KERNEL_PTR));
  Report("open_kernel_ptr", syscall(SYS_open, KERNEL_PTR, O_RDONLY));
  Report("futex_kernel_ptr", syscall(SYS_futex, KERNEL_PTR, 0 /* FUTEX_WAIT */, 0, NULL));
  Report("mmap_huge", (long)mmap(NULL, 1UL << 47, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  Report("brk_huge", syscall(SYS_brk, 0x7ff000000000UL) == 0x7ff000000000L ? 0 : -1);
  Report("kill_bad_signal", kill(getpid(), 65));
  Report("rt_sigaction_bad", syscall(SYS_rt_sigaction, 65, NULL, NULL, 8));
  Report("sigaltstack_kernel", sigaltstack(KERNEL_PTR, NULL));
  Report("dup2_huge", dup2(file, 1 << 30));
  Report("fcntl_dupfd_huge", fcntl(file, F_DUPFD, 1 << 30));
  Report("prlimit_bad", syscall(SYS_prlimit64, 0, 1 << 20, NULL, buf));
  Report("lseek_huge", lseek(file, 1L << 62, SEEK_SET));
  // Files in the sentry's memory (tmpfs /tmp) and on a rw mount, grown far beyond any
  // real size: must fail (EFBIG, ENOSPC, ENOMEM) or stay sparse, never exhaust the sentry.
  Report("ftruncate_tmpfs_huge", ftruncate(tmp, 1L << 50));
  Report("pwrite_tmpfs_far", pwrite(tmp, "x", 1, 1L << 50));
  Report("fallocate_tmpfs_huge", fallocate(tmp, 0, 0, 1L << 50));
  Report("ftruncate_tmpfs_back", ftruncate(tmp, 0));
  if (data >= 0) {
    Report("ftruncate_mount_huge", ftruncate(data, 1L << 62));
    Report("pwrite_mount_far", pwrite(data, "x", 1, 1L << 62));
    Report("ftruncate_mount_back", ftruncate(data, 0));
  }
  // Found by tests/fuzz (docs/fuzzing.md lists the seeds). mincore once sized a buffer
  // by the app's length: bad_alloc killed the sentry.
  Report("mincore_huge_len", syscall(SYS_mincore, 0, 0x7fefdfff7893UL, buf));
  // Over a mapping larger than one of its internal chunks, every page still reported.
  size_t pages = 40000;
  char* big = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  unsigned char* vec = malloc(pages);
  if (big != MAP_FAILED && vec != NULL) {
    big[0] = big[30000 * 4096UL] = 1;
    long rc = syscall(SYS_mincore, big, pages * 4096, vec);
    Report("mincore_big",
           rc == 0 && (vec[0] & 1) && (vec[30000] & 1) && !(vec[20000] & 1) ? 0 : -1);
  }
  printf("done\n");
  return 0;
}
