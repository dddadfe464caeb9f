// Host-syscall microbenchmarks: the per-operation cost an app pays, natively or in the
// sandbox (bench/compare.sh runs this binary both ways and prints the ratios).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>

#include "benchmark/benchmark.h"

namespace {

constexpr char kSmallFile[] = "/etc/hostname";

void BM_Getpid(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(syscall(SYS_getpid));
}
BENCHMARK(BM_Getpid);

void BM_ClockGettime(benchmark::State& state) {
  timespec ts;
  for (auto _ : state) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
BENCHMARK(BM_ClockGettime);

void BM_OpenClose(benchmark::State& state) {
  for (auto _ : state) {
    int fd = open(kSmallFile, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      state.SkipWithError("open failed");
      break;
    }
    close(fd);
  }
}
BENCHMARK(BM_OpenClose);

void BM_Stat(benchmark::State& state) {
  struct stat st;
  for (auto _ : state) {
    if (stat(kSmallFile, &st) != 0) {
      state.SkipWithError("stat failed");
      break;
    }
    benchmark::DoNotOptimize(st);
  }
}
BENCHMARK(BM_Stat);

void BM_ReadDevZero(benchmark::State& state) {
  int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    state.SkipWithError("open /dev/zero failed");
    return;
  }
  char c;
  for (auto _ : state) benchmark::DoNotOptimize(read(fd, &c, 1));
  close(fd);
}
BENCHMARK(BM_ReadDevZero);

void BM_WriteDevNull(benchmark::State& state) {
  int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    state.SkipWithError("open /dev/null failed");
    return;
  }
  char c = 'x';
  for (auto _ : state) benchmark::DoNotOptimize(write(fd, &c, 1));
  close(fd);
}
BENCHMARK(BM_WriteDevNull);

// One byte to a child and back: two context switches through the (emulated) pipe.
void BM_PipeRoundTrip(benchmark::State& state) {
  int to_child[2], to_parent[2];
  if (pipe(to_child) != 0 || pipe(to_parent) != 0) {
    state.SkipWithError("pipe failed");
    return;
  }
  pid_t pid = fork();
  if (pid < 0) {
    state.SkipWithError("fork failed");
    return;
  }
  if (pid == 0) {
    // Only our ends stay open, so the parent closing its end is our EOF.
    close(to_child[1]);
    close(to_parent[0]);
    char c;
    while (read(to_child[0], &c, 1) == 1) {
      if (write(to_parent[1], &c, 1) != 1) break;
    }
    _exit(0);
  }
  close(to_child[0]);
  close(to_parent[1]);
  char c = 'x';
  for (auto _ : state) {
    if (write(to_child[1], &c, 1) != 1 || read(to_parent[0], &c, 1) != 1) {
      state.SkipWithError("round trip failed");
      break;
    }
  }
  close(to_child[1]);
  close(to_parent[0]);
  waitpid(pid, nullptr, 0);
}
BENCHMARK(BM_PipeRoundTrip);

void BM_ForkExitWait(benchmark::State& state) {
  for (auto _ : state) {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
      state.SkipWithError("fork or wait failed");
      break;
    }
  }
}
BENCHMARK(BM_ForkExitWait)->Unit(benchmark::kMicrosecond);

// fork + child exit + wait of a process with 200 MB of written heap (issue 4: such a fork
// must be cheap): the child writes one byte, the parent one byte after the wait.
void BM_ForkExitWait200MB(benchmark::State& state) {
  constexpr size_t kSize = 200u << 20;
  void* mem = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    state.SkipWithError("mmap failed");
    return;
  }
  auto* p = static_cast<volatile char*>(mem);
  for (size_t i = 0; i < kSize; i += 4096) p[i] = 1;
  for (auto _ : state) {
    pid_t pid = fork();
    if (pid == 0) {
      p[kSize / 2] = 2;
      _exit(0);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
      state.SkipWithError("fork or wait failed");
      break;
    }
    p[kSize / 3] = 3;
  }
  munmap(mem, kSize);
}
BENCHMARK(BM_ForkExitWait200MB)->Unit(benchmark::kMicrosecond);

void BM_ExecveTrue(benchmark::State& state) {
  char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
  char* const envp[] = {nullptr};
  for (auto _ : state) {
    pid_t pid = fork();
    if (pid == 0) {
      execve("/bin/true", argv, envp);
      _exit(127);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      state.SkipWithError("/bin/true failed");
      break;
    }
  }
}
BENCHMARK(BM_ExecveTrue)->Unit(benchmark::kMicrosecond);

void BM_MmapTouchMunmap(benchmark::State& state) {
  const size_t page = sysconf(_SC_PAGESIZE);
  for (auto _ : state) {
    void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      state.SkipWithError("mmap failed");
      break;
    }
    static_cast<volatile char*>(p)[0] = 1;
    munmap(p, page);
  }
}
BENCHMARK(BM_MmapTouchMunmap);

}  // namespace

BENCHMARK_MAIN();
