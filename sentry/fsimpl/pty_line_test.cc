// Line discipline: canonical editing, echo, input/output translation, ISIG, raw mode.
#include "sentry/fsimpl/pty_line.h"

#include <signal.h>
#include <termios.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace usentry::sentry::fsimpl {
namespace {

class PtyLineTest : public ::testing::Test {
 protected:
  size_t In(const std::string& s) {
    return ld_.ReceiveInput(reinterpret_cast<const uint8_t*>(s.data()), s.size(), &signals_);
  }
  std::string ReadIn(size_t n = 4096) {
    std::string buf(n, '\0');
    buf.resize(ld_.ReadInput(reinterpret_cast<uint8_t*>(buf.data()), n));
    return buf;
  }
  std::string ReadOut() {
    std::string buf(ld_.OutputAvailable(), '\0');
    ld_.ReadOutput(reinterpret_cast<uint8_t*>(buf.data()), buf.size());
    return buf;
  }
  void Raw() {
    abi::Termios t = ld_.termios();
    t.lflag &= ~(ICANON | ECHO | ISIG | IEXTEN);
    t.iflag &= ~ICRNL;
    t.oflag &= ~OPOST;
    ld_.SetTermios(t);
  }
  LineDiscipline ld_;
  std::vector<int> signals_;
};

TEST_F(PtyLineTest, CanonicalLineWithEraseAndEcho) {
  EXPECT_EQ(In("ab\x7f"
               "c\r"),
            5u);  // CR becomes NL (ICRNL)
  EXPECT_EQ(ReadOut(), "ab\b \bc\r\n");
  EXPECT_TRUE(ld_.InputReady(1));
  EXPECT_EQ(ld_.InputAvailable(), 3u);
  EXPECT_EQ(ReadIn(), "ac\n");
  EXPECT_FALSE(ld_.InputReady(1));
}

TEST_F(PtyLineTest, PartialLineIsNotReadable) {
  In("abc");
  EXPECT_FALSE(ld_.InputReady(1));
  EXPECT_EQ(ld_.InputAvailable(), 0u);
  In("\n");
  EXPECT_EQ(ReadIn(2), "ab");
  EXPECT_EQ(ReadIn(), "c\n");
}

TEST_F(PtyLineTest, KillAndEof) {
  In("junk\x15ok\x04");
  EXPECT_EQ(ReadIn(), "ok");
  In("\x04");
  EXPECT_TRUE(ld_.InputAtEof());
  EXPECT_EQ(ReadIn(), "");
  EXPECT_FALSE(ld_.InputReady(1));
}

TEST_F(PtyLineTest, IsigCharactersSignalAndFlush) {
  In("abc\x03");
  ASSERT_EQ(signals_, std::vector<int>({SIGINT}));
  EXPECT_EQ(ReadOut(), "^C");  // the earlier echo was flushed with the input
  In("x\n");
  EXPECT_EQ(ReadIn(), "x\n");
  In("\x1c\x1a");
  EXPECT_EQ(signals_, std::vector<int>({SIGINT, SIGQUIT, SIGTSTP}));
}

TEST_F(PtyLineTest, OutputTranslation) {
  std::string s = "a\nb";
  EXPECT_EQ(ld_.WriteOutput(reinterpret_cast<const uint8_t*>(s.data()), s.size()), 3u);
  EXPECT_EQ(ReadOut(), "a\r\nb");
}

TEST_F(PtyLineTest, RawModePassesBytesAndCanonLeftoversBecomeRaw) {
  In("pend");
  Raw();
  EXPECT_EQ(ld_.InputAvailable(), 4u);
  In("\r\x03\x7f");
  EXPECT_TRUE(signals_.empty());
  EXPECT_EQ(ReadIn(), "pend\r\x03\x7f");
  std::string s = "x\n";
  ld_.WriteOutput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  EXPECT_EQ(ReadOut().substr(4), "x\n");  // after the echo of "pend"
}

TEST_F(PtyLineTest, QueueLimits) {
  Raw();
  std::string big(kPtyQueueBytes + 10, 'x');
  EXPECT_EQ(In(big), kPtyQueueBytes);
  EXPECT_EQ(ld_.InputRoom(), 0u);
  EXPECT_EQ(In("y"), 0u);
  std::string out(kPtyQueueBytes + 10, 'z');
  EXPECT_EQ(ld_.WriteOutput(reinterpret_cast<const uint8_t*>(out.data()), out.size()),
            kPtyQueueBytes - 1);
}

}  // namespace
}  // namespace usentry::sentry::fsimpl
