// SPDX-License-Identifier: GPL-2.0
//
// Keys, addresses and messages for the parqd tests.

#ifndef PARQD_TESTS_TEST_UTIL_H
#define PARQD_TESTS_TEST_UTIL_H

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/address.h"
#include "proto/key.h"
#include "proto/wire.h"

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

// A key ring holding TestKey() under id 1.
inline KeyRing TestKeys() {
  return KeyRing::Cluster(1, TestKey()).value();
}

// `time`: the sender's CLOCK_REALTIME stamp, ns.
inline wire::Message Grant(uint64_t sender, uint64_t time, uint64_t seq,
                           uint64_t credit, std::vector<Address> to) {
  wire::Message m;
  m.type = wire::Type::kGrant;
  m.sender = sender;
  m.time_ns = time;
  m.sequence = seq;
  m.credit = credit;
  m.epoch_us = 10'000;  // 10 ms
  m.lease = 3;          // 30 ms
  m.addresses = std::move(to);
  return m;
}

inline wire::Message Release(uint64_t sender, uint64_t time, uint64_t seq,
                             std::vector<Address> to) {
  wire::Message m = Grant(sender, time, seq, 0, std::move(to));
  m.type = wire::Type::kRelease;
  m.lease = 0;
  return m;
}

// The address of the host the tests' messages are sent to (the MAC
// covers it): no peer's.
inline Address Recipient() {
  return A("198.51.100.7");
}

inline std::vector<uint8_t> Bytes(const wire::Message& m,
                                  const Key& key = TestKey(),
                                  const Address& to = Recipient()) {
  return wire::Encode(m, key, to).value();
}

// Rewrites the MAC of `d` (whatever its framing says) so that a test can
// reach the checks after authentication.
inline void Resign(std::vector<uint8_t>& d, const Key& key = TestKey(),
                   const Address& to = Recipient()) {
  const size_t off = d.size() - wire::kMacBytes;
  auto mac = wire::MessageMac(key, std::span<const uint8_t>(d).first(off), to);
  std::copy(mac.value().begin(), mac.value().end(), d.begin() + off);
}

// A fresh directory under /tmp ("/tmp/<name>.XXXXXX"), for a test's
// files.  Remove() deletes it and what it holds: true if it did.
class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    std::string tmpl = "/tmp/" + name + ".XXXXXX";
    if (mkdtemp(tmpl.data()))
      path_ = tmpl;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() { Remove(); }
  // Empty if mkdtemp() failed.
  const std::string& path() const { return path_; }
  bool Remove() {
    if (path_.empty())
      return true;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    if (ec)
      return false;
    path_.clear();
    return true;
  }

 private:
  std::string path_;
};

}  // namespace parq::parqd::test

#endif
