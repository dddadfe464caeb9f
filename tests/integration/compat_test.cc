// Programs that must behave in the sandbox exactly as on the host: busybox-static shell
// and applets, Debian's dynamically linked ls, bash, python3. Each runs natively and
// under usentry on the same inputs; stdout and exit status must match.
#include <string>
#include <vector>

#include "tests/integration/runner.h"

namespace usentry::testing {
namespace {

class CompatTest : public SandboxTest {
 protected:
  // Runs `argv` natively and sandboxed and expects the same stdout and exit status.
  // An "@DIR@" argument is replaced by a scratch directory: under a fresh host temp dir
  // natively, /tmp/scratch inside the sandbox (which has its own /tmp).
  void ExpectSameAsNative(std::vector<std::string> argv,
                          const std::vector<std::string>& flags = {}) {
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
    RunResult sandboxed = Sandboxed(sandbox_argv, flags);
    EXPECT_EQ(sandboxed.out, native.out)
        << "sandboxed: " << sandboxed.Describe() << "\nnative: " << native.Describe();
    EXPECT_EQ(sandboxed.exit_code, native.exit_code) << sandboxed.Describe();
  }
};

// Pipes, redirections, subshells, loops, $(...), functions, here-docs, fd juggling.
constexpr char kShellScript[] = R"sh(
d=$1
mkdir -p "$d" && cd "$d" || exit 1
for i in 1 2 3; do echo "line $i"; done > f.txt
echo "count: $(wc -l < f.txt)"
echo "nested: $(echo "$(echo inner)" | tr a-z A-Z)"
(cd / && pwd)
x=0; while [ $x -lt 5 ]; do x=$((x + 1)); done; echo "x=$x"
cat f.txt | grep 2 | tr a-z A-Z
{ echo b; echo a; echo c; } | sort -r
echo appended >> f.txt; tail -n 1 f.txt
case foo.txt in *.txt) echo "case ok";; esac
f() { echo "arg:$1"; return 3; }; f hi; echo "rc=$?"
exec 3> g.txt; echo via-fd3 >&3; exec 3>&-; cat g.txt
cat <<END
heredoc $x
END
ls nonexistent 2>/dev/null || echo "ls failed as expected"
(exit 4); echo "subshell rc=$?"
echo "$HOME $LANG"
set -- a b c; echo "$# $2"
exit 5
)sh";

TEST_P(CompatTest, BusyboxShellLanguage) {
  ExpectSameAsNative({kBusybox, "sh", "-c", kShellScript, "sh", "@DIR@"});
}

// Applets over host files the default view shows read-only (/usr/share/common-licenses is
// in every Debian install), and over files the script creates.
constexpr char kAppletScript[] = R"sh(
B=/usr/bin/busybox
L=/usr/share/common-licenses
$B ls $L
$B cat $L/GPL-3 | $B md5sum
$B grep -c GNU $L/GPL-3
$B grep -n -i 'warranty' $L/GPL-2 | $B head -3
$B sed -n '1,3p; s/License/LICENSE/p' $L/Apache-2.0 | $B head -8
$B awk 'NR <= 5 { print NR, NF, $1 } END { print "lines", NR }' $L/BSD
$B sort $L/BSD | $B uniq -c | $B sort -rn | $B head -3
$B find $L -name 'GPL*' | $B sort
$B find /usr/share/common-licenses -type f -size +20k | $B sort
$B wc $L/GPL-2 $L/BSD
$B ls -ln $L/GPL-3
$B stat -c '%s %a %F' $L/BSD
mkdir -p "$1" && cd "$1" || exit 1
$B cp $L/BSD $L/GPL-2 .
$B tar cf t.tar BSD GPL-2 && $B tar tvf t.tar | $B awk '{print $3, $6}'
$B mkdir x && cd x && $B tar xf ../t.tar && $B md5sum BSD GPL-2
$B cmp BSD ../BSD && echo same
$B gzip -c BSD | $B gunzip | $B md5sum
$B echo done
)sh";

TEST_P(CompatTest, BusyboxApplets) {
  ExpectSameAsNative({kBusybox, "sh", "-c", kAppletScript, "sh", "@DIR@"});
}

TEST_P(CompatTest, DynamicLsOfUsrShareDoc) {
  ExpectSameAsNative({"/bin/ls", "/usr/share/doc"});
  ExpectSameAsNative({"/bin/ls", "-l", "--time-style=+%Y", "/usr/share/common-licenses"});
}

constexpr char kBashScript[] = R"sh(
sum() { local n=$1 s=0 i; for ((i = 1; i <= n; i++)); do s=$((s + i)); done; echo "sum($n)=$s"; }
for n in 1 10 100; do sum "$n"; done
declare -A m=([a]=1 [b]=2); echo "keys=${#m[@]}"
arr=(x y z); echo "${arr[@]:1}" "${#arr[@]}"
s="Hello, World"; echo "${s,,} ${s^^} ${s/World/usentry}"
[[ "abc123" =~ ([a-z]+)([0-9]+) ]] && echo "${BASH_REMATCH[2]}"
printf '%05d|%-4s|%x\n' 42 ab 255
mapfile -t lines < <(printf 'l1\nl2\n'); echo "${#lines[@]} ${lines[1]}"
echo "bash ${BASH_VERSINFO[0]}"
)sh";

