// End-to-end run harness: fork+exec with pipes, timeout, temp dirs, the fixture.
#include "tests/integration/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace usentry::testing {
namespace {

std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const std::string& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

std::vector<std::string> HostEnvWith(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('=') + 1);
    // TERM is the one host variable usentry passes on; keep runs independent of the
    // terminal ctest was started from (tests that want it pass it in `extra`).
    bool replaced = name == "TERM=";
    for (const std::string& x : extra) replaced |= x.rfind(name, 0) == 0;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

}  // namespace

std::string RunResult::Describe() const {
  return absl::StrCat("exit_code=", exit_code, timed_out ? " (TIMED OUT)" : "",
                      "\n--- stdout ---\n", out, "\n--- stderr ---\n", err);
}

RunResult RunProcess(const RunRequest& request) {
  RunResult result;
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    result.err = absl::StrCat("pipe2: ", strerror(errno));
    return result;
  }
  std::vector<char*> argv = CStrings(request.argv);
  std::vector<char*> envp = CStrings(request.env);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // so a timeout can kill usentry, its gofer and sentry together
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    if (chdir(request.cwd.c_str()) != 0) _exit(124);
    execve(argv[0], argv.data(), envp.data());
    // Same convention as shells (and usentry): not found 127, not executable 126.
    _exit(errno == ENOENT ? 127 : 126);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // Small inputs only: a pipe holds 64 KiB, more would need a writer thread.
  if (!request.stdin_data.empty()) {
    ssize_t n = write(in[1], request.stdin_data.data(), request.stdin_data.size());
    (void)n;
  }
  close(in[1]);

  const int64_t deadline = NowMs() + request.timeout_seconds * 1000LL;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    int64_t left = deadline - NowMs();
    if (left <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    int n = poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[65536];
      ssize_t r = read(fds[i].fd, buf, sizeof(buf));
      if (r > 0) {
        sinks[i]->append(buf, r);
      } else if (r == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (pollfd& p : fds) {
    if (p.fd >= 0) close(p.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

std::vector<std::string> SandboxDefaultEnv() {
  return {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
          "LANG=C.UTF-8"};
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/usentry-it-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) abort();
  path_ = tmpl;
  // The sentry runs as host nobody when the tests run as root; rw mounts must be writable.
  chmod(path_.c_str(), 0777);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ReadHostFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteHostFile(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

bool HostPathExists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

void SandboxTest::SetUp() {
  ASSERT_EQ(access(USENTRY_BIN, X_OK), 0) << USENTRY_BIN << " is not built";
}

RunResult SandboxTest::Sandboxed(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& flags,
                                 const std::vector<std::string>& host_env,
                                 const std::string& stdin_data) {
  RunRequest req;
  req.argv = {USENTRY_BIN, "run", "--platform", GetParam()};
  if (root_inside_ && std::find(flags.begin(), flags.end(), "--user") == flags.end()) {
    req.argv.insert(req.argv.end(), {"--user", "0"});
  }
  req.argv.insert(req.argv.end(), flags.begin(), flags.end());
  req.argv.push_back("--");
  req.argv.insert(req.argv.end(), argv.begin(), argv.end());
  req.env = HostEnvWith(host_env);
  req.stdin_data = stdin_data;
  return RunProcess(req);
}

RunResult SandboxTest::Native(const std::vector<std::string>& argv, const std::string& cwd,
                              const std::string& stdin_data) {
  RunRequest req;
  req.argv = argv;
  req.env = SandboxDefaultEnv();
  req.cwd = cwd;
  req.stdin_data = stdin_data;
  return RunProcess(req);
}

std::vector<nlohmann::json> ReadAuditRecords(const std::string& path) {
  std::vector<nlohmann::json> out;
  for (absl::string_view line : absl::StrSplit(ReadHostFile(path), '\n', absl::SkipEmpty())) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(j.is_object()) << "audit line is not a JSON object: " << line;
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

std::vector<nlohmann::json> RecordsOfEvent(const std::vector<nlohmann::json>& records,
                                           const std::string& event) {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& r : records) {
    if (r.value("event", "") == event) out.push_back(r);
  }
  return out;
}

void SandboxTest::ExpectSameAsNative(std::vector<std::string> argv,
                                     const std::vector<std::string>& flags) {
  TempDir scratch;
  std::vector<std::string> native_argv = argv, sandbox_argv = argv;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "@DIR@") {
      native_argv[i] = scratch.path() + "/scratch";
      sandbox_argv[i] = "/tmp/scratch";
    }
  }
  RunResult native = Native(native_argv);
  ASSERT_FALSE(native.timed_out) << native.Describe();
  std::vector<std::string> as_native = flags;
  if (std::find(flags.begin(), flags.end(), "--user") == flags.end()) {
    as_native.insert(as_native.begin(), {"--user", "0"});
  }
  RunResult sandboxed = Sandboxed(sandbox_argv, as_native);
  EXPECT_EQ(sandboxed.out, native.out)
      << "sandboxed: " << sandboxed.Describe() << "\nnative: " << native.Describe();
  EXPECT_EQ(sandboxed.exit_code, native.exit_code) << sandboxed.Describe();
}

RunResult SandboxTest::Usentry(const std::vector<std::string>& args,
                               const std::vector<std::string>& host_env) {
  RunRequest req;
  req.argv = {USENTRY_BIN};
  req.argv.insert(req.argv.end(), args.begin(), args.end());
  req.env = HostEnvWith(host_env);
  return RunProcess(req);
}

}  // namespace usentry::testing
