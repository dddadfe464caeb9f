// Pipe semantics without a task: EOF, EAGAIN, PIPE_BUF atomicity, readiness, capacity.
#include "sentry/fsimpl/pipe.h"

#include <fcntl.h>
#include <poll.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace usentry::sentry::fsimpl {
namespace {

SysResult<size_t> WriteStr(vfs::FileDescription& f, const std::string& s) {
  iovec v{const_cast<char*>(s.data()), s.size()};
  return f.Write(nullptr, absl::MakeConstSpan(&v, 1), -1);
}

SysResult<std::string> ReadN(vfs::FileDescription& f, size_t n) {
  std::string buf(n, '\0');
  iovec v{buf.data(), n};
  ASSIGN_OR_RETURN_ERRNO(size_t got, f.Read(nullptr, absl::MakeConstSpan(&v, 1), -1));
  buf.resize(got);
  return buf;
}

TEST(PipeTest, DataFlowsInOrder) {
  PipeEnds p = NewPipe(0);
  ASSERT_EQ(WriteStr(*p.write, "hello ").value(), 6u);
  ASSERT_EQ(WriteStr(*p.write, "world").value(), 5u);
  EXPECT_EQ(ReadN(*p.read, 3).value(), "hel");
  EXPECT_EQ(ReadN(*p.read, 100).value(), "lo world");
}

// splice/tee: Peek copies across the ring's wrap point without consuming; Consume
// drops from the head.
TEST(PipeTest, PeekAcrossTheWrapThenConsume) {
  PipeEnds p = NewPipe(0);
  auto* end = dynamic_cast<PipeDescription*>(p.read.get());
  ASSERT_NE(end, nullptr);
  Pipe& pipe = end->pipe();
  ASSERT_TRUE(pipe.SetCapacity(4096).ok());
  ASSERT_EQ(WriteStr(*p.write, std::string(4000, 'a')).value(), 4000u);
  ASSERT_EQ(ReadN(*p.read, 4000).value().size(), 4000u);
  ASSERT_EQ(WriteStr(*p.write, std::string(100, 'b') + "0123456789").value(), 110u);
  char buf[16] = {};
  EXPECT_EQ(pipe.Peek(reinterpret_cast<uint8_t*>(buf), 5, 100), 5u);
  EXPECT_EQ(std::string(buf, 5), "01234");
  EXPECT_EQ(pipe.Peek(reinterpret_cast<uint8_t*>(buf), 16, 105), 5u);
  EXPECT_EQ(pipe.Peek(reinterpret_cast<uint8_t*>(buf), 16, 110), 0u);
  EXPECT_EQ(pipe.size(), 110u);
  pipe.Consume(104);
  EXPECT_EQ(ReadN(*p.read, 100).value(), "456789");
}

TEST(PipeTest, EmptyWithWriterIsEagainWithoutWriterIsEof) {
  PipeEnds p = NewPipe(0);
  auto r = ReadN(*p.read, 10);
  EXPECT_EQ(r.error(), EAGAIN);
  ASSERT_TRUE(WriteStr(*p.write, "x").ok());
  p.write.reset();  // last writer closes: buffered data still readable, then EOF
  EXPECT_EQ(ReadN(*p.read, 10).value(), "x");
  auto eof = ReadN(*p.read, 10);
  ASSERT_TRUE(eof.ok());
  EXPECT_EQ(eof.value(), "");
}

TEST(PipeTest, WriteWithoutReaderIsEpipe) {
  PipeEnds p = NewPipe(0);
  p.read.reset();
  EXPECT_EQ(WriteStr(*p.write, "x").error(), EPIPE);
  EXPECT_EQ(p.write->Readiness(POLLOUT) & POLLERR, static_cast<EventMask>(POLLERR));
}

TEST(PipeTest, ZeroLengthOpsSucceed) {
  PipeEnds p = NewPipe(0);
  EXPECT_EQ(WriteStr(*p.write, "").value(), 0u);
  EXPECT_EQ(ReadN(*p.read, 0).value(), "");
}

TEST(PipeTest, SmallWritesAreAtomicLargeWritesPartial) {
  PipeEnds p = NewPipe(0);
  // Fill all but 100 bytes.
  std::string big(kDefaultPipeSize - 100, 'a');
  ASSERT_EQ(WriteStr(*p.write, big).value(), big.size());
  // A PIPE_BUF-sized write does not fit: all or nothing.
  EXPECT_EQ(WriteStr(*p.write, std::string(kPipeBuf, 'b')).error(), EAGAIN);
  // A small one that fits goes in whole.
  EXPECT_EQ(WriteStr(*p.write, std::string(60, 'c')).value(), 60u);
  // A large one is partial: whatever room is left.
  EXPECT_EQ(WriteStr(*p.write, std::string(kPipeBuf + 1, 'd')).value(), 40u);
  EXPECT_EQ(WriteStr(*p.write, std::string(kPipeBuf + 1, 'e')).error(), EAGAIN);
}

TEST(PipeTest, WrapAroundKeepsOrder) {
  PipeEnds p = NewPipe(0);
  std::string chunk(40000, 'x');
  for (int round = 0; round < 5; ++round) {
    for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>('a' + (i + round) % 26);
    ASSERT_EQ(WriteStr(*p.write, chunk).value(), chunk.size());
    EXPECT_EQ(ReadN(*p.read, chunk.size()).value(), chunk);
  }
}

TEST(PipeTest, Readiness) {
  PipeEnds p = NewPipe(0);
  const EventMask all = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
  EXPECT_EQ(p.read->Readiness(all), 0u);
  EXPECT_EQ(p.write->Readiness(all), static_cast<EventMask>(POLLOUT | POLLWRNORM));
  ASSERT_TRUE(WriteStr(*p.write, "x").ok());
  EXPECT_EQ(p.read->Readiness(all), static_cast<EventMask>(POLLIN | POLLRDNORM));
  ASSERT_TRUE(WriteStr(*p.write, std::string(kDefaultPipeSize - 1, 'y')).ok());
  EXPECT_EQ(p.write->Readiness(all), 0u);  // full
  p.write.reset();
  EXPECT_EQ(p.read->Readiness(all), static_cast<EventMask>(POLLIN | POLLRDNORM | POLLHUP));
}

TEST(PipeTest, StatAndName) {
  PipeEnds p = NewPipe(O_NONBLOCK);
  auto a = p.read->Stat();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->mode & S_IFMT, static_cast<uint32_t>(S_IFIFO));
  auto b = p.write->Stat();
  EXPECT_EQ(a->ino, b->ino);
  EXPECT_EQ(p.read->AnonName(), "pipe:[" + std::to_string(a->ino) + "]");
  EXPECT_TRUE(p.read->nonblocking());
  EXPECT_EQ(p.read->flags() & O_ACCMODE, O_RDONLY);
  EXPECT_EQ(p.write->flags() & O_ACCMODE, O_WRONLY);
  EXPECT_EQ(p.read->Seek(0, SEEK_SET).error(), ESPIPE);
  iovec v{nullptr, 0};
  EXPECT_EQ(p.read->Read(nullptr, absl::MakeConstSpan(&v, 1), 0).error(), ESPIPE);
}

TEST(PipeTest, SetCapacity) {
  PipeEnds p = NewPipe(0);
  EXPECT_EQ(PipeFcntl(*p.read, F_GETPIPE_SZ, 0).value(), kDefaultPipeSize);
  EXPECT_EQ(PipeFcntl(*p.read, F_SETPIPE_SZ, 5000).value(), 8192u);
  ASSERT_EQ(WriteStr(*p.write, std::string(9000, 'z')).value(), 8192u);
  EXPECT_EQ(PipeFcntl(*p.read, F_SETPIPE_SZ, 4096).error(), EBUSY);
  EXPECT_EQ(PipeFcntl(*p.read, F_SETPIPE_SZ, kMaxPipeSize + 1).error(), EINVAL);
  EXPECT_EQ(ReadN(*p.read, 10000).value(), std::string(8192, 'z'));
}

}  // namespace
}  // namespace usentry::sentry::fsimpl
