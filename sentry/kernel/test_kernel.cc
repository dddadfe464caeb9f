// TestKernel implementation.
#include "sentry/kernel/test_kernel.h"

#include <sys/mman.h>

#include <cstdlib>

#include "sentry/fsimpl/tmpfs.h"
#include "sentry/mm/memory_file.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/fs_context.h"
#include "sentry/vfs/vfs.h"

namespace usentry::sentry {

TestKernel::TestKernel(const std::string& mem_name) : TestKernel(KernelOptions{}, mem_name) {}

TestKernel::TestKernel(KernelOptions opts, const std::string& mem_name) {
  auto mf = mm::MemoryFile::Create(64 << 20);
  if (!mf.ok()) abort();
  auto tfs = std::make_shared<fsimpl::TmpfsFilesystem>(
      std::make_shared<fsimpl::ByteBudget>(1 << 26), mf->get());
  auto root = tfs->NewRoot(0755, 0, 0);
  kernel_ = std::make_unique<Kernel>(std::move(opts), nullptr, std::move(mf).value(),
                                     std::make_unique<vfs::Vfs>(tfs, root));
  absl::MutexLock l(&kernel_->mu);
  tg_ = std::make_shared<ThreadGroup>(kernel_->AllocatePid());
  tg_->pgid = tg_->sid = tg_->pid();
  task_ = std::make_unique<Task>(kernel_.get(), tg_, tg_->pid());
  task_->set_mm(std::make_shared<mm::MemoryManager>(&kernel_->memory_file(), 1ull << 40));
  task_->set_fds(std::make_shared<vfs::FdTable>());
  task_->set_fs(std::make_shared<vfs::FsContext>(kernel_->vfs().root(), kernel_->vfs().root()));
  tg_->tasks.push_back(task_.get());
  kernel_->RegisterThreadGroup(tg_);
  kernel_->RegisterTask(task_.get());
  mm::MMapOpts o;
  o.len = 1 << 16;
  o.prot = PROT_READ | PROT_WRITE;
  o.flags = MAP_PRIVATE | MAP_ANONYMOUS;
  o.name = mem_name;
  auto a = task_->mm().MMap(o);
  if (!a.ok()) abort();
  mem_ = a.value();
}

TestKernel::~TestKernel() {
  absl::MutexLock l(&kernel_->mu);
  task_->fds().Clear();
  kernel_->UnregisterTask(task_.get());
}

}  // namespace usentry::sentry
