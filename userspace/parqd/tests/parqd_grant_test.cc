// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of grant.cc: which sending hosts a receiving host grants and
// releases, epoch by epoch, with `hold`.

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "proto/grant.h"
#include "test_util.h"

namespace {

using namespace parq::parqd;
using parq::parqd::test::A;
using parq::parqd::test::Recipient;
using parq::parqd::test::TestKey;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kGrantBytes = 12'000;

GrantPolicy Policy() {
  GrantPolicy p;
  p.threshold_recv = kGrantBytes;
  p.hold_ns = 50 * kMs;
  p.epoch_us = 10'000;
  return p;
}

GrantDecision G(uint64_t peer) {
  return {peer, wire::Type::kGrant, kGrantBytes};
}
GrantDecision R(uint64_t peer) {
  return {peer, wire::Type::kRelease, 0};
}
using Ds = std::vector<GrantDecision>;

TEST(GrantPolicy, Checks) {
  EXPECT_FALSE(CheckPolicy(Policy()));
  auto p = Policy();
  p.hold_ns = 0;
  EXPECT_NE(CheckPolicy(p)->find("hold"), std::string::npos);
  p = Policy();
  p.epoch_us = 50;
  EXPECT_NE(CheckPolicy(p)->find("epoch"), std::string::npos);
  p = Policy();
  p.lease = 0;
  EXPECT_NE(CheckPolicy(p)->find("lease"), std::string::npos);
  EXPECT_EQ(GrantPolicy{}.threshold_recv, 0u);  // default: stop
  EXPECT_EQ(GrantPolicy{}.lease, 49);           // default: 49 epochs
}

// Grants held and local senders seen interleave by id: each peer is
// decided once, in order, and only the grants that are new are named so.
TEST(Granter, InterleavedPeersAreEachDecidedOnceInOrder) {
  Granter g(Policy());
  g.SawParallel(0);
  for (uint64_t peer : {1, 3, 5})
    g.SawLocal(peer, 0);
  EXPECT_EQ(g.Tick(0), (Ds{G(1), G(3), G(5)}));
  EXPECT_EQ(g.newly_granted(), (std::vector<uint64_t>{1, 3, 5}));
  // 1, 3 and 5 hold their grants; 2, 3 and 6 send local traffic now.
  for (uint64_t peer : {2, 3, 6})
    g.SawLocal(peer, 60 * kMs);
  g.SawParallel(60 * kMs);
  EXPECT_EQ(g.Tick(60 * kMs), (Ds{G(1), G(2), G(3), G(5), G(6)}));
  EXPECT_EQ(g.newly_granted(), (std::vector<uint64_t>{2, 6}));
  EXPECT_EQ(g.granted(), (std::set<uint64_t>{1, 2, 3, 5, 6}));
  g.SawParallel(70 * kMs);
  EXPECT_EQ(g.Tick(70 * kMs), (Ds{G(1), G(2), G(3), G(5), G(6)}));
  EXPECT_TRUE(g.newly_granted().empty());
  // Parallel traffic gone for `hold`: every grant released, in order.
  EXPECT_EQ(g.Tick(200 * kMs), (Ds{R(1), R(2), R(3), R(5), R(6)}));
  EXPECT_TRUE(g.granted().empty());
  EXPECT_EQ(g.Tick(300 * kMs), Ds{});
}

TEST(Granter, NothingWithoutObservations) {
  Granter g(Policy());
  EXPECT_EQ(g.Tick(0), Ds{});
  EXPECT_EQ(g.Tick(1000 * kMs), Ds{});
}

TEST(Granter, LocalOnlyIsNotGranted) {
  Granter g(Policy());
  g.SawLocal(1, 10 * kMs);
  EXPECT_EQ(g.Tick(10 * kMs), Ds{});
}

TEST(Granter, ParallelOnlyGrantsNobody) {
  Granter g(Policy());
  g.SawParallel(10 * kMs);
  EXPECT_TRUE(g.parallel_active(10 * kMs));
  EXPECT_EQ(g.Tick(10 * kMs), Ds{});
}

TEST(Granter, GrantsEveryLocalSenderEveryEpochWhileParallelArrives) {
  Granter g(Policy());
  uint64_t now = 100 * kMs;
  for (int epoch = 0; epoch < 5; epoch++, now += 10 * kMs) {
    g.SawParallel(now);
    g.SawLocal(3, now);
    g.SawLocal(1, now);
    EXPECT_EQ(g.Tick(now), (Ds{G(1), G(3)})) << epoch;  // restated each time
  }
}

TEST(Granter, TheFloorIsSharedByTheHostsGrantedInTheEpoch) {
  auto p = Policy();
  p.threshold_recv = 0;
  p.floor_bytes = 10'000;
  Granter g(p);
  g.SawParallel(0);
  g.SawLocal(1, 0);
  EXPECT_EQ(g.Tick(0), (Ds{{1, wire::Type::kGrant, 10'000}}));
  // Three hosts: a third each, rounded up, so that they reach the floor.
  g.SawParallel(10 * kMs);
  g.SawLocal(2, 10 * kMs);
  g.SawLocal(3, 10 * kMs);
  EXPECT_EQ(g.Tick(10 * kMs), (Ds{{1, wire::Type::kGrant, 3'334},
                                  {2, wire::Type::kGrant, 3'334},
                                  {3, wire::Type::kGrant, 3'334}}));
}

TEST(Granter, ThresholdRecvIsEachHostsMinimum) {
  auto p = Policy();
  p.floor_bytes = 20'000;  // 10 000 each for two: less than kGrantBytes
  Granter g(p);
  g.SawParallel(0);
  g.SawLocal(1, 0);
  g.SawLocal(2, 0);
  EXPECT_EQ(g.Tick(0), (Ds{G(1), G(2)}));
}

TEST(Granter, AReleaseTakesNoShareOfTheFloor) {
  auto p = Policy();
  p.threshold_recv = 0;
  p.floor_bytes = 9'000;
  Granter g(p);
  g.SawParallel(0);
  g.SawLocal(1, 0);
  g.SawLocal(2, 0);
  EXPECT_EQ(g.Tick(0), (Ds{{1, wire::Type::kGrant, 4'500},
                           {2, wire::Type::kGrant, 4'500}}));
  g.ParallelStopped();
  EXPECT_EQ(g.Tick(1 * kMs), (Ds{R(1), R(2)}));
}

TEST(GrantPolicy, FloorBytes) {
  // A fifth of 100 Mbit/s for 5 ms: 12 500 bytes.
  EXPECT_EQ(FloorBytes(100'000'000, 20, 5'000), 12'500u);
  EXPECT_EQ(FloorBytes(10'000'000'000, 20, 1'000), 250'000u);
  EXPECT_EQ(FloorBytes(100'000'000, 0, 5'000), 0u);
  EXPECT_EQ(FloorBytes(UINT64_MAX, 100, wire::kMaxEpochUs), UINT64_MAX);
}

TEST(Granter, ZeroThresholdGrantsStop) {
  auto p = Policy();
  p.threshold_recv = 0;
  Granter g(p);
  g.SawParallel(0);
  g.SawLocal(1, 0);
  EXPECT_EQ(g.Tick(0), (Ds{{1, wire::Type::kGrant, 0}}));
}

TEST(Granter, HoldEdge) {
  Granter g(Policy());
  g.SawParallel(100 * kMs);
  g.SawLocal(1, 130 * kMs);
  EXPECT_EQ(g.Tick(100 * kMs + 50 * kMs - 1), Ds{G(1)});  // hold not over
  EXPECT_EQ(g.Tick(100 * kMs + 50 * kMs), Ds{R(1)});      // exactly hold
  EXPECT_EQ(g.Tick(160 * kMs), Ds{});                     // released once
  EXPECT_TRUE(g.granted().empty());
}

TEST(Granter, ParallelResumingGrantsAgain) {
  Granter g(Policy());
  g.SawParallel(0);
  g.SawLocal(1, 0);
  EXPECT_EQ(g.Tick(0), Ds{G(1)});
  g.SawLocal(1, 60 * kMs);
  EXPECT_EQ(g.Tick(60 * kMs), Ds{R(1)});
  g.SawParallel(70 * kMs);
  EXPECT_EQ(g.Tick(70 * kMs), Ds{G(1)});
}

// A granted host goes quiet because of the grant (credit 0 here): it keeps
// the grant while parallel traffic arrives, and is released with the
// others when the parallel traffic stops, then forgotten.
TEST(Granter, GrantedHostKeepsItsGrantWhileParallelArrives) {
  GrantPolicy p = Policy();
  p.threshold_recv = 0;
  Granter g(p);
  const GrantDecision stop{1, wire::Type::kGrant, 0};
  g.SawLocal(1, 0);
  for (uint64_t t = 0; t <= 200 * kMs; t += 10 * kMs) {
    g.SawParallel(t);
    EXPECT_EQ(g.Tick(t), Ds{stop}) << t;
  }
  EXPECT_EQ(g.Tick(250 * kMs), Ds{R(1)});
  EXPECT_TRUE(g.granted().empty());
  g.SawParallel(260 * kMs);
  EXPECT_EQ(g.Tick(260 * kMs), Ds{});  // 1 sent nothing since: forgotten
}

TEST(Granter, ParallelStoppedReleasesAtOnce) {
  Granter g(Policy());
  g.SawParallel(0);
  g.SawLocal(1, 0);
  EXPECT_EQ(g.Tick(0), Ds{G(1)});
  g.SawLocal(1, 5 * kMs);
  g.ParallelStopped();  // before hold has passed since the last parallel
  EXPECT_FALSE(g.parallel_active(5 * kMs));
  EXPECT_EQ(g.Tick(5 * kMs), Ds{R(1)});
  g.SawParallel(6 * kMs);  // and a new start grants again
  EXPECT_EQ(g.Tick(6 * kMs), Ds{G(1)});
}

// A start report holds until the stop report, however long ago the last
// parallel arrival the Granter observed.
TEST(Granter, ReportedParallelLastsUntilTheStopReport) {
  Granter g(Policy());
  g.ParallelStarted();
  g.SawLocal(1, 0);
  EXPECT_TRUE(g.parallel_reported());
  EXPECT_EQ(g.Tick(0), Ds{G(1)});
  EXPECT_TRUE(g.parallel_active(500 * kMs));
  EXPECT_EQ(g.Tick(500 * kMs), Ds{G(1)});
  g.ParallelStopped();
  EXPECT_FALSE(g.parallel_reported());
  EXPECT_EQ(g.Tick(500 * kMs + 1), Ds{R(1)});
}

TEST(Granter, NeverGrantedLocalSenderIsForgottenWithoutRelease) {
  Granter g(Policy());
  g.SawLocal(1, 0);
  EXPECT_EQ(g.Tick(60 * kMs), Ds{});
  g.SawParallel(60 * kMs);
  EXPECT_EQ(g.Tick(60 * kMs), Ds{});  // 1 is gone, not granted
}

TEST(Granter, ObservationsOutOfOrderKeepTheLatest) {
  Granter g(Policy());
  g.SawParallel(100 * kMs);
  g.SawParallel(10 * kMs);  // older, late report
  g.SawLocal(1, 100 * kMs);
  g.SawLocal(1, 10 * kMs);
  EXPECT_EQ(g.Tick(120 * kMs), Ds{G(1)});
}

TEST(Granter, ObservationAfterTheTickCountsAsJustSeen) {
  Granter g(Policy());
  g.SawParallel(200 * kMs);
  g.SawLocal(1, 200 * kMs);
  EXPECT_EQ(g.Tick(100 * kMs), Ds{G(1)});
}

TEST(Granter, TimesNearU64Max) {
  Granter g(Policy());
  g.SawParallel(UINT64_MAX - 10 * kMs);
  g.SawLocal(1, UINT64_MAX - 10 * kMs);
  EXPECT_EQ(g.Tick(UINT64_MAX), Ds{G(1)});
  g.SawParallel(0);  // a wrapped clock would be older: ignored
  EXPECT_TRUE(g.parallel_active(UINT64_MAX));
}

TEST(Granter, ToMessageEncodes) {
  const auto p = Policy();
  const std::vector<Address> own = {A("10.0.0.9"), A("fd00::9")};
  auto m = ToMessage(G(4), p, Stamp{9, 5, 1234, 77}, own);
  EXPECT_EQ(m.type, wire::Type::kGrant);
  EXPECT_EQ(m.credit, kGrantBytes);
  EXPECT_EQ(m.lease, p.lease);
  EXPECT_EQ(m.sender, 9u);
  EXPECT_EQ(m.key_id, 5u);
  EXPECT_EQ(m.time_ns, 1234u);
  EXPECT_EQ(m.sequence, 77u);
  EXPECT_EQ(m.addresses, own);
  auto d = wire::Encode(m, TestKey(), Recipient());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(wire::Decode(d.value(), TestKey(), Recipient()).value(), m);

  m = ToMessage(R(4), p, Stamp{9, 5, 1235, 78}, own);
  EXPECT_EQ(m.type, wire::Type::kRelease);
  EXPECT_EQ(m.credit, 0u);
  EXPECT_EQ(m.lease, 0);
  EXPECT_TRUE(wire::Encode(m, TestKey(), Recipient()).ok());
}

}  // namespace
