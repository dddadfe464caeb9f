// Filesystem attacks: path escapes out of / and out of a mount (.., symlinks, /proc
// magic links, dirfds, hard links, a symlink swapped in a race), writes outside the
// overlay, read-only mounts, masked secrets and the host environment. Each test's
// fixture (hostile_util.h) also asserts that the host directory holding the marker was
// never opened, listed or modified.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "tests/hostile/hostile_util.h"

namespace usentry::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class FsAttackTest : public HostileTest {
 protected:
  // Every report whose name starts with one of `prefixes` failed (is not "OK ...").
  static void ExpectAllFailed(const RunResult& r, const std::vector<std::string>& prefixes) {
    int checked = 0;
    for (const auto& [name, outcome] : ParseReports(r.out)) {
      bool wanted = false;
      for (const std::string& p : prefixes) wanted |= absl::StartsWith(name, p);
      if (!wanted || absl::StrContains(name, ":content")) continue;
      ++checked;
      EXPECT_THAT(outcome, Not(StartsWith("OK"))) << name << " succeeded\n" << r.Describe();
    }
    EXPECT_GT(checked, 0) << r.Describe();
  }

  // Neither the marker's content nor (in any directory listing) its name.
  void ExpectMarkerNeverShown(const RunResult& r) {
    EXPECT_THAT(r.out + r.err, Not(HasSubstr(marker_content_))) << r.Describe();
    for (const auto& [name, outcome] : ParseReports(r.out)) {
      if (!absl::StartsWith(name, "list:")) continue;
      EXPECT_THAT(outcome, Not(HasSubstr(marker_name_))) << name << "\n" << r.Describe();
    }
  }
};

// Escapes by name: ".." chains from / and from the mount, absolute and relative
// symlinks (made on the host and by the app) pointing out, /proc magic links, and
// openat/chdir relative to a directory of the mount.
TEST_P(FsAttackTest, PathEscapesReachNothingOutsideTheMount) {
  const std::string m = mnt();
  const std::string marker = marker_path();
  ASSERT_EQ(symlink("/", (m + "/abs_root").c_str()), 0);
  ASSERT_EQ(symlink("../../..", (m + "/rel_up3").c_str()), 0);
  ASSERT_EQ(symlink("..", (m + "/up").c_str()), 0);
  ASSERT_EQ(symlink(marker.c_str(), (m + "/abs_marker").c_str()), 0);
  ASSERT_EQ(symlink(("../secret/" + marker_name_).c_str(), (m + "/rel_marker").c_str()), 0);
  ASSERT_EQ(symlink(secret_dir().c_str(), (m + "/abs_secret").c_str()), 0);
  ASSERT_EQ(mkdir((m + "/sub").c_str(), 0777), 0);
  const std::string rel_marker = "secret/" + marker_name_;
  const std::string dots = "../../../../../../../../../..";

  // One operation per line.
  // clang-format off
  std::vector<std::string> ops = {
      "read", "/../../../.." + marker,
      "read", marker,
      "read", "/data/../" + rel_marker,
      "read", "/data/" + dots + marker,
      "read", "/data/sub/../../" + rel_marker,
      "read", "/data/abs_marker",
      "read", "/data/rel_marker",
      "read", "/data/abs_secret/" + marker_name_,
      "read", "/data/up/" + rel_marker,
      "read", "/data/up/up/" + rel_marker,
      "read", "/data/rel_up3" + marker,
      "read", "/data/abs_root" + marker,
      "read", "/proc/self/root" + marker,
      "read", "/proc/self/root/data/../" + rel_marker,
      "read", "/proc/self/cwd/../" + rel_marker,
      "read", "/proc/1/cwd/" + dots + marker,
      "read", "/proc/1/root" + marker,
      "openat", "/data", dots + marker,
      "openat", "/data", "../" + rel_marker,
      "openat", "/data/sub", "../../" + rel_marker,
      "openat", "/data", "rel_marker",
      "openat", "/data", "abs_marker",
      "chdir_read", "/data", "../" + rel_marker,
      "chdir_read", "/data/sub", dots + marker,
      "fdpath", "/data", "../" + rel_marker,
      "fdpath", "/data/sub", dots + marker,
      "fdpath", "/data/abs_secret", marker_name_,
      // Symlinks the app makes itself, then follows.
      "symlink", "/", "/data/app_root",
      "symlink", marker, "/data/app_abs",
      "symlink", "../secret", "/data/app_rel",
      "symlink", "../../../../../../../.." + secret_dir(), "/data/sub/app_deep",
      "read", "/data/app_root" + marker,
      "read", "/data/app_abs",
      "read", "/data/app_rel/" + marker_name_,
      "read", "/data/sub/app_deep/" + marker_name_,
      "openat", "/data", "app_rel/file",
      "list", "/data/up",
      "list", "/data/abs_secret",
      "list", "/data/app_rel",
      "list", "/data/sub/app_deep",
      "list", "/proc/self/root/data/..",
  };
  // clang-format on
  RunResult r = Attack("fs_probe", ops);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  ExpectAllFailed(r, {"read:", "openat:", "chdir_read:", "fdpath:"});
  ExpectMarkerNeverShown(r);
  // The listings that did work showed the sandbox's view, not the host's.
  auto reports = ParseReports(r.out);
  EXPECT_THAT(reports["list:/data/up"], HasSubstr(" usr")) << r.Describe();
  EXPECT_THAT(reports["list:/data/abs_secret"], Not(StartsWith("OK"))) << r.Describe();
}

