// Small status helpers. Debian's Abseil 20220623 ships neither
// RETURN_IF_ERROR nor ASSIGN_OR_RETURN, so the project keeps its own.
#ifndef UNDERSTUDY_BASE_STATUS_MACROS_H_
#define UNDERSTUDY_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns the status of `expr` from the enclosing function unless it is OK.
#define US_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::absl::Status us_status_ = (expr);          \
    if (!us_status_.ok()) return us_status_;     \
  } while (0)

#define US_STATUS_CONCAT_INNER_(a, b) a##b
#define US_STATUS_CONCAT_(a, b) US_STATUS_CONCAT_INNER_(a, b)

// `US_ASSIGN_OR_RETURN(auto x, F());` declares `x` from an OK StatusOr, or
// returns its status from the enclosing function.
#define US_ASSIGN_OR_RETURN(lhs, expr) \
  US_ASSIGN_OR_RETURN_IMPL_(US_STATUS_CONCAT_(us_statusor_, __LINE__), lhs, expr)

#define US_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                              \
  if (!statusor.ok()) return statusor.status();        \
  lhs = std::move(statusor).value()

#endif  // UNDERSTUDY_BASE_STATUS_MACROS_H_
