// Tests of the gofer wire encoding: round trips, hostile decoding, names, FD transport.
#include "gofer/protocol.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace usentry::gofer {
namespace {

Request FullRequest(Op op) {
  Request r;
  r.tag = 0x0102030405060708ull;
  r.op = op;
  r.cpu = 3;
  r.handle = 42;
  r.handle2 = 43;
  r.name = "name";
  r.name2 = "other";
  r.names = {"a", "bc"};
  r.flags = 0x80000001u;
  r.mode = 0644;
  r.cursor = 99;
  r.setattr.mask = kSetMode | kSetSize | kSetAtime;
  r.setattr.mode = 0600;
  r.setattr.uid = 1;
  r.setattr.gid = 2;
  r.setattr.size = -5;
  r.setattr.atime = {7, 8};
  r.setattr.mtime = {9, UTIME_OMIT};
  return r;
}

TEST(ProtocolTest, EveryRequestRoundTrips) {
  for (uint32_t op = 1; op <= kMaxOp; ++op) {
    Request in = FullRequest(static_cast<Op>(op));
    SysResult<Request> out = DecodeRequest(EncodeRequest(in));
    ASSERT_TRUE(out.ok()) << "op " << op;
    EXPECT_EQ(out->tag, in.tag);
    EXPECT_EQ(out->op, in.op);
    EXPECT_EQ(out->cpu, 3u);
    // Re-encoding what was decoded gives the same bytes: no field is lost or invented.
    EXPECT_EQ(EncodeRequest(*out), EncodeRequest(in)) << "op " << op;
  }
}

// Reports (the run_end audit record) name operations; no two may share a name.
TEST(ProtocolTest, EveryOpHasItsOwnName) {
  std::set<std::string_view> names;
  for (uint32_t op = 1; op <= kMaxOp; ++op) {
    std::string_view name = OpName(static_cast<Op>(op));
    EXPECT_NE(name, "invalid") << op;
    EXPECT_TRUE(names.insert(name).second) << name;
  }
  EXPECT_EQ(OpName(Op::kWalkPath), "walk_path");
  EXPECT_EQ(OpName(Op::kWalkSiblings), "walk_siblings");
  EXPECT_EQ(OpName(Op::kInvalid), "invalid");
  EXPECT_EQ(OpName(static_cast<Op>(kMaxOp + 1)), "invalid");
}

TEST(ProtocolTest, RenameAndSetAttrFieldsSurvive) {
  Request in = FullRequest(Op::kRename);
  SysResult<Request> out = DecodeRequest(EncodeRequest(in));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->handle, 42u);
  EXPECT_EQ(out->handle2, 43u);
  EXPECT_EQ(out->name, "name");
  EXPECT_EQ(out->name2, "other");
  EXPECT_EQ(out->flags, 0x80000001u);

  in = FullRequest(Op::kSetAttr);
  out = DecodeRequest(EncodeRequest(in));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->setattr.mask, in.setattr.mask);
  EXPECT_EQ(out->setattr.size, -5);
  EXPECT_EQ(out->setattr.atime.tv_nsec, 8);
  EXPECT_EQ(out->setattr.mtime.tv_nsec, UTIME_OMIT);
}

TEST(ProtocolTest, LittleEndianHeader) {
  Request r;
  r.tag = 1;
  r.op = Op::kStat;
  r.handle = 0x0201;
  std::string b = EncodeRequest(r);
  ASSERT_EQ(b.size(), 8u + 4u + 4u + 8u);  // tag op cpu handle
  EXPECT_EQ(b[0], 1);
  EXPECT_EQ(b[8], static_cast<char>(Op::kStat));
  EXPECT_EQ(b.substr(12, 4), std::string(4, '\xff'));  // kAnyCpu: no CPU named
  EXPECT_EQ(b[16], 1);
  EXPECT_EQ(b[17], 2);
}

