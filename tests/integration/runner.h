// Test harness for end-to-end runs: starts a program (natively or under `usentry run`)
// with pipes for stdin/stdout/stderr and a timeout, and a fixture parameterized over
// the platforms.
#ifndef USENTRY_TESTS_INTEGRATION_RUNNER_H_
#define USENTRY_TESTS_INTEGRATION_RUNNER_H_

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace usentry::testing {

// Absolute path of busybox-static (Debian's busybox-static package).
inline constexpr char kBusybox[] = "/usr/bin/busybox";

struct RunResult {
  std::string out;
  std::string err;
  // Exit status as a shell reports it: the exit code, or 128+N if killed by signal N.
  int exit_code = -1;
  bool timed_out = false;

  // For failure messages.
  std::string Describe() const;
};

struct RunRequest {
  std::vector<std::string> argv;  // argv[0] is an absolute path
  std::vector<std::string> env;   // the complete environment
  std::string stdin_data;
  std::string cwd = "/";
  int timeout_seconds = 60;
};

// Every platform the integration and hostile tests run on (INSTANTIATE_TEST_SUITE_P).
inline const std::vector<std::string> kTestPlatforms = {"ptrace", "systrap"};

// Runs the request to completion (or kills its process group at the timeout).
RunResult RunProcess(const RunRequest& request);

// The environment a sandboxed program starts with (`usentry run` without --env and
// without TERM); native comparison runs use it too.
std::vector<std::string> SandboxDefaultEnv();

// Creates a host directory with mkdtemp and removes it (recursively) when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadHostFile(const std::string& path);
// The records of an --audit file, one JSON object a line (a line that is not one fails
// the test and is skipped).
std::vector<nlohmann::json> ReadAuditRecords(const std::string& path);
// The records whose "event" is `event`, in order.
std::vector<nlohmann::json> RecordsOfEvent(const std::vector<nlohmann::json>& records,
                                           const std::string& event);
void WriteHostFile(const std::string& path, const std::string& content);
bool HostPathExists(const std::string& path);

// Parameter: the platform name passed as --platform.
class SandboxTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;

  // `usentry run --platform P <flags> -- argv...`, with the test's own environment plus
  // `host_env` (name=value entries) given to usentry itself.
  RunResult Sandboxed(const std::vector<std::string>& argv,
                      const std::vector<std::string>& flags = {},
                      const std::vector<std::string>& host_env = {},
                      const std::string& stdin_data = "");
  // The same program on the host, with the sandbox's default environment, in `cwd`.
  RunResult Native(const std::vector<std::string>& argv, const std::string& cwd = "/",
                   const std::string& stdin_data = "");
  // The usentry binary with arbitrary arguments (no "run" added).
  RunResult Usentry(const std::vector<std::string>& args,
                    const std::vector<std::string>& host_env = {});
  // Runs `argv` natively and sandboxed and expects the same stdout and exit status.
  // An "@DIR@" argument is replaced by a scratch directory: under a fresh host temp dir
  // natively, /tmp/scratch inside the sandbox (which has its own /tmp). The sandboxed
  // run is root inside (`--user 0`), as the native run (the suite runs as root): like is
  // compared with like.
  void ExpectSameAsNative(std::vector<std::string> argv,
                          const std::vector<std::string>& flags = {});

  // Fixtures whose programs act as root inside (attacks and isolation checks: the
  // strongest program the sandbox can hold) set this; Sandboxed() then adds
  // `--user 0` unless the flags name a user themselves. Default: the sandbox's own
  // default identity, an ordinary user.
  bool root_inside_ = false;
};

}  // namespace usentry::testing

#endif  // USENTRY_TESTS_INTEGRATION_RUNNER_H_
