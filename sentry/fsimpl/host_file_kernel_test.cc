// Host files with a real Task in an in-process kernel: terminal ioctls on a host pty
// (pass-through and emulated job control), /dev/tty and /dev/pts/0 over it, and a task
// sleeping on a host pipe until the kernel's host poller wakes it.
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <termios.h>
#include <unistd.h>

#include <memory>
#include <thread>

#include "abi/misc.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "sentry/fsimpl/devfs.h"
#include "sentry/fsimpl/host_file.h"
#include "sentry/fsimpl/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/test_kernel.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_file.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/fs_context.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry::fsimpl {
namespace {

class HostFileKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tk_ = std::make_unique<TestKernel>();
    k_ = &tk_->kernel();
    task_ = &tk_->task();
    tg_ = &tk_->thread_group();
    mem_ = tk_->mem();
    master_ = posix_openpt(O_RDWR | O_NOCTTY);
    ASSERT_GE(master_, 0);
    ASSERT_EQ(grantpt(master_), 0);
    ASSERT_EQ(unlockpt(master_), 0);
    slave_ = open(ptsname(master_), O_RDWR | O_NOCTTY);
    ASSERT_GE(slave_, 0);
    absl::MutexLock l(&k_->mu);
    ctx_.creds = &creds_;
    ctx_.root = ctx_.start = k_->vfs().root();
    ASSERT_TRUE(k_->vfs().Mkdir(ctx_, "/dev", 0755).ok());
    const int stdio[] = {slave_};
    ASSERT_TRUE(MountDevfs(k_->vfs(), *k_, stdio).ok());
  }
  void TearDown() override {
    ShutdownHostFiles(*k_);  // host files still open keep the stopped poller alive
    tk_.reset();
    close(master_);
    close(slave_);
  }
  SysResult<uint64_t> Ioctl(vfs::FileDescription& f, uint64_t cmd, uint64_t off) {
    return f.Ioctl(*task_, cmd, mem_.value() + off);
  }

  int master_ = -1, slave_ = -1;
  Credentials creds_;
  vfs::ResolveContext ctx_;
  std::unique_ptr<TestKernel> tk_;
  Kernel* k_ = nullptr;
  ThreadGroup* tg_ = nullptr;
  Task* task_ = nullptr;
  mm::GuestAddr mem_;
};

TEST_F(HostFileKernelTest, TerminalIoctls) {
  absl::MutexLock l(&k_->mu);
  auto tty = NewHostFile(*k_, slave_, O_RDWR);
  // termios and window size come from the host pty.
  ASSERT_TRUE(Ioctl(*tty, TCGETS, 0).ok());
  struct termios host;
  ASSERT_EQ(tcgetattr(slave_, &host), 0);
  auto t = task_->mm().CopyInObj<abi::Termios>(mem_).value();
  EXPECT_EQ(t.lflag, host.c_lflag);
  t.lflag &= ~ECHO;
  ASSERT_TRUE(task_->mm().CopyOutObj(mem_, t).ok());
  ASSERT_TRUE(Ioctl(*tty, TCSETS, 0).ok());
  ASSERT_EQ(tcgetattr(slave_, &host), 0);
  EXPECT_EQ(host.c_lflag & ECHO, 0u);
  ASSERT_TRUE(task_->mm().CopyOutObj(mem_, abi::Winsize{40, 100, 0, 0}).ok());
  ASSERT_TRUE(Ioctl(*tty, TIOCSWINSZ, 0).ok());
  ASSERT_TRUE(Ioctl(*tty, TIOCGWINSZ, 64).ok());
  EXPECT_EQ(task_->mm().CopyInObj<abi::Winsize>(mem_ + 64)->col, 100);
  // Job control is emulated with sandbox process groups.
  ASSERT_TRUE(Ioctl(*tty, TIOCGPGRP, 0).ok());
  EXPECT_EQ(task_->mm().CopyInObj<int32_t>(mem_).value(), tg_->pgid);
  ASSERT_TRUE(task_->mm().CopyOutObj(mem_, int32_t{4242}).ok());
  EXPECT_EQ(Ioctl(*tty, TIOCSPGRP, 0).error(), ESRCH);
  ASSERT_TRUE(task_->mm().CopyOutObj(mem_, tg_->pgid).ok());
  EXPECT_TRUE(Ioctl(*tty, TIOCSPGRP, 0).ok());
  ASSERT_TRUE(Ioctl(*tty, TIOCGSID, 0).ok());
  EXPECT_EQ(task_->mm().CopyInObj<int32_t>(mem_).value(), tg_->sid);
  EXPECT_EQ(Ioctl(*tty, TIOCSTI, 0).error(), EPERM);
  EXPECT_EQ(Ioctl(*tty, 0x1234, 0).error(), ENOTTY);
  auto a = tty->Stat();
  EXPECT_EQ(a->mode & S_IFMT, static_cast<uint32_t>(S_IFCHR));
  EXPECT_EQ(tty->AnonName(), "/dev/pts/0");
  // fstat of the stdio tty and stat of /dev/pts/0 agree (ttyname(3) relies on it).
  auto pts = k_->vfs().Resolve(ctx_, "/dev/pts/0", true);
  ASSERT_TRUE(pts.ok());
  auto b = pts->inode()->Stat();
  EXPECT_EQ(a->dev, b->dev);
  EXPECT_EQ(a->ino, b->ino);
  EXPECT_EQ(a->rdev, b->rdev);
  // /dev/tty reaches the same terminal, sharing its job-control state.
  auto devtty = k_->vfs().Open(ctx_, "/dev/tty", O_RDWR, 0);
  ASSERT_TRUE(devtty.ok());
  ASSERT_TRUE(Ioctl(**devtty, TIOCGPGRP, 0).ok());
  EXPECT_EQ(task_->mm().CopyInObj<int32_t>(mem_).value(), tg_->pgid);
}

