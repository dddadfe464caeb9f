// Host process and kernel attacks, one report line each. Every call here would give
// a real process power over the host (or the kernel) if it reached the host kernel;
// under the sandbox each must fail. Arguments are chosen so that even a call that did
// reach the host would change nothing outside paths this program creates itself
// (wrong reboot magic, an invalid kexec arch, a nonexistent module).
//
//   kernel_attacks HOST_PID_SIGNAL0 HOST_PID_SIGKILL
// HOST_PID_SIGNAL0 gets signal 0 (the test runner itself: probe only); HOST_PID_SIGKILL
// gets SIGKILL (a sacrificial host process the test watches). Ends with "done".
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/io_uring.h>
#include <linux/kexec.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: kernel_attacks HOST_PID_SIGNAL0 HOST_PID_SIGKILL\n");
    return 2;
  }
  const pid_t probe_pid = atoi(argv[1]);
  const pid_t victim_pid = atoi(argv[2]);
  printf("pid=%d ppid=%d\n", getpid(), getppid());

  // Other processes' memory and control.
  Report("ptrace_attach_1", ptrace(PTRACE_ATTACH, 1, 0, 0));
  Report("ptrace_attach_ppid", ptrace(PTRACE_ATTACH, getppid(), 0, 0));
  Report("ptrace_seize_host", ptrace(PTRACE_SEIZE, victim_pid, 0, 0));
  char buf[64];
  struct iovec local = {buf, sizeof(buf)};
  struct iovec remote = {(void*)0x400000, sizeof(buf)};
  Report("process_vm_readv_1", process_vm_readv(1, &local, 1, &remote, 1, 0));
  Report("process_vm_writev_1", process_vm_writev(1, &local, 1, &remote, 1, 0));
  Report("kill_host_pid_sig0", kill(probe_pid, 0));
  Report("kill_host_pid_sigkill", kill(victim_pid, SIGKILL));
  Report("pidfd_open_host", syscall(SYS_pidfd_open, victim_pid, 0));

  // Namespaces and the mount table.
  mkdir("/tmp/hostile-mnt", 0755);
  mkdir("/tmp/hostile-mnt/old", 0755);
  Report("mount_tmpfs", mount("none", "/tmp/hostile-mnt", "tmpfs", 0, NULL));
  Report("mount_bind_root", mount("/", "/tmp/hostile-mnt", NULL, MS_BIND | MS_REC, NULL));
  Report("umount2", umount2("/tmp/hostile-mnt", MNT_DETACH));
  Report("umount2_proc", umount2("/proc", MNT_DETACH));
  Report("unshare_user", unshare(CLONE_NEWUSER));
  Report("unshare_mount", unshare(CLONE_NEWNS));
  int nsfd = open("/proc/self/ns/mnt", O_RDONLY);
  Report("open_ns_mnt", nsfd);
  int rootfd = open("/", O_RDONLY | O_DIRECTORY);
  Report("setns", setns(nsfd >= 0 ? nsfd : rootfd, 0));
  Report("pivot_root", syscall(SYS_pivot_root, "/tmp/hostile-mnt", "/tmp/hostile-mnt/old"));
  Report("chroot", chroot("/tmp/hostile-mnt"));
  Report("open_by_handle_at", syscall(SYS_open_by_handle_at, rootfd, buf, O_RDONLY));

  // Kernel attack surface.
  union bpf_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  Report("bpf_map_create", syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr)));
  struct io_uring_params params;
  memset(&params, 0, sizeof(params));
  Report("io_uring_setup", syscall(SYS_io_uring_setup, 8, &params));
  Report("userfaultfd", syscall(SYS_userfaultfd, 0));
  struct perf_event_attr pe;
  memset(&pe, 0, sizeof(pe));
  pe.type = PERF_TYPE_SOFTWARE;
  pe.size = sizeof(pe);
  pe.config = PERF_COUNT_SW_CPU_CLOCK;
  Report("perf_event_open", syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
  Report("keyctl", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
  Report("add_key",
         syscall(SYS_add_key, "user", "usentry-hostile", "x", 1, KEY_SPEC_PROCESS_KEYRING));
  Report("init_module", syscall(SYS_init_module, NULL, 0, ""));
  Report("delete_module", syscall(SYS_delete_module, "usentry_hostile_none", O_NONBLOCK));
  // An arch this kernel cannot load: EINVAL even if it reached a root host kernel.
  Report("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, KEXEC_ARCH_MIPS));
  // Wrong second magic: EINVAL even on a root host, never a reboot.
  Report("reboot",
         syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, 0x12345678, LINUX_REBOOT_CMD_POWER_OFF, NULL));
  Report("iopl", syscall(SYS_iopl, 3));
  Report("ioperm", syscall(SYS_ioperm, 0x80, 1, 1));
  // A 32-bit code segment would let app code leave 64-bit mode without a trap.
  Report("modify_ldt", syscall(SYS_modify_ldt, 0, buf, sizeof(buf)));

  // Host kernel memory, I/O ports and log through device nodes: absent or refused.
  Report("open_dev_mem", open("/dev/mem", O_RDWR));
  Report("open_dev_kmem", open("/dev/kmem", O_RDWR));
  Report("open_dev_port", open("/dev/port", O_RDWR));
  Report("open_dev_kmsg", open("/dev/kmsg", O_RDWR));
  Report("mknod_dev_mem", mknod("/tmp/hostile-mem", S_IFCHR | 0600, makedev(1, 1)));
  Report("open_made_dev_mem", open("/tmp/hostile-mem", O_RDWR));
  // TIOCSTI pushes input into a terminal another program (the user's shell) reads.
  char c = 'x';
  Report("tiocsti_stdin", ioctl(0, TIOCSTI, &c));
  Report("tiocsti_stderr", ioctl(2, TIOCSTI, &c));
  int tty = open("/dev/tty", O_RDWR | O_NOCTTY);
  Report("open_dev_tty", tty);
  if (tty >= 0) Report("tiocsti_dev_tty", ioctl(tty, TIOCSTI, &c));

  // Raw network access (created only; nothing is ever sent). A TCP socket is the
  // sandbox's own (its loopback); raw, ping and packet sockets are refused.
  Report("socket_inet_raw", socket(AF_INET, SOCK_RAW, IPPROTO_RAW));
  Report("socket_inet6_raw", socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6));
  Report("socket_ping", socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP));
  Report("socket_packet", socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)));
  Report("socket_inet_stream", socket(AF_INET, SOCK_STREAM, 0));

  // kill(-1, SIGKILL): inside the sandbox it may reach only the sandbox's processes
  // (a child of ours, never us nor init), nothing on the host.
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  Report("kill_minus_1", kill(-1, SIGKILL));
  int status = 0;
  if (waitpid(child, &status, 0) == child) {
    printf("kill_minus_1_child=%s %d\n", WIFSIGNALED(status) ? "signal" : "exit",
           WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  }
  printf("done\n");
  return 0;
}
