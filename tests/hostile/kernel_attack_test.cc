// Attacks on host processes, the host kernel, the syscall path and the platform. Each
// must fail or kill only the app; the sentry must survive and keep serving the app.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/hostile/hostile_util.h"

namespace usentry::testing {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class KernelAttackTest : public HostileTest {};

// A host process the attack tries to kill; the test checks it is still alive.
class SacrificialProcess {
 public:
  SacrificialProcess() {
    pid_ = fork();
    if (pid_ == 0) {
      for (;;) pause();
    }
  }
  ~SacrificialProcess() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  bool Alive() const { return kill(pid_, 0) == 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_;
};

TEST_P(KernelAttackTest, HostProcessAndKernelAttacksAllFail) {
  SacrificialProcess victim;
  ASSERT_GT(victim.pid(), 0);
  TempDir audit_dir;
  const std::string audit = audit_dir.path() + "/audit.jsonl";
  RunResult r = Attack("kernel_attacks", {absl::StrCat(getpid()), absl::StrCat(victim.pid())},
                       {"--audit", audit});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("\ndone\n")) << r.Describe();
  EXPECT_TRUE(victim.Alive()) << "a host process was killed from inside the sandbox\n"
                              << r.Describe();
  auto reports = ParseReports(r.out);
  const std::vector<std::string> must_fail = {"ptrace_attach_1",
                                              "ptrace_attach_ppid",
                                              "ptrace_seize_host",
                                              "process_vm_readv_1",
                                              "process_vm_writev_1",
                                              "kill_host_pid_sig0",
                                              "kill_host_pid_sigkill",
                                              "pidfd_open_host",
                                              "mount_tmpfs",
                                              "mount_bind_root",
                                              "umount2",
                                              "umount2_proc",
                                              "unshare_user",
                                              "unshare_mount",
                                              "setns",
                                              "pivot_root",
                                              "chroot",
                                              "open_by_handle_at",
                                              "bpf_map_create",
                                              "io_uring_setup",
                                              "userfaultfd",
                                              "perf_event_open",
                                              "keyctl",
                                              "add_key",
                                              "init_module",
                                              "delete_module",
                                              "kexec_load",
                                              "reboot",
                                              "iopl",
                                              "ioperm",
                                              "modify_ldt",
                                              "socket_inet_raw",
                                              "socket_inet6_raw",
                                              "socket_ping",
                                              "socket_packet",
                                              "open_dev_mem",
                                              "open_dev_kmem",
                                              "open_dev_port",
                                              "open_dev_kmsg",
                                              "open_made_dev_mem",
                                              "tiocsti_stdin",
                                              "tiocsti_stderr"};
  for (const std::string& name : must_fail) {
    ASSERT_TRUE(reports.contains(name)) << name << " not reported\n" << r.Describe();
    EXPECT_THAT(reports[name], Not(StartsWith("OK"))) << name << " succeeded\n" << r.Describe();
  }
  // A terminal of the sandbox, if any, refuses TIOCSTI too.
  if (reports.contains("tiocsti_dev_tty")) {
    EXPECT_THAT(reports["tiocsti_dev_tty"], Not(StartsWith("OK"))) << r.Describe();
  }
  // The audit stream names every refused privileged call and the network denial.
  std::vector<nlohmann::json> records = ReadAuditRecords(audit);
  std::map<std::string, std::string> syscalls = SyscallStatuses(records);
  for (const char* name : {"ptrace",
                           "process_vm_readv",
                           "process_vm_writev",
                           "mount",
                           "umount2",
                           "unshare",
                           "setns",
                           "pivot_root",
                           "chroot",
                           "bpf",
                           "io_uring_setup",
                           "userfaultfd",
                           "perf_event_open",
                           "keyctl",
                           "add_key",
                           "init_module",
                           "delete_module",
                           "kexec_load",
                           "reboot",
                           "iopl",
                           "ioperm"}) {
    EXPECT_EQ(syscalls[name], "blocked") << name << "\n" << ReadHostFile(audit);
  }
  for (const char* name : {"open_by_handle_at", "modify_ldt"}) {
    EXPECT_EQ(syscalls[name], "unimplemented") << name << "\n" << ReadHostFile(audit);
  }
  EXPECT_EQ(reports["socket_inet_raw"], "EPERM") << r.Describe();
  EXPECT_EQ(reports["socket_ping"], "EACCES") << r.Describe();
  EXPECT_THAT(reports["socket_inet_stream"], StartsWith("OK")) << r.Describe();
  for (const char* op :
       {"socket AF_INET SOCK_RAW", "socket AF_INET6 SOCK_RAW", "socket AF_INET ICMP"}) {
    EXPECT_THAT(DeniedOps(records), ::testing::Contains(op)) << ReadHostFile(audit);
  }
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.back().value("event", ""), "run_end") << ReadHostFile(audit);
  // Host pids mean nothing inside (the sandbox's own pids are small).
  if (getpid() > 1000 && victim.pid() > 1000) {
    EXPECT_EQ(reports["kill_host_pid_sig0"], "ESRCH") << r.Describe();
    EXPECT_EQ(reports["kill_host_pid_sigkill"], "ESRCH") << r.Describe();
  }
  // kill(-1, SIGKILL) reached the app's own child and nothing else.
  EXPECT_THAT(r.out, HasSubstr("kill_minus_1_child=signal 9")) << r.Describe();
}

