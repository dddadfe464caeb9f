// UpstreamResolver against scripted DNS servers on loopback (fake_dns_server.h). Every
// packet of these tests goes to 127.0.0.1 or ::1; no test resolves through the host's
// own resolv.conf (those that read one only look at the server list).
#include "sentry/net/netgate/upstream_resolver.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "sentry/net/netgate/fake_dns_server.h"

namespace usentry::sentry::net::netgate {
namespace {

using dns::Query;
using dns::Rcode;
using dns::ResourceRecord;
using testing::Answer;
using testing::FakeDnsServer;

IpAddress Ip(const char* s) { return *IpAddress::Parse(s); }

// Runs `r`'s poll loop, as netgate would, until `done()` or `limit` passes.
bool Drive(UpstreamResolver& r, const std::function<bool()>& done,
           absl::Duration limit = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + limit;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    std::vector<pollfd> fds;
    r.AppendPollFds(fds);
    int t = UpstreamResolver::PollTimeoutMs(r.NextTimeout());
    if (t < 0 || t > 50) t = 50;
    if (poll(fds.data(), fds.size(), t) < 0) return false;
    r.ProcessPollFds(fds);
  }
  return true;
}

ResolveResult ResolveNow(UpstreamResolver& r, absl::string_view name,
                         AddressFamily f = AddressFamily::kA) {
  std::optional<ResolveResult> got;
  r.Resolve(name, f, [&](ResolveResult res) { got = std::move(res); });
  EXPECT_TRUE(Drive(r, [&] { return got.has_value(); })) << "no result for " << name;
  return got.value_or(ResolveResult{});
}

std::unique_ptr<FakeDnsServer> Serve(FakeDnsServer::Handler h,
                                     const IpAddress& bind = IpAddress::V4(0x7F000001)) {
  auto s = FakeDnsServer::Start(std::move(h), bind);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

std::unique_ptr<UpstreamResolver> Resolver(std::vector<std::string> servers,
                                           absl::Duration timeout = absl::Seconds(2),
                                           int tries = 2) {
  auto r = UpstreamResolver::Create(servers, timeout, tries);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(*r) : nullptr;
}

// A server that knows a small zone.
std::vector<std::string> Zone(const Query& q, bool tcp) {
  const std::string& name = q.question->name;
  const bool aaaa = q.question->type == dns::kTypeAaaa;
  if (name == "two.example") {
    if (aaaa)
      return {Answer(q, Rcode::kNoError, {ResourceRecord::Address("", Ip("2001:db8::7"), 30)})};
    return {Answer(q, Rcode::kNoError,
                   {ResourceRecord::Address("", Ip("192.0.2.1"), 300),
                    ResourceRecord::Address("", Ip("192.0.2.2"), 60)})};
  }
  if (name == "www.example") {
    return {Answer(q, Rcode::kNoError,
                   {ResourceRecord::Cname("", "cdn.example", 100),
                    ResourceRecord::Cname("cdn.example", "edge.cdn.example", 50),
                    ResourceRecord::Address("edge.cdn.example", Ip("198.51.100.9"), 300)})};
  }
  if (name == "mixed.example") {
    // An A query answered with a AAAA record, a stranger's A record and one of ours.
    return {Answer(q, Rcode::kNoError,
                   {ResourceRecord::Address("", Ip("2001:db8::1"), 10),
                    ResourceRecord::Address("evil.example", Ip("203.0.113.66"), 10),
                    ResourceRecord::Address("", Ip("192.0.2.10"), 10)})};
  }
  if (name == "stranger.example") {
    return {Answer(q, Rcode::kNoError,
                   {ResourceRecord::Address("evil.example", Ip("203.0.113.66"), 10)})};
  }
  if (name == "onlycname.example") {
    return {Answer(q, Rcode::kNoError, {ResourceRecord::Cname("", "gone.example", 10)})};
  }
  if (name == "nodata.example") return {Answer(q, Rcode::kNoError)};
  if (name == "servfail.example") return {Answer(q, Rcode::kServFail)};
  if (name == "refused.example") return {Answer(q, Rcode::kRefused)};
  if (name == "hugettl.example") {
    // The codec never sends a TTL above 2^31-1, so write 0xFFFFFFFF by hand: no OPT,
    // then the one A record's TTL is 10 bytes before the end.
    Query plain = q;
    plain.edns.reset();
    std::string a =
        Answer(plain, Rcode::kNoError, {ResourceRecord::Address("", Ip("192.0.2.3"), 1)});
    a.replace(a.size() - 10, 4, "\xff\xff\xff\xff");
    return {a};
  }
  return {Answer(q, Rcode::kNxDomain)};
}

TEST(UpstreamResolver, AAndAaaaWithTtls) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  ResolveResult a = ResolveNow(*r, "two.example");
  ASSERT_EQ(a.status, ResolveStatus::kOk) << a.error;
  ASSERT_EQ(a.addresses.size(), 2u);
  EXPECT_EQ(a.addresses[0].ip, Ip("192.0.2.1"));
  EXPECT_EQ(a.addresses[0].ttl, 300u);
  EXPECT_EQ(a.addresses[1].ip, Ip("192.0.2.2"));
  EXPECT_EQ(a.addresses[1].ttl, 60u);
  ResolveResult aaaa = ResolveNow(*r, "two.example", AddressFamily::kAaaa);
  ASSERT_EQ(aaaa.status, ResolveStatus::kOk) << aaaa.error;
  ASSERT_EQ(aaaa.addresses.size(), 1u);
  EXPECT_EQ(aaaa.addresses[0].ip, Ip("2001:db8::7"));
  EXPECT_EQ(aaaa.addresses[0].ttl, 30u);
  EXPECT_EQ(r->in_flight(), 0u);
  EXPECT_FALSE(r->NextTimeout());
}

TEST(UpstreamResolver, CnameChainIsFollowedWithTheSmallestTtl) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  ResolveResult res = ResolveNow(*r, "www.example");
  ASSERT_EQ(res.status, ResolveStatus::kOk) << res.error;
  ASSERT_EQ(res.addresses.size(), 1u);
  EXPECT_EQ(res.addresses[0].ip, Ip("198.51.100.9"));
  EXPECT_EQ(res.addresses[0].ttl, 50u);
}

