// The programs agents actually run, each natively and under usentry on the same inputs
// (issue 4's proof list): make -j2 building a multi-file C program, git, tar with gzip
// and xz, sqlite3 (WAL mode), perl, bash job control and traps, find | xargs -P2,
// python3 -m venv, node with timers, fs, child_process and worker_threads, and util-linux's
// ipcs/ipcmk/ipcrm over System V shared memory a Python program made.
#include <string>
#include <vector>

#include "tests/integration/runner.h"

namespace usentry::testing {
namespace {

class ProgramsTest : public SandboxTest {
 protected:
  // `script` run by bash with "@DIR@" (a scratch directory) as $1, if every tool exists.
  void ExpectScriptSameAsNative(const char* script, const std::vector<std::string>& tools) {
    for (const std::string& tool : tools) {
      if (!HostPathExists(tool)) GTEST_SKIP() << "no " << tool;
    }
    ExpectSameAsNative({"/bin/bash", "-c", script, "bash", "@DIR@"});
  }
};

// Fixed dates make commit hashes the same on both sides.
constexpr char kGitScript[] = R"sh(
set -e
d=$1; mkdir -p "$d"; cd "$d"; export HOME=$d GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'
g() { git -c user.name=Agent -c user.email=agent@example.invalid -c init.defaultBranch=main "$@"; }
g init -q repo; cd repo
printf 'one\ntwo\n' > a.txt; mkdir sub; echo x > sub/b.txt
g add -A; g commit -q -m first
printf 'one\nTWO\nthree\n' > a.txt; g rm -q sub/b.txt
g diff --stat; g diff a.txt | tail -n +3
g commit -q -am second
g log --format='%h %s'; g status --short; g rev-list --count HEAD
)sh";

TEST_P(ProgramsTest, GitInitAddCommitLogDiff) {
  ExpectScriptSameAsNative(kGitScript, {"/usr/bin/git"});
}

constexpr char kTarScript[] = R"sh(
set -e
d=$1; mkdir -p "$d/src/sub"; cd "$d"
for i in 1 2 3; do seq 1 $((i*1000)) > src/f$i.txt; done; echo deep > src/sub/d.txt; ln -s f1.txt src/link
tar czf a.tgz src; tar tzf a.tgz | sort
mkdir out; tar xzf a.tgz -C out; diff -r src out/src && echo same
tar cJf a.txz src; mkdir out2; tar xJf a.txz -C out2; diff -r src out2/src && echo same xz
readlink out/src/link
)sh";

TEST_P(ProgramsTest, TarWithGzipAndXz) {
  ExpectScriptSameAsNative(kTarScript, {"/usr/bin/tar", "/usr/bin/gzip", "/usr/bin/xz"});
}

// Parallel compiles (two gcc pipelines at once), then the program they built.
constexpr char kMakeScript[] = R"sh(
set -e
d=$1; mkdir -p "$d"; cd "$d"
for n in 1 2 3 4; do printf 'int f%d(int x) { return x * %d; }\n' $n $n > f$n.c; done
printf '#include <stdio.h>\nint f1(int),f2(int),f3(int),f4(int);\nint main(void){printf("%%d\\n", f1(1)+f2(2)+f3(3)+f4(4)); return 0;}\n' > main.c
printf 'OBJS=main.o f1.o f2.o f3.o f4.o\napp: $(OBJS)\n\tgcc -o $@ $(OBJS)\n%%.o: %%.c\n\tgcc -O2 -c $<\n' > Makefile
make -j2 -s >/dev/null; ./app; ls *.o | wc -l; make -s -q app && echo up-to-date
)sh";

TEST_P(ProgramsTest, MakeJ2BuildsAMultiFileProgram) {
  ExpectScriptSameAsNative(kMakeScript, {"/usr/bin/make", "/usr/bin/gcc"});
}

