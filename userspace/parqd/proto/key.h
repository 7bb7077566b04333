// SPDX-License-Identifier: GPL-2.0
//
// The pre-shared cluster key for the HMAC-SHA-256 of credit messages.
//
// A key file holds the key as hex digits, optionally followed by white
// space (e.g. the output of `openssl rand -hex 32`); any other text is
// refused.  It must be a regular file owned by the process's user or root
// that others cannot access and its group can at most read, and then only
// when that group is the process's or root's (0640 root:parqd, or 0600),
// and the key must be kMinBytes..kMaxBytes long.

#ifndef PARQD_PROTO_KEY_H
#define PARQD_PROTO_KEY_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

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

  // HMAC-SHA-256 of `data` under this key into `mac` (32 bytes); false
  // when the crypto library failed.  The two hash states after the key's
  // inner and outer pads are computed once, when the key is made, and
  // shared by its copies: a MAC then costs the message's hashing only.
  bool Hmac(std::span<const uint8_t> data, std::span<uint8_t, 32> mac) const;

 private:
  struct Pads;  // key.cc
  explicit Key(std::vector<uint8_t> bytes);
  std::vector<uint8_t> bytes_;
  std::shared_ptr<const Pads> pads_;  // null: the crypto library failed
};

// The keys credit messages are made and checked with, by key id (the
// header's key id field) and peer.  A key is either the cluster's, shared
// by every host (key-file), or one pair's (keys-file): then a host holds
// only the keys of the pairs it is part of, and a compromised host can
// forge nothing between two others.  A host accepts a message under any
// key it holds for its sender and makes its own under `send_id`, so that
// a cluster can roll from one key to the next without a flag day
// (Documentation/parqd-protocol.md, "Keys").
class KeyRing {
 public:
  // (key id, peer node id) -> key.
  using PairKeys = std::map<std::pair<uint32_t, uint64_t>, Key>;

  // Cluster keys, by id.  Fails, saying why, on no key, a key id 0, or a
  // send id not held.
  static Result<KeyRing, std::string> Create(std::map<uint32_t, Key> keys,
                                             uint32_t send_id);
  // One cluster key under id `id` (key-file), also the send key.
  static Result<KeyRing, std::string> Cluster(uint32_t id, Key key);
  // Pair keys.  The same failures; whether every peer has a key of the
  // send id is MissingSendKeys()'s question.
  static Result<KeyRing, std::string> CreatePairs(PairKeys keys,
                                                  uint32_t send_id);

  // The key of id `id` for messages from or to `peer`, or nullptr.
  const Key* Find(uint32_t id, uint64_t peer) const;
  uint32_t send_id() const { return send_id_; }
  // Find(send_id(), peer).
  const Key* SendKey(uint64_t peer) const { return Find(send_id_, peer); }
  // Those of `peers` this ring holds no send key for.
  std::vector<uint64_t> MissingSendKeys(
      const std::vector<uint64_t>& peers) const;

 private:
  // The peer of a cluster key: no node id is this large (they are
  // 0..2^63-1).
  static constexpr uint64_t kAnyPeer = UINT64_MAX;

  KeyRing(PairKeys keys, uint32_t send_id)
      : keys_(std::move(keys)), send_id_(send_id) {}
  PairKeys keys_;
  uint32_t send_id_;
};

// The key of the pair of hosts `a` and `b` (in either order) under id
// `id`, derived from the cluster secret `secret`:
//   HMAC-SHA-256(secret, "parq pair key v1" 0x00 || id (4 bytes) ||
//                min(a, b) (8 bytes) || max(a, b) (8 bytes)), big-endian.
// Only the host that holds the secret (an operator's, not a cluster
// member's) can derive every pair's key.
Result<Key, std::string> DerivePairKey(const Key& secret, uint32_t id,
                                       uint64_t a, uint64_t b);

// The bytes of the secret file `path` (at most `max` of them), once it is
// checked to be a regular file that this process's user (or root) owns,
// that others cannot access, and that its group can at most read, and then
// only when the group is this process's (parqd's, under the unit) or root's:
// mode 0640 root:parqd, or 0600.  The checks are of the opened file.
// Errors start with "<what> <path>: ".  The caller wipes the bytes.
Result<std::vector<uint8_t>, std::string> ReadSecretFile(
    const std::string& what, const std::string& path, size_t max);

// A keys file: lines "KEY-ID PEER-NODE-ID HEX-KEY", '#' comments and blank
// lines, the file owned and of a mode as a key file.
// Errors name the file and the line.
Result<KeyRing::PairKeys, std::string> PairKeysFromFile(
    const std::string& path);
// The text of such a file for node `self`: the keys of id `id` of its
// pairs with `peers`.
struct PairKeysFileText {
  std::string text;
};
Result<PairKeysFileText, std::string> PairKeysText(
    const Key& secret, uint32_t id, uint64_t self,
    const std::vector<uint64_t>& peers);

}  // namespace parq::parqd

#endif
