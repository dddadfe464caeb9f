// MAP_SHARED file mappings: coherence with read/write/ftruncate/fallocate, sharing
// across fork, MAP_PRIVATE isolation, msync, mremap, protections, and POSIX shared
// memory and semaphores (shm_open/sem_open in /dev/shm) across processes.
#include <fcntl.h>
#include <ftw.h>
#include <linux/falloc.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "tests/syscalls/syscall_util.h"

namespace syscall_test {
namespace {

constexpr size_t kPage = 4096;

// A fresh directory under `parent`, removed with its contents at the end.
class DirIn {
 public:
  explicit DirIn(const std::string& parent) {
    // /var/tmp need not exist in the sandbox's overlay (its lower layer is /usr, /etc...).
    for (size_t slash = parent.find('/', 1);; slash = parent.find('/', slash + 1)) {
      mkdir(parent.substr(0, slash).c_str(), 01777);
      if (slash == std::string::npos) break;
    }
    std::string tmpl = parent + "/shared-mmap-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) abort();
    path_ = tmpl;
  }
  ~DirIn() {
    nftw(
        path_.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) { return remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  std::string Child(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string PreadString(int fd, size_t n, off_t off) {
  std::string s(n, '\0');
  ssize_t r = pread(fd, s.data(), n, off);
  s.resize(r < 0 ? 0 : r);
  return s;
}

// The same cases for each kind of sandbox-held directory: /tmp (its own tmpfs),
// /dev/shm (POSIX shm), /var/tmp (the root overlay's upper layer in the sandbox).
class SharedFileMapping : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<DirIn>(GetParam());
    path_ = dir_->Child("f");
    fd_.reset(open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600));
    ASSERT_SYS_OK(fd_.get());
  }
  char* Map(size_t len, int prot = PROT_READ | PROT_WRITE, int flags = MAP_SHARED) {
    void* p = mmap(nullptr, len, prot, flags, fd_.get(), 0);
    return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }

  std::unique_ptr<DirIn> dir_;
  std::string path_;
  ScopedFd fd_;
};

TEST_P(SharedFileMapping, StoreThroughMappingIsSeenByRead) {
  ASSERT_SYS_OK(ftruncate(fd_.get(), 2 * kPage));
  char* p = Map(2 * kPage);
  ASSERT_NE(p, nullptr);
  memcpy(p + 10, "mapped", 6);
  memcpy(p + kPage + 1, "second", 6);
  EXPECT_EQ(PreadString(fd_.get(), 6, 10), "mapped");
  EXPECT_EQ(PreadString(fd_.get(), 6, kPage + 1), "second");
  // Through a second, independent open of the file too.
  ScopedFd other(open(path_.c_str(), O_RDONLY));
  ASSERT_SYS_OK(other.get());
  EXPECT_EQ(PreadString(other.get(), 6, 10), "mapped");
  munmap(p, 2 * kPage);
  EXPECT_EQ(PreadString(other.get(), 6, kPage + 1), "second");  // kept after munmap
}

TEST_P(SharedFileMapping, WriteIsSeenByMapping) {
  ASSERT_EQ(pwrite(fd_.get(), "before", 6, 0), 6);
  char* p = Map(kPage, PROT_READ);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(std::string(p, 6), "before");
  ASSERT_EQ(pwrite(fd_.get(), "after!", 6, 0), 6);
  ASSERT_EQ(pwrite(fd_.get(), "more", 4, 100), 4);  // extends the file within the page
  EXPECT_EQ(std::string(p, 6), "after!");
  EXPECT_EQ(std::string(p + 100, 4), "more");
  munmap(p, kPage);
}

TEST_P(SharedFileMapping, ForkedProcessesSeeEachOthersStores) {
  ASSERT_SYS_OK(ftruncate(fd_.get(), kPage));
  char* p = Map(kPage);
  ASSERT_NE(p, nullptr);
  strcpy(p, "parent");
  int rc = InChild([&] {
    if (strcmp(p, "parent") != 0) return 1;
    strcpy(p + 100, "child");
    return 0;
  });
  EXPECT_EQ(rc, 0);
  EXPECT_STREQ(p + 100, "child");
  EXPECT_EQ(PreadString(fd_.get(), 5, 100), "child");
  munmap(p, kPage);
}

// A child that maps the file on its own (not inherited) shares the pages too.
TEST_P(SharedFileMapping, IndependentMappingsInTwoProcessesAreCoherent) {
  ASSERT_SYS_OK(ftruncate(fd_.get(), kPage));
  char* p = Map(kPage);
  ASSERT_NE(p, nullptr);
  int to_child[2], to_parent[2];
  ASSERT_SYS_OK(pipe(to_child));
  ASSERT_SYS_OK(pipe(to_parent));
  std::string path = path_;
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(path.c_str(), O_RDWR);
    char* q = static_cast<char*>(mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (q == MAP_FAILED) _exit(1);
    char c;
    if (read(to_child[0], &c, 1) != 1) _exit(2);
    if (strcmp(q, "from parent") != 0) _exit(3);
    strcpy(q + 200, "from child");
    if (write(to_parent[1], "x", 1) != 1) _exit(4);
    _exit(0);
  }
  strcpy(p, "from parent");
  ASSERT_EQ(write(to_child[1], "x", 1), 1);
  char c;
  ASSERT_EQ(read(to_parent[0], &c, 1), 1);
  EXPECT_STREQ(p + 200, "from child");
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
  munmap(p, kPage);
}

TEST_P(SharedFileMapping, PrivateMappingStoresStayPrivate) {
  ASSERT_EQ(pwrite(fd_.get(), "original", 8, 0), 8);
  char* shared = Map(kPage);
  char* priv = Map(kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE);
  ASSERT_NE(shared, nullptr);
  ASSERT_NE(priv, nullptr);
  EXPECT_EQ(std::string(priv, 8), "original");
  memcpy(priv, "PRIVATE!", 8);
  EXPECT_EQ(PreadString(fd_.get(), 8, 0), "original");
  EXPECT_EQ(std::string(shared, 8), "original");
  int rc = InChild([&] { return memcmp(priv, "PRIVATE!", 8) == 0 ? 0 : 1; });
  EXPECT_EQ(rc, 0);
  munmap(shared, kPage);
  munmap(priv, kPage);
}

TEST_P(SharedFileMapping, FtruncateGrowAndShrinkUnderMapping) {
  char* p = Map(4 * kPage);  // larger than the (empty) file
  ASSERT_NE(p, nullptr);
  ASSERT_SYS_OK(ftruncate(fd_.get(), 3 * kPage));
  EXPECT_EQ(p[2 * kPage + 5], 0);
  p[2 * kPage + 5] = 'z';
  EXPECT_EQ(PreadString(fd_.get(), 1, 2 * kPage + 5), "z");
  // Shrink to mid-page: the tail of that page reads as zero afterwards, even after the
  // file grows again.
  memcpy(p + 100, "keep-and-drop", 13);
  ASSERT_SYS_OK(ftruncate(fd_.get(), 104));
  EXPECT_EQ(std::string(p + 100, 4), "keep");
  EXPECT_EQ(p[104], 0);
  ASSERT_SYS_OK(ftruncate(fd_.get(), kPage));
  EXPECT_EQ(PreadString(fd_.get(), 9, 100), std::string("keep\0\0\0\0\0", 9));
  struct stat st;
  ASSERT_SYS_OK(fstat(fd_.get(), &st));
  EXPECT_EQ(st.st_size, static_cast<off_t>(kPage));
  munmap(p, 4 * kPage);
}

TEST_P(SharedFileMapping, FallocateGrowsAndPunchesHolesSeenByMapping) {
  ASSERT_SYS_OK(ftruncate(fd_.get(), kPage));
  char* p = Map(2 * kPage);
  ASSERT_NE(p, nullptr);
  memset(p, 'a', kPage);
  ASSERT_SYS_OK(fallocate(fd_.get(), 0, 0, 2 * kPage));
  struct stat st;
  ASSERT_SYS_OK(fstat(fd_.get(), &st));
  EXPECT_EQ(st.st_size, static_cast<off_t>(2 * kPage));
  EXPECT_EQ(p[kPage - 1], 'a');
  ASSERT_SYS_OK(fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 16));
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[15], 0);
  EXPECT_EQ(p[16], 'a');
  munmap(p, 2 * kPage);
}

TEST_P(SharedFileMapping, MappingOutlivesCloseAndUnlink) {
  ASSERT_SYS_OK(ftruncate(fd_.get(), kPage));
  char* p = Map(kPage);
  ASSERT_NE(p, nullptr);
  ScopedFd keep(open(path_.c_str(), O_RDONLY));
  fd_.reset();
  ASSERT_SYS_OK(unlink(path_.c_str()));
  strcpy(p, "still here");
  EXPECT_EQ(PreadString(keep.get(), 10, 0), "still here");
  munmap(p, kPage);
}

TEST_P(SharedFileMapping, MremapKeepsSharing) {
  ASSERT_SYS_OK(ftruncate(fd_.get(), 4 * kPage));
  char* p = Map(kPage);
  ASSERT_NE(p, nullptr);
  // Occupy the next page so that growing has to move.
  void* blocker =
      mmap(p + kPage, kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  char* q = static_cast<char*>(mremap(p, kPage, 3 * kPage, MREMAP_MAYMOVE));
  ASSERT_NE(q, MAP_FAILED);
  strcpy(q + 2 * kPage, "grown");
  EXPECT_EQ(PreadString(fd_.get(), 5, 2 * kPage), "grown");
  ASSERT_EQ(pwrite(fd_.get(), "file", 4, 0), 4);
  EXPECT_EQ(std::string(q, 4), "file");
  munmap(q, 3 * kPage);
  if (blocker != MAP_FAILED) munmap(blocker, kPage);
}

TEST_P(SharedFileMapping, TwoMappingsInOneProcessAlias) {
  ASSERT_SYS_OK(ftruncate(fd_.get(), 2 * kPage));
  char* a = Map(2 * kPage);
  char* b = static_cast<char*>(
      mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), kPage));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, MAP_FAILED);
  strcpy(a + kPage + 8, "alias");
  EXPECT_STREQ(b + 8, "alias");
  munmap(a, 2 * kPage);
  munmap(b, kPage);
}

