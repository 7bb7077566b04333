// SPDX-License-Identifier: GPL-2.0
//
// Result<T, E>: a value or an error, for the parse path (no exceptions).
// Not std::expected: g++ 12's libstdc++ has <expected> under -std=c++23,
// but clang 14 (clang-tidy and the libFuzzer build, Debian bookworm)
// cannot compile that header ("use of undeclared identifier 'std'").

#ifndef PARQD_BASE_RESULT_H
#define PARQD_BASE_RESULT_H

#include <type_traits>
#include <utility>
#include <variant>

namespace parq::parqd {

// Wraps an error so that Result's constructors are never ambiguous.
template <typename E>
struct Err {
  E error;
};

template <typename E>
Err(E) -> Err<E>;

template <typename T, typename E>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<T, E>, "value and error types must differ");

 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  template <typename F>
  Result(Err<F> err) : v_(std::in_place_index<1>, E(std::move(err.error))) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // Precondition: ok().  std::get checks it and throws otherwise, which in
  // this exception-free code base ends the program: a bug, never input.
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  // Precondition: !ok().
  const E& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, E> v_;
};

}  // namespace parq::parqd

#endif
