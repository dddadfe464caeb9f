#!/usr/bin/python3
"""netlab: a small private internet for egress tests, inside a network namespace.

Run as root under `unshare --net` (the tests do: tests/integration/egress_test.cc). It
refuses to run in a network namespace that has any interface besides lo, so it can never
touch a real network. It then:
  - brings lo up and adds a veth pair (lab0/lab1) holding the lab's addresses: "public"
    ones from the documentation ranges (203.0.113.0/24, 198.51.100.0/24, 2001:db8::/32)
    and "private" ones the sandbox must never reach (10.1.2.3, 169.254.169.254, and the
    namespace's own 127.0.0.1);
  - serves HTTP on each of them (the page names the server), a TCP echo and a UDP echo,
    a git repository and a pip index over HTTP, and a DNS server at 203.0.113.53 whose
    zone points names at allowed and blocked addresses (rebind.test answers a public
    address first and a private one afterwards);
  - runs the command after "--" (usentry run ..., or a client natively), with its
    stdout/stderr passed through, and writes a JSON report: the command's exit status and
    every connection or datagram each server saw, so a test can prove what was *not*
    reached.

Usage: netlab.py --report FILE [--lab-dir DIR] -- COMMAND...
"""

import argparse
import http.server
import json
import os
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import zipfile

# name -> list of answers, one per query in turn (the last repeats); each answer is a
# list of (type, value) records.
ZONE = {
    "allowed.test": [[("A", "203.0.113.10")]],
    "other.test": [[("A", "203.0.113.20")]],
    "private.test": [[("A", "10.1.2.3")]],
    "meta.test": [[("A", "169.254.169.254")]],
    "loopback.test": [[("A", "127.0.0.1")]],
    "rebind.test": [[("A", "198.51.100.30")], [("A", "10.1.2.3")]],
    "mixed.test": [[("A", "203.0.113.20"), ("A", "10.1.2.3")]],
    "alias.test": [[("CNAME", "allowed.test"), ("A", "203.0.113.10")]],
    "v6.test": [[("AAAA", "2001:db8::10")]],
    "udp.test": [[("A", "203.0.113.10")]],
    "git.test": [[("A", "203.0.113.10")]],
    "pypi.test": [[("A", "203.0.113.10")]],
    "sub.wild.test": [[("A", "203.0.113.20")]],
}

PUBLIC4 = ["203.0.113.10", "203.0.113.20", "198.51.100.30", "203.0.113.53"]
PRIVATE4 = ["10.1.2.3", "169.254.169.254"]
PUBLIC6 = ["2001:db8::10"]
HTTP_ADDRS = ["203.0.113.10", "203.0.113.20", "198.51.100.30", "10.1.2.3", "169.254.169.254",
              "127.0.0.1", "2001:db8::10"]
ECHO_PORT = 7
HOST_PORT = 8080  # an HTTP server on the namespace's loopback: "the host" of the sandbox

hits_lock = threading.Lock()
hits = []  # {"server": ..., "kind": ..., "peer": ..., "detail": ...}


def hit(server, kind, peer, detail=""):
    with hits_lock:
        hits.append({"server": server, "kind": kind, "peer": peer, "detail": detail})


def sh(*args):
    subprocess.run(args, check=True)


def setup_network():
    # Asked over netlink, which answers for this process's network namespace (sysfs may
    # still show the host's).
    links = [name for _, name in socket.if_nameindex()]
    if links != ["lo"]:
        sys.exit(f"netlab: refusing to run: this network namespace has {links}; "
                 "run me under `unshare --net`")
    sh("ip", "link", "set", "lo", "up")
    sh("ip", "link", "add", "lab0", "type", "veth", "peer", "name", "lab1")
    sh("ip", "link", "set", "lab0", "up")
    sh("ip", "link", "set", "lab1", "up")
    for a in PUBLIC4 + PRIVATE4:
        sh("ip", "addr", "add", a + "/32", "dev", "lab0")
    for a in PUBLIC6:
        sh("ip", "addr", "add", a + "/128", "dev", "lab0", "nodad")


# --- HTTP ---

class Handler(http.server.SimpleHTTPRequestHandler):
    server_version = "netlab"

    def log_message(self, *args):
        pass

    def do_GET(self):
        host = self.server.lab_name
        hit(host, "http", self.client_address[0], self.path)
        if self.path.startswith("/git/") or self.path.startswith("/simple/") or \
                self.path.startswith("/files/"):
            return super().do_GET()
        body = f"hello from {host}\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serve_http(addr, port, directory):
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET

    class Server(http.server.ThreadingHTTPServer):
        address_family = family
        allow_reuse_address = True

        # Every connection counts, also one that never sends a request.
        def verify_request(self, request, client_address):
            hit(self.lab_name, "connection", client_address[0])
            return True

    srv = Server((addr, port), lambda *a, **k: Handler(*a, directory=directory, **k))
    srv.lab_name = addr if port == 80 else f"{addr}:{port}"
    threading.Thread(target=srv.serve_forever, daemon=True).start()


# --- echo ---

def serve_tcp_echo(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, ECHO_PORT))
    s.listen(16)

    def one(c, peer):
        hit(f"{addr}:{ECHO_PORT}", "tcp", peer[0])
        with c:
            while True:
                data = c.recv(65536)
                if not data:
                    return
                c.sendall(data)

    def loop():
        while True:
            c, peer = s.accept()
            threading.Thread(target=one, args=(c, peer), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def serve_udp_echo(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, ECHO_PORT))

    def loop():
        while True:
            data, peer = s.recvfrom(65536)
            hit(f"{addr}:{ECHO_PORT}/udp", "udp", peer[0])
            s.sendto(data, peer)

    threading.Thread(target=loop, daemon=True).start()