// A sparse file costs only the blocks written (as on tmpfs), so a file much larger than
// the sandbox's writable-layer budget can be made and mapped (CPython's LargeMmapTests).
TEST_P(SharedFileMapping, SparseFileFarPastTheBudgetCanBeMapped) {
  constexpr off_t kFar = 5LL << 30;
  ASSERT_EQ(pwrite(fd_.get(), "tail", 4, kFar), 4);
  struct stat st;
  ASSERT_SYS_OK(fstat(fd_.get(), &st));
  EXPECT_EQ(st.st_size, kFar + 4);
  EXPECT_LE(st.st_blocks, 128);  // a few blocks, whatever the host filesystem's size
  void* p = mmap(nullptr, kPage, PROT_READ, MAP_SHARED, fd_.get(), kFar);
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_EQ(std::string(static_cast<char*>(p), 4), "tail");
  munmap(p, kPage);
  // The whole file, read-only.
  char* all = static_cast<char*>(mmap(nullptr, kFar + 4, PROT_READ, MAP_SHARED, fd_.get(), 0));
  ASSERT_NE(all, MAP_FAILED);
  EXPECT_EQ(std::string(all + kFar, 4), "tail");
  EXPECT_EQ(all[kFar / 2], 0);
  munmap(all, kFar + 4);
  ASSERT_SYS_OK(ftruncate(fd_.get(), 0));
}

