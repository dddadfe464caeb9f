// Egress end to end, in a private internet: each case runs tests/integration/netlab.py
// under `unshare --net` (a network namespace this test creates, holding only the lab's
// addresses), with usentry inside it pointed at the lab's DNS server. The lab reports
// every connection each of its servers saw, so "denied" is proven on the far side too:
// the blocked server never heard from the sandbox. Nothing here can reach a real
// network: the namespace has no route anywhere else.
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "nlohmann/json.hpp"
#include "tests/integration/runner.h"

namespace usentry::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kCurl[] = "/usr/bin/curl";
constexpr char kLabDns[] = "203.0.113.53";

struct LabRun {
  RunResult run;
  Json report;                // netlab's: exit_code, hits
  std::vector<Json> audit;    // the sandbox's --audit records
  std::vector<Json> net_log;  // the --net-log lines
  std::string audit_raw, net_log_raw;

  // Whether the lab server `server` ("203.0.113.10", "10.1.2.3:7"...) saw anything.
  bool Reached(const std::string& server) const {
    for (const Json& h : report.value("hits", Json::array())) {
      if (h.value("server", "") == server) return true;
    }
    return false;
  }
  // DNS queries the lab's server received, "name TYPE".
  std::vector<std::string> DnsQueries() const {
    std::vector<std::string> out;
    for (const Json& h : report.value("hits", Json::array())) {
      if (h.value("kind", "") == "dns") out.push_back(h.value("detail", ""));
    }
    return out;
  }
  std::vector<Json> Net(const std::string& op) const {
    std::vector<Json> out;
    for (const Json& r : RecordsOfEvent(audit, "net")) {
      if (r.value("op", "") == op) out.push_back(r);
    }
    return out;
  }
  std::string Describe() const {
    return absl::StrCat(run.Describe(), "\n--- lab report ---\n", report.dump(),
                        "\n--- audit ---\n", audit_raw, "\n--- net-log ---\n", net_log_raw);
  }
};

class EgressTest : public SandboxTest {
 public:
  void SetUp() override {
    SandboxTest::SetUp();
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create a network namespace (CI is root)";
    if (access("/usr/bin/unshare", X_OK) != 0 || access("/usr/sbin/ip", X_OK) != 0) {
      GTEST_SKIP() << "needs unshare (util-linux) and ip (iproute2)";
    }
  }

  // Runs `argv` in the lab: under usentry (with --dns pointing at the lab, --audit and
  // --net-log, plus `flags`), or natively when `sandboxed` is false.
  LabRun InLab(const std::vector<std::string>& argv, const std::vector<std::string>& flags,
               bool sandboxed = true) {
    RunRequest req;
    req.argv = {"/usr/bin/unshare",
                "--net",
                kPython,
                NETLAB_PY,
                "--report",
                dir_.path() + "/report.json",
                "--lab-dir",
                dir_.path() + "/lab",
                "--"};
    if (sandboxed) {
      std::vector<std::string> u = {USENTRY_BIN, "run",         "--platform", GetParam(),
                                    "--dns",     kLabDns,       "--audit",    audit_path(),
                                    "--net-log", net_log_path()};
      req.argv.insert(req.argv.end(), u.begin(), u.end());
      req.argv.insert(req.argv.end(), flags.begin(), flags.end());
      req.argv.push_back("--");
    }
    req.argv.insert(req.argv.end(), argv.begin(), argv.end());
    req.env = SandboxDefaultEnv();
    req.timeout_seconds = 120;
    LabRun r;
    r.run = RunProcess(req);
    r.report = Json::parse(ReadHostFile(dir_.path() + "/report.json"), nullptr, false);
    // The lab exits 0 when it ran the command; the command's own status is in the report.
    EXPECT_EQ(r.run.exit_code, 0) << "netlab failed: " << r.run.Describe();
    if (r.report.is_object()) r.run.exit_code = r.report.value("exit_code", -1);
    if (sandboxed) {
      r.audit_raw = ReadHostFile(audit_path());
      r.net_log_raw = ReadHostFile(net_log_path());
      r.audit = ReadAuditRecords(audit_path());
      r.net_log = ReadAuditRecords(net_log_path());
    }
    return r;
  }

  // A Python program run in the lab under usentry.
  LabRun Python(const std::string& program, const std::vector<std::string>& flags) {
    return InLab({kPython, "-c", program}, flags);
  }

