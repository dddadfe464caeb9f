// Entry point of the sentry process, called by the CLI in the freshly created (and
// already confined) sentry process.
#ifndef USENTRY_SENTRY_SENTRY_MAIN_H_
#define USENTRY_SENTRY_SENTRY_MAIN_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "platform/platform.h"
#include "sentry/audit/audit_log.h"
#include "sentry/mm/memory_file.h"
#include "sentry/policy/policy.h"

namespace usentry::sentry {

// A --mount: gofer tree `tree` ("mount0", "mount1"...) shown at `target` in the sandbox.
struct MountSpec {
  std::string tree;
  std::string target;
  bool read_only = true;
};

struct SentryConfig {
  std::vector<std::string> argv;  // argv[0] is the program as the user named it
  std::vector<std::string> envp;  // the complete, already filtered environment
  std::string workdir = "/workspace";
  std::vector<MountSpec> mounts;
  std::string platform = "auto";  // "systrap", "ptrace", or "auto" (systrap, else ptrace)
  bool strace = false;
  bool report_unsupported = false;
  bool syscall_patching = true;  // platform::PlatformOptions::syscall_patching
  std::string hostname = "usentry";
  uint32_t uid = 0;  // emulated identity of the first task
  uint32_t gid = 0;
  std::string home;  // its HOME: made for it when the view lacks it
  // The host identity the gofer opens files with (the caller's): owners of --mount trees
  // are shown swapped with the program's (sentry/fsimpl/gofer_fs.h, OwnerSwap).
  uint32_t host_uid = 0;
  uint32_t host_gid = 0;
  int gofer_fd = -1;  // the sentry's end of the gofer socketpair
  // The second gofer's, serving the --mount trees with the caller's host permissions
  // while the first serves the default view as host nobody; -1: the first serves all.
  int mounts_gofer_fd = -1;
  // The sentry's end of the netgate socketpair; -1 when the policy allows no egress.
  int netgate_fd = -1;
  policy::NetPolicy net;
  int stdio_fds[3] = {0, 1, 2};             // host FDs the app's 0/1/2 are bound to
  uint64_t tmpfs_limit_bytes = 1ull << 30;  // writable layer cap
  policy::Limits limits;                    // enforced by the kernel (sentry/kernel)
  policy::ExecRules exec_rules;
  // The audit stream (shared with the CLI's own records) and what run_start says.
  std::shared_ptr<const audit::AuditLog> audit = std::make_shared<audit::AuditLog>(-1, "", false);
  // --net-log: the network decisions the sentry makes itself (netgate logs its own).
  std::shared_ptr<const audit::AuditLog> net_log = std::make_shared<audit::AuditLog>(-1, "", false);
  // Sandbox paths (glob patterns) of the host secrets the gofer hides: opening one is
  // ENOENT and a "denied" record with reason "masked secret".
  std::vector<std::string> masked_paths;
  std::string policy_digest;
  std::string policy_json;  // Policy::ToJson()
  // Defense layers in force and missing on this host (run_start's "layers").
  struct Layer {
    std::string name;
    bool applied = false;
    std::string detail;
  };
  std::vector<Layer> layers;
  // Called just before the first program is read and loaded: the CLI joins its start-up
  // threads there (confine::FinishCalibration).
  std::function<void()> before_app;
};

// What the sentry takes from the host before it confines itself: the memory file and
// the platform. The systrap platform forks its zygote here, so that stubs do not
// inherit the sentry's seccomp filter (whose KILL would override the stubs' TRAP).
struct SentryHost {
  std::unique_ptr<mm::MemoryFile> memory_file;
  std::unique_ptr<platform::Platform> platform;
};
// For platform "auto", a host without systrap support gets ptrace and a one-line
// notice on stderr. Errors name what failed.
absl::StatusOr<SentryHost> PrepareSentry(const SentryConfig& config);

// Runs the sandboxed program to completion and returns the usentry exit code: the app's
// exit status, 128+N if it died of signal N, 126 (not executable), 127 (not found),
// 125 (sentry setup failed; a one-line reason was printed on stderr).
int RunSentry(const SentryConfig& config, SentryHost host);

}  // namespace usentry::sentry

#endif  // USENTRY_SENTRY_SENTRY_MAIN_H_
