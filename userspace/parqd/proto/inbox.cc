// SPDX-License-Identifier: GPL-2.0

#include "proto/inbox.h"

#include <algorithm>

#include "base/satmath.h"

namespace parq::parqd {

namespace {

bool Contains(const std::vector<Address>& v, const Address& a) {
  return std::find(v.begin(), v.end(), a) != v.end();
}

}  // namespace

std::string_view Name(DropReason r) {
  switch (r) {
    case DropReason::kMalformed:
      return "malformed";
    case DropReason::kUnknownPeer:
      return "unknown_peer";
    case DropReason::kWrongSource:
      return "wrong_source";
    case DropReason::kUnknownKey:
      return "unknown_key";
    case DropReason::kBadMac:
      return "bad_mac";
    case DropReason::kCryptoFailure:
      return "crypto_failure";
    case DropReason::kForeignAddress:
      return "foreign_address";
    case DropReason::kTimeAhead:
      return "time_ahead";
    case DropReason::kTimeBehind:
      return "time_behind";
    case DropReason::kBeforeStart:
      return "before_start";
    case DropReason::kDuplicate:
      return "duplicate";
    case DropReason::kTooOld:
      return "too_old";
    case DropReason::kStale:
      return "stale";
  }
  return "unknown";
}

uint64_t Counters::dropped_total() const {
  uint64_t sum = 0;
  for (uint64_t d : dropped)
    sum += d;
  return sum;
}

Result<Inbox, std::string> Inbox::Create(KeyRing keys,
                                         std::vector<PeerConfig> peers,
                                         Freshness fresh, LogSink log) {
  if (fresh.max_skew_ns == 0)
    return Err{std::string("the maximum clock skew must be longer than 0")};
  std::map<uint64_t, Peer> table;
  std::map<Address, uint64_t> owner;
  for (PeerConfig& p : peers) {
    const std::string name = "peer " + std::to_string(p.id);
    if (p.addresses.empty())
      return Err{name + " has no addresses"};
    if (p.addresses.size() > wire::kMaxAddresses)
      return Err{name + " has " + std::to_string(p.addresses.size()) +
                 " addresses; a message carries at most " +
                 std::to_string(wire::kMaxAddresses)};
    for (const Address& a : p.addresses) {
      auto [it, fresh] = owner.try_emplace(a, p.id);
      if (!fresh)
        return Err{"address " + a.ToString() + " is configured for " +
                   (it->second == p.id ? name + " twice"
                                       : "peer " + std::to_string(it->second) +
                                             " and " + name)};
    }
    Peer peer;
    peer.addresses = std::move(p.addresses);
    if (!table.try_emplace(p.id, std::move(peer)).second)
      return Err{name + " is configured twice"};
  }
  return Inbox(std::move(keys), std::move(table), fresh, std::move(log));
}

Inbox::Inbox(KeyRing keys, std::map<uint64_t, Peer> peers, Freshness fresh,
             LogSink log)
    : keys_(std::move(keys)),
      peers_(std::move(peers)),
      fresh_(fresh),
      log_(std::move(log)) {}

Outcome Inbox::Drop(DropReason r, std::optional<wire::WireError> e,
                    const Address& from, std::optional<uint64_t> sender,
                    uint64_t now) {
  counters_.drop(r)++;
  if (sender)
    if (auto it = peers_.find(*sender); it != peers_.end())
      it->second.dropped[static_cast<size_t>(r)]++;
  if (r == DropReason::kMalformed && e)
    counters_.malformed[static_cast<size_t>(*e)]++;
  uint64_t suppressed = 0;
  if (log_ && log_limit_.Allow(now, &suppressed)) {
    std::string line =
        "parqd: dropped a credit message from " + from.ToString();
    if (sender)
      line += " (peer " + std::to_string(*sender) + ")";
    line += ": " + std::string(Name(r));
    if (e && r == DropReason::kMalformed)
      line += " (" + std::string(wire::Name(*e)) + ")";
    if (suppressed)
      line += "; " + std::to_string(suppressed) + " similar lines suppressed";
    log_(line);
  }
  return Outcome{false, r, e, std::nullopt};
}

std::vector<PeerStatus> Inbox::Peers(uint64_t now) const {
  std::vector<PeerStatus> out;
  for (const auto& [id, p] : peers_) {
    PeerStatus s;
    s.id = id;
    s.addresses = p.addresses;
    s.accepted = p.accepted;
    s.last = p.last;
    s.dropped = p.dropped;
    for (const Address& a : p.addresses)
      if (auto e = table_.Lookup(a, now))
        s.held.emplace_back(a, *e);
    out.push_back(std::move(s));
  }
  return out;
}

Outcome Inbox::Receive(std::span<const uint8_t> bytes, const Address& from,
                       const Address& to, uint64_t now, uint64_t realtime) {
  counters_.received++;

  // Who claims to have sent it decides which key to try: a datagram that
  // names no configured peer, comes from elsewhere or names a key this
  // host does not hold is dropped before any MAC is computed.
  auto header = wire::Peek(bytes);
  if (!header.ok())
    return Drop(DropReason::kMalformed, header.error(), from, std::nullopt,
                now);
  const uint64_t sender = header.value().sender;
  auto it = peers_.find(sender);
  if (it == peers_.end())
    return Drop(DropReason::kUnknownPeer, std::nullopt, from, sender, now);
  Peer& peer = it->second;
  if (!Contains(peer.addresses, from))
    return Drop(DropReason::kWrongSource, std::nullopt, from, sender, now);
  const Key* key = keys_.Find(header.value().key_id, sender);
  if (!key)
    return Drop(DropReason::kUnknownKey, std::nullopt, from, sender, now);

  auto decoded = wire::Decode(bytes, *key, to);
  if (!decoded.ok()) {
    const wire::WireError e = decoded.error();
    const DropReason r = e == wire::WireError::kBadMac ? DropReason::kBadMac
                         : e == wire::WireError::kCryptoFailure
                             ? DropReason::kCryptoFailure
                             : DropReason::kMalformed;
    return Drop(r, e, from, sender, now);
  }
  const wire::Message& m = decoded.value();
  for (const Address& a : m.addresses)
    if (!Contains(peer.addresses, a))
      return Drop(DropReason::kForeignAddress, std::nullopt, from, sender, now);

  const uint64_t skew = fresh_.max_skew_ns;
  if (m.time_ns > SatAdd(realtime, skew))
    return Drop(DropReason::kTimeAhead, std::nullopt, from, sender, now);
  if (SatAdd(m.time_ns, skew) < realtime)
    return Drop(DropReason::kTimeBehind, std::nullopt, from, sender, now);
  if (m.time_ns < SatAdd(fresh_.start_ns, skew))
    return Drop(DropReason::kBeforeStart, std::nullopt, from, sender, now);

  // Every message the window remembers is now too old to pass the time
  // check: the window can go, and the peer's numbering start anew.
  if (peer.newest && SatAdd(*peer.newest, skew) < realtime) {
    peer.window = ReplayWindow{};
    peer.newest.reset();
    counters_.forgotten++;
  }
  switch (peer.window.Check(m.sequence)) {
    case ReplayVerdict::kFresh:
      break;
    case ReplayVerdict::kDuplicate:
      return Drop(DropReason::kDuplicate, std::nullopt, from, sender, now);
    case ReplayVerdict::kTooOld:
      return Drop(DropReason::kTooOld, std::nullopt, from, sender, now);
  }
  if (m.sequence < peer.window.top())
    return Drop(DropReason::kStale, std::nullopt, from, sender, now);

  peer.window.Accept(m.sequence);
  peer.newest = std::max(peer.newest.value_or(0), m.time_ns);
  table_.Apply(m, now);
  peer.accepted++;
  peer.last = PeerStatus::Last{m.type, m.sequence, m.time_ns, now};
  counters_.accepted++;
  (m.type == wire::Type::kGrant ? counters_.grants : counters_.releases)++;
  return Outcome{true, DropReason::kMalformed, std::nullopt, m};
}

std::vector<Address> Inbox::Expire(uint64_t now) {
  std::vector<Address> gone = table_.Expire(now);
  counters_.expired += gone.size();
  return gone;
}

}  // namespace parq::parqd
