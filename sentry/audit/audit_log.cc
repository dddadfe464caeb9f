// AuditLog: JSON lines written with one write(2) each.
#include "sentry/audit/audit_log.h"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "abi/errno.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace usentry::audit {

AuditLog::AuditLog(int fd, std::string run_id, bool explain)
    : fd_(fd), run_id_(std::move(run_id)), explain_(explain) {}

void AuditLog::Emit(absl::string_view event, nlohmann::json fields) const {
  if (fd_ < 0) return;
  // The envelope first, for people reading the file; no field (some carry app-chosen
  // strings) can replace it.
  nlohmann::ordered_json record;
  record["ts"] = Timestamp();
  record["run"] = run_id_;
  record["event"] = std::string(event);
  if (fields.is_object()) {
    for (auto& [k, v] : fields.items()) {
      if (k != "ts" && k != "run" && k != "event") record[k] = std::move(v);
    }
  }
  std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // O_APPEND and one write: a record is never split by another writer. A short write
  // (disk full) loses the tail of this record only.
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = write(fd_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

void AuditLog::Denied(int pid, absl::string_view op, absl::string_view path, int err,
                      absl::string_view reason, absl::string_view policy_key) const {
  Emit(kDenied, {{"pid", pid},
                 {"op", std::string(op)},
                 {"path", std::string(path)},
                 {"errno", abi::ErrnoName(err)},
                 {"reason", std::string(reason)},
                 {"policy", std::string(policy_key)}});
  Explain(op, path, reason, policy_key);
}

void AuditLog::Explain(absl::string_view op, absl::string_view path, absl::string_view reason,
                       absl::string_view policy_key) const {
  if (!explain_) return;
  std::string line = absl::StrCat("usentry: ", op, path.empty() ? "" : " ", path,
                                  " denied: ", reason, " (policy: ", policy_key, ")\n");
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

std::string NewRunId() {
  unsigned char bytes[16] = {};
  if (getrandom(bytes, sizeof(bytes), 0) != sizeof(bytes)) {
    // Never reached on Linux >= 3.17 without a seccomp filter; a time-based id is
    // still unique enough for a file name.
    int64_t now = absl::ToUnixNanos(absl::Now());
    for (int i = 0; i < 8; i++) bytes[i] = static_cast<unsigned char>(now >> (8 * i));
    int64_t pid = getpid();
    for (int i = 0; i < 4; i++) bytes[8 + i] = static_cast<unsigned char>(pid >> (8 * i));
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

std::string Timestamp() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
}

}  // namespace usentry::audit
