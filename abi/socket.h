// Linux x86-64 socket ABI: sockaddr_un, msghdr, mmsghdr, cmsghdr, ucred, linger, ifreq,
// ifconf, and the control-message size arithmetic (CMSG_LEN/CMSG_SPACE). Plain data.
#ifndef USENTRY_ABI_SOCKET_H_
#define USENTRY_ABI_SOCKET_H_

#include <cstddef>
#include <cstdint>

namespace usentry::abi {

inline constexpr size_t kSockaddrStorageSize = 128;  // sizeof(struct sockaddr_storage)

struct SockaddrUn {
  uint16_t family;
  char path[108];
};
static_assert(sizeof(SockaddrUn) == 110);
static_assert(offsetof(SockaddrUn, path) == 2);

struct MsgHdr {
  uint64_t name;  // app pointers
  uint32_t namelen;
  uint32_t pad0;
  uint64_t iov;
  uint64_t iovlen;
  uint64_t control;
  uint64_t controllen;
  int32_t flags;
  uint32_t pad1;
};
static_assert(sizeof(MsgHdr) == 56);
static_assert(offsetof(MsgHdr, iov) == 16);
static_assert(offsetof(MsgHdr, control) == 32);
static_assert(offsetof(MsgHdr, flags) == 48);

struct MmsgHdr {
  MsgHdr hdr;
  uint32_t len;
  uint32_t pad;
};
static_assert(sizeof(MmsgHdr) == 64);
static_assert(offsetof(MmsgHdr, len) == 56);

struct CmsgHdr {
  uint64_t len;  // header + data, unpadded
  int32_t level;
  int32_t type;
};
static_assert(sizeof(CmsgHdr) == 16);

constexpr size_t CmsgAlign(size_t n) { return (n + 7) & ~size_t{7}; }
constexpr size_t CmsgLen(size_t n) { return sizeof(CmsgHdr) + n; }
constexpr size_t CmsgSpace(size_t n) { return sizeof(CmsgHdr) + CmsgAlign(n); }

struct Ucred {
  int32_t pid;
  uint32_t uid;
  uint32_t gid;
};
static_assert(sizeof(Ucred) == 12);

struct Linger {
  int32_t onoff;
  int32_t linger;
};
static_assert(sizeof(Linger) == 8);

// struct ifreq: an interface name and one request value (a sockaddr, flags, ifindex,
// MTU, ifmap...) that the interface ioctls read or write in place.
inline constexpr size_t kIfNameSize = 16;  // IFNAMSIZ
struct Ifreq {
  char name[kIfNameSize];
  uint8_t data[24];
};
static_assert(sizeof(Ifreq) == 40);

// struct ifconf (SIOCGIFCONF): a buffer of ifreqs and its length in bytes.
struct Ifconf {
  int32_t len;
  uint32_t pad;
  uint64_t buf;  // app pointer
};
static_assert(sizeof(Ifconf) == 16);

}  // namespace usentry::abi

#endif  // USENTRY_ABI_SOCKET_H_