// 32-bit and x32 syscalls, sysenter and the vsyscall page: each attack runs in a
// child; it may fail or die of a signal, must never print through the host kernel,
// and the parent must keep working afterwards.
TEST_P(KernelAttackTest, OtherSyscallEntriesNeverReachTheHost) {
  const std::vector<std::string> attacks = {"int80_write", "int80_getpid", "x32_write",
                                            "x32_getpid",  "sysenter",     "vsyscall"};
  RunResult r = Attack("syscall_path", attacks);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.out + r.err, Not(HasSubstr("ESCAPED"))) << r.Describe();
  auto reports = ParseReports(r.out);
  for (const std::string& a : attacks) {
    EXPECT_EQ(reports[a + ":after"], "alive") << a << "\n" << r.Describe();
    const std::string& outcome = reports[a];
    EXPECT_THAT(outcome, AnyOf("exit 0", "signal SEGV", "signal SYS", "signal ILL", "signal KILL",
                               "signal BUS"))
        << a << "\n"
        << r.Describe();
    // A call that returned did so with an error, not a result from any kernel.
    auto returned = reports.find(a + ":returned");
    if (returned != reports.end() && a != "vsyscall") {
      EXPECT_THAT(returned->second, StartsWith("-")) << a << "\n" << r.Describe();
    }
  }
}

// The ptrace stub lives at or above 0x7ff000000000; the app range ends there. No
// memory call may touch that range, no syscall may copy to or from it, and the app
// carries on normally afterwards.
TEST_P(KernelAttackTest, StubRegionIsOutOfReach) {
  RunResult r = Attack("stub_region", {});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  int checked = 0;
  for (const auto& [name, outcome] : ParseReports(r.out)) {
    if (name == "scratch" || name == "pipe" || name == "after" || name == "mmap_hint") continue;
    ++checked;
    if (name == "patch_munmap") {  // unmapping nothing succeeds, as on Linux
      EXPECT_EQ(outcome, "OK 0") << r.Describe();
      continue;
    }
    if (absl::StartsWith(name, "patch_")) {
      EXPECT_THAT(outcome, AnyOf("EPERM", "EINVAL", "ENOMEM")) << name << "\n" << r.Describe();
      continue;
    }
    if (absl::StartsWith(name, "copy")) {
      EXPECT_EQ(outcome, "EFAULT") << name << "\n" << r.Describe();
      continue;
    }
    EXPECT_THAT(outcome, AnyOf("ENOMEM", "EINVAL", "EFAULT", "EEXIST")) << name << "\n"
                                                                        << r.Describe();
  }
  EXPECT_GE(checked, 40) << r.Describe();
  auto reports = ParseReports(r.out);
  EXPECT_EQ(reports["after"], "fork-ok scratch-ok") << r.Describe();
  EXPECT_NE(reports["mmap_hint"], "ABOVE_TOP") << r.Describe();
}

