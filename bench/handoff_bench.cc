// What the systrap platform's design choices cost on this host, measured natively:
//  * BM_Handoff/N: two processes handing a round trip over one shared page, as the
//    sentry and a stub thread do on a patched call (both spin with `pause`). The caller
//    writes a syscall's worth of data and flips a flag word; the other side reads the
//    data, writes a result and flips it back. N says which cache lines carry what
//    (platform/systrap/layout.h explains why the slot puts it all in line 0).
//  * BM_TrapUd2 / BM_TrapInt3: a trap instruction caught by a signal handler, the way
//    the stub reports a new thread and a patched call converted into a frame. Under KVM
//    a #UD exits to the hypervisor.
// Needs two CPUs for the handoff. Run natively: `build-bench/bench/handoff_bench`.
#include <immintrin.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ucontext.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "benchmark/benchmark.h"

namespace {

enum Layout : int64_t {
  kAllInFlagLine = 0,     // 7 data words and the result beside the flag (the slot now)
  kDataInOtherLines = 1,  // 16 data words in lines 1-2; the result beside the flag
  kResultInDataLine = 2,  // the same, the result written into line 1 (the old slot)
};

enum Flag : uint64_t { kIdle, kPosted, kAnswered, kStop };

struct alignas(64) Page {
  std::atomic<uint64_t> flag;
  uint64_t line0[7];
  alignas(64) uint64_t lines12[16];
};

uint64_t WaitFor(const std::atomic<uint64_t>& flag, uint64_t want) {
  uint64_t v;
  while ((v = flag.load(std::memory_order_acquire)) != want && v != kStop) _mm_pause();
  return v;
}

[[noreturn]] void Answer(Page* p, Layout layout) {
  while (WaitFor(p->flag, kPosted) == kPosted) {
    uint64_t sum = 0;
    if (layout == kAllInFlagLine) {
      for (uint64_t w : p->line0) sum += w;
    } else {
      for (uint64_t w : p->lines12) sum += w;
    }
    if (layout == kResultInDataLine) {
      p->lines12[0] = sum;
    } else {
      p->line0[0] = sum;
    }
    p->flag.store(kAnswered, std::memory_order_release);
  }
  _exit(0);
}

void BM_Handoff(benchmark::State& state) {
  const auto layout = static_cast<Layout>(state.range(0));
  void* mem =
      mmap(nullptr, sizeof(Page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    state.SkipWithError("mmap failed");
    return;
  }
  auto* p = new (mem) Page{};
  const pid_t child = fork();
  if (child < 0) {
    state.SkipWithError("fork failed");
    return;
  }
  if (child == 0) Answer(p, layout);
  uint64_t i = 0, result = 0;
  for (auto _ : state) {
    ++i;
    if (layout == kAllInFlagLine) {
      for (uint64_t& w : p->line0) w = i;
    } else {
      for (uint64_t& w : p->lines12) w = i;
    }
    p->flag.store(kPosted, std::memory_order_seq_cst);
    WaitFor(p->flag, kAnswered);
    result += layout == kResultInDataLine ? p->lines12[0] : p->line0[0];
  }
  benchmark::DoNotOptimize(result);
  p->flag.store(kStop);
  waitpid(child, nullptr, 0);
  munmap(mem, sizeof(Page));
}
BENCHMARK(BM_Handoff)->Arg(kAllInFlagLine)->Arg(kDataInOtherLines)->Arg(kResultInDataLine);

void StepOverUd2(int, siginfo_t*, void* uc) {
  static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_RIP] += 2;
}
void Ignore(int, siginfo_t*, void*) {}

bool Catch(int sig, void (*handler)(int, siginfo_t*, void*)) {
  struct sigaction sa {};
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO;
  return sigaction(sig, &sa, nullptr) == 0;
}

void BM_TrapUd2(benchmark::State& state) {
  if (!Catch(SIGILL, StepOverUd2)) state.SkipWithError("sigaction failed");
  for (auto _ : state) asm volatile("ud2");
}
BENCHMARK(BM_TrapUd2);

void BM_TrapInt3(benchmark::State& state) {
  if (!Catch(SIGTRAP, Ignore)) state.SkipWithError("sigaction failed");
  for (auto _ : state) asm volatile("int3");  // a trap: the handler returns past it
}
BENCHMARK(BM_TrapInt3);

}  // namespace

BENCHMARK_MAIN();