TEST_P(CompatTest, BashFunctionsAndLoops) { ExpectSameAsNative({"/bin/bash", "-c", kBashScript}); }

constexpr char kPythonScript[] = R"py(
import os, json, re, hashlib, subprocess
print(json.dumps({"a": [1, 2, {"b": None}], "c": "d"}, sort_keys=True))
print(re.sub(r"(\d+)", r"<\1>", "a1b22c333"))
print(hashlib.sha256(b"usentry").hexdigest(), hashlib.md5(b"").hexdigest())
print(os.path.isdir("/usr"), os.path.exists("/nonexistent"))
done = subprocess.run(["/bin/echo", "from", "child"], capture_output=True, text=True)
print(done.returncode, done.stdout.strip())
print(subprocess.call(["/bin/sh", "-c", "exit 3"]))
print(sorted(k for k in os.environ))
)py";

TEST_P(CompatTest, Python) { ExpectSameAsNative({"/usr/bin/python3", "-c", kPythonScript}); }

// gcc runs cc1, as and ld through vfork+exec: many short-lived processes.
TEST_P(CompatTest, GccCompilesAndRuns) {
  if (!HostPathExists("/usr/bin/gcc")) GTEST_SKIP() << "no /usr/bin/gcc";
  ExpectSameAsNative({"/bin/sh", "-c",
                      "mkdir -p \"$1\" && cd \"$1\" && "
                      "printf '#include <stdio.h>\\nint main(void) { puts(\"hi from cc\"); "
                      "return 3; }\\n' > h.c && /usr/bin/gcc -O2 -o h h.c && ./h",
                      "sh", "@DIR@"});
}

// glibc's posix_spawn runs the child with CLONE_VM|CLONE_VFORK and learns of a failed
// exec through memory the two share: ENOENT must reach the caller, not a child exiting
// 127. Also vfork children writing their parent's memory before exec.
constexpr char kSpawnScript[] = R"py(
import os
try:
    os.posix_spawn("/nonexistent/prog", ["prog"], {})
    print("no error")
except FileNotFoundError:
    print("ENOENT")
pid = os.posix_spawn("/bin/echo", ["echo", "spawned"], {})
print(os.waitpid(pid, 0)[1])
)py";

TEST_P(CompatTest, PosixSpawnSharesTheParentsMemory) {
  if (GetParam() == "ptrace") {
    GTEST_SKIP() << "ptrace runs vfork children in a copy of the address space (documented)";
  }
  ExpectSameAsNative({"/usr/bin/python3", "-c", kSpawnScript});
}

// Every syscall through the platform's slow path (systrap: a host signal each).
TEST_P(CompatTest, PythonWithoutSyscallPatching) {
  ExpectSameAsNative({"/usr/bin/python3", "-c", kPythonScript}, {"--no-syscall-patching"});
}

// alarm, interval timers, sigtimedwait and the signal mask as Python's signal module uses
// them (main thread only).
constexpr char kPythonSignalScript[] = R"py(
import os, signal, time
fired = []
signal.signal(signal.SIGALRM, lambda s, f: fired.append(s))
print("alarm0", signal.alarm(0))
signal.alarm(5)
print("remaining", signal.alarm(0))
signal.setitimer(signal.ITIMER_REAL, 0.05, 0.02)
t0 = time.monotonic()
while len(fired) < 4 and time.monotonic() - t0 < 5:
    signal.pause()
signal.setitimer(signal.ITIMER_REAL, 0)
print("periodic", len(fired) >= 4, set(fired))
print("itimer", signal.getitimer(signal.ITIMER_REAL))
old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
print("blocked", signal.SIGUSR1 in signal.pthread_sigmask(signal.SIG_BLOCK, []))
os.kill(os.getpid(), signal.SIGUSR1)
print("pending", signal.sigpending())
info = signal.sigtimedwait({signal.SIGUSR1}, 1)
print("waited", info.si_signo == signal.SIGUSR1, info.si_pid == os.getpid(), info.si_code)
t0 = time.monotonic()
print("timeout", signal.sigtimedwait({signal.SIGUSR1}, 0.1), time.monotonic() - t0 >= 0.09)
signal.pthread_sigmask(signal.SIG_SETMASK, old)
n = len(fired)
t0 = time.monotonic()
signal.alarm(1)
signal.pause()
print("alarm fired", len(fired) - n, 0.9 <= time.monotonic() - t0 < 4)
)py";

TEST_P(CompatTest, PythonSignalTimers) {
  ExpectSameAsNative({"/usr/bin/python3", "-c", kPythonSignalScript});
}

INSTANTIATE_TEST_SUITE_P(Platforms, CompatTest, ::testing::ValuesIn(kTestPlatforms));

}  // namespace
}  // namespace usentry::testing
