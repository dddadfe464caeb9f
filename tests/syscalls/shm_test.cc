// System V shared memory: shmget keys, sizes and limits, attaching and sharing between
// processes (forked, or meeting through a key), read-only attachments, shm_nattch
// across fork/shmdt/exec/exit, IPC_RMID of attached segments, shmctl's status, owner
// and permission rules as an unprivileged user, SHM_LOCK, shmdt's address rules,
// EFAULT/EINVAL, and /proc/sysvipc/shm and /proc/sys/kernel/shm*.
//
// Natively the program first enters a fresh IPC namespace when it may (it runs as
// root), so that it never sees or leaves segments of the host; in the sandbox that
// unshare is refused and the sandbox is its own namespace anyway.
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

constexpr size_t kPage = 4096;
constexpr uid_t kNobody = 65534;

[[maybe_unused]] const bool kPrivateIpcNamespace = unshare(CLONE_NEWIPC) == 0;

// Becomes nobody:nogroup with no supplementary groups (0 on success).
int BecomeNobody() {
  if (setgroups(0, nullptr) != 0 || setresgid(kNobody, kNobody, kNobody) != 0) return -1;
  return setresuid(kNobody, kNobody, kNobody);
}

// A key no other test (or earlier run) uses.
key_t NewKey() {
  static int n = 0;
  return static_cast<key_t>(0x5e000000 | ((getpid() & 0xffff) << 8) | (++n & 0xff));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t ReadU64(const std::string& path) { return std::stoull(ReadFile(path)); }

// A segment removed at the end of the test (if still there).
class Segment {
 public:
  explicit Segment(size_t size, int flags = 0600, key_t key = IPC_PRIVATE)
      : id_(shmget(key, size, IPC_CREAT | flags)) {}
  ~Segment() {
    if (id_ >= 0) shmctl(id_, IPC_RMID, nullptr);
  }
  int id() const { return id_; }

 private:
  int id_;
};

shmid_ds StatOf(int id) {
  shmid_ds ds{};
  EXPECT_EQ(shmctl(id, IPC_STAT, &ds), 0) << strerror(errno);
  return ds;
}

char* Attach(int id, const void* addr = nullptr, int flags = 0) {
  void* p = shmat(id, addr, flags);
  return p == reinterpret_cast<void*>(-1) ? nullptr : static_cast<char*>(p);
}

// shmat's errno (0 if it attached; then it detaches again).
int AttachErrno(int id, const void* addr, int flags) {
  errno = 0;
  void* p = shmat(id, addr, flags);
  if (p != reinterpret_cast<void*>(-1)) {
    shmdt(p);
    return 0;
  }
  return errno;
}

TEST(Shm, CreateThenLookUpByKey) {
  key_t key = NewKey();
  Segment s(100, 0600, key);
  ASSERT_SYS_OK(s.id());
  EXPECT_EQ(shmget(key, 0, 0), s.id());
  EXPECT_EQ(shmget(key, 100, IPC_CREAT | 0600), s.id());
  EXPECT_ERRNO(shmget(key, 100, IPC_CREAT | IPC_EXCL | 0600), EEXIST);
  EXPECT_ERRNO(shmget(NewKey(), 100, 0600), ENOENT);
}

TEST(Shm, SizesOutsideTheLimitsAreEinval) {
  EXPECT_ERRNO(shmget(IPC_PRIVATE, 0, IPC_CREAT | 0600), EINVAL);  // below SHMMIN
  const uint64_t shmmax = ReadU64("/proc/sys/kernel/shmmax");
  ASSERT_LT(shmmax, UINT64_MAX);
  EXPECT_ERRNO(shmget(IPC_PRIVATE, shmmax + 1, IPC_CREAT | 0600), EINVAL);
  EXPECT_ERRNO(shmget(IPC_PRIVATE, SIZE_MAX, IPC_CREAT | 0600), EINVAL);
  // An existing segment is found with any size up to its own, not beyond.
  key_t key = NewKey();
  Segment s(100, 0600, key);
  ASSERT_SYS_OK(s.id());
  EXPECT_EQ(shmget(key, 50, 0600), s.id());
  EXPECT_ERRNO(shmget(key, 101, 0600), EINVAL);
}

TEST(Shm, PrivateKeyMakesANewSegmentEachTimeAndIdsAreNotReusedAtOnce) {
  Segment a(kPage), b(kPage, IPC_EXCL | 0600);
  ASSERT_SYS_OK(a.id());
  ASSERT_SYS_OK(b.id());
  EXPECT_NE(a.id(), b.id());
  int old_id = shmget(IPC_PRIVATE, kPage, 0600);
  ASSERT_SYS_OK(old_id);
  ASSERT_SYS_OK(shmctl(old_id, IPC_RMID, nullptr));
  Segment c(kPage);
  ASSERT_SYS_OK(c.id());
  EXPECT_NE(c.id(), old_id);
  // The removed id names nothing, not the new segment.
  shmid_ds ds;
  EXPECT_ERRNO(shmctl(old_id, IPC_STAT, &ds), EINVAL);
}

TEST(Shm, SegmentIsZeroFilledAndPageRounded) {
  Segment s(100);
  ASSERT_SYS_OK(s.id());
  char* p = Attach(s.id());
  ASSERT_NE(p, nullptr) << strerror(errno);
  for (size_t i = 0; i < kPage; i++) ASSERT_EQ(p[i], 0) << i;
  p[kPage - 1] = 'x';  // the whole page is the segment's
  EXPECT_EQ(StatOf(s.id()).shm_segsz, 100u);
  ASSERT_SYS_OK(shmdt(p));
  // Detached and attached again: the same memory.
  p = Attach(s.id());
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p[kPage - 1], 'x');
  ASSERT_SYS_OK(shmdt(p));
}

