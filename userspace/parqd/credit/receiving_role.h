// SPDX-License-Identifier: GPL-2.0
//
// The receiving host's role of parqd: it watches what arrives through the
// kernel's receive monitor and grants credit to the hosts sending it local
// traffic while parallel traffic arrives (Documentation/parqd.md).
//
//   Start()     enables the monitor (PARQ_CMD_MON_SET: hold, DSCPs, the
//               peer set, and reports of local senders).
//   OnEvents()  reads the monitor's reports.  A start dumps the table
//               (the hosts sending local traffic already) and grants at
//               once; a local sender's report grants it at once, without
//               a dump; a stop releases at once, without a dump.
//   Tick()      when NextTick() says: decides and sends what is due.
//               Between reports nothing changes but the restatements, so
//               while the kernel has reported parallel traffic the table
//               is dumped only once a second (kResyncNs, with the
//               monitor's state, in case a report was lost).  Otherwise
//               (parallel traffic seen only in the table, or none) it
//               dumps the table, feeds the Granter (grant.h) with every
//               source host's last parallel and local arrival, and sends
//               its decisions.  A GRANT that restates the credit a peer
//               holds goes out every restate_ns() only.
//   Stop()      releases every peer holding a grant.
//
// The messages of one decision go out together (SendFn: one sendmmsg()).
//
// A source host counts as sending local traffic when its last local packet
// is less than `hold` old or its local byte count grew since the previous
// dump; only configured peers (by their addresses) are granted.  Every
// decision is one message (GRANT: credit threshold-recv, lease `lease`
// epochs; RELEASE) carrying this host's own addresses, sent to the peer's
// first address at the peer port, stamped with CLOCK_REALTIME and made
// with the key ring's send key for that address (the MAC covers it).  Sequence
// numbers are seeded from CLOCK_REALTIME in ns and increase per message
// (Documentation/parqd-protocol.md), so they normally keep increasing
// across restarts; when they do not (the clock stepped back), the
// receivers of the messages forget the old ones within their max-skew.

#ifndef PARQD_CREDIT_RECEIVING_ROLE_H
#define PARQD_CREDIT_RECEIVING_ROLE_H

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "netlink/kernel.h"
#include "proto/grant.h"
#include "proto/inbox.h"
#include "proto/key.h"
#include "proto/metrics.h"
#include "proto/ratelimit.h"

namespace parq::parqd {

struct ReceivingRoleConfig {
  uint64_t node_id = 0;
  GrantPolicy policy;                  // CheckPolicy() passes
  std::vector<Address> own_addresses;  // 1..wire::kMaxAddresses
  std::vector<PeerConfig> peers;
  uint16_t peer_port = 0;  // peers listen on this UDP port
  // The monitor's DSCPs of parallel traffic (PARQ_DSCP_BIT); none: the
  // kernel's default.
  std::optional<uint64_t> parallel_dscp;
  // Parallel bytes within a hold before parallel traffic counts as
  // arriving: less cannot hold the other senders back.
  uint32_t parallel_min_bytes = 0;
};

struct GrantRoleCounters {
  uint64_t grants_sent = 0;
  uint64_t releases_sent = 0;
  uint64_t send_errors = 0;           // the datagram could not be sent
  uint64_t monitor_starts = 0;        // start reports
  uint64_t monitor_stops = 0;         // stop reports
  uint64_t monitor_locals = 0;        // local-sender reports
  uint64_t monitor_errors = 0;        // failed dumps, lost reports
  uint64_t monitor_resyncs = 0;       // the state differed from the reports
  uint64_t epochs = 0;                // reads of the table (Read())
  uint64_t ticks = 0;                 // Tick()s
  uint64_t restatements_skipped = 0;  // GRANTs not sent (Restates())
  uint64_t epochs_late = 0;           // run more than an epoch after their time
  uint64_t lateness_max_ns = 0;       // the most an epoch ran after its time
};

// The newest message sent to a peer (parqctl peers).
struct SentRecord {
  wire::Type type = wire::Type::kGrant;
  uint64_t sequence = 0;
  uint64_t credit = 0;  // GRANT: bytes per epoch
  uint64_t at = 0;      // CLOCK_MONOTONIC ns
};

// One datagram of the role's.
struct Outgoing {
  Address to;
  uint16_t port = 0;
  std::vector<uint8_t> bytes;
};

class ReceivingRole {
 public:
  using LogSink = std::function<void(const std::string&)>;
  // Sends the datagrams of one decision; whether each was sent.
  using SendFn =
      std::function<std::vector<bool>(std::span<const Outgoing> batch)>;

