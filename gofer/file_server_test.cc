// FileServer driven directly (no socket): handle-table bound and request dispatch.
#include "gofer/file_server.h"

#include <fcntl.h>

#include <cerrno>

#include "gofer/gofer_test_util.h"
#include "gtest/gtest.h"

namespace usentry::gofer {
namespace {

Response Do(FileServer& s, Request req) {
  Response resp;
  resp.tag = req.tag;
  resp.op = req.op;
  UniqueFd donate;
  s.Handle(req, resp, donate);
  EXPECT_EQ(resp.has_fd, donate.valid());
  return resp;
}

TEST(FileServerTest, HandleTableIsBounded) {
  testing::TempDir dir;
  GoferConfig config;
  config.trees.push_back(MountTree(0, dir.path(), true));
  auto server = FileServer::Create(config, /*max_handles=*/3);
  ASSERT_TRUE(server.ok()) << server.status();
  Request attach;
  attach.op = Op::kAttach;
  attach.name = "mount0";
  uint64_t first = 0;
  for (int i = 0; i < 3; ++i) {
    Response r = Do(**server, attach);
    ASSERT_EQ(r.err, 0);
    if (i == 0) first = r.node.handle;
  }
  EXPECT_EQ(Do(**server, attach).err, ENFILE);
  EXPECT_EQ((*server)->live_handles(), 3u);
  Request close;
  close.op = Op::kClose;
  close.handle = first;
  EXPECT_EQ(Do(**server, close).err, 0);
  EXPECT_EQ(Do(**server, close).err, EBADF);
  EXPECT_EQ(Do(**server, attach).err, 0);
}

TEST(FileServerTest, HandlesAreNeverReused) {
  testing::TempDir dir;
  GoferConfig config;
  config.trees.push_back(MountTree(0, dir.path(), true));
  auto server = FileServer::Create(config);
  ASSERT_TRUE(server.ok());
  Request attach;
  attach.op = Op::kAttach;
  attach.name = "mount0";
  Response a = Do(**server, attach);
  Request close;
  close.op = Op::kClose;
  close.handle = a.node.handle;
  ASSERT_EQ(Do(**server, close).err, 0);
  Response b = Do(**server, attach);
  EXPECT_NE(b.node.handle, a.node.handle);
  Request stat;
  stat.op = Op::kStat;
  stat.handle = a.node.handle;
  EXPECT_EQ(Do(**server, stat).err, EBADF);
}

TEST(FileServerTest, DuplicateTreeNamesAreRejected) {
  testing::TempDir dir;
  GoferConfig config;
  config.trees = {MountTree(0, dir.path(), true), MountTree(0, dir.path(), false)};
  auto server = FileServer::Create(config);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace usentry::gofer
