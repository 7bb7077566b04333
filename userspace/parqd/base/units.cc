// SPDX-License-Identifier: GPL-2.0

#include "base/units.h"

#include "base/satmath.h"

namespace parq::parqd {

Result<uint64_t, std::string> ParseWithUnit(std::string_view text,
                                            std::span<const Unit> units,
                                            const UnitSyntax& syntax) {
  const std::string shown = "\"" + std::string(text) + "\"";
  size_t i = 0;
  uint64_t whole = 0;
  bool digits = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; i++) {
    whole = SatAdd(SatMul(whole, 10), static_cast<uint64_t>(text[i] - '0'));
    digits = true;
  }
  std::string_view frac;
  if (i < text.size() && text[i] == '.') {
    const size_t start = ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9')
      i++;
    frac = text.substr(start, i - start);
    digits = digits || !frac.empty();
  }
  if (!digits)
    return Err{shown + " is not a " + std::string(syntax.noun) + "; " +
               std::string(syntax.hint)};
  const std::string_view name = text.substr(i);
  const Unit* u = nullptr;
  for (const Unit& c : units)
    if (c.name == name)
      u = &c;
  if (!u)
    return Err{shown +
               (name.empty() ? " has no unit; " : " has an unknown unit; ") +
               std::string(syntax.hint)};
  uint64_t v = SatMul(whole, u->scale);
  uint64_t scale = u->scale;
  for (char c : frac) {
    const auto d = static_cast<uint64_t>(c - '0');
    if (scale % 10 != 0) {
      if (d != 0)
        return Err{shown + " is finer than " + std::string(syntax.finest) +
                   "; round it"};
      continue;
    }
    scale /= 10;
    v = SatAdd(v, d * scale);
  }
  return v;
}

namespace {

constexpr Unit kUnits[] = {
    {"ns", 1}, {"us", kNsPerUs}, {"ms", kNsPerMs}, {"s", kNsPerSec}};

}  // namespace

Result<uint64_t, std::string> ParseDuration(std::string_view text) {
  auto ns =
      ParseWithUnit(text, kUnits, {"duration", kDurationHint, "a nanosecond"});
  if (ns.ok() && ns.value() == kU64Max)
    return Err{"\"" + std::string(text) + "\" is too long"};
  return ns;
}

std::string FormatDuration(uint64_t ns) {
  for (auto it = std::rbegin(kUnits); it != std::rend(kUnits); ++it)
    if (ns != 0 && ns % it->scale == 0)
      return std::to_string(ns / it->scale) + std::string(it->name);
  return std::to_string(ns) + "ns";
}

}  // namespace parq::parqd
