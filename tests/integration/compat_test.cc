// Programs that must behave in the sandbox exactly as on the host: busybox-static shell
// and applets, Debian's dynamically linked ls, bash, python3. Each runs natively and
// under usentry on the same inputs; stdout and exit status must match.
#include <sched.h>

#include <string>
#include <vector>

#include "tests/integration/runner.h"

namespace usentry::testing {
namespace {

class CompatTest : public SandboxTest {};

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
  ExpectSameAsNative({"/usr/bin/python3", "-c", kSpawnScript});
}

// With one CPU for the whole sandbox (`taskset -c 0`, a container given one CPU), the
// sentry and its stubs take turns on it: every hand-off goes through the scheduler
// (systrap's yields and futex waits, ptrace's stops), and a sentry thread has nowhere to
// move to. A shell forking in a loop and python3 with a thread and a child process must
// still finish, with the output they have on the host.
constexpr char kOneCpuScript[] = R"sh(
i=0; while [ $i -lt 30 ]; do /bin/true; i=$((i + 1)); done; echo "forks $i"
/usr/bin/python3 -c '
import subprocess, threading
sums = []
t = threading.Thread(target=lambda: sums.append(sum(range(100000))))
t.start(); t.join()
child = subprocess.run(["/bin/echo", "child"], capture_output=True, text=True)
print(sums[0], child.stdout.strip())
'
)sh";

// Holds the test's thread on the CPU it runs on while it lives: the processes it starts
// inherit the mask, so the sandbox has one CPU. Restored however the test ends.
class OneCpu {
 public:
  OneCpu() {
    ok_ = sched_getaffinity(0, sizeof(all_), &all_) == 0;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    ok_ = ok_ && sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  ~OneCpu() { sched_setaffinity(0, sizeof(all_), &all_); }
  bool ok() const { return ok_; }

 private:
  cpu_set_t all_;
  bool ok_;
};

TEST_P(CompatTest, EverythingOnOneCpu) {
  OneCpu one;
  ASSERT_TRUE(one.ok());
  ExpectSameAsNative({"/bin/sh", "-c", kOneCpuScript});
}

// Four python3 threads making syscalls that release the GIL. On the host a thread's
// syscall keeps its CPU; in the sandbox each one passes through the sentry, and before
// the sentry scheduled app threads itself (sentry/kernel/cpu_gate.h) every call let the
// other threads in on one CPU: the GIL changed hands at each, 200,000 futex calls for
// these 1,200 loops (~150 natively) and 65x native time for eight threads.
constexpr char kGilScript[] = R"py(
import os, threading
def work():
    for _ in range(300):
        os.stat("/")
        with open("/etc/hostname", "rb") as f:
            f.read()
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print("done", threading.active_count())
)py";

TEST_P(CompatTest, ThreadsOnOneCpuTakeTurns) {
  OneCpu one;
  ASSERT_TRUE(one.ok());
  // A thread that spins without syscalls still gives the CPU up at its slice's end.
  const std::string bin = SPIN_WAIT_BIN;
  RunResult native = Native({bin});
  ASSERT_EQ(native.exit_code, 0) << native.Describe();
  const std::string dir = bin.substr(0, bin.rfind('/'));
  RunResult spin = Sandboxed({"/w/spin_wait"}, {"--mount", dir + ":/w:ro"});
  EXPECT_EQ(spin.exit_code, 0) << spin.Describe();
  EXPECT_EQ(spin.out, native.out);

  TempDir audit_dir;
  const std::string audit = audit_dir.path() + "/audit.jsonl";
  RunResult r = Sandboxed({"/usr/bin/python3", "-c", kGilScript}, {"--audit", audit});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "done 1\n");
  std::vector<nlohmann::json> end = RecordsOfEvent(ReadAuditRecords(audit), "run_end");
  ASSERT_EQ(end.size(), 1u);
  const nlohmann::json& calls = end[0]["syscalls"];
  const uint64_t futex = calls.contains("futex") ? calls["futex"].get<uint64_t>() : 0;
  EXPECT_LT(futex, 5000u) << end[0].dump();
}

