// Gofer confinement tests: symlinks are never followed, bad names are refused, masks hide
// paths and hard links to them, the root allowlist holds, and hostile raw messages get
// errors without stopping the server.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <string>

#include "gofer/client.h"
#include "gofer/gofer_test_util.h"
#include "gofer/protocol.h"
#include "gofer/server.h"
#include "gtest/gtest.h"

namespace usentry::gofer {
namespace {

using testing::GoferHarness;
using testing::TempDir;

std::set<std::string> Names(const std::vector<DirEntry>& entries) {
  std::set<std::string> out;
  for (const DirEntry& e : entries) out.insert(e.name);
  return out;
}

class GoferEscapeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // tree/ : etc/{passwd,shadow,ssh/{ssh_config,ssh_host_rsa_key,ssh_host_rsa_key.pub},
    //         sudoers.d/rule}, other/{shadow_link (hard link to etc/shadow),
    //         rule_link (hard link into the masked dir)}, home/, to_etc -> /etc,
    //         up -> ../../, pw -> /etc/passwd
    tree_.Mkdir("etc");
    tree_.Mkdir("etc/ssh");
    tree_.Mkdir("etc/sudoers.d");
    tree_.Mkdir("other");
    tree_.Mkdir("home");
    tree_.WriteFile("etc/passwd", "root:x:0:0");
    tree_.WriteFile("etc/shadow", "secret");
    tree_.WriteFile("etc/ssh/ssh_config", "cfg");
    tree_.WriteFile("etc/ssh/ssh_host_rsa_key", "key");
    tree_.WriteFile("etc/ssh/ssh_host_rsa_key.pub", "pub");
    tree_.WriteFile("etc/sudoers.d/rule", "ALL");
    ASSERT_EQ(link(tree_.Join("etc/shadow").c_str(), tree_.Join("other/shadow_link").c_str()), 0);
    ASSERT_EQ(link(tree_.Join("etc/sudoers.d/rule").c_str(), tree_.Join("other/rule_link").c_str()),
              0);
    ASSERT_EQ(symlink("/etc", tree_.Join("to_etc").c_str()), 0);
    ASSERT_EQ(symlink("../../", tree_.Join("up").c_str()), 0);
    ASSERT_EQ(symlink("/etc/passwd", tree_.Join("pw").c_str()), 0);
  }
  void Start(bool read_only, std::optional<std::set<std::string>> allowlist = std::nullopt) {
    TreeConfig t = MountTree(0, tree_.path(), read_only);
    t.masks = {"etc/shadow", "etc/ssh/*key*", "etc/sudoers.d"};
    t.top_level_allowlist = std::move(allowlist);
    GoferConfig config;
    config.trees.push_back(t);
    harness_ = std::make_unique<GoferHarness>(config);
    auto root = c().Attach("mount0");
    ASSERT_TRUE(root.ok());
    root_ = root->first.handle;
  }
  Client& c() { return harness_->client(); }
  Handle WalkOk(Handle dir, const std::string& name) {
    auto r = c().Walk(dir, name);
    EXPECT_TRUE(r.ok()) << name << " errno " << r.error();
    return r.ok() ? r->handle : 0;
  }
  // Sends a hand-made request on the client's socket and returns the decoded response.
  Response Raw(std::string_view bytes) {
    EXPECT_TRUE(SendPacket(harness_->raw_socket(), bytes).ok());
    SysResult<Packet> m = RecvPacket(harness_->raw_socket());
    EXPECT_TRUE(m.ok());
    EXPECT_FALSE(m->fd.valid());
    SysResult<Response> r = DecodeResponse(m->bytes);
    EXPECT_TRUE(r.ok());
    return r.ok() ? r.value() : Response{};
  }

  TempDir tree_;
  std::unique_ptr<GoferHarness> harness_;
  Handle root_ = 0;
};

