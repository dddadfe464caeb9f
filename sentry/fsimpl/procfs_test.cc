// procfs and devfs mounted in an in-process kernel (no platform), read through the VFS
// as the app would: /proc/self, per-process files, fd links, mounts, sysctls, /dev nodes.
#include "sentry/fsimpl/procfs.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "sentry/fsimpl/devfs.h"
#include "sentry/fsimpl/pipe.h"
#include "sentry/fsimpl/procfs_net.h"
#include "sentry/fsimpl/tmpfs.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/shm_registry.h"
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

class ProcfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tk_ = std::make_unique<TestKernel>("[heap]");
    k_ = &tk_->kernel();
    task_ = &tk_->task();
    tg_ = &tk_->thread_group();
    mem_ = tk_->mem();
    task_->comm = "prog";
    absl::MutexLock l(&k_->mu);
    ctx_.creds = &creds_;
    ctx_.root = ctx_.start = k_->vfs().root();
    ASSERT_TRUE(k_->vfs().Mkdir(ctx_, "/proc", 0555).ok());
    ASSERT_TRUE(k_->vfs().Mkdir(ctx_, "/dev", 0755).ok());
    ASSERT_TRUE(k_->vfs().Mkdir(ctx_, "/work", 0755).ok());
    ASSERT_TRUE(MountProcfs(k_->vfs(), *k_).ok());
    ASSERT_TRUE(MountDevfs(k_->vfs(), *k_).ok());
    auto cwd = k_->vfs().Resolve(ctx_, "/work", true);
    task_->set_fs(std::make_shared<vfs::FsContext>(k_->vfs().root(), cwd.value()));
    SetCurrentTask(task_);
  }
  void TearDown() override {
    SetCurrentTask(nullptr);
    tk_.reset();
  }

  SysResult<std::string> ReadFile(const std::string& path) {
    ASSIGN_OR_RETURN_ERRNO(auto f, k_->vfs().Open(ctx_, path, O_RDONLY, 0));
    std::string out;
    char buf[256];
    while (true) {
      iovec v{buf, sizeof(buf)};
      ASSIGN_OR_RETURN_ERRNO(size_t n, f->Read(nullptr, absl::MakeConstSpan(&v, 1), -1));
      if (n == 0) return out;
      out.append(buf, n);
    }
  }
  std::string Pid() { return std::to_string(tg_->pid()); }

  Credentials creds_;
  vfs::ResolveContext ctx_;
  std::unique_ptr<TestKernel> tk_;
  Kernel* k_ = nullptr;
  ThreadGroup* tg_ = nullptr;
  Task* task_ = nullptr;
  mm::GuestAddr mem_;
};

TEST_F(ProcfsTest, SelfAndThreadSelf) {
  absl::MutexLock l(&k_->mu);
  EXPECT_EQ(k_->vfs().Readlink(ctx_, "/proc/self").value(), Pid());
  EXPECT_EQ(k_->vfs().Readlink(ctx_, "/proc/thread-self").value(), Pid() + "/task/" + Pid());
  auto st = ReadFile("/proc/self/status");
  ASSERT_TRUE(st.ok());
  EXPECT_NE(st->find("Name:\tprog\n"), std::string::npos);
  EXPECT_NE(st->find("Pid:\t" + Pid() + "\n"), std::string::npos);
  EXPECT_NE(st->find("State:\tR (running)\n"), std::string::npos);
  auto stat = ReadFile("/proc/self/stat");
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->rfind(Pid() + " (prog) R 0 " + Pid() + " " + Pid() + " ", 0), 0u) << *stat;
  EXPECT_EQ(ReadFile("/proc/thread-self/comm").value(), "prog\n");
  SetCurrentTask(nullptr);
  EXPECT_EQ(k_->vfs().Readlink(ctx_, "/proc/self").error(), ENOENT);
}

TEST_F(ProcfsTest, MapsCmdlineEnviron) {
  absl::MutexLock l(&k_->mu);
  auto maps = ReadFile("/proc/self/maps");
  ASSERT_TRUE(maps.ok());
  char start[32];
  snprintf(start, sizeof(start), "%08lx-", static_cast<unsigned long>(mem_.value()));
  size_t at = maps->find(start);
  ASSERT_NE(at, std::string::npos) << *maps;
  EXPECT_NE(maps->find(" rw-p ", at), std::string::npos);
  EXPECT_NE(maps->find("[heap]", at), std::string::npos);
  const char args[] = "prog\0-v\0HOME=/root\0";
  ASSERT_TRUE(task_->mm().CopyOut(mem_, args, sizeof(args) - 1).ok());
  task_->mm().arg_start = mem_.value();
  task_->mm().arg_end = mem_.value() + 8;
  task_->mm().env_start = mem_.value() + 8;
  task_->mm().env_end = mem_.value() + sizeof(args) - 1;
  EXPECT_EQ(ReadFile("/proc/self/cmdline").value(), std::string("prog\0-v\0", 8));
  EXPECT_EQ(ReadFile("/proc/" + Pid() + "/environ").value(), std::string("HOME=/root\0", 11));
}

