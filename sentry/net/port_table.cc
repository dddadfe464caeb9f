// PortTable: bind conflicts and ephemeral ports.
#include "sentry/net/port_table.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace usentry::sentry::net {
namespace {

enum class V6Kind { kAny, kMapped, kOther };

V6Kind KindOf(const BindingInfo& b) {
  if (!b.v6_socket) return V6Kind::kMapped;  // an IPv4 socket compares like a mapped one
  if (b.v6.IsV4Mapped()) return V6Kind::kMapped;
  if (b.v6.IsUnspecified()) return V6Kind::kAny;
  return V6Kind::kOther;
}

bool V4Equal(const IpAddress& a, const IpAddress& b) {
  return a == b || a.IsUnspecified() || b.IsUnspecified();
}

// Linux's inet_rcv_saddr_equal(new, existing, match_wildcard=true).
bool SaddrEqual(const BindingInfo& a, const BindingInfo& b) {
  if (!a.v6_socket) return !b.v6only && V4Equal(a.v4, b.v4);
  V6Kind ka = KindOf(a), kb = KindOf(b);
  if (ka == V6Kind::kMapped && kb == V6Kind::kMapped) return !b.v6only && V4Equal(a.v4, b.v4);
  if (ka == V6Kind::kAny && kb == V6Kind::kAny) return true;
  if (kb == V6Kind::kAny && !(b.v6only && ka == V6Kind::kMapped)) return true;
  if (ka == V6Kind::kAny && !(a.v6only && kb == V6Kind::kMapped)) return true;
  return b.v6_socket && a.v6 == b.v6;
}

bool ReuseportShared(const BindingInfo& a, const BindingInfo& b) {
  return a.reuseport && b.reuseport && a.uid == b.uid;
}

}  // namespace

bool PortTable::Conflict(const BindingInfo& a, const BindingInfo& b) const {
  if (tcp_) {
    // SO_REUSEADDR on both sides shares a port, but never with a listener.
    bool shared = (a.reuseaddr && b.reuseaddr && !b.listening) || ReuseportShared(a, b);
    return !shared && SaddrEqual(a, b);
  }
  if (a.reuseaddr && b.reuseaddr) return false;
  return SaddrEqual(a, b) && !ReuseportShared(a, b);
}

bool PortTable::ConflictsOnPort(const PortUser* u, const BindingInfo& want, uint16_t port) const {
  for (const PortUser* other : Users(port)) {
    if (other != u && Conflict(want, other->binding())) return true;
  }
  return false;
}

uint16_t PortTable::NextCandidate() {
  // Ports need not be unpredictable inside the sandbox; they only should not repeat
  // the same sequence in every run. A Weyl sequence over the range visits every port.
  if (!seeded_) {
    seed_ = static_cast<uint32_t>(absl::ToUnixNanos(absl::Now()));
    seeded_ = true;
  }
  constexpr uint32_t kRange = kEphemeralHigh - kEphemeralLow + 1;
  seed_ = (seed_ + 7919) % kRange;  // 7919 is prime and does not divide the range
  return static_cast<uint16_t>(kEphemeralLow + seed_);
}

SysResult<uint16_t> PortTable::Bind(PortUser* u, const BindingInfo& want, uint16_t port,
                                    int exhausted_errno) {
  if (port == 0) {
    constexpr uint32_t kRange = kEphemeralHigh - kEphemeralLow + 1;
    for (uint32_t i = 0; i < kRange; ++i) {
      uint16_t p = NextCandidate();
      auto it = users_.find(p);
      if (it != users_.end() && !it->second.empty()) continue;
      users_[p].push_back(u);
      return p;
    }
    return Errno{exhausted_errno};
  }
  if (ConflictsOnPort(u, want, port)) return Errno{EADDRINUSE};
  users_[port].push_back(u);
  return port;
}

void PortTable::Share(PortUser* u, uint16_t port) { users_[port].push_back(u); }

void PortTable::Unbind(PortUser* u, uint16_t port) {
  auto it = users_.find(port);
  if (it == users_.end()) return;
  auto& v = it->second;
  v.erase(std::remove(v.begin(), v.end(), u), v.end());
  if (v.empty()) users_.erase(it);
}

const std::vector<PortUser*>& PortTable::Users(uint16_t port) const {
  static const auto* empty = new std::vector<PortUser*>();
  auto it = users_.find(port);
  return it == users_.end() ? *empty : it->second;
}

}  // namespace usentry::sentry::net