TEST(Shm, ParentAndForkedChildSeeEachOthersWrites) {
  Segment s(2 * kPage);
  ASSERT_SYS_OK(s.id());
  char* p = Attach(s.id());
  ASSERT_NE(p, nullptr);
  strcpy(p, "parent");
  int rc = InChild([&] {
    if (strcmp(p, "parent") != 0) return 1;
    strcpy(p + kPage, "child");
    return 0;
  });
  EXPECT_EQ(rc, 0);
  EXPECT_STREQ(p + kPage, "child");
  ASSERT_SYS_OK(shmdt(p));
}

// The child attaches on its own, by looking the key up, while the parent is attached.
TEST(Shm, ProcessesThatLookUpTheSameKeyShareTheMemory) {
  key_t key = NewKey();
  Segment s(kPage, 0600, key);
  ASSERT_SYS_OK(s.id());
  int to_child[2], to_parent[2];
  ASSERT_SYS_OK(pipe(to_child));
  ASSERT_SYS_OK(pipe(to_parent));
  pid_t pid = fork();
  if (pid == 0) {
    int id = shmget(key, 0, 0600);
    char* q = id < 0 ? nullptr : Attach(id);
    if (q == nullptr) _exit(1);
    char c;
    if (read(to_child[0], &c, 1) != 1) _exit(2);
    if (strcmp(q, "from parent") != 0) _exit(3);
    strcpy(q + 100, "from child");
    if (write(to_parent[1], "x", 1) != 1) _exit(4);
    _exit(0);
  }
  char* p = Attach(s.id());
  ASSERT_NE(p, nullptr);
  strcpy(p, "from parent");
  ASSERT_EQ(write(to_child[1], "x", 1), 1);
  char c;
  ASSERT_EQ(read(to_parent[0], &c, 1), 1);
  EXPECT_STREQ(p + 100, "from child");
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
  ASSERT_SYS_OK(shmdt(p));
  // Unattached, the segment keeps what was written for the next process to attach.
  EXPECT_EQ(InChild([&] {
              char* q = Attach(shmget(key, 0, 0));
              return q != nullptr && strcmp(q + 100, "from child") == 0 ? 0 : 1;
            }),
            0);
}

