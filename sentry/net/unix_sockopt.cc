// UnixSocket options: SO_PASSCRED and SO_PEERCRED; the rest of SOL_SOCKET is shared by
// every family (socket.cc). Other levels fail with EOPNOTSUPP, as Linux does for AF_UNIX.
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cstring>

#include "sentry/kernel/task.h"
#include "sentry/net/unix_socket.h"

namespace usentry::sentry::net {

SysResult<std::string> UnixSocket::GetOption(Task& task, int level, int name) {
  if (level != SOL_SOCKET) return Errno{EOPNOTSUPP};
  switch (name) {
    case SO_PASSCRED:
      return OptionBytes(int{passcred_});
    case SO_PEERCRED: {
      struct ucred c {
        peer_cred_.pid, peer_cred_.uid, peer_cred_.gid
      };
      return OptionBytes(c);
    }
    default:
      return GetCommonOption(name);
  }
}

SysStatus UnixSocket::SetOption(Task& task, int level, int name, const std::string& value) {
  if (level != SOL_SOCKET) return Errno{EOPNOTSUPP};
  if (name == SO_PASSCRED) {
    ASSIGN_OR_RETURN_ERRNO(int v, OptionInt(value));
    passcred_ = v != 0;
    return SysOk();
  }
  return SetCommonOption(task, name, value);
}

}  // namespace usentry::sentry::net
