// SPDX-License-Identifier: GPL-2.0
//
// parq-sim's model (cluster_sim.h says what is real and what is modelled).

#include "cluster_sim.h"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <unordered_map>
#include <utility>

#include "parq_core.h"
#include "parq_policy.h"
#include "proto/grant.h"

namespace parq::sim {
namespace {

constexpr uint64_t kNever = ~uint64_t{0};
constexpr uint32_t kControlBytes = 128;

enum class Kind : uint8_t { kParallel, kLocal, kGrant, kRelease };

// parqd's control messages.
bool IsGrantOrRelease(Kind k) {
  return k == Kind::kGrant || k == Kind::kRelease;
}

struct Packet {
  uint32_t src = 0;
  uint32_t dst = 0;
  uint32_t bytes = 0;
  Kind kind = Kind::kLocal;
  uint32_t flow = 0;    // local: its flow; parallel: its phase
  uint64_t credit = 0;  // GRANT
  uint64_t round = 0;   // GRANT/RELEASE of a start or stop report: the
                        // receiver's round it answers (0: other reports)
};

enum class Ev : uint8_t {
  kTxDone,     // a port finished sending: a = port
  kArrive,     // packet b arrives at node a
  kWake,       // host a's egress may send again (credit, shaper)
  kAck,        // local flow a: b bytes acknowledged
  kPhase,      // the next phase of the parallel job starts
  kStopCheck,  // host a's monitor: has parallel traffic stopped?
  kReport,     // host a's parqd acts on a report: b = ReportKind
  kRestate,    // host a's parqd: restatements due
  kCpuDone,    // the item running for CPU lane a ended
};

enum ReportKind : uint32_t { kStart, kLocalSender, kStop };

struct Event {
  uint64_t t;
  uint64_t seq;
  Ev ev;
  uint32_t a;
  uint64_t b;
  bool operator>(const Event& o) const {
    return t != o.t ? t > o.t : seq > o.seq;
  }
};

struct Port {
  uint64_t bps = 0;
  uint32_t to = 0;  // the node at the other end
  bool busy = false;
  std::deque<uint32_t> q;    // packet ids (switch ports, FIFO hosts)
  std::deque<uint32_t> ctl;  // Config::control_first: control, served first
  uint64_t bytes = 0;        // queued
  // GRANT and RELEASE bytes sent, in all and in the current epoch.
  uint64_t ctl_sent = 0;
  uint64_t ctl_epoch = 0;
  uint64_t ctl_in_epoch = 0;
};

struct Credit {
  parq_credit_cfg cfg{};
  uint64_t state = 0;
  uint64_t expiry = 0;
};

struct Host {
  uint32_t port = 0;  // its NIC
  // sch_parq
  parq_sched sched{};
  std::deque<uint32_t> ctl;                      // control_first: control
  std::deque<uint32_t> par;                      // parallel packets
  std::map<uint32_t, std::deque<uint32_t>> loc;  // by destination
  std::deque<uint32_t> rr;                       // destinations queued
  std::unordered_map<uint32_t, Credit> credits;  // by destination
  uint64_t queued = 0;                           // bytes
  uint64_t wake_at = kNever;
  // The receive monitor and parqd.
  std::optional<parqd::Granter> granter;
  uint64_t last_par = 0;
  bool active = false;
  std::map<uint32_t, uint64_t> last_local;  // source -> last arrival
  std::map<uint32_t, uint64_t> reported;    // source -> last report
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> sent;  // peer -> (at,
                                                           // credit)
  bool restating = false;
  uint64_t round = 0;          // reports answered so far
  uint64_t throttle_from = 0;  // this round's first parallel arrival
  uint32_t throttle_left = 0;  // its first GRANTs still on the way
  uint64_t release_from = 0;
  uint32_t release_left = 0;
};

// CPU work (Config::cpus): a received parallel message of @bytes, or a
// delivered local packet of flow @flow.
struct Work {
  bool local = false;
  uint32_t flow = 0;
  uint32_t bytes = 0;
};

// A CPU lane: one thread's items, in order; the front one is running
// while @running.
struct Lane {
  std::deque<Work> q;
  bool running = false;
};

struct Flow {
  uint32_t src = 0;
  uint32_t dst = 0;
  uint64_t inflight = 0;
  uint64_t ack_ns = 0;  // the path's propagation, back
};

class Model {
 public:
  explicit Model(const Config& c) : c_(c), rng_(c.seed) { Build(); }
  Result Go();

