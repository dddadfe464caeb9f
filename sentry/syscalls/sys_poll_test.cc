// pipe/pipe2/poll/ppoll/select/pselect6 against a real in-process kernel: a Kernel
// without a platform, one task with an anonymous mapping as its "app memory". Blocking
// paths are exercised by a helper thread that changes state under the kernel lock.
#include "sentry/syscalls/sys_poll.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/select.h>

#include <array>
#include <cstring>
#include <memory>
#include <thread>

#include "abi/misc.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "sentry/fsimpl/pipe.h"
#include "sentry/fsimpl/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/test_kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_file.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/signal.h"
#include "sentry/syscalls/sys_pipe.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/fs_context.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry {
namespace {

class PollTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tk_ = std::make_unique<TestKernel>();
    k_ = &tk_->kernel();
    task_ = &tk_->task();
    tg_ = &tk_->thread_group();
    mem_ = tk_->mem();
  }
  void TearDown() override { tk_.reset(); }

  SyscallResult Call(SyscallHandler h, std::initializer_list<uint64_t> a) {
    SyscallArgs args;
    int i = 0;
    for (uint64_t v : a) args.a[i++] = v;
    return h(*task_, args);
  }
  template <typename T>
  void Put(uint64_t off, const T& v) {
    ASSERT_TRUE(task_->mm().CopyOutObj(mem_ + off, v).ok());
  }
  template <typename T>
  T Get(uint64_t off) {
    return task_->mm().CopyInObj<T>(mem_ + off).value();
  }
  // pipe2 into app memory at offset 0; returns {read fd, write fd}.
  std::pair<int, int> MakePipe(int flags = 0) {
    EXPECT_TRUE(Call(SysPipe2, {mem_.value(), static_cast<uint64_t>(flags)}).ok());
    return {Get<int32_t>(0), Get<int32_t>(4)};
  }
  void WriteTo(int fd, const char* s) {
    auto f = task_->fds().Get(fd).value();
    iovec v{const_cast<char*>(s), strlen(s)};
    ASSERT_TRUE(f->Write(nullptr, absl::MakeConstSpan(&v, 1), -1).ok());
  }

  std::unique_ptr<TestKernel> tk_;
  Kernel* k_ = nullptr;
  ThreadGroup* tg_ = nullptr;
  Task* task_ = nullptr;
  mm::GuestAddr mem_;
};

TEST_F(PollTest, Pipe2InstallsLowestFdsWithFlags) {
  absl::MutexLock l(&k_->mu);
  auto [r, w] = MakePipe(O_CLOEXEC | O_NONBLOCK);
  EXPECT_EQ(r, 0);
  EXPECT_EQ(w, 1);
  EXPECT_TRUE(task_->fds().GetEntry(r)->cloexec);
  EXPECT_TRUE(task_->fds().Get(w).value()->nonblocking());
  EXPECT_EQ(Call(SysPipe2, {mem_.value(), O_DIRECT}).error(), EINVAL);
  EXPECT_EQ(Call(SysPipe2, {mem_.value(), 0x1}).error(), EINVAL);
  // A bad address fails and leaves no FDs behind.
  EXPECT_EQ(Call(SysPipe, {8}).error(), EFAULT);
  EXPECT_EQ(task_->fds().size(), 2u);
}

TEST_F(PollTest, PollReportsReadinessAndNval) {
  absl::MutexLock l(&k_->mu);
  auto [r, w] = MakePipe();
  std::array<abi::Pollfd, 3> p = {{{r, POLLIN, 0}, {w, POLLOUT, 0}, {77, POLLIN, 0}}};
  Put(64, p);
  auto n = Call(SysPoll, {mem_.value() + 64, 3, 0});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 2u);  // writable + NVAL
  auto out = Get<decltype(p)>(64);
  EXPECT_EQ(out[0].revents, 0);
  EXPECT_EQ(out[1].revents, POLLOUT);
  EXPECT_EQ(out[2].revents, POLLNVAL);
  WriteTo(w, "x");
  n = Call(SysPoll, {mem_.value() + 64, 1, 0});
  EXPECT_EQ(n.value(), 1u);
  EXPECT_EQ(Get<abi::Pollfd>(64).revents, POLLIN);
  // Negative fds are skipped.
  Put(64, abi::Pollfd{-1, POLLIN, 0});
  EXPECT_EQ(Call(SysPoll, {mem_.value() + 64, 1, 0}).value(), 0u);
  EXPECT_EQ(Call(SysPoll, {8, 1, 0}).error(), EFAULT);
  EXPECT_EQ(Call(SysPoll, {mem_.value(), 1u << 21, 0}).error(), EINVAL);  // > RLIMIT_NOFILE
}

