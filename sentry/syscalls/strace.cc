// strace-style formatting. Argument kinds come from the letters of SyscallInfo::args;
// the few places that need to know the syscall (which buffers are outputs, whether
// open's mode is meaningful, access(2) modes, address-valued results) look at its name.
#include "sentry/syscalls/strace.h"

#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "abi/errno.h"
#include "abi/signal.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

namespace usentry::sentry {
namespace {

struct FlagName {
  uint64_t bits;
  const char* name;
};

// Multi-bit flags come before the single bits they contain (O_SYNC before O_DSYNC).
constexpr FlagName kOpenFlags[] = {
    {0100, "O_CREAT"},        {0200, "O_EXCL"},         {0400, "O_NOCTTY"},
    {01000, "O_TRUNC"},       {02000, "O_APPEND"},      {04000, "O_NONBLOCK"},
    {04010000, "O_SYNC"},     {010000, "O_DSYNC"},      {020000, "O_ASYNC"},
    {040000, "O_DIRECT"},     {0100000, "O_LARGEFILE"}, {020200000, "O_TMPFILE"},
    {0200000, "O_DIRECTORY"}, {0400000, "O_NOFOLLOW"},  {01000000, "O_NOATIME"},
    {02000000, "O_CLOEXEC"},  {010000000, "O_PATH"},
};
constexpr uint64_t kOCreat = 0100;
constexpr uint64_t kOTmpfile = 020200000;

constexpr FlagName kAccessModes[] = {{4, "R_OK"}, {2, "W_OK"}, {1, "X_OK"}};

constexpr FlagName kProtFlags[] = {
    {0x1, "PROT_READ"},           {0x2, "PROT_WRITE"},
    {0x4, "PROT_EXEC"},           {0x01000000, "PROT_GROWSDOWN"},
    {0x02000000, "PROT_GROWSUP"},
};

constexpr FlagName kMmapFlags[] = {
    {0x10, "MAP_FIXED"},
    {0x20, "MAP_ANONYMOUS"},
    {0x40, "MAP_32BIT"},
    {0x100, "MAP_GROWSDOWN"},
    {0x800, "MAP_DENYWRITE"},
    {0x1000, "MAP_EXECUTABLE"},
    {0x2000, "MAP_LOCKED"},
    {0x4000, "MAP_NORESERVE"},
    {0x8000, "MAP_POPULATE"},
    {0x10000, "MAP_NONBLOCK"},
    {0x20000, "MAP_STACK"},
    {0x40000, "MAP_HUGETLB"},
    {0x80000, "MAP_SYNC"},
    {0x100000, "MAP_FIXED_NOREPLACE"},
    {0x4000000, "MAP_UNINITIALIZED"},
};

// Calls whose 'b' argument is filled in by the kernel; the length shown is the result.
constexpr std::string_view kOutputBufferCalls[] = {
    "read", "pread64", "recvfrom", "readlink", "readlinkat", "getrandom", "getcwd",
};

// Calls whose first argument is an address in the app ('x' in the table so that it
// prints in hex); strace shows 0 there as NULL.
constexpr std::string_view kAddressFirstArgCalls[] = {
    "mmap", "munmap", "mprotect", "mremap", "madvise", "brk", "shmat",
};

// Calls whose successful result is an address.
constexpr std::string_view kAddressResultCalls[] = {"mmap", "mremap", "brk", "shmat"};

bool NameIn(const char* name, absl::Span<const std::string_view> names) {
  for (std::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

std::string Hex(uint64_t v) { return absl::StrCat("0x", absl::Hex(v)); }

std::string Octal(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%#03" PRIo64, v);
  return buf;
}

// "A|B|0x40" with the bits no name covers in hex, `zero` if v is 0.
std::string Flags(uint64_t v, absl::Span<const FlagName> names, const char* zero = "0") {
  std::string out;
  for (const FlagName& f : names) {
    if ((v & f.bits) == f.bits) {
      absl::StrAppend(&out, out.empty() ? "" : "|", f.name);
      v &= ~f.bits;
    }
  }
  if (v != 0) absl::StrAppend(&out, out.empty() ? "" : "|", Hex(v));
  return out.empty() ? zero : out;
}

std::string OpenFlags(uint64_t v, bool with_access_mode) {
  std::string out;
  if (with_access_mode) {
    constexpr const char* kAcc[] = {"O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE"};
    out = kAcc[v & 3];
    v &= ~uint64_t{3};
    if (v == 0) return out;
    return absl::StrCat(out, "|", Flags(v, kOpenFlags));
  }
  return Flags(v, kOpenFlags);
}

std::string MmapFlags(uint64_t v) {
  std::string out;
  switch (v & 0xf) {
    case 0x1:
      out = "MAP_SHARED";
      break;
    case 0x2:
      out = "MAP_PRIVATE";
      break;
    case 0x3:
      out = "MAP_SHARED_VALIDATE";
      break;
    default:
      out = Hex(v & 0xf);
      break;
  }
  v &= ~uint64_t{0xf};
  if (v == 0) return out;
  return absl::StrCat(out, "|", Flags(v, kMmapFlags));
}

std::string Signal(int64_t v) {
  const char* name = abi::SignalName(static_cast<int>(v));
  return name != nullptr && v == static_cast<int32_t>(v) ? name : absl::StrCat(v);
}

class Formatter {
 public:
  Formatter(const SyscallInfo& info, const SyscallArgValues& args, const ReadAppMemory& read_mem,
            std::optional<int64_t> result)
      : info_(info), args_(args), read_mem_(read_mem), result_(result) {}

  std::string Call() {
    std::string out = absl::StrCat(info_.name, "(");
    const std::string_view letters = info_.args != nullptr ? info_.args : "";
    bool first = true;
    for (size_t i = 0; i < letters.size() && i < 6; ++i) {
      if (letters[i] == '-' || SkipArg(letters, i)) continue;
      absl::StrAppend(&out, first ? "" : ", ", Arg(letters[i], i));
      first = false;
    }
    out += ")";
    return out;
  }

 private:
  bool Named(std::string_view n) const { return n == info_.name; }

  // open/openat only pass a mode when they may create the file; strace hides it
  // otherwise, and so do we.
  bool SkipArg(std::string_view letters, size_t i) const {
    if (letters[i] != 'm' || i == 0 || letters[i - 1] != 'o') return false;
    if (!Named("open") && !Named("openat")) return false;
    const uint64_t flags = args_[i - 1];
    return (flags & kOCreat) == 0 && (flags & kOTmpfile) != kOTmpfile;
  }

  std::string Arg(char letter, size_t i) {
    const uint64_t v = args_[i];
    switch (letter) {
      case 'd':
        return absl::StrCat(static_cast<int64_t>(v));
      case 'u':
        return absl::StrCat(v);
      case 'x':
        if (i == 0 && NameIn(info_.name, kAddressFirstArgCalls)) return Pointer(v);
        return v == 0 ? "0" : Hex(v);
      case 'p':
        return Pointer(v);
      case 's':
        return String(v);
      case 'f': {
        const int32_t fd = static_cast<int32_t>(v);
        return fd == -100 ? "AT_FDCWD" : absl::StrCat(fd);
      }
      case 'o':
        if (Named("access") || Named("faccessat") || Named("faccessat2")) {
          return Flags(v, kAccessModes, "F_OK");
        }
        return OpenFlags(v, Named("open") || Named("openat"));
      case 'm':
        return Octal(v);
      case 'b':
        return Buffer(v, i + 1 < 6 ? args_[i + 1] : 0);
      case 'S':
        return Signal(static_cast<int64_t>(v));
      case 'P':
        return Flags(v, kProtFlags, "PROT_NONE");
      case 'M':
        return MmapFlags(v);
      default:
        return Hex(v);
    }
  }

  static std::string Pointer(uint64_t v) { return v == 0 ? "NULL" : Hex(v); }

  std::string String(uint64_t addr) {
    if (addr == 0) return "NULL";
    std::optional<std::string> bytes = read_mem_(addr, kStraceMaxString + 1);
    if (!bytes) return Hex(addr);
    // Ends at a NUL if there is one; a short read (the reader stopped at the NUL, or at
    // unreadable memory) is the whole string; a full read without NUL is cut by "...".
    const size_t nul = bytes->find('\0');
    if (nul != std::string::npos) bytes->resize(nul);
    return QuoteString(*bytes, kStraceMaxString);
  }

  std::string Buffer(uint64_t addr, uint64_t len) {
    if (addr == 0) return "NULL";
    if (SyscallHasOutputBuffer(info_)) {
      // Contents exist only after a successful call, and only `result` bytes of them.
      if (!result_ || *result_ < 0) return Hex(addr);
      len = static_cast<uint64_t>(*result_);
    }
    const size_t want = len < kStraceMaxString ? len : kStraceMaxString;
    std::optional<std::string> bytes = read_mem_(addr, want);
    if (!bytes) return Hex(addr);
    return QuoteString(*bytes, kStraceMaxString, len > bytes->size());
  }

  const SyscallInfo& info_;
  const SyscallArgValues& args_;
  const ReadAppMemory& read_mem_;
  std::optional<int64_t> result_;
};

// Kernel-internal restart codes, as strace explains them.
const char* RestartDescription(int err) {
  switch (err) {
    case 512:
      return "To be restarted if SA_RESTART is set";
    case 513:
      return "To be restarted";
    case 514:
      return "To be restarted if no handler";
    case 515:
      return "ioctl not handled";
    case 516:
      return "Interrupted by signal";
    default:
      return nullptr;
  }
}

}  // namespace

std::string QuoteString(std::string_view data, size_t max, bool truncated) {
  if (data.size() > max) {
    data = data.substr(0, max);
    truncated = true;
  }
  std::string out = "\"";
  for (size_t i = 0; i < data.size(); ++i) {
    const unsigned char c = data[i];
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\v':
        out += "\\v";
        continue;
      case '\f':
        out += "\\f";
        continue;
      case '\r':
        out += "\\r";
        continue;
      default:
        break;
    }
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    // Short octal unless a digit follows, which would be read as part of the escape.
    const bool digit_next = i + 1 < data.size() && data[i + 1] >= '0' && data[i + 1] <= '7';
    char buf[8];
    std::snprintf(buf, sizeof(buf), digit_next ? "\\%03o" : "\\%o", c);
    out += buf;
  }
  out += "\"";
  if (truncated) out += "...";
  return out;
}

bool SyscallHasOutputBuffer(const SyscallInfo& info) {
  return info.args != nullptr && std::strchr(info.args, 'b') != nullptr &&
         NameIn(info.name, kOutputBufferCalls);
}

std::string FormatSyscallEntry(const SyscallInfo& info, const SyscallArgValues& args,
                               const ReadAppMemory& read_mem) {
  return Formatter(info, args, read_mem, std::nullopt).Call();
}

std::string FormatSyscallExit(const SyscallInfo& info, const SyscallArgValues& args, int64_t result,
                              const ReadAppMemory& read_mem) {
  return absl::StrCat(Formatter(info, args, read_mem, result).Call(), " ",
                      FormatSyscallResult(info, result));
}

std::string FormatSyscallResult(const SyscallInfo& info, int64_t result) {
  if (result < 0 && result >= -4095) {
    const int err = static_cast<int>(-result);
    const char* name = abi::ErrnoName(err);
    if (const char* restart = RestartDescription(err)) {
      return absl::StrCat("= ? ", name, " (", restart, ")");
    }
    const char* desc = strerrordesc_np(err);  // glibc's text, which is what strace shows
    return absl::StrCat("= -1 ", name != nullptr ? std::string(name) : absl::StrCat("E", err), " (",
                        desc != nullptr ? desc : "Unknown error", ")");
  }
  if (NameIn(info.name, kAddressResultCalls)) return absl::StrCat("= ", Hex(result));
  return absl::StrCat("= ", result);
}

}  // namespace usentry::sentry