  std::string audit_path() const { return dir_.path() + "/audit.jsonl"; }
  std::string net_log_path() const { return dir_.path() + "/net.jsonl"; }

  TempDir dir_;
};

// Prints what connecting to HOST:PORT over TCP gave: the page's first line, or the errno.
constexpr char kConnect[] = R"(
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
try:
    s = socket.create_connection((host, port), timeout=10)
    s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
    data = b""
    while True:
        b = s.recv(4096)
        if not b: break
        data += b
    print(data.split(b"\r\n\r\n", 1)[1].decode().strip())
except socket.gaierror as e:
    print("gaierror", e.errno)
except OSError as e:
    print("oserror", e.errno)
)";

LabRun Connect(EgressTest& t, const std::string& host, int port,
               const std::vector<std::string>& flags) {
  return t.InLab({kPython, "-c", kConnect, host, std::to_string(port)}, flags);
}

TEST_P(EgressTest, AnAllowedNameIsResolvedAndReachedAndEveryStepIsRecorded) {
  LabRun r = InLab({kCurl, "-sS", "http://allowed.test/"}, {"--allow-net", "allowed.test"});
  ASSERT_EQ(r.run.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.run.out, "hello from 203.0.113.10\n") << r.Describe();
  EXPECT_TRUE(r.Reached("203.0.113.10")) << r.Describe();
  // The sandbox asked its own resolver; netgate asked the lab's server.
  EXPECT_THAT(r.DnsQueries(), ::testing::Contains("allowed.test A")) << r.Describe();
  std::vector<Json> resolves = r.Net("resolve");
  ASSERT_FALSE(resolves.empty()) << r.Describe();
  EXPECT_EQ(resolves[0].value("decision", ""), "allowed");
  std::vector<Json> connects = r.Net("connect");
  ASSERT_EQ(connects.size(), 1u) << r.Describe();
  EXPECT_EQ(connects[0].value("dst", ""), "203.0.113.10:80/tcp");
  EXPECT_EQ(connects[0].value("name", ""), "allowed.test");
  EXPECT_EQ(connects[0].value("result", ""), "connected");
  std::vector<Json> closes = r.Net("close");
  ASSERT_EQ(closes.size(), 1u) << r.Describe();
  EXPECT_GT(closes[0].value("bytes_in", 0), 0) << r.Describe();
  EXPECT_GT(closes[0].value("bytes_out", 0), 0) << r.Describe();
  // netgate's own log: the resolution, the dial, and the kernel's byte counts at close.
  bool dialed = false, closed = false;
  for (const Json& l : r.net_log) {
    if (l.value("by", "") != "netgate") continue;
    if (l.value("event", "") == "connect" && l.value("result", "") == "connected") dialed = true;
    if (l.value("event", "") == "close") {
      closed = true;
      EXPECT_EQ(l.value("bytes_in", -1), closes[0].value("bytes_in", -2)) << r.Describe();
      EXPECT_EQ(l.value("bytes_out", -1), closes[0].value("bytes_out", -2)) << r.Describe();
    }
  }
  EXPECT_TRUE(dialed && closed) << r.Describe();
}

TEST_P(EgressTest, AnUnlistedNameIsNxdomainAndNeverAskedUpstream) {
  LabRun r = Connect(*this, "other.test", 80, {"--allow-net", "allowed.test", "--explain"});
  EXPECT_THAT(r.run.out, HasSubstr("gaierror -2")) << r.Describe();  // EAI_NONAME
  EXPECT_FALSE(r.Reached("203.0.113.20")) << r.Describe();
  EXPECT_THAT(r.DnsQueries(), Not(::testing::Contains(HasSubstr("other.test")))) << r.Describe();
  EXPECT_THAT(r.run.err,
              HasSubstr("usentry: resolve other.test denied: other.test is not in the allowlist"))
      << r.Describe();
  std::vector<Json> resolves = r.Net("resolve");
  ASSERT_FALSE(resolves.empty()) << r.Describe();
  EXPECT_EQ(resolves[0].value("decision", ""), "denied");
  EXPECT_EQ(resolves[0].value("rcode", ""), "NXDOMAIN");
}

