// Process bring-up of one sandbox: sentry clone with namespaces, id maps, the helpers'
// forks (gofer, netgate), signal forwarding, exit status.
#include "cli/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/phases.h"
#include "base/prefault.h"
#include "base/sched_slice.h"
#include "base/status_macros.h"

namespace usentry::cli {
namespace {

constexpr int kAllNamespaces =
    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
// Host ids the sentry becomes when usentry runs as root: the sandbox's root must not be
// the host's.
constexpr uid_t kNobodyUid = 65534;
constexpr gid_t kNogroupGid = 65534;
// The sentry's main stack (clone() needs one; it is the sentry's for its whole life).
constexpr size_t kSentryStackSize = 8 << 20;
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};

const char* ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name ? name : "unknown errno";
}

void Warn(SandboxResult& result, std::string message) {
  fprintf(stderr, "usentry: warning: %s\n", message.c_str());
  result.warnings.push_back(std::move(message));
}

// --- signal forwarding (async-signal-safe state) ---
volatile sig_atomic_t g_sentry_pid = 0;
volatile sig_atomic_t g_signals_forwarded = 0;

void ForwardSignal(int sig) {
  pid_t pid = g_sentry_pid;
  if (pid <= 0) return;
  // The sentry (PID 1 of its namespace) only receives signals it handles; it treats the
  // first as "stop the app". A second one means the user insists.
  int forwarded = g_signals_forwarded;
  g_signals_forwarded = forwarded + 1;
  kill(pid, forwarded == 0 ? sig : SIGKILL);
}

sigset_t ForwardedSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kForwardedSignals) sigaddset(&set, sig);
  return set;
}

// Children start with the CLI's blocked mask; give them default dispositions and an
// empty mask. `ignore_terminal` keeps the gofer alive through a ^C meant for the app.
void ResetSignalsInChild(bool ignore_terminal) {
  for (int sig : kForwardedSignals) {
    signal(sig, ignore_terminal && sig != SIGTERM ? SIG_IGN : SIG_DFL);
  }
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
}

// The socketpair and the pipes must not land on 0-2, and the app's stdio must exist.
void EnsureStdioOpen() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      int null_fd = open("/dev/null", O_RDWR);  // lowest free number: `fd`
      if (null_fd >= 0 && null_fd != fd) close(null_fd);
    }
  }
}

// Leaves exactly 0-2 and the FDs in `keep` open, moved to 3, 4, ... in order (each
// *keep[i] is updated; the moved FDs are not close-on-exec). Returns false on failure.
bool KeepOnlyStdioAnd(std::vector<int*> keep) {
  // Copy out of the way first, so moving one FD cannot overwrite another that sits on
  // its new number.
  std::vector<int> high;
  for (int* fd : keep) {
    int h = fcntl(*fd, F_DUPFD_CLOEXEC, 64);
    if (h < 0) return false;
    high.push_back(h);
  }
  int next = 3;
  for (size_t i = 0; i < high.size(); ++i) {
    if (dup2(high[i], next) < 0) return false;
    *keep[i] = next++;
  }
  return close_range(next, ~0U, 0) == 0;
}

[[noreturn]] void ChildFail(const char* what) {
  fprintf(stderr, "usentry: %s: %s\n", what, strerror(errno));
  _exit(125);
}

// Writes one /proc/PID/... file.
absl::Status WriteProcFile(pid_t pid, const char* name, const std::string& content) {
  std::string path = absl::StrCat("/proc/", pid, "/", name);
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  if (write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    return ErrnoStatus(absl::StrCat("write(", path, ", \"", content, "\")"));
  }
  return absl::OkStatus();
}

// --- gofer ---
// The sentry's network and IPC namespaces, for the gofers to join (invalid: make new ones).
struct SentryNamespaceFds {
  UniqueFd net;
  UniqueFd ipc;
};

