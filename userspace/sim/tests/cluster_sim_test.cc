// SPDX-License-Identifier: GPL-2.0
//
// parq-sim's model: its arithmetic where it can be computed by hand, and
// the orderings the papers predict, each in one run.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cluster_sim.h"

namespace parq::sim {
namespace {

// @hosts hosts under one switch at 1 Gbit/s (12 us per 1 500-byte
// packet), 1 us per link, the job on all of them, one round of @phase of
// @message bytes, no local flow.
Config OneSwitch(uint32_t hosts, Phase phase, uint64_t message) {
  Config c;
  c.hosts = hosts;
  c.rack = hosts;
  c.job_hosts = hosts;
  c.local = false;
  c.phases = {phase};
  c.rounds = 1;
  c.message = message;
  c.link_bps = 1'000'000'000;
  c.prop_ns = 1000;
  return c;
}

// Two hosts in one rack, one message from the job's first host to the
// second, nothing else: its time is the serialization of its packets on
// two links, pipelined, plus two propagation delays.
TEST(SimTest, OneMessageTakesItsSerialization) {
  // Host 1 sends 10 packets of 1 500 bytes to the root, host 0.
  const Result r = Simulate(OneSwitch(2, Phase::kIncast, 15000));
  ASSERT_EQ(r.phase_ns.size(), 1u);
  // 11 serializations of 12 us (10 on the host's link, the last one
  // again on the switch's) and 2 propagation delays.
  EXPECT_EQ(r.phase_ns[0], 11 * 12000 + 2 * 1000);
  EXPECT_EQ(r.control_messages, 0u);
}

// A broadcast: the root's link carries every copy, then each copy crosses
// its own switch port.
TEST(SimTest, BroadcastTakesTheRootsSerialization) {
  const Result r = Simulate(OneSwitch(3, Phase::kBroadcast, 1500));
  ASSERT_EQ(r.phase_ns.size(), 1u);
  // Two copies on the root's link (2 x 12 us), the second then on its
  // switch port (12 us), two propagation delays.
  EXPECT_EQ(r.phase_ns[0], 3 * 12000 + 2 * 1000);
}

// One local flow from host 0 to host 1 and nothing else, for 10 ms.
Config LocalFlowAlone() {
  Config c = OneSwitch(2, Phase::kIncast, 0);
  c.parallel = false;
  c.local = true;
  c.local_flows = {{0, 1}};
  c.local_only_ns = 10'000'000;
  return c;
}

// One local flow alone, its window far above the path's bandwidth-delay
// product: it fills the link.
TEST(SimTest, LocalFlowFillsTheLink) {
  const Config c = LocalFlowAlone();
  ASSERT_EQ(CheckConfig(c), "");
  const Result r = Simulate(c);
  EXPECT_NEAR(r.local_gbps, 1.0, 0.01);
}

Config Loaded(Scheduler s) {
  Config c;
  c.hosts = 64;
  c.rack = 16;
  c.job_hosts = 16;
  c.scheduler = s;
  c.rounds = 2;
  return c;
}

uint64_t Sum(const std::vector<uint64_t>& v) {
  return std::accumulate(v.begin(), v.end(), uint64_t{0});
}

// Against local flows into its hosts, the job is slowest through FIFOs,
// faster with sch_parq at the senders, fastest with parqd's credits too
// (the local senders held back in front of the receivers' switch ports).
TEST(SimTest, ParqdShortensTheJobAgainstLocalFlows) {
  const Result fifo = Simulate(Loaded(Scheduler::kFifo));
  const Result parq = Simulate(Loaded(Scheduler::kParq));
  const Result parqd = Simulate(Loaded(Scheduler::kParqd));
  Config alone_c = Loaded(Scheduler::kFifo);
  alone_c.local = false;
  const Result alone = Simulate(alone_c);
  EXPECT_LT(Sum(parqd.phase_ns), Sum(parq.phase_ns));
  EXPECT_LE(Sum(parq.phase_ns), Sum(fifo.phase_ns));
  EXPECT_GE(Sum(parqd.phase_ns), Sum(alone.phase_ns));
  EXPECT_GT(parqd.control_messages, 0u);
  EXPECT_EQ(parq.control_messages, 0u);
  EXPECT_GT(parqd.local_bytes, 0u);
}

// Every start report that granted someone saw its GRANTs arrive, and every
// stop report's RELEASEs arrived too; both within a few epochs.
TEST(SimTest, ThrottlesAndReleases) {
  const Config c = Loaded(Scheduler::kParqd);
  const Result r = Simulate(c);
  ASSERT_FALSE(r.throttle_ns.empty());
  ASSERT_FALSE(r.release_ns.empty());
  const uint64_t epoch = uint64_t{c.epoch_us} * 1000;
  EXPECT_LT(*std::max_element(r.throttle_ns.begin(), r.throttle_ns.end()),
            c.react_ns + 10 * epoch);
  EXPECT_GE(*std::min_element(r.release_ns.begin(), r.release_ns.end()),
            c.hold_ns);
}

// Control traffic per link: 4 hosts at 1 Gbit/s, the job on hosts 0 and
// 2, one local flow from host 1 into host 2.  Only host 2 grants, so all
// GRANTs and RELEASEs leave by its link: the busiest link's mean is every
// message's 128 bytes over the simulated time, and its busiest epoch
// carries a whole number of messages, at least one.  With a lease of 3
// epochs the grant is restated every epoch.
TEST(SimTest, ControlTrafficPerLink) {
  Config c = OneSwitch(4, Phase::kIncast, 16384);
  c.job_hosts = 2;
  c.local = true;
  c.local_flows = {{1, 2}};
  c.rounds = 20;
  c.scheduler = Scheduler::kParqd;
  c.lease = 3;  // a restatement every epoch
  const Result r = Simulate(c);
  ASSERT_GT(r.control_messages, 2u);
  const double secs =
      double(r.control_messages) / c.hosts / r.control_per_host_s;
  const double mean =
      double(r.control_messages) * 128 * 8 * 100 / (double(c.link_bps) * secs);
  EXPECT_NEAR(r.control_link_mean_pct, mean, mean * 1e-9);
  const double one = 128.0 * 8 * 100 / (double(c.link_bps) * 1e-3);
  EXPECT_GE(r.control_link_peak_pct, one);
  const double n = r.control_link_peak_pct / one;
  EXPECT_NEAR(n, std::round(n), 1e-9);
  // Restated every epoch, the messages spread over many epochs: one
  // epoch holds fewer than all of them.
  EXPECT_LT(n, double(r.control_messages));
  EXPECT_GE(r.control_link_peak_pct, r.control_link_mean_pct);
  c.scheduler = Scheduler::kFifo;
  const Result fifo = Simulate(c);
  EXPECT_EQ(fifo.control_link_mean_pct, 0);
  EXPECT_EQ(fifo.control_link_peak_pct, 0);
}

// sim_scale.py's case at @hosts hosts (a job on a quarter of them).
Config AtScale(uint32_t hosts, bool control_first) {
  Config c;
  c.hosts = hosts;
  c.rack = 32;
  c.job_hosts = hosts / 4;
  c.rounds = 2;
  c.message = 16384;
  c.scheduler = Scheduler::kParqd;
  c.control_first = control_first;
  return c;
}

uint64_t Median(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// In the parallel class a GRANT waits behind the receiver's share of the
// all-to-all, so the time to throttle grows with the job; served first,
// it crosses the hosts and switches in a few serializations whatever the
// size.
TEST(SimTest, ControlFirstThrottlesInTheSameTimeAtEverySize) {
  const Result late64 = Simulate(AtScale(64, false));
  const Result late128 = Simulate(AtScale(128, false));
  const Result first64 = Simulate(AtScale(64, true));
  const Result first128 = Simulate(AtScale(128, true));
  ASSERT_FALSE(first64.throttle_ns.empty());
  ASSERT_FALSE(first128.throttle_ns.empty());
  EXPECT_GT(Median(late128.throttle_ns), 2 * Median(late64.throttle_ns));
  const uint64_t max128 = *std::max_element(first128.throttle_ns.begin(),
                                            first128.throttle_ns.end());
  EXPECT_LT(max128, 2 * Median(first64.throttle_ns));
  EXPECT_LT(10 * Median(first128.throttle_ns), Median(late128.throttle_ns));
  // Every stop report's RELEASEs arrived too.
  EXPECT_FALSE(first128.release_ns.empty());
  EXPECT_GT(first128.control_messages, 0u);
}

// The CPU model: 2 hosts at 1 Gbit/s (512 ns per 64-byte packet), a
// ping-pong of 64 bytes (the root's message, then the answer), one CPU
// and 100 us of it per message received.
Config PingPong() {
  Config c = OneSwitch(2, Phase::kBroadcast, 64);
  c.phases = {Phase::kBroadcast, Phase::kIncast};
  c.gap_ns = 0;
  c.cpus = 1;
  c.message_cpu_ns = 100'000;
  return c;
}

// Each way: two serializations, two propagation delays, then the
// receiver's CPU time.
TEST(SimTest, CpuPingPongTakesItsCost) {
  const Result r = Simulate(PingPong());
  ASSERT_EQ(r.phase_ns.size(), 2u);
  EXPECT_EQ(r.phase_ns[0], 2 * 512 + 2 * 1000 + 100'000);
  EXPECT_EQ(r.phase_ns[1], 2 * 512 + 2 * 1000 + 100'000);
  EXPECT_EQ(r.cpu_busy_ns, 200'000u);
}

// Two receivers' messages on one CPU run one after the other; on two,
// side by side.  The root's link sends the second copy 512 ns after the
// first.
TEST(SimTest, CpusServeMessagesInParallel) {
  Config c = OneSwitch(3, Phase::kBroadcast, 64);
  c.cpus = 1;
  c.message_cpu_ns = 100'000;
  Result r = Simulate(c);
  ASSERT_EQ(r.phase_ns.size(), 1u);
  EXPECT_EQ(r.phase_ns[0], 2 * 512 + 2 * 1000 + 2 * 100'000);
  c.cpus = 2;
  r = Simulate(c);
  ASSERT_EQ(r.phase_ns.size(), 1u);
  EXPECT_EQ(r.phase_ns[0], 3 * 512 + 2 * 1000 + 100'000);
}

// One application's messages run one after the other, whatever the
// CPUs: the root's three answers on four CPUs take three costs.
TEST(SimTest, OneApplicationIsOneThread) {
  Config c = OneSwitch(4, Phase::kIncast, 64);
  c.cpus = 4;
  c.message_cpu_ns = 100'000;
  const Result r = Simulate(c);
  ASSERT_EQ(r.phase_ns.size(), 1u);
  // The three answers arrive 512 ns apart at the root's switch port; the
  // first is there after 2 x 512 ns and 2 us.
  EXPECT_EQ(r.phase_ns[0], 2 * 512 + 2 * 1000 + 3 * 100'000);
}

// A local flow alone, its receiver's CPU slower than the link: the CPU
// sets its rate, one packet per local_cpu_ns.
TEST(SimTest, CpuLimitsALocalFlow) {
  Config c = LocalFlowAlone();
  c.cpus = 1;
  c.local_cpu_ns = 50'000;  // 1 500 bytes per 50 us: 240 Mbit/s
  const Result r = Simulate(c);
  EXPECT_NEAR(r.local_gbps, 0.24, 0.005);
}

// A local flow into the answering host takes CPU turns from the
// ping-pong: each message waits for the local packet running before it.
TEST(SimTest, LocalCpuWorkLengthensTheRound) {
  Config c = PingPong();
  c.local = true;
  c.local_flows = {{0, 1}};
  c.local_cpu_ns = 50'000;
  const Result r = Simulate(c);
  ASSERT_EQ(r.phase_ns.size(), 2u);
  EXPECT_GT(r.phase_ns[0], 2 * 512 + 2 * 1000 + 100'000);
  EXPECT_LE(r.phase_ns[0], 2 * 512 + 2 * 1000 + 100'000 + 50'000 + 12'000);
  EXPECT_GT(r.local_bytes, 0u);
}

// Without CPUs the costs are ignored: the old model, to the event.
TEST(SimTest, NoCpusIsTheModelWithoutThem) {
  Config c = Loaded(Scheduler::kParqd);
  const Result plain = Simulate(c);
  c.cpus = 0;
  c.message_cpu_ns = 1'000'000;
  c.local_cpu_ns = 1'000'000;
  const Result r = Simulate(c);
  EXPECT_EQ(r.phase_ns, plain.phase_ns);
  EXPECT_EQ(r.local_bytes, plain.local_bytes);
  EXPECT_EQ(r.control_messages, plain.control_messages);
  EXPECT_EQ(r.events, plain.events);
  EXPECT_EQ(r.cpu_busy_ns, 0u);
}

// sim_scale.py's 64-host parqd case, base load, gives what the committed
// Documentation/results/sim.csv has (job_us 1563.85, events 386102).
TEST(SimTest, CommittedRunUnchanged) {
  const Config c = AtScale(64, false);
  ASSERT_EQ(c.local_in, 2u);
  ASSERT_EQ(c.local_out, 1u);
  const Result r = Simulate(c);
  EXPECT_EQ(r.parallel_ns, 1563846u);
  EXPECT_EQ(r.events, 386102u);
}

TEST(SimTest, ConfigChecks) {
  Config c;
  EXPECT_EQ(CheckConfig(c), "");
  c.job_hosts = c.hosts;
  EXPECT_NE(CheckConfig(c), "");
  c = Config{};
  c.epoch_us = 1;
  EXPECT_NE(CheckConfig(c), "");
  c = Config{};
  c.parallel = false;
  c.local = false;
  EXPECT_NE(CheckConfig(c), "");
  c = Config{};
  c.local_flows = {{0, 0}};
  EXPECT_NE(CheckConfig(c), "");
  c.local_flows = {{0, c.hosts}};
  EXPECT_NE(CheckConfig(c), "");
  c = Config{};
  c.control_first = true;
  EXPECT_EQ(CheckConfig(c), "");
  c.scheduler = Scheduler::kParq;
  EXPECT_EQ(CheckConfig(c), "control-first: only parqd sends control messages");
}

}  // namespace
}  // namespace parq::sim
