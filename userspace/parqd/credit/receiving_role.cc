// SPDX-License-Identifier: GPL-2.0

#include "credit/receiving_role.h"

#include <algorithm>

#include "base/satmath.h"

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
  MonitorSettings s{cfg_.policy.hold_ns,
                    cfg_.parallel_dscp,
                    {},
                    true,
                    cfg_.parallel_min_bytes};
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

bool ReceivingRole::Restates(const GrantDecision& d, const SentRecord* last,
                             uint64_t now, uint64_t early) const {
  return d.type == wire::Type::kGrant && last &&
         last->type == wire::Type::kGrant && last->credit == d.credit &&
         now - last->at + early < restate_ns();
}

void ReceivingRole::Send(const std::vector<GrantDecision>& ds, uint64_t now,
                         uint64_t realtime_ns) {
  auto failed = [&](uint64_t peer, bool grant, const std::string& why) {
    ++counters_.send_errors;
    Log(now, std::string("cannot send ") + (grant ? "GRANT" : "RELEASE") +
                 " to peer " + std::to_string(peer) + why);
  };
  // Each decision's destination and the last message its peer was sent,
  // looked up once.
  struct Due {
    const GrantDecision* d;
    const Address* to;
    const SentRecord* last;
  };
  std::vector<Due> due;
  due.reserve(ds.size());
  for (const GrantDecision& d : ds) {
    auto to = send_to_.find(d.peer);
    if (to == send_to_.end())
      continue;
    auto last = sent_.find(d.peer);
    due.push_back(
        {&d, &to->second, last == sent_.end() ? nullptr : &last->second});
  }
  // When some message goes out, so do the restatements due within half a
  // period: the peers' restatements fall into step, and one batch (one
  // wake-up of the loop) serves them all.
  const bool sending = std::any_of(due.begin(), due.end(), [&](const Due& u) {
    return !Restates(*u.d, u.last, now, 0);
  });
  const uint64_t early = sending ? restate_ns() / 2 : 0;
  std::vector<Outgoing> batch;
  batch.reserve(due.size());
  // The peer and message of each datagram of the batch, in its order.
  struct Queued {
    uint64_t peer;
    wire::Type type;
    uint64_t sequence;
    uint64_t credit;
  };
  std::vector<Queued> queued;
  queued.reserve(due.size());
  wire::Message m;  // reused: this host's addresses are copied once
  m.addresses = cfg_.own_addresses;
  for (const Due& u : due) {
    const GrantDecision& d = *u.d;
    if (Restates(d, u.last, now, early)) {
      ++counters_.restatements_skipped;
      continue;
    }
    const Stamp stamp{cfg_.node_id, keys_.send_id(), realtime_ns,
                      SatAdd(sequence_, 1)};
    SetMessage(d, cfg_.policy, stamp, &m);
    sequence_ = m.sequence;
    const bool grant = d.type == wire::Type::kGrant;
    const Key* key = keys_.SendKey(d.peer);
    if (!key) {
      failed(d.peer, grant,
             ": no key of id " + std::to_string(keys_.send_id()) + " for it");
      continue;
    }
    auto bytes = wire::Encode(m, *key, *u.to);
    if (!bytes.ok()) {
      failed(d.peer, grant,
             " at " + u.to->ToString() + ": " +
                 std::string(wire::Name(bytes.error())));
      continue;
    }
    batch.push_back({*u.to, cfg_.peer_port, std::move(bytes.value())});
    queued.push_back({d.peer, m.type, m.sequence, m.credit});
  }
  if (batch.empty())
    return;
  const std::vector<bool> ok = send_(batch);
  for (size_t i = 0; i < batch.size(); i++) {
    const Queued& q = queued[i];
    const bool grant = q.type == wire::Type::kGrant;
    if (i >= ok.size() || !ok[i]) {
      failed(q.peer, grant, " at " + batch[i].to.ToString());
      continue;
    }
    (grant ? counters_.grants_sent : counters_.releases_sent)++;
    sent_[q.peer] = {q.type, q.sequence, q.credit, now};
  }
}