// Host kernel interfaces that a sandbox path could alias, symlink loops and overlong
// names: each fails, and the sentry survives all of them.
TEST_P(FsAttackTest, KernelFilesLoopsAndLongNamesFail) {
  ASSERT_EQ(symlink("self", (mnt() + "/self").c_str()), 0);
  ASSERT_EQ(symlink("b", (mnt() + "/a").c_str()), 0);
  ASSERT_EQ(symlink("a", (mnt() + "/b").c_str()), 0);
  std::string deep = "/data";
  for (int i = 0; i < 600; ++i) deep += "/..";
  // One operation per line.
  // clang-format off
  const std::vector<std::string> ops = {
      "read", "/dev/mem",
      "read", "/dev/kmem",
      "read", "/dev/port",
      "read", "/proc/kcore",
      "read", "/dev/kmsg",
      "read", "/sys/kernel/notes",
      "read", "/data/self",
      "read", "/data/a/x",
      "read", deep + marker_path(),
      "read", "/data/" + std::string(5000, 'x'),
      "read", "/data/" + std::string(300, 'y'),
  };
  // clang-format on
  RunResult r = Attack("fs_probe", ops);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  ExpectAllFailed(r, {"read:"});
  ExpectMarkerNeverShown(r);
  auto reports = ParseReports(r.out);
  EXPECT_EQ(reports["read:/data/self"], "ELOOP") << r.Describe();
  EXPECT_EQ(reports["read:/data/a/x"], "ELOOP") << r.Describe();
  EXPECT_EQ(reports["read:/data/" + std::string(300, 'y')], "ENAMETOOLONG") << r.Describe();
}

// Hard links from a rw mount to files elsewhere: the host link would make a host file
// writable (or readable) through the mount, so it must fail and create nothing.
TEST_P(FsAttackTest, HardLinksOutOfTheMountAreRefused) {
  ASSERT_EQ(symlink(marker_path().c_str(), (mnt() + "/abs_marker").c_str()), 0);
  const HostFileState passwd = StateOf("/etc/passwd");
  // One operation per line.
  // clang-format off
  const std::vector<std::string> ops = {
      "link", "/etc/passwd", "/data/passwd",
      "link", "/etc/shadow", "/data/shadow",
      "link", "/usr/bin/env", "/data/env",
      "linkf", "/data/abs_marker", "/data/marker_link",
      "link", "/proc/self/root/etc/passwd", "/data/passwd2",
      "write", "/data/passwd",
  };
  // clang-format on
  RunResult r = Attack("fs_probe", ops);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  ExpectAllFailed(r, {"link"});
  auto reports = ParseReports(r.out);
  EXPECT_EQ(reports["link:/etc/passwd:/data/passwd"], "EXDEV") << r.Describe();
  ExpectMarkerNeverShown(r);
  EXPECT_EQ(StateOf("/etc/passwd"), passwd);
  // Only the in-mount file the last "write" made (a fresh file, not a link).
  const HostFileState made = StateOf(mnt() + "/passwd");
  EXPECT_EQ(made.content, "pwned\n");
  EXPECT_EQ(made.nlink, 1u);
  EXPECT_EQ(ListHostDir(mnt()), (std::vector<std::string>{"abs_marker", "passwd"}));
}

