// Test helpers for the gofer: temporary host directories and a client connected to a
// server running on a thread over a real socketpair.
#ifndef USENTRY_GOFER_GOFER_TEST_UTIL_H_
#define USENTRY_GOFER_GOFER_TEST_UTIL_H_

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "gofer/client.h"
#include "gofer/server.h"

namespace usentry::gofer::testing {

// A fresh directory under /tmp, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string Join(const std::string& rel) const { return path_ + "/" + rel; }
  // Host-side helpers used to set up and check trees; abort the test on failure.
  void WriteFile(const std::string& rel, const std::string& content, int mode = 0644) const;
  std::string ReadFile(const std::string& rel) const;
  void Mkdir(const std::string& rel) const;

 private:
  std::string path_;
};

// Runs Serve(config) on a thread; client() talks to it. The destructor closes the client
// socket and joins the thread; served_status() is Serve's result afterwards.
class GoferHarness {
 public:
  explicit GoferHarness(const GoferConfig& config);
  ~GoferHarness();
  Client& client() { return *client_; }
  // Closes the client and waits for Serve() to return.
  absl::Status Stop();
  // The raw client socket, for sending hand-made (hostile) messages.
  int raw_socket() const { return raw_sock_; }
  // The host thread id of the thread serving (waits until it has started).
  pid_t server_tid() const;

 private:
  std::unique_ptr<Client> client_;
  int raw_sock_ = -1;
  std::thread thread_;
  std::atomic<pid_t> server_tid_{0};
  absl::Status status_;
  bool stopped_ = false;
};

}  // namespace usentry::gofer::testing

#endif  // USENTRY_GOFER_GOFER_TEST_UTIL_H_
