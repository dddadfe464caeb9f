// Scheduling and privilege basics: capget/capset, personality, getpriority/setpriority,
// sched_* policy calls, the mlock family, membarrier, mincore, execveat.
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

long Capget(cap_user_header_t h, cap_user_data_t d) { return syscall(SYS_capget, h, d); }
long Capset(cap_user_header_t h, cap_user_data_t d) { return syscall(SYS_capset, h, d); }

// Runs `body` in a forked child and returns its exit status (0 = every check passed).
template <typename F>
int InChild(F body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = -1;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(Capget, BadVersionWritesThePreferredOneAndIsEinval) {
  __user_cap_header_struct h{0x12345678, 0};
  __user_cap_data_struct d[2];
  EXPECT_ERRNO(Capget(&h, d), EINVAL);
  EXPECT_EQ(h.version, static_cast<uint32_t>(_LINUX_CAPABILITY_VERSION_3));
  h = {_LINUX_CAPABILITY_VERSION_3, 0};
  EXPECT_EQ(Capget(&h, nullptr), 0);  // version probe
  EXPECT_ERRNO(Capget(nullptr, d), EFAULT);
  h = {_LINUX_CAPABILITY_VERSION_3, -1};
  EXPECT_ERRNO(Capget(&h, d), EINVAL);
}

TEST(Capget, RootHasItsEffectiveSetWithinPermitted) {
  __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct d[2] = {};
  ASSERT_SYS_OK(Capget(&h, d));
  // The assertions are about root's sets. CI runs natively as root and the sandboxed app
  // is always uid 0, so this only skips when a developer runs the program unprivileged
  // (their effective set is empty); compare.sh then has no native result to compare.
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  EXPECT_EQ(d[0].effective & ~d[0].permitted, 0u);
  EXPECT_NE(d[0].effective & (1u << CAP_SYS_NICE), 0u);
  h = {_LINUX_CAPABILITY_VERSION_3, getpid()};
  __user_cap_data_struct e[2] = {};
  ASSERT_SYS_OK(Capget(&h, e));
  EXPECT_EQ(e[0].effective, d[0].effective);
}

TEST(Capset, MayDropButNotRaise) {
  // Dropping CAP_SYS_NICE needs a caller that has it: root (see above for when it skips).
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  EXPECT_EQ(InChild([] {
              __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
              __user_cap_data_struct d[2] = {};
              if (Capget(&h, d) != 0) return 1;
              const uint32_t bit = 1u << CAP_SYS_NICE;
              d[0].effective &= ~bit;
              d[0].permitted &= ~bit;
              if (Capset(&h, d) != 0) return 2;
              __user_cap_data_struct now[2] = {};
              if (Capget(&h, now) != 0 || (now[0].permitted & bit)) return 3;
              d[0].permitted |= bit;  // raising again
              if (Capset(&h, d) != -1 || errno != EPERM) return 4;
              d[0].permitted &= ~bit;
              d[0].effective |= bit;  // effective outside permitted
              if (Capset(&h, d) != -1 || errno != EPERM) return 5;
              // Without CAP_SYS_NICE, raising the priority is refused.
              if (setpriority(PRIO_PROCESS, 0, 5) != 0) return 6;
              if (setpriority(PRIO_PROCESS, 0, 0) != -1 || errno != EACCES) return 7;
              h.pid = 1;  // another process
              if (Capset(&h, now) != -1 || errno != EPERM) return 8;
              return 0;
            }),
            0);
}

TEST(Personality, QueryAndSetAreInheritedByChildren) {
  int old = personality(0xffffffff);
  ASSERT_SYS_OK(old);
  EXPECT_EQ(old & PER_MASK, PER_LINUX);
  EXPECT_EQ(InChild([] {
              if (personality(PER_LINUX | ADDR_NO_RANDOMIZE) == -1) return 1;
              if (personality(0xffffffff) != (PER_LINUX | ADDR_NO_RANDOMIZE)) return 2;
              return InChild([] { return personality(0xffffffff) == ADDR_NO_RANDOMIZE ? 0 : 3; });
            }),
            0);
  EXPECT_EQ(personality(0xffffffff), old);
}

TEST(Priority, GetAndSetNiceOfSelfAndChildren) {
  EXPECT_EQ(InChild([] {
              if (setpgid(0, 0) != 0) return 10;  // PRIO_PGRP below must select only us
              errno = 0;
              if (getpriority(PRIO_PROCESS, 0) != 0 || errno != 0) return 1;
              if (setpriority(PRIO_PROCESS, 0, 7) != 0) return 2;
              if (getpriority(PRIO_PROCESS, getpid()) != 7) return 3;
              if (nice(1) != 8) return 4;
              // Children inherit the nice value.
              if (InChild([] { return getpriority(PRIO_PROCESS, 0) == 8 ? 0 : 1; }) != 0) return 5;
              if (setpriority(PRIO_PROCESS, 0, 100) != 0) return 6;  // clamped
              if (getpriority(PRIO_PROCESS, 0) != 19) return 7;
              if (setpriority(PRIO_PGRP, 0, 3) != 0) return 8;
              if (getpriority(PRIO_PROCESS, 0) != 3) return 9;
              return 0;
            }),
            0);
}

TEST(Priority, BadInputsHaveLinuxErrnos) {
  EXPECT_ERRNO(getpriority(static_cast<__priority_which>(7), 0), EINVAL);
  EXPECT_ERRNO(setpriority(static_cast<__priority_which>(7), 0, 0), EINVAL);
  EXPECT_ERRNO(getpriority(PRIO_PROCESS, 999999), ESRCH);
  EXPECT_ERRNO(setpriority(PRIO_PROCESS, 999999, 0), ESRCH);
  EXPECT_ERRNO(getpriority(PRIO_PGRP, 999999), ESRCH);
}

TEST(Priority, UnprivilegedUserCannotLowerNice) {
  // The child becomes nobody with setresuid, which only root may do; skips only in an
  // unprivileged developer run (CI and the sandbox are root).
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch users";
  EXPECT_EQ(InChild([] {
              if (setpriority(PRIO_PROCESS, 0, 5) != 0) return 1;
              if (setresuid(65534, 65534, 65534) != 0) return 2;
              if (setpriority(PRIO_PROCESS, 0, 10) != 0) return 3;  // raising is fine
              if (setpriority(PRIO_PROCESS, 0, 4) != -1 || errno != EACCES) return 4;
              if (getpriority(PRIO_PROCESS, 0) != 10) return 5;
              __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
              __user_cap_data_struct d[2] = {};
              if (Capget(&h, d) != 0 || d[0].effective != 0 || d[0].permitted != 0) return 6;
              return 0;
            }),
            0);
}

TEST(Sched, PolicyAndParamOfNormalTasks) {
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
  sched_param p{};
  p.sched_priority = 5;
  ASSERT_SYS_OK(sched_getparam(0, &p));
  EXPECT_EQ(p.sched_priority, 0);
  EXPECT_EQ(InChild([] {
              sched_param z{};
              if (sched_setscheduler(0, SCHED_BATCH, &z) != 0) return 1;
              if (sched_getscheduler(0) != SCHED_BATCH) return 2;
              if (sched_setscheduler(0, SCHED_IDLE | SCHED_RESET_ON_FORK, &z) != 0) return 3;
              if (sched_getscheduler(0) != (SCHED_IDLE | SCHED_RESET_ON_FORK)) return 4;
              // The child keeps SCHED_IDLE (only real-time policies are reset) but not
              // the flag.
              if (InChild([] { return sched_getscheduler(0) == SCHED_IDLE ? 0 : 1; }) != 0) {
                return 5;
              }
              if (sched_setparam(0, &z) != 0) return 6;
              return 0;
            }),
            0);
}

TEST(Sched, BadInputsHaveLinuxErrnos) {
  sched_param p{};
  EXPECT_ERRNO(sched_getscheduler(-1), EINVAL);
  EXPECT_ERRNO(sched_getscheduler(999999), ESRCH);
  EXPECT_ERRNO(sched_getparam(0, nullptr), EINVAL);
  EXPECT_ERRNO(sched_getparam(999999, &p), ESRCH);
  EXPECT_ERRNO(sched_setscheduler(0, 42, &p), EINVAL);
  EXPECT_ERRNO(sched_setscheduler(0, SCHED_OTHER, nullptr), EINVAL);
  p.sched_priority = 1;
  EXPECT_ERRNO(sched_setscheduler(0, SCHED_OTHER, &p), EINVAL);
  EXPECT_ERRNO(sched_setparam(0, &p), EINVAL);
  p.sched_priority = 100;
  EXPECT_ERRNO(sched_setscheduler(0, SCHED_FIFO, &p), EINVAL);
  EXPECT_ERRNO(syscall(SYS_sched_getparam, 0, reinterpret_cast<void*>(8)), EFAULT);
}

TEST(Sched, PriorityRangesAndInterval) {
  EXPECT_EQ(sched_get_priority_max(SCHED_FIFO), 99);
  EXPECT_EQ(sched_get_priority_min(SCHED_RR), 1);
  EXPECT_EQ(sched_get_priority_max(SCHED_OTHER), 0);
  EXPECT_EQ(sched_get_priority_min(SCHED_BATCH), 0);
  EXPECT_ERRNO(sched_get_priority_max(42), EINVAL);
  EXPECT_ERRNO(sched_get_priority_min(-1), EINVAL);
  timespec ts{-1, -1};
  ASSERT_SYS_OK(sched_rr_get_interval(0, &ts));
  EXPECT_GE(ts.tv_sec, 0);
  EXPECT_GE(ts.tv_nsec, 0);
  EXPECT_ERRNO(sched_rr_get_interval(-1, &ts), EINVAL);
  EXPECT_ERRNO(sched_rr_get_interval(999999, &ts), ESRCH);
}

// struct sched_attr as the kernel defines it (SCHED_ATTR_SIZE_VER1).
struct SchedAttr {
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime, deadline, period;
  uint32_t util_min, util_max;
};

TEST(SchedAttr, GetAndSetPolicyAndNice) {
  EXPECT_EQ(InChild([] {
              if (setpriority(PRIO_PROCESS, 0, 4) != 0) return 1;
              SchedAttr attr{};
              if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0) return 2;
              if (attr.size != sizeof attr || attr.policy != SCHED_OTHER || attr.nice != 4) {
                return 3;
              }
              SchedAttr set{};
              set.size = 48;  // SCHED_ATTR_SIZE_VER0
              set.policy = SCHED_BATCH;
              set.nice = 30;  // clamped to 19
              if (syscall(SYS_sched_setattr, 0, &set, 0) != 0) return 4;
              if (sched_getscheduler(0) != SCHED_BATCH) return 5;
              if (getpriority(PRIO_PROCESS, 0) != 19) return 6;
              set.flags = 0x10;  // SCHED_FLAG_KEEP_PARAMS: policy and nice stay
              set.policy = SCHED_OTHER;
              set.nice = 0;
              if (syscall(SYS_sched_setattr, 0, &set, 0) != 0) return 7;
              if (getpriority(PRIO_PROCESS, 0) != 19 || sched_getscheduler(0) != SCHED_BATCH) {
                return 8;
              }
              return 0;
            }),
            0);
}

