// sendto, recvfrom, sendmsg, recvmsg, sendmmsg, recvmmsg: msghdr and control-message
// marshalling around Socket::SendMsg/RecvMsg.
#include <limits.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "abi/misc.h"
#include "abi/socket.h"
#include "absl/time/clock.h"
#include "sentry/kernel/thread_group.h"
#include "sentry/mm/bounce_buffer.h"
#include "sentry/mm/memory_manager.h"
#include "sentry/net/unix_socket.h"
#include "sentry/syscalls/sys_file_util.h"
#include "sentry/syscalls/sys_socket.h"
#include "sentry/vfs/fd_table.h"

namespace usentry::sentry {
namespace {

using abi::CmsgAlign;
using abi::CmsgLen;
using abi::CmsgSpace;
using abi::MsgHdr;
// The abi/ layouts are the ones glibc's headers use.
static_assert(sizeof(MsgHdr) == sizeof(struct msghdr));
static_assert(offsetof(MsgHdr, flags) == offsetof(struct msghdr, msg_flags));
static_assert(offsetof(MsgHdr, controllen) == offsetof(struct msghdr, msg_controllen));
static_assert(sizeof(abi::MmsgHdr) == sizeof(struct mmsghdr));
static_assert(offsetof(abi::MmsgHdr, len) == offsetof(struct mmsghdr, msg_len));
static_assert(sizeof(abi::CmsgHdr) == sizeof(struct cmsghdr));
static_assert(CmsgSpace(sizeof(int)) == CMSG_SPACE(sizeof(int)));
static_assert(sizeof(abi::Ucred) == sizeof(struct ucred));
constexpr size_t kMmsgHdrSize = sizeof(abi::MmsgHdr);
constexpr size_t kMmsgLenOffset = offsetof(abi::MmsgHdr, len);
constexpr size_t kCmsgHdrLen = sizeof(abi::CmsgHdr);

// Receives into the app's spans. Mid-sized receives go through a bounce buffer and
// reach app memory by pwrite, as read(2) does (sys_read_write.cc): copying straight into
// app memory first-touches each page through the sentry's mapping, which costs more
// than the extra copy from about two pages.
constexpr size_t kBounceMin = 8 << 10;
SysResult<size_t> ReceiveInto(Task& task, net::Socket& sock, absl::Span<const iovec> iovs,
                              int flags, net::RecvResult* out) {
  size_t total = 0;
  for (const iovec& v : iovs) total += v.iov_len;
  if (total < kBounceMin || total > mm::BounceBuffer::kSize) {
    return sock.RecvMsg(&task, iovs, flags, out);
  }
  mm::BounceBuffer bounce;
  const iovec one{bounce.data(), total};
  ASSIGN_OR_RETURN_ERRNO(size_t n, sock.RecvMsg(&task, absl::MakeConstSpan(&one, 1), flags, out));
  task.mm().WriteSpans(iovs, bounce.data(), out->copied);
  return n;
}

// Parses the control messages of a send into `args` (Linux's __scm_send): SCM_RIGHTS
// and SCM_CREDENTIALS at SOL_SOCKET on AF_UNIX sockets; other levels are passed on for
// the family to interpret (or ignore); anything else at SOL_SOCKET is EINVAL
// (sock_cmsg_send for the other families).
SysStatus ParseControl(Task& task, const net::Socket& sock, mm::GuestAddr control,
                       uint64_t controllen, net::SendArgs& args) {
  if (controllen > INT_MAX) return Errno{ENOBUFS};
  if (controllen < kCmsgHdrLen) return SysOk();
  std::string buf(controllen, '\0');
  RETURN_IF_ERRNO(task.mm().CopyIn(control, buf.data(), buf.size()));
  size_t off = 0;
  while (off + kCmsgHdrLen <= buf.size()) {
    abi::CmsgHdr h;
    memcpy(&h, buf.data() + off, kCmsgHdrLen);
    if (h.len < kCmsgHdrLen || h.len > buf.size() - off) return Errno{EINVAL};
    const char* data = buf.data() + off + kCmsgHdrLen;
    size_t data_len = h.len - kCmsgHdrLen;
    if (h.level == SOL_SOCKET) {
      if (!sock.takes_unix_control()) return Errno{EINVAL};
      if (h.type == SCM_RIGHTS) {
        size_t n = data_len / sizeof(int);
        if (args.rights.size() + n > net::kMaxFdsPerMessage) return Errno{EINVAL};
        for (size_t i = 0; i < n; ++i) {
          int fd;
          memcpy(&fd, data + i * sizeof(int), sizeof(int));
          ASSIGN_OR_RETURN_ERRNO(auto file, task.fds().Get(fd));
          args.rights.push_back(std::move(file));
        }
      } else if (h.type == SCM_CREDENTIALS) {
        if (h.len != CmsgLen(sizeof(abi::Ucred))) return Errno{EINVAL};
        abi::Ucred uc;
        memcpy(&uc, data, sizeof(uc));
        const Credentials& c = task.creds();
        bool root = c.euid == 0;
        bool pid_ok = uc.pid == task.thread_group().pid() || root;
        bool uid_ok = uc.uid == c.ruid || uc.uid == c.euid || uc.uid == c.suid || root;
        bool gid_ok = uc.gid == c.rgid || uc.gid == c.egid || uc.gid == c.sgid || root;
        if (!pid_ok || !uid_ok || !gid_ok) return Errno{EPERM};
        args.creds = net::Ucred{uc.pid, uc.uid, uc.gid};
      } else {
        return Errno{EINVAL};
      }
    } else {
      args.control.push_back(net::ControlMessage{h.level, h.type, std::string(data, data_len)});
    }
    off += CmsgAlign(h.len);
  }
  return SysOk();
}

// Builds the control data of a receive like Linux's put_cmsg/scm_detach_fds: credentials
// first, then as many fds as fit (installed in the caller's table), MSG_CTRUNC for what
// did not fit.
class ControlWriter {
 public:
  explicit ControlWriter(size_t space) : space_(space) {}

