// Host-FD files over a host pipe(2) and a regular file, and the host poller's one-shot
// notifications, without a kernel (the poller gets its own mutex).
#include "sentry/fsimpl/host_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "sentry/fsimpl/host_poller.h"

namespace usentry::sentry::fsimpl {
namespace {

SysResult<size_t> ReadBuf(vfs::FileDescription& f, std::string& buf, int64_t off = -1) {
  iovec v{buf.data(), buf.size()};
  return f.Read(nullptr, absl::MakeConstSpan(&v, 1), off);
}
SysResult<size_t> WriteBuf(vfs::FileDescription& f, const std::string& buf, int64_t off = -1) {
  iovec v{const_cast<char*>(buf.data()), buf.size()};
  return f.Write(nullptr, absl::MakeConstSpan(&v, 1), off);
}

class HostFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe(fds_), 0);
    ASSERT_TRUE(poller_->Start().ok());
  }
  void TearDown() override {
    if (fds_[0] >= 0) close(fds_[0]);
    if (fds_[1] >= 0) close(fds_[1]);
  }
  absl::Mutex mu_;
  std::shared_ptr<HostPoller> poller_ = std::make_shared<HostPoller>(&mu_);
  int fds_[2] = {-1, -1};
};

TEST_F(HostFileTest, PollerNotifiesOnceWhenArmed) {
  absl::MutexLock lock(&mu_);
  int calls = 0;
  EventMask seen = 0;
  poller_->Subscribe(fds_[0], this, [&](EventMask ev) {
    ++calls;
    seen = ev;
  });
  ASSERT_TRUE(poller_->Arm(fds_[0], POLLIN).ok());
  ASSERT_EQ(write(fds_[1], "x", 1), 1);
  // The poller thread needs the lock to deliver: wait on it.
  mu_.AwaitWithTimeout(absl::Condition(
                           +[](int* c) { return *c > 0; }, &calls),
                       absl::Seconds(10));
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(seen & POLLIN);
  // One-shot: more data without re-arming does not notify again.
  ASSERT_EQ(write(fds_[1], "y", 1), 1);
  mu_.AwaitWithTimeout(absl::Condition(
                           +[](int* c) { return *c > 1; }, &calls),
                       absl::Milliseconds(200));
  EXPECT_EQ(calls, 1);
  // Re-armed while ready: fires right away.
  ASSERT_TRUE(poller_->Arm(fds_[0], POLLIN).ok());
  mu_.AwaitWithTimeout(absl::Condition(
                           +[](int* c) { return *c > 1; }, &calls),
                       absl::Seconds(10));
  EXPECT_EQ(calls, 2);
  poller_->Unsubscribe(fds_[0], this);
}

TEST_F(HostFileTest, PollerRefusesRegularFiles) {
  FILE* f = tmpfile();
  ASSERT_NE(f, nullptr);
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(poller_->Arm(fileno(f), POLLIN).error(), EPERM);
  fclose(f);
}

TEST_F(HostFileTest, PipeReadEagainDataEof) {
  absl::MutexLock lock(&mu_);
  HostFileDescription r(poller_, fds_[0], O_RDONLY, nullptr, 1000, 1000);
  HostFileDescription w(poller_, fds_[1], O_WRONLY, nullptr, 1000, 1000);
  std::string buf(8, '\0');
  EXPECT_EQ(ReadBuf(r, buf).error(), EAGAIN);
  EXPECT_NE(r.wait_queue(), nullptr);
  EXPECT_EQ(r.Readiness(POLLIN), 0u);
  EXPECT_EQ(w.Readiness(POLLOUT) & POLLOUT, static_cast<EventMask>(POLLOUT));
  ASSERT_EQ(WriteBuf(w, "hello").value(), 5u);
  EXPECT_EQ(r.Readiness(POLLIN) & POLLIN, static_cast<EventMask>(POLLIN));
  ASSERT_EQ(ReadBuf(r, buf).value(), 5u);
  EXPECT_EQ(buf.substr(0, 5), "hello");
  close(fds_[1]);
  fds_[1] = -1;
  EXPECT_TRUE(r.Readiness(POLLIN) & POLLHUP);
  EXPECT_EQ(ReadBuf(r, buf).value(), 0u);  // EOF
  auto a = r.Stat();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->mode & S_IFMT, static_cast<uint32_t>(S_IFIFO));
  EXPECT_EQ(a->uid, 1000u);
  EXPECT_EQ(r.AnonName().rfind("pipe:[", 0), 0u);
  EXPECT_EQ(r.Seek(0, SEEK_SET).error(), ESPIPE);
  EXPECT_EQ(ReadBuf(r, buf, 0).error(), ESPIPE);
}

TEST_F(HostFileTest, PipeWriteFullIsEagainAndPartial) {
  absl::MutexLock lock(&mu_);
  HostFileDescription w(poller_, fds_[1], O_WRONLY, nullptr, 0, 0);
  std::string big(1 << 20, 'z');
  auto n = WriteBuf(w, big);
  ASSERT_TRUE(n.ok());
  EXPECT_GT(n.value(), 0u);
  EXPECT_LT(n.value(), big.size());  // never blocked the test: a short write
  EXPECT_EQ(WriteBuf(w, big).error(), EAGAIN);
  EXPECT_EQ(w.Readiness(POLLOUT), 0u);
}

TEST_F(HostFileTest, SocketNeverBlocks) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  {
    absl::MutexLock lock(&mu_);
    HostFileDescription d(poller_, sv[0], O_RDWR, nullptr, 0, 0);
    std::string buf(8, '\0');
    EXPECT_EQ(ReadBuf(d, buf).error(), EAGAIN);
    ASSERT_EQ(write(sv[1], "ping", 4), 4);
    ASSERT_EQ(ReadBuf(d, buf).value(), 4u);
    EXPECT_EQ(buf.substr(0, 4), "ping");
    std::string big(1 << 22, 'q');
    auto n = WriteBuf(d, big);
    ASSERT_TRUE(n.ok());
    EXPECT_LT(n.value(), big.size());
    EXPECT_EQ(WriteBuf(d, big).error(), EAGAIN);
    close(sv[1]);
    EXPECT_EQ(WriteBuf(d, "x").error(), EPIPE);  // and no host SIGPIPE killed us
    EXPECT_EQ(d.AnonName().rfind("socket:[", 0), 0u);
  }
  close(sv[0]);
}

TEST_F(HostFileTest, RegularFileAlwaysReady) {
  FILE* f = tmpfile();
  ASSERT_NE(f, nullptr);
  absl::MutexLock lock(&mu_);
  {
    HostFileDescription d(poller_, fileno(f), O_RDWR, nullptr, 0, 0);
    EXPECT_EQ(d.wait_queue(), nullptr);
    EXPECT_EQ(d.Readiness(POLLIN | POLLOUT), static_cast<EventMask>(POLLIN | POLLOUT));
    ASSERT_EQ(WriteBuf(d, "abcdef").value(), 6u);
    std::string buf(3, '\0');
    ASSERT_EQ(ReadBuf(d, buf, 2).value(), 3u);
    EXPECT_EQ(buf, "cde");
    EXPECT_EQ(d.Seek(1, SEEK_SET).value(), 1);
    ASSERT_EQ(ReadBuf(d, buf).value(), 3u);
    EXPECT_EQ(buf, "bcd");
    auto a = d.Stat();
    EXPECT_EQ(a->mode & S_IFMT, static_cast<uint32_t>(S_IFREG));
    EXPECT_EQ(a->size, 6);
  }
  fclose(f);
}

}  // namespace
}  // namespace usentry::sentry::fsimpl
