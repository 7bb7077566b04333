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
#include <map>
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

// The keys credit messages are made and checked with, by key id (the
// header's key id field).  A host accepts a message under any key it
// holds and makes its own under `send_id`, so that a cluster can roll
// from one key to the next without a flag day
// (Documentation/parqd-protocol.md, "Keys").
class KeyRing {
 public:
  // Fails, saying why, on no key, a key id 0, or a send id not held.
  static Result<KeyRing, std::string> Create(std::map<uint32_t, Key> keys,
                                             uint32_t send_id);

  // The key of id `id`, or nullptr.
  const Key* Find(uint32_t id) const;
  uint32_t send_id() const { return send_id_; }
  const Key& send_key() const { return keys_.at(send_id_); }

 private:
  KeyRing(std::map<uint32_t, Key> keys, uint32_t send_id)
      : keys_(std::move(keys)), send_id_(send_id) {}
  std::map<uint32_t, Key> keys_;
  uint32_t send_id_;
};

}  // namespace parq::parqd

#endif
