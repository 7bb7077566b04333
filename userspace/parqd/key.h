// SPDX-License-Identifier: GPL-2.0
//
// The pre-shared cluster key for the HMAC-SHA-256 of credit messages.
//
// A key file holds either the key as hex digits (optionally followed by
// white space, e.g. the output of `openssl rand -hex 32`) or the raw key
// bytes.  It must be a regular file that neither group nor others can read
// or write, and the key must be kMinBytes..kMaxBytes long.

#ifndef PARQD_KEY_H
#define PARQD_KEY_H

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "result.h"

namespace parq::parqd {

class Key {
 public:
  static constexpr size_t kMinBytes = 32;  // the HMAC-SHA-256 output size
  static constexpr size_t kMaxBytes = 1024;

  // Errors name the file, what is wrong and what to do about it.
  static Result<Key, std::string> FromBytes(std::span<const uint8_t> bytes);
  static Result<Key, std::string> FromFile(const std::string& path);

  Key(const Key&) = default;
  Key(Key&&) noexcept = default;
  Key& operator=(const Key&) = default;
  Key& operator=(Key&&) noexcept = default;
  ~Key();  // wipes the bytes

  std::span<const uint8_t> bytes() const { return bytes_; }

 private:
  explicit Key(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  std::vector<uint8_t> bytes_;
};

}  // namespace parq::parqd

#endif