TEST(SchedAttr, BadInputsHaveLinuxErrnos) {
  SchedAttr attr{};
  EXPECT_ERRNO(syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 1), EINVAL);
  EXPECT_ERRNO(syscall(SYS_sched_getattr, 0, &attr, 10, 0), EINVAL);
  EXPECT_ERRNO(syscall(SYS_sched_getattr, 0, nullptr, sizeof attr, 0), EINVAL);
  EXPECT_ERRNO(syscall(SYS_sched_getattr, 999999, &attr, sizeof attr, 0), ESRCH);
  attr.size = 8;
  EXPECT_ERRNO(syscall(SYS_sched_setattr, 0, &attr, 0), E2BIG);
  EXPECT_EQ(attr.size, sizeof attr);  // the size the kernel wants is written back
  attr = {};
  attr.size = sizeof attr;
  EXPECT_ERRNO(syscall(SYS_sched_setattr, 0, &attr, 1), EINVAL);
  attr.flags = 0x1000;
  EXPECT_ERRNO(syscall(SYS_sched_setattr, 0, &attr, 0), EINVAL);
  attr.flags = 0;
  attr.policy = 42;
  EXPECT_ERRNO(syscall(SYS_sched_setattr, 0, &attr, 0), EINVAL);
  attr.policy = SCHED_OTHER;
  attr.priority = 3;
  EXPECT_ERRNO(syscall(SYS_sched_setattr, 0, &attr, 0), EINVAL);
}

