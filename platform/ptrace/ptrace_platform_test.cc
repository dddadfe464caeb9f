// ptrace-only behaviour: the stub's mappings, its filter as a second layer behind
// SYSEMU, the tracer-thread contract. The Platform contract is platform/platform_test.cc.
#include "platform/ptrace/ptrace_platform.h"

#include <dirent.h>
#include <linux/audit.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/unique_fd.h"
#include "gtest/gtest.h"
#include "platform/platform.h"
#include "platform/ptrace/stub_code_unsafe.h"
#include "platform/test_machine.h"
#include "xbyak/xbyak.h"

namespace usentry::platform::ptrace {
namespace {

using namespace Xbyak::util;  // NOLINT: register names

using namespace ::usentry::platform::test_support;  // NOLINT: the test machine

class PtracePlatformTest : public ::testing::Test, public TestMachine {
 protected:
  void SetUp() override { Start("ptrace"); }
  pid_t StubPid() { return static_cast<PtraceAddressSpace&>(*as_).stub_pid(); }
};

TEST_F(PtracePlatformTest, StubHasOnlyStubPageAndAppMappings) {
  auto g = Gen();
  g.ud2();
  Load(g);
  std::ifstream maps(absl::StrCat("/proc/", StubPid(), "/maps"));
  ASSERT_TRUE(maps.is_open());
  std::string line;
  int n = 0;
  while (std::getline(maps, line)) {
    ++n;
    if (line.find("[vsyscall]") != std::string::npos) continue;  // cannot be unmapped
    const uint64_t start = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    // The host vDSO block the stub keeps (platform/host_vdso.h), when it could.
    const HostVdso* vdso = GetStubPage()->vdso;
    if (vdso && start >= vdso->start && start < vdso->end) continue;
    EXPECT_TRUE(start == kCode || start == kStack || start == as_->MaxUserAddress()) << line;
    if (start == as_->MaxUserAddress()) {
      EXPECT_NE(line.find("r-xp"), std::string::npos) << line;
    }
    if (start == kCode) {
      EXPECT_NE(line.find("r-xs"), std::string::npos) << line;
    }
  }
  EXPECT_GE(n, 3);
}

// The second layer, live: if the platform ever ran app code without SYSEMU, the stub
// filter kills the stub at the app's first syscall.
TEST_F(PtracePlatformTest, AppSyscallWithoutSysemuKillsTheStub) {
  auto g = Gen();
  g.mov(eax, SYS_getpid);
  g.syscall();
  Load(g);
  Subprocess& sp = static_cast<PtraceAddressSpace&>(*as_).subprocess();
  user_regs_struct gp = sp.initial_regs();
  gp.rip = kCode;
  gp.rsp = kStack + kPage;
  gp.orig_rax = ~uint64_t{0};
  ASSERT_TRUE(sp.SetRegs(gp).ok());
  ASSERT_TRUE(sp.Resume(PTRACE_CONT, "PTRACE_CONT").ok());  // the bug being simulated
  absl::StatusOr<int> st = sp.Wait();
  ASSERT_TRUE(st.ok()) << st.status();
  ASSERT_TRUE(WIFSIGNALED(*st)) << DescribeWaitStatus(*st);
  EXPECT_EQ(WTERMSIG(*st), SIGSYS);
}

// Even from the stub page, only the stub's own syscalls pass.
TEST_F(PtracePlatformTest, InjectedSyscallOutsideTheAllowlistKillsTheStub) {
  Subprocess& sp = static_cast<PtraceAddressSpace&>(*as_).subprocess();
  absl::StatusOr<int64_t> r = sp.Inject(SYS_getppid, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("SIGSYS"), std::string::npos) << r.status();
  EXPECT_TRUE(sp.dead());
}

TEST_F(PtracePlatformTest, JumpingIntoTheStubSyscallSiteIsStillEmulated) {
  absl::StatusOr<StubPage> stub = GetStubPage();
  ASSERT_TRUE(stub.ok());
  auto g = Gen();
  g.mov(eax, SYS_mmap);
  g.mov(rcx, stub->syscall_site);
  g.jmp(rcx);
  Load(g);
  SwitchResult r = RunApp();
  ASSERT_EQ(r.kind, SwitchKind::kSyscall);  // SYSEMU caught it; the host never ran it
  EXPECT_EQ(regs_.gp.orig_rax, static_cast<uint64_t>(SYS_mmap));
  EXPECT_EQ(regs_.gp.rip, stub->syscall_site + 2);
}

TEST_F(PtracePlatformTest, UseFromAnotherThreadIsAnErrorNotAHang) {
  auto g = Gen();
  g.ud2();
  Load(g);
  std::thread other([&] {
    absl::StatusOr<SwitchResult> r = ctx_->Switch(*as_, regs_);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_EQ(as_->Unmap(kCode, kPage).code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_FALSE(ctx_->LoadFpState(*as_, regs_).ok());
  });
  other.join();
  SwitchResult r = RunApp();  // still fine from the owner thread
  EXPECT_EQ(r.kind, SwitchKind::kSignal);
  EXPECT_EQ(r.info.si_signo, SIGILL);
}

// Fields of /proc/<pid>/status, e.g. "SigBlk" -> "0000000000000000".
std::string StatusField(pid_t pid, const std::string& name) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(name + ":", 0) == 0) {
      std::string v = line.substr(name.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "<missing>";
}

void Handler(int) {}

// The sentry is multi-threaded and its threads have handlers and blocked signals; a
// stub made from such a thread starts clean and is run from that same thread.
TEST(PtraceFromSentryThreadTest, StubStartsWithDefaultSignalStateAndRuns) {
  UniqueFd memfd(memfd_create("usentry-test-memory", 0));
  ASSERT_TRUE(memfd.valid());
  ASSERT_EQ(ftruncate(memfd.get(), 1 << 16), 0);
  auto g = PtracePlatformTest::Gen();
  g.mov(eax, SYS_getpid);
  g.syscall();
  ASSERT_EQ(pwrite(memfd.get(), g.getCode(), g.getSize(), 0), static_cast<ssize_t>(g.getSize()));

  struct sigaction sa {};
  sa.sa_handler = Handler;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, nullptr), 0);
  ASSERT_EQ(signal(SIGPIPE, SIG_IGN), SIG_DFL);
  std::thread busy([] {  // another sentry thread allocating while we fork
    for (int i = 0; i < 20000; ++i) std::vector<int> v(100);
  });
  std::thread sentry([&] {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    sigaddset(&block, SIGTERM);
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, nullptr), 0);
    auto platform = NewPlatform("ptrace", MemoryFileInfo{.fd = memfd.get()});
    ASSERT_TRUE(platform.ok()) << platform.status();
    auto as = (*platform)->NewAddressSpace();
    ASSERT_TRUE(as.ok()) << as.status();
    const pid_t pid = static_cast<PtraceAddressSpace&>(**as).stub_pid();
    EXPECT_EQ(StatusField(pid, "SigBlk"), "0000000000000000");
    EXPECT_EQ(StatusField(pid, "SigIgn"), "0000000000000000");
    EXPECT_EQ(StatusField(pid, "SigCgt"), "0000000000000000");
    ASSERT_TRUE((*as)->MapFile(kCode, kPage, 0, PROT_READ | PROT_EXEC).ok());
    auto ctx = (*platform)->NewContext();
    ASSERT_TRUE(ctx.ok());
    Registers regs;
    regs.gp.rip = kCode;
    auto r = (*ctx)->Switch(**as, regs);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->kind, SwitchKind::kSyscall);
  });
  sentry.join();
  busy.join();
  signal(SIGUSR1, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
}

}  // namespace
}  // namespace usentry::platform::ptrace
