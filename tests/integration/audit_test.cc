// The audit stream (--audit, docs/audit.md) and --explain, end to end: real programs run
// in the sandbox and the test reads the JSONL file the run wrote on the host.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "nlohmann/json.hpp"
#include "tests/integration/runner.h"

namespace usentry::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

constexpr char kPython[] = "/usr/bin/python3";

class AuditTest : public SandboxTest {
 protected:
  // Runs argv with --audit to a fresh host file (plus `flags`) and parses the records.
  RunResult RunAudited(const std::vector<std::string>& argv,
                       const std::vector<std::string>& flags = {}) {
    std::vector<std::string> f = {"--audit", audit_path()};
    f.insert(f.end(), flags.begin(), flags.end());
    RunResult r = Sandboxed(argv, f);
    raw_ = ReadHostFile(audit_path());
    records_ = ReadAuditRecords(audit_path());
    EXPECT_TRUE(raw_.empty() || raw_.back() == '\n') << "the last record is cut";
    return r;
  }

  std::string audit_path() const { return dir_.path() + "/audit.jsonl"; }

  std::vector<Json> Events(const std::string& event) const {
    std::vector<Json> out;
    for (const Json& j : records_) {
      if (j.value("event", "") == event) out.push_back(j);
    }
    return out;
  }

  // File records as "op path" or "op path -> to".
  std::vector<std::string> FileOps() const {
    std::vector<std::string> out;
    for (const Json& j : Events("file")) {
      std::string s = absl::StrCat(j.value("op", ""), " ", j.value("path", ""));
      if (j.contains("to")) absl::StrAppend(&s, " -> ", j.value("to", ""));
      out.push_back(s);
    }
    return out;
  }

  std::string Dump() const { return raw_; }

  TempDir dir_;
  std::vector<Json> records_;
  std::string raw_;
};