  void Put(int level, int type, const void* data, size_t len) {
    if (space_ - buf_.size() < kCmsgHdrLen) {
      ctrunc_ = true;
      return;
    }
    size_t cmlen = CmsgLen(len);
    size_t room = space_ - buf_.size();
    if (room < cmlen) {
      ctrunc_ = true;
      cmlen = room;
    }
    AppendHeader(cmlen, level, type);
    buf_.append(static_cast<const char*>(data), cmlen - kCmsgHdrLen);
    Pad(std::min(CmsgSpace(len), room) - cmlen);
  }

  void PutRights(Task& task, std::vector<std::shared_ptr<vfs::FileDescription>>& rights,
                 bool cloexec) {
    if (rights.empty()) return;
    size_t room = space_ - buf_.size();
    size_t fdmax = room > kCmsgHdrLen ? (room - kCmsgHdrLen) / sizeof(int) : 0;
    std::vector<int> fds;
    for (size_t i = 0; i < std::min(fdmax, rights.size()); ++i) {
      auto fd = task.fds().Install(rights[i], cloexec);
      if (!fd.ok()) break;
      fds.push_back(fd.value());
    }
    if (!fds.empty()) {
      size_t cmlen = CmsgLen(fds.size() * sizeof(int));
      AppendHeader(cmlen, SOL_SOCKET, SCM_RIGHTS);
      buf_.append(reinterpret_cast<const char*>(fds.data()), fds.size() * sizeof(int));
      Pad(std::min(CmsgSpace(fds.size() * sizeof(int)), room) - cmlen);
    }
    if (fds.size() < rights.size()) ctrunc_ = true;
    rights.clear();  // the rest are dropped (closed), as on Linux
  }

  const std::string& data() const { return buf_; }
  bool ctrunc() const { return ctrunc_; }

 private:
  void AppendHeader(size_t cmlen, int level, int type) {
    abi::CmsgHdr h;
    h.len = cmlen;
    h.level = level;
    h.type = type;
    buf_.append(reinterpret_cast<const char*>(&h), kCmsgHdrLen);
  }
  void Pad(size_t n) { buf_.append(n, '\0'); }

