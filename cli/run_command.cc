// `usentry run`: gofer and sentry configuration, and what runs in each child process.
#include "cli/run_command.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/phases.h"
#include "base/prefault.h"
#include "cli/sandbox.h"
#include "gofer/host_fs.h"
#include "platform/platform.h"
#include "sentry/audit/audit_log.h"
#include "sentry/confine/confine.h"
#include "sentry/confine/gofer_confine.h"
#include "sentry/confine/netgate_confine.h"
#include "sentry/net/netgate/server.h"
#include "sentry/net/netgate/upstream_resolver.h"

namespace usentry::cli {

GoferPlan MakeGoferPlan(const RunOptions& options) {
  const policy::Policy& p = options.policy;
  GoferPlan plan;
  std::vector<gofer::TreeConfig> mounts;
  for (size_t i = 0; i < p.mounts.size(); ++i) {
    const policy::Mount& m = p.mounts[i];
    mounts.push_back(gofer::MountTree(static_cast<int>(i), m.source, m.read_only));
  }
  // Started as root, the caller's gofer is host nobody with file-access capabilities:
  // what it creates is given back to the caller.
  std::optional<gofer::GoferConfig::Owner> caller;
  if (geteuid() == 0) caller = gofer::GoferConfig::Owner{geteuid(), getegid()};
  if (p.rootfs) {
    // The caller chose the image: it is served as the caller would read it.
    plan.view.trees.push_back(gofer::RootfsTree(*p.rootfs));
    plan.view_identity = sentry::confine::GoferIdentity::kCaller;
    plan.view.new_owner = caller;
    for (gofer::TreeConfig& t : mounts) plan.view.trees.push_back(std::move(t));
    return plan;
  }
  plan.view.trees.push_back(gofer::DefaultRootTree());
  plan.view_identity = sentry::confine::GoferIdentity::kHostNobody;
  if (!mounts.empty()) plan.mounts = gofer::GoferConfig{std::move(mounts), caller};
  return plan;
}

sentry::SentryConfig MakeSentryConfig(const RunOptions& options) {
  const policy::Policy& p = options.policy;
  sentry::SentryConfig config;
  config.argv = options.argv;
  config.envp = options.env;
  config.workdir = p.workdir;
  for (size_t i = 0; i < p.mounts.size(); ++i) {
    const policy::Mount& m = p.mounts[i];
    config.mounts.push_back({absl::StrCat("mount", i), m.target, m.read_only});
  }
  config.platform = options.platform;
  config.strace = options.strace;
  config.report_unsupported = options.report_unsupported;
  config.syscall_patching = options.syscall_patching;
  config.uid = p.identity.uid;
  config.gid = p.identity.gid;
  config.home = HomeOf(p.identity);
  config.host_uid = geteuid();  // the gofer's, which opens the mounted files
  config.host_gid = getegid();
  config.tmpfs_limit_bytes = p.limits.disk_bytes == 0 ? UINT64_MAX : p.limits.disk_bytes;
  config.net = p.net;
  config.limits = p.limits;
  config.exec_rules = p.exec;
  // The default view's masked secrets, so that the sentry can explain their absence.
  if (!p.rootfs) {
    for (const std::string& m : gofer::DefaultRootTree().masks)
      config.masked_paths.push_back("/" + m);
  }
  config.policy_digest = p.Digest();
  config.policy_json = p.ToJson();
  return config;
}

namespace {

// What the sentry child exits with if its kernel thread could not report.
constexpr int kExitSetupFailedForThread = 125;
// How long after --timeout the CLI kills a sentry that did not stop the run itself.
constexpr absl::Duration kTimeoutGrace = absl::Seconds(5);

// The gofer's self-confinement, once its trees are open: its own /proc/self as root
// (no host path can be named), the host identity `identity` says, no_new_privs, seccomp.
absl::Status ConfineGoferProcess(sentry::confine::GoferIdentity identity) {
  absl::Status root = gofer::EnterProcRoot();
  if (!root.ok()) {
    fprintf(stderr,
            "usentry: warning: gofer layer proc-root unavailable (%s); running without it\n",
            std::string(root.message()).c_str());
  }
  absl::StatusOr<sentry::confine::ConfineReport> report = sentry::confine::ConfineGofer(identity);
  if (!report.ok()) return report.status();
  for (const std::string& missing : report->Missing()) {
    fprintf(stderr, "usentry: warning: gofer layer %s unavailable; running without it\n",
            missing.c_str());
  }
  return absl::OkStatus();
}

// Body of the gofer child.
int ServeGofer(const gofer::GoferConfig& config, sentry::confine::GoferIdentity identity,
               UniqueFd sock) {
  absl::Status st = gofer::Serve(config, std::move(sock), [identity] {
    absl::Status confined = ConfineGoferProcess(identity);
    Phase("gofer-serving");
    return confined;
  });
  if (!st.ok()) {
    fprintf(stderr, "usentry: gofer: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  return 0;
}

// Body of the netgate child: the upstream resolver (it reads the host's resolver
// configuration), then confinement, then the loop until the sentry goes away.
int ServeNetgate(const policy::NetPolicy& net, const std::string& run_id, UniqueFd sock,
                 int net_log_fd) {
  netgate::UpstreamOptions ropts;
  ropts.servers = net.dns_servers;
  absl::StatusOr<std::unique_ptr<netgate::UpstreamResolver>> resolver =
      netgate::UpstreamResolver::Create(ropts);
  if (!resolver.ok()) {
    fprintf(stderr, "usentry: netgate: upstream DNS: %s\n",
            std::string(resolver.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<sentry::confine::ConfineReport> report = sentry::confine::ConfineNetgate();
  if (!report.ok()) {
    fprintf(stderr, "usentry: netgate: confining: %s\n",
            std::string(report.status().message()).c_str());
    return 1;
  }
  for (const std::string& missing : report->Missing()) {
    fprintf(stderr, "usentry: warning: netgate layer %s unavailable; running without it\n",
            missing.c_str());
  }
  netgate::ServerOptions opts;
  opts.net = net;
  opts.log = std::make_shared<audit::AuditLog>(net_log_fd, run_id, false);
  netgate::Server server(std::move(opts), std::move(resolver).value(), std::move(sock));
  absl::Status st = server.Run();
  if (!st.ok()) {
    fprintf(stderr, "usentry: netgate: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  return 0;
}

// Heap mapped ahead for the sentry (base/prefault.h), beyond the ~0.3 MB it has when
// it starts: python3 -c pass grows it by ~0.2 MB. 2 MB cost 0.5-0.9 ms to map here and
// made /bin/true slower; 512 KB costs ~0.2-0.5 ms.
constexpr size_t kSentryHeapPrefault = 512 << 10;

// In the sentry child: start-up work that needs no decision yet, on threads started
// before the child waits for its id maps (SandboxOptions::sentry_early): the stub code
// (CPU, ~0.2 ms), then the binary's code mapped in one call (~0.3 ms; on the main thread
// it held up the sentry's start by ~0.25 ms), joined before the sentry confines itself;
// and Abseil's clock calibration (mostly sleeping), which filters itself and is only
// waited for until it has (SentryConfig::before_app). The stub code comes first because
// the main thread's NewPlatform waits for it: the other way round it waited ~0.6 ms
// (this thread starts ~0.3 ms after the child, as late as the child's credentials), and
// runs were 0.4-0.6 ms longer. The seccomp program needs no work: it is compiled into
// the binary (sentry/confine/bpf_programs.h).
std::vector<std::thread>& SentryEarlyThreads() {
  static auto* threads = new std::vector<std::thread>;
  return *threads;
}

void StartSentryEarlyWork(const std::string& platform) {
  sentry::confine::StartCalibration();
  SentryEarlyThreads().emplace_back([platform] {
    platform::PrewarmPlatform(platform);
    PrefaultReadOnlyImage();
  });
}

// Body of the sentry child: host resources, confine, then run the kernel.
int ConfineAndRunSentry(sentry::SentryConfig config, const SentryProcess& process,
                        const std::string& run_id, bool config_explain) {
  // Before confinement: the platform's own processes must not inherit the sentry's filter.
  absl::StatusOr<sentry::SentryHost> host = sentry::PrepareSentry(config);
  Phase("platform-ready");
  // Only now: the zygote that PrepareSentry forks shares every page of ours until it
  // has unmapped them, and after that each page stays write-protected here until
  // written (one fault each); populating takes them all back in one call. The heap grows
  // and gets its settings here, before the thread that populates it (0.2-0.35 ms) beside
  // the confinement below; that thread makes no call but the madvise and its own exit,
  // and is joined before the kernel starts.
  std::thread populate([heap = PrepareHeap(kSentryHeapPrefault)] { PopulateHeap(heap); });
  for (std::thread& t : SentryEarlyThreads()) t.join();
  if (!host.ok()) {
    populate.join();
    fprintf(stderr, "usentry: %s\n", std::string(host.status().message()).c_str());
    return 125;
  }
  sentry::confine::ConfineOptions confine;
  confine.own_mount_namespace = (process.namespaces & CLONE_NEWNS) != 0;
  confine.allow_ptrace = host->platform->Name() == "ptrace";
  absl::StatusOr<sentry::confine::ConfineReport> report = sentry::confine::ConfineSentry(confine);
  populate.join();
  Phase("sentry-confined");
  if (!report.ok()) {
    fprintf(stderr, "usentry: confining the sentry: %s\n",
            std::string(report.status().message()).c_str());
    return 125;
  }
  for (const std::string& missing : report->Missing()) {
    fprintf(stderr, "usentry: warning: sentry layer %s unavailable; running without it\n",
            missing.c_str());
  }
  for (const auto& ns : kSentryNamespaces) {
    bool applied = (process.namespaces & ns.flag) != 0;
    config.layers.push_back(
        {absl::StrCat(ns.name, "-namespace"), applied, applied ? "" : "refused by the host"});
  }
  for (const sentry::confine::ConfineLayer& l : report->layers) {
    config.layers.push_back({absl::StrCat("sentry-", l.name), l.applied, l.detail});
  }
  config.layers.push_back({"syscall-emulation", true, host->platform->Name()});
  config.before_app = sentry::confine::FinishCalibration;
  config.gofer_fd = process.gofer_fd;
  config.mounts_gofer_fd = process.mounts_gofer_fd;
  config.netgate_fd = process.netgate_fd;
  // Either way the sandbox reaches no host network but through netgate's checks.
  config.layers.push_back({"egress", true,
                           process.netgate_fd >= 0
                               ? "netgate only: the policy's destinations, checked twice"
                               : "none: the sandbox's own loopback only (no netgate)"});
  config.net_log = std::make_shared<audit::AuditLog>(process.net_log_fd, run_id, false);
  if (process.audit_fd >= 0) {
    config.audit = std::make_shared<audit::AuditLog>(process.audit_fd, run_id, config_explain);
  } else {
    config.audit = std::make_shared<audit::AuditLog>(-1, run_id, config_explain);
  }
  // On a thread of its own: this process was made by a raw clone(), which leaves the
  // main thread's glibc descriptor with the CLI's host TID. That TID names nothing in
  // the sentry's PID namespace, so pthread_getschedparam() on the main thread fails, and
  // Abseil's Mutex asks it whenever the thread queues on a contended lock (it logged
  // "pthread_getschedparam failed: 1" on stderr). A new thread's descriptor is right.
  int rc = kExitSetupFailedForThread;
  std::thread([&] { rc = sentry::RunSentry(config, std::move(host).value()); }).join();
  Phase("sentry-exit");
  return rc;
}

}  // namespace

// Opens --audit's (or --net-log's) destination on the host ("-": a copy of stderr).
// O_APPEND: the CLI, the sentry and netgate each write whole lines to it.
absl::StatusOr<UniqueFd> OpenAuditFile(const std::string& file, const char* flag = "--audit") {
  int fd = file == "-"
               ? fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3)
               : open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", file, ": ", strerror(errno)));
  }
  if (file == "-") fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_APPEND);
  return UniqueFd(fd);
}

int RunCommand(const RunOptions& options) {
  const policy::Policy& p = options.policy;
  UniqueFd audit_fd;
  if (!p.audit.file.empty()) {
    absl::StatusOr<UniqueFd> fd = OpenAuditFile(p.audit.file);
    if (!fd.ok()) {
      fprintf(stderr, "usentry: %s\n", std::string(fd.status().message()).c_str());
      return 125;
    }
    audit_fd = std::move(fd).value();
  }
  UniqueFd net_log_fd;
  if (!p.net.log_file.empty()) {
    absl::StatusOr<UniqueFd> fd = OpenAuditFile(p.net.log_file, "--net-log");
    if (!fd.ok()) {
      fprintf(stderr, "usentry: %s\n", std::string(fd.status().message()).c_str());
      return 125;
    }
    net_log_fd = std::move(fd).value();
  }
  const std::string run_id = audit::NewRunId();
  audit::AuditLog cli_audit(audit_fd.get(), run_id, p.audit.explain);
  const GoferPlan gofers = MakeGoferPlan(options);
  sentry::SentryConfig sentry_config = MakeSentryConfig(options);
  SandboxOptions sandbox;
  sandbox.sentry_early = [&options] { StartSentryEarlyWork(options.platform); };
  sandbox.audit_fd = audit_fd.get();
  sandbox.net_log_fd = net_log_fd.get();
  if (p.limits.timeout != absl::ZeroDuration()) {
    // The sentry stops the run at the deadline; this is the backstop if it cannot.
    sandbox.kill_after = p.limits.timeout + kTimeoutGrace;
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<SandboxResult> result = RunSandbox(
      sandbox,
      [&](UniqueFd sock) { return ServeGofer(gofers.view, gofers.view_identity, std::move(sock)); },
      [&](const SentryProcess& process) {
        return ConfineAndRunSentry(sentry_config, process, run_id, p.audit.explain);
      },
      p.net.egress() ? NetgateMain([&](UniqueFd sock, int log_fd) {
        return ServeNetgate(p.net, run_id, std::move(sock), log_fd);
      })
                     : NetgateMain(),
      gofers.mounts ? GoferMain([&](UniqueFd sock) {
        return ServeGofer(*gofers.mounts, sentry::confine::GoferIdentity::kCaller, std::move(sock));
      })
                    : GoferMain());
  if (!result.ok()) {
    fprintf(stderr, "usentry: %s\n", std::string(result.status().message()).c_str());
    cli_audit.Emit(audit::kRunEnd, {{"exit_code", 125},
                                    {"how", "setup_failed"},
                                    {"error", std::string(result.status().message())}});
    return 125;
  }
  // The sentry wrote run_end itself unless it died: then the CLI records what it knows.
  if (result->killed_at_deadline || result->sentry_crashed) {
    if (result->killed_at_deadline) {
      cli_audit.Emit(audit::kLimit, {{"limit", "timeout"},
                                     {"value_ms", absl::ToInt64Milliseconds(p.limits.timeout)},
                                     {"action", "sentry killed by the CLI"}});
    }
    cli_audit.Emit(audit::kRunEnd,
                   {{"exit_code", result->exit_code},
                    {"how", result->killed_at_deadline ? "timeout" : "sentry_crashed"},
                    {"wall_ms", absl::ToInt64Milliseconds(absl::Now() - start)}});
  }
  return result->exit_code;
}

}  // namespace usentry::cli