TEST(ProtocolTest, ResponsesRoundTrip) {
  Response in;
  in.tag = 7;
  in.op = Op::kReadDir;
  in.eof = false;
  in.next_cursor = 1234;
  in.entries = {{"a", 1, 4}, {"bb", 2, 8}, {std::string(255, 'x'), 3, 10}};
  SysResult<Response> out = DecodeResponse(EncodeResponse(in));
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->eof);
  EXPECT_EQ(out->next_cursor, 1234u);
  ASSERT_EQ(out->entries.size(), 3u);
  EXPECT_EQ(out->entries[1].name, "bb");
  EXPECT_EQ(out->entries[2].name.size(), 255u);
  EXPECT_EQ(out->entries[2].type, 10);

  Response attach;
  attach.tag = 8;
  attach.op = Op::kAttach;
  attach.node.handle = 5;
  attach.node.attr.mode = S_IFDIR | 0755;
  attach.node.attr.size = -1;
  attach.node.attr.mtime = {100, 200};
  attach.read_only = true;
  SysResult<Response> a = DecodeResponse(EncodeResponse(attach));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->node.handle, 5u);
  EXPECT_EQ(a->node.attr.mode, static_cast<uint32_t>(S_IFDIR | 0755));
  EXPECT_EQ(a->node.attr.size, -1);
  EXPECT_EQ(a->node.attr.mtime.tv_nsec, 200);
  EXPECT_TRUE(a->read_only);

  Response walk;
  walk.tag = 10;
  walk.op = Op::kWalk;
  walk.node.handle = 6;
  walk.node.attr.mode = S_IFLNK | 0777;
  walk.node.link_target = "../lib/x";
  SysResult<Response> w = DecodeResponse(EncodeResponse(walk));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->node.link_target, "../lib/x");
  // A target on a node that is no symlink, or a symlink without a valid one, is a
  // broken peer.
  walk.node.attr.mode = S_IFREG | 0644;
  EXPECT_EQ(DecodeResponse(EncodeResponse(walk)).error(), EBADMSG);
  walk.node.attr.mode = S_IFLNK | 0777;
  walk.node.link_target = "";
  EXPECT_EQ(DecodeResponse(EncodeResponse(walk)).error(), EBADMSG);
  walk.node.link_target = std::string("a\0b", 3);
  EXPECT_EQ(DecodeResponse(EncodeResponse(walk)).error(), EBADMSG);

  Response wo;
  wo.tag = 11;
  wo.op = Op::kWalkOpen;
  wo.node.attr.mode = S_IFREG | 0644;
  wo.has_fd = true;
  SysResult<Response> o = DecodeResponse(EncodeResponse(wo));
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->has_fd);
  EXPECT_EQ(o->open_err, 0);
  wo.has_fd = false;
  wo.open_err = EACCES;
  o = DecodeResponse(EncodeResponse(wo));
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->open_err, EACCES);
  // An FD with a failed open, or for anything but a regular file, is a broken peer.
  wo.has_fd = true;
  EXPECT_EQ(DecodeResponse(EncodeResponse(wo)).error(), EBADMSG);
  wo.open_err = 0;
  wo.node.attr.mode = S_IFDIR | 0755;
  EXPECT_EQ(DecodeResponse(EncodeResponse(wo)).error(), EBADMSG);
  wo.has_fd = false;
  wo.open_err = -1;
  EXPECT_EQ(DecodeResponse(EncodeResponse(wo)).error(), EBADMSG);
  // A sibling follows a symlink to one name; the FD is then the sibling's.
  wo.open_err = 0;
  wo.node.attr.mode = S_IFLNK | 0777;
  wo.node.link_target = "libz.so.1.2.13";
  wo.has_sibling = true;
  wo.sibling.handle = 21;
  wo.sibling.attr.mode = S_IFREG | 0644;
  wo.has_fd = true;
  o = DecodeResponse(EncodeResponse(wo));
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->has_sibling);
  EXPECT_EQ(o->sibling.handle, 21u);
  EXPECT_EQ(EncodeResponse(*o), EncodeResponse(wo));
  // After anything but such a link, or with an FD for a sibling that is no regular
  // file: a broken peer.
  wo.node.link_target = "../lib/libz.so.1.2.13";
  EXPECT_EQ(DecodeResponse(EncodeResponse(wo)).error(), EBADMSG);
  wo.node.link_target = "libz.so.1.2.13";
  wo.node.attr.mode = S_IFREG | 0644;
  EXPECT_EQ(DecodeResponse(EncodeResponse(wo)).error(), EBADMSG);
  wo.node.attr.mode = S_IFLNK | 0777;
  wo.sibling.attr.mode = S_IFDIR | 0755;
  EXPECT_EQ(DecodeResponse(EncodeResponse(wo)).error(), EBADMSG);

  // WalkSiblings: any kind of node, then a stop; at least one node, at most as many as a
  // request may name.
  Response ws;
  ws.tag = 13;
  ws.op = Op::kWalkSiblings;
  ws.nodes.resize(2);
  ws.nodes[0].handle = 7;
  ws.nodes[0].attr.mode = S_IFREG | 0644;
  ws.nodes[1].handle = 8;
  ws.nodes[1].attr.mode = S_IFLNK | 0777;
  ws.nodes[1].link_target = "x";
  ws.stop_err = ENOENT;
  SysResult<Response> wsd = DecodeResponse(EncodeResponse(ws));
  ASSERT_TRUE(wsd.ok());
  ASSERT_EQ(wsd->nodes.size(), 2u);
  EXPECT_EQ(wsd->nodes[1].link_target, "x");
  EXPECT_EQ(wsd->stop_err, ENOENT);
  EXPECT_EQ(EncodeResponse(*wsd), EncodeResponse(ws));
  ws.stop_err = 5000;
  EXPECT_EQ(DecodeResponse(EncodeResponse(ws)).error(), EBADMSG);
  ws.stop_err = 0;
  ws.nodes.clear();
  EXPECT_EQ(DecodeResponse(EncodeResponse(ws)).error(), EBADMSG);
  ws.nodes.resize(kMaxWalkPathNames + 1);
  EXPECT_EQ(DecodeResponse(EncodeResponse(ws)).error(), EBADMSG);

  // WalkPath: nodes through directories, then a stop or the last name's open.
  Response wp;
  wp.tag = 12;
  wp.op = Op::kWalkPath;
  wp.nodes.resize(2);
  wp.nodes[0].handle = 5;
  wp.nodes[0].attr.mode = S_IFDIR | 0755;
  wp.nodes[1].handle = 6;
  wp.nodes[1].attr.mode = S_IFREG | 0644;
  wp.has_fd = true;
  SysResult<Response> wpd = DecodeResponse(EncodeResponse(wp));
  ASSERT_TRUE(wpd.ok());
  ASSERT_EQ(wpd->nodes.size(), 2u);
  EXPECT_EQ(wpd->nodes[1].handle, 6u);
  EXPECT_TRUE(wpd->has_fd);
  EXPECT_EQ(EncodeResponse(*wpd), EncodeResponse(wp));
  // A stop after a file, an FD with a stop, a walk through a file, no node at all, or
  // more nodes than a request may name: a broken peer.
  wp.has_fd = false;
  wp.stop_err = ENOENT;
  EXPECT_EQ(DecodeResponse(EncodeResponse(wp)).error(), EBADMSG);
  wp.nodes[1].attr.mode = S_IFDIR | 0755;
  ASSERT_TRUE(DecodeResponse(EncodeResponse(wp)).ok());
  wp.has_fd = true;
  EXPECT_EQ(DecodeResponse(EncodeResponse(wp)).error(), EBADMSG);
  wp.has_fd = false;
  wp.stop_err = 0;
  wp.nodes[0].attr.mode = S_IFREG | 0644;
  EXPECT_EQ(DecodeResponse(EncodeResponse(wp)).error(), EBADMSG);
  // The last node's sibling, never with a stop.
  wp.nodes[0].attr.mode = S_IFDIR | 0755;
  wp.nodes[1].attr.mode = S_IFLNK | 0777;
  wp.nodes[1].link_target = "python3.11";
  wp.has_sibling = true;
  wp.sibling.attr.mode = S_IFREG | 0755;
  wp.has_fd = true;
  wpd = DecodeResponse(EncodeResponse(wp));
  ASSERT_TRUE(wpd.ok());
  EXPECT_TRUE(wpd->has_sibling);
  wp.has_fd = false;
  wp.stop_err = ENOENT;
  EXPECT_EQ(DecodeResponse(EncodeResponse(wp)).error(), EBADMSG);
  wp.stop_err = 0;
  wp.has_sibling = false;
  wp.nodes.clear();
  EXPECT_EQ(DecodeResponse(EncodeResponse(wp)).error(), EBADMSG);
  wp.nodes.resize(kMaxWalkPathNames + 1);
  for (Node& n : wp.nodes) n.attr.mode = S_IFDIR | 0755;
  EXPECT_EQ(DecodeResponse(EncodeResponse(wp)).error(), EBADMSG);

  Response err;
  err.tag = 9;
  err.op = Op::kWalk;
  err.err = ENOENT;
  SysResult<Response> e = DecodeResponse(EncodeResponse(err));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->err, ENOENT);
}