TEST_P(EgressTest, AnAllowedNameThatResolvesToAPrivateAddressIsRefused) {
  LabRun r = Connect(*this, "private.test", 80, {"--allow-net", "private.test", "--explain"});
  EXPECT_THAT(r.run.out, ::testing::StartsWith("gaierror")) << r.Describe();
  EXPECT_FALSE(r.Reached("10.1.2.3")) << r.Describe();
  EXPECT_THAT(r.run.err, HasSubstr("always-blocked")) << r.Describe();
  std::vector<Json> resolves = r.Net("resolve");
  ASSERT_FALSE(resolves.empty()) << r.Describe();
  EXPECT_EQ(resolves[0].value("decision", ""), "denied") << r.Describe();
  EXPECT_EQ(resolves[0].value("rcode", ""), "REFUSED") << r.Describe();
  // Connecting to the address anyway: refused before netgate dials.
  LabRun direct = Connect(*this, "10.1.2.3", 80, {"--allow-net", "private.test"});
  EXPECT_THAT(direct.run.out, HasSubstr("oserror 13")) << direct.Describe();  // EACCES
  EXPECT_FALSE(direct.Reached("10.1.2.3")) << direct.Describe();
}

TEST_P(EgressTest, ALiteralAddressNoAllowedNameResolvedToIsRefused) {
  LabRun r = Connect(*this, "203.0.113.20", 80, {"--allow-net", "allowed.test", "--explain"});
  EXPECT_THAT(r.run.out, HasSubstr("oserror 13")) << r.Describe();
  EXPECT_FALSE(r.Reached("203.0.113.20")) << r.Describe();
  EXPECT_THAT(r.run.err, HasSubstr("usentry: connect 203.0.113.20:80/tcp denied: 203.0.113.20 was "
                                   "not resolved from an allowed name"))
      << r.Describe();
  std::vector<Json> connects = r.Net("connect");
  ASSERT_EQ(connects.size(), 1u) << r.Describe();
  EXPECT_EQ(connects[0].value("decision", ""), "denied");
  EXPECT_EQ(connects[0].value("result", ""), "EACCES");
  // The same address, named by an allowed CIDR, is reached.
  LabRun cidr = Connect(*this, "203.0.113.20", 80, {"--allow-net", "203.0.113.0/24:80"});
  EXPECT_EQ(cidr.run.out, "hello from 203.0.113.20\n") << cidr.Describe();
}

TEST_P(EgressTest, ARebindingServerCannotGetAConnectThrough) {
  // rebind.test answers 198.51.100.30 first and 10.1.2.3 afterwards.
  constexpr char kProgram[] = R"(
import socket
def attempt():
    try:
        addrs = {a[4][0] for a in socket.getaddrinfo("rebind.test", 80, socket.AF_INET, socket.SOCK_STREAM)}
    except socket.gaierror as e:
        print("resolve failed", e.errno); return
    for a in sorted(addrs):
        try:
            socket.create_connection((a, 80), timeout=10).close(); print("connected", a)
        except OSError as e:
            print("refused", a, e.errno)
attempt(); attempt()
try:
    socket.create_connection(("10.1.2.3", 80), timeout=10); print("connected 10.1.2.3")
except OSError as e:
    print("refused 10.1.2.3", e.errno)
)";
  LabRun r = Python(kProgram, {"--allow-net", "rebind.test"});
  EXPECT_EQ(r.run.out, "connected 198.51.100.30\nresolve failed -3\nrefused 10.1.2.3 13\n")
      << r.Describe();
  EXPECT_TRUE(r.Reached("198.51.100.30")) << r.Describe();
  EXPECT_FALSE(r.Reached("10.1.2.3")) << r.Describe();
  // Upstream was asked each time (glibc retries a REFUSED answer once more).
  EXPECT_GE(r.DnsQueries().size(), 2u) << r.Describe();
}

TEST_P(EgressTest, MetadataIsRefusedEvenUnderAWildcardAndAWorldCidr) {
  std::vector<std::string> open_world = {"--allow-net", "*", "--allow-net", "0.0.0.0/0",
                                         "--explain"};
  LabRun by_ip = Connect(*this, "169.254.169.254", 80, open_world);
  EXPECT_THAT(by_ip.run.out, HasSubstr("oserror 13")) << by_ip.Describe();
  EXPECT_THAT(by_ip.run.err, HasSubstr("link-local, cloud metadata")) << by_ip.Describe();
  LabRun by_name = Connect(*this, "meta.test", 80, open_world);
  EXPECT_THAT(by_name.run.out, ::testing::StartsWith("gaierror")) << by_name.Describe();
  EXPECT_FALSE(by_ip.Reached("169.254.169.254") || by_name.Reached("169.254.169.254"));
  // The world is open otherwise.
  LabRun ok = Connect(*this, "other.test", 80, open_world);
  EXPECT_EQ(ok.run.out, "hello from 203.0.113.20\n") << ok.Describe();
}

