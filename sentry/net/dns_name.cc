#include "sentry/net/dns_name.h"

#include <array>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace usentry::sentry::net::dns {
namespace {

bool IsPlainTextByte(unsigned char c) { return absl::ascii_isalnum(c) || c == '-' || c == '_'; }

void AppendEscaped(unsigned char c, std::string& out) {
  out.push_back('\\');
  out.push_back(static_cast<char>('0' + c / 100));
  out.push_back(static_cast<char>('0' + c / 10 % 10));
  out.push_back(static_cast<char>('0' + c % 10));
}

}  // namespace

std::optional<ParsedName> ReadName(absl::string_view msg, size_t offset) {
  ParsedName out;
  size_t pos = offset;
  // Start of the run of labels being read: a pointer must go strictly below it.
  size_t segment_start = offset;
  bool jumped = false;
  for (;;) {
    if (pos >= msg.size()) return std::nullopt;
    const auto len = static_cast<unsigned char>(msg[pos]);
    if ((len & 0xC0) == 0xC0) {
      if (pos + 1 >= msg.size()) return std::nullopt;
      const size_t target = (size_t{len & 0x3Fu} << 8) | static_cast<unsigned char>(msg[pos + 1]);
      if (target < kHeaderSize || target >= segment_start) return std::nullopt;
      if (!jumped) out.next = pos + 2;
      jumped = true;
      pos = segment_start = target;
      continue;
    }
    if (len & 0xC0) return std::nullopt;  // 0x40 (extended) and 0x80 (reserved) label types
    if (len == 0) {
      out.wire.push_back('\0');
      if (!jumped) out.next = pos + 1;
      break;
    }
    if (msg.size() - pos - 1 < len) return std::nullopt;
    // +1 for this label's length byte, +1 for the root still to come.
    if (out.wire.size() + 1 + len + 1 > kMaxNameWireLength) return std::nullopt;
    out.wire.push_back(static_cast<char>(len));
    for (size_t i = 0; i < len; ++i) {
      out.wire.push_back(absl::ascii_tolower(static_cast<unsigned char>(msg[pos + 1 + i])));
    }
    pos += 1 + len;
  }
  out.text = WireToText(out.wire);
  return out;
}

std::string WireToText(absl::string_view wire) {
  std::string text;
  size_t pos = 0;
  while (pos < wire.size() && wire[pos] != '\0') {
    const auto len = static_cast<unsigned char>(wire[pos]);
    if (!text.empty()) text.push_back('.');
    for (size_t i = 1; i <= len && pos + i < wire.size(); ++i) {
      const auto c = static_cast<unsigned char>(wire[pos + i]);
      if (IsPlainTextByte(c)) {
        text.push_back(static_cast<char>(c));
      } else {
        AppendEscaped(c, text);
      }
    }
    pos += 1 + len;
  }
  return text;
}

std::optional<std::string> TextToWire(absl::string_view text) {
  if (text == "." || text.empty()) return std::string(1, '\0');
  std::string wire;
  std::string label;
  auto end_label = [&]() {
    if (label.empty() || label.size() > kMaxLabelLength) return false;
    wire.push_back(static_cast<char>(label.size()));
    wire += label;
    label.clear();
    return true;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      if (!end_label()) return std::nullopt;
      if (i + 1 == text.size()) break;  // the one trailing dot
      continue;
    }
    if (c != '\\') {
      label.push_back(c);
      continue;
    }
    if (i + 1 >= text.size()) return std::nullopt;
    if (absl::ascii_isdigit(static_cast<unsigned char>(text[i + 1]))) {
      int value = 0;
      for (size_t k = 1; k <= 3; ++k) {
        if (i + k >= text.size() || !absl::ascii_isdigit(static_cast<unsigned char>(text[i + k]))) {
          return std::nullopt;
        }
        value = value * 10 + (text[i + k] - '0');
      }
      if (value > 255) return std::nullopt;
      label.push_back(static_cast<char>(value));
      i += 3;
    } else {
      label.push_back(text[i + 1]);
      i += 1;
    }
  }
  if (!label.empty() && !end_label()) return std::nullopt;
  wire.push_back('\0');
  if (wire.size() > kMaxNameWireLength) return std::nullopt;
  return wire;
}

bool IsValidHostname(absl::string_view text) {
  if (text.empty() || text.size() > 253) return false;
  for (absl::string_view label : absl::StrSplit(text, '.')) {
    if (label.empty() || label.size() > kMaxLabelLength) return false;
    if (label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
  }
  return true;
}

std::optional<IpAddress> ParseReverseName(absl::string_view text) {
  std::string lower = absl::AsciiStrToLower(text);
  absl::string_view name = lower;
  std::vector<absl::string_view> labels = absl::StrSplit(name, '.');
  if (absl::EndsWith(name, ".in-addr.arpa")) {
    if (labels.size() != 6) return std::nullopt;
    uint32_t v4 = 0;
    for (int i = 3; i >= 0; --i) {
      absl::string_view l = labels[static_cast<size_t>(i)];
      if (l.empty() || l.size() > 3 || (l.size() > 1 && l[0] == '0')) return std::nullopt;
      uint32_t octet = 0;
      for (char c : l) {
        if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
        octet = octet * 10 + static_cast<uint32_t>(c - '0');
      }
      if (octet > 255) return std::nullopt;
      v4 = (v4 << 8) | octet;
    }
    return IpAddress::V4(v4);
  }
  if (absl::EndsWith(name, ".ip6.arpa")) {
    if (labels.size() != 34) return std::nullopt;
    in6_addr a{};
    for (size_t i = 0; i < 32; ++i) {
      absl::string_view l = labels[i];
      if (l.size() != 1 || !absl::ascii_isxdigit(static_cast<unsigned char>(l[0]))) {
        return std::nullopt;
      }
      const int nibble =
          absl::ascii_isdigit(static_cast<unsigned char>(l[0])) ? l[0] - '0' : l[0] - 'a' + 10;
      // Label i is nibble 31 - i of the address, least significant first.
      const size_t n = 31 - i;
      a.s6_addr[n / 2] |= static_cast<uint8_t>(n % 2 ? nibble : nibble << 4);
    }
    return IpAddress::FromIn6(a);
  }
  return std::nullopt;
}

std::string ReverseName(const IpAddress& ip) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  const uint8_t* b = ip.bytes();
  if (ip.is_v4()) {
    for (int i = 3; i >= 0; --i) {
      out += std::to_string(b[i]);
      out.push_back('.');
    }
    return out + "in-addr.arpa";
  }
  for (int i = 15; i >= 0; --i) {
    out.push_back(kHex[b[i] & 0xF]);
    out.push_back('.');
    out.push_back(kHex[b[i] >> 4]);
    out.push_back('.');
  }
  return out + "ip6.arpa";
}

}  // namespace usentry::sentry::net::dns