TEST(UpstreamResolver, OtherFamilyAndOtherOwnersAreIgnored) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  ResolveResult res = ResolveNow(*r, "mixed.example");
  ASSERT_EQ(res.status, ResolveStatus::kOk) << res.error;
  ASSERT_EQ(res.addresses.size(), 1u);
  EXPECT_EQ(res.addresses[0].ip, Ip("192.0.2.10"));
  EXPECT_EQ(ResolveNow(*r, "stranger.example").status, ResolveStatus::kNoData);
  // The AAAA record alone, asked as A.
  EXPECT_EQ(ResolveNow(*r, "two.example", AddressFamily::kA).addresses.size(), 2u);
}

TEST(UpstreamResolver, NegativeAnswers) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  struct Case {
    const char* name;
    ResolveStatus want;
  } cases[] = {
      {"missing.example", ResolveStatus::kNxDomain}, {"nodata.example", ResolveStatus::kNoData},
      {"onlycname.example", ResolveStatus::kNoData}, {"servfail.example", ResolveStatus::kServFail},
      {"refused.example", ResolveStatus::kRefused},
  };
  for (const Case& c : cases) {
    ResolveResult res = ResolveNow(*r, c.name);
    EXPECT_EQ(res.status, c.want) << c.name << ": " << ResolveStatusName(res.status) << " "
                                  << res.error;
    EXPECT_TRUE(res.addresses.empty());
    EXPECT_FALSE(res.error.empty());
  }
  // SERVFAIL and REFUSED end the query: no retries of the same question.
  EXPECT_EQ(server->udp_queries(), 5);
}

TEST(UpstreamResolver, TtlWithTheTopBitSetIsZero) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  ResolveResult res = ResolveNow(*r, "hugettl.example");
  ASSERT_EQ(res.status, ResolveStatus::kOk) << res.error;
  EXPECT_EQ(res.addresses[0].ttl, 0u);
}

