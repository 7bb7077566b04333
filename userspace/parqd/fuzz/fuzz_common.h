// SPDX-License-Identifier: GPL-2.0
//
// What the fuzz target and its seed generator share: the key, the peers of
// the receive-path mode, and the layout of an input.
//
// An input is a mode byte and a body:
//   mode 0  the body is one datagram, decoded as it is (framing and MAC)
//   mode 1  the same, but the last 32 bytes are first replaced by the right
//           MAC, so that the field checks after the MAC are reached
//   mode 2  the body is a sequence of records, each fed to an Inbox:
//           a control byte (bits 0-1: source address, bit 2: fix the MAC,
//           bits 3-7: time step), a 2-byte big-endian length (taken modulo
//           512), that many bytes of datagram
// Whatever the mode, a datagram that decodes must re-encode to the same
// bytes, and a dropped datagram must leave the credit table as it was.

#ifndef PARQD_FUZZ_FUZZ_COMMON_H
#define PARQD_FUZZ_FUZZ_COMMON_H

#include <array>
#include <cstdint>
#include <vector>

#include "base/address.h"
#include "proto/inbox.h"
#include "proto/key.h"

namespace parq::parqd::fuzz {

enum Mode : uint8_t { kRaw = 0, kFixMac = 1, kReceive = 2, kModes = 3 };

inline constexpr uint8_t kCtlFixMac = 1 << 2;
inline constexpr unsigned kCtlTimeShift = 3;
inline constexpr uint64_t kTimeStepNs = 50'000'000;  // 50 ms per unit

// Mode 2's clocks: CLOCK_MONOTONIC starts at kFirstNs, and CLOCK_REALTIME
// is kRealtimeBase + CLOCK_MONOTONIC; the inbox started at kRealtimeBase
// and allows kMaxSkewNs.
inline constexpr uint64_t kFirstNs = 1'000'000'000;
inline constexpr uint64_t kRealtimeBase = 1'800'000'000'000'000'000;
inline constexpr uint64_t kMaxSkewNs = 500'000'000;

inline const Key& FuzzKey() {
  static const Key key = [] {
    std::array<uint8_t, 32> b{};
    for (size_t i = 0; i < b.size(); i++)
      b[i] = static_cast<uint8_t>(0xa0 + i);
    return Key::FromBytes(b).value();
  }();
  return key;
}

inline KeyRing FuzzKeys() {
  return KeyRing::Cluster(1, FuzzKey()).value();
}

// Index by bits 0-1 of a record's control byte.
inline const std::array<Address, 4>& FuzzSources() {
  static const std::array<Address, 4> s = {
      *Address::Parse("10.0.0.1"), *Address::Parse("10.0.0.2"),
      *Address::Parse("fd00::1"), *Address::Parse("10.0.0.3")};
  return s;
}

// The address every message is sent to: the fuzzed host's own.
inline const Address& FuzzRecipient() {
  static const Address a = *Address::Parse("10.0.0.100");
  return a;
}

// Peer 1 owns sources 0-2, peer 2 owns source 3.
inline std::vector<PeerConfig> FuzzPeers() {
  const auto& s = FuzzSources();
  return {PeerConfig{1, {s[0], s[1], s[2]}}, PeerConfig{2, {s[3]}}};
}

}  // namespace parq::parqd::fuzz

#endif