TEST(Mlock, LocksMappedRangesOnly) {
  const long page = sysconf(_SC_PAGESIZE);
  char* p = static_cast<char*>(
      mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_SYS_OK(munmap(p + page, page));  // a hole in the middle
  ASSERT_SYS_OK(mlock(p, page));
  ASSERT_SYS_OK(mlock(p + 10, 20));  // unaligned start is rounded down
  ASSERT_SYS_OK(munlock(p, page));
  EXPECT_ERRNO(mlock(p, 3 * page), ENOMEM);
  EXPECT_ERRNO(munlock(p + page, page), ENOMEM);
  ASSERT_SYS_OK(mlock2(p, page, MLOCK_ONFAULT));
  EXPECT_ERRNO(mlock2(p, page, 0x10), EINVAL);
  EXPECT_EQ(mlock(p, 0), 0);
  munmap(p, page);
  munmap(p + 2 * page, page);
}

TEST(Mlock, MlockallFlags) {
  EXPECT_ERRNO(mlockall(0), EINVAL);
  EXPECT_ERRNO(mlockall(MCL_ONFAULT), EINVAL);
  EXPECT_ERRNO(mlockall(0x100), EINVAL);
  EXPECT_EQ(InChild([] { return mlockall(MCL_CURRENT | MCL_FUTURE) == 0 ? 0 : 1; }), 0);
  ASSERT_SYS_OK(munlockall());
}

TEST(Membarrier, QueryRegisterAndBarrier) {
  int cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  ASSERT_SYS_OK(cmds);
  EXPECT_NE(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0);
  EXPECT_NE(cmds & MEMBARRIER_CMD_GLOBAL, 0);
  EXPECT_EQ(InChild([] {
              if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != -1 ||
                  errno != EPERM) {
                return 1;
              }
              if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0) {
                return 2;
              }
              if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) return 3;
              if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0) return 4;
              return 0;
            }),
            0);
  EXPECT_ERRNO(syscall(SYS_membarrier, 1 << 20, 0, 0), EINVAL);
  EXPECT_ERRNO(syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 1, 0), EINVAL);
}

