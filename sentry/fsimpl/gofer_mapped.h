// MappedHostFile: a host file of a --mount tree while the sandbox maps it MAP_SHARED.
//
// Linux keeps shared mappings coherent with read/write through the page cache. The
// stubs can map only the sentry's memory file, not host files, so while a host file is
// mapped shared its bytes live in a PageStore — the pages every such mapping maps, in
// every process — and the sandbox's reads and writes of the file use that store too
// (writes also go straight on to the host file). What the mappings stored is written
// back to the host file at msync, fsync/fdatasync, and when the last mapping goes away
// (munmap, exit, exec). Changes made on the host while the file is mapped are not seen
// until then. One object per host file (GoferFilesystem keys them by inode), alive as
// long as a VMA maps it (it is those VMAs' MappingObserver).
#ifndef USENTRY_SENTRY_FSIMPL_GOFER_MAPPED_H_
#define USENTRY_SENTRY_FSIMPL_GOFER_MAPPED_H_

#include <sys/uio.h>

#include <memory>

#include "absl/types/span.h"
#include "base/unique_fd.h"
#include "sentry/fsimpl/page_store.h"
#include "sentry/kernel/sys_result.h"
#include "sentry/mm/mapping_observer.h"
#include "sentry/mm/memory_file.h"

namespace usentry::sentry::fsimpl {

class MappedHostFile final : public mm::MappingObserver {
 public:
  // Larger files keep ENODEV for writable shared mappings: the whole file would have to
  // be held in memory while mapped.
  static constexpr uint64_t kMaxSize = 1ull << 30;

  // Reads the file from `fd` into a new store: ENODEV past kMaxSize, EIO/ENOMEM when
  // reading or storing fails.
  static SysResult<std::shared_ptr<MappedHostFile>> Load(mm::MemoryFile* mf,
                                                         std::shared_ptr<UniqueFd> fd);

  // The host FD stores are written back through; a writable one replaces a read-only
  // one, since mappings made writable later must reach the host.
  void UseFd(std::shared_ptr<UniqueFd> fd, bool writable);
  // A writable mapping is about to be made: its stores must be written back.
  void MappedWritable() { mapped_writable_ = true; }
  SysResult<std::shared_ptr<mm::MemoryRange>> PagesCovering(uint64_t len) {
    return store_.PagesCovering(len);
  }

  uint64_t size() const { return store_.size(); }
  SysResult<size_t> Read(absl::Span<const iovec> dst, uint64_t off) const {
    return store_.Read(dst, off);
  }
  // Writes the store and the host file (through `fd`, the caller's description's).
  SysResult<size_t> Write(int fd, absl::Span<const iovec> src, uint64_t off);
  SysStatus Truncate(int fd, uint64_t size);
  // Writes what mappings may have stored back to the host file (EIO if it cannot).
  SysStatus WriteBack();

  // mm::MappingObserver: counts the VMAs; the last one closing writes back.
  void VmaOpened() override { ++vmas_; }
  void VmaClosed() override;
  void Msync() override { (void)WriteBack(); }

  explicit MappedHostFile(mm::MemoryFile* mf) : store_(mf, kMaxSize) {}

 private:
  PageStore store_;
  std::shared_ptr<UniqueFd> fd_;
  bool fd_writable_ = false;
  bool mapped_writable_ = false;
  int vmas_ = 0;
};

}  // namespace usentry::sentry::fsimpl

#endif  // USENTRY_SENTRY_FSIMPL_GOFER_MAPPED_H_
