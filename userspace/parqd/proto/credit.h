// SPDX-License-Identifier: GPL-2.0
//
// The credit table of a sending host: for each destination address a
// receiving host has granted credit for, how many bytes of local traffic
// per epoch may go to it, and until when the grant holds.
//
// Credits are absolute and idempotent: a GRANT sets the entry (it does not
// add to it), so a duplicated message changes nothing and a lost one is
// repaired by the next.  Order is the Inbox's: it applies a peer's
// messages in increasing sequence only, and an address belongs to one
// peer.  Every grant carries a lease in epochs: the
// entry expires lease x epoch length after the message was applied, and an
// expired entry is removed, which unblocks the destination (no entry means
// no limit).  A RELEASE removes the entries at once.
//
// Pure: every time is passed in (CLOCK_MONOTONIC, ns), so it is testable.
// Expiry arithmetic saturates: near UINT64_MAX an entry expires at
// UINT64_MAX instead of wrapping into the past.

#ifndef PARQD_PROTO_CREDIT_H
#define PARQD_PROTO_CREDIT_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "base/address.h"
#include "proto/wire.h"

namespace parq::parqd {

struct CreditEntry {
  uint64_t credit = 0;    // bytes per epoch; 0: stop
  uint64_t epoch_ns = 0;  // the granter's epoch length
  uint64_t granter = 0;   // its sender id
  uint64_t expires = 0;   // CLOCK_MONOTONIC ns; valid while now < expires

  bool operator==(const CreditEntry&) const = default;
};

// When a lease of `lease` epochs of `epoch_ns` each, starting at `now`,
// ends; saturates at UINT64_MAX.
uint64_t LeaseExpiry(uint64_t now, uint16_t lease, uint64_t epoch_ns);

struct ApplyResult {
  size_t applied = 0;  // addresses set (GRANT) or removed (RELEASE)
};

class CreditTable {
 public:
  // `m` must be a decoded (hence valid and authenticated) message.
  ApplyResult Apply(const wire::Message& m, uint64_t now);

  // Removes the entries expired at `now`; returns their addresses, the
  // destinations to unblock.
  std::vector<Address> Expire(uint64_t now);

  // The entry for `a` if it holds at `now`.
  std::optional<CreditEntry> Lookup(const Address& a, uint64_t now) const;

  // The earliest expiry, to arm a timer; nullopt when empty.
  std::optional<uint64_t> NextExpiry() const;

  size_t size() const { return entries_.size(); }
  const std::map<Address, CreditEntry>& entries() const { return entries_; }

 private:
  std::map<Address, CreditEntry> entries_;
};

}  // namespace parq::parqd

#endif