void ReceivingRole::Read(uint64_t now, bool check_state) {
  last_read_ = now;
  if (check_state) {
    // A lost stop report would keep the grants forever, a lost start
    // would make every epoch read the table: the monitor's state says
    // whether parallel traffic arrives.
    auto st = monitor_.State();
    if (!st.ok()) {
      ++counters_.monitor_errors;
      Log(now, "receive monitor: cannot read its state: " + st.error().Text());
    } else if (st.value().active != granter_.parallel_reported()) {
      ++counters_.monitor_resyncs;
      Log(now, std::string("receive monitor: parallel traffic ") +
                   (st.value().active ? "started" : "stopped") +
                   " without a report");
      if (st.value().active) {
        granter_.ParallelStarted();
        granter_.SawParallel(now);
      } else {
        granter_.ParallelStopped();
      }
    }
  }
  auto samples = monitor_.Peers();
  if (!samples.ok()) {
    ++counters_.monitor_errors;
    Log(now, "receive monitor: cannot read the source table: " +
                 samples.error().Text());
    // Without observations the Granter still releases when hold passes.
    return;
  }
  ++counters_.epochs;
  Observe(samples.value(), now);
}

void ReceivingRole::Tick(uint64_t now, uint64_t realtime_ns) {
  ++counters_.ticks;
  // While the kernel reports, a report says what changes: the table is
  // read only to resynchronize.
  if (!granter_.parallel_reported() || now - last_read_ >= kResyncNs)
    Read(now, true);
  Decide(now, realtime_ns);
}

uint64_t ReceivingRole::NextTick(uint64_t now) const {
  if (!busy(now))
    return now + kIdleNs;
  if (!granter_.parallel_reported())
    return now + epoch_ns();
  uint64_t next = last_read_ + kResyncNs;
  for (uint64_t peer : granter_.granted()) {
    auto it = sent_.find(peer);
    if (it == sent_.end() || it->second.type != wire::Type::kGrant)
      return now + epoch_ns();  // a failed send: again next epoch
    next = std::min(next, it->second.at + restate_ns());
  }
  return std::max(next, now);
}

void ReceivingRole::Decide(uint64_t now, uint64_t realtime_ns) {
  const auto ds = granter_.Tick(now);
  const std::vector<uint64_t>& fresh = granter_.newly_granted();
  for (const GrantDecision& d : ds) {
    if (d.type == wire::Type::kGrant &&
        std::binary_search(fresh.begin(), fresh.end(), d.peer))
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
                 "; reading its state and table instead");
    Read(now, true);
    Decide(now, realtime_ns);
    return;
  }
  if (evs.value().empty())
    return;
  // Whether the reports end with parallel traffic starting: then the
  // table tells who sends local traffic already.
  bool started = false;
  for (const MonitorEvent& e : evs.value()) {
    switch (e.kind) {
      case MonitorEvent::Kind::kStart:
        ++counters_.monitor_starts;
        granter_.ParallelStarted();
        granter_.SawParallel(now);
        started = true;
        break;
      case MonitorEvent::Kind::kStop:
        ++counters_.monitor_stops;
        granter_.ParallelStopped();
        started = false;
        break;
      case MonitorEvent::Kind::kLocal:
        ++counters_.monitor_locals;
        if (e.source)
          if (auto peer = peer_of_.find(*e.source); peer != peer_of_.end())
            granter_.SawLocal(peer->second, now);
        break;
    }
  }
  // A stop releases without a table dump: releasing needs no observation,
  // and the dump (1-2 ms under QEMU/TCG) would delay the RELEASEs that end
  // the senders' wait.  A local sender's report needs none either.
  if (started)
    Read(now, false);
  Decide(now, realtime_ns);
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
  out.Sample(events, counters_.monitor_locals, "kind", "local");
  out.Counter("parqd_monitor_errors_total",
              "Failed reads of the receive monitor (dumps, lost reports).",
              counters_.monitor_errors);
  out.Counter("parqd_monitor_resyncs_total",
              "Times the monitor's state differed from its reports (a "
              "report was lost).",
              counters_.monitor_resyncs);
  out.Counter("parqd_ticks_total",
              "Runs of the receiving role's timer (every epoch only while "
              "parallel traffic is seen in the table alone).",
              counters_.ticks);
  out.Gauge("parqd_peers_granted", "Peers holding a grant now.",
            granter_.granted().size());
  out.Counter("parqd_epochs_total", "Reads of the receive monitor's table.",
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
