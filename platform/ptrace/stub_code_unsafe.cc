// Generates and maps the ptrace stub code page (see stub_code_unsafe.h).
//
// The code is generated with xbyak into a scratch buffer and copied into the page; it
// is position independent (it finds its page with rip-relative lea), so the bytes do
// not depend on which candidate address was free.
#include "platform/ptrace/stub_code_unsafe.h"

#include <sys/mman.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "platform/stub_process.h"
#include "xbyak/xbyak.h"

namespace usentry::platform::ptrace {
namespace {

// Candidate page addresses, highest first. The top page (just under TASK_SIZE) is
// above the sentry's main stack when ASLR randomizes it downward; with ASLR off (the
// stack ends at TASK_SIZE) or a vdso up there, the next candidates sit below any
// randomized stack top (>= TASK_SIZE - 16 GiB) and are checked for emptiness with
// MAP_FIXED_NOREPLACE.
// The sentry's mm never maps below this (mm::kMinAddr).
constexpr uint64_t kLowestAppAddress = 0x20000;

constexpr uint64_t kCandidates[] = {kTaskSize - kStubPageSize, 0x7ff7fffff000, 0x7ff3fffff000,
                                    0x7ff000000000};

struct StubCode {
  uint8_t bytes[kStubPageSize];
  size_t size;
  size_t syscall_site_offset;
  size_t clone_site_offset;
  size_t clone_trap_offset;
};

// Layout:
//   entry (offset 0):
//     munmap(0, page)                          ; everything below the stub page
//     munmap(page + 4096, TASK_SIZE - that)    ; everything above it (if any)
//     kill(getpid(), SIGSTOP)                  ; the tracer takes over here
//   fail: exit_group(kStubStartupFailedExit)
//   syscall_site (16-aligned): syscall; int3   ; injected syscalls; int3 reports back
//     jmp fail                                 ; never resumed past the int3 otherwise
//   clone_site (16-aligned): syscall; test rax,rax; jz child; int3; jmp fail
//     child: pause; jmp child                  ; a new thread waits for its tracer
// No stack is used: the munmaps remove the stack this code was entered with.
StubCode Generate(const HostVdso* vdso) {
  using namespace Xbyak::util;  // NOLINT: register names
  Xbyak::CodeGenerator g(kStubPageSize, Xbyak::DontSetProtectRWE);
  Xbyak::Label page, fail, skip_high, site;
  g.L(page);
  if (vdso != nullptr) {
    // Keep the host vDSO block: munmap [0, vdso) and [vdso end, page) instead.
    g.xor_(edi, edi);
    g.mov(rsi, vdso->start);
    g.mov(eax, SYS_munmap);
    g.syscall();
    g.test(rax, rax);
    g.jnz(fail, Xbyak::CodeGenerator::T_NEAR);
    g.mov(rdi, vdso->end);
    g.lea(rsi, g.ptr[rip + page]);
    g.sub(rsi, rdi);
  } else {
    g.lea(rsi, g.ptr[rip + page]);  // len = page start
    g.xor_(edi, edi);               // addr = 0
  }
  g.mov(eax, SYS_munmap);
  g.syscall();
  g.test(rax, rax);
  g.jnz(fail, Xbyak::CodeGenerator::T_NEAR);
  g.lea(rdi, g.ptr[rip + page]);
  g.add(rdi, static_cast<uint32_t>(kStubPageSize));
  g.mov(rsi, kTaskSize);
  g.sub(rsi, rdi);
  g.jz(skip_high, Xbyak::CodeGenerator::T_NEAR);  // the page is the last one
  g.mov(eax, SYS_munmap);
  g.syscall();
  g.test(rax, rax);
  g.jnz(fail, Xbyak::CodeGenerator::T_NEAR);
  g.L(skip_high);
  g.mov(eax, SYS_getpid);
  g.syscall();
  g.mov(edi, eax);
  g.mov(esi, SIGSTOP);
  g.mov(eax, SYS_kill);
  g.syscall();
  g.L(fail);
  g.mov(edi, kStubStartupFailedExit);
  g.mov(eax, SYS_exit_group);
  g.syscall();
  g.ud2();
  g.align(16);
  g.L(site);
  g.syscall();
  g.int3();
  g.jmp(fail, Xbyak::CodeGenerator::T_NEAR);
  // The thread-creation site (see StubPage::clone_site); no stack is used.
  Xbyak::Label clone_site, clone_child, clone_trap;
  g.align(16);
  g.L(clone_site);
  g.syscall();
  g.test(rax, rax);
  g.jz(clone_child, Xbyak::CodeGenerator::T_NEAR);
  g.int3();
  g.L(clone_trap);
  g.jmp(fail, Xbyak::CodeGenerator::T_NEAR);
  g.L(clone_child);
  g.pause();
  g.jmp(clone_child, Xbyak::CodeGenerator::T_NEAR);

  StubCode out{};
  out.size = g.getSize();
  std::memcpy(out.bytes, g.getCode(), out.size);
  out.syscall_site_offset = static_cast<size_t>(site.getAddress() - g.getCode());
  out.clone_site_offset = static_cast<size_t>(clone_site.getAddress() - g.getCode());
  out.clone_trap_offset = static_cast<size_t>(clone_trap.getAddress() - g.getCode());
  return out;
}

absl::StatusOr<StubPage> MapStubPage() {
  // Position independent but for the vDSO block's bounds, which every candidate page
  // above the block shares.
  StubCode code{};
  const HostVdso* kept = nullptr;
  ASSIGN_OR_RETURN(const uint64_t addr, MapCodeAtFirstFree(
                                            kCandidates, kStubPageSize,
                                            [&](uint64_t at) {
                                              kept = VdsoWithin(kLowestAppAddress, at);
                                              code = Generate(kept);
                                              return std::vector<uint8_t>(code.bytes,
                                                                          code.bytes + code.size);
                                            },
                                            "stub page"));
  return StubPage{.addr = addr,
                  .entry = addr,
                  .syscall_site = addr + code.syscall_site_offset,
                  .trap_rip = addr + code.syscall_site_offset + 3,  // syscall(2) + int3(1)
                  .clone_site = addr + code.clone_site_offset,
                  .clone_trap_rip = addr + code.clone_trap_offset,
                  .vdso = kept};
}

}  // namespace

absl::StatusOr<StubPage> GetStubPage() {
  static std::once_flag once;
  static absl::StatusOr<StubPage>* page = nullptr;
  std::call_once(once, [] { page = new absl::StatusOr<StubPage>(MapStubPage()); });
  return *page;
}

}  // namespace usentry::platform::ptrace