TEST(UpstreamResolver, SilenceTimesOutAsServFail) {
  auto server = Serve([](const Query&, bool) { return std::vector<std::string>{}; });
  auto r = Resolver({server->address()}, absl::Milliseconds(100), 2);
  const absl::Time start = absl::Now();
  std::optional<ResolveResult> got;
  r->Resolve("slow.example", AddressFamily::kA, [&](ResolveResult res) { got = std::move(res); });
  EXPECT_EQ(r->in_flight(), 1u);
  ASSERT_TRUE(r->NextTimeout());
  EXPECT_LE(*r->NextTimeout(), absl::Milliseconds(100));
  ASSERT_TRUE(Drive(*r, [&] { return got.has_value(); }));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(got->status, ResolveStatus::kServFail);
  EXPECT_TRUE(absl::StrContains(got->error, "no answer")) << got->error;
  // Two tries: 100 ms, then doubled to 200 ms.
  EXPECT_GE(took, absl::Milliseconds(290));
  EXPECT_LT(took, absl::Seconds(3));
  EXPECT_EQ(server->udp_queries(), 2);
  EXPECT_EQ(r->in_flight(), 0u);
}

TEST(UpstreamResolver, TruncatedUdpAnswerIsRetriedOverTcp) {
  std::vector<ResourceRecord> many;
  for (uint32_t i = 0; i < 100; ++i) {
    many.push_back(ResourceRecord::Address("", IpAddress::V4(0xC6336400 + i), 60 + i));
  }
  auto server = Serve([&](const Query& q, bool tcp) -> std::vector<std::string> {
    if (!tcp) {
      std::string tc = Answer(q, Rcode::kNoError);
      tc[2] = static_cast<char>(tc[2] | 0x02);  // TC
      return {tc};
    }
    return {Answer(q, Rcode::kNoError, many)};
  });
  auto r = Resolver({server->address()});
  ResolveResult res = ResolveNow(*r, "big.example");
  ASSERT_EQ(res.status, ResolveStatus::kOk) << res.error;
  EXPECT_EQ(server->udp_queries(), 1);
  EXPECT_EQ(server->tcp_queries(), 1);
  // 100 records came over TCP; the first kMaxAddresses are kept, in order.
  ASSERT_EQ(res.addresses.size(), UpstreamResolver::kMaxAddresses);
  EXPECT_EQ(res.addresses[0].ip, Ip("198.51.100.0"));
  EXPECT_EQ(res.addresses.back().ttl, 60 + UpstreamResolver::kMaxAddresses - 1);
}

TEST(UpstreamResolver, FirstServerSilentSecondAnswers) {
  auto silent = Serve([](const Query&, bool) { return std::vector<std::string>{}; });
  auto good = Serve(Zone);
  auto r = Resolver({silent->address(), good->address()}, absl::Milliseconds(100), 1);
  EXPECT_EQ(r->servers(), (std::vector<std::string>{silent->address(), good->address()}));
  ResolveResult res = ResolveNow(*r, "two.example");
  ASSERT_EQ(res.status, ResolveStatus::kOk) << res.error;
  EXPECT_EQ(res.addresses.size(), 2u);
  EXPECT_EQ(silent->udp_queries(), 1);
  EXPECT_EQ(good->udp_queries(), 1);
}

TEST(UpstreamResolver, UnreachableFirstServerFallsThrough) {
  // A port with nothing bound: the kernel answers ECONNREFUSED (ICMP on loopback).
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  socklen_t len = sizeof(sa);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  close(fd);
  auto good = Serve(Zone);
  auto r = Resolver({"127.0.0.1:" + std::to_string(ntohs(sa.sin_port)), good->address()},
                    absl::Seconds(2), 1);
  const absl::Time start = absl::Now();
  ResolveResult res = ResolveNow(*r, "two.example");
  ASSERT_EQ(res.status, ResolveStatus::kOk) << res.error;
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));  // not a timeout
}

