// AuditLog: the run's JSONL audit stream (`--audit FILE`; schema in docs/audit.md).
// The CLI opens the file before the sandbox exists and the sentry writes to the FD it
// inherited; the app never holds it, so nothing it does can forge or suppress a record.
// Each record is one write(2) of one line on an O_APPEND FD, so records written by the
// sentry's threads and by the CLI (which adds one when the sentry dies) never interleave.
#ifndef USENTRY_SENTRY_AUDIT_AUDIT_LOG_H_
#define USENTRY_SENTRY_AUDIT_AUDIT_LOG_H_

#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace usentry::audit {

// Event names (the "event" field), one per kind of record.
inline constexpr char kRunStart[] = "run_start";
inline constexpr char kRunEnd[] = "run_end";
inline constexpr char kExec[] = "exec";
inline constexpr char kFile[] = "file";
inline constexpr char kDenied[] = "denied";
inline constexpr char kSyscall[] = "syscall";  // unimplemented or blocked, once per name
inline constexpr char kLimit[] = "limit";
inline constexpr char kSignal[] = "signal";  // a task killed by a signal

class AuditLog {
 public:
  // `fd` < 0: no audit stream (records are dropped; --explain still prints).
  // The FD is not owned: it lives as long as the process.
  AuditLog(int fd, std::string run_id, bool explain);

  bool enabled() const { return fd_ >= 0; }
  bool explain() const { return explain_; }
  const std::string& run_id() const { return run_id_; }

  // Writes {"ts":..., "run":..., "event": event, ...fields}. `fields` must be an object.
  // Strings that are not valid UTF-8 (paths from the app) are written with U+FFFD.
  void Emit(absl::string_view event, nlohmann::json fields) const;

  // A denial the app saw as `err`: a "denied" record, and with --explain one line on
  // stderr a model can act on: "usentry: OP PATH denied: REASON (policy: KEY)".
  void Denied(int pid, absl::string_view op, absl::string_view path, int err,
              absl::string_view reason, absl::string_view policy_key) const;
  // Only the --explain line of a denial (for denials whose record is not "denied").
  void Explain(absl::string_view op, absl::string_view path, absl::string_view reason,
               absl::string_view policy_key) const;

 private:
  int fd_;
  std::string run_id_;
  bool explain_;
};

// A fresh random run id (32 hex digits).
std::string NewRunId();
// Current time as RFC 3339 UTC with milliseconds ("2026-11-29T19:30:28.123Z").
std::string Timestamp();

}  // namespace usentry::audit

#endif  // USENTRY_SENTRY_AUDIT_AUDIT_LOG_H_
