// signalfd descriptions: dequeueing signals and converting their siginfo.
#include "sentry/fsimpl/signalfd.h"

#include <poll.h>

#include <cstring>

#include "abi/signal.h"
#include "sentry/fsimpl/procfs.h"
#include "sentry/kernel/task.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/signal/signal.h"

namespace usentry::sentry::fsimpl {

namespace {

// Which union member of a siginfo is meaningful (Linux's siginfo_layout).
abi::SignalfdSiginfo Convert(const siginfo_t& si) {
  abi::SigInfo in;
  static_assert(sizeof(in) == sizeof(si));
  memcpy(&in, &si, sizeof(in));
  abi::SignalfdSiginfo out{};
  out.signo = static_cast<uint32_t>(in.signo);
  out.err = in.err;
  out.code = in.code;
  const auto& f = in.fields;
  const int sig = in.signo;
  if (in.code > 0 && in.code < abi::kSiKernel) {
    if (sig == SIGCHLD) {
      out.pid = f.chld.pid;
      out.uid = f.chld.uid;
      out.status = f.chld.status;
      out.utime = f.chld.utime;
      out.stime = f.chld.stime;
      return out;
    }
    if (sig == SIGILL || sig == SIGFPE || sig == SIGSEGV || sig == SIGBUS || sig == SIGTRAP) {
      out.addr = f.sigfault.addr;
      out.addr_lsb = f.sigfault.addr_lsb;
      return out;
    }
    if (sig == SIGIO) {
      out.band = static_cast<uint32_t>(f.sigpoll.band);
      out.fd = f.sigpoll.fd;
      return out;
    }
    if (sig == SIGSYS) {
      out.call_addr = f.sigsys.call_addr;
      out.syscall = f.sigsys.syscall;
      out.arch = f.sigsys.arch;
      return out;
    }
  }
  if (in.code == abi::kSiTimer) {
    out.tid = static_cast<uint32_t>(f.timer.tid);
    out.overrun = static_cast<uint32_t>(f.timer.overrun);
    out.ptr = f.timer.value.sival_ptr;
    out.int_value = f.timer.value.sival_int;
    return out;
  }
  if (in.code == abi::kSiSigio) {
    out.band = static_cast<uint32_t>(f.sigpoll.band);
    out.fd = f.sigpoll.fd;
    return out;
  }
  out.pid = f.rt.pid;
  out.uid = f.rt.uid;
  if (in.code < 0) {  // sigqueue(3) and the other SI_* < 0 sources carry a value
    out.ptr = f.rt.value.sival_ptr;
    out.int_value = f.rt.value.sival_int;
  }
  return out;
}

// Dequeues the next signal of `mask` pending for `t`: its own first, then its process's,
// lowest number first (Linux's dequeue_signal).
bool DequeueOne(Task& t, uint64_t mask, siginfo_t* out) {
  for (PendingSignals* p : {&t.sig->pending, &t.thread_group().pending}) {
    uint64_t ready = p->set() & mask;
    if (ready == 0) continue;
    *out = p->Dequeue(__builtin_ctzll(ready) + 1);
    return true;
  }
  return false;
}

}  // namespace

SignalfdDescription::SignalfdDescription(uint64_t mask, int flags)
    : FileDescription(vfs::Path(), O_RDWR | (flags & O_NONBLOCK)), mask_(mask) {}

void SignalfdDescription::set_mask(uint64_t mask) {
  mask_ = mask;
  // A reader blocked with the old mask must look again.
  SignalEnqueueQueue().Notify(POLLIN);
}

SysResult<size_t> SignalfdDescription::Read(Task* task, absl::Span<const iovec> dst, int64_t) {
  constexpr size_t kRecord = sizeof(abi::SignalfdSiginfo);
  if (!task) return Errno{EAGAIN};
  size_t done = 0;
  size_t iov = 0, iov_off = 0;
  ASSIGN_OR_RETURN_ERRNO(size_t len, vfs::IovecsLength(dst));
  if (len < kRecord) return Errno{EINVAL};
  siginfo_t si;
  while (len - done >= kRecord && DequeueOne(*task, mask_, &si)) {
    abi::SignalfdSiginfo rec = Convert(si);
    const auto* src = reinterpret_cast<const uint8_t*>(&rec);
    for (size_t copied = 0; copied < kRecord;) {
      size_t n = std::min(dst[iov].iov_len - iov_off, kRecord - copied);
      memcpy(static_cast<uint8_t*>(dst[iov].iov_base) + iov_off, src + copied, n);
      copied += n;
      iov_off += n;
      if (iov_off == dst[iov].iov_len) iov++, iov_off = 0;
    }
    done += kRecord;
  }
  if (done == 0) return Errno{EAGAIN};
  return done;
}

EventMask SignalfdDescription::Readiness(EventMask mask) {
  Task* t = CurrentTask();
  if (!t || !t->sig) return 0;
  uint64_t pending = t->sig->pending.set() | t->thread_group().pending.set();
  return (pending & mask_) ? (mask & (POLLIN | POLLRDNORM)) : 0;
}

WaitQueue* SignalfdDescription::wait_queue() { return &SignalEnqueueQueue(); }

}  // namespace usentry::sentry::fsimpl
