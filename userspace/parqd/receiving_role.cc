// SPDX-License-Identifier: GPL-2.0

#include "receiving_role.h"

#include <algorithm>

#include "satmath.h"

namespace parq::parqd {

ReceivingRole::ReceivingRole(ReceivingRoleConfig c, KeyRing keys,
                             KernelMonitor& monitor, SendFn send,
                             uint64_t realtime_ns, LogSink log)
    : cfg_(std::move(c)),
      keys_(std::move(keys)),
      monitor_(monitor),
      send_(std::move(send)),
      log_(std::move(log)),
      granter_(cfg_.policy),
      sequence_(realtime_ns) {
  for (const PeerConfig& p : cfg_.peers) {
    for (const Address& a : p.addresses)
      peer_of_.emplace(a, p.id);
    if (!p.addresses.empty())
      send_to_.emplace(p.id, p.addresses.front());
  }
}

std::optional<KernelError> ReceivingRole::Start() {
  MonitorSettings s{cfg_.policy.hold_ns, cfg_.parallel_dscp, {}};
  // Only the cluster's hosts are counted: a host outside it cannot make
  // this one throttle its senders.
  for (const PeerConfig& p : cfg_.peers)
    s.peers.insert(s.peers.end(), p.addresses.begin(), p.addresses.end());
  return monitor_.Enable(s);
}

void ReceivingRole::Log(uint64_t now, const std::string& line) {
  uint64_t suppressed = 0;
  if (!log_ || !log_limit_.Allow(now, &suppressed))
    return;
  if (suppressed)
    log_("(" + std::to_string(suppressed) + " lines suppressed)");
  log_(line);
}

bool ReceivingRole::busy(uint64_t now) const {
  return granter_.parallel_active(now) || !granter_.granted().empty();
}

void ReceivingRole::Observe(const std::vector<PeerSample>& samples,
                            uint64_t now) {
  for (const PeerSample& s : samples) {
    if (s.par_age_ns)
      granter_.SawParallel(now - std::min(now, *s.par_age_ns));
    auto peer = peer_of_.find(s.address);
    if (peer == peer_of_.end())
      continue;
    auto [it, fresh] = last_loc_bytes_.try_emplace(s.address, s.loc_bytes);
    const bool grew = !fresh && s.loc_bytes > it->second;
    it->second = s.loc_bytes;
    if (s.loc_age_ns && *s.loc_age_ns < cfg_.policy.hold_ns)
      granter_.SawLocal(peer->second, now - std::min(now, *s.loc_age_ns));
    else if (grew)
      granter_.SawLocal(peer->second, now);
  }
}

uint64_t ReceivingRole::restate_ns() const {
  const uint64_t lease = cfg_.policy.lease;
  return std::max<uint64_t>(1, (lease - 1) / 2) * epoch_ns();
}

bool ReceivingRole::Restates(const GrantDecision& d, uint64_t now) const {
  if (d.type != wire::Type::kGrant)
    return false;
  auto it = sent_.find(d.peer);
  return it != sent_.end() && it->second.type == wire::Type::kGrant &&
         it->second.credit == d.credit && now - it->second.at < restate_ns();
}

void ReceivingRole::Send(const std::vector<GrantDecision>& ds, uint64_t now,
                         uint64_t realtime_ns) {
  for (const GrantDecision& d : ds) {
    auto to = send_to_.find(d.peer);
    if (to == send_to_.end())
      continue;
    if (Restates(d, now)) {
      ++counters_.restatements_skipped;
      continue;
    }
    const Stamp stamp{cfg_.node_id, keys_.send_id(), realtime_ns,
                      SatAdd(sequence_, 1)};
    const wire::Message m =
        ToMessage(d, cfg_.policy, stamp, cfg_.own_addresses);
    sequence_ = m.sequence;
    const bool grant = d.type == wire::Type::kGrant;
    const Key* key = keys_.SendKey(d.peer);
    if (!key) {
      ++counters_.send_errors;
      Log(now, std::string("cannot send ") + (grant ? "GRANT" : "RELEASE") +
                   " to peer " + std::to_string(d.peer) + ": no key of id " +
                   std::to_string(keys_.send_id()) + " for it");
      continue;
    }
    auto bytes = wire::Encode(m, *key);
    if (!bytes.ok() || !send_(to->second, cfg_.peer_port, bytes.value())) {
      ++counters_.send_errors;
      Log(now, std::string("cannot send ") + (grant ? "GRANT" : "RELEASE") +
                   " to peer " + std::to_string(d.peer) + " at " +
                   to->second.ToString() +
                   (bytes.ok() ? ""
                               : std::string(": ") +
                                     std::string(wire::Name(bytes.error()))));
      continue;
    }
    (grant ? counters_.grants_sent : counters_.releases_sent)++;
    sent_[d.peer] = {m.type, m.sequence, m.credit, now};
  }
}

void ReceivingRole::Tick(uint64_t now, uint64_t realtime_ns) {
  auto samples = monitor_.Peers();
  if (!samples.ok()) {
    ++counters_.monitor_errors;
    Log(now, "receive monitor: cannot read the source table: " +
                 samples.error().Text());
    // Without observations the Granter still releases when hold passes.
  } else {
    ++counters_.epochs;
    Observe(samples.value(), now);
  }
  Decide(now, realtime_ns);
}

void ReceivingRole::Decide(uint64_t now, uint64_t realtime_ns) {
  const std::set<uint64_t> before = granter_.granted();
  const auto ds = granter_.Tick(now);
  for (const GrantDecision& d : ds) {
    if (d.type == wire::Type::kGrant && !before.count(d.peer))
      Log(now, "granting peer " + std::to_string(d.peer) + " " +
                   std::to_string(d.credit) +
                   " bytes per epoch: parallel "
                   "traffic is arriving");
    else if (d.type == wire::Type::kRelease)
      Log(now, "releasing peer " + std::to_string(d.peer));
  }
  Send(ds, now, realtime_ns);
}

void ReceivingRole::OnEvents(uint64_t now, uint64_t realtime_ns) {
  auto evs = monitor_.ReadEvents();
  if (!evs.ok()) {
    // Reports were lost: the table tells the state.
    ++counters_.monitor_errors;
    Log(now, "receive monitor: " + evs.error().Text() +
                 "; reading the source table instead");
    Tick(now, realtime_ns);
    return;
  }
  if (evs.value().empty())
    return;
  for (const MonitorEvent& e : evs.value()) {
    if (e.active) {
      ++counters_.monitor_starts;
      granter_.SawParallel(now);
    } else {
      ++counters_.monitor_stops;
      granter_.ParallelStopped();
    }
  }
  // The last report is the current state.  A stop releases without a
  // table dump: releasing needs no observation, and the dump (1-2 ms under
  // QEMU/TCG) would delay the RELEASEs that end the senders' wait.
  if (!evs.value().back().active) {
    granter_.ParallelStopped();
    Decide(now, realtime_ns);
    return;
  }
  Tick(now, realtime_ns);
}

void ReceivingRole::Stop(uint64_t now, uint64_t realtime_ns) {
  std::vector<GrantDecision> ds;
  for (uint64_t peer : granter_.granted())
    ds.push_back({peer, wire::Type::kRelease, 0});
  Send(ds, now, realtime_ns);
}

void ReceivingRole::Metrics(PromText& out) const {
  out.Counter("parqd_grants_sent_total", "GRANT messages sent to peers.",
              counters_.grants_sent);
  out.Counter("parqd_releases_sent_total", "RELEASE messages sent to peers.",
              counters_.releases_sent);
  out.Counter("parqd_send_errors_total",
              "Credit messages that could not be sent.", counters_.send_errors);
  const char* events = "parqd_monitor_events_total";
  out.Family(events, "counter", "Receive monitor reports, by kind.");
  out.Sample(events, counters_.monitor_starts, "kind", "start");
  out.Sample(events, counters_.monitor_stops, "kind", "stop");
  out.Counter("parqd_monitor_errors_total",
              "Failed reads of the receive monitor (dumps, lost reports).",
              counters_.monitor_errors);
  out.Gauge("parqd_peers_granted", "Peers holding a grant now.",
            granter_.granted().size());
  out.Counter("parqd_epochs_total",
              "Epochs run: reads of the receive monitor's table.",
              counters_.epochs);
  out.Counter("parqd_grants_unchanged_total",
              "GRANTs not sent: the same credit was sent to the peer less "
              "than (lease - 1) / 2 epochs before.",
              counters_.restatements_skipped);
  out.Counter("parqd_epochs_late_total",
              "Epochs run more than one epoch after their time.",
              counters_.epochs_late);
  out.Gauge("parqd_epoch_lateness_max_microseconds",
            "The longest an epoch has run after its time, since parqd "
            "started.",
            counters_.lateness_max_ns / 1000);
}

void ReceivingRole::Ran(uint64_t late_ns) {
  if (late_ns > epoch_ns())
    ++counters_.epochs_late;
  counters_.lateness_max_ns = std::max(counters_.lateness_max_ns, late_ns);
}

}  // namespace parq::parqd