TEST_F(PollTest, PollHangupWhenWriterCloses) {
  absl::MutexLock l(&k_->mu);
  auto [r, w] = MakePipe();
  ASSERT_TRUE(task_->fds().Remove(w).ok());
  Put(64, abi::Pollfd{r, POLLIN, 0});
  EXPECT_EQ(Call(SysPoll, {mem_.value() + 64, 1, -1ull}).value(), 1u);
  EXPECT_EQ(Get<abi::Pollfd>(64).revents, POLLHUP);
}

TEST_F(PollTest, PollTimesOut) {
  absl::MutexLock l(&k_->mu);
  auto [r, w] = MakePipe();
  Put(64, abi::Pollfd{r, POLLIN, 0});
  absl::Time start = absl::Now();
  EXPECT_EQ(Call(SysPoll, {mem_.value() + 64, 1, 50}).value(), 0u);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(45));
}

TEST_F(PollTest, PollWakesWhenAnotherThreadWrites) {
  absl::MutexLock l(&k_->mu);
  auto [r, w] = MakePipe();
  auto wfile = task_->fds().Get(w).value();
  Put(64, abi::Pollfd{r, POLLIN, 0});
  std::thread writer([&] {
    absl::SleepFor(absl::Milliseconds(30));
    absl::MutexLock wl(&k_->mu);
    iovec v{const_cast<char*>("x"), 1};
    (void)wfile->Write(nullptr, absl::MakeConstSpan(&v, 1), -1);
  });
  auto n = Call(SysPoll, {mem_.value() + 64, 1, 10000});
  k_->mu.Unlock();
  writer.join();
  k_->mu.Lock();
  EXPECT_EQ(n.value(), 1u);
  EXPECT_EQ(Get<abi::Pollfd>(64).revents, POLLIN);
}

TEST_F(PollTest, SignalInterruptsWithRestartNoHand) {
  absl::MutexLock l(&k_->mu);
  auto [r, w] = MakePipe();
  Put(64, abi::Pollfd{r, POLLIN, 0});
  std::thread sender([&] {
    absl::SleepFor(absl::Milliseconds(30));
    absl::MutexLock sl(&k_->mu);
    siginfo_t info{};
    info.si_signo = SIGUSR1;
    task_->sig->pending.Enqueue(info);
    task_->Interrupt();
  });
  auto n = Call(SysPoll, {mem_.value() + 64, 1, 10000});
  k_->mu.Unlock();
  sender.join();
  k_->mu.Lock();
  EXPECT_EQ(n.error(), kERestartNoHand);
}

TEST_F(PollTest, PpollMaskBlocksSignalAndIsRestored) {
  absl::MutexLock l(&k_->mu);
  auto [r, w] = MakePipe();
  Put(64, abi::Pollfd{r, POLLIN, 0});
  siginfo_t info{};
  info.si_signo = SIGUSR1;
  task_->sig->pending.Enqueue(info);  // pending, but blocked by ppoll's mask
  task_->sig->mask = 0;
  Put(128, abi::Timespec{0, 30 * 1000 * 1000});
  Put(160, SigBit(SIGUSR1));
  auto n = Call(SysPpoll, {mem_.value() + 64, 1, mem_.value() + 128, mem_.value() + 160, 8});
  EXPECT_EQ(n.value(), 0u);  // timed out instead of being interrupted
  EXPECT_EQ(task_->sig->mask, 0u);
  EXPECT_FALSE(task_->sig->has_saved_mask);
  abi::Timespec left = Get<abi::Timespec>(128);
  EXPECT_EQ(left.sec, 0);
  EXPECT_LT(left.nsec, 30 * 1000 * 1000);
  // Without the mask the pending signal interrupts, and the saved mask stays for the
  // signal delivery code to restore.
  Put(160, uint64_t{0});
  task_->sig->mask = SigBit(SIGUSR2);
  n = Call(SysPpoll, {mem_.value() + 64, 1, 0, mem_.value() + 160, 8});
  EXPECT_EQ(n.error(), kERestartNoHand);
  EXPECT_TRUE(task_->sig->has_saved_mask);
  EXPECT_EQ(task_->sig->saved_mask, SigBit(SIGUSR2));
  EXPECT_EQ(Call(SysPpoll, {mem_.value() + 64, 1, 0, mem_.value() + 160, 4}).error(), EINVAL);
}