TEST_F(GoferEscapeTest, SymlinksAreNodesNeverFollowed) {
  Start(/*read_only=*/false);
  for (const char* name : {"to_etc", "up", "pw"}) {
    auto n = c().Walk(root_, name);
    ASSERT_TRUE(n.ok()) << name;
    EXPECT_TRUE(S_ISLNK(n->attr.mode)) << name;
    // Walk through, open, list or truncate a link node: never the target.
    EXPECT_EQ(c().Walk(n->handle, "passwd").error(), ENOTDIR) << name;
    EXPECT_EQ(c().Open(n->handle, O_RDONLY).error(), ELOOP) << name;
    EXPECT_EQ(c().Open(n->handle, O_RDONLY | O_DIRECTORY).error(), ELOOP) << name;
    EXPECT_EQ(c().ReadDir(n->handle).error(), ENOTDIR) << name;
    SetAttrRequest req;
    req.mask = kSetSize;
    EXPECT_EQ(c().SetAttr(n->handle, req).error(), EINVAL) << name;
  }
  auto target = c().Readlink(WalkOk(root_, "to_etc"));
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(*target, "/etc");
  auto lnk_stat = c().Stat(WalkOk(root_, "pw"));
  ASSERT_TRUE(lnk_stat.ok());
  EXPECT_TRUE(S_ISLNK(lnk_stat->mode));
}

TEST_F(GoferEscapeTest, BadNamesAreRejectedByClientAndServer) {
  Start(/*read_only=*/false);
  Handle etc = WalkOk(root_, "etc");
  for (const std::string& name :
       std::vector<std::string>{"..", ".", "", "a/b", "../etc", "/etc", std::string("a\0b", 3)}) {
    EXPECT_EQ(c().Walk(etc, name).error(), EINVAL) << name;
    EXPECT_EQ(c().Mkdir(etc, name, 0755).error(), EINVAL) << name;
    // The same request, bypassing the client's checks.
    Request req;
    req.tag = 1000;
    req.op = Op::kWalk;
    req.handle = etc;
    req.name = name;
    Response resp = Raw(EncodeRequest(req));
    EXPECT_EQ(resp.tag, 1000u);
    EXPECT_EQ(resp.err, EINVAL) << name;
    req.op = Op::kCreate;
    EXPECT_EQ(Raw(EncodeRequest(req)).err, EINVAL) << name;
    req.op = Op::kRename;
    req.handle2 = etc;
    req.name2 = "fine";
    EXPECT_EQ(Raw(EncodeRequest(req)).err, EINVAL) << name;
  }
  EXPECT_EQ(c().Walk(etc, std::string(256, 'x')).error(), ENAMETOOLONG);
  Request req;
  req.tag = 1001;
  req.op = Op::kSymlink;
  req.handle = etc;
  req.name = "s";
  req.name2 = std::string("/etc\0x", 6);
  EXPECT_EQ(Raw(EncodeRequest(req)).err, EINVAL);
  // Nothing was created on the host by any of this.
  EXPECT_NE(access(tree_.Join("etc/s").c_str(), F_OK), 0);
  EXPECT_NE(access(tree_.Join("etc/fine").c_str(), F_OK), 0);
}

TEST_F(GoferEscapeTest, HostileMessagesGetErrorsAndServerKeepsServing) {
  Start(/*read_only=*/true);
  // Too short for a header: answered with tag 0.
  Response r = Raw("abc");
  EXPECT_EQ(r.tag, 0u);
  EXPECT_EQ(r.err, EINVAL);
  // A header with a string length far past the end.
  Request walk;
  walk.tag = 77;
  walk.op = Op::kWalk;
  walk.handle = root_;
  walk.name = "etc";
  std::string b = EncodeRequest(walk);
  // The name's length, after tag (8), op (4), cpu (4) and handle (8).
  for (int i = 0; i < 4; ++i) b[24 + i] = static_cast<char>(0xff);
  r = Raw(b);
  EXPECT_EQ(r.tag, 77u);
  EXPECT_EQ(r.op, Op::kWalk);
  EXPECT_EQ(r.err, EINVAL);
  // An unknown op.
  b = EncodeRequest(walk);
  b[8] = 0x7f;
  r = Raw(b);
  EXPECT_EQ(r.err, EINVAL);
  // Oversized message.
  std::string big(kMaxMessageSize + 100, 'z');
  ASSERT_EQ(send(harness_->raw_socket(), big.data(), big.size(), 0),
            static_cast<ssize_t>(big.size()));
  SysResult<Packet> m = RecvPacket(harness_->raw_socket());
  ASSERT_TRUE(m.ok());
  SysResult<Response> resp = DecodeResponse(m->bytes);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->err, EINVAL);
  // Handles never issued.
  for (uint64_t h : {0ull, 2ull, 999999ull, ~0ull}) {
    Request st;
    st.tag = 5;
    st.op = Op::kStat;
    st.handle = h;
    EXPECT_EQ(Raw(EncodeRequest(st)).err, EBADF) << h;
  }
  // Still serving normally.
  EXPECT_TRUE(c().Walk(root_, "etc").ok());
  EXPECT_TRUE(harness_->Stop().ok());
}

