// SPDX-License-Identifier: GPL-2.0
//
// parq-sim: a discrete-event simulation of a cluster on a two-level tree,
// for more hosts than a VM can hold (Documentation/simulation.md).
//
// What is real and what is modelled:
//   - Each host's egress runs sch_parq's own policy (kmod/core:
//     parq_sched_decide, parq_sched_sent, the receiver credits'
//     parq_credit_take and parq_credit_next), the same C the module
//     compiles; or one FIFO, the baseline.
//   - Each receiving host runs parqd's own Granter (userspace/parqd,
//     grant.h), driven as the receiving role drives it: the monitor's
//     start report (the first parallel packet after a quiet `hold`), its
//     local-sender reports (at most one per source per hold) and its stop
//     report (no parallel packet for `hold`) decide at once; restatements
//     every (lease - 1) / 2 epochs.  GRANT and RELEASE are 128-byte packets
//     that cross the network like any other, in the parallel class; or,
//     with `control_first`, in a network-control class (CS6) that each
//     host's egress and each switch port serve before anything else (at a
//     host, ahead of sch_parq's policy, which does not count them).
//   - Links: serialization at their rate plus a propagation delay.
//     Switches: output-queued, one FIFO per port (and the control class's
//     queue ahead of it with `control_first`), no drops (the queues'
//     peaks are reported instead), as ordinary Ethernet with buffers large
//     enough.
//   - Local jobs: bulk flows with a fixed window of bytes in flight; a
//     packet's acknowledgment returns to the sender one path's propagation
//     after the packet arrives, without taking link capacity.  No
//     congestion control beyond the window, no loss, no retransmission.
//   - The parallel job: phases of all-to-all (every job host sends
//     `message` bytes to every other), incast (every job host sends
//     `message` bytes to one root) and broadcast (the root sends `message`
//     bytes to every other job host), each phase starting `gap` after the
//     previous one ended everywhere; no computation but the CPU model's.
//     The root of round i is the job's host i (mod its size).
//   - Packets carry `mtu` bytes at most; headers and the Ethernet preamble
//     and gap are not modelled.
//   - CPUs (off unless `cpus` > 0): one pool of `cpus` CPUs that every host
//     shares, as the namespaces of one VM share its vCPUs.  Work items
//     queue in lanes: each host's application (one thread: a received
//     parallel message costs it `message_cpu_ns`, receiving and answering
//     it) and each host's local receive path (every local packet delivered
//     costs `local_cpu_ns`).  A lane is FIFO and runs one item at a time;
//     a CPU that falls free takes the head of the next lane, in
//     round-robin order, that has work and none running, and runs it to
//     its end (no preemption).  A parallel message counts as received, and
//     a local packet as delivered and acknowledged, when its item ends.
//     Sending costs no CPU.

#ifndef SIM_CLUSTER_SIM_H
#define SIM_CLUSTER_SIM_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "proto/wire.h"

namespace parq::sim {

enum class Scheduler {
  kFifo,   // one FIFO at each host's egress, no parqd
  kParq,   // sch_parq's THRESHOLD_send at each host's egress, no parqd
  kParqd,  // sch_parq and parqd's receiver credits
};

enum class Phase { kAllToAll, kIncast, kBroadcast };

struct Config {
  uint32_t hosts = 64;
  uint32_t rack = 16;                     // hosts per top-of-rack switch
  uint64_t link_bps = 10'000'000'000ULL;  // host links
  uint32_t oversubscription = 1;          // rack uplink = rack * link / this
  uint64_t prop_ns = 1000;                // per link
  uint32_t mtu = 1500;
  Scheduler scheduler = Scheduler::kParqd;
  // sch_parq: THRESHOLD_send.
  uint32_t threshold = 4;  // units of parallel per unit of local
  bool unit_packets = false;
  // parqd's receiving role, with parqd's defaults (Documentation/parqd.md).
  uint32_t epoch_us = 1000;
  uint64_t threshold_recv = 0;    // bytes per epoch, to each host
  uint32_t local_floor_pct = 20;  // of link_bps, shared per epoch
  uint64_t hold_ns = 10'000'000;  // also the monitor's
  uint16_t lease = parqd::wire::kDefaultLeaseEpochs;  // epochs
  uint64_t react_ns = 10'000;  // a report to parqd's decision
  bool control_first = false;  // GRANT and RELEASE ahead of data
                               // (kParqd only: no other sends them)
  // The parallel job.
  uint32_t job_hosts = 16;   // hosts 0, stride, 2 stride, ...
  uint64_t message = 16384;  // bytes per pair and phase
  std::vector<Phase> phases = {Phase::kAllToAll, Phase::kIncast};
  uint32_t rounds = 4;  // the phases, this many times
  uint64_t gap_ns = 100'000;
  // Local jobs: per job host, this many bulk flows toward it from random
  // hosts outside the job, and as many from it to random hosts.
  uint32_t local_in = 2;
  uint32_t local_out = 1;
  // Or exactly these local flows (source, destination), if any.
  std::vector<std::pair<uint32_t, uint32_t>> local_flows;
  uint64_t window = 65536;             // bytes in flight per local flow
  bool parallel = true;                // run the parallel job
  bool local = true;                   // run the local jobs
  uint64_t local_only_ns = 5'000'000;  // without the parallel job: run time
  uint64_t seed = 1;
  // CPUs shared by all hosts; 0: no CPU model (the costs are ignored).
  uint32_t cpus = 0;
  uint64_t message_cpu_ns = 0;  // per parallel message received
  uint64_t local_cpu_ns = 0;    // per local packet delivered
};

// Why a Config cannot run, or "".
std::string CheckConfig(const Config& c);

struct Result {
  uint64_t end_ns = 0;             // the simulated time
  std::vector<uint64_t> phase_ns;  // each phase's duration, in order
  uint64_t parallel_ns = 0;        // the job: first start to last end
  uint64_t local_bytes = 0;        // local bytes delivered
  double local_gbps = 0;           // local bytes / parallel_ns (or run)
  uint64_t control_messages = 0;   // GRANT + RELEASE sent
  double control_per_host_s = 0;   // per host and simulated second
  // GRANT and RELEASE bytes on the busiest link in percent of its
  // capacity: over the whole simulated time, and in its busiest epoch.
  double control_link_mean_pct = 0;
  double control_link_peak_pct = 0;
  std::vector<uint64_t> throttle_ns;  // per start report: to the last
                                      // first GRANT's arrival
  std::vector<uint64_t> release_ns;   // per stop report: last parallel
                                      // arrival to the last RELEASE's
  uint64_t max_switch_queue = 0;      // bytes, any switch port
  uint64_t max_host_queue = 0;        // bytes, any host egress
  uint64_t cpu_busy_ns = 0;           // CPU work done, all CPUs
  uint64_t events = 0;
};

Result Simulate(const Config& c);

}  // namespace parq::sim

#endif