// Huge sizes and counts, pointers into the kernel half or the stub: errors or bounded
// results, never a sentry that trusts them (an allocation sized by the app, a copy
// through a bad pointer).
TEST_P(KernelAttackTest, HostileArgumentsGetErrorsNotACrash) {
  RunResult r = Attack("bad_args", {});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("\ndone\n")) << r.Describe();
  auto reports = ParseReports(r.out);
  for (const char* name :
       {"read_kernel_ptr", "read_stub_ptr", "uname_kernel_ptr", "open_kernel_ptr",
        "futex_kernel_ptr", "sigaltstack_kernel", "read_huge_count", "write_huge_count"}) {
    EXPECT_EQ(reports[name], "EFAULT") << name << "\n" << r.Describe();
  }
  EXPECT_EQ(reports["mmap_huge"], "ENOMEM") << r.Describe();
  EXPECT_EQ(reports["mincore_huge_len"], "ENOMEM") << r.Describe();
  EXPECT_EQ(reports["mincore_big"], "OK 0") << r.Describe();
  // Linux copies only its own mask's size and returns it.
  EXPECT_THAT(reports["sched_getaffinity_huge"], StartsWith("OK")) << r.Describe();
  EXPECT_THAT(reports["sched_getaffinity"], StartsWith("OK")) << r.Describe();
  EXPECT_NE(reports["cpus"], "0") << r.Describe();
}

// nproc asks sched_getaffinity; the sentry once answered by reading /sys itself, which
// its seccomp filter punishes with death.
TEST_P(KernelAttackTest, NprocDoesNotKillTheSentry) {
  RunResult r = Sandboxed({"/usr/bin/nproc"});
  ExpectSentrySurvived(r);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_GT(atoi(r.out.c_str()), 0) << r.Describe();
}

// A setuid-root program from the host's /usr/bin runs with the caller's identity: the
// sandbox has no setuid (AT_EUID and AT_SECURE prove it), su cannot become root, and
// the secrets it would read are absent.
TEST_P(KernelAttackTest, SetuidRootBinaryGivesNoPrivilege) {
  struct stat st;
  if (stat("/usr/bin/passwd", &st) != 0 || !(st.st_mode & S_ISUID) || st.st_uid != 0) {
    GTEST_SKIP() << "no setuid-root /usr/bin/passwd on this host";
  }
  TempDir audit_dir;
  const std::string audit = audit_dir.path() + "/audit.jsonl";
  RunResult r = Sandboxed(
      {kBusybox, "sh", "-c",
       "LD_SHOW_AUXV=1 /usr/bin/passwd --help 2>/dev/null | grep -E '^AT_(EUID|SECURE):'; "
       "/usr/bin/su -c 'id -u' root </dev/null 2>/dev/null; echo su=$?; "
       "cat /etc/shadow 2>/dev/null; echo shadow=$?; id -u"},
      {"--user", "1000:1000", "--audit", audit});
  ExpectSentrySurvived(r);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.out, ::testing::ContainsRegex("AT_EUID: +1000\n")) << r.Describe();
  EXPECT_THAT(r.out, ::testing::ContainsRegex("AT_SECURE: +0\n")) << r.Describe();
  EXPECT_THAT(r.out, Not(HasSubstr("su=0"))) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("shadow=1\n")) << r.Describe();
  EXPECT_THAT(r.out, ::testing::EndsWith("\n1000\n")) << r.Describe();
  // The exec tree shows the setuid program ran (and as what: the audit has no uid change).
  bool saw_passwd = false;
  for (const nlohmann::json& j : ReadAuditRecords(audit)) {
    if (j.value("event", "") == "exec" && j.value("path", "") == "/usr/bin/passwd") {
      saw_passwd = true;
    }
  }
  EXPECT_TRUE(saw_passwd) << ReadHostFile(audit);
}

INSTANTIATE_TEST_SUITE_P(Platforms, KernelAttackTest, ::testing::ValuesIn(kTestPlatforms));

}  // namespace
}  // namespace usentry::testing
