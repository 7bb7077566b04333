// SPDX-License-Identifier: GPL-2.0
//
// The sending host's role of parqd: a credit message from a peer goes
// through the inbox (inbox.h: known peer and source address, key,
// authentication, timestamp, replay and order) and, once accepted, is
// applied to the kernel's credit table:
//
//   GRANT    one PARQ_CMD_CREDIT_SET per address: credit (bytes per epoch,
//            clamped to u32), epoch length (ns) and lease (ns = lease
//            epochs x epoch length, clamped to PARQ_LEASE_MAX).  An epoch
//            longer than the kernel's PARQ_EPOCH_MAX (10 s; the wire
//            allows 60 s) becomes PARQ_EPOCH_MAX with the credit scaled
//            down in proportion, so the rate is kept.
//   RELEASE  one PARQ_CMD_CREDIT_DEL per address; ENOENT (the entry has
//            already expired) is not an error.
//
// Kernel errors are counted by command and logged at a limited rate.

#ifndef PARQD_CREDIT_SENDING_ROLE_H
#define PARQD_CREDIT_SENDING_ROLE_H

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "netlink/kernel.h"
#include "proto/inbox.h"
#include "proto/metrics.h"
#include "proto/ratelimit.h"
#include "proto/wire.h"

namespace parq::parqd {

// The kernel requests for an accepted message.
std::vector<CreditRequest> ToRequests(const wire::Message& m);

struct KernelCounters {
  uint64_t set_requests = 0;
  uint64_t set_errors = 0;
  uint64_t del_requests = 0;
  uint64_t del_errors = 0;
};

class SendingRole {
 public:
  using LogSink = std::function<void(const std::string&)>;

  // `kernel` must outlive the SendingRole.
  SendingRole(Inbox rx, KernelCreditTable& kernel, LogSink log = {});

  // One datagram from `from` to `to` (this host's address it arrived at);
  // `now` is CLOCK_MONOTONIC ns, `realtime` CLOCK_REALTIME ns.
  Outcome Handle(std::span<const uint8_t> bytes, const Address& from,
                 const Address& to, uint64_t now, uint64_t realtime);

  // Forgets expired entries of the user-space table (the kernel expires
  // its own); returns how many.
  size_t Expire(uint64_t now);

  // The Prometheus text: metrics.h's and the kernel counters.
  // Appends this role's metrics.
  void Metrics(PromText& out) const;

  const Inbox& inbox() const { return rx_; }
  // A reload: Inbox::Reload().
  void Reload(KeyRing keys, uint64_t max_skew_ns) {
    rx_.Reload(std::move(keys), max_skew_ns);
  }
  const KernelCounters& kernel_counters() const { return kc_; }

 private:
  Inbox rx_;
  KernelCreditTable& kernel_;
  LogSink log_;
  KernelCounters kc_;
  RateLimiter log_limit_{Inbox::kLogBurst, Inbox::kLogIntervalNs};
};

}  // namespace parq::parqd

#endif