TEST_P(EgressTest, TheHostsLoopbackIsReachedOnlyThroughAnAllowedHostPort) {
  // 127.0.0.1 is the sandbox's own loopback: nothing listens there.
  LabRun inside = Connect(*this, "127.0.0.1", 8080, {"--allow-net", "*"});
  EXPECT_THAT(inside.run.out, HasSubstr("oserror 111")) << inside.Describe();  // ECONNREFUSED
  EXPECT_FALSE(inside.Reached("127.0.0.1:8080")) << inside.Describe();
  LabRun named = Connect(*this, "loopback.test", 8080, {"--allow-net", "loopback.test"});
  EXPECT_THAT(named.run.out, ::testing::StartsWith("gaierror")) << named.Describe();
  LabRun host = Connect(*this, "host.usentry.internal", 8080, {"--allow-host-port", "8080"});
  EXPECT_EQ(host.run.out, "hello from 127.0.0.1:8080\n") << host.Describe();
  LabRun other_port = Connect(*this, "host.usentry.internal", 7, {"--allow-host-port", "8080"});
  EXPECT_THAT(other_port.run.out, HasSubstr("oserror 13")) << other_port.Describe();
  EXPECT_FALSE(other_port.Reached("127.0.0.1:7")) << other_port.Describe();
}

TEST_P(EgressTest, PortAndProtocolRulesHold) {
  constexpr char kEcho[] = R"(
import socket
for proto in ("tcp", "udp"):
    try:
        if proto == "tcp":
            s = socket.create_connection(("udp.test", 7), timeout=10)
            s.sendall(b"ping"); print(proto, s.recv(16).decode())
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10)
            s.sendto(b"ping", ("udp.test", 7)); print(proto, s.recvfrom(16)[0].decode())
    except OSError as e:
        print(proto, "error", e.errno)
)";
  LabRun tcp_only = Python(kEcho, {"--allow-net", "udp.test:7"});
  EXPECT_EQ(tcp_only.run.out, "tcp ping\nudp error 13\n") << tcp_only.Describe();
  LabRun udp_only = Python(kEcho, {"--allow-net", "udp.test:7/udp"});
  EXPECT_EQ(udp_only.run.out, "tcp error 13\nudp ping\n") << udp_only.Describe();
  EXPECT_TRUE(udp_only.Reached("203.0.113.10:7/udp")) << udp_only.Describe();
  LabRun wrong_port = Connect(*this, "udp.test", 80, {"--allow-net", "udp.test:7"});
  EXPECT_THAT(wrong_port.run.out, HasSubstr("oserror 13")) << wrong_port.Describe();
  EXPECT_FALSE(wrong_port.Reached("203.0.113.10")) << wrong_port.Describe();
}

TEST_P(EgressTest, WithoutAPolicyThereIsNoNetworkAtAll) {
  LabRun name = Connect(*this, "allowed.test", 80, {"--explain"});
  EXPECT_THAT(name.run.out, ::testing::StartsWith("gaierror")) << name.Describe();
  LabRun ip = Connect(*this, "203.0.113.10", 80, {"--explain"});
  EXPECT_THAT(ip.run.out, HasSubstr("oserror 101")) << ip.Describe();  // ENETUNREACH
  EXPECT_THAT(ip.run.err, HasSubstr("the sandbox has no network")) << ip.Describe();
  EXPECT_FALSE(name.Reached("203.0.113.10") || ip.Reached("203.0.113.10"));
  EXPECT_TRUE(name.DnsQueries().empty() && ip.DnsQueries().empty());
}

TEST_P(EgressTest, CnamesWildcardsAndIpv6) {
  LabRun alias = Connect(*this, "alias.test", 80, {"--allow-net", "alias.test"});
  EXPECT_EQ(alias.run.out, "hello from 203.0.113.10\n") << alias.Describe();
  LabRun wild = Connect(*this, "sub.wild.test", 80, {"--allow-net", "*.wild.test"});
  EXPECT_EQ(wild.run.out, "hello from 203.0.113.20\n") << wild.Describe();
  LabRun v6 = Connect(*this, "2001:db8::10", 80, {"--allow-net", "2001:db8::/32"});
  EXPECT_EQ(v6.run.out, "hello from 2001:db8::10\n") << v6.Describe();
}

