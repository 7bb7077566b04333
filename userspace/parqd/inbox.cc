// SPDX-License-Identifier: GPL-2.0

#include "inbox.h"

#include <algorithm>

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
    case DropReason::kBadMac:
      return "bad_mac";
    case DropReason::kCryptoFailure:
      return "crypto_failure";
    case DropReason::kUnknownPeer:
      return "unknown_peer";
    case DropReason::kWrongSource:
      return "wrong_source";
    case DropReason::kForeignAddress:
      return "foreign_address";
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

Result<Inbox, std::string> Inbox::Create(Key key, std::vector<PeerConfig> peers,
                                         LogSink log) {
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
    if (!table.try_emplace(p.id, Peer{std::move(p.addresses), {}, {}}).second)
      return Err{name + " is configured twice"};
  }
  return Inbox(std::move(key), std::move(table), std::move(log));
}

Inbox::Inbox(Key key, std::map<uint64_t, Peer> peers, LogSink log)
    : key_(std::move(key)), peers_(std::move(peers)), log_(std::move(log)) {}

Outcome Inbox::Drop(DropReason r, std::optional<wire::WireError> e,
                    const Address& from, std::optional<uint64_t> sender,
                    uint64_t now) {
  counters_.drop(r)++;
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

Outcome Inbox::Receive(std::span<const uint8_t> bytes, const Address& from,
                       uint64_t now) {
  counters_.received++;

  auto decoded = wire::Decode(bytes, key_);
  if (!decoded.ok()) {
    const wire::WireError e = decoded.error();
    const DropReason r = e == wire::WireError::kBadMac ? DropReason::kBadMac
                         : e == wire::WireError::kCryptoFailure
                             ? DropReason::kCryptoFailure
                             : DropReason::kMalformed;
    return Drop(r, e, from, std::nullopt, now);
  }
  const wire::Message& m = decoded.value();

  auto it = peers_.find(m.sender);
  if (it == peers_.end())
    return Drop(DropReason::kUnknownPeer, std::nullopt, from, m.sender, now);
  Peer& peer = it->second;
  if (!Contains(peer.addresses, from))
    return Drop(DropReason::kWrongSource, std::nullopt, from, m.sender, now);
  for (const Address& a : m.addresses)
    if (!Contains(peer.addresses, a))
      return Drop(DropReason::kForeignAddress, std::nullopt, from, m.sender,
                  now);

  switch (peer.window.Check(m.sequence)) {
    case ReplayVerdict::kFresh:
      break;
    case ReplayVerdict::kDuplicate:
      return Drop(DropReason::kDuplicate, std::nullopt, from, m.sender, now);
    case ReplayVerdict::kTooOld:
      return Drop(DropReason::kTooOld, std::nullopt, from, m.sender, now);
  }
  if (peer.epoch && m.epoch < *peer.epoch)
    return Drop(DropReason::kStale, std::nullopt, from, m.sender, now);

  peer.window.Accept(m.sequence);
  peer.epoch = m.epoch;
  table_.Apply(m, now);
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
