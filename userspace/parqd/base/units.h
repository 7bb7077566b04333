// SPDX-License-Identifier: GPL-2.0
//
// Numbers with a unit, as parq's files and command lines write durations
// ("1.5ms") and rates ("2.5gbit"): a whole part, an optional decimal
// fraction, then exactly one unit.

#ifndef PARQD_BASE_UNITS_H
#define PARQD_BASE_UNITS_H

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"

namespace parq::parqd {

struct Unit {
  std::string_view name;
  uint64_t scale;  // in the smallest unit
};

// How messages name the quantity.
struct UnitSyntax {
  std::string_view noun;    // "duration", "rate"
  std::string_view hint;    // how to write one
  std::string_view finest;  // "a nanosecond": the smallest unit, in words
};

// The value in the smallest unit, exact, saturated at UINT64_MAX (callers
// bound it).  Errors quote the text and end with what to write: no
// number, no unit or an unknown one, a fraction finer than the smallest
// unit.
Result<uint64_t, std::string> ParseWithUnit(std::string_view text,
                                            std::span<const Unit> units,
                                            const UnitSyntax& syntax);

inline constexpr uint64_t kNsPerUs = 1'000;
inline constexpr uint64_t kNsPerMs = 1'000'000;
inline constexpr uint64_t kNsPerSec = 1'000'000'000;

// How to write a duration, for messages.
inline constexpr const char* kDurationHint =
    "write a number with a unit, e.g. \"1ms\", \"250us\", \"1.5s\" (units: "
    "ns, us, ms, s)";
// "1ms", "250us", "1.5s", "100ns" (a unit is required) -> ns.
Result<uint64_t, std::string> ParseDuration(std::string_view text);
// The shortest exact text ParseDuration reads back: 1000000 -> "1ms".
std::string FormatDuration(uint64_t ns);

}  // namespace parq::parqd

#endif