TEST(UpstreamResolver, Ipv6ServerOnANonStandardPort) {
  auto probe = FakeDnsServer::Start(Zone, Ip("::1"));
  if (!probe.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << probe.status();
  auto server = std::move(*probe);
  ASSERT_NE(server->port(), 53);
  auto r = Resolver({server->address()});
  EXPECT_EQ(r->servers(), std::vector<std::string>{server->address()});
  ResolveResult res = ResolveNow(*r, "two.example", AddressFamily::kAaaa);
  ASSERT_EQ(res.status, ResolveStatus::kOk) << res.error;
  EXPECT_EQ(res.addresses[0].ip, Ip("2001:db8::7"));
}

TEST(UpstreamResolver, ExactlyTheNameAskedNoSearchNoHosts) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  // "localhost" is in /etc/hosts, "bare" would get search domains with ares_search.
  EXPECT_EQ(ResolveNow(*r, "localhost").status, ResolveStatus::kNxDomain);
  EXPECT_EQ(ResolveNow(*r, "bare").status, ResolveStatus::kNxDomain);
  EXPECT_EQ(ResolveNow(*r, "Two.Example.").status, ResolveStatus::kOk);
  EXPECT_EQ(server->names(), (std::vector<std::string>{"localhost", "bare", "two.example"}));
}

TEST(UpstreamResolver, BadNamesAreRefusedWithoutAQuery) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  const std::string nul("a\0b.example", 11);
  for (absl::string_view bad :
       {absl::string_view(""), absl::string_view("."), absl::string_view("a..b"),
        absl::string_view("a\\.b"), absl::string_view("a\\098"), absl::string_view("x y.example"),
        absl::string_view(nul), absl::string_view("a.example.."),
        absl::string_view("\xc3\xa9.example")}) {
    std::optional<ResolveResult> got;
    r->Resolve(bad, AddressFamily::kA, [&](ResolveResult res) { got = std::move(res); });
    ASSERT_TRUE(got) << "not immediate: " << bad;
    EXPECT_EQ(got->status, ResolveStatus::kBadName) << bad;
  }
  std::optional<ResolveResult> got;
  r->Resolve(std::string(64, 'a') + ".example", AddressFamily::kA,
             [&](ResolveResult res) { got = std::move(res); });
  EXPECT_EQ(got->status, ResolveStatus::kBadName);
  EXPECT_EQ(server->udp_queries(), 0);
  EXPECT_EQ(r->in_flight(), 0u);
}

TEST(UpstreamResolver, InFlightIsBounded) {
  auto silent = Serve([](const Query&, bool) { return std::vector<std::string>{}; });
  UpstreamOptions o;
  o.servers = {silent->address()};
  o.timeout = absl::Seconds(30);
  o.max_in_flight = 256;
  auto created = UpstreamResolver::Create(o);
  ASSERT_TRUE(created.ok()) << created.status();
  auto r = std::move(*created);
  UpstreamResolver* raw = r.get();  // r is already null while reset() destroys it
  int finished = 0, shut_down = 0, retried = 0;
  for (int i = 0; i < 256; ++i) {
    r->Resolve("q" + std::to_string(i) + ".example", AddressFamily::kA, [&](ResolveResult res) {
      ++finished;
      if (res.status == ResolveStatus::kServFail && absl::StrContains(res.error, "shut down")) {
        ++shut_down;
      }
      // A caller that retries on failure, while the resolver is going away.
      raw->Resolve("retry.example", AddressFamily::kA, [&](ResolveResult again) {
        EXPECT_EQ(again.status, ResolveStatus::kServFail);
        ++retried;
      });
    });
  }
  EXPECT_EQ(r->in_flight(), 256u);
  EXPECT_EQ(finished, 0);
  std::optional<ResolveResult> over;
  r->Resolve("one-too-many.example", AddressFamily::kA,
             [&](ResolveResult res) { over = std::move(res); });
  ASSERT_TRUE(over);
  EXPECT_EQ(over->status, ResolveStatus::kServFail);
  EXPECT_TRUE(absl::StrContains(over->error, "too many")) << over->error;
  // Destroying the resolver ends every pending query, exactly once.
  r.reset();
  EXPECT_EQ(finished, 256);
  EXPECT_EQ(shut_down, 256);
  EXPECT_EQ(retried, 256);
}

