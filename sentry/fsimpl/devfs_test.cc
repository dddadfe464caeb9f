// devfs nodes: attributes, reads, writes, symlinks, listing; /dev/tty without a host tty.
#include "sentry/fsimpl/devfs.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/sysmacros.h>

#include <string>

#include "gtest/gtest.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry::fsimpl {
namespace {

class DevfsTest : public ::testing::Test {
 protected:
  std::shared_ptr<vfs::Inode> root_ = NewDevfsRoot(nullptr, -1, 0, 0);

  std::shared_ptr<vfs::Inode> Node(const char* name) {
    auto n = root_->Lookup(name);
    EXPECT_TRUE(n.ok()) << name;
    return n.ok() ? n.value() : nullptr;
  }
  std::shared_ptr<vfs::FileDescription> OpenNode(const char* name, int flags) {
    auto f = Node(name)->Open(vfs::Path{}, flags);
    EXPECT_TRUE(f.ok()) << name;
    return f.ok() ? f.value() : nullptr;
  }
};

SysResult<size_t> ReadBuf(vfs::FileDescription& f, std::string& buf) {
  iovec v{buf.data(), buf.size()};
  return f.Read(nullptr, absl::MakeConstSpan(&v, 1), -1);
}
SysResult<size_t> WriteBuf(vfs::FileDescription& f, const std::string& buf) {
  iovec v{const_cast<char*>(buf.data()), buf.size()};
  return f.Write(nullptr, absl::MakeConstSpan(&v, 1), -1);
}

TEST_F(DevfsTest, DeviceNumbersAndModes) {
  struct {
    const char* name;
    unsigned major, minor;
  } want[] = {{"null", 1, 3},   {"zero", 1, 5},    {"full", 1, 7},
              {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};
  for (const auto& w : want) {
    auto a = Node(w.name)->Stat();
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->mode, static_cast<uint32_t>(S_IFCHR | 0666)) << w.name;
    EXPECT_EQ(major(a->rdev), w.major) << w.name;
    EXPECT_EQ(minor(a->rdev), w.minor) << w.name;
  }
  auto r = root_->Stat();
  EXPECT_EQ(r->mode & S_IFMT, static_cast<uint32_t>(S_IFDIR));
}

TEST_F(DevfsTest, NullZeroFull) {
  std::string buf(16, 'x');
  auto null = OpenNode("null", O_RDWR);
  EXPECT_EQ(ReadBuf(*null, buf).value(), 0u);
  EXPECT_EQ(WriteBuf(*null, "hello").value(), 5u);
  auto zero = OpenNode("zero", O_RDWR);
  EXPECT_EQ(ReadBuf(*zero, buf).value(), 16u);
  EXPECT_EQ(buf, std::string(16, '\0'));
  EXPECT_EQ(WriteBuf(*zero, "hello").value(), 5u);
  auto full = OpenNode("full", O_RDWR);
  buf.assign(16, 'x');
  EXPECT_EQ(ReadBuf(*full, buf).value(), 16u);
  EXPECT_EQ(buf, std::string(16, '\0'));
  EXPECT_EQ(WriteBuf(*full, "hello").error(), ENOSPC);
  EXPECT_EQ(null->Readiness(POLLIN | POLLOUT), static_cast<EventMask>(POLLIN | POLLOUT));
  EXPECT_EQ(null->wait_queue(), nullptr);
  mm::MMapOpts opts;
  EXPECT_TRUE(zero->ConfigureMMap(opts).ok());
  EXPECT_FALSE(opts.fill);
  EXPECT_EQ(null->ConfigureMMap(opts).error(), ENODEV);
}

TEST_F(DevfsTest, TruncateOfDeviceIsAccepted) {
  vfs::SetAttrRequest req;
  req.mask = vfs::kSetSize;
  EXPECT_TRUE(Node("null")->SetAttr(req).ok());
}

TEST_F(DevfsTest, UrandomFillsLargeReads) {
  std::string buf(1 << 20, '\0');
  auto f = OpenNode("urandom", O_RDONLY);
  ASSERT_EQ(ReadBuf(*f, buf).value(), buf.size());
  // A megabyte of zeros from a working RNG is not going to happen.
  EXPECT_NE(buf.find_first_not_of('\0'), std::string::npos);
  auto g = OpenNode("random", O_RDONLY);
  std::string small(32, '\0');
  EXPECT_EQ(ReadBuf(*g, small).value(), 32u);
}

TEST_F(DevfsTest, TtyWithoutHostTerminalIsEnxio) {
  EXPECT_EQ(Node("tty")->Open(vfs::Path{}, O_RDWR).error(), ENXIO);
  auto pts = Node("pts");
  auto entries = pts->ReadDir();
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);  // only ptmx: no host terminal, no pairs yet
  EXPECT_EQ((*entries)[0].name, "ptmx");
  EXPECT_EQ(pts->Lookup("0").error(), ENOENT);
}

TEST_F(DevfsTest, PtmxIsOneNodeInBothPlaces) {
  auto ptmx = Node("ptmx");
  auto in_pts = Node("pts")->Lookup("ptmx");
  ASSERT_TRUE(in_pts.ok());
  EXPECT_EQ(ptmx, *in_pts);
  auto a = ptmx->Stat();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(major(a->rdev), 5u);
  EXPECT_EQ(minor(a->rdev), 2u);
  // Without a kernel no pair can be made.
  EXPECT_EQ(ptmx->Open(vfs::Path{}, O_RDWR).error(), EIO);
}

TEST_F(DevfsTest, Symlinks) {
  EXPECT_EQ(Node("fd")->Readlink().value(), "/proc/self/fd");
  EXPECT_EQ(Node("stdin")->Readlink().value(), "/proc/self/fd/0");
  EXPECT_EQ(Node("stdout")->Readlink().value(), "/proc/self/fd/1");
  EXPECT_EQ(Node("stderr")->Readlink().value(), "/proc/self/fd/2");
  EXPECT_TRUE(Node("stderr")->IsSymlink());
}

TEST_F(DevfsTest, ListingAndMissing) {
  auto entries = root_->ReadDir();
  ASSERT_TRUE(entries.ok());
  std::string names;
  for (const auto& e : *entries) names += e.name + ",";
  EXPECT_EQ(names, "fd,full,null,ptmx,pts,random,shm,stderr,stdin,stdout,tty,urandom,zero,");
  EXPECT_EQ(root_->Lookup("ptmy").error(), ENOENT);
}

}  // namespace
}  // namespace usentry::sentry::fsimpl
