// IpAddress and Cidr: IPv4/IPv6 addresses and prefixes as values, shared by the policy
// (net rules), the sentry's netstack, the sandbox DNS and netgate. Plain data, no I/O.
#ifndef USENTRY_BASE_IP_ADDRESS_H_
#define USENTRY_BASE_IP_ADDRESS_H_

#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace usentry {

class IpAddress {
 public:
  IpAddress() = default;  // 0.0.0.0
  static IpAddress V4(uint32_t host_order);
  static IpAddress FromIn(const in_addr& a);
  static IpAddress FromIn6(const in6_addr& a);
  // "1.2.3.4" or "2001:db8::1" (no brackets, no zone); nullopt otherwise.
  static std::optional<IpAddress> Parse(absl::string_view text);

  bool is_v4() const { return !v6_; }
  bool is_v6() const { return v6_; }
  // The 4 (IPv4) or 16 (IPv6) address bytes in network order.
  const uint8_t* bytes() const { return bytes_.data(); }
  size_t size() const { return v6_ ? 16 : 4; }
  uint32_t v4_host_order() const;  // requires is_v4()
  in_addr ToIn() const;            // requires is_v4()
  // IPv4 addresses as ::ffff:a.b.c.d; IPv6 unchanged.
  in6_addr ToIn6Mapped() const;

  // ::ffff:a.b.c.d is a.b.c.d; everything else unchanged. Policy and routing decide on
  // this form, so a mapped address cannot dodge an IPv4 rule.
  IpAddress Unmapped() const;
  bool IsV4Mapped() const;
  bool IsUnspecified() const;  // 0.0.0.0 or ::
  bool IsLoopback() const;     // 127.0.0.0/8 or ::1 (after Unmapped)

  std::string ToString() const;  // inet_ntop form

  friend bool operator==(const IpAddress& a, const IpAddress& b) {
    return a.v6_ == b.v6_ && a.bytes_ == b.bytes_;
  }
  friend bool operator!=(const IpAddress& a, const IpAddress& b) { return !(a == b); }
  friend bool operator<(const IpAddress& a, const IpAddress& b) {
    return a.v6_ != b.v6_ ? !a.v6_ : a.bytes_ < b.bytes_;
  }

 private:
  bool v6_ = false;
  std::array<uint8_t, 16> bytes_{};  // IPv4 uses the first 4
};

// A prefix: `base` with all bits past `prefix_len` zero.
class Cidr {
 public:
  Cidr() = default;
  // Normalizes `base` (clears the host bits). prefix_len is clamped to the family's width.
  Cidr(const IpAddress& base, int prefix_len);
  // "10.0.0.0/8", "2001:db8::/32", or a bare address (a /32 or /128). Host bits set in
  // the text are an error ("10.0.0.1/8"), so a typo is not silently widened.
  static std::optional<Cidr> Parse(absl::string_view text);

  const IpAddress& base() const { return base_; }
  int prefix_len() const { return prefix_len_; }
  // Same family and the first prefix_len bits equal. Compare Unmapped() addresses.
  bool Contains(const IpAddress& ip) const;
  // Every address of `other` is in this prefix.
  bool Covers(const Cidr& other) const;
  std::string ToString() const;  // "10.0.0.0/8"

  friend bool operator==(const Cidr& a, const Cidr& b) {
    return a.base_ == b.base_ && a.prefix_len_ == b.prefix_len_;
  }

 private:
  IpAddress base_;
  int prefix_len_ = 0;
};

}  // namespace usentry

#endif  // USENTRY_BASE_IP_ADDRESS_H_
