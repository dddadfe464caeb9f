// Fixture, host watch and report parser of the hostile suite (see hostile_util.h).
#include "tests/hostile/hostile_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"

namespace usentry::testing {

std::map<std::string, std::string> ParseReports(const std::string& out) {
  std::map<std::string, std::string> reports;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    reports[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return reports;
}

HostWatch::HostWatch(const std::string& dir, std::vector<std::string> ignore)
    : dir_(dir), ignore_(std::move(ignore)) {
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0 || inotify_add_watch(fd_, dir.c_str(), IN_ALL_EVENTS) < 0) {
    ADD_FAILURE() << "inotify on " << dir << ": " << strerror(errno);
  }
}

HostWatch::~HostWatch() {
  if (fd_ >= 0) close(fd_);
}

std::vector<std::string> HostWatch::Events() {
  static constexpr std::pair<uint32_t, const char*> kNames[] = {
      {IN_ACCESS, "IN_ACCESS"},
      {IN_MODIFY, "IN_MODIFY"},
      {IN_ATTRIB, "IN_ATTRIB"},
      {IN_CLOSE_WRITE, "IN_CLOSE_WRITE"},
      {IN_CLOSE_NOWRITE, "IN_CLOSE_NOWRITE"},
      {IN_OPEN, "IN_OPEN"},
      {IN_MOVED_FROM, "IN_MOVED_FROM"},
      {IN_MOVED_TO, "IN_MOVED_TO"},
      {IN_CREATE, "IN_CREATE"},
      {IN_DELETE, "IN_DELETE"},
      {IN_DELETE_SELF, "IN_DELETE_SELF"},
      {IN_MOVE_SELF, "IN_MOVE_SELF"},
      {IN_Q_OVERFLOW, "IN_Q_OVERFLOW"}};
  std::vector<std::string> events;
  if (fd_ < 0) return events;
  alignas(inotify_event) char buf[65536];
  for (;;) {
    ssize_t n = read(fd_, buf, sizeof(buf));
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;
      std::string name = ev->len > 0 ? ev->name : "";
      if (std::find(ignore_.begin(), ignore_.end(), name) != ignore_.end()) continue;
      std::string what;
      for (auto [bit, label] : kNames) {
        if (ev->mask & bit) absl::StrAppend(&what, what.empty() ? "" : "|", label);
      }
      events.push_back(absl::StrCat(dir_, "/", name, ": ", what));
    }
  }
  return events;
}

HostFileState StateOf(const std::string& path) {
  HostFileState s;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return s;
  s.exists = true;
  s.ino = st.st_ino;
  s.size = st.st_size;
  s.nlink = st.st_nlink;
  s.mode = st.st_mode;
  s.mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  s.ctime_ns = st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
  if (S_ISREG(st.st_mode)) s.content = ReadHostFile(path);
  return s;
}

std::string Describe(const HostFileState& s) {
  if (!s.exists) return "(absent)";
  return absl::StrFormat("ino=%d size=%d nlink=%d mode=%o mtime=%d ctime=%d content=%d bytes",
                         s.ino, s.size, s.nlink, s.mode, s.mtime_ns, s.ctime_ns, s.content.size());
}

std::vector<std::string> ListHostDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  for (dirent* e; (e = readdir(d)) != nullptr;) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

void HostileTest::SetUp() {
  SandboxTest::SetUp();
  ASSERT_EQ(access(HOSTILE_ATTACK_DIR "/fs_probe", X_OK), 0)
      << HOSTILE_ATTACK_DIR << " has no attack programs";
  host_ = std::make_unique<TempDir>();
  const std::string unique = absl::StrCat(
      getpid(), "-", ::testing::UnitTest::GetInstance()->random_seed(), "-", time(nullptr), "-",
      ::testing::UnitTest::GetInstance()->current_test_info()->name());
  marker_name_ = absl::StrCat("hostile-marker-", getpid(), "-", time(nullptr));
  marker_content_ = absl::StrCat("HOST-SECRET-", unique);
  std::replace(marker_content_.begin(), marker_content_.end(), '/', '_');
  ASSERT_EQ(mkdir(mnt().c_str(), 0777), 0);
  ASSERT_EQ(chmod(mnt().c_str(), 0777), 0);  // the sentry may run as host nobody
  ASSERT_EQ(mkdir(secret_dir().c_str(), 0777), 0);
  WriteHostFile(marker_path(), marker_content_ + "\n");
  WriteHostFile(secret_dir() + "/file", marker_content_ + "\n");
  marker_before_ = StateOf(marker_path());
  file_before_ = StateOf(secret_dir() + "/file");
  // The watches start after the layout is made, so they only see the sandbox's doing.
  host_watch_ = std::make_unique<HostWatch>(host(), std::vector<std::string>{"mnt"});
  secret_watch_ = std::make_unique<HostWatch>(secret_dir());
}

void HostileTest::TearDown() {
  if (host_ == nullptr) return;
  EXPECT_THAT(secret_watch_->Events(), ::testing::IsEmpty())
      << "the sandbox reached the host directory outside its mounts";
  EXPECT_THAT(host_watch_->Events(), ::testing::IsEmpty())
      << "the sandbox reached the host directory above its mount";
  EXPECT_EQ(StateOf(marker_path()), marker_before_)
      << Describe(StateOf(marker_path())) << " vs " << Describe(marker_before_);
  EXPECT_EQ(StateOf(secret_dir() + "/file"), file_before_);
  EXPECT_EQ(ListHostDir(secret_dir()), (std::vector<std::string>{"file", marker_name_}));
  EXPECT_EQ(ListHostDir(host()), (std::vector<std::string>{"mnt", "secret"}));
}

RunResult HostileTest::Attack(const std::string& program, const std::vector<std::string>& args,
                              const std::vector<std::string>& flags,
                              const std::vector<std::string>& host_env) {
  std::vector<std::string> argv = {"/attacks/" + program};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> all_flags = {"--mount", HOSTILE_ATTACK_DIR ":/attacks:ro", "--mount",
                                        mnt() + ":/data:rw"};
  all_flags.insert(all_flags.end(), flags.begin(), flags.end());
  RunResult r = Sandboxed(argv, all_flags, host_env);
  ExpectSentrySurvived(r);
  return r;
}

void HostileTest::ExpectSentrySurvived(const RunResult& r) {
  EXPECT_FALSE(r.timed_out) << r.Describe();
  EXPECT_NE(r.exit_code, 125) << "usentry failed or the sentry crashed\n" << r.Describe();
  EXPECT_THAT(r.err, ::testing::Not(::testing::HasSubstr("sentry crashed"))) << r.Describe();
}

std::map<std::string, std::string> SyscallStatuses(const std::vector<nlohmann::json>& records) {
  std::map<std::string, std::string> out;
  for (const nlohmann::json& j : records) {
    if (j.value("event", "") != "syscall") continue;
    out[j.value("name", "")] = j.value("status", "");
  }
  return out;
}

std::vector<std::string> DeniedOps(const std::vector<nlohmann::json>& records) {
  std::vector<std::string> out;
  for (const nlohmann::json& j : records) {
    if (j.value("event", "") != "denied") continue;
    out.push_back(absl::StrCat(j.value("op", ""), " ", j.value("path", "")));
  }
  return out;
}

}  // namespace usentry::testing