TEST_F(GoferEscapeTest, MasksHidePathsAndHardLinks) {
  Start(/*read_only=*/true);
  Handle etc = WalkOk(root_, "etc");
  EXPECT_EQ(c().Walk(etc, "shadow").error(), ENOENT);
  EXPECT_TRUE(c().Walk(etc, "passwd").ok());
  EXPECT_EQ(c().Walk(etc, "sudoers.d").error(), ENOENT);
  Handle ssh = WalkOk(etc, "ssh");
  EXPECT_EQ(c().Walk(ssh, "ssh_host_rsa_key").error(), ENOENT);
  EXPECT_EQ(c().Walk(ssh, "ssh_host_rsa_key.pub").error(), ENOENT);
  EXPECT_TRUE(c().Walk(ssh, "ssh_config").ok());
  // Hard links elsewhere in the tree to a masked file, or into a masked directory.
  Handle other = WalkOk(root_, "other");
  EXPECT_EQ(c().Walk(other, "shadow_link").error(), ENOENT);
  EXPECT_EQ(c().Walk(other, "rule_link").error(), ENOENT);

  auto etc_list = c().ReadDir(etc);
  ASSERT_TRUE(etc_list.ok());
  EXPECT_EQ(Names(*etc_list), (std::set<std::string>{"passwd", "ssh"}));
  auto ssh_list = c().ReadDir(ssh);
  ASSERT_TRUE(ssh_list.ok());
  EXPECT_EQ(Names(*ssh_list), (std::set<std::string>{"ssh_config"}));
  auto other_list = c().ReadDir(other);
  ASSERT_TRUE(other_list.ok());
  EXPECT_TRUE(other_list->empty());
}

// Names of one directory walked in one request are each one Walk: a masked name (or a
// hard link to a masked file) stops the batch with ENOENT, as its own Walk would fail.
TEST_F(GoferEscapeTest, WalkSiblingsKeepsMasks) {
  Start(/*read_only=*/true);
  Handle etc = WalkOk(root_, "etc");
  auto batch = c().WalkSiblings(etc, {"passwd", "shadow", "ssh"});
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->nodes.size(), 1u);
  EXPECT_EQ(batch->stop_err, ENOENT);
  EXPECT_EQ(c().WalkSiblings(etc, {"sudoers.d", "passwd"}).error(), ENOENT);
  Handle other = WalkOk(root_, "other");
  EXPECT_EQ(c().WalkSiblings(other, {"shadow_link"}).error(), ENOENT);
  EXPECT_EQ(c().WalkSiblings(other, {"rule_link"}).error(), ENOENT);
  EXPECT_EQ(c().WalkSiblings(etc, {"passwd", ".."}).error(), EINVAL);
}

