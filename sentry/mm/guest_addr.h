// GuestAddr: an address in the app's address space. It cannot be dereferenced; all
// access goes through MemoryManager copy/translate helpers, which return EFAULT for bad
// ranges instead of crashing the sentry.
#ifndef USENTRY_SENTRY_MM_GUEST_ADDR_H_
#define USENTRY_SENTRY_MM_GUEST_ADDR_H_

#include <compare>
#include <cstdint>

namespace usentry::sentry::mm {

inline constexpr uint64_t kPageSize = 4096;

class GuestAddr {
 public:
  constexpr GuestAddr() = default;
  constexpr explicit GuestAddr(uint64_t v) : v_(v) {}
  constexpr uint64_t value() const { return v_; }
  constexpr bool IsNull() const { return v_ == 0; }
  constexpr GuestAddr operator+(uint64_t d) const { return GuestAddr(v_ + d); }
  constexpr GuestAddr operator-(uint64_t d) const { return GuestAddr(v_ - d); }
  constexpr auto operator<=>(const GuestAddr&) const = default;
  constexpr GuestAddr PageDown() const { return GuestAddr(v_ & ~(kPageSize - 1)); }
  constexpr GuestAddr PageUp() const { return GuestAddr((v_ + kPageSize - 1) & ~(kPageSize - 1)); }
  constexpr bool PageAligned() const { return (v_ & (kPageSize - 1)) == 0; }

 private:
  uint64_t v_ = 0;
};

}  // namespace usentry::sentry::mm

#endif  // USENTRY_SENTRY_MM_GUEST_ADDR_H_