TEST(ProtocolTest, EveryTruncationOfEveryRequestIsRejected) {
  for (uint32_t op = 1; op <= kMaxOp; ++op) {
    std::string b = EncodeRequest(FullRequest(static_cast<Op>(op)));
    for (size_t len = 0; len < b.size(); ++len) {
      SysResult<Request> r = DecodeRequest(std::string_view(b).substr(0, len));
      EXPECT_FALSE(r.ok()) << "op " << op << " len " << len;
      if (!r.ok()) {
        EXPECT_EQ(r.error(), EBADMSG);
      }
    }
  }
}

TEST(ProtocolTest, TrailingBytesAreRejected) {
  std::string b = EncodeRequest(FullRequest(Op::kWalk)) + "x";
  SysResult<Request> r = DecodeRequest(b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), EBADMSG);
}

TEST(ProtocolTest, HugeStringLengthIsRejected) {
  Request r = FullRequest(Op::kWalk);
  r.name = "abc";
  std::string b = EncodeRequest(r);
  // Overwrite the name length (after tag, op, cpu, handle) with 0xffffffff.
  for (int i = 0; i < 4; ++i) b[24 + i] = static_cast<char>(0xff);
  SysResult<Request> out = DecodeRequest(b);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error(), EBADMSG);
}

TEST(ProtocolTest, UnknownOpIsRejected) {
  Request r = FullRequest(Op::kStat);
  std::string b = EncodeRequest(r);
  b[8] = 99;
  SysResult<Request> out = DecodeRequest(b);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error(), EBADMSG);
  SysResult<std::pair<uint64_t, Op>> header = DecodeRequestHeader(b);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->first, r.tag);
  EXPECT_EQ(header->second, Op::kInvalid);
  b[8] = 0;
  EXPECT_FALSE(DecodeRequest(b).ok());
}

