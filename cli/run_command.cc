// `usentry run`: gofer and sentry configuration, and what runs in each child process.
#include "cli/run_command.h"

#include <sched.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/sandbox.h"
#include "platform/platform.h"
#include "sentry/confine/confine.h"

namespace usentry::cli {

gofer::GoferConfig MakeGoferConfig(const RunOptions& options) {
  gofer::GoferConfig config;
  config.trees.push_back(options.rootfs ? gofer::RootfsTree(*options.rootfs)
                                        : gofer::DefaultRootTree());
  for (size_t i = 0; i < options.mounts.size(); ++i) {
    const MountFlag& m = options.mounts[i];
    config.trees.push_back(gofer::MountTree(static_cast<int>(i), m.source, m.read_only));
  }
  return config;
}

sentry::SentryConfig MakeSentryConfig(const RunOptions& options) {
  sentry::SentryConfig config;
  config.argv = options.argv;
  config.envp = options.env;
  config.workdir = options.workdir;
  for (size_t i = 0; i < options.mounts.size(); ++i) {
    const MountFlag& m = options.mounts[i];
    config.mounts.push_back({absl::StrCat("mount", i), m.target, m.read_only});
  }
  config.platform = options.platform;
  config.strace = options.strace;
  config.report_unsupported = options.report_unsupported;
  config.syscall_patching = options.syscall_patching;
  return config;
}

namespace {

// Body of the gofer child.
int ServeGofer(const gofer::GoferConfig& config, UniqueFd sock) {
  absl::Status st = gofer::Serve(config, std::move(sock));
  if (!st.ok()) {
    fprintf(stderr, "usentry: gofer: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  return 0;
}

// In the sentry child: start-up work that needs no decision yet, on threads started
// before the child waits for its id maps (SandboxOptions::sentry_early) and joined
// before it confines itself: Abseil's clock calibration (mostly sleeping) on one, the
// stub code and the seccomp program (CPU) on the other.
std::vector<std::thread>& SentryEarlyThreads() {
  static auto* threads = new std::vector<std::thread>;
  return *threads;
}

void StartSentryEarlyWork(const std::string& platform) {
  SentryEarlyThreads().push_back(sentry::confine::StartWarmUp());
  SentryEarlyThreads().emplace_back([platform] {
    platform::PrewarmPlatform(platform);
    sentry::confine::PrebuildFilter();
  });
}

// Body of the sentry child: host resources, confine, then run the kernel.
int ConfineAndRunSentry(sentry::SentryConfig config, const SentryProcess& process) {
  // Before confinement: the platform's own processes must not inherit the sentry's filter.
  absl::StatusOr<sentry::SentryHost> host = sentry::PrepareSentry(config);
  for (std::thread& t : SentryEarlyThreads()) t.join();
  if (!host.ok()) {
    fprintf(stderr, "usentry: %s\n", std::string(host.status().message()).c_str());
    return 125;
  }
  sentry::confine::ConfineOptions confine;
  confine.own_mount_namespace = (process.namespaces & CLONE_NEWNS) != 0;
  confine.allow_ptrace = host->platform->Name() == "ptrace";
  absl::StatusOr<sentry::confine::ConfineReport> report = sentry::confine::ConfineSentry(confine);
  if (!report.ok()) {
    fprintf(stderr, "usentry: confining the sentry: %s\n",
            std::string(report.status().message()).c_str());
    return 125;
  }
  for (const std::string& missing : report->Missing()) {
    fprintf(stderr, "usentry: warning: sentry layer %s unavailable; running without it\n",
            missing.c_str());
  }
  config.gofer_fd = process.gofer_fd;
  return sentry::RunSentry(config, std::move(host).value());
}

}  // namespace

int RunCommand(const RunOptions& options) {
  gofer::GoferConfig gofer_config = MakeGoferConfig(options);
  sentry::SentryConfig sentry_config = MakeSentryConfig(options);
  SandboxOptions sandbox;
  sandbox.sentry_early = [&options] { StartSentryEarlyWork(options.platform); };
  absl::StatusOr<SandboxResult> result = RunSandbox(
      sandbox, [&](UniqueFd sock) { return ServeGofer(gofer_config, std::move(sock)); },
      [&](const SentryProcess& process) { return ConfineAndRunSentry(sentry_config, process); });
  if (!result.ok()) {
    fprintf(stderr, "usentry: %s\n", std::string(result.status().message()).c_str());
    return 125;
  }
  return result->exit_code;
}

}  // namespace usentry::cli
