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

namespace usentry::netgate {
namespace {

namespace dns = ::usentry::sentry::net::dns;
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
    const absl::Duration wait = std::min(r.NextTimeout(), absl::Milliseconds(50));
    const int t =
        static_cast<int>(absl::ToInt64Milliseconds(absl::Ceil(wait, absl::Milliseconds(1))));
    if (poll(fds.data(), fds.size(), t) < 0) return false;
    r.Process(fds);
  }
  return true;
}

Resolver::Result ResolveNow(UpstreamResolver& r, const std::string& name, uint16_t qtype = kTypeA) {
  std::optional<Resolver::Result> got;
  r.Resolve(name, qtype, [&](Resolver::Result res) { got = std::move(res); });
  EXPECT_FALSE(got) << "done ran inside Resolve";
  EXPECT_TRUE(Drive(r, [&] { return got.has_value(); })) << "no result for " << name;
  return got.value_or(Resolver::Result{});
}

// NOERROR without addresses.
bool IsNoData(const Resolver::Result& r) { return r.rcode == kRcodeNoError && r.addrs.empty(); }

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
  Resolver::Result a = ResolveNow(*r, "two.example");
  ASSERT_EQ(a.rcode, kRcodeNoError) << a.error;
  ASSERT_EQ(a.addrs.size(), 2u);
  EXPECT_EQ(a.addrs[0].ip, Ip("192.0.2.1"));
  EXPECT_EQ(a.addrs[0].ttl, 300u);
  EXPECT_EQ(a.addrs[1].ip, Ip("192.0.2.2"));
  EXPECT_EQ(a.addrs[1].ttl, 60u);
  Resolver::Result aaaa = ResolveNow(*r, "two.example", kTypeAAAA);
  ASSERT_EQ(aaaa.rcode, kRcodeNoError) << aaaa.error;
  ASSERT_EQ(aaaa.addrs.size(), 1u);
  EXPECT_EQ(aaaa.addrs[0].ip, Ip("2001:db8::7"));
  EXPECT_EQ(aaaa.addrs[0].ttl, 30u);
  EXPECT_EQ(r->in_flight(), 0u);
  EXPECT_EQ(r->NextTimeout(), absl::InfiniteDuration());
}

TEST(UpstreamResolver, CnameChainIsFollowedWithTheSmallestTtl) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  Resolver::Result res = ResolveNow(*r, "www.example");
  ASSERT_EQ(res.rcode, kRcodeNoError) << res.error;
  ASSERT_FALSE(res.addrs.empty());
  ASSERT_EQ(res.addrs.size(), 1u);
  EXPECT_EQ(res.addrs[0].ip, Ip("198.51.100.9"));
  EXPECT_EQ(res.addrs[0].ttl, 50u);
}

TEST(UpstreamResolver, OtherFamilyAndOtherOwnersAreIgnored) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  Resolver::Result res = ResolveNow(*r, "mixed.example");
  ASSERT_EQ(res.rcode, kRcodeNoError) << res.error;
  ASSERT_FALSE(res.addrs.empty());
  ASSERT_EQ(res.addrs.size(), 1u);
  EXPECT_EQ(res.addrs[0].ip, Ip("192.0.2.10"));
  EXPECT_TRUE(IsNoData(ResolveNow(*r, "stranger.example")));
  // The AAAA record alone, asked as A.
  EXPECT_EQ(ResolveNow(*r, "two.example", kTypeA).addrs.size(), 2u);
}

TEST(UpstreamResolver, NegativeAnswers) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  struct Case {
    const char* name;
    int want;
  } cases[] = {
      {"missing.example", kRcodeNxDomain},  {"nodata.example", kRcodeNoError},
      {"onlycname.example", kRcodeNoError}, {"servfail.example", kRcodeServFail},
      {"refused.example", kRcodeRefused},
  };
  for (const Case& c : cases) {
    Resolver::Result res = ResolveNow(*r, c.name);
    EXPECT_EQ(res.rcode, c.want) << c.name << ": " << res.error;
    EXPECT_TRUE(res.addrs.empty());
    EXPECT_FALSE(res.error.empty());
  }
  // SERVFAIL and REFUSED end the query: no retries of the same question.
  EXPECT_EQ(server->udp_queries(), 5);
}