// WAL mode maps the -shm file MAP_SHARED.
constexpr char kSqliteScript[] = R"sh(
d=$1; mkdir -p "$d"; cd "$d"
sqlite3 db.sqlite 'create table t(a integer, b text); insert into t values (1,"x"),(2,"y"),(3,"z"); select count(*), sum(a), group_concat(b) from t; pragma journal_mode=wal; insert into t values (4, "w"); select max(a) from t;'
perl -e 'my %h=(b=>2,a=>1,c=>3); print join(",", map {"$_=$h{$_}"} sort keys %h), "\n"; my $s="Hello World"; (my $t=$s)=~s/o/0/g; printf("%s %d\n", $t, length $s); my $pid=fork(); if(!$pid){exit 7} waitpid($pid,0); print $?>>8, "\n";'
)sh";

TEST_P(ProgramsTest, Sqlite3WithWal) {
  ExpectScriptSameAsNative(kSqliteScript, {"/usr/bin/sqlite3"});
}

constexpr char kPerlScript[] = R"sh(
find /usr/share/doc -maxdepth 1 -name 'lib*' | sort | head -40 | xargs -P2 -n5 echo | tr ' ' '\n' | sort | wc -l
)sh";

TEST_P(ProgramsTest, PerlHashesRegexAndFork) {
  ExpectScriptSameAsNative(kPerlScript, {"/usr/bin/perl"});
}

constexpr char kFindXargsScript[] = R"sh(
bash -c 'trap "echo trapped USR1" USR1; trap "echo bye" EXIT; (sleep 0.2; echo job1) & (echo job2) & wait; kill -USR1 $$; f(){ local x=$1; echo "f:$x"; }; f 9; sleep 0.1 & wait $!; echo "rc=$?"; jobs; echo done'
)sh";

TEST_P(ProgramsTest, FindPipedToParallelXargs) {
  ExpectScriptSameAsNative(kFindXargsScript, {"/usr/bin/find", "/usr/bin/xargs"});
}

// Background jobs, wait, traps on a signal the shell sends itself and on EXIT.
constexpr char kBashJobsScript[] = R"sh(

)sh";

TEST_P(ProgramsTest, BashJobsTrapsAndWait) {
  ExpectScriptSameAsNative(kBashJobsScript, {"/bin/bash"});
}

constexpr char kVenvScript[] = R"sh(
set -e
d=$1; mkdir -p "$d"; cd "$d"
/usr/bin/python3 -m venv --without-pip v
v/bin/python -c 'import sys, os; print(sys.prefix == os.path.abspath("v"), sys.prefix != sys.base_prefix)'
ls v/bin | sort | tr '\n' ' '; echo
)sh";

TEST_P(ProgramsTest, PythonVenv) { ExpectScriptSameAsNative(kVenvScript, {"/usr/bin/python3"}); }

constexpr char kNodeScript[] = R"js(
const fs = require('fs'), cp = require('child_process'), path = require('path');
const { Worker } = require('worker_threads');
const d = process.argv[process.argv.length - 1]; fs.mkdirSync(d, { recursive: true });
fs.writeFileSync(path.join(d, 'a.txt'), 'hello\n');
console.log(fs.readFileSync(path.join(d, 'a.txt'), 'utf8').trim(), fs.readdirSync(d).join(','));
console.log(cp.execFileSync('/bin/echo', ['from', 'child']).toString().trim());
const w = new Worker('const {parentPort}=require("worker_threads"); let s=0; for (let i=0;i<1e6;i++) s+=i; parentPort.postMessage(s);', { eval: true });
w.on('message', (m) => { console.log('worker', m); });
w.on('exit', (c) => { console.log('worker exit', c);
  setTimeout(() => { console.log('timer 2');
    cp.exec('echo async child; exit 3', (err, out) => console.log(out.trim(), err.code)); }, 250);
  setTimeout(() => console.log('timer 1'), 5); });
)js";

// Timer 2 is set before timer 1 and due 245 ms after it: node takes each timer's start
// from the clock when it is set, so a stall of the main thread between the two calls
// (on a loaded 2-core machine, while the worker's thread is torn down in the sandbox,
// 15 ms was not enough) must not reorder them.
TEST_P(ProgramsTest, NodeTimersFsChildProcessAndWorkers) {
  if (!HostPathExists("/usr/bin/node")) GTEST_SKIP() << "no /usr/bin/node";
  ExpectSameAsNative({"/usr/bin/node", "-e", kNodeScript, "@DIR@"});
}

