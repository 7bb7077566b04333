// SPDX-License-Identifier: GPL-2.0
//
// The inbox of a sending host: one credit message, as bytes from a
// UDP peer, through every check to the credit table.  The cheap checks
// come first, so that a datagram from a stranger costs no MAC:
//
//   framing    size, magic, version, address count (wire::Peek)
//   peer       the sender id is configured and the UDP source address is
//              one of that peer's addresses
//   key        the key id is one this host holds
//   decode     HMAC-SHA-256 under that key, over the message and the
//              datagram's destination address (a message made for another
//              host fails it: bad_mac), then the fields
//   addresses  every address it grants for is the peer's own (a peer can
//              only limit traffic to itself)
//   time       its timestamp is within max_skew of this host's clock, and
//              not from before this host started (plus max_skew), so that
//              nothing recorded before a restart is accepted after it
//   replay     the sequence number is fresh in the peer's window and
//              above the newest accepted (credits are absolute: an older
//              message that arrives late is outdated, not news)
//   apply      to the credit table
//
// Freshness does not compare epoch numbers or rely on a clock that never
// steps back: the timestamp bounds what can be replayed to max_skew, and
// the replay window orders the messages within it.  A peer's window is
// forgotten once every message it accepted is older than max_skew (its
// timestamps), so a peer whose sequence numbers started lower (it
// restarted after its clock stepped back) or that sent a sequence number
// near 2^64 is heard again after at most max_skew of silence.
//
// A message dropped at any step changes nothing but the counters (and the
// log rate limiter): not the table, not the replay window.  Each drop is
// counted by reason and logged at a limited rate.

#ifndef PARQD_PROTO_INBOX_H
#define PARQD_PROTO_INBOX_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/address.h"
#include "base/result.h"
#include "proto/credit.h"
#include "proto/key.h"
#include "proto/ratelimit.h"
#include "proto/replay.h"
#include "proto/wire.h"

namespace parq::parqd {

enum class DropReason : uint8_t {
  kMalformed,       // any WireError but the two below; detail by error
  kUnknownPeer,     // sender id not configured
  kWrongSource,     // UDP source address not one of the peer's
  kUnknownKey,      // a key id this host does not hold
  kBadMac,          // not authenticated by that key
  kCryptoFailure,   // libcrypto failed: a host problem, not the sender's
  kForeignAddress,  // grants for an address that is not the peer's
  kTimeAhead,       // timestamp more than max_skew ahead of this host
  kTimeBehind,      // timestamp more than max_skew behind this host
  kBeforeStart,     // timestamp before this host's start + max_skew
  kDuplicate,       // sequence number already accepted
  kTooOld,          // sequence number left of the replay window
  kStale,           // below the newest accepted: reordered, outdated
};
inline constexpr size_t kDropReasonCount =
    static_cast<size_t>(DropReason::kStale) + 1;

std::string_view Name(DropReason r);

struct Counters {
  uint64_t received = 0;
  uint64_t accepted = 0;
  uint64_t grants = 0;     // accepted GRANT messages
  uint64_t releases = 0;   // accepted RELEASE messages
  uint64_t expired = 0;    // entries removed because their lease ended
  uint64_t forgotten = 0;  // peers' replay windows forgotten (see above)
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

struct Freshness {
  // How far a message's timestamp may be from this host's CLOCK_REALTIME:
  // the clock synchronisation the cluster guarantees, plus network delay.
  uint64_t max_skew_ns = 500'000'000;
  // CLOCK_REALTIME when this host's parqd started: messages stamped before
  // start + max_skew may have been recorded before it and are dropped.
  uint64_t start_ns = 0;

  bool operator==(const Freshness&) const = default;
};

// What a sending host knows of one peer (parqctl peers).
struct PeerStatus {
  // The newest message accepted from the peer.
  struct Last {
    wire::Type type = wire::Type::kGrant;
    uint64_t sequence = 0;
    uint64_t time_ns = 0;  // its timestamp (the peer's CLOCK_REALTIME)
    uint64_t at = 0;       // when it was accepted (CLOCK_MONOTONIC ns)
  };
  uint64_t id = 0;
  std::vector<Address> addresses;
  uint64_t accepted = 0;
  std::optional<Last> last;
  // The datagrams dropped that named this peer as their sender, by
  // reason.  Until the MAC is checked (kBadMac) that name is a claim:
  // anyone who can reach the port can make it.
  std::array<uint64_t, kDropReasonCount> dropped{};
  // The credit the peer's grants hold on this host now: its addresses'
  // entries of the credit table.
  std::vector<std::pair<Address, CreditEntry>> held;
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
  static Result<Inbox, std::string> Create(KeyRing keys,
                                           std::vector<PeerConfig> peers,
                                           Freshness fresh = {},
                                           LogSink log = {});

  // `from`: the datagram's source address; `to`: its destination address,
  // this host's, which the MAC covers (wire.h).  `now`: CLOCK_MONOTONIC in
  // ns, for lease expiry and log rate limiting; `realtime`: CLOCK_REALTIME
  // in ns, for the message's timestamp.
  Outcome Receive(std::span<const uint8_t> bytes, const Address& from,
                  const Address& to, uint64_t now, uint64_t realtime);

  // Removes expired entries; returns the destinations to unblock.
  std::vector<Address> Expire(uint64_t now);

  // A reload (SIGHUP): new keys and a new max skew.  The peers' replay
  // windows, newest timestamps and credit entries stay, so a message
  // accepted before is still a duplicate after, whatever its key.
  void Reload(KeyRing keys, uint64_t max_skew_ns) {
    keys_ = std::move(keys);
    fresh_.max_skew_ns = max_skew_ns;
  }
  const KeyRing& keys() const { return keys_; }
  const Freshness& freshness() const { return fresh_; }

  const Counters& counters() const { return counters_; }
  const CreditTable& table() const { return table_; }
  // Every configured peer, by id, at `now` (CLOCK_MONOTONIC ns).
  std::vector<PeerStatus> Peers(uint64_t now) const;

 private:
  struct Peer {
    std::vector<Address> addresses;
    ReplayWindow window;
    std::optional<uint64_t> newest;  // the newest timestamp accepted
    uint64_t accepted = 0;
    std::optional<PeerStatus::Last> last;
    std::array<uint64_t, kDropReasonCount> dropped{};
  };

  Inbox(KeyRing keys, std::map<uint64_t, Peer> peers, Freshness fresh,
        LogSink log);
  Outcome Drop(DropReason r, std::optional<wire::WireError> e,
               const Address& from, std::optional<uint64_t> sender,
               uint64_t now);

  KeyRing keys_;
  std::map<uint64_t, Peer> peers_;
  Freshness fresh_;
  CreditTable table_;
  Counters counters_;
  LogSink log_;
  RateLimiter log_limit_{kLogBurst, kLogIntervalNs};
};

}  // namespace parq::parqd

#endif