INSTANTIATE_TEST_SUITE_P(Dirs, SharedFileMapping, ::testing::Values("/tmp", "/dev/shm", "/var/tmp"),
                         [](const auto& info) {
                           std::string s = info.param;
                           return s == "/tmp"       ? std::string("Tmp")
                                  : s == "/dev/shm" ? std::string("DevShm")
                                                    : std::string("VarTmp");
                         });

class SharedMmapErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Child("f");
    ScopedFd fd(open(path_.c_str(), O_RDWR | O_CREAT, 0600));
    ASSERT_SYS_OK(fd.get());
    ASSERT_SYS_OK(ftruncate(fd.get(), 2 * kPage));
  }
  TempDir dir_;
  std::string path_;
};

TEST_F(SharedMmapErrors, WritableSharedMappingOfReadOnlyFdIsEacces) {
  ScopedFd fd(open(path_.c_str(), O_RDONLY));
  ASSERT_SYS_OK(fd.get());
  EXPECT_EQ(mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0), MAP_FAILED);
  EXPECT_EQ(errno, EACCES);
  // Read-only shared: fine, but mprotect cannot add PROT_WRITE later.
  void* p = mmap(nullptr, kPage, PROT_READ, MAP_SHARED, fd.get(), 0);
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_ERRNO(mprotect(p, kPage, PROT_READ | PROT_WRITE), EACCES);
  munmap(p, kPage);
  // A private writable mapping of the same descriptor is allowed (copy on write).
  p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get(), 0);
  ASSERT_NE(p, MAP_FAILED);
  munmap(p, kPage);
}

