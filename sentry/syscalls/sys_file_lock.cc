// Advisory locks (see sys_file_lock.h). All state is under the kernel lock.
#include "sentry/syscalls/sys_file_lock.h"

#include <sys/file.h>

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "absl/time/time.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"

namespace usentry::sentry {
namespace {

constexpr uint64_t kEof = std::numeric_limits<uint64_t>::max();

struct LockRec {
  const void* owner;
  std::weak_ptr<const void> alive;  // the owning process or description
  int type;                         // F_RDLCK / F_WRLCK (flock: LOCK_SH / LOCK_EX)
  uint64_t start, end;              // [start, end); end == kEof: to infinity
  int32_t pid;                      // for F_GETLK (-1 for OFD locks)
};
using Key = std::pair<uint64_t, uint64_t>;  // (st_dev, st_ino)
using Table = std::map<Key, std::vector<LockRec>>;

// POSIX and OFD record locks share a table (they conflict with each other, as in Linux).
Table& RecordLocks() {
  static auto* t = new Table;
  return *t;
}
Table& Flocks() {
  static auto* t = new Table;
  return *t;
}

SysResult<Key> KeyOf(vfs::FileDescription& file) {
  ASSIGN_OR_RETURN_ERRNO(vfs::Attr a, file.Stat());
  return Key{a.dev, a.ino};
}

std::vector<LockRec>& Locks(Table& t, const Key& k) {
  auto& v = t[k];
  // Locks of exited processes / closed descriptions disappear lazily.
  std::erase_if(v, [](const LockRec& r) { return r.alive.expired(); });
  return v;
}

bool Overlaps(const LockRec& r, uint64_t start, uint64_t end) {
  return r.start < end && start < r.end;
}

// Removes `owner`'s coverage of [start, end), splitting partially covered locks.
void Unlock(std::vector<LockRec>& v, const void* owner, uint64_t start, uint64_t end) {
  std::vector<LockRec> keep;
  for (const LockRec& r : v) {
    if (r.owner != owner || !Overlaps(r, start, end)) {
      keep.push_back(r);
      continue;
    }
    if (r.start < start) keep.push_back(LockRec{r.owner, r.alive, r.type, r.start, start, r.pid});
    if (end < r.end) keep.push_back(LockRec{r.owner, r.alive, r.type, end, r.end, r.pid});
  }
  v = std::move(keep);
}

const LockRec* Conflict(const std::vector<LockRec>& v, const LockRec& want) {
  for (const LockRec& r : v) {
    if (r.owner != want.owner && Overlaps(r, want.start, want.end) &&
        (r.type == F_WRLCK || want.type == F_WRLCK)) {
      return &r;
    }
  }
  return nullptr;
}

// Repeats `attempt` until it stops failing with EAGAIN, polling (no unlock wakeups yet).
SysStatus WaitFor(Task& task, absl::FunctionRef<SysStatus()> attempt) {
  while (true) {
    SysStatus st = attempt();
    if (st.ok() || st.error() != EAGAIN) return st;
    SysStatus s = task.Sleep(absl::Milliseconds(10));
    if (!s.ok()) return Errno{kERestartSys};
  }
}

}  // namespace

SyscallResult FcntlLock(Task& task, vfs::FileDescription& file, int cmd, mm::GuestAddr arg) {
  ASSIGN_OR_RETURN_ERRNO(struct flock fl, task.mm().CopyInObj<struct flock>(arg));
  bool ofd = cmd == F_OFD_GETLK || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
  if (ofd && fl.l_pid != 0) return Errno{EINVAL};
  if (fl.l_type != F_RDLCK && fl.l_type != F_WRLCK && fl.l_type != F_UNLCK) return Errno{EINVAL};
  bool get = cmd == F_GETLK || cmd == F_OFD_GETLK;
  if (!get && fl.l_type == F_RDLCK && !file.readable()) return Errno{EBADF};
  if (!get && fl.l_type == F_WRLCK && !file.writable()) return Errno{EBADF};
  int64_t base;
  switch (fl.l_whence) {
    case SEEK_SET:
      base = 0;
      break;
    case SEEK_CUR:
      base = file.offset();
      break;
    case SEEK_END: {
      ASSIGN_OR_RETURN_ERRNO(vfs::Attr a, file.Stat());
      base = a.size;
      break;
    }
    default:
      return Errno{EINVAL};
  }
  int64_t start = base + fl.l_start;
  uint64_t end;
  if (fl.l_len > 0) {
    end = static_cast<uint64_t>(start) + fl.l_len;
  } else if (fl.l_len == 0) {
    end = kEof;
  } else {
    end = static_cast<uint64_t>(start);
    start += fl.l_len;
  }
  if (start < 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(Key key, KeyOf(file));
  LockRec want;
  if (ofd) {
    want.owner = &file;
    want.alive = std::shared_ptr<const void>(file.shared_from_this());
    want.pid = -1;
  } else {
    want.owner = &task.thread_group();
    want.alive = std::shared_ptr<const void>(task.thread_group_ptr());
    want.pid = task.thread_group().pid();
  }
  want.type = fl.l_type;
  want.start = static_cast<uint64_t>(start);
  want.end = end;

  if (get) {
    if (fl.l_type == F_UNLCK) return Errno{EINVAL};
    const LockRec* c = Conflict(Locks(RecordLocks(), key), want);
    if (!c) {
      fl.l_type = F_UNLCK;
    } else {
      fl.l_type = static_cast<short>(c->type);
      fl.l_whence = SEEK_SET;
      fl.l_start = static_cast<off_t>(c->start);
      fl.l_len = c->end == kEof ? 0 : static_cast<off_t>(c->end - c->start);
      fl.l_pid = c->pid;
    }
    RETURN_IF_ERRNO(task.mm().CopyOutObj(arg, fl));
    return uint64_t{0};
  }
  auto attempt = [&]() -> SysStatus {
    std::vector<LockRec>& v = Locks(RecordLocks(), key);
    if (want.type != F_UNLCK && Conflict(v, want)) return Errno{EAGAIN};
    Unlock(v, want.owner, want.start, want.end);
    if (want.type != F_UNLCK) v.push_back(want);
    return SysOk();
  };
  bool wait = cmd == F_SETLKW || cmd == F_OFD_SETLKW;
  RETURN_IF_ERRNO(wait ? WaitFor(task, attempt) : attempt());
  return uint64_t{0};
}

SyscallResult FlockOp(Task& task, vfs::FileDescription& file, int op) {
  bool nb = op & LOCK_NB;
  op &= ~LOCK_NB;
  if (op != LOCK_SH && op != LOCK_EX && op != LOCK_UN) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(Key key, KeyOf(file));
  LockRec want{&file,
               std::shared_ptr<const void>(file.shared_from_this()),
               op == LOCK_EX ? F_WRLCK : F_RDLCK,
               0,
               kEof,
               -1};
  if (op == LOCK_UN) {
    Unlock(Locks(Flocks(), key), &file, 0, kEof);
    return uint64_t{0};
  }
  auto attempt = [&]() -> SysStatus {
    std::vector<LockRec>& v = Locks(Flocks(), key);
    // Conversion drops the old lock first, like Linux (not atomic).
    Unlock(v, &file, 0, kEof);
    if (Conflict(v, want)) return Errno{EAGAIN};
    v.push_back(want);
    return SysOk();
  };
  RETURN_IF_ERRNO(nb ? attempt() : WaitFor(task, attempt));
  return uint64_t{0};
}

void ReleasePosixLocks(Task& task, vfs::FileDescription& file) {
  if (RecordLocks().empty() || !file.inode()) return;
  auto key = KeyOf(file);
  if (!key.ok()) return;
  auto it = RecordLocks().find(*key);
  if (it == RecordLocks().end()) return;
  Unlock(it->second, &task.thread_group(), 0, kEof);
  if (it->second.empty()) RecordLocks().erase(it);
}

}  // namespace usentry::sentry
