// Shared pieces of the hostile suite: the fixture that lays out a host directory with
// a marker outside the mounts, an inotify watch proving the host side was never
// touched, and the parser for the attack programs' "name=outcome" reports.
#ifndef USENTRY_TESTS_HOSTILE_HOSTILE_UTIL_H_
#define USENTRY_TESTS_HOSTILE_HOSTILE_UTIL_H_

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/runner.h"

namespace usentry::testing {

// "name=outcome" lines of an attack program's stdout; outcome is "OK ..." or an errno
// name. Later lines with the same name win.
std::map<std::string, std::string> ParseReports(const std::string& out);

// The "syscall" records' {name: status} and the "denied" records' "op path" strings.
std::map<std::string, std::string> SyscallStatuses(const std::vector<nlohmann::json>& records);
std::vector<std::string> DeniedOps(const std::vector<nlohmann::json>& records);

// Records every inotify event on a host directory (its own entries, not recursive)
// from construction on. Used on directories the sandbox must never open, list,
// create in or modify: any event means a sandboxed path reached them.
class HostWatch {
 public:
  // `ignore`: entry names whose events are expected (the mount source itself, which
  // the gofer opens).
  explicit HostWatch(const std::string& dir, std::vector<std::string> ignore = {});
  ~HostWatch();
  HostWatch(const HostWatch&) = delete;
  HostWatch& operator=(const HostWatch&) = delete;

  // Events seen so far, as "dir/name: IN_OPEN|IN_ACCESS"; empty if none.
  std::vector<std::string> Events();

 private:
  int fd_ = -1;
  std::string dir_;
  std::vector<std::string> ignore_;
};

// Content and metadata of a host path, to show it was not modified.
struct HostFileState {
  bool exists = false;
  std::string content;
  uint64_t ino = 0;
  uint64_t size = 0;
  uint64_t nlink = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  unsigned mode = 0;
  bool operator==(const HostFileState&) const = default;
};
HostFileState StateOf(const std::string& path);
std::string Describe(const HostFileState& s);

// Sorted entry names of a host directory (no "." or "..").
std::vector<std::string> ListHostDir(const std::string& dir);

// A host directory laid out for escape attempts, with the attack programs mounted:
//   <host>/mnt                 mounted rw at /data
//   <host>/secret/<marker>     the marker: content and name unique to this test
//   <host>/secret/file         also the marker content (the name the race opens)
// and a watch on <host> and <host>/secret. TearDown asserts the marker files are
// unchanged and that neither directory saw an event.
// Attacks run as root inside (the strongest program the sandbox can hold) unless a
// case names a user.
class HostileTest : public SandboxTest {
 protected:
  HostileTest() { root_inside_ = true; }
  void SetUp() override;
  void TearDown() override;

  // `usentry run` of /attacks/<program> with the attacks dir mounted read-only at
  // /attacks and <host>/mnt read-write at /data, plus `flags`.
  RunResult Attack(const std::string& program, const std::vector<std::string>& args,
                   const std::vector<std::string>& flags = {},
                   const std::vector<std::string>& host_env = {});

  // The sentry outlived the attack: usentry did not report a crash (125) or hang.
  static void ExpectSentrySurvived(const RunResult& r);

  const std::string& host() const { return host_->path(); }
  std::string mnt() const { return host() + "/mnt"; }
  std::string secret_dir() const { return host() + "/secret"; }
  std::string marker_path() const { return secret_dir() + "/" + marker_name_; }

  std::string marker_name_;     // unique file name, must not appear in any listing
  std::string marker_content_;  // unique content, must never be read

 private:
  std::unique_ptr<TempDir> host_;
  std::unique_ptr<HostWatch> host_watch_;
  std::unique_ptr<HostWatch> secret_watch_;
  HostFileState marker_before_;
  HostFileState file_before_;
};

}  // namespace usentry::testing

#endif  // USENTRY_TESTS_HOSTILE_HOSTILE_UTIL_H_