TEST(Shm, ReadOnlyAttachmentFaultsOnWrite) {
  Segment s(kPage);
  ASSERT_SYS_OK(s.id());
  char* rw = Attach(s.id());
  ASSERT_NE(rw, nullptr);
  strcpy(rw, "visible");
  char* ro = Attach(s.id(), nullptr, SHM_RDONLY);
  ASSERT_NE(ro, nullptr);
  EXPECT_STREQ(ro, "visible");
  EXPECT_ERRNO(mprotect(ro, kPage, PROT_READ | PROT_WRITE), EACCES);
  EXPECT_EQ(InChild([&] {
              rlimit no_core{0, 0};  // the fault must not leave a core file behind
              setrlimit(RLIMIT_CORE, &no_core);
              ro[0] = 'X';
              return 0;
            }),
            128 + SIGSEGV);
  EXPECT_STREQ(rw, "visible");
  ASSERT_SYS_OK(shmdt(ro));
  ASSERT_SYS_OK(shmdt(rw));
}

TEST(Shm, NattchCountsAttachmentsAcrossForkDetachExecAndExit) {
  Segment s(kPage);
  ASSERT_SYS_OK(s.id());
  const int id = s.id();
  EXPECT_EQ(StatOf(id).shm_nattch, 0u);
  char* p = Attach(id);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(StatOf(id).shm_nattch, 1u);
  // A forked child inherits the attachment; its shmdt takes only its own away.
  EXPECT_EQ(InChild([&] {
              shmid_ds ds{};
              if (shmctl(id, IPC_STAT, &ds) != 0 || ds.shm_nattch != 2) return 1;
              if (shmdt(p) != 0 || shmctl(id, IPC_STAT, &ds) != 0 || ds.shm_nattch != 1) return 2;
              return 0;
            }),
            0);
  EXPECT_EQ(StatOf(id).shm_nattch, 1u);
  // Exiting while attached detaches.
  int to_parent[2], to_child[2];
  ASSERT_SYS_OK(pipe(to_parent));
  ASSERT_SYS_OK(pipe(to_child));
  pid_t pid = fork();
  if (pid == 0) {
    char c;
    if (write(to_parent[1], "x", 1) != 1 || read(to_child[0], &c, 1) != 1) _exit(1);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(to_parent[0], &c, 1), 1);
  EXPECT_EQ(StatOf(id).shm_nattch, 2u);
  ASSERT_EQ(write(to_child[1], "x", 1), 1);
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(StatOf(id).shm_nattch, 1u);
  // So does execve.
  pid = fork();
  if (pid == 0) {
    execl("/bin/true", "true", nullptr);
    _exit(127);
  }
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(StatOf(id).shm_nattch, 1u);
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
  ASSERT_SYS_OK(shmdt(p));
  EXPECT_EQ(StatOf(id).shm_nattch, 0u);
}

TEST(Shm, RemovedSegmentLosesItsKeyButLivesUntilTheLastDetach) {
  key_t key = NewKey();
  int id = shmget(key, kPage, IPC_CREAT | 0600);
  ASSERT_SYS_OK(id);
  char* p = Attach(id);
  ASSERT_NE(p, nullptr);
  strcpy(p, "still here");
  ASSERT_SYS_OK(shmctl(id, IPC_RMID, nullptr));
  EXPECT_ERRNO(shmget(key, 0, 0), ENOENT);
  shmid_ds ds = StatOf(id);
  EXPECT_EQ(ds.shm_perm.mode & SHM_DEST, static_cast<unsigned>(SHM_DEST));
  EXPECT_EQ(ds.shm_perm.__key, IPC_PRIVATE);
  EXPECT_EQ(ds.shm_nattch, 1u);
  EXPECT_STREQ(p, "still here");
  strcpy(p, "and writable");
  // Linux lets a removed segment be attached while it lives.
  char* q = Attach(id);
  ASSERT_NE(q, nullptr) << strerror(errno);
  EXPECT_STREQ(q, "and writable");
  EXPECT_EQ(StatOf(id).shm_nattch, 2u);
  // The key is free for a new, different segment.
  Segment fresh(kPage, 0600, key);
  ASSERT_SYS_OK(fresh.id());
  EXPECT_NE(fresh.id(), id);
  ASSERT_SYS_OK(shmdt(q));
  ASSERT_SYS_OK(shmdt(p));
  EXPECT_ERRNO(shmctl(id, IPC_STAT, &ds), EINVAL);
  EXPECT_EQ(AttachErrno(id, nullptr, 0), EINVAL);
}