TEST_P(AuditTest, RunStartNamesTheRunArgvPolicyAndLayers) {
  RunResult r = RunAudited({kBusybox, "true"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_FALSE(records_.empty()) << r.Describe();
  const Json& start = records_.front();
  EXPECT_EQ(start.value("event", ""), "run_start") << Dump();
  std::string run = start.value("run", "");
  EXPECT_EQ(run.size(), 32u) << Dump();
  EXPECT_EQ(start["argv"], Json::array({kBusybox, "true"})) << Dump();
  EXPECT_THAT(start.value("policy_digest", ""), ::testing::MatchesRegex("sha256:[0-9a-f]{64}"))
      << Dump();
  ASSERT_TRUE(start["layers"].is_array()) << Dump();
  EXPECT_FALSE(start["layers"].empty()) << Dump();
  for (const Json& l : start["layers"]) {
    EXPECT_TRUE(l.contains("name") && l.contains("applied")) << l.dump();
  }
  // Every record carries the same run id and a timestamp; the last is run_end.
  for (const Json& j : records_) {
    EXPECT_EQ(j.value("run", ""), run) << j.dump();
    EXPECT_TRUE(j.contains("ts")) << j.dump();
  }
  EXPECT_EQ(records_.back().value("event", ""), "run_end") << Dump();
}

TEST_P(AuditTest, ExecTreeLinksEachImageToItsParent) {
  RunResult r = RunAudited({kBusybox, "sh", "-c", "/bin/ls / >/dev/null; echo x | /bin/cat"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "x\n");
  std::vector<Json> execs = Events("exec");
  ASSERT_EQ(execs.size(), 3u) << Dump();
  EXPECT_EQ(execs[0].value("pid", 0), 1) << Dump();
  EXPECT_EQ(execs[0]["argv"],
            Json::array({kBusybox, "sh", "-c", "/bin/ls / >/dev/null; echo x | /bin/cat"}))
      << Dump();
  bool saw_ls = false, saw_cat = false;
  for (size_t i = 1; i < execs.size(); i++) {
    const Json& e = execs[i];
    EXPECT_EQ(e.value("ppid", 0), 1) << e.dump();
    EXPECT_NE(e.value("pid", 0), 1) << e.dump();
    std::string path = e.value("path", "");
    if (absl::EndsWith(path, "/ls")) saw_ls = true;
    if (absl::EndsWith(path, "/cat")) saw_cat = true;
  }
  EXPECT_TRUE(saw_ls && saw_cat) << Dump();
}

TEST_P(AuditTest, FileChangesAreRecordedOncePerOpen) {
  RunResult r =
      RunAudited({kBusybox, "sh", "-c",
                  "cd /workspace && echo a > f1 && echo b >> f1 && echo c >> f1 && mv f1 f2 && "
                  "mkdir d && rmdir d && rm f2 && echo t > /tmp/t && ln -s /tmp/t /tmp/l && "
                  "chmod 600 /tmp/t && echo n > /dev/null && cat /tmp/t"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "t\n");
  EXPECT_THAT(FileOps(), ::testing::ElementsAre(
                             "create /workspace/f1", "write /workspace/f1", "write /workspace/f1",
                             "rename /workspace/f1 -> /workspace/f2", "mkdir /workspace/d",
                             "rmdir /workspace/d", "delete /workspace/f2", "create /tmp/t",
                             "symlink /tmp/l -> /tmp/t", "chmod /tmp/t"))
      << Dump();
  for (const Json& j : Events("file")) EXPECT_GT(j.value("pid", 0), 0) << j.dump();
}

TEST_P(AuditTest, WriteToReadOnlyMountIsDeniedAndExplained) {
  TempDir host;
  WriteHostFile(host.path() + "/existing", "old\n");
  RunResult r = RunAudited({kBusybox, "sh", "-c", "echo x > /data/existing; echo y > /data/new"},
                           // Root inside: the host dir is root's 0700, and the point
                           // is the mount's read-only rule, not its permission bits.
                           {"--user", "0", "--mount", host.path() + ":/data:ro", "--explain"});
  EXPECT_NE(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("usentry: write /data/existing denied: read-only mount /data "
                               "(policy: mounts)\n"))
      << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("usentry: create /data/new denied: read-only mount /data "
                               "(policy: mounts)\n"))
      << r.Describe();
  std::vector<Json> denied = Events("denied");
  ASSERT_EQ(denied.size(), 2u) << Dump();
  EXPECT_EQ(denied[0].value("op", ""), "write");
  EXPECT_EQ(denied[0].value("path", ""), "/data/existing");
  EXPECT_EQ(denied[0].value("errno", ""), "EROFS");
  EXPECT_EQ(denied[0].value("reason", ""), "read-only mount /data");
  EXPECT_EQ(denied[0].value("policy", ""), "mounts");
  EXPECT_EQ(ReadHostFile(host.path() + "/existing"), "old\n");
}

TEST_P(AuditTest, WithoutExplainDenialsStayOffStderr) {
  TempDir host;
  RunResult r = RunAudited({kBusybox, "sh", "-c", "echo y > /data/new"},
                           {"--mount", host.path() + ":/data:ro"});
  EXPECT_NE(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.err, Not(HasSubstr("usentry:"))) << r.Describe();
  EXPECT_EQ(Events("denied").size(), 1u) << Dump();
}

// Internet sockets are the sandbox's own: a TCP socket is made, and without a network
// policy a destination outside the sandbox is unreachable (nothing is sent). Raw sockets
// are refused and recorded as network denials.
TEST_P(AuditTest, InternetSocketsWithoutNetworkAndRawSocketsDenied) {
  RunResult r = RunAudited({kPython, "-c",
                            "import socket\n"
                            "s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
                            "try:\n s.connect(('192.0.2.1', 80))\n"
                            "except OSError as e:\n print('connect', e.errno)\n"
                            "try:\n socket.socket(socket.AF_INET, socket.SOCK_RAW, 255)\n"
                            "except OSError as e:\n print('raw', e.errno)\n"},
                           {"--explain"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "connect 101\nraw 1\n") << r.Describe();  // ENETUNREACH, EPERM
  EXPECT_THAT(r.err, HasSubstr("usentry: socket AF_INET SOCK_RAW denied: raw sockets are not "
                               "allowed (policy: net)"))
      << r.Describe();
  std::vector<Json> denied = Events("denied");
  ASSERT_EQ(denied.size(), 1u) << Dump();
  EXPECT_EQ(denied[0].value("op", ""), "socket");
  EXPECT_EQ(denied[0].value("errno", ""), "EPERM");
  EXPECT_EQ(denied[0].value("policy", ""), "net");
  // The connect is a network decision: a "net" record and an --explain line.
  EXPECT_THAT(r.err, HasSubstr("usentry: connect 192.0.2.1:80/tcp denied: the sandbox has no "
                               "network (allow destinations with --allow-net) (policy: net)"))
      << r.Describe();
  std::vector<Json> net = Events("net");
  ASSERT_EQ(net.size(), 1u) << Dump();
  EXPECT_EQ(net[0].value("op", ""), "connect");
  EXPECT_EQ(net[0].value("dst", ""), "192.0.2.1:80/tcp");
  EXPECT_EQ(net[0].value("decision", ""), "denied");
  EXPECT_EQ(net[0].value("result", ""), "ENETUNREACH");
}

// Walking through a directory the program's identity may not search is a denial of its
// own, naming the directory.
TEST_P(AuditTest, WalkingThroughAClosedDirectoryIsRecorded) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give the directory another owner";
  TempDir host;
  const std::string closed = host.path() + "/closed";
  ASSERT_EQ(mkdir(closed.c_str(), 0700), 0);
  WriteHostFile(closed + "/x", "secret\n");
  ASSERT_EQ(chown(closed.c_str(), 4242, 4242), 0);
  RunResult r = RunAudited({kBusybox, "cat", "/data/closed/x"},
                           {"--mount", host.path() + ":/data", "--explain"});
  EXPECT_NE(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.out, Not(HasSubstr("secret"))) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("usentry: search /data/closed denied: permission denied for uid "
                               "1000 (policy: identity)"))
      << r.Describe();
  std::vector<Json> denied = Events("denied");
  ASSERT_FALSE(denied.empty()) << Dump();
  EXPECT_EQ(denied[0].value("op", ""), "search");
  EXPECT_EQ(denied[0].value("path", ""), "/data/closed");
  EXPECT_EQ(denied[0].value("errno", ""), "EACCES");
}

TEST_P(AuditTest, MountIsBlockedWithEpermAndRecorded) {
  RunResult r = RunAudited({kPython, "-c",
                            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                            "print(libc.mount(b'none', b'/tmp', b'tmpfs', 0, None), "
                            "ctypes.get_errno())\n"
                            "print(libc.mount(b'none', b'/tmp', b'tmpfs', 0, None), "
                            "ctypes.get_errno())\n"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "-1 1\n-1 1\n") << r.Describe();
  std::vector<Json> blocked;
  for (const Json& j : Events("syscall")) {
    if (j.value("name", "") == "mount") blocked.push_back(j);
  }
  ASSERT_EQ(blocked.size(), 1u) << "once per name\n" << Dump();
  EXPECT_EQ(blocked[0].value("status", ""), "blocked");
  EXPECT_EQ(blocked[0].value("errno", ""), "EPERM");
  EXPECT_EQ(blocked[0].value("nr", 0), 165);
  // run_end counts both calls.
  EXPECT_EQ(records_.back()["syscalls"].value("mount", 0), 2) << Dump();
}

TEST_P(AuditTest, ProcessKilledBySignalIsRecorded) {
  RunResult r = RunAudited({kBusybox, "sh", "-c", "/bin/sh -c 'kill -9 $$'; echo after $?"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "after 137\n") << r.Describe();
  std::vector<Json> sigs = Events("signal");
  ASSERT_EQ(sigs.size(), 1u) << Dump();
  EXPECT_EQ(sigs[0].value("signal", ""), "SIGKILL");
  EXPECT_NE(sigs[0].value("pid", 1), 1);
  EXPECT_EQ(sigs[0].value("core", true), false);
  EXPECT_FALSE(sigs[0].value("comm", "").empty()) << Dump();
}

TEST_P(AuditTest, RunEndHasExitStatusCountsAndTasks) {
  RunResult r = RunAudited({kBusybox, "sh", "-c", "/bin/true; /bin/true; exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.Describe();
  std::vector<Json> ends = Events("run_end");
  ASSERT_EQ(ends.size(), 1u) << Dump();
  const Json& end = ends[0];
  EXPECT_EQ(end.value("exit_code", -1), 3);
  EXPECT_EQ(end.value("how", ""), "exited");
  EXPECT_GE(end.value("wall_ms", -1), 0);
  EXPECT_GE(end.value("tasks_created", 0), 2) << Dump();
  ASSERT_TRUE(end["syscalls"].is_object());
  // The first image is loaded by the sentry, not by an execve the app made.
  EXPECT_EQ(end["syscalls"].value("execve", 0), 2) << Dump();
  EXPECT_GE(end["syscalls"].value("exit_group", 0), 1) << Dump();
  // The gofer's round trips by operation: attaching the root, and walking to busybox.
  ASSERT_TRUE(end["gofer_round_trips"].is_object()) << Dump();
  EXPECT_EQ(end["gofer_round_trips"].value("attach", 0), 1) << Dump();
  int walks = 0;
  for (const char* op : {"walk", "walk_open", "walk_path"}) {
    walks += end["gofer_round_trips"].value(op, 0);
  }
  EXPECT_GE(walks, 1) << Dump();
}

TEST_P(AuditTest, ReadlinkThenOpenTakesOneGoferRoundTrip) {
  // realpath() readlinks the file before the program opens it (cc1 does so for every
  // header): the readlink's lookup opens it too, so the open needs no round trip.
  RunResult r = RunAudited({kPython, "-c",
                            "import errno, os\n"
                            "try:\n"
                            "    os.readlink('/etc/debian_version')\n"
                            "except OSError as e:\n"
                            "    assert e.errno == errno.EINVAL, e\n"
                            "assert open('/etc/debian_version', 'rb').read()\n"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const Json& end = records_.back();
  ASSERT_EQ(end.value("event", ""), "run_end") << Dump();
  EXPECT_EQ(end["gofer_round_trips"].value("open", 0), 0) << Dump();
}

// ld.so opens every library by its soname link (libz.so.1 -> libz.so.1.2.13): the gofer
// walks and opens such a link's target, a name in the same directory, with the link, so
// opening through the link takes no more round trips than opening the file.
TEST_P(AuditTest, OpeningALinkToASiblingTakesNoExtraRoundTrip) {
  TempDir data;
  WriteHostFile(data.path() + "/data.so.1.2", "payload");
  ASSERT_EQ(symlink("data.so.1.2", (data.path() + "/data.so.1").c_str()), 0);
  auto trips = [&](const std::string& name) {
    RunResult r = RunAudited({kBusybox, "cat", "/w/" + name}, {"--mount", data.path() + ":/w:ro"});
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    EXPECT_EQ(r.out, "payload") << r.Describe();
    int total = 0;
    for (const auto& [op, n] : records_.back()["gofer_round_trips"].items()) total += n.get<int>();
    return total;
  };
  const int direct = trips("data.so.1.2");
  EXPECT_EQ(trips("data.so.1"), direct) << Dump();
}

TEST_P(AuditTest, HostileFileNamesStayOneValidJsonLineEach) {
  RunResult r = RunAudited({kPython, "-c",
                            "open(b'/tmp/a\\nb\\xff\"}{', 'w').write('x')\n"
                            "open(b'/tmp/\\n{\"event\":\"forged\"}\\n', 'w').write('x')\n"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  bool saw = false;
  for (const Json& j : Events("file")) {
    if (absl::StartsWith(j.value("path", ""), "/tmp/a\nb")) saw = true;
  }
  EXPECT_TRUE(saw) << Dump();
  EXPECT_TRUE(Events("forged").empty()) << Dump();
  // Every line parsed (RunAudited checks) and the file still ends with run_end.
  EXPECT_EQ(records_.back().value("event", ""), "run_end") << Dump();
}

TEST_P(AuditTest, AppCannotWriteIntoTheAuditStream) {
  const std::string forged = "{\"event\":\"forged\"}";
  const std::string script =
      absl::StrCat("for f in /proc/self/fd/* /dev/fd/* /proc/1/fd/*; do echo '", forged,
                   "' >> $f; done 2>/dev/null; "
                   "for n in 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 100 255 1000; do "
                   "eval \"echo '",
                   forged, "' >&$n\" 2>/dev/null; done; echo '", forged, "' >> ", audit_path(),
                   " 2>/dev/null; test -e ", audit_path(), " && echo visible; exit 0");
  RunResult r = RunAudited({kBusybox, "sh", "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.out, Not(HasSubstr("visible"))) << r.Describe();
  EXPECT_TRUE(Events("forged").empty()) << Dump();
  EXPECT_THAT(raw_, Not(HasSubstr("\n" + forged))) << Dump();
  EXPECT_FALSE(absl::StartsWith(raw_, forged)) << Dump();
  ASSERT_FALSE(records_.empty());
  EXPECT_EQ(records_.front().value("event", ""), "run_start");
  EXPECT_EQ(records_.back().value("event", ""), "run_end");
}

INSTANTIATE_TEST_SUITE_P(Platforms, AuditTest, ::testing::ValuesIn(kTestPlatforms));

}  // namespace
}  // namespace usentry::testing