TEST(Mincore, ReportsTouchedAnonymousPages) {
  const long page = sysconf(_SC_PAGESIZE);
  char* p = static_cast<char*>(
      mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  p[0] = 1;
  p[2 * page] = 1;
  unsigned char vec[4] = {9, 9, 9, 9};
  ASSERT_SYS_OK(mincore(p, 4 * page, vec));
  EXPECT_EQ(vec[0] & 1, 1);
  EXPECT_EQ(vec[1] & 1, 0);
  EXPECT_EQ(vec[2] & 1, 1);
  EXPECT_EQ(vec[3] & 1, 0);
  ASSERT_SYS_OK(mincore(p, page + 1, vec));  // length rounded up
  EXPECT_ERRNO(mincore(p + 1, page, vec), EINVAL);
  EXPECT_ERRNO(mincore(p, page, reinterpret_cast<unsigned char*>(8)), EFAULT);
  munmap(p, 4 * page);
  EXPECT_ERRNO(mincore(p, page, vec), ENOMEM);
}

int Execveat(int dirfd, const char* path, char* const argv[], int flags) {
  static char* const envp[] = {nullptr};
  return syscall(SYS_execveat, dirfd, path, argv, envp, flags);
}

TEST(Execveat, RelativeToADirectoryFd) {
  ScopedFd bin(open("/bin", O_RDONLY | O_DIRECTORY));
  ASSERT_SYS_OK(bin.get());
  EXPECT_EQ(InChild([&] {
              char* argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"),
                              const_cast<char*>("exit 7"), nullptr};
              Execveat(bin.get(), "sh", argv, 0);
              return 99;
            }),
            7);
}

TEST(Execveat, EmptyPathExecutesTheFd) {
  ScopedFd sh(open("/bin/sh", O_RDONLY));
  ASSERT_SYS_OK(sh.get());
  EXPECT_EQ(InChild([&] {
              char* argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"),
                              const_cast<char*>("exit 5"), nullptr};
              Execveat(sh.get(), "", argv, AT_EMPTY_PATH);
              return 99;
            }),
            5);
}

TEST(Execveat, BadInputsHaveLinuxErrnos) {
  char* argv[] = {const_cast<char*>("x"), nullptr};
  ScopedFd sh(open("/bin/sh", O_RDONLY));
  EXPECT_ERRNO(Execveat(AT_FDCWD, "/bin/sh", argv, 0x4), EINVAL);
  EXPECT_ERRNO(Execveat(sh.get(), "", argv, 0), ENOENT);
  EXPECT_ERRNO(Execveat(sh.get(), "x", argv, 0), ENOTDIR);
  EXPECT_ERRNO(Execveat(-1, "sh", argv, 0), EBADF);
  EXPECT_ERRNO(Execveat(AT_FDCWD, "/no/such/file", argv, 0), ENOENT);
  TempDir dir;
  ASSERT_SYS_OK(symlink("/bin/sh", dir.Child("link").c_str()));
  EXPECT_ERRNO(Execveat(AT_FDCWD, dir.Child("link").c_str(), argv, AT_SYMLINK_NOFOLLOW), ELOOP);
}

}  // namespace
}  // namespace syscall_test
