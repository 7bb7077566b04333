// SPDX-License-Identifier: GPL-2.0

#include "base/dscp.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <linux/parq.h>

namespace parq::parqd {

namespace {

const std::map<uint8_t, const char*>& DscpNames() {
  static const std::map<uint8_t, const char*> names = {
      {0, "cs0"},   {8, "cs1"},   {16, "cs2"},  {24, "cs3"},  {32, "cs4"},
      {40, "cs5"},  {48, "cs6"},  {56, "cs7"},  {10, "af11"}, {12, "af12"},
      {14, "af13"}, {18, "af21"}, {20, "af22"}, {22, "af23"}, {26, "af31"},
      {28, "af32"}, {30, "af33"}, {34, "af41"}, {36, "af42"}, {38, "af43"},
      {46, "ef"}};
  return names;
}

}  // namespace

std::string DscpName(uint8_t dscp) {
  const auto it = DscpNames().find(dscp);
  return it != DscpNames().end() ? it->second : std::to_string(dscp);
}

std::optional<uint8_t> ParseDscp(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  for (const auto& [value, name] : DscpNames())
    if (lower == name)
      return value;
  const bool digits =
      !text.empty() && text.size() <= 2 &&
      std::all_of(text.begin(), text.end(),
                  [](unsigned char c) { return std::isdigit(c) != 0; });
  if (digits) {
    const unsigned long v = std::stoul(text);
    if (v <= PARQ_DSCP_MAX)
      return static_cast<uint8_t>(v);
  }
  return std::nullopt;
}

}  // namespace parq::parqd