  size_t space_;
  std::string buf_;
  bool ctrunc_ = false;
};

// The app's iovecs translated for a send (kRead) or receive (kWrite).
SysResult<std::vector<iovec>> MsgIovecs(Task& task, const MsgHdr& h, mm::Access access) {
  if (h.iovlen > IOV_MAX) return Errno{EMSGSIZE};
  if (h.iovlen == 0) return std::vector<iovec>{};
  ASSIGN_OR_RETURN_ERRNO(auto iovs, task.mm().TranslateIovecs(mm::GuestAddr(h.iov),
                                                              static_cast<int>(h.iovlen), access));
  RETURN_IF_ERRNO(vfs::IovecsLength(iovs));
  return iovs;
}

SysResult<size_t> SendMsgCore(Task& task, net::Socket& sock, mm::GuestAddr msg_addr, int flags) {
  ASSIGN_OR_RETURN_ERRNO(MsgHdr h, task.mm().CopyInObj<MsgHdr>(msg_addr));
  net::SendArgs args;
  args.flags = flags;
  if (h.name != 0 && h.namelen != 0) {
    if (static_cast<int32_t>(h.namelen) < 0) return Errno{EINVAL};
    size_t len = std::min<size_t>(h.namelen, abi::kSockaddrStorageSize);
    ASSIGN_OR_RETURN_ERRNO(args.name, CopyInSockaddr(task, mm::GuestAddr(h.name), len));
  }
  ASSIGN_OR_RETURN_ERRNO(auto iovs, MsgIovecs(task, h, mm::Access::kRead));
  args.data = iovs;
  RETURN_IF_ERRNO(ParseControl(task, sock, mm::GuestAddr(h.control), h.controllen, args));
  return sock.SendMsg(&task, args);
}

SysResult<size_t> RecvMsgCore(Task& task, net::Socket& sock, mm::GuestAddr msg_addr, int flags) {
  ASSIGN_OR_RETURN_ERRNO(MsgHdr h, task.mm().CopyInObj<MsgHdr>(msg_addr));
  if (h.controllen > INT_MAX) return Errno{ENOBUFS};
  if (h.name != 0 && static_cast<int32_t>(h.namelen) < 0) return Errno{EINVAL};
  ASSIGN_OR_RETURN_ERRNO(auto iovs, MsgIovecs(task, h, mm::Access::kWrite));
  net::RecvResult out;
  ASSIGN_OR_RETURN_ERRNO(size_t n, ReceiveInto(task, sock, iovs, flags, &out));
  if (h.name != 0) {
    const std::string& sa = out.from;
    size_t copy = std::min<size_t>(h.namelen, sa.size());
    if (copy > 0) RETURN_IF_ERRNO(task.mm().CopyOut(mm::GuestAddr(h.name), sa.data(), copy));
    h.namelen = static_cast<uint32_t>(sa.size());
  }
  ControlWriter cw(h.control != 0 ? h.controllen : 0);
  if (out.has_creds) {
    abi::Ucred uc{out.creds.pid, out.creds.uid, out.creds.gid};
    cw.Put(SOL_SOCKET, SCM_CREDENTIALS, &uc, sizeof(uc));
  }
  for (const net::ControlMessage& c : out.control) {
    cw.Put(c.level, c.type, c.data.data(), c.data.size());
  }
  cw.PutRights(task, out.rights, flags & MSG_CMSG_CLOEXEC);
  if (!cw.data().empty()) {
    RETURN_IF_ERRNO(
        task.mm().CopyOut(mm::GuestAddr(h.control), cw.data().data(), cw.data().size()));
  }
  h.controllen = cw.data().size();
  h.flags = out.msg_flags | (cw.ctrunc() ? MSG_CTRUNC : 0);
  RETURN_IF_ERRNO(task.mm().CopyOutObj(msg_addr, h));
  return n;
}

}  // namespace

SyscallResult SysSendto(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  size_t len = std::min<size_t>(args.u64(2), kMaxRwCount);
  net::SendArgs sa;
  sa.flags = args.i32(3);
  std::vector<iovec> iovs;
  if (len > 0) {
    ASSIGN_OR_RETURN_ERRNO(iovs, task.mm().Translate(args.ptr(1), len, mm::Access::kRead));
  }
  sa.data = iovs;
  if (!args.ptr(4).IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(std::string name, CopyInSockaddr(task, args.ptr(4), args.i32(5)));
    if (!name.empty()) sa.name = std::move(name);
  }
  ASSIGN_OR_RETURN_ERRNO(size_t n, sock->SendMsg(&task, sa));
  return uint64_t{n};
}

SyscallResult SysRecvfrom(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  size_t len = std::min<size_t>(args.u64(2), kMaxRwCount);
  std::vector<iovec> iovs;
  if (len > 0) {
    ASSIGN_OR_RETURN_ERRNO(iovs, task.mm().Translate(args.ptr(1), len, mm::Access::kWrite));
  }
  net::RecvResult out;
  ASSIGN_OR_RETURN_ERRNO(size_t n, ReceiveInto(task, *sock, iovs, args.i32(3), &out));
  if (!args.ptr(4).IsNull()) {
    RETURN_IF_ERRNO(CopyOutSockaddr(task, out.from, args.ptr(4), args.ptr(5)));
  }
  return uint64_t{n};
}

SyscallResult SysSendmsg(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  ASSIGN_OR_RETURN_ERRNO(size_t n, SendMsgCore(task, *sock, args.ptr(1), args.i32(2)));
  return uint64_t{n};
}

SyscallResult SysRecvmsg(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  ASSIGN_OR_RETURN_ERRNO(size_t n, RecvMsgCore(task, *sock, args.ptr(1), args.i32(2)));
  return uint64_t{n};
}

SyscallResult SysSendmmsg(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  unsigned vlen = std::min<unsigned>(args.u32(2), IOV_MAX);
  int flags = args.i32(3);
  unsigned done = 0;
  for (; done < vlen; ++done) {
    mm::GuestAddr entry = args.ptr(1) + done * kMmsgHdrSize;
    auto r = SendMsgCore(task, *sock, entry, flags);
    if (!r.ok()) {
      if (done == 0) return Errno{r.error()};
      break;  // the datagrams already sent are the result
    }
    RETURN_IF_ERRNO(task.mm().CopyOutObj(entry + kMmsgLenOffset, static_cast<uint32_t>(r.value())));
  }
  return uint64_t{done};
}

SyscallResult SysRecvmmsg(Task& task, const SyscallArgs& args) {
  ASSIGN_OR_RETURN_ERRNO(auto sock, GetSocket(task, args.i32(0)));
  unsigned vlen = std::min<unsigned>(args.u32(2), IOV_MAX);
  int flags = args.i32(3);
  std::optional<absl::Time> deadline;
  if (!args.ptr(4).IsNull()) {
    ASSIGN_OR_RETURN_ERRNO(abi::Timespec ts, task.mm().CopyInObj<abi::Timespec>(args.ptr(4)));
    if (ts.sec < 0 || ts.nsec < 0 || ts.nsec >= 1000000000) return Errno{EINVAL};
    deadline = absl::Now() + absl::Seconds(ts.sec) + absl::Nanoseconds(ts.nsec);
  }
  unsigned done = 0;
  for (; done < vlen; ++done) {
    mm::GuestAddr entry = args.ptr(1) + done * kMmsgHdrSize;
    auto r = RecvMsgCore(task, *sock, entry, flags);
    if (!r.ok()) {
      if (done == 0) return Errno{r.error()};
      break;
    }
    RETURN_IF_ERRNO(task.mm().CopyOutObj(entry + kMmsgLenOffset, static_cast<uint32_t>(r.value())));
    if (flags & MSG_WAITFORONE) flags |= MSG_DONTWAIT;
    // Like Linux, the timeout is only looked at between messages.
    if (deadline && absl::Now() >= *deadline) {
      ++done;
      break;
    }
  }
  if (deadline) {
    absl::Duration left = std::max(*deadline - absl::Now(), absl::ZeroDuration());
    int64_t sec = absl::IDivDuration(left, absl::Seconds(1), &left);
    RETURN_IF_ERRNO(
        task.mm().CopyOutObj(args.ptr(4), abi::Timespec{sec, absl::ToInt64Nanoseconds(left)}));
  }
  return uint64_t{done};
}

}  // namespace usentry::sentry
