// The sandbox resolver without netgate: names the sandbox owns, reverse lookups, refusals
// by policy (with their audit records), malformed queries. Responses are read with
// glibc's own parser (libresolv), as the app's libc reads them.
#include "sentry/net/dns_service.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <resolv.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sentry/kernel/test_kernel.h"
#include "sentry/net/dns_test_util.h"

namespace usentry::sentry::net {
namespace {

using dns::testing::MakeQuery;

struct Answer {
  int rcode = -1;
  std::vector<std::string> records;  // "A 127.0.0.1", "AAAA ::1", "PTR localhost"
};

std::optional<Answer> Parse(const std::string& resp) {
  ns_msg msg;
  if (ns_initparse(reinterpret_cast<const u_char*>(resp.data()), static_cast<int>(resp.size()),
                   &msg) != 0) {
    return std::nullopt;
  }
  Answer a;
  a.rcode = ns_msg_getflag(msg, ns_f_rcode);
  for (int i = 0; i < ns_msg_count(msg, ns_s_an); ++i) {
    ns_rr rr;
    if (ns_parserr(&msg, ns_s_an, i, &rr) != 0) return std::nullopt;
    char buf[256];
    if (ns_rr_type(rr) == ns_t_a && ns_rr_rdlen(rr) == 4) {
      inet_ntop(AF_INET, ns_rr_rdata(rr), buf, sizeof(buf));
      a.records.push_back(std::string("A ") + buf);
    } else if (ns_rr_type(rr) == ns_t_aaaa && ns_rr_rdlen(rr) == 16) {
      inet_ntop(AF_INET6, ns_rr_rdata(rr), buf, sizeof(buf));
      a.records.push_back(std::string("AAAA ") + buf);
    } else if (ns_rr_type(rr) == ns_t_ptr) {
      ns_name_uncompress(ns_msg_base(msg), ns_msg_end(msg), ns_rr_rdata(rr), buf, sizeof(buf));
      a.records.push_back(std::string("PTR ") + buf);
    }
  }
  return a;
}

class DnsServiceTest : public ::testing::Test {
 protected:
  void Make(policy::NetPolicy net) {
    char path[] = "/tmp/usentry-dns-audit-XXXXXX";
    audit_fd_ = mkstemp(path);
    audit_path_ = path;
    ctx_ = std::make_shared<NetContext>();
    ctx_->policy = std::move(net);
    ctx_->audit = std::make_shared<audit::AuditLog>(audit_fd_, "run", false);
    ctx_->hostname = "usentry";
    dns_ = NewSandboxResolver(ctx_);
  }
  void TearDown() override {
    if (audit_fd_ >= 0) close(audit_fd_);
    if (!audit_path_.empty()) unlink(audit_path_.c_str());
  }
  // nullopt: no reply at all.
  std::optional<std::string> Ask(const std::string& query) {
    std::optional<std::string> got;
    absl::MutexLock lock(&tk_.kernel().mu);
    dns_->Query(tk_.task(), query, [&](std::string r) { got = std::move(r); });
    return got;
  }
  Answer AskParsed(const std::string& name, uint16_t type) {
    std::optional<std::string> r = Ask(MakeQuery(0x4242, name, type));
    EXPECT_TRUE(r) << name;
    if (!r) return {};
    std::optional<Answer> a = Parse(*r);
    EXPECT_TRUE(a) << name;
    return a ? *a : Answer{};
  }
  std::vector<nlohmann::json> NetRecords() {
    std::vector<nlohmann::json> out;
    std::ifstream in(audit_path_);
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line);
      if (j.value("event", "") == "net") out.push_back(j);
    }
    return out;
  }

  TestKernel tk_;
  std::shared_ptr<NetContext> ctx_;
  std::unique_ptr<DnsService> dns_;
  int audit_fd_ = -1;
  std::string audit_path_;
};

