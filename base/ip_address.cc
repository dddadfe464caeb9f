// IpAddress and Cidr.
#include "base/ip_address.h"

#include <arpa/inet.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace usentry {
namespace {

constexpr uint8_t kV4MappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

}  // namespace

IpAddress IpAddress::V4(uint32_t host_order) {
  IpAddress a;
  uint32_t be = htonl(host_order);
  memcpy(a.bytes_.data(), &be, 4);
  return a;
}

IpAddress IpAddress::FromIn(const in_addr& in) {
  IpAddress a;
  memcpy(a.bytes_.data(), &in, 4);
  return a;
}

IpAddress IpAddress::FromIn6(const in6_addr& in) {
  IpAddress a;
  a.v6_ = true;
  memcpy(a.bytes_.data(), &in, 16);
  return a;
}

std::optional<IpAddress> IpAddress::Parse(absl::string_view text) {
  std::string s(text);
  in_addr v4;
  if (inet_pton(AF_INET, s.c_str(), &v4) == 1) return FromIn(v4);
  in6_addr v6;
  if (inet_pton(AF_INET6, s.c_str(), &v6) == 1) return FromIn6(v6);
  return std::nullopt;
}

uint32_t IpAddress::v4_host_order() const {
  uint32_t be;
  memcpy(&be, bytes_.data(), 4);
  return ntohl(be);
}

in_addr IpAddress::ToIn() const {
  in_addr a;
  memcpy(&a, bytes_.data(), 4);
  return a;
}

in6_addr IpAddress::ToIn6Mapped() const {
  in6_addr a;
  if (v6_) {
    memcpy(&a, bytes_.data(), 16);
  } else {
    memcpy(&a, kV4MappedPrefix, 12);
    memcpy(reinterpret_cast<uint8_t*>(&a) + 12, bytes_.data(), 4);
  }
  return a;
}

bool IpAddress::IsV4Mapped() const {
  return v6_ && memcmp(bytes_.data(), kV4MappedPrefix, 12) == 0;
}

IpAddress IpAddress::Unmapped() const {
  if (!IsV4Mapped()) return *this;
  IpAddress a;
  memcpy(a.bytes_.data(), bytes_.data() + 12, 4);
  return a;
}

bool IpAddress::IsUnspecified() const {
  for (size_t i = 0; i < size(); ++i) {
    if (bytes_[i] != 0) return false;
  }
  return true;
}

bool IpAddress::IsLoopback() const {
  IpAddress u = Unmapped();
  if (u.is_v4()) return u.bytes_[0] == 127;
  for (size_t i = 0; i < 15; ++i) {
    if (u.bytes_[i] != 0) return false;
  }
  return u.bytes_[15] == 1;
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN];
  if (inet_ntop(v6_ ? AF_INET6 : AF_INET, bytes_.data(), buf, sizeof(buf)) == nullptr) return "?";
  return buf;
}

Cidr::Cidr(const IpAddress& base, int prefix_len) {
  const int width = base.is_v6() ? 128 : 32;
  prefix_len_ = prefix_len < 0 ? 0 : prefix_len > width ? width : prefix_len;
  uint8_t b[16] = {};
  memcpy(b, base.bytes(), base.size());
  for (int bit = prefix_len_; bit < width; ++bit) b[bit / 8] &= ~(0x80 >> (bit % 8));
  in6_addr a6;
  memcpy(&a6, b, 16);
  in_addr a4;
  memcpy(&a4, b, 4);
  base_ = base.is_v6() ? IpAddress::FromIn6(a6) : IpAddress::FromIn(a4);
}

std::optional<Cidr> Cidr::Parse(absl::string_view text) {
  size_t slash = text.find('/');
  std::optional<IpAddress> ip = IpAddress::Parse(text.substr(0, slash));
  if (!ip) return std::nullopt;
  const int width = ip->is_v6() ? 128 : 32;
  int len = width;
  if (slash != absl::string_view::npos) {
    absl::string_view digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3 || !absl::SimpleAtoi(digits, &len) || len < 0 ||
        len > width) {
      return std::nullopt;
    }
  }
  Cidr c(*ip, len);
  if (c.base_ != *ip) return std::nullopt;  // host bits set
  return c;
}

bool Cidr::Contains(const IpAddress& ip) const {
  if (ip.is_v6() != base_.is_v6()) return false;
  const uint8_t* a = ip.bytes();
  const uint8_t* b = base_.bytes();
  int full = prefix_len_ / 8;
  if (memcmp(a, b, full) != 0) return false;
  int rest = prefix_len_ % 8;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a[full] & mask) == (b[full] & mask);
}

bool Cidr::Covers(const Cidr& other) const {
  return other.prefix_len_ >= prefix_len_ && Contains(other.base_);
}

std::string Cidr::ToString() const { return absl::StrCat(base_.ToString(), "/", prefix_len_); }

}  // namespace usentry
