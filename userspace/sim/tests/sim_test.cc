// SPDX-License-Identifier: GPL-2.0
//
// parq-sim's model: its arithmetic where it can be computed by hand, and
// the orderings the papers predict, each in one run.

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "sim.h"

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

// One local flow alone, its window far above the path's bandwidth-delay
// product: it fills the link.
TEST(SimTest, LocalFlowFillsTheLink) {
  Config c = OneSwitch(2, Phase::kIncast, 0);
  c.parallel = false;
  c.local = true;
  c.local_flows = {{0, 1}};
  c.local_only_ns = 10'000'000;
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
}

}  // namespace
}  // namespace parq::sim