 private:
  void Build();
  uint32_t Tor(uint32_t host) const { return c_.hosts + host / c_.rack; }
  uint32_t Spine() const { return c_.hosts + racks_; }
  uint32_t Hops(uint32_t a, uint32_t b) const {
    return a / c_.rack == b / c_.rack ? 2 : 4;
  }
  void At(uint64_t t, Ev ev, uint32_t a, uint64_t b = 0) {
    q_.push(Event{t, seq_++, ev, a, b});
  }
  uint32_t NewPacket(const Packet& p);
  void Free(uint32_t id) { free_.push_back(id); }
  uint32_t RouteFrom(uint32_t node, uint32_t dst) const;
  // Config::control_first and packet @id is a GRANT or a RELEASE.
  bool IsControl(uint32_t id) const;
  void PortEnqueue(uint32_t port, uint32_t id);
  void PortKick(uint32_t port);
  void HostEnqueue(uint32_t h, uint32_t id);
  std::optional<uint32_t> HostDequeue(uint32_t h);
  void Handle(const Event& e);
  void Arrive(uint32_t node, uint32_t id);
  void Deliver(uint32_t h, uint32_t id);
  void FillFlow(uint32_t f);
  void ParallelReceived(uint64_t bytes);
  void LocalDelivered(uint32_t flow, uint32_t bytes);
  // A host's CPU lanes: its application's and its local receive path's.
  uint32_t AppLane(uint32_t h) const { return 2 * h; }
  uint32_t LocalLane(uint32_t h) const { return 2 * h + 1; }
  void CpuSubmit(uint32_t lane, const Work& w);
  void CpuKick();
  void CpuDone(uint32_t lane);
  void StartPhase();
  void Monitor(uint32_t h, const Packet& p);
  void Report(uint32_t h, uint32_t kind);
  uint32_t Decide(uint32_t h, bool timed = false);
  void SendControl(uint32_t from, uint32_t to, Kind k, uint64_t credit,
                   bool timed);
  void ApplyControl(uint32_t h, const Packet& p);
  uint64_t SerNs(uint64_t bytes, uint64_t bps) const {
    return (bytes * 8 * 1'000'000'000ULL + bps - 1) / bps;
  }
  uint64_t EpochNs() const { return uint64_t{c_.epoch_us} * 1000; }
  // @bytes over @ns on a link of @bps, in percent of its capacity.
  static double Pct(uint64_t bytes, uint64_t bps, uint64_t ns) {
    return ns ? double(bytes) * 8 * 1e9 * 100 / (double(bps) * double(ns)) : 0;
  }

  Config c_;
  std::mt19937_64 rng_;
  uint32_t racks_ = 0;
  std::vector<Port> ports_;
  std::vector<std::vector<uint32_t>> node_ports_;  // per switch: its ports
  std::vector<Host> hosts_;
  std::vector<Flow> flows_;
  std::vector<Packet> pkts_;
  std::vector<uint32_t> free_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> q_;
  uint64_t seq_ = 0;
  uint64_t now_ = 0;
  Result r_;
  // The parallel job.
  std::vector<uint32_t> job_;
  size_t phase_ = 0;  // index into the plan
  uint64_t phase_start_ = 0;
  uint64_t phase_left_ = 0;  // bytes of the phase not yet delivered
  uint64_t job_start_ = 0;
  bool job_done_ = false;
  bool ended_ = false;  // the job's time is taken: only control runs on
  parqd::GrantPolicy policy_{};
  // The CPUs, if Config::cpus.
  std::vector<Lane> lanes_;
  uint32_t idle_cpus_ = 0;
  uint32_t next_lane_ = 0;  // round-robin: where the next search starts
  // Parallel bytes received of each (source, destination)'s message in
  // this phase, while incomplete.
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> partial_;
};

void Model::Build() {
  racks_ = (c_.hosts + c_.rack - 1) / c_.rack;
  const uint32_t nodes = c_.hosts + racks_ + 1;
  node_ports_.resize(nodes);
  hosts_.resize(c_.hosts);
  const uint64_t up_bps =
      c_.link_bps * c_.rack / std::max<uint32_t>(1, c_.oversubscription);
  auto add = [&](uint32_t from, uint32_t to, uint64_t bps) {
    ports_.push_back(Port{bps, to, false, {}, {}, 0, 0, 0, 0});
    const auto id = static_cast<uint32_t>(ports_.size() - 1);
    node_ports_[from].push_back(id);
    return id;
  };
  for (uint32_t h = 0; h < c_.hosts; h++)
    hosts_[h].port = add(h, Tor(h), c_.link_bps);
  // ToR r: its hosts' ports first, in order, then the uplink.
  for (uint32_t r = 0; r < racks_; r++) {
    for (uint32_t h = r * c_.rack; h < std::min(c_.hosts, (r + 1) * c_.rack);
         h++)
      add(c_.hosts + r, h, c_.link_bps);
    add(c_.hosts + r, Spine(), up_bps);
  }
  for (uint32_t r = 0; r < racks_; r++)
    add(Spine(), c_.hosts + r, up_bps);

  policy_.threshold_recv = c_.threshold_recv;
  policy_.hold_ns = c_.hold_ns;
  policy_.epoch_us = c_.epoch_us;
  policy_.lease = c_.lease;
  policy_.floor_bytes =
      parqd::FloorBytes(c_.link_bps, c_.local_floor_pct, c_.epoch_us);
  for (Host& h : hosts_) {
    parq_sched_init(
        &h.sched,
        c_.scheduler == Scheduler::kFifo ? PARQ_THRESHOLD_INF : c_.threshold,
        c_.unit_packets ? PARQ_UNIT_PACKETS : PARQ_UNIT_BYTES);
    if (c_.scheduler == Scheduler::kParqd)
      h.granter.emplace(policy_);
  }
  lanes_.resize(c_.cpus ? 2 * size_t{c_.hosts} : 0);
  idle_cpus_ = c_.cpus;

  const uint32_t stride = std::max<uint32_t>(1, c_.hosts / c_.job_hosts);
  for (uint32_t i = 0; i < c_.job_hosts; i++)
    job_.push_back(i * stride);
  if (!c_.local)
    return;
  for (const auto& [src, dst] : c_.local_flows)
    flows_.push_back(Flow{src, dst, 0, 0});
  std::set<uint32_t> in_job(job_.begin(), job_.end());
  std::vector<uint32_t> others;
  for (uint32_t h = 0; h < c_.hosts; h++)
    if (!in_job.count(h))
      others.push_back(h);
  std::uniform_int_distribution<size_t> pick(0, others.size() - 1);
  for (uint32_t j : c_.local_flows.empty() ? job_ : std::vector<uint32_t>{}) {
    for (uint32_t i = 0; i < c_.local_in; i++)
      flows_.push_back(Flow{others[pick(rng_)], j, 0, 0});
    for (uint32_t i = 0; i < c_.local_out; i++)
      flows_.push_back(Flow{j, others[pick(rng_)], 0, 0});
  }
  for (Flow& f : flows_)
    f.ack_ns = uint64_t{Hops(f.src, f.dst)} * c_.prop_ns;
}

uint32_t Model::NewPacket(const Packet& p) {
  if (free_.empty()) {
    pkts_.push_back(p);
    return static_cast<uint32_t>(pkts_.size() - 1);
  }
  const uint32_t id = free_.back();
  free_.pop_back();
  pkts_[id] = p;
  return id;
}

uint32_t Model::RouteFrom(uint32_t node, uint32_t dst) const {
  if (node == Spine())
    return node_ports_[node][dst / c_.rack];
  const uint32_t r = node - c_.hosts;
  if (dst / c_.rack == r)
    return node_ports_[node][dst - r * c_.rack];
  return node_ports_[node].back();
}

bool Model::IsControl(uint32_t id) const {
  return c_.control_first && IsGrantOrRelease(pkts_[id].kind);
}

void Model::PortEnqueue(uint32_t port, uint32_t id) {
  Port& p = ports_[port];
  (IsControl(id) ? p.ctl : p.q).push_back(id);
  p.bytes += pkts_[id].bytes;
  r_.max_switch_queue = std::max(r_.max_switch_queue, p.bytes);
  PortKick(port);
}

// Start sending on @port if it is idle and has something to send.
void Model::PortKick(uint32_t port) {
  Port& p = ports_[port];
  if (p.busy)
    return;
  std::optional<uint32_t> id;
  if (port < c_.hosts) {  // host h's NIC is port h
    id = HostDequeue(port);
  } else if (!p.ctl.empty() || !p.q.empty()) {
    auto& from = p.ctl.empty() ? p.q : p.ctl;
    id = from.front();
    from.pop_front();
    p.bytes -= pkts_[*id].bytes;
  }
  if (!id)
    return;
  p.busy = true;
  const Packet& pk = pkts_[*id];
  if (IsGrantOrRelease(pk.kind)) {
    const uint64_t epoch = now_ / EpochNs();
    if (epoch != p.ctl_epoch) {
      p.ctl_epoch = epoch;
      p.ctl_in_epoch = 0;
    }
    p.ctl_sent += pk.bytes;
    p.ctl_in_epoch += pk.bytes;
    r_.control_link_peak_pct = std::max(r_.control_link_peak_pct,
                                        Pct(p.ctl_in_epoch, p.bps, EpochNs()));
  }
  const uint64_t ser = SerNs(pk.bytes, p.bps);
  At(now_ + ser, Ev::kTxDone, port);
  At(now_ + ser + c_.prop_ns, Ev::kArrive, p.to, *id);
}

void Model::HostEnqueue(uint32_t h, uint32_t id) {
  Host& host = hosts_[h];
  const Packet& p = pkts_[id];
  host.queued += p.bytes;
  r_.max_host_queue = std::max(r_.max_host_queue, host.queued);
  if (IsControl(id)) {
    host.ctl.push_back(id);
  } else if (c_.scheduler == Scheduler::kFifo || p.kind != Kind::kLocal) {
    host.par.push_back(id);  // the FIFO itself, under kFifo
  } else {
    auto& dq = host.loc[p.dst];
    if (dq.empty())
      host.rr.push_back(p.dst);
    dq.push_back(id);
  }
  PortKick(host.port);
}

// sch_parq's dequeue at @now_, through kmod/core's policy, after the
// control packets (control_first); a FIFO under kFifo (every packet is in
// `par` then).
std::optional<uint32_t> Model::HostDequeue(uint32_t h) {
  Host& host = hosts_[h];
  if (!host.ctl.empty()) {
    const uint32_t id = host.ctl.front();
    host.ctl.pop_front();
    host.queued -= pkts_[id].bytes;
    return id;
  }
  if (c_.scheduler == Scheduler::kFifo) {
    if (host.par.empty())
      return std::nullopt;
    const uint32_t id = host.par.front();
    host.par.pop_front();
    host.queued -= pkts_[id].bytes;
    return id;
  }
  // The local destinations in round-robin order: the first that its
  // credit lets send, and when each waiting one may send again.
  std::optional<size_t> may;
  uint64_t lwait_next = kNever;
  for (size_t i = 0; i < host.rr.size(); i++) {
    const uint32_t dst = host.rr[i];
    auto it = host.credits.find(dst);
    if (it == host.credits.end() || it->second.expiry <= now_) {
      may = i;
      break;
    }
    uint64_t next = 0;
    const uint32_t len = pkts_[host.loc[dst].front()].bytes;
    if (parq_credit_take(&it->second.cfg, it->second.state, now_, len, &next)) {
      may = i;
      break;
    }
    lwait_next = std::min({lwait_next, parq_credit_next(&it->second.cfg, now_),
                           it->second.expiry});
  }
  const parq_view v{kNever, lwait_next, !host.par.empty(), may.has_value(),
                    false};
  const parq_decision d = parq_sched_decide(&host.sched, &v, now_);
  uint32_t id = 0;
  switch (d.act) {
    case PARQ_ACT_PARALLEL:
      id = host.par.front();
      host.par.pop_front();
      break;
    case PARQ_ACT_LOCAL: {
      const uint32_t dst = host.rr[*may];
      auto& dq = host.loc[dst];
      id = dq.front();
      dq.pop_front();
      if (auto it = host.credits.find(dst);
          it != host.credits.end() && it->second.expiry > now_) {
        uint64_t next = 0;
        parq_credit_take(&it->second.cfg, it->second.state, now_,
                         pkts_[id].bytes, &next);
        it->second.state = next;
      }
      host.rr.erase(host.rr.begin() + static_cast<std::ptrdiff_t>(*may));
      if (!dq.empty())
        host.rr.push_back(dst);
      else
        host.loc.erase(dst);
      break;
    }
    case PARQ_ACT_WAIT:
      parq_sched_wait(&host.sched);
      if (d.until < host.wake_at) {
        host.wake_at = d.until;
        At(d.until, Ev::kWake, h);
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
  parq_sched_sent(&host.sched, &d, now_, pkts_[id].bytes, 1);
  host.queued -= pkts_[id].bytes;
  return id;
}

void Model::Arrive(uint32_t node, uint32_t id) {
  if (node < c_.hosts) {
    Deliver(node, id);
    return;
  }
  PortEnqueue(RouteFrom(node, pkts_[id].dst), id);
}

void Model::Deliver(uint32_t h, uint32_t id) {
  const Packet p = pkts_[id];
  Free(id);
  switch (p.kind) {
    case Kind::kParallel: {
      Monitor(h, p);
      if (!c_.cpus || !c_.message_cpu_ns) {
        ParallelReceived(p.bytes);
        break;
      }
      // The application receives the message when its last byte is
      // there, and then spends its CPU time on it.
      uint64_t& got = partial_[{p.src, h}];
      got += p.bytes;
      if (got == c_.message) {
        partial_.erase({p.src, h});
        CpuSubmit(AppLane(h),
                  Work{false, 0, static_cast<uint32_t>(c_.message)});
      }
      break;
    }
    case Kind::kLocal:
      Monitor(h, p);
      if (!c_.cpus || !c_.local_cpu_ns)
        LocalDelivered(p.flow, p.bytes);
      else
        CpuSubmit(LocalLane(h), Work{true, p.flow, p.bytes});
      break;
    case Kind::kGrant:
    case Kind::kRelease:
      ApplyControl(h, p);
      break;
  }
}

// @bytes of the phase's parallel messages reached their application.
void Model::ParallelReceived(uint64_t bytes) {
  phase_left_ -= bytes;
  if (phase_left_ != 0)
    return;
  r_.phase_ns.push_back(now_ - phase_start_);
  phase_++;
  if (phase_ >= c_.phases.size() * c_.rounds) {
    job_done_ = true;
    r_.parallel_ns = now_ - job_start_;
  } else {
    At(now_ + c_.gap_ns, Ev::kPhase, 0);
  }
}

// A local packet reached its receiver's application: it counts, and its
// acknowledgment leaves.
void Model::LocalDelivered(uint32_t flow, uint32_t bytes) {
  r_.local_bytes += bytes;
  At(now_ + flows_[flow].ack_ns, Ev::kAck, flow, bytes);
}

void Model::CpuSubmit(uint32_t lane, const Work& w) {
  lanes_[lane].q.push_back(w);
  CpuKick();
}

// Each idle CPU takes the head item of the next lane, round-robin from
// next_lane_, that has work and nothing running.
void Model::CpuKick() {
  const auto n = static_cast<uint32_t>(lanes_.size());
  for (uint32_t looked = 0; idle_cpus_ && looked < n; looked++) {
    const uint32_t l = next_lane_;
    next_lane_ = (next_lane_ + 1) % n;
    Lane& lane = lanes_[l];
    if (lane.running || lane.q.empty())
      continue;
    lane.running = true;
    idle_cpus_--;
    looked = 0;  // every lane may be looked at again for the next CPU
    const uint64_t cost =
        lane.q.front().local ? c_.local_cpu_ns : c_.message_cpu_ns;
    r_.cpu_busy_ns += cost;
    At(now_ + cost, Ev::kCpuDone, l);
  }
}

void Model::CpuDone(uint32_t lane) {
  Lane& l = lanes_[lane];
  const Work w = l.q.front();
  l.q.pop_front();
  l.running = false;
  idle_cpus_++;
  if (w.local)
    LocalDelivered(w.flow, w.bytes);
  else
    ParallelReceived(w.bytes);
  CpuKick();
}

void Model::FillFlow(uint32_t f) {
  if (ended_)
    return;  // after the job: the local flows stop sending
  Flow& fl = flows_[f];
  while (fl.inflight + c_.mtu <= c_.window) {
    fl.inflight += c_.mtu;
    HostEnqueue(fl.src, NewPacket(Packet{fl.src, fl.dst, c_.mtu, Kind::kLocal,
                                         f, 0, 0}));
  }
}

void Model::StartPhase() {
  const Phase ph = c_.phases[phase_ % c_.phases.size()];
  const uint64_t round = phase_ / c_.phases.size();
  phase_start_ = now_;
  phase_left_ = 0;
  auto send = [&](uint32_t src, const std::vector<uint32_t>& dsts) {
    // One packet to each destination in turn, as a pairwise exchange
    // would spread them.
    std::vector<uint64_t> left(dsts.size(), c_.message);
    for (bool any = true; any;) {
      any = false;
      for (size_t i = 0; i < dsts.size(); i++) {
        if (!left[i])
          continue;
        const auto b =
            static_cast<uint32_t>(std::min<uint64_t>(left[i], c_.mtu));
        left[i] -= b;
        phase_left_ += b;
        any = true;
        HostEnqueue(src,
                    NewPacket(Packet{src, dsts[i], b, Kind::kParallel,
                                     static_cast<uint32_t>(phase_), 0, 0}));
      }
    }
  };
  if (ph == Phase::kAllToAll) {
    for (size_t i = 0; i < job_.size(); i++) {
      std::vector<uint32_t> dsts;
      for (size_t k = 1; k < job_.size(); k++)
        dsts.push_back(job_[(i + k) % job_.size()]);
      send(job_[i], dsts);
    }
  } else if (ph == Phase::kIncast) {
    const uint32_t root = job_[round % job_.size()];
    for (uint32_t j : job_)
      if (j != root)
        send(j, {root});
  } else {
    const uint32_t root = job_[round % job_.size()];
    std::vector<uint32_t> dsts;
    for (uint32_t j : job_)
      if (j != root)
        dsts.push_back(j);
    send(root, dsts);
  }
}

// The receive monitor: its reports, edge-triggered as the kernel's.
void Model::Monitor(uint32_t h, const Packet& p) {
  Host& host = hosts_[h];
  if (!host.granter)
    return;
  if (p.kind == Kind::kParallel) {
    host.last_par = now_;
    if (!host.active) {
      host.active = true;
      host.throttle_from = now_;
      At(now_ + c_.react_ns, Ev::kReport, h, kStart);
      At(now_ + c_.hold_ns, Ev::kStopCheck, h);
    }
    return;
  }
  host.last_local[p.src] = now_;
  if (!host.active)
    return;
  auto it = host.reported.find(p.src);
  if (it != host.reported.end() && now_ - it->second < c_.hold_ns)
    return;
  host.reported[p.src] = now_;
  At(now_ + c_.react_ns, Ev::kReport, h, kLocalSender);
}

// parqd's receiving role acting on a report of host @h's monitor.
void Model::Report(uint32_t h, uint32_t kind) {
  Host& host = hosts_[h];
  parqd::Granter& g = *host.granter;
  const uint64_t cutoff = now_ > c_.hold_ns ? now_ - c_.hold_ns : 0;
  switch (kind) {
    case kStart: {
      g.ParallelStarted();
      g.SawParallel(host.last_par);
      // The start report dumps the table: who sends local traffic.
      for (const auto& [src, t] : host.last_local)
        if (t >= cutoff)
          g.SawLocal(src, t);
      host.round++;
      host.throttle_left = Decide(h, true);
      break;
    }
    case kLocalSender:
      for (const auto& [src, t] : host.last_local)
        if (t >= cutoff && host.reported.count(src))
          g.SawLocal(src, t);
      Decide(h);
      break;
    case kStop: {
      g.ParallelStopped();
      host.round++;
      host.release_from = host.last_par;
      host.release_left = Decide(h, true);
      break;
    }
  }
  if (!g.granted().empty() && !host.restating) {
    host.restating = true;
    At(now_ + EpochNs(), Ev::kRestate, h);
  }
}

// parqd decides and sends; the messages of a start or stop report
// (@timed) carry the report's round, and their number is returned.
uint32_t Model::Decide(uint32_t h, bool timed) {
  Host& host = hosts_[h];
  uint32_t sent = 0;
  const uint64_t restate =
      std::max<uint64_t>(1, (uint64_t{c_.lease} - 1) / 2) * EpochNs();
  for (const parqd::GrantDecision& d : host.granter->Tick(now_)) {
    const auto peer = static_cast<uint32_t>(d.peer);
    if (d.type == parqd::wire::Type::kGrant) {
      auto it = host.sent.find(peer);
      if (it != host.sent.end() && it->second.second == d.credit &&
          now_ - it->second.first < restate)
        continue;
      host.sent[peer] = {now_, d.credit};
      SendControl(h, peer, Kind::kGrant, d.credit, timed);
    } else {
      host.sent.erase(peer);
      SendControl(h, peer, Kind::kRelease, 0, timed);
    }
    sent++;
  }
  return sent;
}

void Model::SendControl(uint32_t from, uint32_t to, Kind k, uint64_t credit,
                        bool timed) {
  r_.control_messages++;
  HostEnqueue(from, NewPacket(Packet{from, to, kControlBytes, k, 0, credit,
                                     timed ? hosts_[from].round : 0}));
}

// The sending role applies a GRANT or RELEASE of receiver p.src.
void Model::ApplyControl(uint32_t h, const Packet& p) {
  Host& host = hosts_[h];
  Host& rcv = hosts_[p.src];
  if (p.kind == Kind::kGrant) {
    Credit& cr = host.credits[p.src];
    const bool live = cr.expiry > now_ && cr.cfg.credit == p.credit;
    if (!live) {
      cr.cfg =
          parq_credit_cfg{now_, EpochNs(), static_cast<uint32_t>(p.credit)};
      cr.state = 0;
    }
    cr.expiry = parq_credit_expiry(now_, uint64_t{c_.lease} * EpochNs());
    if (p.round && p.round == rcv.round && rcv.throttle_left &&
        --rcv.throttle_left == 0)
      r_.throttle_ns.push_back(now_ - rcv.throttle_from);
  } else {
    host.credits.erase(p.src);
    if (p.round && p.round == rcv.round && rcv.release_left &&
        --rcv.release_left == 0)
      r_.release_ns.push_back(now_ - rcv.release_from);
    PortKick(host.port);
  }
}

void Model::Handle(const Event& e) {
  switch (e.ev) {
    case Ev::kTxDone:
      ports_[e.a].busy = false;
      PortKick(e.a);
      break;
    case Ev::kArrive:
      Arrive(e.a, static_cast<uint32_t>(e.b));
      break;
    case Ev::kWake:
      if (hosts_[e.a].wake_at == now_) {
        hosts_[e.a].wake_at = kNever;
        PortKick(hosts_[e.a].port);
      }
      break;
    case Ev::kAck:
      flows_[e.a].inflight -= e.b;
      FillFlow(e.a);
      break;
    case Ev::kPhase:
      if (phase_ == 0)
        job_start_ = now_;
      StartPhase();
      break;
    case Ev::kStopCheck: {
      Host& host = hosts_[e.a];
      if (host.last_par + c_.hold_ns <= now_) {
        host.active = false;
        host.reported.clear();
        At(now_ + c_.react_ns, Ev::kReport, e.a, kStop);
      } else {
        At(host.last_par + c_.hold_ns, Ev::kStopCheck, e.a);
      }
      break;
    }
    case Ev::kReport:
      Report(e.a, static_cast<uint32_t>(e.b));
      break;
    case Ev::kCpuDone:
      CpuDone(e.a);
      break;
    case Ev::kRestate: {
      Host& host = hosts_[e.a];
      host.restating = false;
      Decide(e.a);
      if (!host.granter->granted().empty()) {
        host.restating = true;
        At(now_ + EpochNs(), Ev::kRestate, e.a);
      }
      break;
    }
  }
}

Result Model::Go() {
  // The local flows run alone for a millisecond before the parallel job
  // starts, so that it meets them in their steady state.
  const uint64_t warmup = c_.local ? 1'000'000 : 0;
  for (uint32_t f = 0; f < flows_.size(); f++)
    FillFlow(f);
  if (c_.parallel)
    At(warmup, Ev::kPhase, 0);
  // Without the parallel job: local_only_ns after the warmup.  With it:
  // until it ends, then on for two holds and two leases, the local flows
  // stopped, so that the releases arrive (their times are counted,
  // nothing else).
  uint64_t horizon = c_.parallel ? kNever : warmup + c_.local_only_ns;
  uint64_t local_at_start = 0;
  uint64_t local_job = 0;  // local bytes delivered while the job ran
  bool measuring = false;
  while (!q_.empty() && q_.top().t < horizon) {
    const Event e = q_.top();
    q_.pop();
    now_ = e.t;
    r_.events++;
    if (!measuring && now_ >= warmup) {
      measuring = true;
      local_at_start = r_.local_bytes;
    }
    Handle(e);
    if (job_done_ && !ended_) {
      ended_ = true;
      r_.end_ns = now_;
      local_job = r_.local_bytes - local_at_start;
      horizon = now_ + 2 * c_.hold_ns + 2 * uint64_t{c_.lease} * EpochNs();
    }
  }
  if (!c_.parallel) {
    r_.end_ns = horizon;
    r_.local_bytes -= local_at_start;
  } else {
    // What arrived after the job ended is not in the job's time.
    r_.local_bytes = local_job;
  }
  const uint64_t span = c_.parallel ? r_.parallel_ns : c_.local_only_ns;
  r_.local_gbps = span ? double(r_.local_bytes) * 8 / double(span) : 0;
  const double secs = double(now_) / 1e9;  // the whole simulated time
  r_.control_per_host_s =
      secs > 0 ? double(r_.control_messages) / c_.hosts / secs : 0;
  for (const Port& p : ports_)
    r_.control_link_mean_pct =
        std::max(r_.control_link_mean_pct, Pct(p.ctl_sent, p.bps, now_));
  return r_;
}

}  // namespace

std::string CheckConfig(const Config& c) {
  if (c.hosts < 2)
    return "hosts: at least 2";
  if (c.rack == 0 || c.rack > c.hosts)
    return "rack: 1 to hosts";
  if (c.job_hosts < 2 || c.job_hosts > c.hosts)
    return "job-hosts: 2 to hosts";
  if (c.local && c.local_flows.empty() && c.job_hosts == c.hosts)
    return "job-hosts: local jobs need hosts outside the job (or "
           "local-flow)";
  for (const auto& [src, dst] : c.local_flows)
    if (src >= c.hosts || dst >= c.hosts || src == dst)
      return "local-flow: two different hosts, each below hosts";
  if (c.link_bps == 0 || c.mtu == 0 || c.window < c.mtu)
    return "link, mtu and window (at least one mtu) must be positive";
  if (c.phases.empty() || c.rounds == 0)
    return "phases and rounds: at least one";
  if (!c.parallel && !c.local)
    return "nothing to run: neither the parallel job nor local jobs";
  if (c.threshold == 0 || c.threshold > PARQ_THRESHOLD_INF)
    return "threshold: 1 to 65535";
  if (c.control_first && c.scheduler != Scheduler::kParqd)
    return "control-first: only parqd sends control messages";
  parqd::GrantPolicy p;
  p.threshold_recv = c.threshold_recv;
  p.hold_ns = c.hold_ns;
  p.epoch_us = c.epoch_us;
  p.lease = c.lease;
  if (auto err = parqd::CheckPolicy(p))
    return *err;
  return "";
}

Result Simulate(const Config& c) {
  Model m(c);
  return m.Go();
}

}  // namespace parq::sim
