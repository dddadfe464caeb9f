// Kernel layouts of struct stat (x86-64), struct statx and linux_dirent64, with the
// STATX_* / DT_* constants, for copying file metadata into app memory.
//
// Member names are the kernel's without the st_/stx_/d_ prefix: glibc defines several
// of the prefixed names (st_atime, ...) as macros, which would break these structs in
// any file that also includes <sys/stat.h>. Constants use kName for the same reason.
#ifndef USENTRY_ABI_STAT_H_
#define USENTRY_ABI_STAT_H_

#include <cstddef>
#include <cstdint>

namespace usentry::abi {

// struct stat as returned by stat/fstat/lstat/newfstatat on x86-64
// (arch/x86/include/uapi/asm/stat.h). glibc's struct stat has the same size on
// x86-64 but uses timespec members; this is the byte layout the kernel writes.
struct Stat {
  uint64_t dev;
  uint64_t ino;
  uint64_t nlink;  // before mode on x86-64 (unlike most other architectures)
  uint32_t mode;
  uint32_t uid;
  uint32_t gid;
  uint32_t pad0;
  uint64_t rdev;
  int64_t size;
  int64_t blksize;
  int64_t blocks;  // 512-byte units
  uint64_t atime_sec;
  uint64_t atime_nsec;
  uint64_t mtime_sec;
  uint64_t mtime_nsec;
  uint64_t ctime_sec;
  uint64_t ctime_nsec;
  int64_t unused[3];
};
static_assert(sizeof(Stat) == 144);
static_assert(offsetof(Stat, nlink) == 16);
static_assert(offsetof(Stat, mode) == 24);
static_assert(offsetof(Stat, uid) == 28);
static_assert(offsetof(Stat, rdev) == 40);
static_assert(offsetof(Stat, size) == 48);
static_assert(offsetof(Stat, blksize) == 56);
static_assert(offsetof(Stat, blocks) == 64);
static_assert(offsetof(Stat, atime_sec) == 72);
static_assert(offsetof(Stat, mtime_sec) == 88);
static_assert(offsetof(Stat, ctime_sec) == 104);

struct StatxTimestamp {
  int64_t sec;
  uint32_t nsec;
  int32_t reserved;
};
static_assert(sizeof(StatxTimestamp) == 16);

// struct statx (include/uapi/linux/stat.h). Fields past dio_offset_align were added by
// later kernels; the app passes the buffer size implicitly (always 256), so unused
// trailing fields must be zero.
struct Statx {
  uint32_t mask;  // STATX_* bits actually filled in
  uint32_t blksize;
  uint64_t attributes;
  uint32_t nlink;
  uint32_t uid;
  uint32_t gid;
  uint16_t mode;
  uint16_t spare0;
  uint64_t ino;
  uint64_t size;
  uint64_t blocks;
  uint64_t attributes_mask;
  StatxTimestamp atime;
  StatxTimestamp btime;
  StatxTimestamp ctime;
  StatxTimestamp mtime;
  uint32_t rdev_major;
  uint32_t rdev_minor;
  uint32_t dev_major;
  uint32_t dev_minor;
  uint64_t mnt_id;
  uint32_t dio_mem_align;
  uint32_t dio_offset_align;
  uint64_t subvol;  // Linux 6.10
  uint64_t spare3[11];
};
static_assert(sizeof(Statx) == 256);
static_assert(offsetof(Statx, nlink) == 0x10);
static_assert(offsetof(Statx, mode) == 0x1c);
static_assert(offsetof(Statx, ino) == 0x20);
static_assert(offsetof(Statx, atime) == 0x40);
static_assert(offsetof(Statx, btime) == 0x50);
static_assert(offsetof(Statx, ctime) == 0x60);
static_assert(offsetof(Statx, mtime) == 0x70);
static_assert(offsetof(Statx, rdev_major) == 0x80);
static_assert(offsetof(Statx, mnt_id) == 0x90);
static_assert(offsetof(Statx, subvol) == 0xa0);

// statx mask bits (request and result).
inline constexpr uint32_t kStatxType = 0x1;
inline constexpr uint32_t kStatxMode = 0x2;
inline constexpr uint32_t kStatxNlink = 0x4;
inline constexpr uint32_t kStatxUid = 0x8;
inline constexpr uint32_t kStatxGid = 0x10;
inline constexpr uint32_t kStatxAtime = 0x20;
inline constexpr uint32_t kStatxMtime = 0x40;
inline constexpr uint32_t kStatxCtime = 0x80;
inline constexpr uint32_t kStatxIno = 0x100;
inline constexpr uint32_t kStatxSize = 0x200;
inline constexpr uint32_t kStatxBlocks = 0x400;
inline constexpr uint32_t kStatxBasicStats = 0x7ff;
inline constexpr uint32_t kStatxBtime = 0x800;
inline constexpr uint32_t kStatxMntId = 0x1000;
inline constexpr uint32_t kStatxDioAlign = 0x2000;
inline constexpr uint32_t kStatxMntIdUnique = 0x4000;
inline constexpr uint32_t kStatxSubvol = 0x8000;
inline constexpr uint32_t kStatxReserved = 0x80000000;  // EINVAL if requested
inline constexpr uint32_t kStatxAll = 0xfff;            // deprecated, kept for old apps

// statx attribute bits (stx_attributes).
inline constexpr uint64_t kStatxAttrCompressed = 0x4;
inline constexpr uint64_t kStatxAttrImmutable = 0x10;
inline constexpr uint64_t kStatxAttrAppend = 0x20;
inline constexpr uint64_t kStatxAttrNodump = 0x40;
inline constexpr uint64_t kStatxAttrEncrypted = 0x800;
inline constexpr uint64_t kStatxAttrAutomount = 0x1000;
inline constexpr uint64_t kStatxAttrMountRoot = 0x2000;
inline constexpr uint64_t kStatxAttrVerity = 0x100000;
inline constexpr uint64_t kStatxAttrDax = 0x200000;

// statx/fstatat flags (the AT_* flags of fcntl.h; AT_FDCWD is the dirfd value).
inline constexpr int kAtFdCwd = -100;
inline constexpr int kAtSymlinkNofollow = 0x100;
inline constexpr int kAtEaccess = 0x200;    // faccessat
inline constexpr int kAtRemovedir = 0x200;  // unlinkat
inline constexpr int kAtSymlinkFollow = 0x400;
inline constexpr int kAtNoAutomount = 0x800;
inline constexpr int kAtEmptyPath = 0x1000;
inline constexpr int kAtStatxSyncAsStat = 0x0000;
inline constexpr int kAtStatxForceSync = 0x2000;
inline constexpr int kAtStatxDontSync = 0x4000;
inline constexpr int kAtStatxSyncType = 0x6000;

// struct linux_dirent64 (getdents64): a fixed header followed by the NUL-terminated
// name; each record is padded to 8 bytes. The name starts at offset 19, inside what
// sizeof(LinuxDirent64Header) counts as padding, so never use sizeof for it.
struct LinuxDirent64Header {
  uint64_t ino;
  int64_t off;  // opaque cookie: the offset to seek to for the next record
  uint16_t reclen;
  uint8_t type;  // kDt*
};
inline constexpr size_t kDirent64NameOffset = 19;
static_assert(offsetof(LinuxDirent64Header, reclen) == 16);
static_assert(offsetof(LinuxDirent64Header, type) == 18);

// Record length for a name of name_len bytes (excluding the NUL).
constexpr size_t Dirent64RecLen(size_t name_len) {
  return (kDirent64NameOffset + name_len + 1 + 7) & ~size_t{7};
}

// d_type values.
inline constexpr uint8_t kDtUnknown = 0;
inline constexpr uint8_t kDtFifo = 1;
inline constexpr uint8_t kDtChr = 2;
inline constexpr uint8_t kDtDir = 4;
inline constexpr uint8_t kDtBlk = 6;
inline constexpr uint8_t kDtReg = 8;
inline constexpr uint8_t kDtLnk = 10;
inline constexpr uint8_t kDtSock = 12;
inline constexpr uint8_t kDtWht = 14;

// File type bits of st_mode.
inline constexpr uint32_t kSIfmt = 0170000;
inline constexpr uint32_t kSIfsock = 0140000;
inline constexpr uint32_t kSIflnk = 0120000;
inline constexpr uint32_t kSIfreg = 0100000;
inline constexpr uint32_t kSIfblk = 0060000;
inline constexpr uint32_t kSIfdir = 0040000;
inline constexpr uint32_t kSIfchr = 0020000;
inline constexpr uint32_t kSIfifo = 0010000;
inline constexpr uint32_t kSIsuid = 04000;
inline constexpr uint32_t kSIsgid = 02000;
inline constexpr uint32_t kSIsvtx = 01000;

}  // namespace usentry::abi

#endif  // USENTRY_ABI_STAT_H_
