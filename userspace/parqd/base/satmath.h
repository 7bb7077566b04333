// SPDX-License-Identifier: GPL-2.0
//
// Saturating u64 arithmetic for times in ns: an expiry that would pass
// UINT64_MAX is UINT64_MAX ("never, for this process"), never a wrap to the
// past.

#ifndef PARQD_BASE_SATMATH_H
#define PARQD_BASE_SATMATH_H

#include <cstdint>
#include <limits>

namespace parq::parqd {

inline constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

constexpr uint64_t SatAdd(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? kU64Max : r;
}

constexpr uint64_t SatMul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? kU64Max : r;
}

// now - then, or 0 when `then` is not in the past (clock steps, reordered
// observations): an event "in the future" counts as just seen.
constexpr uint64_t Elapsed(uint64_t now, uint64_t then) {
  return now > then ? now - then : 0;
}

}  // namespace parq::parqd

#endif
