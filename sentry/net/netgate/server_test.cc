// netgate's server against a fake upstream resolver, over a real SEQPACKET pair. Dials
// go only to listeners of this test on 127.0.0.1 (through host ports or allow_private
// rules); the other decisions are refusals made before any packet is sent.
#include "sentry/net/netgate/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <fstream>
#include <map>
#include <thread>

#include "base/seqpacket.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace usentry::netgate {
namespace {

using ::testing::HasSubstr;

IpAddress Ip(const char* s) { return *IpAddress::Parse(s); }

class FakeResolver : public Resolver {
 public:
  // Answers per name, one per query in order (the last repeats).
  std::map<std::string, std::deque<Result>> answers;
  int queries = 0;

  void Resolve(const std::string& name, uint16_t qtype, Done done) override {
    ++queries;
    Result r;
    r.rcode = kRcodeNxDomain;
    auto it = answers.find(name);
    if (it != answers.end() && !it->second.empty()) {
      r = it->second.front();
      if (it->second.size() > 1) it->second.pop_front();
    }
    ready_.emplace_back(std::move(done), r);
  }
  void AppendPollFds(std::vector<pollfd>&) override {}
  absl::Duration NextTimeout() override {
    return ready_.empty() ? absl::InfiniteDuration() : absl::ZeroDuration();
  }
  void Process(const std::vector<pollfd>&) override {
    auto ready = std::move(ready_);
    ready_.clear();
    for (auto& [done, r] : ready) done(r);
  }

