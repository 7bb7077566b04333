// SPDX-License-Identifier: GPL-2.0
//
// The parqd credit message on the wire (Documentation/parqd-protocol.md):
// a fixed big-endian header, 1..kMaxAddresses family-tagged addresses, and
// an HMAC-SHA-256 over everything before it and the recipient's address.
//
// The recipient is the address the sender sends the message to, which is
// the destination address of the datagram as the receiving host sees it.
// It is not carried: both ends know it, and a message captured on its way
// to one host fails the MAC at any other, even under a key they share.
//
//   Encode()  validates a Message and returns its bytes, MAC included.
//   Peek()    checks the framing only and returns the two fields that say
//             which key authenticates the message (sender, key id), so
//             that a receiver can drop a message from an unknown source
//             before computing any MAC.  Nothing it returns is trusted.
//   Decode()  is strict: it returns the Message only when every byte is as
//             the format says, else the first WireError found.  It checks
//             the framing (size, magic, version, address count, length)
//             first, then the MAC, and reads the fields only once they are
//             authenticated.  No input makes it read out of bounds.

#ifndef PARQD_PROTO_WIRE_H
#define PARQD_PROTO_WIRE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/address.h"
#include "base/result.h"
#include "proto/key.h"

namespace parq::parqd::wire {

inline constexpr uint32_t kMagic = 0x50525144;  // "PRQD"
inline constexpr uint8_t kVersion = 2;

inline constexpr size_t kHeaderBytes = 64;
inline constexpr size_t kAddressBytes = 20;
inline constexpr size_t kMacBytes = 32;
inline constexpr size_t kMaxAddresses = 16;
inline constexpr size_t kMinMessageBytes =
    kHeaderBytes + kAddressBytes + kMacBytes;  // 116
inline constexpr size_t kMaxMessageBytes =
    kHeaderBytes + kMaxAddresses * kAddressBytes + kMacBytes;  // 416

// Offsets of the header fields.
inline constexpr size_t kOffMagic = 0;
inline constexpr size_t kOffVersion = 4;
inline constexpr size_t kOffType = 5;
inline constexpr size_t kOffFlags = 6;
inline constexpr size_t kOffCount = 7;
inline constexpr size_t kOffSender = 8;
inline constexpr size_t kOffKeyId = 16;
inline constexpr size_t kOffEpochUs = 20;
inline constexpr size_t kOffTime = 24;
inline constexpr size_t kOffSeq = 32;
inline constexpr size_t kOffCredit = 40;
inline constexpr size_t kOffLease = 48;
inline constexpr size_t kOffReserved = 50;  // 14 bytes, to kHeaderBytes

// Field ranges.
inline constexpr uint32_t kMinEpochUs = 100;         // 100 us
inline constexpr uint32_t kMaxEpochUs = 60'000'000;  // 60 s
// 49 epochs: at the default 1 ms epoch a lost RELEASE or a dead receiver
// holds a sender back for at most 49 ms, and a grant of unchanged credit
// is restated every 24 epochs.
inline constexpr uint16_t kDefaultLeaseEpochs = 49;

enum class Type : uint8_t {
  kGrant = 1,    // credit `credit` bytes per epoch to the addresses
  kRelease = 2,  // drop the entries of the addresses: unlimited again
};

enum class WireError : uint8_t {
  // Framing, checked before the MAC.
  kShort,            // fewer than kMinMessageBytes
  kBadMagic,         //
  kBadVersion,       //
  kBadAddressCount,  // 0 or more than kMaxAddresses
  kBadLength,        // shorter than the address count needs
  kTrailingBytes,    // longer than the address count needs
  // Authentication.
  kBadMac,  //
  // Fields, checked once authenticated.
  kBadType,           //
  kBadFlags,          // no flag is defined in version 2
  kBadReserved,       // a reserved byte is not zero
  kBadSequence,       // 0 (sequence numbers start at 1)
  kBadKeyId,          // 0 (key ids start at 1)
  kBadEpochLength,    // outside kMinEpochUs..kMaxEpochUs
  kBadLease,          // GRANT: 0; RELEASE: not 0
  kBadCredit,         // RELEASE: not 0
  kBadAddressFamily,  // neither 4 nor 6
  kBadAddress,        // non-zero padding in an address entry
  kDuplicateAddress,  //
  kCryptoFailure,     // libcrypto failed to compute a MAC
};
inline constexpr size_t kWireErrorCount =
    static_cast<size_t>(WireError::kCryptoFailure) + 1;

// A stable snake_case name, for logs and metric labels.
std::string_view Name(WireError e);

struct Message {
  Type type = Type::kGrant;
  uint64_t sender = 0;    // node id of the granting host
  uint32_t key_id = 1;    // which of the sender's keys made the MAC
  uint64_t time_ns = 0;   // the sender's CLOCK_REALTIME when it sent it
  uint64_t sequence = 0;  // per sender, strictly increasing, from 1
  uint64_t credit = 0;    // bytes per epoch; 0 means stop
  uint32_t epoch_us = 0;  // epoch length
  uint16_t lease = 0;     // in epochs, from when the message is applied
  std::vector<Address> addresses;  // the sender's own addresses

  uint64_t epoch_ns() const { return uint64_t{epoch_us} * 1000; }
  bool operator==(const Message&) const = default;
};

using Mac = std::array<uint8_t, kMacBytes>;

// HMAC-SHA-256 of `data` under `key`.
Result<Mac, WireError> ComputeMac(const Key& key,
                                  std::span<const uint8_t> data);
// A message's MAC: HMAC-SHA-256 under `key` of `body` (every byte before
// the MAC) followed by `recipient` as an address entry (20 bytes);
// kBadLength when `body` is longer than any message's.
Result<Mac, WireError> MessageMac(const Key& key, std::span<const uint8_t> body,
                                  const Address& recipient);

// What Peek() reads from a message whose framing is right.
struct Header {
  uint64_t sender = 0;
  uint32_t key_id = 0;
};

// The first rule of the format `m` breaks, if any.
Result<std::monostate, WireError> Validate(const Message& m);

// `recipient`: where the message is sent (Encode) or where it arrived
// (Decode): the destination address of its datagram.
Result<std::vector<uint8_t>, WireError> Encode(const Message& m, const Key& key,
                                               const Address& recipient);
Result<Header, WireError> Peek(std::span<const uint8_t> bytes);
Result<Message, WireError> Decode(std::span<const uint8_t> bytes,
                                  const Key& key, const Address& recipient);

}  // namespace parq::parqd::wire

#endif
