// SPDX-License-Identifier: GPL-2.0
//
// Keys, addresses and messages for the parqd tests.

#ifndef PARQD_TESTS_TEST_UTIL_H
#define PARQD_TESTS_TEST_UTIL_H

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "address.h"
#include "key.h"
#include "wire.h"

namespace parq::parqd::test {

inline Key MakeKey(uint8_t seed, size_t len = 32) {
  std::vector<uint8_t> b(len);
  for (size_t i = 0; i < len; i++)
    b[i] = static_cast<uint8_t>(seed + 7 * i);
  return Key::FromBytes(b).value();
}

inline const Key& TestKey() {
  static const Key k = MakeKey(1);
  return k;
}

inline Address A(std::string_view text) {
  return Address::Parse(text).value();
}

inline wire::Message Grant(uint64_t sender, uint64_t epoch, uint64_t seq,
                           uint64_t credit, std::vector<Address> to) {
  wire::Message m;
  m.type = wire::Type::kGrant;
  m.sender = sender;
  m.epoch = epoch;
  m.sequence = seq;
  m.credit = credit;
  m.epoch_us = 10'000;  // 10 ms
  m.lease = wire::kDefaultLeaseEpochs;
  m.addresses = std::move(to);
  return m;
}

inline wire::Message Release(uint64_t sender, uint64_t epoch, uint64_t seq,
                             std::vector<Address> to) {
  wire::Message m = Grant(sender, epoch, seq, 0, std::move(to));
  m.type = wire::Type::kRelease;
  m.lease = 0;
  return m;
}

inline std::vector<uint8_t> Bytes(const wire::Message& m,
                                  const Key& key = TestKey()) {
  return wire::Encode(m, key).value();
}

// Rewrites the MAC of `d` (whatever its framing says) so that a test can
// reach the checks after authentication.
inline void Resign(std::vector<uint8_t>& d, const Key& key = TestKey()) {
  const size_t off = d.size() - wire::kMacBytes;
  auto mac = wire::ComputeMac(key, std::span<const uint8_t>(d).first(off));
  std::copy(mac.value().begin(), mac.value().end(), d.begin() + off);
}

}  // namespace parq::parqd::test

#endif
