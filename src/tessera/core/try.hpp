#pragma once
// Early-return helpers for Result/Status, in the spirit of absl's ASSIGN_OR_RETURN:
//   TESSERA_TRY(status_expr);                     returns the error if the Status failed
//   TESSERA_ASSIGN_OR_RETURN(auto x, result_expr); declares/assigns x or returns the error

#define TESSERA_CONCAT_INNER(a, b) a##b
#define TESSERA_CONCAT(a, b) TESSERA_CONCAT_INNER(a, b)

#define TESSERA_TRY(expr)                                             \
  do {                                                                \
    auto&& tessera_try_result_ = (expr);                              \
    if (!tessera_try_result_) {                                       \
      return std::unexpected(std::move(tessera_try_result_).error()); \
    }                                                                 \
  } while (0)

#define TESSERA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)       \
  auto tmp = (expr);                                        \
  if (!tmp) return std::unexpected(std::move(tmp).error()); \
  lhs = std::move(*tmp)

#define TESSERA_ASSIGN_OR_RETURN(lhs, expr) \
  TESSERA_ASSIGN_OR_RETURN_IMPL(TESSERA_CONCAT(tessera_result_, __LINE__), lhs, expr)