// Every syscall through the platform's slow path (systrap: a host signal each).
TEST_P(CompatTest, PythonWithoutSyscallPatching) {
  ExpectSameAsNative({"/usr/bin/python3", "-c", kPythonScript}, {"--no-syscall-patching"});
}

// The everyday data movers and memfds as Python uses them: os.sendfile and
// shutil.copyfile (sendfile on Linux), os.copy_file_range, memfd_create + a shared
// mmap coherent with pread/pwrite, posix_fallocate, and the scheduling queries.
constexpr char kEverydayScript[] = R"py(
import mmap, os, shutil, tempfile
d = tempfile.mkdtemp()
src, dst = os.path.join(d, "src"), os.path.join(d, "dst")
data = bytes(range(256)) * 1000
with open(src, "wb") as f:
    f.write(data)
with open(src, "rb") as i, open(dst, "wb") as o:
    print("sendfile", os.sendfile(o.fileno(), i.fileno(), 100, 5000), i.tell(), o.tell())
print(open(dst, "rb").read() == data[100:5100])
with open(src, "rb") as i, open(dst, "wb+") as o:
    print("copy_file_range", os.copy_file_range(i.fileno(), o.fileno(), 70000), i.tell(), o.tell())
    print(os.copy_file_range(i.fileno(), o.fileno(), 10, 255990, 0), os.pread(o.fileno(), 10, 0))
shutil.copyfile(src, dst)
print("copyfile", open(dst, "rb").read() == data)
fd = os.memfd_create("pyfd", os.MFD_CLOEXEC)
os.ftruncate(fd, 8192)
m = mmap.mmap(fd, 8192)
m[0:5] = b"hello"
print("memfd", os.pread(fd, 5, 0), os.readlink("/proc/self/fd/%d" % fd), os.fstat(fd).st_size)
os.pwrite(fd, b"HELLO", 4096)
print(m[4096:4101])
m.close()
os.close(fd)
with open(dst, "wb") as f:
    os.posix_fallocate(f.fileno(), 0, 12345)
print("fallocate", os.path.getsize(dst))
print("sched", os.sched_getparam(0).sched_priority, os.sched_getscheduler(0) == os.SCHED_OTHER)
p = os.getpriority(os.PRIO_PROCESS, 0)
os.setpriority(os.PRIO_PROCESS, 0, min(p + 1, 19))
print("nice", os.getpriority(os.PRIO_PROCESS, 0) - p, os.sched_get_priority_max(os.SCHED_FIFO))
shutil.rmtree(d)
)py";

TEST_P(CompatTest, PythonSendfileMemfdFallocate) {
  ExpectSameAsNative({"/usr/bin/python3", "-c", kEverydayScript});
}

// selectors.DefaultSelector is epoll on Linux: pipes level-triggered, a child process
// writing later, os.eventfd in semaphore and counter modes, selector unregister.
constexpr char kEpollScript[] = R"py(
import os, selectors, time
sel = selectors.DefaultSelector()
print(type(sel).__name__)
r, w = os.pipe()
sel.register(r, selectors.EVENT_READ, "pipe")
print(sel.select(0))
os.write(w, b"hello")
print([(k.data, ev) for k, ev in sel.select(1)])
print([(k.data, ev) for k, ev in sel.select(0)])
print(os.read(r, 100))
print(sel.select(0.05))
efd = os.eventfd(0, os.EFD_SEMAPHORE | os.EFD_NONBLOCK)
sel.register(efd, selectors.EVENT_READ | selectors.EVENT_WRITE, "efd")
print(sorted((k.data, ev) for k, ev in sel.select(0)))
os.eventfd_write(efd, 3)
print(sorted((k.data, ev) for k, ev in sel.select(0)))
print([os.eventfd_read(efd) for _ in range(3)])
try:
    os.eventfd_read(efd)
except BlockingIOError:
    print("EAGAIN")
sel.unregister(efd)
pid = os.fork()
if pid == 0:
    time.sleep(0.1)
    os.write(w, b"from child")
    os._exit(0)
