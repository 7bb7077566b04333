// SPDX-License-Identifier: GPL-2.0
//
// Readers that the key table and the sections share.

#include "config/config_sections.h"

#include "base/units.h"

namespace parq::parqd::config_sections {

std::optional<std::string> ReadDuration(const Reader& r, const toml::node& v,
                                        std::string_view key, uint64_t min,
                                        uint64_t max, std::string_view range,
                                        uint64_t& out) {
  auto d = r.Duration(v, key);
  if (!d.ok())
    return d.error();
  if (d.value() < min || d.value() > max)
    return r.Err(
        v, key,
        "is " + FormatDuration(d.value()) + "; give " + std::string(range));
  out = d.value();
  return std::nullopt;
}

Result<Str, std::string> NonEmpty(const Reader& r, const toml::node& v,
                                  std::string_view key) {
  return r.String(v, key);
}

Result<Str, std::string> AbsolutePath(const Reader& r, const toml::node& v,
                                      std::string_view key,
                                      std::string_view what) {
  auto s = NonEmpty(r, v, key);
  if (s.ok() && s.value().text.front() != '/')
    return Err{r.Err(v, key,
                     "\"" + s.value().text + "\" must be an absolute path" +
                         std::string(what))};
  return s;
}

}  // namespace parq::parqd::config_sections