TEST(Shm, IpcStatReportsOwnerModeSizePidsAndTimes) {
  const time_t before = time(nullptr);
  Segment s(12345, 0640);
  ASSERT_SYS_OK(s.id());
  shmid_ds ds = StatOf(s.id());
  EXPECT_EQ(ds.shm_perm.uid, geteuid());
  EXPECT_EQ(ds.shm_perm.cuid, geteuid());
  EXPECT_EQ(ds.shm_perm.gid, getegid());
  EXPECT_EQ(ds.shm_perm.cgid, getegid());
  EXPECT_EQ(ds.shm_perm.mode, 0640u);
  EXPECT_EQ(ds.shm_segsz, 12345u);
  EXPECT_EQ(ds.shm_cpid, getpid());
  EXPECT_EQ(ds.shm_lpid, 0);
  EXPECT_EQ(ds.shm_atime, 0);
  EXPECT_EQ(ds.shm_dtime, 0);
  EXPECT_GE(ds.shm_ctime, before);
  EXPECT_LE(ds.shm_ctime, time(nullptr));
  char* p = Attach(s.id());
  ASSERT_NE(p, nullptr);
  ds = StatOf(s.id());
  EXPECT_GE(ds.shm_atime, before);
  EXPECT_EQ(ds.shm_lpid, getpid());
  EXPECT_EQ(ds.shm_dtime, 0);
  // The child's detach (at its exit) makes it the last pid.
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  ds = StatOf(s.id());
  EXPECT_EQ(ds.shm_lpid, child);
  EXPECT_GE(ds.shm_dtime, before);
  ASSERT_SYS_OK(shmdt(p));
  // SHM_STAT takes the index (as ipcs walks them) and answers the full id.
  shmid_ds by_index{};
  EXPECT_EQ(shmctl(s.id() % 32768, SHM_STAT, &by_index), s.id());
  EXPECT_EQ(by_index.shm_segsz, 12345u);
  EXPECT_EQ(shmctl(s.id() % 32768, SHM_STAT_ANY, &by_index), s.id());
}

TEST(Shm, IpcSetChangesOwnerAndPermissionBitsOnly) {
  Segment s(kPage, 0600);
  ASSERT_SYS_OK(s.id());
  shmid_ds ds = StatOf(s.id());
  ds.shm_perm.uid = kNobody;
  ds.shm_perm.gid = kNobody;
  ds.shm_perm.mode = 01604;  // SHM_DEST is not the caller's to set
  ds.shm_segsz = 1;          // and the size is not changed
  ASSERT_SYS_OK(shmctl(s.id(), IPC_SET, &ds));
  shmid_ds now = StatOf(s.id());
  EXPECT_EQ(now.shm_perm.uid, kNobody);
  EXPECT_EQ(now.shm_perm.gid, kNobody);
  EXPECT_EQ(now.shm_perm.cuid, geteuid());
  EXPECT_EQ(now.shm_perm.mode, 0604u);
  EXPECT_EQ(now.shm_segsz, kPage);
  ds.shm_perm.uid = static_cast<uid_t>(-1);
  EXPECT_ERRNO(shmctl(s.id(), IPC_SET, &ds), EINVAL);
}

