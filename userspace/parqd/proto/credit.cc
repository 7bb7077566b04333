// SPDX-License-Identifier: GPL-2.0

#include "proto/credit.h"

#include "base/satmath.h"

namespace parq::parqd {

uint64_t LeaseExpiry(uint64_t now, uint16_t lease, uint64_t epoch_ns) {
  return SatAdd(now, SatMul(lease, epoch_ns));
}

ApplyResult CreditTable::Apply(const wire::Message& m, uint64_t now) {
  ApplyResult r;
  for (const Address& a : m.addresses) {
    if (m.type == wire::Type::kRelease) {
      entries_.erase(a);
      r.applied++;
      continue;
    }
    entries_[a] = CreditEntry{
        .credit = m.credit,
        .epoch_ns = m.epoch_ns(),
        .granter = m.sender,
        .expires = LeaseExpiry(now, m.lease, m.epoch_ns()),
    };
    r.applied++;
  }
  return r;
}

std::vector<Address> CreditTable::Expire(uint64_t now) {
  std::vector<Address> gone;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (now >= it->second.expires) {
      gone.push_back(it->first);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  return gone;
}

std::optional<CreditEntry> CreditTable::Lookup(const Address& a,
                                               uint64_t now) const {
  auto it = entries_.find(a);
  if (it == entries_.end() || now >= it->second.expires)
    return std::nullopt;
  return it->second;
}

std::optional<uint64_t> CreditTable::NextExpiry() const {
  std::optional<uint64_t> next;
  for (const auto& [a, e] : entries_)
    if (!next || e.expires < *next)
      next = e.expires;
  return next;
}

}  // namespace parq::parqd