TEST_F(ProcfsTest, LinksAndFds) {
  absl::MutexLock l(&k_->mu);
  task_->mm().executable_path = "/usr/bin/prog";
  EXPECT_EQ(k_->vfs().Readlink(ctx_, "/proc/self/exe").value(), "/usr/bin/prog");
  EXPECT_EQ(k_->vfs().Readlink(ctx_, "/proc/self/cwd").value(), "/work");
  EXPECT_EQ(k_->vfs().Readlink(ctx_, "/proc/self/root").value(), "/");
  PipeEnds p = NewPipe(0);
  int rfd = task_->fds().Install(p.read, false).value();
  auto file = k_->vfs().Open(ctx_, "/work/f", O_CREAT | O_RDWR, 0644);
  ASSERT_TRUE(file.ok());
  int ffd = task_->fds().Install(file.value(), true).value();
  std::string fd_dir = "/proc/self/fd/";
  EXPECT_EQ(k_->vfs().Readlink(ctx_, fd_dir + std::to_string(rfd)).value(), p.read->AnonName());
  EXPECT_EQ(k_->vfs().Readlink(ctx_, fd_dir + std::to_string(ffd)).value(), "/work/f");
  // Following the link of a file with a path opens that file.
  EXPECT_TRUE(k_->vfs().Open(ctx_, fd_dir + std::to_string(ffd), O_RDONLY, 0).ok());
  EXPECT_EQ(k_->vfs().Readlink(ctx_, fd_dir + "99").error(), ENOENT);
  // Magic links: opening fd/N of a pipe reopens the pipe (a new end on the same pipe).
  auto again = k_->vfs().Open(ctx_, fd_dir + std::to_string(rfd), O_RDONLY, 0);
  ASSERT_TRUE(again.ok());
  iovec wv{const_cast<char*>("via fd"), 6};
  ASSERT_TRUE(p.write->Write(nullptr, absl::MakeConstSpan(&wv, 1), -1).ok());
  char rb[16];
  iovec rv{rb, sizeof(rb)};
  ASSERT_EQ((*again)->Read(nullptr, absl::MakeConstSpan(&rv, 1), -1).value(), 6u);
  EXPECT_EQ(std::string(rb, 6), "via fd");
  // A file with a path is a magic link to that path; /proc/self is an ordinary symlink.
  vfs::MagicLink magic;
  auto flink = k_->vfs().Resolve(ctx_, fd_dir + std::to_string(ffd), /*follow=*/false);
  ASSERT_TRUE(flink.ok());
  ASSERT_TRUE(flink->inode()->GetMagicLink(&magic));
  EXPECT_TRUE(magic.path.valid());
  EXPECT_EQ(magic.file, nullptr);
  auto self = k_->vfs().Resolve(ctx_, "/proc/self", /*follow=*/false);
  EXPECT_FALSE(self->inode()->GetMagicLink(&magic));
  auto info = ReadFile("/proc/self/fdinfo/" + std::to_string(ffd));
  ASSERT_TRUE(info.ok());
  EXPECT_NE(info->find("flags:\t02000002\n"), std::string::npos) << *info;  // O_CLOEXEC|O_RDWR
  auto dir = k_->vfs().Open(ctx_, "/proc/self/fd", O_RDONLY | O_DIRECTORY, 0);
  ASSERT_TRUE(dir.ok());
  std::string names;
  ASSERT_TRUE((*dir)
                  ->IterateDir([&](const vfs::DirEntry& e, int64_t) {
                    names += e.name + ",";
                    return true;
                  })
                  .ok());
  EXPECT_EQ(names, ".,..," + std::to_string(rfd) + "," + std::to_string(ffd) + ",");
}

