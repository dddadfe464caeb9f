// System V IPC ABI of x86-64: the IPC_64 structs shmctl copies (ipc64_perm, shmid64_ds,
// shminfo64, shm_info) and the command and flag values of shmget/shmat/shmctl.
// Constants use kName: the C names are macros in glibc headers.
#ifndef USENTRY_ABI_IPC_H_
#define USENTRY_ABI_IPC_H_

#include <cstddef>
#include <cstdint>

namespace usentry::abi {

// ---- Common to every IPC object ------------------------------------------------------

inline constexpr int32_t kIpcPrivate = 0;
inline constexpr int kIpcCreat = 01000;
inline constexpr int kIpcExcl = 02000;
inline constexpr int kIpcRmid = 0;
inline constexpr int kIpcSet = 1;
inline constexpr int kIpcStat = 2;
inline constexpr int kIpcInfo = 3;

// struct ipc64_perm.
struct Ipc64Perm {
  int32_t key;
  uint32_t uid;
  uint32_t gid;
  uint32_t cuid;
  uint32_t cgid;
  uint32_t mode;
  uint16_t seq;
  uint16_t pad2;
  uint64_t unused1;
  uint64_t unused2;
};
static_assert(sizeof(Ipc64Perm) == 48);
static_assert(offsetof(Ipc64Perm, mode) == 20);
static_assert(offsetof(Ipc64Perm, seq) == 24);

// ---- Shared memory -------------------------------------------------------------------

// shmget flags (beside IPC_CREAT/IPC_EXCL and the mode's low 9 bits).
inline constexpr int kShmHugetlb = 04000;
inline constexpr int kShmNoreserve = 010000;
// shmat flags.
inline constexpr int kShmRdonly = 010000;
inline constexpr int kShmRnd = 020000;
inline constexpr int kShmRemap = 040000;
inline constexpr int kShmExec = 0100000;
// shmctl commands beside IPC_*.
inline constexpr int kShmLock = 11;
inline constexpr int kShmUnlock = 12;
inline constexpr int kShmStat = 13;
inline constexpr int kShmInfo = 14;
inline constexpr int kShmStatAny = 15;
// Bits of shm_perm.mode above the permission bits.
inline constexpr uint32_t kShmDest = 01000;
inline constexpr uint32_t kShmLocked = 02000;
// x86-64's attach alignment (SHMLBA): one page.
inline constexpr uint64_t kShmLba = 4096;

// struct shmid64_ds (glibc's struct shmid_ds on x86-64 is the same).
struct ShmidDs {
  Ipc64Perm perm;
  uint64_t segsz;
  int64_t atime;
  int64_t dtime;
  int64_t ctime;
  int32_t cpid;
  int32_t lpid;
  uint64_t nattch;
  uint64_t unused4;
  uint64_t unused5;
};
static_assert(sizeof(ShmidDs) == 112);
static_assert(offsetof(ShmidDs, segsz) == 48);
static_assert(offsetof(ShmidDs, cpid) == 80);
static_assert(offsetof(ShmidDs, nattch) == 88);

// struct shminfo64 (IPC_INFO).
struct ShmInfo64 {
  uint64_t shmmax;
  uint64_t shmmin;
  uint64_t shmmni;
  uint64_t shmseg;
  uint64_t shmall;
  uint64_t unused[4];
};
static_assert(sizeof(ShmInfo64) == 72);

// struct shm_info (SHM_INFO); sizes in pages.
struct ShmInfo {
  int32_t used_ids;
  uint64_t shm_tot;
  uint64_t shm_rss;
  uint64_t shm_swp;
  uint64_t swap_attempts;
  uint64_t swap_successes;
};
static_assert(sizeof(ShmInfo) == 48);
static_assert(offsetof(ShmInfo, shm_tot) == 8);

}  // namespace usentry::abi

#endif  // USENTRY_ABI_IPC_H_
