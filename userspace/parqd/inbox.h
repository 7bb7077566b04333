// SPDX-License-Identifier: GPL-2.0
//
// The inbox of a sending host: one credit message, as bytes from a
// UDP peer, through every check to the credit table.
//
//   decode     framing, HMAC-SHA-256 under the cluster key, fields
//   peer       the sender id is configured, the UDP source address is one
//              of that peer's addresses, and every address it grants for is
//              one of them too (a peer can only limit traffic to itself)
//   replay     the sequence number is fresh in the peer's window
//   staleness  the epoch is not older than the newest accepted from the
//              peer (equal is fine: a restatement within the epoch)
//   apply      to the credit table
//
// A message dropped at any step changes nothing but the counters (and the
// log rate limiter): not the table, not the replay window, not the epoch.
// Each drop is counted by reason and logged at a limited rate.

#ifndef PARQD_INBOX_H
#define PARQD_INBOX_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "address.h"
#include "credit.h"
#include "key.h"
#include "ratelimit.h"
#include "replay.h"
#include "result.h"
#include "wire.h"

namespace parq::parqd {

enum class DropReason : uint8_t {
  kMalformed,       // any WireError but the two below; detail by error
  kBadMac,          // not authenticated by the cluster key
  kCryptoFailure,   // libcrypto failed: a host problem, not the sender's
  kUnknownPeer,     // sender id not configured
  kWrongSource,     // UDP source address not one of the peer's
  kForeignAddress,  // grants for an address that is not the peer's
  kDuplicate,       // sequence number already accepted
  kTooOld,          // sequence number left of the replay window
  kStale,           // epoch older than the newest accepted from the peer
};
inline constexpr size_t kDropReasonCount =
    static_cast<size_t>(DropReason::kStale) + 1;

std::string_view Name(DropReason r);

struct Counters {
  uint64_t received = 0;
  uint64_t accepted = 0;
  uint64_t grants = 0;    // accepted GRANT messages
  uint64_t releases = 0;  // accepted RELEASE messages
  uint64_t expired = 0;   // entries removed because their lease ended
  std::array<uint64_t, kDropReasonCount> dropped{};
  std::array<uint64_t, wire::kWireErrorCount> malformed{};  // by WireError

  uint64_t& drop(DropReason r) { return dropped[static_cast<size_t>(r)]; }
  uint64_t drop(DropReason r) const { return dropped[static_cast<size_t>(r)]; }
  uint64_t dropped_total() const;
};

struct PeerConfig {
  uint64_t id = 0;
  std::vector<Address> addresses;  // where it sends from, what it grants for

  bool operator==(const PeerConfig&) const = default;
};

struct Outcome {
  bool accepted = false;
  DropReason reason = DropReason::kMalformed;  // when !accepted
  std::optional<wire::WireError> error;        // when decoding failed
  std::optional<wire::Message> message;        // when accepted
};

class Inbox {
 public:
  using LogSink = std::function<void(const std::string&)>;

  static constexpr uint32_t kLogBurst = 10;
  static constexpr uint64_t kLogIntervalNs = 1'000'000'000;

  // Fails, naming the problem, on a duplicate peer id, a peer without
  // addresses or an address configured for two peers.
  static Result<Inbox, std::string> Create(Key key,
                                           std::vector<PeerConfig> peers,
                                           LogSink log = {});

  // `now`: CLOCK_MONOTONIC in ns, for lease expiry and log rate limiting.
  Outcome Receive(std::span<const uint8_t> bytes, const Address& from,
                  uint64_t now);

  // Removes expired entries; returns the destinations to unblock.
  std::vector<Address> Expire(uint64_t now);

  const Counters& counters() const { return counters_; }
  const CreditTable& table() const { return table_; }

 private:
  struct Peer {
    std::vector<Address> addresses;
    ReplayWindow window;
    std::optional<uint64_t> epoch;  // newest accepted
  };

  Inbox(Key key, std::map<uint64_t, Peer> peers, LogSink log);
  Outcome Drop(DropReason r, std::optional<wire::WireError> e,
               const Address& from, std::optional<uint64_t> sender,
               uint64_t now);

  Key key_;
  std::map<uint64_t, Peer> peers_;
  CreditTable table_;
  Counters counters_;
  LogSink log_;
  RateLimiter log_limit_{kLogBurst, kLogIntervalNs};
};

}  // namespace parq::parqd

#endif