TEST_F(PollTest, SelectSetsAndTimeval) {
  absl::MutexLock l(&k_->mu);
  auto [r, w] = MakePipe();
  WriteTo(w, "data");
  uint64_t rset = (1ull << r) | (1ull << w), wset = (1ull << r) | (1ull << w);
  Put(256, rset);
  Put(264, wset);
  Put(280, abi::Timeval{5, 0});
  auto n = Call(SysSelect, {64, mem_.value() + 256, mem_.value() + 264, 0, mem_.value() + 280});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 2u);  // r readable, w writable
  EXPECT_EQ(Get<uint64_t>(256), 1ull << r);
  EXPECT_EQ(Get<uint64_t>(264), 1ull << w);
  abi::Timeval left = Get<abi::Timeval>(280);
  EXPECT_LE(left.sec, 5);
  EXPECT_GE(left.sec, 4);
  // A closed FD in a set is EBADF.
  Put(256, uint64_t{1} << 40);
  EXPECT_EQ(Call(SysSelect, {64, mem_.value() + 256, 0, 0, 0}).error(), EBADF);
  Put(280, abi::Timeval{-1, 0});
  EXPECT_EQ(Call(SysSelect, {0, 0, 0, 0, mem_.value() + 280}).error(), EINVAL);
  // select(0, ..., {0, 20ms}) is a sleep.
  Put(280, abi::Timeval{0, 20000});
  EXPECT_EQ(Call(SysSelect, {0, 0, 0, 0, mem_.value() + 280}).value(), 0u);
  EXPECT_EQ(Get<abi::Timeval>(280).usec, 0);
}

TEST_F(PollTest, Pselect6WithSigmask) {
  absl::MutexLock l(&k_->mu);
  auto [r, w] = MakePipe();
  Put(256, uint64_t{1} << r);
  Put(300, SigBit(SIGUSR1));
  struct {
    uint64_t ss, len;
  } ssd{mem_.value() + 300, 8};
  Put(320, ssd);
  Put(340, abi::Timespec{0, 10 * 1000 * 1000});
  auto n =
      Call(SysPselect6, {64, mem_.value() + 256, 0, 0, mem_.value() + 340, mem_.value() + 320});
  EXPECT_EQ(n.value(), 0u);
  EXPECT_EQ(Get<uint64_t>(256), 0u);  // cleared: nothing ready
  EXPECT_FALSE(task_->sig->has_saved_mask);
}

TEST_F(PollTest, SigpipeOnWriteWithoutReader) {
  absl::MutexLock l(&k_->mu);
  auto [r, w] = MakePipe();
  ASSERT_TRUE(task_->fds().Remove(r).ok());
  auto f = task_->fds().Get(w).value();
  iovec v{const_cast<char*>("x"), 1};
  EXPECT_EQ(f->Write(task_, absl::MakeConstSpan(&v, 1), -1).error(), EPIPE);
  EXPECT_TRUE(task_->sig->pending.Has(SIGPIPE));
  siginfo_t info = task_->sig->pending.Dequeue(SIGPIPE);
  EXPECT_EQ(info.si_code, SI_USER);
  EXPECT_EQ(info.si_pid, tg_->pid());
}

}  // namespace
}  // namespace usentry::sentry
