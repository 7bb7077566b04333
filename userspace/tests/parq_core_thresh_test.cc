// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of parq_thresh (THRESHOLD_send), in the order of parq_core.c:
// init, pick, charge, then the behaviour of the two together under the
// dequeue loop of two_class_model.h.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "parq_core.h"
#include "two_class_model.h"

namespace {

using parq::model::Class;
using parq::model::Cycle;
using parq::model::Fixed;
using parq::model::LenGen;
using parq::model::RandomOf;
using parq::model::Sent;
using parq::model::TwoClass;

constexpr uint8_t kBytes = PARQ_UNIT_BYTES;
constexpr uint8_t kPackets = PARQ_UNIT_PACKETS;
constexpr uint32_t kInf = PARQ_THRESHOLD_INF;

parq_thresh Make(uint32_t threshold, uint8_t unit, int64_t credit) {
  parq_thresh t{};
  parq_thresh_init(&t, threshold, unit);
  t.credit = credit;
  return t;
}

// Runs @n dequeues and returns them as a string of 'P' / 'L'.
std::string Trace(TwoClass& sim, int n) {
  std::string s;
  for (int i = 0; i < n; i++) {
    std::optional<Sent> p = sim.Dequeue();
    if (!p)
      break;
    s += parq::model::Letter(p->cls);
  }
  return s;
}

// ---------------------------------------------------------------- init

TEST(ParqThreshInit, SetsThresholdUnitAndCredit) {
  parq_thresh t{};
  t.credit = -12345;
  parq_thresh_init(&t, 4, kPackets);
  EXPECT_EQ(t.threshold, 4u);
  EXPECT_EQ(t.unit, kPackets);
  EXPECT_EQ(t.credit, 4);

  parq_thresh_init(&t, PARQ_THRESHOLD_MAX, kBytes);
  EXPECT_EQ(t.threshold, uint32_t{PARQ_THRESHOLD_MAX});
  EXPECT_EQ(t.unit, kBytes);
  EXPECT_EQ(t.credit, PARQ_THRESHOLD_MAX);
}

TEST(ParqThreshInit, StrictOnlyForInf) {
  parq_thresh t{};
  parq_thresh_init(&t, kInf, kBytes);
  EXPECT_TRUE(parq_thresh_is_strict(&t));
  for (uint32_t n :
       {1u, uint32_t{PARQ_THRESHOLD_DEFAULT}, uint32_t{PARQ_THRESHOLD_MAX}}) {
    parq_thresh_init(&t, n, kBytes);
    EXPECT_FALSE(parq_thresh_is_strict(&t)) << n;
  }
}

// A threshold change (the kernel re-inits) starts from a clean credit,
// whatever the old state was.
TEST(ParqThreshInit, ReinitResetsCredit) {
  for (int64_t moved : {-70000, -1, 0, 1, 5, 1000000}) {
    TwoClass sim(4, kBytes);
    sim.thresh().credit = moved;
    parq_thresh_init(&sim.thresh(), 2, kPackets);
    EXPECT_EQ(sim.thresh().credit, 2) << moved;
    EXPECT_EQ(sim.thresh().threshold, 2u);
    EXPECT_EQ(sim.thresh().unit, kPackets);
    sim.Saturate(Class::kParallel, Fixed(1500));
    sim.Saturate(Class::kLocal, Fixed(64));
    EXPECT_EQ(Trace(sim, 9), "PPLPPLPPL") << moved;
  }

  // And after real traffic, in the middle of a cycle.
  TwoClass sim(7, kPackets);
  sim.Saturate(Class::kParallel, Fixed(100));
  sim.Saturate(Class::kLocal, Fixed(100));
  Trace(sim, 3);
  ASSERT_EQ(sim.thresh().credit, 4);
  parq_thresh_init(&sim.thresh(), 3, kPackets);
  EXPECT_EQ(sim.thresh().credit, 3);
  EXPECT_EQ(Trace(sim, 8), "PPPLPPPL");
}

// ---------------------------------------------------------------- pick

TEST(ParqThreshPick, NothingBackloggedPicksNone) {
  for (int64_t credit : {-100, 0, 100}) {
    for (uint32_t n : {1u, 4u, kInf}) {
      parq_thresh t = Make(n, kBytes, credit);
      EXPECT_EQ(parq_thresh_pick(&t, false, false), PARQ_PICK_NONE);
    }
  }
}

TEST(ParqThreshPick, OnlyOneClassBackloggedGetsPicked) {
  for (int64_t credit : {-100, 0, 100}) {
    for (uint32_t n : {1u, 4u, kInf}) {
      parq_thresh t = Make(n, kBytes, credit);
      EXPECT_EQ(parq_thresh_pick(&t, true, false), PARQ_PICK_PARALLEL)
          << n << " " << credit;
      EXPECT_EQ(parq_thresh_pick(&t, false, true), PARQ_PICK_LOCAL)
          << n << " " << credit;
    }
  }
}

TEST(ParqThreshPick, BothBackloggedFollowsCredit) {
  parq_thresh t = Make(4, kBytes, 1);
  EXPECT_EQ(parq_thresh_pick(&t, true, true), PARQ_PICK_PARALLEL);
  t.credit = 1000000;
  EXPECT_EQ(parq_thresh_pick(&t, true, true), PARQ_PICK_PARALLEL);
  t.credit = 0;
  EXPECT_EQ(parq_thresh_pick(&t, true, true), PARQ_PICK_LOCAL);
  t.credit = -65535;
  EXPECT_EQ(parq_thresh_pick(&t, true, true), PARQ_PICK_LOCAL);
}

TEST(ParqThreshPick, StrictAlwaysPrefersParallel) {
  for (int64_t credit : {-100000, -1, 0, 1}) {
    parq_thresh t = Make(kInf, kBytes, credit);
    EXPECT_EQ(parq_thresh_pick(&t, true, true), PARQ_PICK_PARALLEL) << credit;
  }
}

// ---------------------------------------------------------------- charge

TEST(ParqThreshCharge, ParallelWhileLocalWaitsSpendsCredit) {
  parq_thresh t = Make(4, kBytes, 5000);
  parq_thresh_charge(&t, PARQ_PICK_PARALLEL, 1500, true);
  EXPECT_EQ(t.credit, 3500);
  parq_thresh_charge(&t, PARQ_PICK_PARALLEL, 65536, true);
  EXPECT_EQ(t.credit, 3500 - 65536);

  t = Make(4, kPackets, 4);
  parq_thresh_charge(&t, PARQ_PICK_PARALLEL, 65536, true);
  EXPECT_EQ(t.credit, 3);
  parq_thresh_charge(&t, PARQ_PICK_PARALLEL, 64, true);
  EXPECT_EQ(t.credit, 2);
}

TEST(ParqThreshCharge, ParallelAloneKeepsCredit) {
  for (uint8_t unit : {kBytes, kPackets}) {
    for (int64_t credit : {-10, 0, 3}) {
      parq_thresh t = Make(4, unit, credit);
      parq_thresh_charge(&t, PARQ_PICK_PARALLEL, 1500, false);
      EXPECT_EQ(t.credit, credit);
    }
  }
}

TEST(ParqThreshCharge, LocalTurnRefillsThresholdTimesLen) {
  parq_thresh t = Make(4, kBytes, -10);
  parq_thresh_charge(&t, PARQ_PICK_LOCAL, 1500, true);
  EXPECT_EQ(t.credit, -10 + 4 * 1500);

  t = Make(PARQ_THRESHOLD_MAX, kBytes, 0);
  parq_thresh_charge(&t, PARQ_PICK_LOCAL, 65536, true);
  EXPECT_EQ(t.credit, int64_t{PARQ_THRESHOLD_MAX} * 65536);

  t = Make(7, kPackets, 0);
  parq_thresh_charge(&t, PARQ_PICK_LOCAL, 65536, true);
  EXPECT_EQ(t.credit, 7);
}

TEST(ParqThreshCharge, LocalAloneSettlesPendingTurnOnly) {
  // Credit still earned by parallel: a local-only send does not add to it.
  parq_thresh t = Make(4, kBytes, 5);
  parq_thresh_charge(&t, PARQ_PICK_LOCAL, 1500, false);
  EXPECT_EQ(t.credit, 5);
  // A pending turn (credit exhausted) is settled like a threshold turn.
  t.credit = 0;
  parq_thresh_charge(&t, PARQ_PICK_LOCAL, 1500, false);
  EXPECT_EQ(t.credit, 6000);
  t.credit = -3;
  parq_thresh_charge(&t, PARQ_PICK_LOCAL, 1500, false);
  EXPECT_EQ(t.credit, -3 + 6000);

  t = Make(4, kPackets, 0);
  parq_thresh_charge(&t, PARQ_PICK_LOCAL, 1500, false);
  EXPECT_EQ(t.credit, 4);
  parq_thresh_charge(&t, PARQ_PICK_LOCAL, 1500, false);
  EXPECT_EQ(t.credit, 4);
}

TEST(ParqThreshCharge, StrictIsNoOp) {
  parq_thresh t = Make(kInf, kBytes, 17);
  parq_thresh_charge(&t, PARQ_PICK_PARALLEL, 1500, true);
  parq_thresh_charge(&t, PARQ_PICK_PARALLEL, 1500, false);
  parq_thresh_charge(&t, PARQ_PICK_LOCAL, 1500, true);
  parq_thresh_charge(&t, PARQ_PICK_LOCAL, 1500, false);
  EXPECT_EQ(t.credit, 17);
}

// ------------------------------------------------ both, under the sim loop

// Packet mode: exactly N parallel packets, then one local, whatever the
// sizes of either.
class PacketModeSequence : public ::testing::TestWithParam<uint32_t> {};

TEST_P(PacketModeSequence, ExactlyNParallelThenOneLocal) {
  const uint32_t n = GetParam();
  const std::vector<uint32_t> sizes = {64, 1500, 65536, 9000, 576};
  TwoClass sim(n, kPackets);
  sim.Saturate(Class::kParallel, RandomOf(sizes, 11));
  sim.Saturate(Class::kLocal, RandomOf(sizes, 12));

  std::string want;
  while (want.size() < 1000)
    want += std::string(n, 'P') + "L";
  want.resize(1000);
  EXPECT_EQ(Trace(sim, 1000), want);
  EXPECT_GT(sim.packets(Class::kLocal), 0u);
}

INSTANTIATE_TEST_SUITE_P(Thresholds, PacketModeSequence,
                         ::testing::Values(1u, 4u, 7u));

// Byte mode: mixes of packet sizes, each a factory of fresh generators.
struct Mix {
  const char* name;
  std::function<LenGen()> parallel;
  std::function<LenGen()> local;
  uint32_t min_parallel, max_parallel;
  uint32_t min_local, max_local;
};

const std::vector<uint32_t> kMixed = {64, 1500, 65536};

std::vector<Mix> Mixes() {
  return {
      {"Par64_Loc64K", [] { return Fixed(64); }, [] { return Fixed(65536); },
       64, 64, 65536, 65536},
      {"Par64K_Loc64", [] { return Fixed(65536); }, [] { return Fixed(64); },
       65536, 65536, 64, 64},
      {"Both1500", [] { return Fixed(1500); }, [] { return Fixed(1500); }, 1500,
       1500, 1500, 1500},
      {"Cycle", [] { return Cycle(kMixed); },
       [] {
         return Cycle({65536, 64, 1500, 64});
       },
       64, 65536, 64, 65536},
      {"Random1", [] { return RandomOf(kMixed, 1); },
       [] { return RandomOf(kMixed, 2); }, 64, 65536, 64, 65536},
      {"Random42", [] { return RandomOf(kMixed, 42); },
       [] {
         return RandomOf({64, 64, 64, 1500, 65536}, 43);
       },
       64, 65536, 64, 65536},
  };
}

// gtest prints parameters into the test names ctest shows.
void PrintTo(const Mix& m, std::ostream* os) {
  *os << m.name;
}

std::string ParamName(uint32_t n, const Mix& m) {
  return "N" + std::to_string(n) + "_" + m.name;
}

class ByteShare : public ::testing::TestWithParam<std::tuple<uint32_t, Mix>> {};

TEST_P(ByteShare, LocalGetsOneOverNPlusOne) {
  const auto& [n, mix] = GetParam();
  TwoClass sim(n, kBytes);
  sim.Saturate(Class::kParallel, mix.parallel());
  sim.Saturate(Class::kLocal, mix.local());

  constexpr uint64_t kTotal = uint64_t{256} << 20;
  while (sim.bytes(Class::kParallel) + sim.bytes(Class::kLocal) < kTotal)
    ASSERT_TRUE(sim.Dequeue());

  const double local = static_cast<double>(sim.bytes(Class::kLocal));
  const double total = local + static_cast<double>(sim.bytes(Class::kParallel));
  const double share = local / total;
  const double want = 1.0 / (n + 1);
  // share - 1/(N+1) = (N*local - parallel) / ((N+1) * total), and the
  // credit keeps N*local - parallel within (-max_parallel - N, N*max_local].
  const double bound =
      (static_cast<double>(n) * mix.max_local + mix.max_parallel + n) /
      ((n + 1) * total);
  EXPECT_LT(std::fabs(share - want), 0.005) << share << " vs " << want;
  EXPECT_LE(std::fabs(share - want), bound) << share << " vs " << want;
}

INSTANTIATE_TEST_SUITE_P(Mixes, ByteShare,
                         ::testing::Combine(::testing::Values(1u, 4u, 16u),
                                            ::testing::ValuesIn(Mixes())),
                         [](const auto& info) {
                           return ParamName(std::get<0>(info.param),
                                            std::get<1>(info.param));
                         });

TEST(ParqThreshSim, StrictNeverSendsLocalWhileParallelBacklogged) {
  for (uint8_t unit : {kBytes, kPackets}) {
    TwoClass sim(kInf, unit);
    std::mt19937_64 rng(7);
    // Arrivals per dequeue slot: parallel 0.6, local 0.35 (load 0.95), so
    // parallel alone often runs dry and both are often backlogged.
    auto par_arrives = [&rng] { return rng() % 100 < 60; };
    auto loc_arrives = [&rng] { return rng() % 100 < 35; };
    uint64_t local_sent = 0, parallel_sent = 0, arrived = 0, both = 0;
    for (int step = 0; step < 200000 || sim.backlogged(Class::kParallel) ||
                       sim.backlogged(Class::kLocal);
         step++) {
      if (step < 200000) {
        if (par_arrives()) {
          sim.Enqueue(Class::kParallel, kMixed[rng() % kMixed.size()]);
          arrived++;
        }
        if (loc_arrives()) {
          sim.Enqueue(Class::kLocal, kMixed[rng() % kMixed.size()]);
          arrived++;
        }
      }
      const bool pb = sim.backlogged(Class::kParallel);
      const bool lb = sim.backlogged(Class::kLocal);
      std::optional<Sent> p = sim.Dequeue();
      if (!p) {
        ASSERT_FALSE(pb || lb) << "idle with packets queued, step " << step;
        continue;
      }
      both += pb && lb;
      if (p->cls == Class::kLocal) {
        ASSERT_FALSE(pb) << "local sent while parallel backlogged, step "
                         << step;
        local_sent++;
      } else {
        parallel_sent++;
      }
    }
    EXPECT_GT(local_sent, 0u);
    EXPECT_GT(both, 10000u);  // the rule was put to the test
    EXPECT_EQ(local_sent + parallel_sent, arrived);
  }
}

// Both saturated: local is sent at least once every
// ceil(N * max_local / min_parallel) + 1 packets.  After a local send the
// credit is at most N * max_local (it was <= 0 before), and every parallel
// packet lowers it by at least min_parallel.  Packet mode: N + 1.
class NoStarvation
    : public ::testing::TestWithParam<std::tuple<uint32_t, Mix>> {};

uint64_t MaxLocalGap(TwoClass& sim, uint64_t packets, uint64_t* local_sent) {
  uint64_t gap = 0, max_gap = 0;
  *local_sent = 0;
  for (uint64_t i = 0; i < packets; i++) {
    std::optional<Sent> p = sim.Dequeue();
    if (!p) {
      ADD_FAILURE() << "nothing dequeued from saturated classes";
      break;
    }
    gap++;
    if (p->cls == Class::kLocal) {
      max_gap = std::max(max_gap, gap);
      gap = 0;
      ++*local_sent;
    }
  }
  // A run of parallel packets still open at the end counts too.
  return std::max(max_gap, gap);
}

TEST_P(NoStarvation, LocalSentWithinBound) {
  const auto& [n, mix] = GetParam();
  const uint64_t bound =
      (uint64_t{n} * mix.max_local + mix.min_parallel - 1) / mix.min_parallel +
      1;
  TwoClass sim(n, kBytes);
  sim.Saturate(Class::kParallel, mix.parallel());
  sim.Saturate(Class::kLocal, mix.local());
  uint64_t local_sent;
  // The first gap is short (initial credit N); 2 * bound more packets hold
  // at least one full gap of the worst case.
  const uint64_t max_gap =
      MaxLocalGap(sim, std::max<uint64_t>(200000, 2 * bound + 1), &local_sent);
  EXPECT_GT(local_sent, 0u);
  EXPECT_LE(max_gap, bound);
}

INSTANTIATE_TEST_SUITE_P(Mixes, NoStarvation,
                         ::testing::Combine(::testing::Values(1u, 4u, 16u),
                                            ::testing::ValuesIn(Mixes())),
                         [](const auto& info) {
                           return ParamName(std::get<0>(info.param),
                                            std::get<1>(info.param));
                         });

// N = PARQ_THRESHOLD_MAX: a full gap of the worst mix (64 KiB local, 64 B
// parallel) is 2^26 packets, so only the fixed mixes plus a random mix
// whose bound stays in the millions.
std::vector<Mix> MaxThresholdMixes() {
  std::vector<Mix> mixes;
  for (const Mix& m : Mixes())
    if (m.min_parallel == m.max_parallel && m.min_local == m.max_local)
      mixes.push_back(m);
  const std::vector<uint32_t> big = {1500, 9000, 65536};
  mixes.push_back({"Random1500up", [big] { return RandomOf(big, 3); },
                   [big] { return RandomOf(big, 4); }, 1500, 65536, 1500,
                   65536});
  return mixes;
}

INSTANTIATE_TEST_SUITE_P(
    MaxThreshold, NoStarvation,
    ::testing::Combine(::testing::Values(uint32_t{PARQ_THRESHOLD_MAX}),
                       ::testing::ValuesIn(MaxThresholdMixes())),
    [](const auto& info) {
      return ParamName(std::get<0>(info.param), std::get<1>(info.param));
    });

TEST(ParqThreshSim, NoStarvationPacketMode) {
  for (uint32_t n : {1u, 4u, 16u, uint32_t{PARQ_THRESHOLD_MAX}}) {
    TwoClass sim(n, kPackets);
    sim.Saturate(Class::kParallel, RandomOf(kMixed, 5));
    sim.Saturate(Class::kLocal, RandomOf(kMixed, 6));
    uint64_t local_sent;
    const uint64_t max_gap =
        MaxLocalGap(sim, 4 * (uint64_t{n} + 1), &local_sent);
    EXPECT_EQ(local_sent, 4u) << n;
    EXPECT_EQ(max_gap, n + 1) << n;
  }
}

// Work conserving: a class alone gets every dequeue, at any threshold, and
// its packets leave in FIFO order.
TEST(ParqThreshSim, OneClassBackloggedGetsEverything) {
  for (uint32_t n : {1u, 4u, uint32_t{PARQ_THRESHOLD_MAX}, kInf}) {
    for (uint8_t unit : {kBytes, kPackets}) {
      for (Class c : {Class::kParallel, Class::kLocal}) {
        TwoClass sim(n, unit);
        std::vector<uint32_t> in;
        LenGen gen = RandomOf(kMixed, 3);
        for (int i = 0; i < 10000; i++) {
          in.push_back(gen());
          sim.Enqueue(c, in.back());
        }
        std::vector<uint32_t> out;
        while (std::optional<Sent> p = sim.Dequeue()) {
          ASSERT_EQ(p->cls, c);
          EXPECT_FALSE(p->other_backlogged);
          out.push_back(p->len);
        }
        EXPECT_EQ(out, in) << n << " " << int{unit};
        EXPECT_FALSE(sim.Dequeue());
      }
    }
  }
}

// A parallel-only period leaves no trace: when local arrives, it waits for
// exactly what parallel had left before the period began.  Packet mode: at
// most N parallel packets, then the N:1 pattern.
TEST(ParqThreshSim, ParallelOnlyPeriodBuildsNoBurstPackets) {
  for (uint32_t n : {1u, 4u, 7u}) {
    for (int warmup : {0, 1, 3, 1003}) {
      TwoClass sim(n, kPackets);
      sim.Saturate(Class::kParallel, RandomOf(kMixed, 8));
      sim.Saturate(Class::kLocal, RandomOf(kMixed, 9));
      Trace(sim, warmup);
      sim.Drain(Class::kLocal);
      EXPECT_EQ(Trace(sim, 100000), std::string(100000, 'P'));

      sim.Saturate(Class::kLocal, RandomOf(kMixed, 10));
      const std::string got = Trace(sim, 200);
      const std::size_t first = got.find('L');
      ASSERT_NE(first, std::string::npos);
      EXPECT_LE(first, n) << n << " " << warmup;
      // From there on, exactly N parallel per local: no local burst either.
      std::string want = "L";
      while (want.size() < got.size() - first)
        want += std::string(n, 'P') + "L";
      want.resize(got.size() - first);
      EXPECT_EQ(got.substr(first), want) << n << " " << warmup;
    }
  }
}

// Byte mode: what follows a parallel-only period does not depend on its
// length: parallel waits no longer for local's turn (within what the credit
// of one turn allows), and local gets no burst for having been away.
TEST(ParqThreshSim, ParallelOnlyPeriodBuildsNoBurstBytes) {
  constexpr uint32_t kMax = 65536;
  for (uint32_t n : {1u, 4u, 16u}) {
    for (int warmup : {0, 1, 7, 1001}) {
      std::vector<std::vector<std::pair<Class, uint32_t>>> after;
      for (int period : {0, 1, 100000}) {
        TwoClass sim(n, kBytes);
        sim.Saturate(Class::kParallel, RandomOf(kMixed, 21));
        sim.Saturate(Class::kLocal, RandomOf(kMixed, 22));
        Trace(sim, warmup);
        sim.Drain(Class::kLocal);
        sim.Drain(Class::kParallel);
        // Parallel alone for @period packets.
        for (int i = 0; i < period; i++)
          sim.Enqueue(Class::kParallel, 1500);
        EXPECT_EQ(Trace(sim, period), std::string(period, 'P'));

        // Both saturated again, with the same packets whatever the period.
        sim.Saturate(Class::kParallel, RandomOf(kMixed, 23));
        sim.Saturate(Class::kLocal, RandomOf(kMixed, 24));
        std::vector<std::pair<Class, uint32_t>> seq;
        uint64_t waited = 0;  // parallel bytes before local's turn
        bool turn = false;
        for (int i = 0; i < 5000; i++) {
          std::optional<Sent> p = sim.Dequeue();
          ASSERT_TRUE(p);
          seq.emplace_back(p->cls, p->len);
          if (p->cls == Class::kLocal)
            turn = true;
          if (!turn)
            waited += p->len;
        }
        ASSERT_TRUE(turn) << "local never sent";
        // Credit is at most N * max_local; the last parallel packet may
        // overshoot it by less than one packet.
        EXPECT_LT(waited, uint64_t{n} * kMax + kMax)
            << n << " " << warmup << " " << period;
        after.push_back(std::move(seq));
      }
      EXPECT_TRUE(after[0] == after[1]) << n << " " << warmup;
      EXPECT_TRUE(after[0] == after[2]) << n << " " << warmup;
    }
  }
}

// After a long local-only period, parallel is not owed a burst either way:
// once both are backlogged, local gets its turn before parallel has sent
// N * max_local units (the credit of at most one turn).
TEST(ParqThreshSim, LocalOnlyPeriodBuildsNoBurst) {
  for (uint8_t unit : {kBytes, kPackets}) {
    for (uint32_t n : {1u, 4u, 16u}) {
      for (int period : {1, 2, 100000}) {
        TwoClass sim(n, unit);
        sim.Saturate(Class::kLocal, RandomOf(kMixed, 31));
        EXPECT_EQ(Trace(sim, period), std::string(period, 'L'));

        sim.Saturate(Class::kParallel, Fixed(64));
        uint64_t before_last = 0, last = 0, packets = 0;
        std::optional<Sent> p;
        while ((p = sim.Dequeue()) && p->cls == Class::kParallel) {
          before_last += last;
          last = p->len;
          packets++;
        }
        ASSERT_TRUE(p);
        if (unit == kPackets) {
          EXPECT_LE(packets, n) << n << " " << period;
        } else {
          EXPECT_LT(before_last, uint64_t{n} * 65536) << n << " " << period;
          EXPECT_LE(packets, uint64_t{n} * 65536 / 64) << n << " " << period;
        }
        // And the N:1 regime resumes right away (packet mode: exact).
        if (unit == kPackets) {
          std::string want;
          while (want.size() < 100)
            want += std::string(n, 'P') + "L";
          want.resize(100);
          EXPECT_EQ(Trace(sim, 100), want) << n << " " << period;
        }
      }
    }
  }
}

}  // namespace
