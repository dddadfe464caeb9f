// Costs of gofer round trips as the sentry pays them: a gofer::Client talking to the
// server in a child process over a SOCK_SEQPACKET socketpair (as in a run, though
// without the gofer's own confinement), serving a temporary directory with the default
// view's masks:
//   d/a/b/c/f        (a path of directories to a file)
//   big/n000..n199   (a directory of 200 files, what python3 lists at start-up)
// Native only: there is nothing to compare it with under usentry.
//   gofer_bench [BENCHMARK FLAGS]
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "gofer/client.h"
#include "gofer/server.h"

namespace usentry::gofer {
namespace {

class Fixture {
 public:
  Fixture() {
    char tmpl[] = "/tmp/gofer_bench.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/d/a/b/c");
    WriteFile(dir_ + "/d/a/b/c/f", "data");
    std::filesystem::create_directories(dir_ + "/big");
    for (int i = 0; i < 200; ++i) {
      char name[16];
      snprintf(name, sizeof(name), "/n%03d", i);
      WriteFile(dir_ + "/big" + name, "x");
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
    server_ = fork();
    if (server_ < 0) std::abort();
    if (server_ == 0) {
      close(sv[0]);
      GoferConfig config;
      config.trees.push_back(RootfsTree(dir_));
      config.trees.back().masks = DefaultRootTree().masks;  // what a run checks names against
      _exit(Serve(config, UniqueFd(sv[1])).ok() ? 0 : 1);
    }
    close(sv[1]);
    client_ = std::make_unique<Client>(UniqueFd(sv[0]));
    auto root = client_->Attach("root");
    if (!root.ok()) std::abort();
    root_ = root->first.handle;
  }
  ~Fixture() {
    client_.reset();  // EOF ends Serve
    int status;
    waitpid(server_, &status, 0);
    std::filesystem::remove_all(dir_);
  }
  Client& client() { return *client_; }
  Handle root() const { return root_; }
  Handle Walk(Handle dir, const char* name) {
    auto r = client_->Walk(dir, name);
    if (!r.ok()) std::abort();
    return r->handle;
  }

 private:
  static void WriteFile(const std::string& path, const char* s) {
    FILE* f = fopen(path.c_str(), "w");
    if (f == nullptr) std::abort();
    fputs(s, f);
    fclose(f);
  }
  std::string dir_;
  pid_t server_ = -1;
  std::unique_ptr<Client> client_;
  Handle root_ = 0;
};

Fixture& F() {
  static Fixture* f = new Fixture;  // one server for every benchmark
  return *f;
}

// The smallest round trip: an fstat on the gofer's side.
void BM_GoferStat(benchmark::State& state) {
  Handle d = F().Walk(F().root(), "d");
  for (auto _ : state) {
    auto r = F().client().Stat(d);
    benchmark::DoNotOptimize(r);
  }
  F().client().Close(d);
}
BENCHMARK(BM_GoferStat)->UseRealTime();

// One component: an openat2 and an fstat there; Close costs no round trip.
void BM_GoferWalk(benchmark::State& state) {
  for (auto _ : state) {
    auto r = F().client().Walk(F().root(), "d");
    if (r.ok()) F().client().Close(r->handle);
  }
}
BENCHMARK(BM_GoferWalk)->UseRealTime();

// A miss: what an interpreter's module search asks most.
void BM_GoferWalkMiss(benchmark::State& state) {
  for (auto _ : state) {
    auto r = F().client().Walk(F().root(), "missing");
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_GoferWalkMiss)->UseRealTime();

// A file's lookup and read-only open, its host FD donated (SCM_RIGHTS).
void BM_GoferWalkOpen(benchmark::State& state) {
  Handle c = F().Walk(F().Walk(F().Walk(F().Walk(F().root(), "d"), "a"), "b"), "c");
  for (auto _ : state) {
    auto r = F().client().WalkOpen(c, "f");
    if (r.ok()) F().client().Close(r->node.handle);
  }
}
BENCHMARK(BM_GoferWalkOpen)->UseRealTime();

// d/a/b/c/f opened: five Walk-shaped round trips, or one WalkPath.
void BM_GoferFiveWalks(benchmark::State& state) {
  for (auto _ : state) {
    Handle h = F().root();
    for (const char* n : {"d", "a", "b", "c"}) {
      Handle next = F().Walk(h, n);
      if (h != F().root()) F().client().Close(h);
      h = next;
    }
    auto r = F().client().WalkOpen(h, "f");
    F().client().Close(h);
    if (r.ok()) F().client().Close(r->node.handle);
  }
}
BENCHMARK(BM_GoferFiveWalks)->UseRealTime();

void BM_GoferWalkPath(benchmark::State& state) {
  for (auto _ : state) {
    auto r = F().client().WalkPath(F().root(), {"d", "a", "b", "c", "f"}, /*open_last=*/true);
    if (r.ok()) {
      for (const Node& n : r->nodes) F().client().Close(n.handle);
    }
  }
}
BENCHMARK(BM_GoferWalkPath)->UseRealTime();

// Listing a directory of 200 names.
void BM_GoferReadDir200(benchmark::State& state) {
  Handle big = F().Walk(F().root(), "big");
  for (auto _ : state) {
    auto r = F().client().ReadDir(big);
    benchmark::DoNotOptimize(r);
  }
  F().client().Close(big);
}
BENCHMARK(BM_GoferReadDir200)->UseRealTime();

}  // namespace
}  // namespace usentry::gofer

BENCHMARK_MAIN();
