// SPDX-License-Identifier: GPL-2.0

#include "proto/grant.h"

#include <algorithm>
#include <cstdint>

#include "base/satmath.h"

namespace parq::parqd {

std::optional<std::string> CheckPolicy(const GrantPolicy& p) {
  if (p.hold_ns == 0)
    return "hold must be greater than 0";
  if (p.epoch_us < wire::kMinEpochUs || p.epoch_us > wire::kMaxEpochUs)
    return "epoch must be between " + std::to_string(wire::kMinEpochUs) +
           " us and " + std::to_string(wire::kMaxEpochUs) + " us";
  if (p.lease == 0)
    return "lease must be at least 1 epoch";
  return std::nullopt;
}

void Granter::SawParallel(uint64_t t) {
  if (!last_parallel_ || t > *last_parallel_)
    last_parallel_ = t;
}

void Granter::SawLocal(uint64_t peer, uint64_t t) {
  auto [it, inserted] = last_local_.try_emplace(peer, t);
  if (!inserted && t > it->second)
    it->second = t;
}

bool Granter::Recent(uint64_t now, uint64_t t) const {
  return Elapsed(now, t) < policy_.hold_ns;
}

bool Granter::parallel_active(uint64_t now) const {
  return reported_ || (last_parallel_ && Recent(now, *last_parallel_));
}

std::vector<GrantDecision> Granter::Tick(uint64_t now) {
  const bool parallel = parallel_active(now);
  std::vector<GrantDecision> out;
  out.reserve(granted_.size() + last_local_.size());
  newly_granted_.clear();
  size_t grants = 0;
  // Every peer holding a grant or seen sending local traffic, in order of
  // id: one walk over the two sorted sets, without copying either.
  auto g = granted_.begin();
  auto l = last_local_.begin();
  while (g != granted_.end() || l != last_local_.end()) {
    const bool held =
        g != granted_.end() && (l == last_local_.end() || *g <= l->first);
    const bool seen =
        l != last_local_.end() && (g == granted_.end() || l->first <= *g);
    const uint64_t peer = held ? *g : l->first;
    const bool local = seen && Recent(now, l->second);
    if (parallel && (local || held)) {
      out.push_back({peer, wire::Type::kGrant, 0});
      if (held) {
        ++g;
      } else {
        granted_.insert(g, peer);  // before g: the walk goes on from g
        newly_granted_.push_back(peer);
      }
      grants++;
    } else if (held) {
      g = granted_.erase(g);
      out.push_back({peer, wire::Type::kRelease, 0});
    }
    if (seen)
      l = local ? std::next(l) : last_local_.erase(l);
  }
  if (grants) {
    const uint64_t share =
        policy_.floor_bytes / grants + (policy_.floor_bytes % grants != 0);
    const uint64_t credit = std::max(share, policy_.threshold_recv);
    for (GrantDecision& d : out)
      if (d.type == wire::Type::kGrant)
        d.credit = credit;
  }
  return out;
}

uint64_t FloorBytes(uint64_t link_bps, unsigned percent, uint32_t epoch_us) {
  // bits/s * percent/100 * us/1e6 / 8, without overflow for any link up
  // to 2^64 bit/s: the multiplier is at most 100 * 6e7 = 6e9.
  constexpr unsigned __int128 kPerBits = 800'000'000;  // percent, us, bits
  const unsigned __int128 bytes =
      static_cast<unsigned __int128>(link_bps) * percent * epoch_us / kPerBits;
  return bytes > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

void SetMessage(const GrantDecision& d, const GrantPolicy& p,
                const Stamp& stamp, wire::Message* m) {
  m->type = d.type;
  m->sender = stamp.sender;
  m->key_id = stamp.key_id;
  m->time_ns = stamp.time_ns;
  m->sequence = stamp.sequence;
  m->epoch_us = p.epoch_us;
  m->credit = d.type == wire::Type::kGrant ? d.credit : 0;
  m->lease = d.type == wire::Type::kGrant ? p.lease : 0;
}

wire::Message ToMessage(const GrantDecision& d, const GrantPolicy& p,
                        const Stamp& stamp,
                        const std::vector<Address>& own_addresses) {
  wire::Message m;
  SetMessage(d, p, stamp, &m);
  m.addresses = own_addresses;
  return m;
}

}  // namespace parq::parqd
