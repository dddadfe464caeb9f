// DNS names for the sandbox resolver's codec (dns_message.h): reading a possibly
// compressed name out of an untrusted message, wire <-> text form, the host name check,
// and reverse-lookup (in-addr.arpa / ip6.arpa) names. Plain data, no I/O, no sentry
// dependencies (netgate links it too).
#ifndef USENTRY_SENTRY_NET_DNS_NAME_H_
#define USENTRY_SENTRY_NET_DNS_NAME_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "base/ip_address.h"

namespace usentry::sentry::net::dns {

inline constexpr size_t kHeaderSize = 12;
inline constexpr size_t kMaxLabelLength = 63;
inline constexpr size_t kMaxNameWireLength = 255;  // labels, length bytes and the root

// Text form ("presentation format", RFC 1035 5.1) used throughout: labels joined by '.',
// no trailing dot, the root is "". Letters, digits, '-' and '_' stand for themselves;
// every other byte of a label (including '.', '\\' and non-ASCII) is written \DDD in
// decimal, so any wire name has exactly one text form and the policy never sees a name
// that could be read two ways.

struct ParsedName {
  std::string wire;  // uncompressed, ASCII letters lowercased, ends with the root label
  std::string text;  // text form of `wire`
  size_t next = 0;   // offset just past the name's own bytes (after the first pointer)
};

// Reads the name at `offset` of the message `msg`. Untrusted input: fails (nullopt) on
// a label running past the end, a name longer than kMaxNameWireLength, the obsolete
// 0x40/0x80 label types, and compression pointers that point into the header or not
// strictly before the start of the labels that led to them. The last rule makes every
// chain of pointers strictly decreasing, so there are no loops and no forward
// references, and the work is bounded by the message size.
[[nodiscard]] std::optional<ParsedName> ReadName(absl::string_view msg, size_t offset);

// The text form of an uncompressed wire name (as ReadName produces; case is kept).
// Precondition: `wire` is well formed.
[[nodiscard]] std::string WireToText(absl::string_view wire);

// The uncompressed wire form of a text name. Accepts one trailing dot and the escapes
// \DDD (decimal, <= 255) and \c (c taken literally); case is kept. nullopt for empty
// labels, labels over 63 bytes, names over 255 wire bytes, and malformed escapes.
[[nodiscard]] std::optional<std::string> TextToWire(absl::string_view text);

// A host name as RFC 1123 has it: 1..253 characters, labels of 1..63 letters, digits
// and '-', not starting or ending with '-'; no trailing dot. '_' is not allowed (it is
// kept by ReadName for service names like _dmarc, which are not hosts).
[[nodiscard]] bool IsValidHostname(absl::string_view text);

// "1.0.0.127.in-addr.arpa" -> 127.0.0.1; 32 nibble labels + "ip6.arpa" -> the IPv6
// address. Case-insensitive; nullopt for anything else (wrong label count, leading
// zeros, values out of range, a partial prefix like "127.in-addr.arpa").
[[nodiscard]] std::optional<IpAddress> ParseReverseName(absl::string_view text);
// The inverse: the PTR name of `ip` (lowercase, no trailing dot).
[[nodiscard]] std::string ReverseName(const IpAddress& ip);

}  // namespace usentry::sentry::net::dns

#endif  // USENTRY_SENTRY_NET_DNS_NAME_H_
