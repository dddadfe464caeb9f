// Test-only helpers for the DNS codec tests: hand-assembled packets, written byte by
// byte here rather than with the codec, so the tests do not check the codec against
// itself.
#ifndef USENTRY_SENTRY_NET_DNS_TEST_UTIL_H_
#define USENTRY_SENTRY_NET_DNS_TEST_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace usentry::sentry::net::dns::testing {

inline void Put16(std::string& s, uint16_t v) {
  s.push_back(static_cast<char>(v >> 8));
  s.push_back(static_cast<char>(v));
}

// "www.example.com" -> "\3www\7example\3com\0" (plain labels only).
inline std::string Wire(absl::string_view name) {
  std::string out;
  if (!name.empty()) {
    for (absl::string_view label : absl::StrSplit(name, '.')) {
      out.push_back(static_cast<char>(label.size()));
      out.append(label.data(), label.size());
    }
  }
  out.push_back('\0');
  return out;
}

inline std::string Header(uint16_t id, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ns,
                          uint16_t ar) {
  std::string h;
  for (uint16_t v : {id, flags, qd, an, ns, ar}) Put16(h, v);
  return h;
}

// An OPT record: root owner, `udp_size`, `version`, and `options` as rdata.
inline std::string Opt(uint16_t udp_size, uint8_t version = 0, absl::string_view options = "") {
  std::string r(1, '\0');
  Put16(r, 41);
  Put16(r, udp_size);
  r.push_back('\0');  // extended rcode
  r.push_back(static_cast<char>(version));
  Put16(r, 0);
  Put16(r, static_cast<uint16_t>(options.size()));
  r.append(options.data(), options.size());
  return r;
}

// A standard query with RD set, as a stub resolver sends it.
inline std::string MakeQuery(uint16_t id, absl::string_view name, uint16_t type,
                             std::optional<uint16_t> edns_size = std::nullopt) {
  std::string q = Header(id, 0x0100, 1, 0, 0, edns_size ? 1 : 0);
  q += Wire(name);
  Put16(q, type);
  Put16(q, 1);
  if (edns_size) q += Opt(*edns_size);
  return q;
}

inline std::string Hex(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    absl::StrAppendFormat(&out, "%s%02x", i % 16 ? " " : (i ? "\n" : ""),
                          static_cast<unsigned char>(s[i]));
  }
  return out;
}

}  // namespace usentry::sentry::net::dns::testing

#endif  // USENTRY_SENTRY_NET_DNS_TEST_UTIL_H_