TEST(UpstreamResolver, TtlWithTheTopBitSetIsZero) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  Resolver::Result res = ResolveNow(*r, "hugettl.example");
  ASSERT_EQ(res.rcode, kRcodeNoError) << res.error;
  ASSERT_FALSE(res.addrs.empty());
  EXPECT_EQ(res.addrs[0].ttl, 0u);
}

TEST(UpstreamResolver, SilenceTimesOutAsServFail) {
  auto server = Serve([](const Query&, bool) { return std::vector<std::string>{}; });
  auto r = Resolver({server->address()}, absl::Milliseconds(100), 2);
  const absl::Time start = absl::Now();
  std::optional<Resolver::Result> got;
  r->Resolve("slow.example", kTypeA, [&](Resolver::Result res) { got = std::move(res); });
  EXPECT_EQ(r->in_flight(), 1u);
  EXPECT_GT(r->NextTimeout(), absl::ZeroDuration());
  EXPECT_LE(r->NextTimeout(), absl::Milliseconds(100));
  ASSERT_TRUE(Drive(*r, [&] { return got.has_value(); }));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(got->rcode, kRcodeServFail);
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
  Resolver::Result res = ResolveNow(*r, "big.example");
  ASSERT_EQ(res.rcode, kRcodeNoError) << res.error;
  ASSERT_FALSE(res.addrs.empty());
  EXPECT_EQ(server->udp_queries(), 1);
  EXPECT_EQ(server->tcp_queries(), 1);
  // 100 records came over TCP; the first kMaxAddresses are kept, in order.
  ASSERT_EQ(res.addrs.size(), UpstreamResolver::kMaxAddresses);
  EXPECT_EQ(res.addrs[0].ip, Ip("198.51.100.0"));
  EXPECT_EQ(res.addrs.back().ttl, 60 + UpstreamResolver::kMaxAddresses - 1);
}

TEST(UpstreamResolver, FirstServerSilentSecondAnswers) {
  auto silent = Serve([](const Query&, bool) { return std::vector<std::string>{}; });
  auto good = Serve(Zone);
  auto r = Resolver({silent->address(), good->address()}, absl::Milliseconds(100), 1);
  EXPECT_EQ(r->servers(), (std::vector<std::string>{silent->address(), good->address()}));
  Resolver::Result res = ResolveNow(*r, "two.example");
  ASSERT_EQ(res.rcode, kRcodeNoError) << res.error;
  ASSERT_FALSE(res.addrs.empty());
  EXPECT_EQ(res.addrs.size(), 2u);
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
  Resolver::Result res = ResolveNow(*r, "two.example");
  ASSERT_EQ(res.rcode, kRcodeNoError) << res.error;
  ASSERT_FALSE(res.addrs.empty());
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));  // not a timeout
}

TEST(UpstreamResolver, Ipv6ServerOnANonStandardPort) {
  auto probe = FakeDnsServer::Start(Zone, Ip("::1"));
  if (!probe.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << probe.status();
  auto server = std::move(*probe);
  ASSERT_NE(server->port(), 53);
  auto r = Resolver({server->address()});
  EXPECT_EQ(r->servers(), std::vector<std::string>{server->address()});
  Resolver::Result res = ResolveNow(*r, "two.example", kTypeAAAA);
  ASSERT_EQ(res.rcode, kRcodeNoError) << res.error;
  ASSERT_FALSE(res.addrs.empty());
  EXPECT_EQ(res.addrs[0].ip, Ip("2001:db8::7"));
}

TEST(UpstreamResolver, ExactlyTheNameAskedNoSearchNoHosts) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  // "localhost" is in /etc/hosts, "bare" would get search domains with ares_search.
  EXPECT_EQ(ResolveNow(*r, "localhost").rcode, kRcodeNxDomain);
  EXPECT_EQ(ResolveNow(*r, "bare").rcode, kRcodeNxDomain);
  EXPECT_EQ(ResolveNow(*r, "Two.Example.").addrs.size(), 2u);
  EXPECT_EQ(server->names(), (std::vector<std::string>{"localhost", "bare", "two.example"}));
}