TEST(Shm, AnotherUserNeedsTheModeBitsAndCannotChangeOrRemove) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
  key_t key = NewKey();
  Segment s(kPage, 0600, key);
  ASSERT_SYS_OK(s.id());
  const int id = s.id();
  int rc = InChild([&] {
    if (BecomeNobody() != 0) return 1;
    if (shmget(key, 0, 0) != id) return 2;  // asking for no access finds it
    if (shmget(key, 0, 0400) != -1 || errno != EACCES) return 3;
    if (shmat(id, nullptr, SHM_RDONLY) != reinterpret_cast<void*>(-1) || errno != EACCES) {
      return 4;
    }
    shmid_ds ds{};
    if (shmctl(id, IPC_STAT, &ds) != -1 || errno != EACCES) return 5;
    if (shmctl(id % 32768, SHM_STAT_ANY, &ds) != id) return 6;  // like /proc/sysvipc
    if (shmctl(id, IPC_SET, &ds) != -1 || errno != EPERM) return 7;
    if (shmctl(id, IPC_RMID, nullptr) != -1 || errno != EPERM) return 8;
    if (shmctl(id, SHM_LOCK, nullptr) != -1 || errno != EPERM) return 9;
    return 0;
  });
  EXPECT_EQ(rc, 0);
  // Given to nobody, read-only: nobody may attach read-only and, as owner, change the
  // mode; the creator (root) keeps its rights.
  shmid_ds ds = StatOf(id);
  ds.shm_perm.uid = kNobody;
  ds.shm_perm.mode = 0444;
  ASSERT_SYS_OK(shmctl(id, IPC_SET, &ds));
  rc = InChild([&] {
    if (BecomeNobody() != 0) return 1;
    if (shmat(id, nullptr, 0) != reinterpret_cast<void*>(-1) || errno != EACCES) return 2;
    if (shmat(id, nullptr, SHM_RDONLY) == reinterpret_cast<void*>(-1)) return 3;
    shmid_ds mine{};
    if (shmctl(id, IPC_STAT, &mine) != 0) return 4;
    mine.shm_perm.mode = 0600;
    if (shmctl(id, IPC_SET, &mine) != 0) return 5;
    return 0;
  });
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(StatOf(id).shm_perm.mode, 0600u);
}

TEST(Shm, LockIsRecordedAndNeedsMemlockRoomForAnUnprivilegedOwner) {
  Segment s(kPage);
  ASSERT_SYS_OK(s.id());
  ASSERT_SYS_OK(shmctl(s.id(), SHM_LOCK, nullptr));
  EXPECT_EQ(StatOf(s.id()).shm_perm.mode & SHM_LOCKED, static_cast<unsigned>(SHM_LOCKED));
  ASSERT_SYS_OK(shmctl(s.id(), SHM_UNLOCK, nullptr));
  EXPECT_EQ(StatOf(s.id()).shm_perm.mode & SHM_LOCKED, 0u);
  if (geteuid() != 0) return;
  int rc = InChild([] {
    if (BecomeNobody() != 0) return 1;
    int one = shmget(IPC_PRIVATE, kPage, IPC_CREAT | 0600);
    int two = shmget(IPC_PRIVATE, 2 * kPage, IPC_CREAT | 0600);
    if (one < 0 || two < 0) return 2;
    rlimit none{0, 0};
    if (setrlimit(RLIMIT_MEMLOCK, &none) != 0) return 3;
    int result = 0;
    if (shmctl(one, SHM_LOCK, nullptr) != -1 || errno != EPERM) result = 4;
    // Unlocking needs no limit.
    if (result == 0 && shmctl(one, SHM_UNLOCK, nullptr) != 0) result = 5;
    shmctl(one, IPC_RMID, nullptr);
    shmctl(two, IPC_RMID, nullptr);
    return result;
  });
  EXPECT_EQ(rc, 0);
  rc = InChild([] {
    rlimit page{kPage, kPage};
    if (setrlimit(RLIMIT_MEMLOCK, &page) != 0 || BecomeNobody() != 0) return 1;
    int one = shmget(IPC_PRIVATE, kPage, IPC_CREAT | 0600);
    int two = shmget(IPC_PRIVATE, 2 * kPage, IPC_CREAT | 0600);
    if (one < 0 || two < 0) return 2;
    int result = 0;
    if (shmctl(two, SHM_LOCK, nullptr) != -1 || errno != ENOMEM) result = 3;
    if (result == 0 && shmctl(one, SHM_LOCK, nullptr) != 0) result = 4;
    if (result == 0 && shmctl(one, SHM_UNLOCK, nullptr) != 0) result = 5;
    shmctl(one, IPC_RMID, nullptr);
    shmctl(two, IPC_RMID, nullptr);
    return result;
  });
  EXPECT_EQ(rc, 0);
}