TEST_F(SharedMmapErrors, WriteOnlyFdCannotBeMapped) {
  ScopedFd fd(open(path_.c_str(), O_WRONLY));
  ASSERT_SYS_OK(fd.get());
  EXPECT_EQ(mmap(nullptr, kPage, PROT_WRITE, MAP_SHARED, fd.get(), 0), MAP_FAILED);
  EXPECT_EQ(errno, EACCES);
}

TEST_F(SharedMmapErrors, MsyncFlagsAndAlignment) {
  ScopedFd fd(open(path_.c_str(), O_RDWR));
  char* p =
      static_cast<char*>(mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0));
  ASSERT_NE(p, MAP_FAILED);
  strcpy(p, "synced");
  EXPECT_EQ(msync(p, 2 * kPage, MS_SYNC), 0);
  EXPECT_EQ(msync(p, 2 * kPage, MS_ASYNC), 0);
  EXPECT_EQ(msync(p, 2 * kPage, MS_INVALIDATE), 0);
  EXPECT_EQ(msync(p, 2 * kPage, MS_SYNC | MS_INVALIDATE), 0);
  EXPECT_EQ(msync(p, 0, MS_SYNC), 0);
  EXPECT_EQ(msync(p, 100, MS_SYNC), 0);  // the length is rounded up to pages
  EXPECT_ERRNO(msync(p + 1, kPage, MS_SYNC), EINVAL);
  EXPECT_ERRNO(msync(p, kPage, MS_SYNC | MS_ASYNC), EINVAL);
  EXPECT_ERRNO(msync(p, kPage, 0x100), EINVAL);
  EXPECT_EQ(PreadString(fd.get(), 6, 0), "synced");
  munmap(p, 2 * kPage);
}

TEST_F(SharedMmapErrors, MsyncOfUnmappedRangeIsEnomem) {
  ScopedFd fd(open(path_.c_str(), O_RDWR));
  char* p =
      static_cast<char*>(mmap(nullptr, 3 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0));
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_SYS_OK(munmap(p + kPage, kPage));  // a hole in the middle
  EXPECT_ERRNO(msync(p, 3 * kPage, MS_SYNC), ENOMEM);
  EXPECT_EQ(msync(p, kPage, MS_SYNC), 0);
  EXPECT_ERRNO(msync(p + kPage, kPage, MS_ASYNC), ENOMEM);
  munmap(p, 3 * kPage);
}

// Private stores into a file mapping never reach the file, even with msync.
TEST_F(SharedMmapErrors, MsyncDoesNotWriteBackPrivateMappings) {
  ScopedFd fd(open(path_.c_str(), O_RDWR));
  char* p =
      static_cast<char*>(mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get(), 0));
  ASSERT_NE(p, MAP_FAILED);
  strcpy(p, "private");
  EXPECT_EQ(msync(p, kPage, MS_SYNC), 0);
  EXPECT_EQ(PreadString(fd.get(), 7, 0), std::string(7, '\0'));
  munmap(p, kPage);
}