print([(k.data, ev) for k, ev in sel.select(5)])
print(os.read(r, 100))
os.waitpid(pid, 0)
print(sorted(k.data for k in sel.get_map().values()))
sel.close()
c = os.eventfd(7)
print(os.eventfd_read(c), os.readlink("/proc/self/fd/%d" % c))
)py";

TEST_P(CompatTest, PythonSelectorsEpollAndEventfd) {
  ExpectSameAsNative({"/usr/bin/python3", "-c", kEpollScript});
}

// Threads: a queue.Queue fed by 8 worker threads, a ThreadPoolExecutor, a lock-protected
// counter, a condition variable and thread-local data. The output is made independent
// of scheduling order.
constexpr char kPythonThreadsScript[] = R"py(
import threading, queue, concurrent.futures, os
q = queue.Queue()
results = queue.Queue()
def worker(n):
    while True:
        item = q.get()
        if item is None:
            break
        results.put((item, item * item, threading.get_ident() != main_ident))
main_ident = threading.get_ident()
threads = [threading.Thread(target=worker, args=(i,), name=f"w{i}") for i in range(8)]
for t in threads: t.start()
for i in range(200): q.put(i)
for _ in threads: q.put(None)
for t in threads: t.join()
got = sorted(results.get() for _ in range(200))
print(len(got), sum(sq for _, sq, _ in got), all(other for _, _, other in got))
with concurrent.futures.ThreadPoolExecutor(max_workers=6) as ex:
    print(sum(ex.map(lambda x: x * 3, range(1000))))
    futs = [ex.submit(os.getpid) for _ in range(20)]
    print(all(f.result() == os.getpid() for f in futs))
lock = threading.Lock()
count = 0
def bump():
    global count
    for _ in range(2000):
        with lock:
            count += 1
ts = [threading.Thread(target=bump) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print(count)
cv = threading.Condition()
ready = []
def waiter(i):
    with cv:
        cv.wait_for(lambda: ready)
        ready.append(i)
ws = [threading.Thread(target=waiter, args=(i,)) for i in range(4)]
for w in ws: w.start()
with cv:
    ready.append("go")
    cv.notify_all()
for w in ws: w.join()
print(sorted(map(str, ready)))
local = threading.local()
def setlocal(v, out):
    local.v = v
    out.append(local.v)
out = []
ls = [threading.Thread(target=setlocal, args=(i, out)) for i in range(5)]
for t in ls: t.start()
for t in ls: t.join()
print(sorted(out), hasattr(local, "v"), threading.active_count())
ev = threading.Event()
timer = threading.Timer(0.05, ev.set)
timer.start()
print(ev.wait(5))
)py";

TEST_P(CompatTest, PythonThreads) {
  ExpectSameAsNative({"/usr/bin/python3", "-c", kPythonThreadsScript});
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

// The sandbox's loopback: http.server in a thread on 127.0.0.1 (kernel-chosen port),
// fetched with urllib.request; then a UDP echo over ::1 and a non-blocking connect.
constexpr char kPythonHttpScript[] = R"py(
import http.server, socket, threading, urllib.request, selectors
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/missing":
            self.send_error(404)
            return
        body = ("hello from %s" % self.path).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
port = server.server_address[1]
t = threading.Thread(target=server.serve_forever, daemon=True)
t.start()
for path in ("/", "/index.html", "/a/b?c=d"):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=30) as r:
        print(r.status, r.headers["Content-Type"], r.read().decode())
try:
    urllib.request.urlopen("http://127.0.0.1:%d/missing" % port, timeout=30).read()
except Exception as e:
    print(type(e).__name__)
server.shutdown()
server.server_close()
u1 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u1.bind(("::1", 0))
u2 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u2.sendto(b"ping", u1.getsockname())
data, peer = u1.recvfrom(100)
u1.sendto(data.upper(), peer)
print(u2.recvfrom(100)[0], peer[0])
l = socket.create_server(("127.0.0.1", 0))
c = socket.socket()
c.setblocking(False)
print(c.connect_ex(l.getsockname()) in (0, 115))
sel = selectors.DefaultSelector()
sel.register(c, selectors.EVENT_WRITE)
print(len(sel.select(5)), c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
)py";