// A Python program (ctypes) makes a System V segment, a second process attaches it by
// key and answers through it, and util-linux's ipcs (which reads /proc/sysvipc/shm and
// calls shmctl) shows it attached, removed-but-attached ("dest") and gone; ipcmk/ipcrm
// make and remove another. Natively it runs in a fresh IPC namespace (as the sandbox is
// one), so ids start at 0 on both sides and the host's segments are never touched.
constexpr char kSysvShmScript[] = R"py(
import ctypes, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmat.restype = ctypes.c_void_p
libc.shmdt.argtypes = [ctypes.c_void_p]
libc.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
IPC_CREAT, IPC_RMID = 0o1000, 0
def run(*argv):
    sys.stdout.flush()
    subprocess.run(argv, check=True)
shmid = libc.shmget(0x5eed, 65536, IPC_CREAT | 0o640)
addr = libc.shmat(shmid, None, 0)
ctypes.memmove(addr, b"hello from python", 17)
reader = ("import ctypes; l = ctypes.CDLL(None); l.shmat.restype = ctypes.c_void_p; "
          "a = l.shmat(l.shmget(0x5eed, 0, 0), None, 0); "
          "print('child reads', ctypes.string_at(a, 17).decode()); "
          "ctypes.memmove(a + 100, b'reply', 5)")
run(sys.executable, "-c", reader)
print("parent reads", ctypes.string_at(addr + 100, 5).decode())
run("ipcs", "-m")
run("ipcs", "-m", "-u")
libc.shmctl(shmid, IPC_RMID, None)
run("ipcs", "-m")
libc.shmdt(addr)
run("ipcs", "-m")
made = subprocess.run(["ipcmk", "-M", "8192"], check=True, capture_output=True, text=True)
new_id = made.stdout.split()[-1]
listed = subprocess.run(["ipcs", "-m"], check=True, capture_output=True, text=True).stdout
# ipcmk picks a random key: show the other columns.
print([line.split()[1:] for line in listed.splitlines() if line.split()[1:2] == [new_id]])
run("ipcrm", "-m", new_id)
run("ipcs", "-m", "-l")
)py";

TEST_P(ProgramsTest, IpcsShowsSysvSharedMemoryOfAPythonProgram) {
  for (const char* tool : {"/usr/bin/python3", "/usr/bin/ipcs", "/usr/bin/ipcmk", "/usr/bin/ipcrm",
                           "/usr/bin/unshare"}) {
    if (!HostPathExists(tool)) GTEST_SKIP() << "no " << tool;
  }
  if (Native({"/usr/bin/unshare", "--ipc", "/bin/true"}).exit_code != 0) {
    GTEST_SKIP() << "no private IPC namespace for the native run";
  }
  RunResult native =
      Native({"/usr/bin/unshare", "--ipc", "/usr/bin/python3", "-c", kSysvShmScript});
  ASSERT_EQ(native.exit_code, 0) << native.Describe();
  RunResult sandboxed = Sandboxed({"/usr/bin/python3", "-c", kSysvShmScript}, {"--user", "0"});
  EXPECT_EQ(sandboxed.exit_code, 0) << sandboxed.Describe();
  EXPECT_EQ(sandboxed.out, native.out)
      << "sandboxed: " << sandboxed.Describe() << "\nnative: " << native.Describe();
  // What a user looks for: the segment, attached once, then marked for destruction.
  EXPECT_NE(sandboxed.out.find("child reads hello from python\nparent reads reply\n"),
            std::string::npos);
  EXPECT_NE(sandboxed.out.find("0x00005eed 0          root       640        65536      1"),
            std::string::npos)
      << sandboxed.out;
  EXPECT_NE(sandboxed.out.find("0x00000000 0          root       640        65536      1"
                               "          dest"),
            std::string::npos)
      << sandboxed.out;
}

INSTANTIATE_TEST_SUITE_P(Platforms, ProgramsTest, ::testing::ValuesIn(kTestPlatforms));

}  // namespace
}  // namespace usentry::testing