// glibc's shm_open is open() in /dev/shm: the classic POSIX shared-memory pattern.
TEST(PosixShm, ShmOpenSharedAcrossFork) {
  std::string name = "/usentry-shm-test-" + std::to_string(getpid());
  ScopedFd fd(shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600));
  ASSERT_SYS_OK(fd.get());
  ASSERT_SYS_OK(ftruncate(fd.get(), kPage));
  auto* counter = static_cast<volatile int*>(
      mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0));
  ASSERT_NE(counter, MAP_FAILED);
  int rc = InChild([&] {
    ScopedFd again(shm_open(name.c_str(), O_RDWR, 0));
    if (again.get() < 0) return 1;
    auto* c = static_cast<volatile int*>(
        mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, again.get(), 0));
    if (c == MAP_FAILED) return 2;
    *c = 41;
    return 0;
  });
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(*counter, 41);
  ASSERT_SYS_OK(shm_unlink(name.c_str()));
  EXPECT_ERRNO(shm_open(name.c_str(), O_RDWR, 0), ENOENT);
  munmap(const_cast<int*>(counter), kPage);
}

// A named semaphore (a file in /dev/shm mapped MAP_SHARED) posted by a child wakes the
// parent blocked in sem_wait.
TEST(PosixShm, NamedSemaphoreAcrossFork) {
  std::string name = "/usentry-sem-test-" + std::to_string(getpid());
  sem_t* sem = sem_open(name.c_str(), O_CREAT | O_EXCL, 0600, 0);
  ASSERT_NE(sem, SEM_FAILED) << strerror(errno);
  pid_t pid = fork();
  if (pid == 0) {
    sem_t* s = sem_open(name.c_str(), 0);
    if (s == SEM_FAILED) _exit(1);
    usleep(50 * 1000);  // let the parent block first
    _exit(sem_post(s) == 0 ? 0 : 2);
  }
  ASSERT_SYS_OK(sem_wait(sem));
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  int value = -1;
  ASSERT_SYS_OK(sem_getvalue(sem, &value));
  EXPECT_EQ(value, 0);
  EXPECT_EQ(sem_trywait(sem), -1);
  EXPECT_EQ(errno, EAGAIN);
  sem_close(sem);
  ASSERT_SYS_OK(sem_unlink(name.c_str()));
}

// A process-shared unnamed semaphore inside a shared mapping of a /tmp file, used as a
// lock by parent and child incrementing one counter.
TEST(PosixShm, ProcessSharedSemaphoreInTmpFileMapping) {
  TempDir dir;
  ScopedFd fd(open(dir.Child("sem").c_str(), O_RDWR | O_CREAT, 0600));
  ASSERT_SYS_OK(fd.get());
  ASSERT_SYS_OK(ftruncate(fd.get(), kPage));
  struct Shared {
    sem_t lock;
    long counter;
  };
  auto* s =
      static_cast<Shared*>(mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0));
  ASSERT_NE(s, MAP_FAILED);
  ASSERT_SYS_OK(sem_init(&s->lock, 1, 1));
  constexpr int kRounds = 2000;
  auto work = [s] {
    for (int i = 0; i < kRounds; i++) {
      sem_wait(&s->lock);
      long v = s->counter;
      if (i % 100 == 0) sched_yield();
      s->counter = v + 1;
      sem_post(&s->lock);
    }
  };
  pid_t pid = fork();
  if (pid == 0) {
    work();
    _exit(0);
  }
  work();
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(s->counter, 2 * kRounds);
  long from_file = 0;
  ASSERT_EQ(pread(fd.get(), &from_file, sizeof from_file, offsetof(Shared, counter)),
            static_cast<ssize_t>(sizeof from_file));
  EXPECT_EQ(from_file, 2 * kRounds);
  munmap(s, kPage);
}

}  // namespace
}  // namespace syscall_test
