// Copying between the sentry and app memory. App memory is pages of the MemoryFile, which
// the sentry has mapped, so a copy is a memcpy after the VMA and protection check.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sentry/mm/memory_manager.h"

namespace usentry::sentry::mm {

namespace {

// Reads the file bytes behind [addr, addr+len) of unfilled `v` into `dst`; zeros past
// the file's end, as the filled pages would hold.
SysStatus ReadUnfilled(const Vma& v, uint64_t addr, uint8_t* dst, size_t len) {
  const uint64_t file_off = v.file_off + (addr - v.start);
  for (size_t pos = 0; pos < len;) {
    ASSIGN_OR_RETURN_ERRNO(uint64_t got, v.lazy_fill(dst + pos, len - pos, file_off + pos));
    if (got == 0) {
      memset(dst + pos, 0, len - pos);
      break;
    }
    pos += std::min<uint64_t>(got, len - pos);
  }
  return SysOk();
}

}  // namespace

SysStatus MemoryManager::Access(GuestAddr addr, size_t n, mm::Access access, bool force,
                                const std::function<void(uint8_t*, size_t, size_t)>& fn,
                                uint8_t* read_into) const {
  uint64_t a = addr.value();
  // (Not bounded by max_user(): the vDSO block may lie above it, Vma::host.)
  if (a + n < a) return Errno{EFAULT};
  size_t done = 0;
  while (done < n) {
    const Vma* v = FindVma(a + done);
    if (!v) return Errno{EFAULT};
    if (!force) {
      int need = access == Access::kWrite ? PROT_WRITE : (PROT_READ | PROT_WRITE | PROT_EXEC);
      if ((v->prot & need) == 0) return Errno{EFAULT};
    }
    uint64_t cur = a + done;
    if (v->lazy_fill && v->host_file && read_into && !(v->prot & PROT_WRITE)) {
      // The app reads these bytes from the host's page cache (Vma::host_file), so only
      // the sentry wants them: read them from the file and leave the chunk unfilled.
      // Filling it would cost a 64 KiB read and a remap of the app's pages; ld.so's
      // first access(2) reads its path argument out of libc's read-only data.
      const size_t chunk = std::min<uint64_t>(n - done, v->end - cur);
      RETURN_IF_ERRNO(ReadUnfilled(*v, cur, read_into + done, chunk));
      done += chunk;
      continue;
    }
    if (v->lazy_fill) {  // the file's bytes are not there yet (fill.cc)
      RETURN_IF_ERRNO(Fill(cur, std::min<uint64_t>(a + n, v->end)));
      v = FindVma(cur);
    }
    if (access == Access::kWrite && v->cow) {
      // Pages another address space may share: give this one copies before writing.
      RETURN_IF_ERRNO(BreakCow(cur, std::min<uint64_t>(a + n, v->end)));
      v = FindVma(cur);
    }
    size_t chunk = std::min<uint64_t>(n - done, v->end - cur);
    if (v->host) {
      // Host-mapped (the vDSO block): the same bytes are at the same address in the
      // sentry; they are never written through the sentry.
      if (access == Access::kWrite || force) return Errno{EFAULT};
      fn(reinterpret_cast<uint8_t*>(cur), chunk, done);
    } else {
      fn(v->range->data() + v->range_off + (cur - v->start), chunk, done);
    }
    done += chunk;
  }
  return SysOk();
}

SysStatus MemoryManager::CopyIn(GuestAddr src, void* dst, size_t n) const {
  auto* out = static_cast<uint8_t*>(dst);
  return Access(
      src, n, Access::kRead, false,
      [&](uint8_t* p, size_t len, size_t off) { memcpy(out + off, p, len); }, out);
}

SysStatus MemoryManager::CopyOut(GuestAddr dst, const void* src, size_t n) const {
  const auto* in = static_cast<const uint8_t*>(src);
  return Access(dst, n, Access::kWrite, false,
                [&](uint8_t* p, size_t len, size_t off) { memcpy(p, in + off, len); });
}

SysStatus MemoryManager::CopyOutForce(GuestAddr dst, const void* src, size_t n) const {
  const auto* in = static_cast<const uint8_t*>(src);
  return Access(dst, n, Access::kWrite, true,
                [&](uint8_t* p, size_t len, size_t off) { memcpy(p, in + off, len); });
}

SysStatus MemoryManager::ZeroOut(GuestAddr dst, size_t n) const {
  return Access(dst, n, Access::kWrite, true,
                [&](uint8_t* p, size_t len, size_t) { memset(p, 0, len); });
}

SysResult<std::string> MemoryManager::CopyInString(GuestAddr src, size_t max_len) const {
  std::string out;
  uint64_t a = src.value();
  // A first look of 256 bytes (paths are short; copying a page cost ~1 us more, and
  // where the string is in a host file's unfilled pages, a 4 KiB read of the file),
  // then up to a page at a time.
  size_t want = 256;
  while (true) {
    // Never past the end of the page, so a string ending just before an unmapped page
    // is still readable.
    const size_t chunk = std::min<size_t>(want, kPageSize - (a & (kPageSize - 1)));
    want = kPageSize;
    char buf[kPageSize];
    RETURN_IF_ERRNO(CopyIn(GuestAddr(a), buf, chunk));
    const void* nul = memchr(buf, 0, chunk);
    size_t take = nul ? static_cast<const char*>(nul) - buf : chunk;
    if (out.size() + take > max_len) return Errno{ENAMETOOLONG};
    out.append(buf, take);
    if (nul) return out;
    a += chunk;
  }
}

SysResult<std::vector<std::string>> MemoryManager::CopyInStringArray(GuestAddr src,
                                                                     size_t max_total) const {
  std::vector<std::string> out;
  size_t total = 0;
  if (src.IsNull()) return out;
  for (uint64_t i = 0;; i++) {
    ASSIGN_OR_RETURN_ERRNO(uint64_t p, CopyInObj<uint64_t>(src + i * 8));
    if (p == 0) return out;
    ASSIGN_OR_RETURN_ERRNO(std::string s, CopyInString(GuestAddr(p), max_total));
    total += s.size() + 1 + 8;
    if (total > max_total) return Errno{E2BIG};
    out.push_back(std::move(s));
  }
}

SysResult<std::vector<iovec>> MemoryManager::Translate(GuestAddr addr, size_t n,
                                                       mm::Access access) const {
  std::vector<iovec> out;
  if (n == 0) return out;
  RETURN_IF_ERRNO(Access(addr, n, access, false, [&](uint8_t* p, size_t len, size_t) {
    out.push_back(iovec{p, len});
  }));
  return out;
}

void MemoryManager::WriteSpans(absl::Span<const iovec> dst, const uint8_t* src, size_t n) const {
  for (const iovec& v : dst) {
    if (n == 0) return;
    const size_t len = std::min(n, v.iov_len);
    const off_t off = static_cast<off_t>(static_cast<uint8_t*>(v.iov_base) - mf_->base());
    for (size_t done = 0; done < len;) {
      const ssize_t w = pwrite(mf_->fd(), src + done, len - done, off + static_cast<off_t>(done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        // The memory file is full (memcg limit): the pages cannot be allocated either way;
        // write through the mapping so the failure is the usual one (SIGBUS/ENOMEM).
        memcpy(static_cast<uint8_t*>(v.iov_base) + done, src + done, len - done);
        break;
      }
      done += static_cast<size_t>(w);
    }
    src += len;
    n -= len;
  }
}

SysResult<std::vector<iovec>> MemoryManager::TranslateIovecs(GuestAddr iov, int iovcnt,
                                                             mm::Access access) const {
  if (iovcnt < 0 || iovcnt > 1024) return Errno{EINVAL};
  std::vector<iovec> out;
  uint64_t total = 0;
  for (int i = 0; i < iovcnt; i++) {
    struct {
      uint64_t base, len;
    } e;
    RETURN_IF_ERRNO(CopyIn(iov + i * 16, &e, sizeof(e)));
    if (static_cast<int64_t>(e.len) < 0) return Errno{EINVAL};
    total += e.len;
    if (total > 0x7ffff000) return Errno{EINVAL};
    if (e.len == 0) continue;
    ASSIGN_OR_RETURN_ERRNO(std::vector<iovec> part, Translate(GuestAddr(e.base), e.len, access));
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

}  // namespace usentry::sentry::mm