TEST(ProtocolTest, HostileReadDirResponseCountIsRejected) {
  Response in;
  in.op = Op::kReadDir;
  in.entries = {{"a", 1, 4}};
  std::string b = EncodeResponse(in);
  // count sits after header (16) + eof (1) + cursor (8).
  for (int i = 0; i < 4; ++i) b[25 + i] = static_cast<char>(0xff);
  SysResult<Response> out = DecodeResponse(b);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error(), EBADMSG);
}

TEST(ProtocolTest, BadBoolAndNegativeErrnoAreRejected) {
  Response in;
  in.op = Op::kOpen;
  in.has_fd = true;
  std::string b = EncodeResponse(in);
  b[16] = 2;
  EXPECT_FALSE(DecodeResponse(b).ok());

  Response err;
  err.op = Op::kStat;
  err.err = -1;
  EXPECT_FALSE(DecodeResponse(EncodeResponse(err)).ok());
  // An error response carries nothing else.
  err.err = EIO;
  EXPECT_FALSE(DecodeResponse(EncodeResponse(err) + "junk").ok());
}

TEST(ProtocolTest, ValidateName) {
  EXPECT_TRUE(ValidateName("a").ok());
  EXPECT_TRUE(ValidateName("...").ok());
  EXPECT_TRUE(ValidateName(std::string(255, 'n')).ok());
  EXPECT_EQ(ValidateName("").error(), EINVAL);
  EXPECT_EQ(ValidateName(".").error(), EINVAL);
  EXPECT_EQ(ValidateName("..").error(), EINVAL);
  EXPECT_EQ(ValidateName("a/b").error(), EINVAL);
  EXPECT_EQ(ValidateName("/").error(), EINVAL);
  EXPECT_EQ(ValidateName(std::string("a\0b", 3)).error(), EINVAL);
  EXPECT_EQ(ValidateName(std::string(256, 'n')).error(), ENAMETOOLONG);
}