// A multi-component walk is one Walk after another: masks hide names on the way, a
// symlink ends it as a node (never followed), and hostile WalkPath messages get errors.
TEST_F(GoferEscapeTest, WalkPathKeepsMasksAndNeverFollowsSymlinks) {
  Start(/*read_only=*/true);
  auto masked = c().WalkPath(root_, {"etc", "shadow"}, /*open_last=*/true);
  ASSERT_TRUE(masked.ok());
  ASSERT_EQ(masked->nodes.size(), 1u);
  EXPECT_EQ(masked->stop_err, ENOENT);
  EXPECT_FALSE(masked->fd.valid());
  auto key = c().WalkPath(root_, {"etc", "ssh", "ssh_host_rsa_key"}, true);
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(key->nodes.size(), 2u);
  EXPECT_EQ(key->stop_err, ENOENT);
  auto inside = c().WalkPath(root_, {"etc", "sudoers.d", "rule"}, true);
  ASSERT_TRUE(inside.ok());
  EXPECT_EQ(inside->nodes.size(), 1u);
  EXPECT_EQ(inside->stop_err, ENOENT);
  auto hard = c().WalkPath(root_, {"other", "shadow_link"}, true);
  ASSERT_TRUE(hard.ok());
  EXPECT_EQ(hard->nodes.size(), 1u);
  EXPECT_EQ(hard->stop_err, ENOENT);
  for (const char* link : {"to_etc", "up"}) {
    auto through = c().WalkPath(root_, {link, "passwd"}, true);
    ASSERT_TRUE(through.ok()) << link;
    ASSERT_EQ(through->nodes.size(), 1u) << link;
    EXPECT_TRUE(S_ISLNK(through->nodes[0].attr.mode)) << link;
    EXPECT_EQ(through->stop_err, 0) << link;
    EXPECT_FALSE(through->fd.valid()) << link;
  }
  auto pw = c().WalkPath(root_, {"pw"}, true);
  ASSERT_TRUE(pw.ok());
  EXPECT_EQ(pw->nodes[0].link_target, "/etc/passwd");
  EXPECT_FALSE(pw->fd.valid());
  EXPECT_FALSE(pw->sibling.has_value());
  // The one step a same-directory link is followed keeps the masks: a link to a masked
  // name gets no sibling, by WalkOpen or WalkPath.
  ASSERT_EQ(symlink("shadow", tree_.Join("etc/sh").c_str()), 0);
  ASSERT_EQ(symlink("ssh_host_rsa_key", tree_.Join("etc/ssh/k").c_str()), 0);
  auto sh = c().WalkPath(root_, {"etc", "sh"}, true);
  ASSERT_TRUE(sh.ok());
  ASSERT_EQ(sh->nodes.size(), 2u);
  EXPECT_FALSE(sh->sibling.has_value());
  EXPECT_FALSE(sh->fd.valid());
  auto k = c().WalkOpen(WalkOk(WalkOk(root_, "etc"), "ssh"), "k");
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->sibling.has_value());
  EXPECT_FALSE(k->fd.valid());

  // Hand-made requests: no names, too many, a bad name on the way.
  Request walk;
  walk.tag = 9;
  walk.op = Op::kWalkPath;
  walk.handle = root_;
  EXPECT_EQ(Raw(EncodeRequest(walk)).err, EINVAL);
  walk.names.assign(kMaxWalkPathNames + 1, "etc");
  EXPECT_EQ(Raw(EncodeRequest(walk)).err, EINVAL);
  walk.names = {"..", "etc"};
  EXPECT_EQ(Raw(EncodeRequest(walk)).err, EINVAL);
  walk.names = {"etc", "..", "etc"};
  Response r = Raw(EncodeRequest(walk));
  EXPECT_EQ(r.err, 0);
  EXPECT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.stop_err, EINVAL);
  walk.names = {"etc", "a/b"};
  EXPECT_EQ(Raw(EncodeRequest(walk)).stop_err, EINVAL);
  EXPECT_TRUE(c().Walk(root_, "etc").ok());
  EXPECT_TRUE(harness_->Stop().ok());
}

TEST_F(GoferEscapeTest, MasksHoldAgainstMutationsOnRwTree) {
  Start(/*read_only=*/false);
  Handle etc = WalkOk(root_, "etc");
  Handle other = WalkOk(root_, "other");
  // Neither replaced nor revealed (EEXIST would tell the file is there).
  EXPECT_EQ(c().Create(etc, "shadow", O_RDWR, 0644).error(), EACCES);
  EXPECT_EQ(c().Mkdir(etc, "shadow", 0755).error(), EACCES);
  EXPECT_EQ(c().Symlink(etc, "shadow", "/x").error(), EACCES);
  EXPECT_EQ(c().Unlink(etc, "shadow", 0).error(), ENOENT);
  EXPECT_EQ(c().Unlink(other, "shadow_link", 0).error(), ENOENT);
  Handle passwd = WalkOk(etc, "passwd");
  EXPECT_EQ(c().Link(etc, "shadow", passwd).error(), EACCES);
  EXPECT_EQ(c().Rename(etc, "passwd", etc, "shadow", 0).error(), EACCES);
  EXPECT_EQ(c().Rename(etc, "shadow", etc, "visible", 0).error(), ENOENT);
  EXPECT_EQ(c().Rename(other, "shadow_link", root_, "visible", 0).error(), ENOENT);
  EXPECT_EQ(c().Rename(etc, "passwd", other, "shadow_link", 0).error(), EACCES);
  // Moving a directory that contains masked paths would unmask them.
  EXPECT_EQ(c().Rename(root_, "etc", root_, "etc2", 0).error(), EACCES);
  Handle ssh = WalkOk(etc, "ssh");
  EXPECT_EQ(c().Create(ssh, "new_key", O_RDWR, 0600).error(), EACCES);
  EXPECT_EQ(tree_.ReadFile("etc/shadow"), "secret");
  EXPECT_EQ(tree_.ReadFile("etc/passwd"), "root:x:0:0");
  EXPECT_EQ(tree_.ReadFile("other/shadow_link"), "secret");
}

