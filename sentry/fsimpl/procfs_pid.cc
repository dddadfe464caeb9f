// /proc/PID and /proc/PID/task/TID: generated from the kernel's thread groups, tasks,
// memory managers, FD tables and the VFS, at lookup/open time.
#include "sentry/fsimpl/procfs_pid.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/fsimpl/host_file.h"
#include "sentry/fsimpl/pipe.h"
#include "sentry/fsimpl/procfs.h"
#include "sentry/fsimpl/procfs_gen.h"
#include "sentry/fsimpl/procfs_net.h"
#include "sentry/fsimpl/procfs_nodes.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/limits.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/signal/signal.h"
#include "sentry/vfs/fd_table.h"
#include "sentry/vfs/fs_context.h"

namespace usentry::sentry::fsimpl {
namespace {

using InodePtr = std::shared_ptr<vfs::Inode>;

// The process (and thread) a /proc/PID file describes, looked up afresh on every access
// so that files of an exited process fail instead of showing stale data.
struct Target {
  std::shared_ptr<ThreadGroup> tg;
  Task* task = nullptr;  // a live thread of tg (the one named by TID), or null (zombie)
};

SysResult<Target> FindTarget(Kernel& k, int32_t tgid, int32_t tid) {
  Target t;
  t.tg = k.FindThreadGroup(tgid);
  if (!t.tg || t.tg->reaped) return Errno{ESRCH};
  if (tid != 0) {
    t.task = k.FindTask(tid);
    if (t.task == nullptr || &t.task->thread_group() != t.tg.get()) return Errno{ESRCH};
  } else {
    t.task = t.tg->leader();
  }
  return t;
}

// Paths are shown relative to the reader's root, like Linux's d_path.
vfs::Path ReaderRoot(Kernel& k) {
  Task* c = CurrentTask();
  if (c != nullptr && c->fs_ptr()) return c->fs().root();
  return k.vfs().root();
}

std::string FileName(Kernel& k, const vfs::FileDescription& f) {
  if (!f.path().valid()) return f.AnonName();
  return k.vfs().PathOf(f.path(), ReaderRoot(k));
}

// Octal-escapes what would break the space-separated mounts format.
std::string EscapeMountPath(const std::string& p) {
  std::string out;
  for (char c : p) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\') {
      absl::StrAppendFormat(&out, "\\%03o", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out;
}

SysResult<std::string> ReadAppRange(Task* t, uint64_t start, uint64_t end) {
  if (t == nullptr || !t->mm_ptr() || end <= start) return std::string();
  std::string buf(end - start, '\0');
  // A process that unmapped its argument area shows nothing, as on Linux.
  if (!t->mm().CopyIn(mm::GuestAddr(start), buf.data(), buf.size()).ok()) return std::string();
  return buf;
}

uint64_t VmBytes(const mm::MemoryManager& m) {
  uint64_t total = 0;
  for (const auto& [start, v] : m.vmas()) total += v.end - v.start;
  return total;
}

char StateOf(const Target& t) {
  if (t.tg->zombie || t.task == nullptr) return 'Z';
  if (t.tg->stopped) return 'T';  // job-control stop
  return t.task == CurrentTask() ? 'R' : 'S';
}

void SignalSets(const ThreadGroup& tg, uint64_t* ign, uint64_t* cgt) {
  *ign = *cgt = 0;
  for (int sig = 1; sig <= kNumSignals; ++sig) {
    uint64_t h = tg.handlers->actions[sig].handler;
    if (h == reinterpret_cast<uint64_t>(SIG_IGN)) *ign |= SigBit(sig);
    if (h > 1) *cgt |= SigBit(sig);
  }
}

SysResult<std::string> StatText(Kernel& k, int32_t tgid, int32_t tid) {
  ASSIGN_OR_RETURN_ERRNO(Target t, FindTarget(k, tgid, tid));
  ProcStatInfo s;
  s.pid = tid != 0 ? tid : tgid;
  s.comm = t.task ? t.task->comm : "";
  s.state = StateOf(t);
  s.ppid = t.tg->ppid();
  s.pgrp = t.tg->pgid;
  s.session = t.tg->sid;
  s.utime =
      absl::ToInt64Milliseconds(tid != 0 && t.task ? t.task->CpuTime() : t.tg->CpuTime()) / 10;
  s.stime = t.tg->stime_us / 10000;
  s.cutime = t.tg->child_utime_us / 10000;
  s.cstime = t.tg->child_stime_us / 10000;
  s.num_threads = static_cast<int64_t>(t.tg->tasks.size());
  s.exit_signal = t.tg->exit_signal;
  SignalSets(*t.tg, &s.sigignore, &s.sigcatch);
  s.signal = t.tg->pending.set();
  if (t.task != nullptr) {
    s.signal |= t.task->sig->pending.set();
    s.blocked = t.task->sig->mask;
    if (t.task->mm_ptr()) {
      const mm::MemoryManager& m = t.task->mm();
      s.vsize = VmBytes(m);
      s.rss = static_cast<int64_t>(s.vsize / mm::kPageSize);  // every mapped page counts
      s.start_brk = m.brk();
      s.arg_start = m.arg_start, s.arg_end = m.arg_end;
      s.env_start = m.env_start, s.env_end = m.env_end;
    }
  }
  if (t.tg->zombie) s.exit_code = t.tg->exit_status;
  return FormatStat(s);
}

SysResult<std::string> StatusText(Kernel& k, int32_t tgid, int32_t tid) {
  ASSIGN_OR_RETURN_ERRNO(Target t, FindTarget(k, tgid, tid));
  ProcStatusInfo s;
  s.state = StateOf(t);
  s.tgid = tgid;
  s.pid = tid != 0 ? tid : tgid;
  s.ppid = t.tg->ppid();
  s.threads = static_cast<int64_t>(t.tg->tasks.size());
  s.ncpus = HostCpuCount();
  SignalSets(*t.tg, &s.sig_ign, &s.sig_cgt);
  s.shd_pnd = t.tg->pending.set();
  if (Task* task = t.task) {
    s.name = task->comm;
    const Credentials& c = task->creds();
    uint32_t uids[4] = {c.ruid, c.euid, c.suid, c.fsuid},
             gids[4] = {c.rgid, c.egid, c.sgid, c.fsgid};
    std::copy(uids, uids + 4, s.uid);
    std::copy(gids, gids + 4, s.gid);
    s.groups.assign(c.groups.begin(), c.groups.end());
    s.root_caps = c.euid == 0;
    s.sig_pnd = task->sig->pending.set();
    s.sig_blk = task->sig->mask;
    if (task->fs_ptr()) s.umask = task->fs().umask();
    if (task->fds_ptr()) {
      uint64_t top = task->fds().entries().empty() ? 0 : task->fds().entries().rbegin()->first;
      s.fd_size = std::max<uint64_t>(64, (top + 64) / 64 * 64);
    }
    if (task->mm_ptr()) {
      const mm::MemoryManager& m = task->mm();
      for (const auto& [start, v] : m.vmas()) {
        uint64_t kb = (v.end - v.start) / 1024;
        s.vm_size_kb += kb;
        if (v.grows_down || v.name == "[stack]") {
          s.vm_stk_kb += kb;
        } else if (!v.file_ref && !v.shared) {
          s.vm_data_kb += kb;
        } else if (v.prot & PROT_EXEC) {
          s.vm_exe_kb += kb;
        }
      }
      s.vm_rss_kb = s.vm_size_kb;  // rough: every mapped page counts as resident
    }
  }
  return FormatStatus(s);
}

SysResult<std::string> MapsText(Kernel& k, int32_t tgid, int32_t tid) {
  ASSIGN_OR_RETURN_ERRNO(Target t, FindTarget(k, tgid, tid));
  if (t.task == nullptr || !t.task->mm_ptr()) return std::string();
  // Neighbouring VMAs that continue one another print as one line, as Linux merges
  // them: copy-on-write splits what the app mapped once (mm/cow.cc), and brk grows the
  // heap in pieces; pthread_getattr_np reads the stack's bounds from these lines.
  std::string out;
  std::optional<ProcMapsEntry> pending;
  for (const auto& [start, v] : t.task->mm().vmas()) {
    ProcMapsEntry e{v.start, v.end, v.prot, v.shared, v.file_off, v.dev, v.ino, v.name};
    if (pending && pending->end == e.start && pending->prot == e.prot &&
        pending->shared == e.shared && pending->dev == e.dev && pending->ino == e.ino &&
        pending->name == e.name &&
        (e.ino == 0 || pending->offset + (pending->end - pending->start) == e.offset)) {
      pending->end = e.end;
      continue;
    }
    if (pending) out += FormatMapsLine(*pending);
    pending = e;
  }
  if (pending) out += FormatMapsLine(*pending);
  return out;
}

SysResult<std::string> LimitsText(Kernel& k, int32_t tgid, int32_t tid) {
  ASSIGN_OR_RETURN_ERRNO(Target t, FindTarget(k, tgid, tid));
  std::vector<ProcLimit> limits;
  for (const rlimit& r : t.tg->rlimits) limits.push_back({r.rlim_cur, r.rlim_max});
  return FormatLimits(limits);
}

// Resident bytes are the pages of the memory file holding data. Pages another VMA maps
// too (shared mappings, copy-on-write after fork) are divided among the VMAs holding
// them for Pss, an approximation of Linux's per-page map counts.
SysResult<std::string> SmapsRollupText(Kernel& k, int32_t tgid, int32_t tid) {
  ASSIGN_OR_RETURN_ERRNO(Target t, FindTarget(k, tgid, tid));
  if (t.task == nullptr || !t.task->mm_ptr()) return std::string();
  const auto& vmas = t.task->mm().vmas();
  ProcSmapsRollup r;
  if (!vmas.empty()) {
    r.start = vmas.begin()->second.start;
    r.end = vmas.rbegin()->second.end;
  }
  const int memfd = k.memory_file().fd();
  for (const auto& [start, v] : vmas) {
    if (v.host || !v.range) continue;
    const uint64_t resident =
        ResidentInRange(memfd, v.range->offset() + v.range_off, v.end - v.start);
    const bool shared = v.shared || v.cow;
    const uint64_t sharers = shared ? std::max<long>(1, v.range.use_count()) : 1;
    const uint64_t pss = resident / sharers;
    r.rss += resident;
    r.pss += pss;
    if (v.shared) {
      r.pss_shmem += pss;
    } else if (v.file_ref) {
      r.pss_file += pss;
    } else {
      r.pss_anon += pss;
      r.anonymous += resident;
    }
    // File bytes never written since they were read are clean; the rest is dirty.
    (shared ? (v.pristine ? r.shared_clean : r.shared_dirty)
            : (v.pristine ? r.private_clean : r.private_dirty)) += resident;
  }
  return FormatSmapsRollup(r);
}

SysResult<std::string> StatmText(Kernel& k, int32_t tgid, int32_t tid) {
  ASSIGN_OR_RETURN_ERRNO(Target t, FindTarget(k, tgid, tid));
  uint64_t pages = 0;
  if (t.task != nullptr && t.task->mm_ptr()) pages = VmBytes(t.task->mm()) / mm::kPageSize;
  return absl::StrFormat("%u %u 0 0 0 %u 0\n", pages, pages, pages);
}

SysResult<std::string> AuxvBytes(Kernel& k, int32_t tgid, int32_t tid) {
  ASSIGN_OR_RETURN_ERRNO(Target t, FindTarget(k, tgid, tid));
  if (t.task == nullptr || !t.task->mm_ptr()) return std::string();
  const auto& a = t.task->mm().auxv;
  return std::string(reinterpret_cast<const char*>(a.data()), a.size() * sizeof(uint64_t));
}

int32_t ParseNumber(std::string_view name) {
  int32_t v = -1;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
  if (ec != std::errc() || p != name.data() + name.size() || v < 0) return -1;
  if (name.size() > 1 && name[0] == '0') return -1;  // "01" is not "1"
  return v;
}

// /proc/PID/fd and /proc/PID/fdinfo.
InodePtr NewFdDir(std::shared_ptr<vfs::Filesystem> fs, Kernel& k, int32_t tgid, int32_t tid,
                  std::string key, ProcOwner owner, bool info) {
  Kernel* kp = &k;
  auto lookup = [=](std::string_view name) -> SysResult<InodePtr> {
    int32_t fd = ParseNumber(name);
    if (fd < 0) return Errno{ENOENT};
    ASSIGN_OR_RETURN_ERRNO(Target t, FindTarget(*kp, tgid, tid));
    if (t.task == nullptr || !t.task->fds_ptr()) return Errno{ENOENT};
    if (!t.task->fds().GetEntry(fd).ok()) return Errno{ENOENT};
    std::string child_key = absl::StrCat(key, "/", fd);
    // The entry is looked up again at use time: the FD may be closed or replaced.
    auto current = [=]() -> SysResult<vfs::FdEntry> {
      ASSIGN_OR_RETURN_ERRNO(Target now, FindTarget(*kp, tgid, tid));
      if (now.task == nullptr || !now.task->fds_ptr()) return Errno{ENOENT};
      auto e = now.task->fds().GetEntry(fd);
      if (!e.ok()) return Errno{ENOENT};  // closed since the lookup
      return e;
    };
    if (!info) {
      return NewProcSymlink(
          fs, child_key, owner,
          [=]() -> SysResult<std::string> {
            ASSIGN_OR_RETURN_ERRNO(vfs::FdEntry cur, current());
            return FileName(*kp, *cur.file);
          },
          [=](vfs::MagicLink* out) {
            auto cur = current();
            if (!cur.ok()) return false;
            if (cur->file->path().valid()) {
              out->path = cur->file->path();
            } else {
              out->file = cur->file;  // anonymous: opening it calls Reopen
            }
            return true;
          });
    }
    return NewProcFile(fs, child_key, owner, [=]() -> SysResult<std::string> {
      ASSIGN_OR_RETURN_ERRNO(vfs::FdEntry cur, current());
      int flags = cur.file->flags() | (cur.cloexec ? O_CLOEXEC : 0);
      uint64_t ino = 0;
      auto a = cur.file->Stat();
      if (a.ok()) ino = a->ino;
      uint64_t mnt = cur.file->path().mount ? cur.file->path().mount->id() : 0;
      return absl::StrFormat("pos:\t%d\nflags:\t0%o\nmnt_id:\t%d\nino:\t%u\n", cur.file->offset(),
                             flags, mnt, ino) +
             cur.file->FdInfo();
    });
  };
  auto list = [=]() -> SysResult<std::vector<vfs::DirEntry>> {
    ASSIGN_OR_RETURN_ERRNO(Target t, FindTarget(*kp, tgid, tid));
    std::vector<vfs::DirEntry> out;
    if (t.task == nullptr || !t.task->fds_ptr()) return out;
    for (const auto& [fd, e] : t.task->fds().entries()) {
      std::string n = std::to_string(fd);
      out.push_back(
          {n, ProcIno(absl::StrCat(key, "/", n)), info ? uint8_t{DT_REG} : uint8_t{DT_LNK}});
    }
    return out;
  };
  return NewProcDir(std::move(fs), key, owner, lookup, list, 0500);
}

struct Entry {
  const char* name;
  uint8_t type;
};
constexpr Entry kPidEntries[] = {
    {"auxv", DT_REG},         {"cgroup", DT_REG},  {"cmdline", DT_REG},       {"comm", DT_REG},
    {"cwd", DT_LNK},          {"environ", DT_REG}, {"exe", DT_LNK},           {"fd", DT_DIR},
    {"fdinfo", DT_DIR},       {"limits", DT_REG},  {"maps", DT_REG},          {"mountinfo", DT_REG},
    {"mounts", DT_REG},       {"net", DT_DIR},     {"oom_score_adj", DT_REG}, {"root", DT_LNK},
    {"smaps_rollup", DT_REG}, {"stat", DT_REG},    {"statm", DT_REG},         {"status", DT_REG},
    {"task", DT_DIR},
};

}  // namespace

SysResult<std::string> MountsText(Kernel& k, bool mountinfo) {
  vfs::Path root = ReaderRoot(k);
  std::string out;
  for (const auto& m : k.vfs().Mounts()) {
    ProcMountEntry e;
    e.id = m->id();
    e.parent_id = m->parent() ? m->parent()->id() : m->id();
    e.dev = m->fs().dev();
    e.fstype = m->fs().name();
    e.read_only = m->read_only();
    e.no_exec = m->flags() & vfs::kMountNoExec;
    e.mount_point =
        m->parent() ? EscapeMountPath(k.vfs().PathOf(vfs::Path{m->parent(), m->mountpoint()}, root))
                    : "/";
    out += mountinfo ? FormatMountinfoLine(e) : FormatMountsLine(e);
  }
  return out;
}

SysResult<std::shared_ptr<vfs::Inode>> NewPidDir(std::shared_ptr<vfs::Filesystem> fs, Kernel& k,
                                                 int32_t tgid, int32_t tid) {
  ASSIGN_OR_RETURN_ERRNO(Target t, FindTarget(k, tgid, tid));
  ProcOwner owner;
  if (t.task != nullptr) owner = {t.task->creds().euid, t.task->creds().egid};
  std::string key = tid != 0 ? absl::StrCat(tgid, "/task/", tid) : std::to_string(tgid);
  Kernel* kp = &k;
  auto lookup = [=](std::string_view name) -> SysResult<InodePtr> {
    std::string ck = absl::StrCat(key, "/", std::string(name));
    auto file = [&](auto gen) { return NewProcFile(fs, ck, owner, gen); };
    auto link = [&](auto gen) { return NewProcSymlink(fs, ck, owner, gen); };
    auto target_task = [=]() -> SysResult<Task*> {
      ASSIGN_OR_RETURN_ERRNO(Target now, FindTarget(*kp, tgid, tid));
      if (now.task == nullptr) return Errno{ENOENT};
      return now.task;
    };
    if (name == "stat") return file([=] { return StatText(*kp, tgid, tid); });
    if (name == "status") return file([=] { return StatusText(*kp, tgid, tid); });
    if (name == "maps") return file([=] { return MapsText(*kp, tgid, tid); });
    if (name == "statm") return file([=] { return StatmText(*kp, tgid, tid); });
    if (name == "limits") return file([=] { return LimitsText(*kp, tgid, tid); });
    if (name == "smaps_rollup") return file([=] { return SmapsRollupText(*kp, tgid, tid); });
    if (name == "auxv") return file([=] { return AuxvBytes(*kp, tgid, tid); });
    if (name == "mounts") return file([=] { return MountsText(*kp, false); });
    if (name == "mountinfo") return file([=] { return MountsText(*kp, true); });
    if (name == "cgroup")
      return file([]() -> SysResult<std::string> { return std::string("0::/\n"); });
    if (name == "oom_score_adj") {
      return file([]() -> SysResult<std::string> { return std::string("0\n"); });
    }
    if (name == "comm") {
      return file([=]() -> SysResult<std::string> {
        ASSIGN_OR_RETURN_ERRNO(Task * tk, target_task());
        return tk->comm + "\n";
      });
    }
    if (name == "cmdline" || name == "environ") {
      bool args = name == "cmdline";
      return file([=]() -> SysResult<std::string> {
        ASSIGN_OR_RETURN_ERRNO(Target now, FindTarget(*kp, tgid, tid));
        if (now.task == nullptr || !now.task->mm_ptr()) return std::string();
        const mm::MemoryManager& m = now.task->mm();
        return args ? ReadAppRange(now.task, m.arg_start, m.arg_end)
                    : ReadAppRange(now.task, m.env_start, m.env_end);
      });
    }
    if (name == "exe") {
      return link([=]() -> SysResult<std::string> {
        ASSIGN_OR_RETURN_ERRNO(Task * tk, target_task());
        if (!tk->mm_ptr() || tk->mm().executable_path.empty()) return Errno{ENOENT};
        return tk->mm().executable_path;
      });
    }
    if (name == "cwd" || name == "root") {
      bool cwd = name == "cwd";
      return link([=]() -> SysResult<std::string> {
        ASSIGN_OR_RETURN_ERRNO(Task * tk, target_task());
        if (!tk->fs_ptr()) return Errno{ENOENT};
        return kp->vfs().PathOf(cwd ? tk->fs().cwd() : tk->fs().root(), ReaderRoot(*kp));
      });
    }
    if (name == "net") return NewProcNetDir(fs, *kp, ck, owner);  // one network namespace
    if (name == "fd" || name == "fdinfo") {
      return NewFdDir(fs, *kp, tgid, tid, ck, owner, name == "fdinfo");
    }
    if (name == "task" && tid == 0) {
      auto tlookup = [=](std::string_view n) -> SysResult<InodePtr> {
        int32_t id = ParseNumber(n);
        if (id <= 0) return Errno{ENOENT};
        auto dir = NewPidDir(fs, *kp, tgid, id);
        if (!dir.ok()) return Errno{ENOENT};
        return dir;
      };
      auto tlist = [=]() -> SysResult<std::vector<vfs::DirEntry>> {
        ASSIGN_OR_RETURN_ERRNO(Target now, FindTarget(*kp, tgid, 0));
        std::vector<vfs::DirEntry> out;
        for (Task* th : now.tg->tasks) {
          out.push_back(
              {std::to_string(th->tid()), ProcIno(absl::StrCat(ck, "/", th->tid())), DT_DIR});
        }
        return out;
      };
      return NewProcDir(fs, ck, owner, tlookup, tlist);
    }
    return Errno{ENOENT};
  };
  auto list = [=]() -> SysResult<std::vector<vfs::DirEntry>> {
    std::vector<vfs::DirEntry> out;
    for (const Entry& e : kPidEntries) {
      if (tid != 0 && std::string_view(e.name) == "task") continue;
      out.push_back({e.name, ProcIno(absl::StrCat(key, "/", e.name)), e.type});
    }
    return out;
  };
  return NewProcDir(std::move(fs), key, owner, lookup, list);
}

}  // namespace usentry::sentry::fsimpl