TEST(UpstreamResolver, CallbacksMayStartNewQueries) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  std::vector<ResolveStatus> got;
  r->Resolve("two.example", AddressFamily::kA, [&](ResolveResult res) {
    got.push_back(res.status);
    r->Resolve("two.example", AddressFamily::kAaaa,
               [&](ResolveResult res6) { got.push_back(res6.status); });
  });
  ASSERT_TRUE(Drive(*r, [&] { return got.size() == 2; }));
  EXPECT_EQ(got, (std::vector<ResolveStatus>{ResolveStatus::kOk, ResolveStatus::kOk}));
}

TEST(UpstreamResolver, ForgedRepliesAreIgnored) {
  // First a reply with the wrong id, then one for another question, then the real one.
  auto server = Serve([](const Query& q, bool) -> std::vector<std::string> {
    Query wrong_id = q;
    wrong_id.id = static_cast<uint16_t>(q.id + 1);
    Query other = q;
    other.question->wire_name = std::string("\5other\7example\0", 15);
    return {Answer(wrong_id, Rcode::kNoError, {ResourceRecord::Address("", Ip("203.0.113.1"), 1)}),
            Answer(other, Rcode::kNoError, {ResourceRecord::Address("", Ip("203.0.113.2"), 1)}),
            Answer(q, Rcode::kNoError, {ResourceRecord::Address("", Ip("192.0.2.99"), 1)})};
  });
  auto r = Resolver({server->address()});
  ResolveResult res = ResolveNow(*r, "real.example");
  ASSERT_EQ(res.status, ResolveStatus::kOk) << res.error;
  ASSERT_EQ(res.addresses.size(), 1u);
  EXPECT_EQ(res.addresses[0].ip, Ip("192.0.2.99"));
}

TEST(UpstreamResolver, ServerListForms) {
  auto r = UpstreamResolver::Create(
      {"127.0.0.1", "127.0.0.2:5353", "[::1]:54", "::1", "[2001:db8::53]"}, absl::Seconds(1), 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->servers(), (std::vector<std::string>{"127.0.0.1:53", "127.0.0.2:5353", "[::1]:54",
                                                       "[::1]:53", "[2001:db8::53]:53"}));
  for (const char* bad :
       {"", "1.2.3.4:", "1.2.3.4:0", "1.2.3.4:65536", "1.2.3.4:+5", "[::1", "[::1]x",
        "[::1]:", "[1.2.3.4]:53", "dns.example", "1.2.3.4:53:1", "::1:53x", "1.2.3.4 "}) {
    auto bad_r = UpstreamResolver::Create({bad}, absl::Seconds(1), 1);
    EXPECT_EQ(bad_r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(UpstreamResolver::Create({"127.0.0.1"}, absl::ZeroDuration(), 1).ok());
  EXPECT_FALSE(UpstreamResolver::Create({"127.0.0.1"}, absl::Seconds(1), 0).ok());
}

TEST(UpstreamResolver, EmptyServerListReadsResolvConf) {
  char dir[] = "/tmp/upstream_resolver_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/resolv.conf";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("search corp.example\nnameserver 127.0.0.1\nnameserver ::1\noptions ndots:5\n", f);
  fclose(f);
  UpstreamOptions o;
  o.resolv_conf = path;
  auto r = UpstreamResolver::Create(o);
  unlink(path.c_str());
  rmdir(dir);
  ASSERT_TRUE(r.ok()) << r.status();
  // Only the server list is looked at: no query goes to port 53 from a test.
  EXPECT_EQ((*r)->servers(), (std::vector<std::string>{"127.0.0.1:53", "[::1]:53"}));
}

TEST(UpstreamResolver, PollTimeoutRoundsUp) {
  EXPECT_EQ(UpstreamResolver::PollTimeoutMs(std::nullopt), -1);
  EXPECT_EQ(UpstreamResolver::PollTimeoutMs(absl::ZeroDuration()), 0);
  EXPECT_EQ(UpstreamResolver::PollTimeoutMs(absl::Microseconds(1)), 1);
  EXPECT_EQ(UpstreamResolver::PollTimeoutMs(absl::Microseconds(1500)), 2);
  EXPECT_EQ(UpstreamResolver::PollTimeoutMs(absl::Milliseconds(7)), 7);
}

}  // namespace
}  // namespace usentry::sentry::net::netgate
