// SPDX-License-Identifier: GPL-2.0
//
// Numbers with a unit, as parq's files and command lines write durations
// ("1.5ms") and rates ("2.5gbit"): a whole part, an optional decimal
// fraction, then exactly one unit.

#ifndef PARQD_UNITS_H
#define PARQD_UNITS_H

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "result.h"

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

}  // namespace parq::parqd

#endif