TEST_F(HostFileKernelTest, NonTerminalsRefuseTtyIoctls) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  {
    absl::MutexLock l(&k_->mu);
    auto f = NewHostFile(*k_, p[0], O_RDONLY);
    EXPECT_EQ(Ioctl(*f, TCGETS, 0).error(), ENOTTY);
    EXPECT_EQ(Ioctl(*f, TIOCGPGRP, 0).error(), ENOTTY);
    EXPECT_EQ(Ioctl(*f, TIOCSTI, 0).error(), EPERM);
    ASSERT_EQ(write(p[1], "abc", 3), 3);
    ASSERT_TRUE(Ioctl(*f, FIONREAD, 0).ok());
    EXPECT_EQ(task_->mm().CopyInObj<int32_t>(mem_).value(), 3);
    EXPECT_EQ(f->Sync().error(), EINVAL);
  }
  close(p[0]);
  close(p[1]);
}

TEST_F(HostFileKernelTest, TaskSleepsUntilThePollerSeesData) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  {
    absl::MutexLock l(&k_->mu);
    auto f = NewHostFile(*k_, p[0], O_RDONLY);
    char buf[8];
    iovec v{buf, sizeof(buf)};
    EXPECT_EQ(f->Read(task_, absl::MakeConstSpan(&v, 1), -1).error(), EAGAIN);
    // What the VFS's blocking read does: wait on the queue, retry on wake-up.
    Waiter w(task_);
    ScopedWait sw(*f->wait_queue(), w, POLLIN | POLLHUP | POLLERR);
    std::thread writer([&] {
      absl::SleepFor(absl::Milliseconds(50));
      ASSERT_EQ(write(p[1], "hi", 2), 2);  // host side: no kernel lock involved
    });
    SysStatus st = task_->Block(w, absl::Now() + absl::Seconds(10));
    k_->mu.Unlock();
    writer.join();
    k_->mu.Lock();
    ASSERT_TRUE(st.ok()) << st.error();
    auto n = f->Read(task_, absl::MakeConstSpan(&v, 1), -1);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(std::string(buf, n.value()), "hi");
  }
  close(p[0]);
  close(p[1]);
}

TEST_F(HostFileKernelTest, WriteToClosedHostPipeIsEpipeAndSigpipe) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  close(p[0]);
  {
    absl::MutexLock l(&k_->mu);
    auto f = NewHostFile(*k_, p[1], O_WRONLY);
    iovec v{const_cast<char*>("x"), 1};
    EXPECT_EQ(f->Write(task_, absl::MakeConstSpan(&v, 1), -1).error(), EPIPE);
    EXPECT_TRUE(task_->sig->pending.Has(SIGPIPE));
  }
  close(p[1]);
}

}  // namespace
}  // namespace usentry::sentry::fsimpl
