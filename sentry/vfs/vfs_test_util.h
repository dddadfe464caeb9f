// Test fixture helpers: a Vfs over a tmpfs root, file creation and reading shortcuts.
#ifndef USENTRY_SENTRY_VFS_VFS_TEST_UTIL_H_
#define USENTRY_SENTRY_VFS_VFS_TEST_UTIL_H_

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "sentry/fsimpl/tmpfs.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry::vfs::testing {

struct TmpfsVfs {
  explicit TmpfsVfs(uint64_t limit = 1 << 20)
      : mf(*mm::MemoryFile::Create(1ull << 32)),
        budget(std::make_shared<fsimpl::ByteBudget>(limit)),
        fs(std::make_shared<fsimpl::TmpfsFilesystem>(budget, mf.get())),
        vfs(std::make_unique<Vfs>(fs, fs->NewRoot(0755, 0, 0))) {}

  ResolveContext Ctx(const Credentials* c = nullptr) {
    return ResolveContext{c ? c : &root, vfs->root(), vfs->root(), 022};
  }
  // Creates `path` with `data` (as root unless `c`).
  void Write(const std::string& path, const std::string& data, const Credentials* c = nullptr,
             uint32_t mode = 0644) {
    auto f = vfs->Open(Ctx(c), path, O_CREAT | O_WRONLY | O_TRUNC, mode);
    ASSERT_TRUE(f.ok()) << path << " errno " << f.error();
    iovec v{const_cast<char*>(data.data()), data.size()};
    auto n = (*f)->Write(nullptr, absl::MakeConstSpan(&v, 1), -1);
    ASSERT_TRUE(n.ok());
  }
  std::string Read(const std::string& path, const Credentials* c = nullptr) {
    auto f = vfs->Open(Ctx(c), path, O_RDONLY, 0);
    if (!f.ok()) return "<errno " + std::to_string(f.error()) + ">";
    std::string out(1 << 16, '\0');
    iovec v{out.data(), out.size()};
    auto n = (*f)->Read(nullptr, absl::MakeConstSpan(&v, 1), -1);
    if (!n.ok()) return "<errno " + std::to_string(n.error()) + ">";
    out.resize(*n);
    return out;
  }
  int Err(SysStatus s) { return s.error(); }

  std::unique_ptr<mm::MemoryFile> mf;  // tmpfs file data
  std::shared_ptr<fsimpl::ByteBudget> budget;
  std::shared_ptr<fsimpl::TmpfsFilesystem> fs;
  std::unique_ptr<Vfs> vfs;
  Credentials root;
};

inline Credentials User(uid_t uid, gid_t gid) {
  Credentials c;
  c.ruid = c.euid = c.suid = c.fsuid = uid;
  c.rgid = c.egid = c.sgid = c.fsgid = gid;
  return c;
}

}  // namespace usentry::sentry::vfs::testing

#endif  // USENTRY_SENTRY_VFS_VFS_TEST_UTIL_H_
