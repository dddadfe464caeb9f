#include "sentry/net/netgate/protocol.h"

#include "gtest/gtest.h"

namespace usentry::netgate {
namespace {

TEST(NetgateProtocol, RequestsRoundTrip) {
  Request r;
  r.op = Request::Op::kResolve;
  r.id = 7;
  r.name = "pypi.org";
  r.qtype = kTypeAAAA;
  auto back = DecodeRequest(EncodeRequest(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->name, "pypi.org");
  EXPECT_EQ(back->qtype, kTypeAAAA);

  Request c;
  c.op = Request::Op::kConnect;
  c.id = 8;
  c.proto = policy::NetProto::kUdp;
  c.ip = *IpAddress::Parse("2001:db8::1");
  c.port = 123;
  back = DecodeRequest(EncodeRequest(c));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->op, Request::Op::kConnect);
  EXPECT_EQ(back->proto, policy::NetProto::kUdp);
  EXPECT_EQ(back->ip, c.ip);
  EXPECT_EQ(back->port, 123);
  EXPECT_FALSE(back->host_port);

  c.host_port = true;
  c.proto = policy::NetProto::kTcp;
  back = DecodeRequest(EncodeRequest(c));
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->host_port);
  EXPECT_EQ(back->port, 123);

  Request cl;
  cl.op = Request::Op::kClose;
  cl.id = 3;
  cl.bytes_in = 10;
  cl.bytes_out = 20;
  back = DecodeRequest(EncodeRequest(cl));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->op, Request::Op::kClose);
  EXPECT_EQ(back->id, 3u);
  EXPECT_EQ(back->bytes_out, 20u);
}

TEST(NetgateProtocol, MalformedRequestsAreRefused) {
  for (const char* bad : {
           "",
           "null",
           "[]",
           "{",
           "{\"op\":\"resolve\"}",
           "{\"op\":\"resolve\",\"id\":1,\"name\":\"a\",\"type\":15}",
           "{\"op\":\"resolve\",\"id\":-1,\"name\":\"a\",\"type\":1}",
           "{\"op\":\"resolve\",\"id\":1,\"name\":7,\"type\":1}",
           "{\"op\":\"resolve\",\"id\":1,\"name\":\"a\",\"type\":1,\"extra\":1}",
           "{\"op\":\"connect\",\"id\":1,\"proto\":\"sctp\",\"ip\":\"1.2.3.4\",\"port\":1}",
           "{\"op\":\"connect\",\"id\":1,\"proto\":\"tcp\",\"ip\":\"1.2.3.4\",\"port\":0}",
           "{\"op\":\"connect\",\"id\":1,\"proto\":\"tcp\",\"ip\":\"1.2.3.4\",\"port\":70000}",
           "{\"op\":\"connect\",\"id\":1,\"proto\":\"tcp\",\"ip\":\"example.com\",\"port\":1}",
           "{\"op\":\"connect\",\"id\":1,\"proto\":\"tcp\",\"host_port\":0}",
           "{\"op\":\"close\",\"conn\":1}",
           "{\"op\":\"shell\",\"id\":1}",
       }) {
    EXPECT_FALSE(DecodeRequest(bad)) << bad;
  }
}

TEST(NetgateProtocol, RepliesRoundTrip) {
  ResolveReply rr;
  rr.id = 4;
  rr.rcode = kRcodeNoError;
  rr.addrs = {{*IpAddress::Parse("203.0.113.5"), 300}};
  rr.blocked = {{*IpAddress::Parse("10.0.0.1"), "RFC 1918 (10.0.0.0/8)"}};
  auto back = DecodeReply(EncodeResolveReply(rr));
  ASSERT_TRUE(back);
  ASSERT_TRUE(back->is_resolve);
  ASSERT_EQ(back->resolve.addrs.size(), 1u);
  EXPECT_EQ(back->resolve.addrs[0].ttl, 300u);
  EXPECT_EQ(back->resolve.blocked[0].range, "RFC 1918 (10.0.0.0/8)");

  ConnectReply cr{9, 111, 0, 0, "refused"};
  back = DecodeReply(EncodeConnectReply(cr));
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->is_resolve);
  EXPECT_EQ(back->connect.err, 111);
  EXPECT_EQ(back->connect.reason, "refused");
  EXPECT_FALSE(DecodeReply("{\"id\":1}"));
  EXPECT_FALSE(DecodeReply("{\"id\":1,\"rcode\":0,\"addrs\":[1],\"blocked\":[],\"reason\":\"\"}"));
}

}  // namespace
}  // namespace usentry::netgate