// As root, the sentry's network and IPC namespaces (its clone made both): the gofers
// join them rather than make their own. A new network namespace costs this VM ~1 ms of
// CPU to set up and as much again in a kworker to tear down, beside the sentry's start.
// Not as another user: the sentry's namespaces belong to its user namespace, which the
// gofer cannot join without its files' owners being seen through the sentry's id map.
SentryNamespaceFds OpenSentryNamespaces(pid_t sentry, int granted) {
  SentryNamespaceFds ns;
  constexpr int kBoth = CLONE_NEWNET | CLONE_NEWIPC;
  if (geteuid() != 0 || (granted & kBoth) != kBoth) return ns;
  ns.net = UniqueFd(open(absl::StrCat("/proc/", sentry, "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
  ns.ipc = UniqueFd(open(absl::StrCat("/proc/", sentry, "/ns/ipc").c_str(), O_RDONLY | O_CLOEXEC));
  return ns;
}

// Takes the gofer out of the host's network and IPC namespaces: into the sentry's when
// `ns` has them, else into new ones (in a user namespace of its own when not root, to
// own them, with our ids mapped to themselves so host file access checks are unchanged).
void IsolateGofer(const SentryNamespaceFds& ns) {
  if (ns.net.valid() && ns.ipc.valid() && setns(ns.net.get(), CLONE_NEWNET) == 0 &&
      setns(ns.ipc.get(), CLONE_NEWIPC) == 0) {
    return;
  }
  uid_t uid = geteuid();
  gid_t gid = getegid();
  int flags = CLONE_NEWNET | CLONE_NEWIPC | (uid == 0 ? 0 : CLONE_NEWUSER);
  if (unshare(flags) != 0) {
    fprintf(stderr,
            "usentry: warning: gofer network isolation unavailable (unshare(CLONE_NEWNET|"
            "CLONE_NEWIPC): %s); the gofer keeps the host network namespace\n",
            ErrnoName(errno));
  } else if (uid != 0) {
    pid_t self = getpid();
    absl::Status st = WriteProcFile(self, "setgroups", "deny");
    if (st.ok()) st = WriteProcFile(self, "uid_map", absl::StrCat(uid, " ", uid, " 1\n"));
    if (st.ok()) st = WriteProcFile(self, "gid_map", absl::StrCat(gid, " ", gid, " 1\n"));
    if (!st.ok()) {
      fprintf(stderr, "usentry: gofer: %s\n", std::string(st.message()).c_str());
      _exit(125);
    }
  }
}

pid_t StartGofer(const SandboxOptions& options, UniqueFd sock, const GoferMain& gofer_main,
                 const SentryNamespaceFds& ns) {
  pid_t parent = getpid();
  fflush(nullptr);
  pid_t pid = fork();
  if (pid != 0) return pid;  // parent (or -1)

  // Named for ps, top and perf, as the stubs are ("usentry-stub").
  prctl(PR_SET_NAME, "usentry-gofer");
  ResetSignalsInChild(/*ignore_terminal=*/true);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildFail("gofer: prctl(PR_SET_PDEATHSIG)");
  if (getppid() != parent) _exit(125);  // the CLI died before PDEATHSIG was armed
  // The gofer needs stderr for its diagnostics; stdin/stdout belong to the app.
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0) ChildFail("gofer: /dev/null");
  if (options.isolate_gofer) IsolateGofer(ns);
  PrefaultReadOnlyImage();  // before its filter, which may not allow madvise
  int fd = sock.release();
  if (!KeepOnlyStdioAnd({&fd})) ChildFail("gofer: closing inherited FDs");
  int rc = gofer_main(UniqueFd(fd));
  fflush(nullptr);
  _exit(rc);
}

// --- netgate ---
pid_t StartNetgate(UniqueFd sock, int net_log_fd, const NetgateMain& netgate_main) {
  pid_t parent = getpid();
  fflush(nullptr);
  pid_t pid = fork();
  if (pid != 0) return pid;  // parent (or -1)

  prctl(PR_SET_NAME, "usentry-netgate");
  ResetSignalsInChild(/*ignore_terminal=*/true);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildFail("netgate: prctl(PR_SET_PDEATHSIG)");
  if (getppid() != parent) _exit(125);
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0) {
    ChildFail("netgate: /dev/null");
  }
  int fd = sock.release();
  std::vector<int*> keep = {&fd};
  if (net_log_fd >= 0) keep.push_back(&net_log_fd);
  if (!KeepOnlyStdioAnd(keep)) ChildFail("netgate: closing inherited FDs");
  // The caller's network namespace is the point of netgate; IPC is not needed.
  (void)unshare(CLONE_NEWIPC);
  PrefaultReadOnlyImage();
  int rc = netgate_main(UniqueFd(fd), net_log_fd);
  fflush(nullptr);
  _exit(rc);
}

// --- sentry ---
struct SentryChildArgs {
  const SentryMain* main;
  const std::function<void()>* early;
  int sock;
  int sync_read;
  // The CLI's end of the sync pipe; the CLI keeps it open until the sentry exits, so a
  // hangup on sync_read means the CLI died.
  int sync_write;
  int namespaces;
  bool root_to_nobody;
  int audit_fd;
  int netgate_fd;
  int net_log_fd;
  int mounts_gofer_fd;
};

int SentryChild(void* raw) {
  auto* args = static_cast<SentryChildArgs*>(raw);
  prctl(PR_SET_NAME, "usentry-sentry");  // its threads inherit the name
  Phase("sentry-start");
  ResetSignalsInChild(/*ignore_terminal=*/false);
  close(args->sync_write);
  // The CLI owns the sandbox: if it dies, the sentry (and with it every stub) dies.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildFail("sentry: prctl(PR_SET_PDEATHSIG)");
  // Before the early work starts threads: closing FDs under them would pull their own
  // (memfds, the seccomp export) away mid-use, or hand their numbers to our socket.
  std::vector<int*> keep = {&args->sock, &args->sync_read};
  for (int* fd : {&args->audit_fd, &args->netgate_fd, &args->net_log_fd, &args->mounts_gofer_fd}) {
    if (*fd >= 0) keep.push_back(fd);
  }
  if (!KeepOnlyStdioAnd(keep)) ChildFail("sentry: closing inherited FDs");
  // The binary's code and constants are populated (PrefaultReadOnlyImage, ~0.25 ms) by
  // the early work's first thread when there is early work, beside this thread's own
  // start; here otherwise, while the CLI writes our id maps.
  if (*args->early) {
    (*args->early)();
  } else {
    PrefaultReadOnlyImage();
  }
  char go = 0;
  ssize_t n;
  do {
    n = read(args->sync_read, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) _exit(125);  // the CLI failed to set us up and already reported why

  if (args->namespaces & CLONE_NEWUSER) {
    // Become the namespace's root. When the host caller is root, the map says that is
    // host nobody, and host root's supplementary groups must go first. Raw syscalls, for
    // this thread only: glibc's wrappers stop every thread with a signal to change its
    // credentials too, and the early threads were each woken from their work three times
    // (0.3-0.8 ms of every start). Those threads run fixed code: the prewarm thread is
    // joined before confinement, and the calibration thread filters itself (it may only
    // read files, and once the sentry has pivoted to its empty root there are none).
    // Every thread started from here on inherits the new credentials.
    if (args->root_to_nobody && syscall(SYS_setgroups, 0, nullptr) != 0) {
      ChildFail("sentry: setgroups(0)");
    }
    if (syscall(SYS_setresgid, 0, 0, 0) != 0) ChildFail("sentry: setresgid(0, 0, 0)");
    if (syscall(SYS_setresuid, 0, 0, 0) != 0) ChildFail("sentry: setresuid(0, 0, 0)");
    // Changing the effective uid (host root -> host nobody) clears the parent-death
    // signal; arm it again, then make sure the CLI did not die in between (in our own
    // PID namespace getppid() cannot tell, the pipe's hangup can).
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildFail("sentry: prctl(PR_SET_PDEATHSIG)");
    pollfd cli{args->sync_read, POLLIN, 0};
    if (poll(&cli, 1, 0) != 0 && (cli.revents & POLLHUP)) _exit(125);
  }
  close(args->sync_read);
  Phase("sentry-credentials");
  SentryProcess process;
  process.namespaces = args->namespaces;
  process.gofer_fd = args->sock;
  process.audit_fd = args->audit_fd;
  process.netgate_fd = args->netgate_fd;
  process.mounts_gofer_fd = args->mounts_gofer_fd;
  process.net_log_fd = args->net_log_fd;
  int rc = (*args->main)(process);
  fflush(nullptr);
  _exit(rc);
}

// clone() with `namespaces`; on failure sets errno and returns -1.
pid_t CloneSentry(SentryChildArgs& args, int namespaces, const SandboxOptions& options,
                  void* stack_top) {
  if (namespaces & options.refused_namespaces) {
    errno = EPERM;
    return -1;
  }
  args.namespaces = namespaces;
  fflush(nullptr);
  return clone(SentryChild, stack_top, namespaces | SIGCHLD, &args);
}

// Clones the sentry with as many namespaces as the host grants. When the full set is
// refused, the smallest set of namespaces whose removal makes clone succeed is the one
// missing (refused clones create nothing, so trying all 63 subsets is cheap); among
// equally small sets, the user namespace (the one most often unavailable) goes first.
pid_t CloneSentryWithFallback(SentryChildArgs& args, const SandboxOptions& options, void* stack_top,
                              SandboxResult& result, int& granted) {
  constexpr int kCount = std::size(kSentryNamespaces);
  pid_t pid = CloneSentry(args, kAllNamespaces, options, stack_top);
  if (pid > 0) {
    granted = kAllNamespaces;
    return pid;
  }
  int err = errno;
  for (int size = 1; size <= kCount; ++size) {
    for (unsigned drop = 1; drop < (1u << kCount); ++drop) {
      if (__builtin_popcount(drop) != size) continue;
      int wanted = kAllNamespaces;
      for (int i = 0; i < kCount; ++i) {
        if (drop & (1u << i)) wanted &= ~kSentryNamespaces[i].flag;
      }
      pid = CloneSentry(args, wanted, options, stack_top);
      if (pid < 0) continue;
      for (int i = 0; i < kCount; ++i) {
        if (drop & (1u << i)) {
          Warn(result, absl::StrCat(kSentryNamespaces[i].name, " namespaces unavailable (clone: ",
                                    ErrnoName(err), "); running without them"));
        }
      }
      granted = wanted;
      return pid;
    }
  }
  return -1;
}

absl::Status WriteIdMaps(pid_t pid, bool root_to_nobody) {
  uid_t uid = root_to_nobody ? kNobodyUid : geteuid();
  gid_t gid = root_to_nobody ? kNogroupGid : getegid();
  // An unprivileged map writer must deny setgroups; host root keeps it allowed so the
  // sentry can drop root's supplementary groups (its seccomp filter forbids setgroups
  // afterwards anyway).
  RETURN_IF_ERROR(WriteProcFile(pid, "setgroups", root_to_nobody ? "allow" : "deny"));
  RETURN_IF_ERROR(WriteProcFile(pid, "uid_map", absl::StrCat("0 ", uid, " 1\n")));
  RETURN_IF_ERROR(WriteProcFile(pid, "gid_map", absl::StrCat("0 ", gid, " 1\n")));
  return absl::OkStatus();
}

int WaitFor(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, __WALL) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

// WaitFor, but SIGKILLs `pid` at `deadline` (then sets *killed).
int WaitUntil(pid_t pid, absl::Time deadline, bool* killed) {
  if (deadline == absl::InfiniteFuture()) return WaitFor(pid);
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd.valid()) return WaitFor(pid);  // pre-5.3 kernel: no backstop
  while (true) {
    int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (ms <= 0) {
      kill(pid, SIGKILL);
      *killed = true;
      return WaitFor(pid);
    }
    pollfd p{pidfd.get(), POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, INT32_MAX)));
    if (n > 0) return WaitFor(pid);
    if (n < 0 && errno != EINTR) return WaitFor(pid);
  }
}