// Two processes keep renaming a real directory and symlinks pointing out of the mount
// into the same name while a third opens "dir/file": a gofer that checks a path and
// then opens it by name would sometimes follow the symlink on the host.
TEST_P(FsAttackTest, SymlinkSwapRaceNeverLeavesTheMount) {
  ASSERT_EQ(mkdir((mnt() + "/race").c_str(), 0777), 0);
  RunResult r = Attack("symlink_race", {"/data/race", secret_dir(), "../../secret",
                                        "../../../../../../../../.." + secret_dir(), "3"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  ExpectMarkerNeverShown(r);
  // Lines of content other than the in-mount file's.
  EXPECT_EQ(ParseReports(r.out).count("foreign"), 0u) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("foreign=0")) << r.Describe();
  // The race ran: some opens hit the real directory.
  EXPECT_THAT(r.out, Not(HasSubstr(" inside=0 "))) << r.Describe();
}

// Writes to the host's files and directories land in the sandbox's overlay only.
TEST_P(FsAttackTest, WritesOutsideMountsNeverReachTheHost) {
  const std::vector<std::string> watched = {"/etc/passwd", "/usr/bin/env", "/etc/hostname"};
  std::vector<HostFileState> before;
  for (const std::string& p : watched) before.push_back(StateOf(p));
  const std::vector<std::string> root_before = ListHostDir("/");
  const std::vector<std::string> etc_before = ListHostDir("/etc");
  const std::vector<std::string> usr_bin_before = ListHostDir("/usr/bin");
  const std::string name = marker_name_;
  // One operation per line.
  // clang-format off
  const std::vector<std::string> ops = {
      "write", "/etc/passwd",
      "write", "/usr/bin/env",
      "write", "/usr/bin/" + name,
      "write", "/" + name,
      "write", "/etc/" + name,
      "mkdir", "/" + name + "-dir",
      "unlink", "/etc/hostname",
      "rename", "/etc/passwd", "/etc/passwd.moved",
      "read", "/etc/passwd.moved",
      "read", "/usr/bin/" + name,
  };
  // clang-format on
  TempDir audit_dir;
  const std::string audit = audit_dir.path() + "/audit.jsonl";
  RunResult r = Attack("fs_probe", ops, {"--audit", audit});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  // Each change is in the audit stream, by its sandbox path.
  std::vector<std::string> changes;
  for (const nlohmann::json& j : ReadAuditRecords(audit)) {
    if (j.value("event", "") != "file") continue;
    std::string c = absl::StrCat(j.value("op", ""), " ", j.value("path", ""));
    if (j.contains("to")) absl::StrAppend(&c, " -> ", j.value("to", ""));
    changes.push_back(c);
  }
  EXPECT_THAT(changes, ::testing::IsSupersetOf(std::vector<std::string>{
                           "write /etc/passwd", "write /usr/bin/env", "create /usr/bin/" + name,
                           "create /" + name, "create /etc/" + name, "mkdir /" + name + "-dir",
                           "delete /etc/hostname", "rename /etc/passwd -> /etc/passwd.moved"}))
      << ReadHostFile(audit);
  // The sandbox saw its own writes.
  auto reports = ParseReports(r.out);
  EXPECT_EQ(reports["read:/etc/passwd.moved:content"], "pwned|") << r.Describe();
  for (size_t i = 0; i < watched.size(); ++i) {
    EXPECT_EQ(StateOf(watched[i]), before[i]) << watched[i] << " changed on the host";
  }
  EXPECT_EQ(ListHostDir("/"), root_before);
  EXPECT_EQ(ListHostDir("/etc"), etc_before);
  EXPECT_EQ(ListHostDir("/usr/bin"), usr_bin_before);
}

// Every kind of change to a read-only mount is EROFS and leaves its host bytes alone.
TEST_P(FsAttackTest, ReadOnlyMountRefusesEveryChange) {
  TempDir ro;
  WriteHostFile(ro.path() + "/file", "original\n");
  ASSERT_EQ(mkdir((ro.path() + "/dir").c_str(), 0777), 0);
  const HostFileState file = StateOf(ro.path() + "/file");
  // One operation per line.
  // clang-format off
  const std::vector<std::string> ops = {
      "write", "/ro/file",
      "write", "/ro/new",
      "mkdir", "/ro/newdir",
      "unlink", "/ro/file",
      "rename", "/ro/file", "/ro/moved",
      "rename", "/ro/dir", "/ro/dir2",
      "symlink", "/", "/ro/link",
      "link", "/ro/file", "/ro/hard",
      "write", "/ro/dir/new",
      "read", "/ro/file",
  };
  // clang-format on
  TempDir audit_dir;
  const std::string audit = audit_dir.path() + "/audit.jsonl";
  RunResult r =
      Attack("fs_probe", ops, {"--mount", ro.path() + ":/ro:ro", "--audit", audit, "--explain"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  // Every refusal is a "denied" record naming the mount, and an --explain line.
  std::vector<nlohmann::json> records = ReadAuditRecords(audit);
  EXPECT_THAT(DeniedOps(records),
              ::testing::ElementsAre("write /ro/file", "create /ro/new", "mkdir /ro/newdir",
                                     "delete /ro/file", "rename /ro/file", "rename /ro/dir",
                                     "symlink /ro/link", "link /ro/hard", "create /ro/dir/new"))
      << ReadHostFile(audit);
  for (const nlohmann::json& j : records) {
    if (j.value("event", "") != "denied") continue;
    EXPECT_EQ(j.value("reason", ""), "read-only mount /ro") << j.dump();
    EXPECT_EQ(j.value("policy", ""), "mounts") << j.dump();
    EXPECT_EQ(j.value("errno", ""), "EROFS") << j.dump();
  }
  EXPECT_THAT(r.err,
              HasSubstr("usentry: write /ro/file denied: read-only mount /ro (policy: mounts)\n"))
      << r.Describe();
  for (const auto& [name, outcome] : ParseReports(r.out)) {
    if (absl::StartsWith(name, "read:")) continue;
    EXPECT_EQ(outcome, "EROFS") << name << "\n" << r.Describe();
  }
  EXPECT_EQ(ParseReports(r.out)["read:/ro/file:content"], "original|") << r.Describe();
  EXPECT_EQ(StateOf(ro.path() + "/file"), file);
  EXPECT_EQ(ListHostDir(ro.path()), (std::vector<std::string>{"dir", "file"}));
  EXPECT_THAT(ListHostDir(ro.path() + "/dir"), ::testing::IsEmpty());
}

TEST_P(FsAttackTest, MaskedSecretsAreAbsent) {
  // One operation per line.
  // clang-format off
  const std::vector<std::string> ops = {
      "read", "/etc/shadow",
      "read", "/etc/gshadow",
      "read", "/etc/shadow-",
      "read", "/etc/gshadow-",
      "read", "/proc/self/root/etc/shadow",
      "read", "/etc/../etc/./shadow",
      "stat", "/etc/shadow",
      "list", "/etc",
  };
  // clang-format on
  TempDir audit_dir;
  const std::string audit = audit_dir.path() + "/audit.jsonl";
  RunResult r = Attack("fs_probe", ops, {"--audit", audit, "--explain"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  for (const auto& [name, outcome] : ParseReports(r.out)) {
    if (absl::StartsWith(name, "list:")) continue;
    EXPECT_EQ(outcome, "ENOENT") << name << "\n" << r.Describe();
  }
  // The app saw ENOENT; the audit (and --explain) say why.
  EXPECT_THAT(DeniedOps(ReadAuditRecords(audit)),
              ::testing::IsSupersetOf({"read /etc/shadow", "read /etc/gshadow", "read /etc/shadow-",
                                       "read /etc/gshadow-", "stat /etc/shadow"}))
      << ReadHostFile(audit);
  EXPECT_THAT(r.err,
              HasSubstr("usentry: read /etc/shadow denied: masked secret (policy: mounts)\n"))
      << r.Describe();
  const std::string etc = ParseReports(r.out)["list:/etc"];
  EXPECT_THAT(etc, StartsWith("OK")) << r.Describe();
  EXPECT_THAT(etc, HasSubstr(" passwd"));
  EXPECT_THAT(etc, Not(HasSubstr("shadow")));
}

// A second name for /etc/shadow's inode somewhere in the default view must be masked
// as well. The test never makes one (that would touch a host secret), so it runs only
// on hosts that already have one.
TEST_P(FsAttackTest, HardLinkToShadowIsMasked) {
  struct stat shadow;
  if (stat("/etc/shadow", &shadow) != 0) GTEST_SKIP() << "the host has no /etc/shadow";
  if (shadow.st_nlink < 2) {
    GTEST_SKIP() << "the host's /etc/shadow has no other hard link (st_nlink=1) and the "
                    "test does not create one next to a host secret; the gofer's "
                    "inode-based masking of such links is covered by "
                    "gofer/server_escape_test.cc (MasksHidePathsAndHardLinks)";
  }
  // Find the other names among /etc's direct entries (where backups live).
  std::vector<std::string> ops;
  for (const std::string& name : ListHostDir("/etc")) {
    struct stat st;
    std::string p = "/etc/" + name;
    if (lstat(p.c_str(), &st) == 0 && st.st_ino == shadow.st_ino && st.st_dev == shadow.st_dev) {
      ops.insert(ops.end(), {"read", p});
    }
  }
  if (ops.size() < 4) GTEST_SKIP() << "the other links of /etc/shadow are not in /etc";
  RunResult r = Attack("fs_probe", ops);
  for (const auto& [name, outcome] : ParseReports(r.out)) {
    EXPECT_EQ(outcome, "ENOENT") << name << "\n" << r.Describe();
  }
}

// The app sees a clean environment: PATH, HOME, LANG, TERM and --env values, nothing
// of usentry's own environment, also not through /proc.
TEST_P(FsAttackTest, HostEnvironmentIsInvisible) {
  const std::string secret = "USENTRY_HOSTILE_SECRET=" + marker_content_;
  RunResult r =
      Sandboxed({"/usr/bin/env"}, {"--env", "FROM_FLAG=1"}, {secret, "TERM=xterm-hostile"});
  ExpectSentrySurvived(r);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  std::vector<std::string> names;
  for (absl::string_view line : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
    names.emplace_back(line.substr(0, line.find('=')));
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"FROM_FLAG", "HOME", "LANG", "PATH", "TERM"}))
      << r.Describe();
  // One operation per line.
  // clang-format off
  const std::vector<std::string> ops = {
      "read", "/proc/self/environ",
      "read", "/proc/1/environ",
      "read", "/proc/2/environ",
      "read", "/proc/self/cmdline",
  };
  // clang-format on
  RunResult p = Attack("fs_probe", ops, {}, {secret});
  EXPECT_EQ(p.exit_code, 0) << p.Describe();
  EXPECT_THAT(p.out, Not(HasSubstr(marker_content_))) << p.Describe();
  EXPECT_THAT(p.out, Not(HasSubstr("USENTRY_HOSTILE_SECRET"))) << p.Describe();
}

INSTANTIATE_TEST_SUITE_P(Platforms, FsAttackTest, ::testing::ValuesIn(kTestPlatforms));

}  // namespace
}  // namespace usentry::testing