TEST_F(GoferEscapeTest, TopLevelAllowlist) {
  Start(/*read_only=*/false, std::set<std::string>{"etc", "other", "lib"});
  EXPECT_EQ(c().Walk(root_, "home").error(), ENOENT);
  EXPECT_EQ(c().Walk(root_, "to_etc").error(), ENOENT);
  EXPECT_EQ(c().Walk(root_, "lib").error(), ENOENT);  // allowed but absent on the host
  EXPECT_TRUE(c().Walk(root_, "etc").ok());
  auto list = c().ReadDir(root_);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(Names(*list), (std::set<std::string>{"etc", "other"}));
  EXPECT_EQ(c().Mkdir(root_, "new", 0755).error(), EACCES);
  EXPECT_EQ(c().Unlink(root_, "home", AT_REMOVEDIR).error(), ENOENT);
  EXPECT_EQ(c().Rename(root_, "home", root_, "lib", 0).error(), ENOENT);
  EXPECT_TRUE(c().Mkdir(root_, "lib", 0755).ok());
  // The allowlist is for the tree root only.
  Handle other = WalkOk(root_, "other");
  EXPECT_TRUE(c().Mkdir(other, "home", 0755).ok());
  EXPECT_TRUE(c().Walk(other, "home").ok());
}

TEST(GoferMaskScopeTest, MasksApplyOnlyToTheirTree) {
  TempDir dir;
  dir.WriteFile("secret", "s");
  TreeConfig masked = MountTree(0, dir.path(), true);
  masked.masks = {"secret"};
  GoferConfig config;
  config.trees = {masked, MountTree(1, dir.path(), true)};
  GoferHarness harness(config);
  auto m0 = harness.client().Attach("mount0");
  auto m1 = harness.client().Attach("mount1");
  ASSERT_TRUE(m0.ok() && m1.ok());
  EXPECT_EQ(harness.client().Walk(m0->first.handle, "secret").error(), ENOENT);
  EXPECT_TRUE(harness.client().Walk(m1->first.handle, "secret").ok());
}

TEST(GoferMaskScopeTest, BadMaskFailsServe) {
  TempDir dir;
  TreeConfig t = MountTree(0, dir.path(), true);
  t.masks = {"/etc/shadow"};
  GoferConfig config;
  config.trees = {t};
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  close(sv[0]);
  absl::Status st = Serve(config, UniqueFd(sv[1]));
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("mount0"), std::string::npos) << st.message();
}

TEST(GoferDefaultRootTest, HostViewIsAllowlistedAndMasked) {
  GoferConfig config;
  config.trees.push_back(DefaultRootTree());
  GoferHarness harness(config);
  Client& c = harness.client();
  auto root = c.Attach("root");
  ASSERT_TRUE(root.ok());
  EXPECT_TRUE(root->second);
  Handle r = root->first.handle;
  for (const char* name : {"proc", "root", "home", "tmp", "dev", "sys", "var", "work"}) {
    EXPECT_EQ(c.Walk(r, name).error(), ENOENT) << name;
  }
  auto list = c.ReadDir(r);
  ASSERT_TRUE(list.ok());
  const std::set<std::string> allowed = {"usr",   "bin",   "sbin",   "lib",
                                         "lib32", "lib64", "libx32", "etc"};
  for (const DirEntry& e : *list) EXPECT_TRUE(allowed.count(e.name)) << e.name;
  auto etc = c.Walk(r, "etc");
  ASSERT_TRUE(etc.ok());
  for (const char* name : {"shadow", "gshadow", "sudoers", "sudoers.d"}) {
    EXPECT_EQ(c.Walk(etc->handle, name).error(), ENOENT) << name;
  }
  auto passwd = c.Walk(etc->handle, "passwd");
  ASSERT_TRUE(passwd.ok());
  auto fd = c.Open(passwd->handle, O_RDONLY);
  ASSERT_TRUE(fd.ok());
  char buf[5];
  EXPECT_EQ(read(fd->get(), buf, sizeof(buf)), 5);
  EXPECT_EQ(c.Open(passwd->handle, O_WRONLY).error(), EROFS);
  auto etc_list = c.ReadDir(etc->handle);
  ASSERT_TRUE(etc_list.ok());
  std::set<std::string> names = Names(*etc_list);
  EXPECT_TRUE(names.count("passwd"));
  EXPECT_FALSE(names.count("shadow"));
  EXPECT_FALSE(names.count("gshadow"));
  EXPECT_TRUE(harness.Stop().ok());
}

}  // namespace
}  // namespace usentry::gofer
