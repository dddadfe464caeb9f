// Test helpers for the gofer (see gofer_test_util.h).
#include "gofer/gofer_test_util.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace usentry::gofer::testing {

TempDir::TempDir() {
  char tmpl[] = "/tmp/gofer_test.XXXXXX";
  char* p = mkdtemp(tmpl);
  if (p == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    std::abort();
  }
  path_ = p;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void TempDir::WriteFile(const std::string& rel, const std::string& content, int mode) const {
  std::string p = Join(rel);
  int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  ASSERT_GE(fd, 0) << p;
  ASSERT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  close(fd);
}

std::string TempDir::ReadFile(const std::string& rel) const {
  std::ifstream in(Join(rel), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void TempDir::Mkdir(const std::string& rel) const {
  ASSERT_EQ(mkdir(Join(rel).c_str(), 0755), 0) << rel;
}

GoferHarness::GoferHarness(const GoferConfig& config) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
  raw_sock_ = sv[0];
  client_ = std::make_unique<Client>(UniqueFd(sv[0]));
  thread_ = std::thread([this, config, fd = sv[1]] {
    server_tid_.store(gettid());
    status_ = Serve(config, UniqueFd(fd));
  });
}

pid_t GoferHarness::server_tid() const {
  while (server_tid_.load() == 0) std::this_thread::yield();
  return server_tid_.load();
}

GoferHarness::~GoferHarness() { (void)Stop(); }

absl::Status GoferHarness::Stop() {
  if (!stopped_) {
    client_.reset();  // closes the socket: Serve() sees EOF
    thread_.join();
    stopped_ = true;
  }
  return status_;
}

}  // namespace usentry::gofer::testing
