#include "sentry/audit/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace usentry::audit {
namespace {

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  lseek(fd, 0, SEEK_SET);
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  return out;
}

std::vector<nlohmann::json> Lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    out.push_back(nlohmann::json::parse(text.substr(start, nl - start)));
    start = nl + 1;
  }
  return out;
}

class AuditLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/usentry-audit-XXXXXX";
    fd_ = mkstemp(path);
    ASSERT_GE(fd_, 0);
    unlink(path);
    ASSERT_EQ(fcntl(fd_, F_SETFL, O_APPEND | O_RDWR), 0);
  }
  void TearDown() override { close(fd_); }
  int fd_ = -1;
};

TEST_F(AuditLogTest, OneJsonObjectPerLineWithCommonFields) {
  AuditLog log(fd_, "abc", false);
  log.Emit(kExec, {{"pid", 2}, {"path", "/bin/sh"}});
  log.Emit(kRunEnd, {{"exit_code", 0}});
  std::vector<nlohmann::json> lines = Lines(ReadAll(fd_));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["event"], "exec");
  EXPECT_EQ(lines[0]["run"], "abc");
  EXPECT_EQ(lines[0]["pid"], 2);
  EXPECT_EQ(lines[0]["path"], "/bin/sh");
  EXPECT_EQ(lines[0]["ts"].get<std::string>().size(), 24u);  // 2026-11-29T19:30:28.123Z
  EXPECT_EQ(lines[1]["event"], "run_end");
}

// Paths come from the app and may be any bytes: the record stays valid JSON.
TEST_F(AuditLogTest, InvalidUtf8IsReplacedNotDropped) {
  AuditLog log(fd_, "abc", false);
  log.Emit(kFile, {{"path", std::string("/tmp/\xff\xfe\n\"x")}});
  std::vector<nlohmann::json> lines = Lines(ReadAll(fd_));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["path"], "/tmp/\xEF\xBF\xBD\xEF\xBF\xBD\n\"x");
}

// The app cannot pass "event" or "run" of its choosing through a field it controls.
TEST_F(AuditLogTest, FieldsCannotOverrideTheEnvelope) {
  AuditLog log(fd_, "abc", false);
  log.Emit(kFile, {{"path", "/x"}, {"run", "forged"}, {"event", "run_end"}});
  std::vector<nlohmann::json> lines = Lines(ReadAll(fd_));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["run"], "abc");
  EXPECT_EQ(lines[0]["event"], "file");
}

TEST_F(AuditLogTest, DeniedRecordNamesReasonAndPolicy) {
  AuditLog log(fd_, "abc", false);
  log.Denied(7, "write", "/data/x", EROFS, "read-only mount /data", "mounts");
  std::vector<nlohmann::json> lines = Lines(ReadAll(fd_));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["event"], "denied");
  EXPECT_EQ(lines[0]["errno"], "EROFS");
  EXPECT_EQ(lines[0]["reason"], "read-only mount /data");
  EXPECT_EQ(lines[0]["policy"], "mounts");
}

TEST_F(AuditLogTest, ConcurrentWritersNeverInterleave) {
  AuditLog log(fd_, "abc", false);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&log, t] {
      for (int i = 0; i < 200; i++) log.Emit(kFile, {{"t", t}, {"pad", std::string(500, 'x')}});
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(Lines(ReadAll(fd_)).size(), 800u);
}

TEST(AuditIdTest, RunIdsAreFreshHex) {
  std::string a = NewRunId(), b = NewRunId();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace usentry::audit
