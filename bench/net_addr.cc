// net_bench's addresses: formatting, and the --target rule (see net_addr.h).
#include "bench/net_addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace usentry::bench {
namespace {

constexpr char kHostAlias[] = "host.usentry.internal";

std::string Format(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
    inet_ntop(AF_INET, &a.sin_addr, host, sizeof(host));
    return absl::StrCat(host, ":", ntohs(a.sin_port));
  }
  const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
  inet_ntop(AF_INET6, &a.sin6_addr, host, sizeof(host));
  return absl::StrCat("[", host, "]:", ntohs(a.sin6_port));
}

// An IPv4 or IPv6 literal as a socket address with `port`.
std::optional<SockAddr> Literal(const std::string& host, uint16_t port) {
  SockAddr a;
  auto& in = reinterpret_cast<sockaddr_in&>(a.ss);
  auto& in6 = reinterpret_cast<sockaddr_in6&>(a.ss);
  if (inet_pton(AF_INET, host.c_str(), &in.sin_addr) == 1) {
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    a.len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &in6.sin6_addr) == 1) {
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(port);
    a.len = sizeof(sockaddr_in6);
  } else {
    return std::nullopt;
  }
  a.text = Format(a.ss);
  return a;
}

bool IsLoopback(const SockAddr& a) {
  if (a.ss.ss_family == AF_INET) {
    uint32_t ip = ntohl(reinterpret_cast<const sockaddr_in&>(a.ss).sin_addr.s_addr);
    return (ip >> 24) == 127;
  }
  return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6&>(a.ss).sin6_addr);
}

// The address `hosts_file` gives `name` (the first line that lists it), if any.
std::optional<std::string> FromHostsFile(const std::string& hosts_file, const std::string& name) {
  std::ifstream in(hosts_file);
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string addr, alias;
    if (!(words >> addr)) continue;
    while (words >> alias) {
      if (absl::AsciiStrToLower(alias) == name) return addr;
    }
  }
  return std::nullopt;
}

}  // namespace

SockAddr Loopback4(uint16_t port) {
  SockAddr a;
  auto& in = reinterpret_cast<sockaddr_in&>(a.ss);
  in.sin_family = AF_INET;
  in.sin_port = htons(port);
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.len = sizeof(sockaddr_in);
  a.text = Format(a.ss);
  return a;
}

absl::StatusOr<SockAddr> ParseTarget(absl::string_view text, const std::string& hosts_file) {
  size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "': expected HOST:PORT"));
  }
  std::string host = absl::AsciiStrToLower(text.substr(0, colon));
  uint32_t port = 0;
  if (!absl::SimpleAtoi(text.substr(colon + 1), &port) || port == 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "': expected a port 1-65535"));
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost") host = "127.0.0.1";
  if (host == kHostAlias) {
    std::optional<std::string> addr = FromHostsFile(hosts_file, kHostAlias);
    if (!addr) {
      return absl::NotFoundError(absl::StrCat(kHostAlias, " is not in ", hosts_file,
                                              " (only a usentry sandbox run with "
                                              "--allow-host-port has it)"));
    }
    std::optional<SockAddr> a = Literal(*addr, static_cast<uint16_t>(port));
    if (!a) {
      return absl::InvalidArgumentError(
          absl::StrCat(hosts_file, " gives ", kHostAlias, " '", *addr, "', not an address"));
    }
    return *a;
  }
  std::optional<SockAddr> a = Literal(host, static_cast<uint16_t>(port));
  if (!a || !IsLoopback(*a)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text, "': the peer must be a loopback address, localhost or ", kHostAlias));
  }
  return *a;
}

}  // namespace usentry::bench