# --- DNS ---

QTYPES = {1: "A", 28: "AAAA", 5: "CNAME"}
query_counts = {}


def encode_name(name):
    out = b""
    for label in name.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def read_name(msg, off):
    labels = []
    while True:
        n = msg[off]
        if n == 0:
            return ".".join(labels), off + 1
        if n & 0xC0:
            raise ValueError("no compression in queries here")
        labels.append(msg[off + 1:off + 1 + n].decode().lower())
        off += 1 + n


def dns_answer(query):
    qid, flags, qd = struct.unpack("!HHH", query[:6])
    name, off = read_name(query, 12)
    qtype, qclass = struct.unpack("!HH", query[off:off + 4])
    question = query[12:off + 4]
    hit("203.0.113.53:53", "dns", "", f"{name} {QTYPES.get(qtype, qtype)}")
    answers = b""
    count = 0
    rcode = 0
    if name in ZONE:
        seq = ZONE[name]
        key = (name, qtype)
        i = query_counts.get(key, 0)
        query_counts[key] = i + 1
        records = seq[min(i, len(seq) - 1)]
        owner = encode_name(name)
        for rtype, value in records:
            if rtype == "CNAME":
                rdata = encode_name(value)
                answers += owner + struct.pack("!HHIH", 5, 1, 30, len(rdata)) + rdata
                owner = encode_name(value)
                count += 1
            elif rtype == "A" and qtype == 1:
                rdata = socket.inet_pton(socket.AF_INET, value)
                answers += owner + struct.pack("!HHIH", 1, 1, 30, 4) + rdata
                count += 1
            elif rtype == "AAAA" and qtype == 28:
                rdata = socket.inet_pton(socket.AF_INET6, value)
                answers += owner + struct.pack("!HHIH", 28, 1, 30, 16) + rdata
                count += 1
    else:
        rcode = 3
    header = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, count, 0, 0)
    return header + question + answers


def serve_dns(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))

    def loop():
        while True:
            data, peer = s.recvfrom(4096)
            try:
                s.sendto(dns_answer(data), peer)
            except Exception as e:  # a malformed query: no answer
                hit("203.0.113.53:53", "dns-error", peer[0], str(e))

    threading.Thread(target=loop, daemon=True).start()


# --- content: a git repository (dumb HTTP) and a pip index ---

def make_content(root):
    os.makedirs(root, exist_ok=True)
    repo = os.path.join(root, "git", "repo.git")
    if not os.path.exists(repo):
        work = os.path.join(root, "git-work")
        env = dict(os.environ, GIT_AUTHOR_NAME="lab", GIT_AUTHOR_EMAIL="lab@test",
                   GIT_COMMITTER_NAME="lab", GIT_COMMITTER_EMAIL="lab@test",
                   GIT_AUTHOR_DATE="2026-01-01T00:00:00Z",
                   GIT_COMMITTER_DATE="2026-01-01T00:00:00Z", HOME=root)
        subprocess.run(["git", "init", "-q", "-b", "main", work], check=True, env=env)
        with open(os.path.join(work, "README"), "w") as f:
            f.write("cloned through netgate\n")
        subprocess.run(["git", "-C", work, "add", "README"], check=True, env=env)
        subprocess.run(["git", "-C", work, "commit", "-qm", "first"], check=True, env=env)
        subprocess.run(["git", "clone", "-q", "--bare", work, repo], check=True, env=env)
        subprocess.run(["git", "-C", repo, "update-server-info"], check=True, env=env)
    wheel_name = "usentrylab-1.0-py3-none-any.whl"
    files = os.path.join(root, "files")
    os.makedirs(files, exist_ok=True)
    wheel = os.path.join(files, wheel_name)
    if not os.path.exists(wheel):
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr("usentrylab/__init__.py", "VALUE = 42\n")
            z.writestr("usentrylab-1.0.dist-info/METADATA",
                       "Metadata-Version: 2.1\nName: usentrylab\nVersion: 1.0\n")
            z.writestr("usentrylab-1.0.dist-info/WHEEL",
                       "Wheel-Version: 1.0\nGenerator: netlab\nRoot-Is-Purelib: true\n"
                       "Tag: py3-none-any\n")
            z.writestr("usentrylab-1.0.dist-info/RECORD", "")
    simple = os.path.join(root, "simple", "usentrylab")
    os.makedirs(simple, exist_ok=True)
    with open(os.path.join(simple, "index.html"), "w") as f:
        f.write(f'<html><body><a href="/files/{wheel_name}">{wheel_name}</a></body></html>\n')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--lab-dir", default="/tmp/usentry-netlab")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        sys.exit("netlab: no command")
    setup_network()
    make_content(args.lab_dir)
    for a in HTTP_ADDRS:
        serve_http(a, 80, args.lab_dir)
    serve_http("127.0.0.1", HOST_PORT, args.lab_dir)
    for a in ["203.0.113.10", "10.1.2.3", "127.0.0.1"]:
        serve_tcp_echo(a)
        serve_udp_echo(a)
    serve_dns("203.0.113.53")
    sys.stdout.flush()
    rc = subprocess.run(command).returncode
    with hits_lock:
        report = {"exit_code": rc if rc >= 0 else 128 - rc, "hits": list(hits)}
    with open(args.report, "w") as f:
        json.dump(report, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
