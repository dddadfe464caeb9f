// Process bring-up of one sandbox: the gofer child, the netgate child (only when the
// policy allows egress), the namespaced sentry child (PID 1 of its own PID namespace),
// uid/gid maps, signal forwarding and the final exit status.
// What runs inside each child is the caller's (run_command.cc): this file only builds
// the processes, so its tests can run fake gofers and sentries.
#ifndef USENTRY_CLI_SANDBOX_H_
#define USENTRY_CLI_SANDBOX_H_

#include <sched.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/unique_fd.h"

namespace usentry::cli {

// Namespaces asked of clone() for the sentry, in the order they are given up when the
// host refuses the full set (a user namespace is the one most often unavailable).
inline constexpr struct {
  int flag;
  const char* name;
} kSentryNamespaces[] = {
    {CLONE_NEWUSER, "user"},   {CLONE_NEWPID, "PID"}, {CLONE_NEWNS, "mount"},
    {CLONE_NEWNET, "network"}, {CLONE_NEWIPC, "IPC"}, {CLONE_NEWUTS, "UTS"},
};

// What the sentry child is told about the process it runs in.
struct SentryProcess {
  int gofer_fd = 3;          // its end of the gofer socketpair
  int audit_fd = -1;         // SandboxOptions::audit_fd as numbered in the sentry, or -1
  int netgate_fd = -1;       // its end of the netgate socketpair, or -1 (no netgate)
  int net_log_fd = -1;       // SandboxOptions::net_log_fd as numbered in the sentry, or -1
  int mounts_gofer_fd = -1;  // its end of the second gofer's socketpair, or -1 (none)
  int namespaces = 0;        // CLONE_NEW* flags clone() actually granted
};

struct SandboxOptions {
  // Keeps the gofers out of the host's network and IPC namespaces: they open files and
  // never need a network. As root they join the sentry's (made by its clone); otherwise
  // each unshares its own, in a user namespace of its own.
  bool isolate_gofer = true;
  // Test hook: namespaces to pretend the host refuses (clone fails with EPERM).
  int refused_namespaces = 0;
  // Runs in the sentry child first, before it waits for its uid/gid maps: a place to
  // start slow preparations (on a thread) so that they overlap the CLI's work.
  std::function<void()> sentry_early;
  // A host FD the sentry keeps (besides 0-2 and its gofer socket): the audit stream.
  // The gofer does not get it.
  int audit_fd = -1;
  // The --net-log stream: netgate and the sentry each write the decisions they make.
  int net_log_fd = -1;
  // The CLI's backstop for --timeout: the sentry enforces the limit itself and exits
  // 124; if it has not exited this long after the start, the CLI kills it (and reports
  // SandboxResult::killed_at_deadline). InfiniteDuration: never.
  absl::Duration kill_after = absl::InfiniteDuration();
};

// Runs in the forked gofer child with its socket end (fd 3); returns the exit code.
using GoferMain = std::function<int(UniqueFd sock)>;
// Runs in the forked netgate child (in the caller's network namespace) with its socket
// end and the net-log FD (or -1); returns the exit code.
using NetgateMain = std::function<int(UniqueFd sock, int net_log_fd)>;
// Runs in the cloned sentry child, after uid/gid maps are in place; returns the exit code
// (the usentry exit code, see sentry_main.h).
using SentryMain = std::function<int(const SentryProcess&)>;

struct SandboxResult {
  int exit_code = 125;                // what `usentry run` exits with
  std::vector<std::string> warnings;  // layers that are missing (also printed on stderr)
  bool sentry_crashed = false;        // died of a signal the CLI did not send
  bool killed_at_deadline = false;    // SandboxOptions::kill_after passed (exit_code 124)
};

// Creates the sentry, then the gofer (and netgate) once it runs (their sockets exist
// before either), waits for the sentry, then kills and reaps the others.
// Call it from a single-threaded process (the CLI is): the children are made with
// fork()/clone(), and clone() does not reset locks (malloc's) another thread may hold.
// The exit code is the sentry's, or 125 if it died of a signal ("usentry: sentry crashed
// (signal N)" is printed). SIGINT/SIGTERM/SIGHUP are forwarded to the sentry while it
// runs; a second one kills it. Errors are setup failures (a sentry already started is
// killed and reaped first).
// `netgate_main` may be null: then there is no netgate and SentryProcess::netgate_fd is -1.
// `mounts_gofer_main` may be null: a second gofer (for trees served with other host
// permissions than the first gofer's), else SentryProcess::mounts_gofer_fd is -1.
absl::StatusOr<SandboxResult> RunSandbox(const SandboxOptions& options, const GoferMain& gofer_main,
                                         const SentryMain& sentry_main,
                                         const NetgateMain& netgate_main = nullptr,
                                         const GoferMain& mounts_gofer_main = nullptr);

}  // namespace usentry::cli

#endif  // USENTRY_CLI_SANDBOX_H_
