// SysResult<T>: a syscall-domain result (sentry handlers, gofer client), a value or a Linux errno.
// No exceptions and no allocation on the error path. absl::Status is for setup code; convert at the
// boundary.
#ifndef USENTRY_BASE_SYS_RESULT_H_
#define USENTRY_BASE_SYS_RESULT_H_

#include <cerrno>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <variant>

namespace usentry {

// Kernel-internal errnos that never reach the app: the syscall is restarted or turned
// into EINTR depending on the signal disposition (same values as Linux).
inline constexpr int kERestartSys = 512;
inline constexpr int kERestartNoIntr = 513;
inline constexpr int kERestartNoHand = 514;
inline constexpr int kERestartRestartBlock = 516;

// Wraps an errno so that SysResult<int> can be built unambiguously from an error.
struct Errno {
  int value;
};

template <typename T>
class [[nodiscard]] SysResult {
 public:
  SysResult(T v) : v_(std::move(v)) {}  // NOLINT: implicit by design
  SysResult(Errno e) : v_(e) {}         // NOLINT
  bool ok() const { return v_.index() == 0; }
  int error() const { return ok() ? 0 : std::get<1>(v_).value; }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Errno> v_;
};

template <>
class [[nodiscard]] SysResult<void> {
 public:
  SysResult() = default;
  SysResult(Errno e) : err_(e.value) {}  // NOLINT
  bool ok() const { return err_ == 0; }
  int error() const { return err_; }

 private:
  int err_ = 0;
};

using SysStatus = SysResult<void>;
inline SysStatus SysOk() { return {}; }

}  // namespace usentry

#define USENTRY_SYS_CONCAT_INNER_(a, b) a##b
#define USENTRY_SYS_CONCAT_(a, b) USENTRY_SYS_CONCAT_INNER_(a, b)

// RETURN_IF_ERRNO(expr): expr is a SysResult<...>; returns its errno if it failed.
#define RETURN_IF_ERRNO(expr)                                          \
  do {                                                                 \
    auto _usentry_r = (expr);                                          \
    if (!_usentry_r.ok()) return ::usentry::Errno{_usentry_r.error()}; \
  } while (0)

// ASSIGN_OR_RETURN_ERRNO(lhs, expr): unwraps a SysResult<T> or returns its errno.
#define ASSIGN_OR_RETURN_ERRNO(lhs, expr) \
  ASSIGN_OR_RETURN_ERRNO_IMPL_(USENTRY_SYS_CONCAT_(_usentry_sr_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_ERRNO_IMPL_(tmp, lhs, expr)   \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return ::usentry::Errno{tmp.error()}; \
  lhs = std::move(tmp).value()

#endif  // USENTRY_BASE_SYS_RESULT_H_
