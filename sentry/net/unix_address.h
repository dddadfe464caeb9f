// AF_UNIX addresses: what bind/connect/sendto name and getsockname/getpeername/recvfrom
// report, with Linux's exact sockaddr lengths.
#ifndef USENTRY_SENTRY_NET_UNIX_ADDRESS_H_
#define USENTRY_SENTRY_NET_UNIX_ADDRESS_H_

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <string>

#include "sentry/kernel/sys_result.h"

namespace usentry::sentry::net {

// Length of a sockaddr_un holding only the family (an unnamed socket).
inline constexpr size_t kUnixFamilyLen = offsetof(struct sockaddr_un, sun_path);

struct UnixAddress {
  enum class Kind { kUnnamed, kAbstract, kPath };
  Kind kind = Kind::kUnnamed;
  // Abstract: the name bytes after the leading NUL (may contain NULs). Path: the path as
  // the app gave it (relative paths stay relative, as getsockname shows them).
  std::string name;

  bool unnamed() const { return kind == Kind::kUnnamed; }
  // The sockaddr_un bytes getsockname returns: the family alone for an unnamed socket;
  // family + path + NUL for a path; family + NUL + name for an abstract name.
  std::string ToSockaddr() const;
};

// Parses an app sockaddr of `len` bytes for connect/sendto (and bind, which handles the
// family-only autobind form before calling this). EINVAL for a short or long address or a
// family other than AF_UNIX.
SysResult<UnixAddress> ParseUnixSockaddr(const void* data, size_t len);

}  // namespace usentry::sentry::net

#endif  // USENTRY_SENTRY_NET_UNIX_ADDRESS_H_