TEST(UpstreamResolver, BadNamesAndTypesAreRefusedWithoutAQuery) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  const std::string nul("a\0b.example", 11);
  std::vector<std::string> bad = {"",
                                  ".",
                                  "a..b",
                                  "a\\.b",
                                  "a\\098",
                                  "x y.example",
                                  nul,
                                  "a.example..",
                                  "\xc3\xa9.example",
                                  std::string(64, 'a') + ".example"};
  std::vector<Resolver::Result> got;
  for (const std::string& name : bad) {
    r->Resolve(name, kTypeA, [&](Resolver::Result res) { got.push_back(std::move(res)); });
  }
  r->Resolve("two.example", 16 /* TXT */, [&](Resolver::Result res) { got.push_back(res); });
  EXPECT_TRUE(got.empty());  // never from inside Resolve
  EXPECT_EQ(r->NextTimeout(), absl::ZeroDuration());
  r->Process({});
  ASSERT_EQ(got.size(), bad.size() + 1);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].rcode, kRcodeRefused) << i;
    EXPECT_FALSE(got[i].error.empty());
  }
  EXPECT_EQ(server->udp_queries(), 0);
  EXPECT_EQ(r->in_flight(), 0u);
  EXPECT_EQ(r->NextTimeout(), absl::InfiniteDuration());
}

TEST(UpstreamResolver, InFlightIsBoundedAndDestructionDropsCallbacks) {
  auto silent = Serve([](const Query&, bool) { return std::vector<std::string>{}; });
  UpstreamOptions o;
  o.servers = {silent->address()};
  o.timeout = absl::Seconds(30);
  o.max_in_flight = 256;
  auto created = UpstreamResolver::Create(o);
  ASSERT_TRUE(created.ok()) << created.status();
  auto r = std::move(*created);
  int finished = 0;
  for (int i = 0; i < 256; ++i) {
    r->Resolve("q" + std::to_string(i) + ".example", kTypeA, [&](Resolver::Result) { ++finished; });
  }
  EXPECT_EQ(r->in_flight(), 256u);
  std::optional<Resolver::Result> over;
  r->Resolve("one-too-many.example", kTypeA, [&](Resolver::Result res) { over = std::move(res); });
  r->Process({});
  ASSERT_TRUE(over);
  EXPECT_EQ(over->rcode, kRcodeServFail);
  EXPECT_TRUE(absl::StrContains(over->error, "too many")) << over->error;
  EXPECT_EQ(finished, 0);
  EXPECT_EQ(r->in_flight(), 256u);
  // The owner goes away with queries pending: no callback runs into it.
  r.reset();
  EXPECT_EQ(finished, 0);
}

TEST(UpstreamResolver, CallbacksMayStartNewQueries) {
  auto server = Serve(Zone);
  auto r = Resolver({server->address()});
  std::vector<size_t> got;
  r->Resolve("two.example", kTypeA, [&](Resolver::Result res) {
    got.push_back(res.addrs.size());
    r->Resolve("two.example", kTypeAAAA,
               [&](Resolver::Result res6) { got.push_back(res6.addrs.size()); });
  });
  ASSERT_TRUE(Drive(*r, [&] { return got.size() == 2; }));
  EXPECT_EQ(got, (std::vector<size_t>{2, 1}));
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
  Resolver::Result res = ResolveNow(*r, "real.example");
  ASSERT_EQ(res.rcode, kRcodeNoError) << res.error;
  ASSERT_FALSE(res.addrs.empty());
  ASSERT_EQ(res.addrs.size(), 1u);
  EXPECT_EQ(res.addrs[0].ip, Ip("192.0.2.99"));
}

TEST(UpstreamResolver, ServerListForms) {
  auto r = UpstreamResolver::Create(
      {"127.0.0.1", "127.0.0.2:5353", "[::1]:54", "::1", "[2001:db8::53]"}, absl::Seconds(1), 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->servers(), (std::vector<std::string>{"127.0.0.1:53", "127.0.0.2:5353", "[::1]:54",
                                                       "[::1]:53", "[2001:db8::53]:53"}));
  for (const char* bad : {"", "1.2.3.4:", "1.2.3.4:0", "1.2.3.4:65536", "[::1", "[::1]x",
                          "[::1]:", "dns.example", "1.2.3.4:53:1", "::1:53x", "1.2.3.4 "}) {
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

}  // namespace
}  // namespace usentry::netgate