TEST_P(CompatTest, PythonHttpServerOverLoopback) {
  ExpectSameAsNative({"/usr/bin/python3", "-c", kPythonHttpScript});
}

INSTANTIATE_TEST_SUITE_P(Platforms, CompatTest, ::testing::ValuesIn(kTestPlatforms));

// AF_UNIX sockets (sentry/net): a socketpair, a path-bound stream server with a forked
// client, SO_PEERCRED, a pipe end passed by SCM_RIGHTS to a forked child, datagrams
// between path and abstract names, seqpacket records. Processes, not threads (threads
// are not there yet).
constexpr char kUnixSocketScript[] = R"py(
import os, socket, struct, sys
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
a, b = socket.socketpair()
a.sendall(b"over the pair")
print(b.recv(100))
a.close()
print(b.recv(100))
path = os.path.join(d, "srv.sock")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(4)
print(srv.getsockname() == path, os.path.exists(path))
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    srv.close()
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    for i in range(3):
        c.sendall(("line %d\n" % i).encode())
    c.shutdown(socket.SHUT_WR)
    c.recv(100)
    os._exit(0)
conn, addr = srv.accept()
data = b""
while True:
    chunk = conn.recv(4)
    if not chunk:
        break
    data += chunk
print(data.decode().splitlines(), repr(addr))
pid_seen = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
print("peer is child:", pid_seen == pid)
conn.sendall(b"done")
conn.close()
print(os.waitpid(pid, 0)[1])
# Descriptors through SCM_RIGHTS to a forked child, which reports back.
r, w = os.pipe()
p1, p2 = socket.socketpair()
pid = os.fork()
if pid == 0:
    msg, fds, flags, _ = socket.recv_fds(p2, 100, 4)
    p2.sendall(b"child: " + msg + b" " + str(len(fds)).encode() + b" " + os.read(fds[0], 100))
    os._exit(0)
os.write(w, b"through SCM_RIGHTS")
socket.send_fds(p1, [b"fd"], [r])
print(p1.recv(100).decode())
print(os.waitpid(pid, 0)[1])
# Datagrams by path and abstract names.
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(os.path.join(d, "dg"))
c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
c.bind("\0usentry-compat-%d" % os.getpid())
c.sendto(b"datagram", os.path.join(d, "dg"))
msg, frm = s.recvfrom(100)
print(msg, frm[:15])
sp1, sp2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
sp1.send(b"record one"); sp1.send(b"two")
print(sp2.recv(6), sp2.recv(100))
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect(os.path.join(d, "missing"))
except OSError as e:
    print(type(e).__name__)
)py";

TEST_P(CompatTest, PythonUnixSockets) {
  ExpectSameAsNative({"/usr/bin/python3", "-c", kUnixSocketScript, "@DIR@"});
}

// multiprocessing.connection over AF_UNIX: Listener/Client with the HMAC handshake, and
// Pipe() (a socketpair).
constexpr char kMultiprocessingConnectionScript[] = R"py(
import os, sys
from multiprocessing.connection import Listener, Client, Pipe
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
addr = os.path.join(d, "mp.sock")
with Listener(addr, family="AF_UNIX", authkey=b"secret") as listener:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        c = Client(addr, family="AF_UNIX", authkey=b"secret")
        c.send({"n": [1, 2, 3], "s": "hi"})
        reply = c.recv()
        c.send(("echo", reply))
        c.close()
        os._exit(0)
    conn = listener.accept()
    obj = conn.recv()
    print("server got", sorted(obj.items()))
    conn.send(sum(obj["n"]))
    print("server got", conn.recv())
    conn.close()
    print(os.waitpid(pid, 0)[1])
print("socket file left:", os.path.exists(addr))
a, b = Pipe()
a.send([1, "two", 3.0])
print(b.recv(), b.poll(0))
)py";

TEST_P(CompatTest, PythonMultiprocessingConnection) {
  ExpectSameAsNative({"/usr/bin/python3", "-c", kMultiprocessingConnectionScript, "@DIR@"});
}

