// SPDX-License-Identifier: GPL-2.0
//
// Reading parq's TOML files (parqd.toml, the cluster topology) strictly:
// every value is checked for its type and range, and every error names
// the file, the line and column, the key, what is wrong and what to write
// instead.

#ifndef PARQD_BASE_TOML_READ_H
#define PARQD_BASE_TOML_READ_H

#include <cstdint>
#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "base/address.h"
#include "base/result.h"

namespace parq::parqd {

// A parsed document (Result needs value and error types to differ).
struct TomlDoc {
  toml::table table;
};

// `source` names the text in messages (a file's path).  Errors: "FILE:
// LINE:COL: not valid TOML: ...".
Result<TomlDoc, std::string> ParseToml(std::string_view text,
                                       std::string_view source);

// Where a node is, for messages: "file:line:col", or "command line" for a
// value that came from no file.
std::string TomlWhere(std::string_view source, const toml::node& n);

// A string value (Result needs value and error types to differ).
struct Str {
  std::string text;
};

class TomlReader {
 public:
  explicit TomlReader(std::string_view source) : source_(source) {}

  // "FILE:LINE:COL: 'KEY': WHAT".
  std::string Err(const toml::node& n, std::string_view key,
                  const std::string& what) const;

  // A non-empty string.
  Result<Str, std::string> String(const toml::node& n,
                                  std::string_view key) const;
  // An integer in [min, max].
  Result<uint64_t, std::string> Integer(const toml::node& n,
                                        std::string_view key, int64_t min,
                                        int64_t max) const;
  // A duration string (ParseDuration), in ns.
  Result<uint64_t, std::string> Duration(const toml::node& n,
                                         std::string_view key) const;
  // An IPv4 or IPv6 address string.
  Result<Address, std::string> Addr(const toml::node& n,
                                    std::string_view key) const;

 private:
  std::string_view source_;
};

}  // namespace parq::parqd

#endif
