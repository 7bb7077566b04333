// SPDX-License-Identifier: GPL-2.0
//
// The receiving host's side: whom to grant credit, at each decision.
//
// While parallel traffic is arriving (some arrived less than `hold` ago, or
// the kernel's monitor reported its start and not yet its stop),
// every host that is sending this host local traffic (some arrived less
// than `hold` ago) is granted credit (restated as receiving_role.h says): its
// share of `floor_bytes` (what the local senders get together per epoch,
// divided evenly among the hosts granted in that epoch, rounded up), or
// `threshold_recv` bytes if that is more.  With both 0 a granted host
// sends nothing: strict priority, which an operator must ask for.  A host keeps
// its grant for as long as parallel traffic arrives, whether or not its local
// traffic is still seen: the grant is what holds it back (with credit 0 it
// sends nothing at all, and with a small credit its 64 KB GSO packets leave
// many epochs apart), so its silence says nothing about whether it still has
// local traffic. When parallel traffic has been absent for `hold`, every
// granted host is released: one RELEASE each.  A lost RELEASE costs at most the
// lease of the last GRANT, after which the sending host drops the entry by
// itself.
//
// Pure: observations and ticks carry their time (CLOCK_MONOTONIC, ns).
// An observation time later than a tick's counts as "just seen".

#ifndef PARQD_PROTO_GRANT_H
#define PARQD_PROTO_GRANT_H

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "proto/wire.h"

namespace parq::parqd {

struct GrantPolicy {
  uint64_t threshold_recv = 0;  // bytes per epoch, at least, to each host
  uint64_t hold_ns = 0;         // > 0
  uint32_t epoch_us = 0;        // wire::kMinEpochUs..kMaxEpochUs
  uint16_t lease = wire::kDefaultLeaseEpochs;  // > 0
  uint64_t floor_bytes = 0;  // bytes per epoch the granted hosts share
};

// The local senders' floor per epoch: `percent` of `link_bps` (bits/s)
// for one epoch of `epoch_us`, in bytes (rounded down).
uint64_t FloorBytes(uint64_t link_bps, unsigned percent, uint32_t epoch_us);

// An error message naming the bad field, or nothing.
std::optional<std::string> CheckPolicy(const GrantPolicy& p);

struct GrantDecision {
  uint64_t peer = 0;  // node id of the sending host
  wire::Type type = wire::Type::kGrant;
  uint64_t credit = 0;  // GRANT only

  bool operator==(const GrantDecision&) const = default;
};

class Granter {
 public:
  // Precondition: !CheckPolicy(p).
  explicit Granter(const GrantPolicy& p) : policy_(p) {}

  void SawParallel(uint64_t t);
  void SawLocal(uint64_t peer, uint64_t t);
  // The kernel's monitor reported that parallel traffic started arriving:
  // it counts as arriving until the monitor reports that it stopped,
  // whatever the last arrival observed.
  void ParallelStarted() { reported_ = true; }
  // The kernel's monitor reported that parallel traffic stopped arriving
  // (no parallel packet for `hold`): forget the report and the last
  // parallel arrival, so the next Tick releases at once instead of
  // waiting for `hold` again.
  void ParallelStopped() {
    reported_ = false;
    last_parallel_.reset();
  }

  // The decisions for the epoch starting at `now`, by peer id.
  std::vector<GrantDecision> Tick(uint64_t now);

  bool parallel_active(uint64_t now) const;
  // Started by a report and not stopped by one since.
  bool parallel_reported() const { return reported_; }
  const std::set<uint64_t>& granted() const { return granted_; }
  // The peers the last Tick() granted that held no grant before it, in
  // order of id.
  const std::vector<uint64_t>& newly_granted() const { return newly_granted_; }

 private:
  bool Recent(uint64_t now, uint64_t t) const;

  GrantPolicy policy_;
  std::optional<uint64_t> last_parallel_;
  bool reported_ = false;
  std::map<uint64_t, uint64_t> last_local_;  // peer -> last local arrival
  std::set<uint64_t> granted_;               // peers holding a grant
  std::vector<uint64_t> newly_granted_;
};

// The header fields that the sender's identity, key, clock and counter
// give a message.
struct Stamp {
  uint64_t sender = 0;
  uint32_t key_id = 1;
  uint64_t time_ns = 0;  // CLOCK_REALTIME when sent
  uint64_t sequence = 0;
};

// Every field of `*m` but its addresses, for `d`.
void SetMessage(const GrantDecision& d, const GrantPolicy& p,
                const Stamp& stamp, wire::Message* m);

// The message for `d`.
wire::Message ToMessage(const GrantDecision& d, const GrantPolicy& p,
                        const Stamp& stamp,
                        const std::vector<Address>& own_addresses);

}  // namespace parq::parqd

#endif