// socketserver's forking Unix stream server (poll-driven serve_forever, a child per
// connection, makefile() streams, shutdown(SHUT_WR) as end of request).
constexpr char kSocketServerScript[] = R"py(
import os, socket, socketserver, sys
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
path = os.path.join(d, "ss.sock")
class Echo(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write(line.upper())
class Server(socketserver.ForkingMixIn, socketserver.UnixStreamServer):
    pass
srv = Server(path, Echo)
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    srv.serve_forever(poll_interval=0.05)
    os._exit(0)
srv.socket.close()
for i in range(3):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.connect(path)
        f = c.makefile("rwb")
        f.write(b"hello %d\nsecond line\n" % i); f.flush()
        c.shutdown(socket.SHUT_WR)
        print(f.read().decode().split())
os.kill(pid, 15)
print(os.waitpid(pid, 0)[1])
)py";

TEST_P(CompatTest, PythonForkingUnixStreamServer) {
  ExpectSameAsNative({"/usr/bin/python3", "-c", kSocketServerScript, "@DIR@"});
}

// MAP_SHARED file mappings: multiprocessing's SharedMemory (a /dev/shm file) and its
// Lock/Semaphore (sem_open: futexes in a shared mapping) across a fork, and sqlite3 in
// WAL mode (the -shm index is a MAP_SHARED mapping) with two connections and a forked
// writer.
constexpr char kSharedMappingScript[] = R"py(
import os, sys, sqlite3
from multiprocessing import shared_memory, Lock, Semaphore
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
shm = shared_memory.SharedMemory(create=True, size=4096)
lock, done = Lock(), Semaphore(0)
shm.buf[:5] = b"hello"
def bump(buf, n):
    for _ in range(n):
        with lock:
            v = int.from_bytes(buf[8:16], "little")
            buf[8:16] = (v + 1).to_bytes(8, "little")
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    bump(shm.buf, 300)
    shm.buf[:5] = b"HELLO"
    done.release()
    os._exit(0)
bump(shm.buf, 300)
done.acquire()
print(bytes(shm.buf[:5]), int.from_bytes(shm.buf[8:16], "little"))
print(os.waitpid(pid, 0)[1])
shm.close()
shm.unlink()

db = os.path.join(d, "wal.db")
a = sqlite3.connect(db)
print(a.execute("PRAGMA journal_mode=WAL").fetchone())
a.execute("CREATE TABLE t(x INTEGER)")
a.commit()
b = sqlite3.connect(db)
a.execute("INSERT INTO t VALUES (1)")
a.commit()
print(b.execute("SELECT count(*), sum(x) FROM t").fetchone())
b.execute("INSERT INTO t VALUES (2)")
b.commit()
print(a.execute("SELECT count(*), sum(x) FROM t").fetchone())
print(os.path.exists(db + "-wal"), os.path.exists(db + "-shm"))
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    c = sqlite3.connect(db)
    c.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(10, 20)])
    c.commit()
    c.close()
    os._exit(0)
print(os.waitpid(pid, 0)[1])
print(a.execute("SELECT count(*), sum(x) FROM t").fetchone())
print(b.execute("SELECT max(x) FROM t").fetchone())
b.close()
print(a.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())
a.close()
print(sqlite3.connect(db).execute("SELECT count(*) FROM t").fetchone())
)py";

TEST_P(CompatTest, PythonSharedMemoryAndSqliteWal) {
  ExpectSameAsNative({"/usr/bin/python3", "-c", kSharedMappingScript, "@DIR@"});
}

// The same with the database in a --mount directory: sqlite's -shm file is a host file
// mapped MAP_SHARED by two connections in two processes. The host sees the database.
TEST_P(CompatTest, SqliteWalInAMountedDirectory) {
  TempDir native_dir, host_dir;
  RunResult native = Native({"/usr/bin/python3", "-c", kSharedMappingScript, native_dir.path()});
  RunResult sandboxed = Sandboxed({"/usr/bin/python3", "-c", kSharedMappingScript, "/w/db"},
                                  {"--user", "0", "--mount", host_dir.path() + ":/w:rw"});
  EXPECT_EQ(sandboxed.out, native.out) << sandboxed.Describe();
  EXPECT_EQ(sandboxed.exit_code, 0) << sandboxed.Describe();
  RunResult check = Native({"/usr/bin/python3", "-c",
                            "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("
                            "'SELECT count(*), sum(x) FROM t').fetchone())",
                            host_dir.path() + "/db/wal.db"});
  EXPECT_EQ(check.out, "(12, 148)\n") << check.Describe();
}