TEST_P(EgressTest, PythonUrllibAllowedAndDenied) {
  constexpr char kFetch[] = R"(
import sys, urllib.request
for url in sys.argv[1:]:
    try:
        print(urllib.request.urlopen(url, timeout=10).read().decode().strip())
    except Exception as e:
        print("failed", type(e).__name__)
)";
  LabRun r = InLab(
      {kPython, "-c", kFetch, "http://allowed.test/", "http://other.test/", "http://10.1.2.3/"},
      {"--allow-net", "allowed.test"});
  EXPECT_EQ(r.run.out, "hello from 203.0.113.10\nfailed URLError\nfailed URLError\n")
      << r.Describe();
  EXPECT_FALSE(r.Reached("203.0.113.20") || r.Reached("10.1.2.3")) << r.Describe();
  // Natively in the same lab the fetch by address works: the page is the lab's.
  LabRun native = InLab({kPython, "-c", kFetch, "http://203.0.113.10/"}, {}, false);
  EXPECT_EQ(native.run.out, "hello from 203.0.113.10\n") << native.Describe();
}

TEST_P(EgressTest, PipDownloadsFromAnAllowedIndexOnly) {
  const std::vector<std::string> pip = {kPython,
                                        "-m",
                                        "pip",
                                        "download",
                                        "--no-deps",
                                        "--disable-pip-version-check",
                                        "--no-cache-dir",
                                        "--trusted-host",
                                        "pypi.test",
                                        "--index-url",
                                        "http://pypi.test/simple/",
                                        "-d",
                                        "/tmp/dl",
                                        "usentrylab"};
  std::vector<std::string> and_list = {"/bin/sh", "-c", "\"$@\" >/dev/null 2>&1; ls /tmp/dl", "sh"};
  and_list.insert(and_list.end(), pip.begin(), pip.end());
  LabRun ok = InLab(and_list, {"--allow-net", "pypi.test"});
  EXPECT_EQ(ok.run.out, "usentrylab-1.0-py3-none-any.whl\n") << ok.Describe();
  LabRun denied = InLab(and_list, {"--allow-net", "allowed.test"});
  EXPECT_EQ(denied.run.out, "") << denied.Describe();
  EXPECT_FALSE(denied.Reached("203.0.113.10")) << denied.Describe();
}

TEST_P(EgressTest, GitClonesOverHttpFromAnAllowedServerOnly) {
  const std::vector<std::string> clone = {
      "/bin/sh", "-c", "git clone -q http://git.test/git/repo.git /tmp/r 2>&1; cat /tmp/r/README"};
  LabRun ok = InLab(clone, {"--allow-net", "git.test"});
  EXPECT_EQ(ok.run.out, "cloned through netgate\n") << ok.Describe();
  LabRun denied = InLab(clone, {});
  EXPECT_THAT(denied.run.out, HasSubstr("Could not resolve host")) << denied.Describe();
  EXPECT_FALSE(denied.Reached("203.0.113.10")) << denied.Describe();
}

TEST_P(EgressTest, CurlReportsDenialsAsAUserWouldSeeThem) {
  LabRun name = InLab({kCurl, "-sS", "http://other.test/"}, {"--allow-net", "allowed.test"});
  EXPECT_EQ(name.run.exit_code, 6) << name.Describe();  // couldn't resolve host
  LabRun ip = InLab({kCurl, "-sS", "http://203.0.113.20/"}, {"--allow-net", "allowed.test"});
  EXPECT_EQ(ip.run.exit_code, 7) << ip.Describe();  // couldn't connect
  EXPECT_FALSE(name.Reached("203.0.113.20") || ip.Reached("203.0.113.20"));
}

