// sockaddr_un parsing and formatting.
#include "sentry/net/unix_address.h"

#include <cstring>

namespace usentry::sentry::net {

std::string UnixAddress::ToSockaddr() const {
  std::string out(kUnixFamilyLen, '\0');
  sa_family_t family = AF_UNIX;
  memcpy(out.data(), &family, sizeof(family));
  switch (kind) {
    case Kind::kUnnamed:
      break;
    case Kind::kAbstract:
      out.push_back('\0');
      out += name;
      break;
    case Kind::kPath:
      out += name;
      out.push_back('\0');
      break;
  }
  return out;
}

SysResult<UnixAddress> ParseUnixSockaddr(const void* data, size_t len) {
  if (len <= kUnixFamilyLen || len > sizeof(struct sockaddr_un)) return Errno{EINVAL};
  const char* bytes = static_cast<const char*>(data);
  sa_family_t family;
  memcpy(&family, bytes, sizeof(family));
  if (family != AF_UNIX) return Errno{EINVAL};
  const char* path = bytes + kUnixFamilyLen;
  size_t path_len = len - kUnixFamilyLen;
  UnixAddress a;
  if (path[0] == '\0') {
    a.kind = UnixAddress::Kind::kAbstract;
    a.name.assign(path + 1, path_len - 1);
    return a;
  }
  // Like Linux, the path ends at the first NUL or at the end of the given length.
  a.kind = UnixAddress::Kind::kPath;
  a.name.assign(path, strnlen(path, path_len));
  return a;
}

}  // namespace usentry::sentry::net
