#include "sentry/syscalls/fsize_limit.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/limits.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/signal/deliver.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/vfs/file_description.h"

namespace usentry::sentry {
namespace {

// Linux sends SIGXFSZ to the writer (send_sig: SI_USER from the kernel, pid 0).
Errno TooBig(Task& t, uint64_t limit, uint64_t wanted) {
  siginfo_t info{};
  info.si_signo = SIGXFSZ;
  info.si_code = SI_USER;
  SendTaskSignal(t, info);
  t.kernel().limits().Hit("max_file_size", limit, t.thread_group().pid(),
                          absl::StrCat("file of ", wanted, " bytes refused with EFBIG + SIGXFSZ"));
  return Errno{EFBIG};
}

}  // namespace

SysResult<uint64_t> FsizeAllowedWrite(Task& t, vfs::FileDescription& file, int64_t pos,
                                      uint64_t len) {
  const rlim_t limit = t.thread_group().rlimits[RLIMIT_FSIZE].rlim_cur;
  if (limit == RLIM_INFINITY || len == 0) return len;
  SysResult<uint32_t> type = FileTypeOf(file);
  if (!type.ok() || *type != S_IFREG) return len;
  if (pos < 0) {
    if (file.flags() & O_APPEND) {
      ASSIGN_OR_RETURN_ERRNO(vfs::Attr attr, file.Stat());
      pos = attr.size;
    } else {
      ASSIGN_OR_RETURN_ERRNO(pos, file.Seek(0, SEEK_CUR));
    }
  }
  const uint64_t start = static_cast<uint64_t>(pos);
  if (start >= limit) return TooBig(t, limit, start + len);
  return std::min<uint64_t>(len, limit - start);
}

SysStatus FsizeAllowedSize(Task& t, uint64_t new_size) {
  const rlim_t limit = t.thread_group().rlimits[RLIMIT_FSIZE].rlim_cur;
  if (limit == RLIM_INFINITY || new_size <= limit) return SysOk();
  return TooBig(t, limit, new_size);
}

}  // namespace usentry::sentry