TEST_F(DnsServiceTest, TheSandboxsOwnNamesAreAnsweredHere) {
  Make({});
  EXPECT_THAT(AskParsed("localhost", ns_t_a).records, ::testing::ElementsAre("A 127.0.0.1"));
  EXPECT_THAT(AskParsed("localhost", ns_t_aaaa).records, ::testing::ElementsAre("AAAA ::1"));
  EXPECT_THAT(AskParsed("web.localhost", ns_t_a).records, ::testing::ElementsAre("A 127.0.0.1"));
  EXPECT_THAT(AskParsed("usentry", ns_t_a).records, ::testing::ElementsAre("A 127.0.1.1"));
  Answer nodata = AskParsed("usentry", ns_t_aaaa);
  EXPECT_EQ(nodata.rcode, ns_r_noerror);
  EXPECT_TRUE(nodata.records.empty());
  EXPECT_THAT(AskParsed("1.0.0.127.in-addr.arpa", ns_t_ptr).records,
              ::testing::ElementsAre("PTR localhost"));
  // Without host ports the host alias does not exist; reverse names of outside addresses
  // are never asked upstream.
  EXPECT_EQ(AskParsed("host.usentry.internal", ns_t_a).rcode, ns_r_nxdomain);
  EXPECT_EQ(AskParsed("7.113.0.203.in-addr.arpa", ns_t_ptr).rcode, ns_r_nxdomain);
  EXPECT_TRUE(NetRecords().empty());  // nothing here is a network decision
}

TEST_F(DnsServiceTest, TheHostAliasExistsWithHostPorts) {
  policy::NetPolicy net;
  net.host_ports = {5432};
  Make(net);
  EXPECT_THAT(AskParsed("host.usentry.internal", ns_t_a).records,
              ::testing::ElementsAre("A 10.0.2.2"));
  EXPECT_THAT(AskParsed("2.2.0.10.in-addr.arpa", ns_t_ptr).records,
              ::testing::ElementsAre("PTR host.usentry.internal"));
}

TEST_F(DnsServiceTest, NamesThePolicyDoesNotAllowAreNxdomainAndRecorded) {
  policy::NetPolicy net;
  net.allow = {*policy::ParseNetRule("pypi.org", false)};
  Make(net);
  EXPECT_EQ(AskParsed("evil.test", ns_t_a).rcode, ns_r_nxdomain);
  std::vector<nlohmann::json> recs = NetRecords();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0]["op"], "resolve");
  EXPECT_EQ(recs[0]["name"], "evil.test");
  EXPECT_EQ(recs[0]["decision"], "denied");
  EXPECT_EQ(recs[0]["rcode"], "NXDOMAIN");
  // An allowed name of another type: NODATA, never asked upstream.
  Answer mx = AskParsed("pypi.org", ns_t_mx);
  EXPECT_EQ(mx.rcode, ns_r_noerror);
  EXPECT_TRUE(mx.records.empty());
  // Allowed, but there is no netgate to ask: SERVFAIL rather than a guess.
  EXPECT_EQ(AskParsed("pypi.org", ns_t_a).rcode, ns_r_servfail);
}

TEST_F(DnsServiceTest, MalformedQueriesGetFormerrOrNothing) {
  Make({});
  EXPECT_FALSE(Ask("short"));  // no header: no answer
  std::string response = MakeQuery(7, "localhost", ns_t_a);
  response[2] |= 0x80;  // QR: somebody sent us a response
  EXPECT_FALSE(Ask(response));
  std::string cut = MakeQuery(8, "localhost", ns_t_a);
  cut.resize(cut.size() - 3);
  std::optional<std::string> r = Ask(cut);
  ASSERT_TRUE(r);
  std::optional<Answer> a = Parse(*r);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode, ns_r_formerr);
  std::string chaos = MakeQuery(9, "version.bind", ns_t_txt);
  chaos[chaos.size() - 1] = 3;  // class CH
  r = Ask(chaos);
  ASSERT_TRUE(r);
  EXPECT_EQ(Parse(*r)->rcode, ns_r_refused);
}

}  // namespace
}  // namespace usentry::sentry::net
