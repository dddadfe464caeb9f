// Propagation macros for absl::Status / absl::StatusOr (setup, CLI, gofer, platform code).
#ifndef USENTRY_BASE_STATUS_MACROS_H_
#define USENTRY_BASE_STATUS_MACROS_H_

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#define USENTRY_CONCAT_INNER_(a, b) a##b
#define USENTRY_CONCAT_(a, b) USENTRY_CONCAT_INNER_(a, b)

// RETURN_IF_ERROR(expr): returns the status if it is not OK.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::absl::Status _usentry_st = (expr);       \
    if (!_usentry_st.ok()) return _usentry_st; \
  } while (0)

// ASSIGN_OR_RETURN(lhs, expr): unwraps a StatusOr or returns its status.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(USENTRY_CONCAT_(_usentry_sor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()

namespace usentry {

// ErrnoStatus("ptrace(PTRACE_GETREGS, pid=12)") -> status naming the call and errno.
inline absl::Status ErrnoStatus(const std::string& call, int err = errno) {
  return absl::Status(absl::ErrnoToStatusCode(err),
                      absl::StrCat(call, " failed: ", std::strerror(err)));
}

}  // namespace usentry

#endif  // USENTRY_BASE_STATUS_MACROS_H_