// Stores through a MAP_SHARED mapping of a file in a --mount directory: read() sees
// them at once, a forked child's stores are the parent's too, and the host file has
// them all after the run, the last one made with no msync, after close.
constexpr char kHostSharedMappingScript[] = R"py(
import mmap, os, sys
fn = os.path.join(sys.argv[1], "data.bin")
with open(fn, "wb") as f:
    f.write(b"A" * 8192)
fd = os.open(fn, os.O_RDWR)
m = mmap.mmap(fd, 8192)
m[0:5] = b"hello"
print(os.pread(fd, 5, 0))
os.pwrite(fd, b"WORLD", 100)
print(m[100:105])
if os.fork() == 0:
    m[200:205] = b"child"
    os._exit(0)
os.wait()
print(m[200:205])
m.flush()
os.ftruncate(fd, 4096)
print(os.fstat(fd).st_size, len(os.pread(fd, 8192, 0)))
m2 = mmap.mmap(fd, 4096, prot=mmap.PROT_READ)
print(m2[0:5])
m[300:305] = b"late!"
os.close(fd)
)py";

TEST_P(CompatTest, SharedMappingOfAMountedFileReachesTheHost) {
  TempDir native_dir, host_dir;
  RunResult native =
      Native({"/usr/bin/python3", "-c", kHostSharedMappingScript, native_dir.path()});
  RunResult sandboxed = Sandboxed({"/usr/bin/python3", "-c", kHostSharedMappingScript, "/w"},
                                  {"--user", "0", "--mount", host_dir.path() + ":/w:rw"});
  EXPECT_EQ(sandboxed.out, native.out) << sandboxed.Describe();
  EXPECT_EQ(sandboxed.exit_code, native.exit_code) << sandboxed.Describe();
  const std::string want = ReadHostFile(native_dir.path() + "/data.bin");
  ASSERT_EQ(want.size(), 4096u);
  EXPECT_EQ(want.substr(300, 5), "late!");
  EXPECT_EQ(ReadHostFile(host_dir.path() + "/data.bin"), want);
}

// Pseudo-terminals from Python: pty.openpty (canonical echo, ONLCR, raw mode via tty),
// pty.fork (the child is a session leader on its terminal; EIO once it is gone) and
// ttyname of the replica.
constexpr char kPtyScript[] = R"py(
import os, pty, tty, termios, select, signal
m, s = pty.openpty()
print("isatty", os.isatty(s), os.ttyname(s).startswith("/dev/pts/"))
os.write(m, b"hello\r")
print("echo", os.read(m, 100))
print("line", os.read(s, 100))
os.write(s, b"out\n")
print("onlcr", os.read(m, 100))
tty.setraw(s)
os.write(m, b"\x03raw\r")
print("raw", os.read(s, 100))
print("ready", select.select([m], [], [], 0)[0] == [])
os.close(s)
try:
    os.read(m, 1)
except OSError as e:
    print("master after close", e.errno)
os.close(m)
pid, fd = pty.fork()
if pid == 0:
    try:
        os.setsid()
        print("setsid worked")
    except OSError as e:
        print("child setsid", e.errno, os.getsid(0) == os.getpid(), os.isatty(0))
    print("pgrp", os.tcgetpgrp(0) == os.getpgrp())
    os._exit(3)
out = b""
while True:
    try:
        data = os.read(fd, 100)
    except OSError:
        break
    if not data:
        break
    out += data
print(out.decode().replace("\r\n", "|"))
print("status", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
)py";

TEST_P(CompatTest, PythonPty) { ExpectSameAsNative({"/usr/bin/python3", "-c", kPtyScript}); }

}  // namespace
}  // namespace usentry::testing
