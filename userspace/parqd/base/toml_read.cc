// SPDX-License-Identifier: GPL-2.0

#include "base/toml_read.h"

#include <algorithm>
#include <cstdint>

#include "base/units.h"

namespace parq::parqd {

namespace {

std::string Quoted(std::string_view key) {
  return "'" + std::string(key) + "'";
}

}  // namespace

Result<TomlDoc, std::string> ParseToml(std::string_view text,
                                       std::string_view source) {
  try {
    return TomlDoc{toml::parse(text, source)};
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return Err{std::string(source) + ":" + std::to_string(b.line) + ":" +
               std::to_string(b.column) +
               ": not valid TOML: " + std::string(e.description())};
  }
}

std::string TomlWhere(std::string_view source, const toml::node& n) {
  const auto& b = n.source().begin;
  if (b.line == 0)
    return "command line";
  return std::string(source) + ":" + std::to_string(b.line) + ":" +
         std::to_string(b.column);
}

std::string TomlReader::Err(const toml::node& n, std::string_view key,
                            const std::string& what) const {
  return TomlWhere(source_, n) + ": " + Quoted(key) + ": " + what;
}

Result<Str, std::string> TomlReader::String(const toml::node& n,
                                            std::string_view key) const {
  if (const auto* s = n.as_string()) {
    if (s->get().empty())
      return parqd::Err{
          Err(n, key, "is empty; give a value or leave the key out")};
    return Str{s->get()};
  }
  return parqd::Err{Err(n, key, "must be a string (in double quotes)")};
}

Result<uint64_t, std::string> TomlReader::Integer(const toml::node& n,
                                                  std::string_view key,
                                                  int64_t min,
                                                  int64_t max) const {
  const auto* i = n.as_integer();
  if (!i)
    return parqd::Err{Err(n, key, "must be an integer (no quotes)")};
  const int64_t v = i->get();
  if (v < min || v > max)
    return parqd::Err{Err(n, key,
                          "is " + std::to_string(v) + "; give a value from " +
                              std::to_string(min) + " to " +
                              std::to_string(max))};
  return static_cast<uint64_t>(v);
}

Result<uint64_t, std::string> TomlReader::Duration(const toml::node& n,
                                                   std::string_view key) const {
  const auto* s = n.as_string();
  if (!s)
    return parqd::Err{
        Err(n, key, std::string("must be a string: ") + kDurationHint)};
  auto d = ParseDuration(s->get());
  if (!d.ok())
    return parqd::Err{Err(n, key, d.error())};
  return d.value();
}

Result<Address, std::string> TomlReader::Addr(const toml::node& n,
                                              std::string_view key) const {
  auto s = String(n, key);
  if (!s.ok())
    return parqd::Err{s.error()};
  auto a = Address::Parse(s.value().text);
  if (!a)
    return parqd::Err{
        Err(n, key,
            "\"" + s.value().text +
                "\" is not an IPv4 or IPv6 address (write e.g. "
                "\"192.0.2.1\" or \"2001:db8::1\", no port, no name)")};
  // The kernel and the credit messages' recipient see such an address as
  // the IPv4 address it carries; parqd takes it only written so.
  const auto& b = a->bytes;
  if (a->family == Family::kIPv6 &&
      std::all_of(b.begin(), b.begin() + 10, [](uint8_t x) { return !x; }) &&
      b[10] == 0xff && b[11] == 0xff)
    return parqd::Err{
        Err(n, key,
            "\"" + s.value().text +
                "\" is an IPv4-mapped IPv6 address; write it "
                "as \"" +
                Address::V4({b[12], b[13], b[14], b[15]}).ToString() + "\"")};
  return *a;
}

}  // namespace parq::parqd