TEST_F(ProcfsTest, RootListingMountsAndSysctls) {
  absl::MutexLock l(&k_->mu);
  auto dir = k_->vfs().Open(ctx_, "/proc", O_RDONLY | O_DIRECTORY, 0);
  ASSERT_TRUE(dir.ok());
  std::string names;
  ASSERT_TRUE((*dir)
                  ->IterateDir([&](const vfs::DirEntry& e, int64_t) {
                    names += e.name + ",";
                    return true;
                  })
                  .ok());
  EXPECT_NE(names.find("," + Pid() + ","), std::string::npos) << names;
  EXPECT_NE(names.find(",self,"), std::string::npos);
  EXPECT_NE(names.find(",cpuinfo,"), std::string::npos);
  auto mounts = ReadFile("/proc/mounts");
  ASSERT_TRUE(mounts.ok());
  EXPECT_NE(mounts->find("proc /proc proc rw,noexec 0 0\n"), std::string::npos) << *mounts;
  EXPECT_NE(mounts->find("devtmpfs /dev devtmpfs rw 0 0\n"), std::string::npos);
  EXPECT_NE(ReadFile("/proc/self/mountinfo")->find(" / /proc rw,noexec - proc proc rw\n"),
            std::string::npos);
  EXPECT_EQ(ReadFile("/proc/sys/kernel/hostname").value(), "usentry\n");
  EXPECT_EQ(ReadFile("/proc/sys/kernel/pid_max").value(), "4194304\n");
  EXPECT_EQ(ReadFile("/proc/sys/kernel/random/boot_id").value(),
            ReadFile("/proc/sys/kernel/random/boot_id").value());
  EXPECT_NE(ReadFile("/proc/sys/kernel/random/uuid").value(),
            ReadFile("/proc/sys/kernel/random/uuid").value());
  EXPECT_NE(ReadFile("/proc/meminfo")->find("MemTotal:"), std::string::npos);
  EXPECT_NE(ReadFile("/proc/cpuinfo")->find("processor\t: 0\n"), std::string::npos);
  EXPECT_NE(ReadFile("/proc/stat")->find("\ncpu0 "), std::string::npos);
  EXPECT_EQ(k_->vfs().Open(ctx_, "/proc/self/status", O_WRONLY, 0).error(), EACCES);
  EXPECT_EQ(ReadFile("/proc/12345/status").error(), ENOENT);
  EXPECT_EQ(ReadFile("/proc/self/task/" + Pid() + "/comm").value(), "prog\n");
}

TEST_F(ProcfsTest, DevNodesThroughTheVfs) {
  absl::MutexLock l(&k_->mu);
  auto null = k_->vfs().Open(ctx_, "/dev/null", O_WRONLY | O_TRUNC, 0);
  ASSERT_TRUE(null.ok());
  iovec v{const_cast<char*>("x"), 1};
  EXPECT_EQ((*null)->Write(nullptr, absl::MakeConstSpan(&v, 1), -1).value(), 1u);
  EXPECT_EQ(k_->vfs().Readlink(ctx_, "/dev/stdout").value(), "/proc/self/fd/1");
  EXPECT_EQ(k_->vfs().Open(ctx_, "/dev/tty", O_RDWR, 0).error(), ENXIO);
  // /dev/shm is a writable tmpfs.
  EXPECT_TRUE(k_->vfs().Open(ctx_, "/dev/shm/sem.x", O_CREAT | O_RDWR, 0600).ok());
  EXPECT_NE(ReadFile("/proc/mounts")->find("tmpfs /dev/shm tmpfs rw 0 0\n"), std::string::npos);
  auto zero = k_->vfs().Open(ctx_, "/dev/zero", O_RDONLY, 0);
  ASSERT_TRUE(zero.ok());
  char buf[4] = {1, 1, 1, 1};
  iovec z{buf, sizeof(buf)};
  EXPECT_EQ((*zero)->Read(nullptr, absl::MakeConstSpan(&z, 1), -1).value(), 4u);
  EXPECT_EQ(buf[3], 0);
}