void KillAndReap(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  WaitFor(pid);
}

// Restores the CLI's signal state when RunSandbox returns (tests call it repeatedly).
class SignalForwarding {
 public:
  SignalForwarding() {
    sigset_t set = ForwardedSet();
    sigprocmask(SIG_BLOCK, &set, &old_mask_);
    struct sigaction sa = {};
    sa.sa_handler = ForwardSignal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i) {
      sigaction(kForwardedSignals[i], &sa, &old_actions_[i]);
    }
  }
  // From here on a signal (on any thread) is forwarded to `sentry`.
  void SetSentry(pid_t sentry) {
    g_signals_forwarded = 0;
    g_sentry_pid = sentry;
  }
  // Signals that arrived on this thread while children were being created come now.
  void Start() {
    sigset_t set = ForwardedSet();
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
  }
  ~SignalForwarding() {
    sigset_t set = ForwardedSet();
    sigprocmask(SIG_BLOCK, &set, nullptr);
    g_sentry_pid = 0;
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i) {
      sigaction(kForwardedSignals[i], &old_actions_[i], nullptr);
    }
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }

 private:
  sigset_t old_mask_;
  struct sigaction old_actions_[std::size(kForwardedSignals)];
};

}  // namespace

absl::StatusOr<SandboxResult> RunSandbox(const SandboxOptions& options, const GoferMain& gofer_main,
                                         const SentryMain& sentry_main,
                                         const NetgateMain& netgate_main,
                                         const GoferMain& mounts_gofer_main) {
  SandboxResult result;
  EnsureStdioOpen();
  SignalForwarding forwarding;
  SentryNamespaceFds ns;  // filled once the sentry exists, before the gofers start

  // The helpers, each on a SOCK_SEQPACKET socketpair whose other end goes to the
  // sentry; a helper the run does not have keeps pid -1 and sentry end -1.
  struct Helper {
    const char* name;
    std::function<pid_t(UniqueFd)> start;
    pid_t pid = -1;
    UniqueFd sentry_end;
  };
  Helper helpers[] = {
      {"gofer", [&](UniqueFd fd) { return StartGofer(options, std::move(fd), gofer_main, ns); }},
      {"second gofer", mounts_gofer_main ? std::function<pid_t(UniqueFd)>([&](UniqueFd fd) {
         return StartGofer(options, std::move(fd), mounts_gofer_main, ns);
       })
                                         : nullptr},
      {"netgate", netgate_main ? std::function<pid_t(UniqueFd)>([&](UniqueFd fd) {
         return StartNetgate(std::move(fd), options.net_log_fd, netgate_main);
       })
                               : nullptr},
  };
  // Everything below that gives up kills every helper started so far.
  auto kill_helpers = [&] {
    for (Helper& h : helpers) KillAndReap(h.pid);
  };
  // The sockets now, the helpers once the sentry runs: a helper's own start-up (a network
  // namespace, its filter, its trees) then overlaps the sentry's, which first asks it
  // something milliseconds later (its requests wait in the socket). Forking them first
  // put their start on the sentry's path: 0.1 ms in most runs, 1-3 ms in one of three.
  std::vector<UniqueFd> helper_ends(std::size(helpers));
  for (size_t i = 0; i < std::size(helpers); ++i) {
    if (!helpers[i].start) continue;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      return ErrnoStatus(
          absl::StrCat("socketpair(AF_UNIX, SOCK_SEQPACKET) for the ", helpers[i].name));
    }
    helper_ends[i] = UniqueFd(sv[0]);
    helpers[i].sentry_end = UniqueFd(sv[1]);
  }
  UniqueFd& sentry_end = helpers[0].sentry_end;
  UniqueFd& mounts_sentry_end = helpers[1].sentry_end;
  UniqueFd& netgate_sentry_end = helpers[2].sentry_end;

  int sync[2];
  if (pipe2(sync, O_CLOEXEC) != 0) {
    kill_helpers();
    return ErrnoStatus("pipe2(sentry sync)");
  }
  UniqueFd sync_read(sync[0]);
  UniqueFd sync_write(sync[1]);

  void* stack = mmap(nullptr, kSentryStackSize, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (stack == MAP_FAILED) {
    kill_helpers();
    return ErrnoStatus(absl::StrCat("mmap(sentry stack, ", kSentryStackSize, ")"));
  }
  // Before the sentry and the helpers exist: they, the zygote and every stub inherit it.
  (void)RequestShortSchedulerSlice();
  bool root_to_nobody = geteuid() == 0;
  SentryChildArgs args{&sentry_main,       &options.sentry_early,  sentry_end.get(),
                       sync_read.get(),    sync_write.get(),       0,
                       root_to_nobody,     options.audit_fd,       netgate_sentry_end.get(),
                       options.net_log_fd, mounts_sentry_end.get()};
  int granted = 0;
  pid_t sentry = CloneSentryWithFallback(
      args, options, static_cast<char*>(stack) + kSentryStackSize, result, granted);
  int clone_errno = errno;
  munmap(stack, kSentryStackSize);  // the child has its own copy
  Phase("sentry-cloned");
  if (sentry < 0) {
    kill_helpers();
    return ErrnoStatus("clone(sentry, no namespaces)", clone_errno);
  }
  forwarding.SetSentry(sentry);
  sentry_end.reset();
  netgate_sentry_end.reset();
  mounts_sentry_end.reset();
  sync_read.reset();

  if (options.isolate_gofer) ns = OpenSentryNamespaces(sentry, granted);
  if (granted & CLONE_NEWUSER) {
    absl::Status st = WriteIdMaps(sentry, root_to_nobody);
    if (!st.ok()) {
      KillAndReap(sentry);
      kill_helpers();
      return st;
    }
  }
  char go = 1;
  Phase("id-maps-written");
  if (write(sync_write.get(), &go, 1) != 1) {
    absl::Status st = ErrnoStatus("write(sentry sync pipe)");
    KillAndReap(sentry);
    kill_helpers();
    return st;
  }
  for (size_t i = 0; i < std::size(helpers); ++i) {
    Helper& h = helpers[i];
    if (!h.start) continue;
    h.pid = h.start(std::move(helper_ends[i]));
    if (h.pid < 0) {
      absl::Status st = ErrnoStatus(absl::StrCat("fork(", h.name, ")"));
      KillAndReap(sentry);
      kill_helpers();
      return st;
    }
  }

  ns = {};  // the gofers hold them now
  Phase("helpers-started");
  forwarding.Start();
  absl::Time deadline = options.kill_after == absl::InfiniteDuration()
                            ? absl::InfiniteFuture()
                            : absl::Now() + options.kill_after;
  int status = WaitUntil(sentry, deadline, &result.killed_at_deadline);
  Phase("sentry-reaped");
  sync_write.reset();
  if (status < 0) {
    absl::Status st = ErrnoStatus(absl::StrCat("waitpid(sentry ", sentry, ")"));
    kill_helpers();
    return st;
  }
  kill_helpers();
  if (result.killed_at_deadline) {
    fprintf(stderr, "usentry: timeout: the sandbox did not stop by itself; killed\n");
    result.exit_code = 124;
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else {
    result.sentry_crashed = true;
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    fprintf(stderr, "usentry: sentry crashed (signal %d)\n", sig);
    result.exit_code = 125;
  }
  return result;
}

}  // namespace usentry::cli