TEST(Shm, AttachAddressMustBeAlignedUnlessRoundedAndFreeUnlessRemapped) {
  Segment s(kPage);
  ASSERT_SYS_OK(s.id());
  // A free, aligned address: reserve it, then give it back.
  void* hole = mmap(nullptr, 4 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  char* base = static_cast<char*>(hole);
  ASSERT_SYS_OK(munmap(base, 4 * kPage));
  EXPECT_EQ(AttachErrno(s.id(), base + 1, 0), EINVAL);
  char* p = Attach(s.id(), base + kPage + 123, SHM_RND);
  EXPECT_EQ(p, base + kPage);
  EXPECT_EQ(AttachErrno(s.id(), base + kPage, 0), EINVAL);  // occupied
  EXPECT_EQ(Attach(s.id(), base + kPage, SHM_REMAP), base + kPage);
  EXPECT_EQ(StatOf(s.id()).shm_nattch, 1u);  // the remap replaced the attachment
  EXPECT_EQ(AttachErrno(s.id(), nullptr, SHM_REMAP), EINVAL);
  ASSERT_SYS_OK(shmdt(base + kPage));
}

TEST(Shm, DetachNeedsTheAttachAddressAndTakesEveryFragment) {
  Segment s(3 * kPage);
  ASSERT_SYS_OK(s.id());
  char* p = Attach(s.id());
  ASSERT_NE(p, nullptr);
  EXPECT_ERRNO(shmdt(p + 1), EINVAL);
  EXPECT_ERRNO(shmdt(p + kPage), EINVAL);
  // A munmap in the middle leaves two pieces: two attachments, one detach.
  ASSERT_SYS_OK(munmap(p + kPage, kPage));
  EXPECT_EQ(StatOf(s.id()).shm_nattch, 2u);
  EXPECT_ERRNO(shmdt(p + 2 * kPage), EINVAL);  // a fragment, not an attach address
  ASSERT_SYS_OK(shmdt(p));
  EXPECT_EQ(StatOf(s.id()).shm_nattch, 0u);
  EXPECT_ERRNO(shmdt(p), EINVAL);
}

TEST(Shm, BadBuffersAreEfault) {
  Segment s(kPage);
  ASSERT_SYS_OK(s.id());
  auto* bad = reinterpret_cast<shmid_ds*>(1);
  EXPECT_ERRNO(shmctl(s.id(), IPC_STAT, bad), EFAULT);
  EXPECT_ERRNO(shmctl(s.id(), IPC_SET, bad), EFAULT);
  EXPECT_ERRNO(shmctl(0, IPC_INFO, bad), EFAULT);
  EXPECT_ERRNO(shmctl(0, SHM_INFO, bad), EFAULT);
  // A buffer that ends in an unmapped page.
  char* two = static_cast<char*>(
      mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(two, MAP_FAILED);
  ASSERT_SYS_OK(munmap(two + kPage, kPage));
  EXPECT_ERRNO(shmctl(s.id(), IPC_STAT, reinterpret_cast<shmid_ds*>(two + kPage - 8)), EFAULT);
  munmap(two, kPage);
}

TEST(Shm, BadCommandsAndIdsAreEinval) {
  Segment s(kPage);
  ASSERT_SYS_OK(s.id());
  shmid_ds ds;
  EXPECT_ERRNO(shmctl(s.id(), 99, &ds), EINVAL);
  EXPECT_ERRNO(shmctl(-1, IPC_STAT, &ds), EINVAL);
  EXPECT_ERRNO(shmctl(s.id() + 32768, IPC_STAT, &ds), EINVAL);  // another sequence
  EXPECT_ERRNO(shmctl(-1, IPC_INFO, &ds), EINVAL);
  EXPECT_EQ(AttachErrno(-1, nullptr, 0), EINVAL);
  EXPECT_EQ(AttachErrno(s.id() + 32768, nullptr, 0), EINVAL);
  EXPECT_ERRNO(shmdt(nullptr), EINVAL);
}

TEST(Shm, InfoAndProcLimitsAgree) {
  Segment s(3 * kPage + 1);
  ASSERT_SYS_OK(s.id());
  shminfo info{};
  int max_index = shmctl(0, IPC_INFO, reinterpret_cast<shmid_ds*>(&info));
  ASSERT_SYS_OK(max_index);
  EXPECT_GE(max_index, s.id() % 32768);
  EXPECT_EQ(info.shmmax, ReadU64("/proc/sys/kernel/shmmax"));
  EXPECT_EQ(info.shmall, ReadU64("/proc/sys/kernel/shmall"));
  EXPECT_EQ(info.shmmni, ReadU64("/proc/sys/kernel/shmmni"));
  EXPECT_EQ(info.shmmin, 1u);
  shm_info usage{};
  EXPECT_EQ(shmctl(0, SHM_INFO, reinterpret_cast<shmid_ds*>(&usage)), max_index);
  EXPECT_GE(usage.used_ids, 1);
  EXPECT_GE(usage.shm_tot, 4u);  // pages
}

// Linux's shmmni: segments beyond it are ENOSPC until one is removed.
TEST(Shm, AtMostShmmniSegments) {
  const uint64_t shmmni = ReadU64("/proc/sys/kernel/shmmni");
  ASSERT_LE(shmmni, 32768u);
  std::vector<int> ids;
  int err = 0;
  for (uint64_t i = 0; i <= shmmni; i++) {
    int id = shmget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
    if (id < 0) {
      err = errno;
      break;
    }
    ids.push_back(id);
  }
  EXPECT_EQ(err, ENOSPC);
  shm_info usage{};
  ASSERT_SYS_OK(shmctl(0, SHM_INFO, reinterpret_cast<shmid_ds*>(&usage)));
  EXPECT_EQ(static_cast<uint64_t>(usage.used_ids), shmmni);
  ASSERT_FALSE(ids.empty());
  ASSERT_SYS_OK(shmctl(ids.back(), IPC_RMID, nullptr));
  ids.pop_back();
  int again = shmget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
  EXPECT_GE(again, 0);
  if (again >= 0) ids.push_back(again);
  for (int id : ids) shmctl(id, IPC_RMID, nullptr);
}

// The table `ipcs -m` reads, and the attachment's line in /proc/self/maps.
TEST(Shm, ProcShowsTheSegmentAndItsMapping) {
  key_t key = NewKey();
  Segment s(12345, 0640, key);
  ASSERT_SYS_OK(s.id());
  char* p = Attach(s.id(), nullptr, SHM_EXEC);
  ASSERT_NE(p, nullptr);
  std::istringstream table(ReadFile("/proc/sysvipc/shm"));
  std::string header;
  std::getline(table, header);
  EXPECT_EQ(header.substr(0, 40), "       key      shmid perms             ");
  bool found = false;
  for (std::string line; std::getline(table, line);) {
    std::istringstream f(line);
    long long k, id, size, cpid, lpid, nattch;
    std::string perms;
    f >> k >> id >> perms >> size >> cpid >> lpid >> nattch;
    if (id != s.id()) continue;
    found = true;
    EXPECT_EQ(k, key);
    EXPECT_EQ(perms, "640");
    EXPECT_EQ(size, 12345);
    EXPECT_EQ(cpid, getpid());
    EXPECT_EQ(lpid, getpid());
    EXPECT_EQ(nattch, 1);
  }
  EXPECT_TRUE(found) << ReadFile("/proc/sysvipc/shm");
  char name[32];
  snprintf(name, sizeof(name), "/SYSV%08x (deleted)", static_cast<unsigned>(key));
  std::string maps = ReadFile("/proc/self/maps");
  size_t at = maps.find(name);
  ASSERT_NE(at, std::string::npos) << maps;
  std::string line = maps.substr(maps.rfind('\n', at) + 1, at - maps.rfind('\n', at) - 1);
  EXPECT_NE(line.find(" rwxs 00000000 "), std::string::npos) << line;
  EXPECT_NE(line.find(" " + std::to_string(s.id()) + " "), std::string::npos) << line;
  ASSERT_SYS_OK(shmdt(p));
}

}  // namespace
}  // namespace syscall_test