// A hostile program with the world opened (`*` and 0.0.0.0/0, ::/0) tries every way it
// knows to a private address of the lab: other spellings of the address, mapped and
// embedding IPv6 forms, the gateway, UDP redirected after connecting somewhere allowed,
// DNS to a private resolver. None may be reached: the lab's private servers must report
// no connection and no datagram at all.
TEST_P(EgressTest, EveryRouteToAPrivateAddressIsClosed) {
  constexpr char kAttacks[] = R"(
import socket
def tcp(label, host, port, family=socket.AF_UNSPEC):
    try:
        infos = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
    except socket.gaierror as e:
        print(label, "gaierror"); return
    for fam, _, _, _, addr in infos:
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(addr); print(label, "CONNECTED", addr)
        except OSError as e:
            print(label, "refused", e.errno)
        finally:
            s.close()
for label, host in [("decimal", "2852039166"), ("octal", "0251.0376.0251.0376"),
                    ("hex", "0xa9.0xfe.0xa9.0xfe"), ("short", "169.254.43518"),
                    ("private-decimal", "167838211"), ("mapped", "::ffff:169.254.169.254"),
                    ("mapped-private", "::ffff:10.1.2.3"), ("nat64", "64:ff9b::a9fe:a9fe"),
                    ("6to4", "2002:a9fe:a9fe::1"), ("ula-metadata", "fd00:ec2::254"),
                    ("gateway-no-port", "10.0.2.2"), ("broadcast", "255.255.255.255"),
                    ("loopback-name", "loopback.test"), ("meta-name", "meta.test"),
                    ("mixed-name", "mixed.test")]:
    tcp(label, host, 80)
tcp("gateway-echo", "10.0.2.2", 7)
tcp("host-alias", "host.usentry.internal", 8080)
# UDP: connect somewhere allowed, then send elsewhere with an explicit address.
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.connect(("203.0.113.10", 7))
for label, dst in [("udp-redirect", ("10.1.2.3", 7)), ("udp-loop", ("127.0.0.1", 7)),
                   ("udp-meta", ("169.254.169.254", 7))]:
    try:
        u.sendto(b"x", dst); print(label, "sent")
    except OSError as e:
        print(label, "refused", e.errno)
# DNS sent straight to a private address is answered by the sandbox resolver, not sent.
q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x0ballowed\x04test\x00\x00\x01\x00\x01"
d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
d.settimeout(5)
d.sendto(q, ("10.1.2.3", 53))
try:
    print("dns-private", "answered" if d.recv(512)[:2] == b"\x12\x34" else "garbled")
except OSError as e:
    print("dns-private", "error", e.errno)
print("done")
)";
  LabRun r = Python(kAttacks, {"--allow-net", "*", "--allow-net", "0.0.0.0/0", "--allow-net",
                               "::/0", "--allow-net", "*:7/udp", "--allow-net", "0.0.0.0/0:7/udp"});
  EXPECT_THAT(r.run.out, HasSubstr("done")) << r.Describe();
  // mixed.test answers a public and a private address: only the public one is given.
  EXPECT_THAT(r.run.out, HasSubstr("mixed-name CONNECTED ('203.0.113.20', 80)\n")) << r.Describe();
  EXPECT_EQ(absl::StrContains(absl::StrReplaceAll(r.run.out, {{"mixed-name CONNECTED", ""}}),
                              "CONNECTED"),
            false)
      << r.Describe();
  // The sandbox's own name is never asked upstream.
  EXPECT_THAT(r.run.out, HasSubstr("host-alias gaierror")) << r.Describe();
  EXPECT_THAT(r.DnsQueries(), Not(::testing::Contains(HasSubstr("usentry.internal"))))
      << r.Describe();
  EXPECT_THAT(r.run.out, HasSubstr("dns-private answered")) << r.Describe();
  for (const char* server :
       {"10.1.2.3", "169.254.169.254", "127.0.0.1:8080", "10.1.2.3:7", "10.1.2.3:7/udp",
        "127.0.0.1:7", "127.0.0.1:7/udp", "169.254.169.254:7/udp"}) {
    EXPECT_FALSE(r.Reached(server)) << server << "\n" << r.Describe();
  }
  // The lab's own DNS server was asked only by netgate (the datagram to 10.1.2.3:53
  // never left), and only for names the sandbox resolver passed on.
  for (const std::string& q : r.DnsQueries()) {
    EXPECT_THAT(q, Not(HasSubstr("in-addr.arpa"))) << r.Describe();
  }
}

INSTANTIATE_TEST_SUITE_P(Platforms, EgressTest, ::testing::ValuesIn(kTestPlatforms));

}  // namespace
}  // namespace usentry::testing