TEST_F(ProcfsTest, NetFilesShowTheSandboxLoopback) {
  absl::MutexLock l(&k_->mu);
  EXPECT_EQ(k_->vfs().Readlink(ctx_, "/proc/net").value(), "self/net");
  auto dev = ReadFile("/proc/net/dev");
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(*dev,
            "Inter-|   Receive                                                |  Transmit\n"
            " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets "
            "errs drop fifo colls carrier compressed\n"
            "    lo:       0       0    0    0    0     0          0         0        0       0  "
            "  0    0    0     0       0          0\n");
  EXPECT_EQ(ReadFile("/proc/self/net/dev").value(), *dev);
  EXPECT_EQ(ReadFile("/proc/" + Pid() + "/net/dev").value(), *dev);
  EXPECT_EQ(ReadFile("/proc/net/if_inet6").value(),
            "00000000000000000000000000000001 01 80 10 80       lo\n");
  auto route = ReadFile("/proc/net/route");
  ASSERT_TRUE(route.ok());
  EXPECT_EQ(route->size(), 128u);  // the header alone: no IPv4 main-table route
  EXPECT_EQ(route->rfind("Iface\tDestination\tGateway \tFlags", 0), 0u);
  auto tcp = ReadFile("/proc/net/tcp");
  EXPECT_EQ(tcp->size(), 150u);
  EXPECT_EQ(tcp->rfind("  sl  local_address rem_address   st tx_queue", 0), 0u);
  EXPECT_EQ(ReadFile("/proc/net/unix").value(),
            "Num       RefCount Protocol Flags    Type St Inode Path\n");
  for (const char* f : {"tcp6", "udp", "udp6", "netlink", "ipv6_route"}) {
    EXPECT_TRUE(ReadFile(std::string("/proc/net/") + f).ok()) << f;
  }
  EXPECT_EQ(ReadFile("/proc/sys/net/core/somaxconn").value(), "4096\n");
  EXPECT_EQ(ReadFile("/proc/sys/net/ipv4/ip_local_port_range").value(), "32768\t60999\n");
}

TEST(ProcfsNetTest, EgressFormats) {
  net::SandboxNetwork n;
  n.egress = true;
  net::Interfaces ifs(n);
  EXPECT_NE(GenerateNetDev(ifs).find("\n  eth0:       0       0"), std::string::npos);
  auto pad = [](std::string s) { return s + std::string(127 - s.size(), ' ') + "\n"; };
  std::string route = GenerateNetRoute(ifs);
  EXPECT_EQ(route.substr(128),
            pad("eth0\t00000000\t0202000A\t0003\t0\t0\t0\t00000000\t0\t0\t0") +
                pad("eth0\t0002000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0"));
  EXPECT_EQ(GenerateIfInet6(ifs),
            "00000000000000000000000000000001 01 80 10 80       lo\n"
            "fe8000000000000000000afffe00020f 02 40 20 80     eth0\n");
  std::string zero(32, '0');
  EXPECT_EQ(GenerateIpv6Route(ifs), "00000000000000000000000000000001 80 " + zero + " 00 " + zero +
                                        " 00000100 00000001 00000000 00000001       lo\n"
                                        "fe800000000000000000000000000000 40 " +
                                        zero + " 00 " + zero +
                                        " 00000100 00000001 00000000 00000001     eth0\n"
                                        "00000000000000000000000000000001 80 " +
                                        zero + " 00 " + zero +
                                        " 00000000 00000001 00000000 80200001       lo\n"
                                        "fe8000000000000000000afffe00020f 80 " +
                                        zero + " 00 " + zero +
                                        " 00000000 00000001 00000000 80200001     eth0\n"
                                        "ff000000000000000000000000000000 08 " +
                                        zero + " 00 " + zero +
                                        " 00000100 00000001 00000000 00000001     eth0\n");
}

// The SysV shm table in Linux's columns, and the limits the registry enforces.
TEST_F(ProcfsTest, SysvipcShmListsSegmentsAndSysctlsShowTheLimits) {
  absl::MutexLock l(&k_->mu);
  EXPECT_EQ(ReadFile("/proc/sysvipc/shm").value(),
            "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  "
            "cuid  cgid      atime      dtime      ctime                   rss                  "
            "swap\n");
  auto id = k_->shm().Get(task_->creds(), tg_->pid(), 0x1234, 5000, 01000 | 0640,
                          [](uint64_t) { return true; });
  ASSERT_TRUE(id.ok()) << id.error();
  auto table = ReadFile("/proc/sysvipc/shm");
  ASSERT_TRUE(table.ok());
  const std::string row = absl::StrFormat("%10d %10d  %4o %21u %5u %5u  %5u %5u %5u %5u %5u %10u",
                                          0x1234, *id, 0640, 5000, tg_->pid(), 0, 0, 0, 0, 0, 0, 0);
  EXPECT_NE(table->find("\n" + row + " "), std::string::npos) << *table;
  EXPECT_EQ(ReadFile("/proc/sys/kernel/shmmax").value(), absl::StrCat(kShmMax, "\n"));
  EXPECT_EQ(ReadFile("/proc/sys/kernel/shmall").value(), "18446744073692774399\n");
  EXPECT_EQ(ReadFile("/proc/sys/kernel/shmmni").value(), "4096\n");
  EXPECT_EQ(k_->vfs().Open(ctx_, "/proc/sys/kernel/shmmax", O_WRONLY, 0).error(), EACCES);
}

}  // namespace
}  // namespace usentry::sentry::fsimpl