TEST(ProtocolTest, ValidateSymlinkTarget) {
  EXPECT_TRUE(ValidateSymlinkTarget("../../etc").ok());
  EXPECT_EQ(ValidateSymlinkTarget("").error(), ENOENT);
  EXPECT_EQ(ValidateSymlinkTarget(std::string("a\0", 2)).error(), EINVAL);
  EXPECT_EQ(ValidateSymlinkTarget(std::string(4096, 'x')).error(), ENAMETOOLONG);
}

class TransportTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv_), 0); }
  void TearDown() override {
    close(sv_[0]);
    close(sv_[1]);
  }
  int sv_[2];
};

TEST_F(TransportTest, MessageWithFd) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  ASSERT_TRUE(SendPacket(sv_[0], "hello", p[1]).ok());
  close(p[1]);
  SysResult<Packet> m = RecvPacket(sv_[1]);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->bytes, "hello");
  ASSERT_TRUE(m->fd.valid());
  EXPECT_TRUE(fcntl(m->fd.get(), F_GETFD) & FD_CLOEXEC);
  ASSERT_EQ(write(m->fd.get(), "x", 1), 1);
  char c;
  ASSERT_EQ(read(p[0], &c, 1), 1);
  EXPECT_EQ(c, 'x');
  close(p[0]);
}

TEST_F(TransportTest, OversizedMessages) {
  std::string big(kMaxMessageSize + 1, 'a');
  EXPECT_EQ(SendPacket(sv_[0], big).error(), EMSGSIZE);
  // A peer bypassing SendMessage: the receiver reports EMSGSIZE, not a truncated message.
  ASSERT_EQ(send(sv_[0], big.data(), big.size(), 0), static_cast<ssize_t>(big.size()));
  SysResult<Packet> m = RecvPacket(sv_[1]);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), EMSGSIZE);
}

TEST_F(TransportTest, TwoFdsAreRefusedAndClosed) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  int fds[2] = {p[0], p[1]};
  char control[CMSG_SPACE(sizeof(fds))] = {};
  iovec iov{const_cast<char*>("x"), 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(fds));
  memcpy(CMSG_DATA(cm), fds, sizeof(fds));
  ASSERT_EQ(sendmsg(sv_[0], &msg, 0), 1);
  close(p[0]);
  close(p[1]);
  SysResult<Packet> m = RecvPacket(sv_[1]);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), EBADMSG);
}

TEST_F(TransportTest, PeerCloseIsEmptyMessage) {
  close(sv_[0]);
  sv_[0] = -1;
  SysResult<Packet> m = RecvPacket(sv_[1]);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->bytes.empty());
}

}  // namespace
}  // namespace usentry::gofer
