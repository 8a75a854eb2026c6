// Result<T>: a value or an ErrorCode, never both. Errors are values in
// Shelfmark; exceptions are converted at library boundaries (kj, capnp).
#pragma once

#include <cassert>
#include <utility>
#include <variant>

#include "common/error_code.h"

namespace shelfmark {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Result(ErrorCode error) : state_(error) {      // NOLINT: implicit by design
    assert(error != ErrorCode::OK && "an error Result needs a non-OK code");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  // OK when the result holds a value.
  ErrorCode error() const {
    return ok() ? ErrorCode::OK : std::get<ErrorCode>(state_);
  }

  // Precondition: ok().
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, ErrorCode> state_;
};

}  // namespace shelfmark