 private:
  std::vector<std::pair<Done, Result>> ready_;
};

Resolver::Result Answer(std::initializer_list<const char*> ips) {
  Resolver::Result r;
  r.rcode = kRcodeNoError;
  for (const char* ip : ips) r.addrs.push_back({Ip(ip), 60});
  return r;
}

// A TCP listener on 127.0.0.1 with an ephemeral port.
struct Listener {
  Listener(int type = SOCK_STREAM) {
    fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    if (type == SOCK_STREAM) EXPECT_EQ(listen(fd, 8), 0);
    socklen_t len = sizeof(a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listener() { close(fd); }
  int fd;
  uint16_t port;
};

class NetgateServerTest : public ::testing::Test {
 protected:
  void Start(policy::NetPolicy net) {
    char path[] = "/tmp/usentry-netgate-log-XXXXXX";
    log_fd_ = mkstemp(path);
    log_path_ = path;
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    sentry_ = UniqueFd(sv[0]);
    ServerOptions opts;
    opts.net = std::move(net);
    opts.log = std::make_shared<audit::AuditLog>(log_fd_, "run", false);
    opts.connect_timeout = absl::Seconds(5);
    auto resolver = std::make_unique<FakeResolver>();
    resolver_ = resolver.get();
    server_ = std::make_unique<Server>(std::move(opts), std::move(resolver), UniqueFd(sv[1]));
  }
  void Serve() {
    thread_ = std::thread([this] { status_ = server_->Run(); });
  }
  void TearDown() override {
    sentry_.reset();  // the server sees EOF and returns
    if (thread_.joinable()) thread_.join();
    server_.reset();
    close(log_fd_);
    unlink(log_path_.c_str());
  }

  struct Answered {
    Reply reply;
    UniqueFd fd;
  };
  Answered Call(const Request& req) {
    EXPECT_TRUE(SendPacket(sentry_.get(), EncodeRequest(req)).ok());
    SysResult<Packet> p = RecvPacket(sentry_.get());
    EXPECT_TRUE(p.ok());
    Answered a;
    if (!p.ok()) return a;
    std::optional<Reply> r = DecodeReply(p->bytes);
    EXPECT_TRUE(r) << p->bytes;
    if (r) a.reply = *r;
    a.fd = std::move(p->fd);
    return a;
  }
  ResolveReply DoResolve(const std::string& name, uint16_t type = kTypeA) {
    Request r;
    r.op = Request::Op::kResolve;
    r.id = next_id_++;
    r.name = name;
    r.qtype = type;
    return Call(r).reply.resolve;
  }
  Answered DoConnect(const char* ip, uint16_t port, policy::NetProto proto = policy::NetProto::kTcp,
                     bool host_port = false) {
    Request r;
    r.op = Request::Op::kConnect;
    r.id = next_id_++;
    r.proto = proto;
    if (ip) r.ip = Ip(ip);
    r.port = port;
    r.host_port = host_port;
    return Call(r);
  }
  std::vector<nlohmann::json> Log() {
    std::vector<nlohmann::json> out;
    std::ifstream in(log_path_);
    std::string line;
    while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  static policy::NetRule Rule(const char* text, bool private_ok = false) {
    return *policy::ParseNetRule(text, private_ok);
  }

  UniqueFd sentry_;
  std::unique_ptr<Server> server_;
  FakeResolver* resolver_ = nullptr;
  std::thread thread_;
  absl::Status status_;
  int log_fd_ = -1;
  std::string log_path_;
  uint64_t next_id_ = 1;
};

TEST_F(NetgateServerTest, NamesOutsideThePolicyAreNxdomainWithoutAnUpstreamQuery) {
  policy::NetPolicy net;
  net.allow = {Rule("allowed.test")};
  Start(net);
  Serve();
  ResolveReply r = DoResolve("evil.test");
  EXPECT_EQ(r.rcode, kRcodeNxDomain);
  EXPECT_THAT(r.reason, HasSubstr("not in the allowlist"));
  EXPECT_EQ(resolver_->queries, 0);
  sentry_.reset();
  thread_.join();
  EXPECT_TRUE(status_.ok()) << status_;
  auto log = Log();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["event"], "resolve");
  EXPECT_EQ(log[0]["decision"], "denied");
  EXPECT_EQ(log[0]["by"], "netgate");
}

TEST_F(NetgateServerTest, BlockedAnswersAreDroppedAndARebindingCannotConnect) {
  policy::NetPolicy net;
  net.allow = {Rule("rebind.test:80"), Rule("mixed.test")};
  Start(net);
  resolver_->answers["rebind.test"] = {Answer({"203.0.113.7"}), Answer({"10.0.0.7"})};
  resolver_->answers["mixed.test"] = {Answer({"198.51.100.9", "169.254.169.254"})};
  Serve();
  ResolveReply first = DoResolve("rebind.test");
  EXPECT_EQ(first.rcode, kRcodeNoError);
  ASSERT_EQ(first.addrs.size(), 1u);
  ResolveReply second = DoResolve("rebind.test");
  EXPECT_EQ(second.rcode, kRcodeRefused);
  EXPECT_TRUE(second.addrs.empty());
  ASSERT_EQ(second.blocked.size(), 1u);
  EXPECT_THAT(second.blocked[0].range, HasSubstr("RFC 1918"));
  // The rebound address was never bound: no dial is even attempted.
  Answered c = DoConnect("10.0.0.7", 80);
  EXPECT_EQ(c.reply.connect.err, EACCES);
  EXPECT_THAT(c.reply.connect.reason, HasSubstr("always-blocked"));
  EXPECT_FALSE(c.fd.valid());
  // Bound, but not on this port; and an address nobody resolved.
  EXPECT_EQ(DoConnect("203.0.113.7", 22).reply.connect.err, EACCES);
  EXPECT_EQ(DoConnect("203.0.113.8", 80).reply.connect.err, EACCES);
  ResolveReply mixed = DoResolve("mixed.test");
  ASSERT_EQ(mixed.addrs.size(), 1u);
  EXPECT_EQ(mixed.addrs[0].ip, Ip("198.51.100.9"));
  EXPECT_EQ(mixed.blocked.size(), 1u);
  EXPECT_EQ(DoConnect("169.254.169.254", 80).reply.connect.err, EACCES);
}

TEST_F(NetgateServerTest, HostPortsDialTheHostLoopbackAndDonateTheSocket) {
  Listener l;
  policy::NetPolicy net;
  net.host_ports = {l.port};
  Start(net);
  Serve();
  Answered c = DoConnect(nullptr, l.port, policy::NetProto::kTcp, /*host_port=*/true);
  ASSERT_EQ(c.reply.connect.err, 0) << c.reply.connect.reason;
  ASSERT_TRUE(c.fd.valid());
  EXPECT_NE(c.reply.connect.local_port, 0);
  int peer = accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(peer, 0);
  ASSERT_EQ(write(c.fd.get(), "ping", 4), 4);
  char buf[8];
  ASSERT_EQ(read(peer, buf, sizeof(buf)), 4);
  ASSERT_EQ(write(peer, "pong!", 5), 5);
  // The donated socket is non-blocking: poll for the answer.
  pollfd p{c.fd.get(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  ASSERT_EQ(read(c.fd.get(), buf, sizeof(buf)), 5);
  // A port not listed is refused.
  EXPECT_EQ(DoConnect(nullptr, l.port + 1, policy::NetProto::kTcp, true).reply.connect.err, EACCES);
  // Close: netgate logs the kernel's byte counts and lets its copy go.
  Request close_req;
  close_req.op = Request::Op::kClose;
  close_req.id = c.reply.connect.conn;
  close_req.bytes_in = 5;
  close_req.bytes_out = 4;
  ASSERT_TRUE(SendPacket(sentry_.get(), EncodeRequest(close_req)).ok());
  c.fd.reset();
  // With both copies gone the peer reads EOF.
  p = {peer, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  EXPECT_EQ(read(peer, buf, sizeof(buf)), 0);
  close(peer);
  sentry_.reset();
  thread_.join();
  auto log = Log();
  bool saw_close = false;
  for (const auto& line : log) {
    if (line["event"] == "close") {
      saw_close = true;
      EXPECT_EQ(line["bytes_out"], 4);
      EXPECT_EQ(line["bytes_in"], 5);
      EXPECT_EQ(line["sentry_bytes_in"], 5);
    }
  }
  EXPECT_TRUE(saw_close);
}

TEST_F(NetgateServerTest, RefusedAndPrivateDialsReportTheRealErrno) {
  Listener l;
  int closed_port;
  {
    Listener gone;
    closed_port = gone.port;
  }
  policy::NetPolicy net;
  net.allow = {Rule("127.0.0.1", true)};
  Start(net);
  Serve();
  Answered refused = DoConnect("127.0.0.1", static_cast<uint16_t>(closed_port));
  EXPECT_EQ(refused.reply.connect.err, ECONNREFUSED);
  Answered ok = DoConnect("::ffff:127.0.0.1", l.port);  // v4-mapped: dialed as IPv4
  EXPECT_EQ(ok.reply.connect.err, 0) << ok.reply.connect.reason;
  EXPECT_TRUE(ok.fd.valid());
  EXPECT_EQ(DoConnect("127.0.0.2", l.port).reply.connect.err, EACCES);
}

TEST_F(NetgateServerTest, UdpGoesThroughARelaySocketNotAHostSocket) {
  Listener echo(SOCK_DGRAM);
  policy::NetPolicy net;
  net.allow = {Rule(("127.0.0.1:" + std::to_string(echo.port) + "/udp").c_str(), true)};
  Start(net);
  Serve();
  EXPECT_EQ(DoConnect("127.0.0.1", echo.port).reply.connect.err, EACCES);  // TCP not allowed
  Answered c = DoConnect("127.0.0.1", echo.port, policy::NetProto::kUdp);
  ASSERT_EQ(c.reply.connect.err, 0) << c.reply.connect.reason;
  ASSERT_TRUE(c.fd.valid());
  int domain = 0;
  socklen_t len = sizeof(domain);
  ASSERT_EQ(getsockopt(c.fd.get(), SOL_SOCKET, SO_DOMAIN, &domain, &len), 0);
  EXPECT_EQ(domain, AF_UNIX);
  ASSERT_EQ(send(c.fd.get(), "dgram", 5, 0), 5);
  char buf[16];
  sockaddr_in from{};
  socklen_t flen = sizeof(from);
  pollfd p{echo.fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  ASSERT_EQ(recvfrom(echo.fd, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &flen), 5);
  ASSERT_EQ(sendto(echo.fd, "back", 4, 0, reinterpret_cast<sockaddr*>(&from), flen), 4);
  p = {c.fd.get(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  EXPECT_EQ(recv(c.fd.get(), buf, sizeof(buf), 0), 4);
}

TEST_F(NetgateServerTest, MalformedRequestsAreLoggedAndIgnored) {
  Start(policy::NetPolicy{});
  Serve();
  ASSERT_TRUE(SendPacket(sentry_.get(), "{\"op\":\"exec\",\"id\":1}").ok());
  ASSERT_TRUE(SendPacket(sentry_.get(), std::string(100, '{')).ok());
  // Still serving.
  EXPECT_EQ(DoResolve("a.test").rcode, kRcodeNxDomain);
  EXPECT_EQ(DoConnect("203.0.113.1", 80).reply.connect.err, EACCES);
  sentry_.reset();
  thread_.join();
  int malformed = 0;
  for (const auto& line : Log()) malformed += line["event"] == "malformed";
  EXPECT_EQ(malformed, 2);
}

}  // namespace
}  // namespace usentry::netgate
