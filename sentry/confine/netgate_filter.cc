// netgate's host-syscall allowlist (docs/security.md, "netgate"). Part of the policy
// library: the build compiles it to BPF ahead (bpf_programs.h).
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "base/status_macros.h"
#include "sentry/confine/filter_rules.h"

namespace usentry::sentry::confine {
namespace {

constexpr int kNetgateSyscalls[] = {
    // The sentry protocol (SCM_RIGHTS donations) and relayed datagrams.
    SCMP_SYS(sendmsg),
    SCMP_SYS(recvmsg),
    SCMP_SYS(sendto),
    SCMP_SYS(recvfrom),
    // Dialing allowed destinations; upstream DNS (c-ares: UDP, TCP on truncation).
    SCMP_SYS(connect),
    SCMP_SYS(getsockopt),  // SO_ERROR of a dial, TCP_INFO byte counts
    SCMP_SYS(setsockopt),  // c-ares sets buffer sizes
    SCMP_SYS(getsockname),
    SCMP_SYS(getpeername),  // the peer is checked again before a socket is donated
    SCMP_SYS(shutdown),
    SCMP_SYS(poll),
    SCMP_SYS(ppoll),
    SCMP_SYS(read),
    SCMP_SYS(readv),
    SCMP_SYS(write),  // the --net-log line, diagnostics on stderr
    SCMP_SYS(writev),
    SCMP_SYS(close),
    SCMP_SYS(fcntl),
    // Beyond kHelperRuntimeSyscalls: c-ares reads the time and random query ids.
    SCMP_SYS(gettimeofday),
    SCMP_SYS(getrandom),
};

}  // namespace

absl::StatusOr<ScmpFilter> BuildNetgateFilter(uint32_t default_action) {
  ASSIGN_OR_RETURN(ScmpFilter filter, NewFilter(default_action, default_action));
  scmp_filter_ctx ctx = filter.get();
  for (int nr : kNetgateSyscalls) RETURN_IF_ERROR(AddRule(ctx, nr));
  for (int nr : kHelperRuntimeSyscalls) RETURN_IF_ERROR(AddRule(ctx, nr));
  // socket(): AF_INET/AF_INET6 streams and datagrams only (SOCK_NONBLOCK/SOCK_CLOEXEC
  // allowed), protocol 0/TCP/UDP; never raw, packet or netlink sockets.
  constexpr uint64_t kTypeMask = 0xf;
  for (int family : {AF_INET, AF_INET6}) {
    for (int type : {SOCK_STREAM, SOCK_DGRAM}) {
      RETURN_IF_ERROR(
          AddRule(ctx, SCMP_SYS(socket),
                  {SCMP_A0(SCMP_CMP_EQ, static_cast<uint64_t>(family)),
                   SCMP_A1(SCMP_CMP_MASKED_EQ, kTypeMask, static_cast<uint64_t>(type))}));
    }
  }
  // The UDP relays' socketpairs.
  RETURN_IF_ERROR(
      AddRule(ctx, SCMP_SYS(socketpair),
              {SCMP_A0(SCMP_CMP_EQ, AF_UNIX), SCMP_A1(SCMP_CMP_MASKED_EQ, kTypeMask, SOCK_DGRAM)}));
  // c-ares asks how much a datagram socket holds and makes sockets non-blocking this way.
  for (uint64_t cmd : {static_cast<uint64_t>(FIONREAD), static_cast<uint64_t>(FIONBIO)}) {
    RETURN_IF_ERROR(AddRule(ctx, SCMP_SYS(ioctl), {SCMP_A1(SCMP_CMP_EQ, cmd)}));
  }
  return filter;
}

}  // namespace usentry::sentry::confine