  // While the kernel has reported parallel traffic, the table is read
  // (with the monitor's state) this often.
  static constexpr uint64_t kResyncNs = 1'000'000'000;
  // Without parallel traffic or a grant: how often Tick() runs.
  static constexpr uint64_t kIdleNs = 1'000'000'000;

  // `monitor` must outlive the role.  `realtime_ns`: CLOCK_REALTIME now,
  // the seed of the sequence numbers.
  ReceivingRole(ReceivingRoleConfig c, KeyRing keys, KernelMonitor& monitor,
                SendFn send, uint64_t realtime_ns, LogSink log = {});

  std::optional<KernelError> Start();
  // `now`: CLOCK_MONOTONIC ns; `realtime_ns`: CLOCK_REALTIME ns.
  void OnEvents(uint64_t now, uint64_t realtime_ns);
  void Tick(uint64_t now, uint64_t realtime_ns);
  void Stop(uint64_t now, uint64_t realtime_ns);

  // Whether parallel traffic is active or a grant outstanding.
  bool busy(uint64_t now) const;
  // When Tick() must run next (CLOCK_MONOTONIC ns), `now` being the time
  // of the last Tick() or OnEvents(): every epoch while parallel traffic
  // is seen only in the table; while the kernel has reported it, when the
  // next restatement (or a failed send's retry) or resync is due; in
  // kIdleNs otherwise.
  uint64_t NextTick(uint64_t now) const;
  uint64_t epoch_ns() const { return uint64_t{cfg_.policy.epoch_us} * 1000; }
  // How often a GRANT of unchanged credit is restated: every
  // max(1, (lease - 1) / 2) epochs, so that one lost restatement still
  // leaves the next before the lease ends (every epoch with lease 3).
  uint64_t restate_ns() const;
  // The daemon's loop ran the epoch due at T at T + `late_ns`.
  void Ran(uint64_t late_ns);
  const std::set<uint64_t>& granted() const { return granter_.granted(); }
  const GrantRoleCounters& counters() const { return counters_; }
  // The newest message sent to each peer that was sent one, by peer id.
  const std::map<uint64_t, SentRecord>& sent() const { return sent_; }
  uint64_t last_sequence() const { return sequence_; }
  // A reload: the next messages are made with `keys`' send key; the
  // sequence numbers go on.
  void SetKeys(KeyRing keys) { keys_ = std::move(keys); }

  // The role's Prometheus metrics (appended to the daemon's file).
  // Appends this role's metrics.
  void Metrics(PromText& out) const;

 private:
  void Observe(const std::vector<PeerSample>& samples, uint64_t now);
  // Dumps the table into the Granter; with `check_state`, first sets the
  // reported state of parallel traffic from the monitor's (a report may
  // have been lost).
  void Read(uint64_t now, bool check_state);
  // The Granter's decisions at `now`, logged and sent.
  void Decide(uint64_t now, uint64_t realtime_ns);
  void Send(const std::vector<GrantDecision>& ds, uint64_t now,
            uint64_t realtime_ns);
  // Whether `d` is a GRANT of the credit last sent to its peer (`last`,
  // nullptr if none), sent less than restate_ns() - `early` ago: not sent
  // again.
  bool Restates(const GrantDecision& d, const SentRecord* last, uint64_t now,
                uint64_t early) const;
  void Log(uint64_t now, const std::string& line);

  ReceivingRoleConfig cfg_;
  KeyRing keys_;
  KernelMonitor& monitor_;
  SendFn send_;
  LogSink log_;
  Granter granter_;
  std::map<Address, uint64_t> peer_of_;         // address -> peer id
  std::map<uint64_t, Address> send_to_;         // peer id -> where to send
  std::map<Address, uint64_t> last_loc_bytes_;  // per source address
  uint64_t last_read_ = 0;                      // the last Read()
  uint64_t sequence_;
  GrantRoleCounters counters_;
  std::map<uint64_t, SentRecord> sent_;
  RateLimiter log_limit_{Inbox::kLogBurst, Inbox::kLogIntervalNs};
};

}  // namespace parq::parqd

#endif
