// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of parq_shaper, the earliest-departure-time shaper, in the
// order of parq_core.c: set, delay, charge; then long runs checked against
// a 128-bit reference schedule.

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "parq_core.h"

namespace {

using u128 = unsigned __int128;

constexpr uint64_t kNsPerSec = 1000000000ULL;
constexpr uint64_t kHorizon = 2000000;  // 2 ms

// Bytes the shaper accounts for a packet of @len.
uint64_t Bytes(uint32_t len, int32_t overhead) {
  const int64_t b = int64_t{len} + overhead;
  return b > 0 ? static_cast<uint64_t>(b) : 0;
}

// floor(bytes * 1e9 / rate) without any risk of overflow.
uint64_t RefNs(u128 bytes, uint64_t rate) {
  const u128 ns = bytes * kNsPerSec / rate;
  EXPECT_LT(ns, u128{1} << 64) << "test parameters overflow u64 ns";
  return static_cast<uint64_t>(ns);
}

parq_shaper Make(uint64_t rate, int32_t overhead = 0,
                 uint64_t horizon = kHorizon) {
  parq_shaper s{};
  parq_shaper_set(&s, rate, overhead, 0, horizon, 0);
  return s;
}

// parq_shaper_delay of a fresh shaper at @rate.
uint64_t Delay(uint64_t rate, uint32_t len) {
  const parq_shaper s = Make(rate);
  return parq_shaper_delay(&s, len);
}

uint64_t Delay(uint64_t rate, int32_t overhead, uint32_t len) {
  const parq_shaper s = Make(rate, overhead);
  return parq_shaper_delay(&s, len);
}

const std::vector<uint64_t> kRates = {12500000ULL,   1000000007ULL, 7ULL,
                                      PARQ_RATE_MAX, 125000000ULL,  3ULL};

// ---------------------------------------------------------------- set

TEST(ParqShaperSet, StoresParameters) {
  parq_shaper s = Make(12500000, -4, 12345);
  EXPECT_EQ(s.rate, 12500000u);
  EXPECT_EQ(s.overhead, -4);
  EXPECT_EQ(s.horizon, 12345u);
  EXPECT_EQ(s.t_next, 0u);
  EXPECT_EQ(s.rem, 0u);
  EXPECT_TRUE(parq_shaper_on(&s));
}

TEST(ParqShaperSet, NewRateResetsRemainder) {
  parq_shaper s = Make(7);
  parq_shaper_charge(&s, 0, 1);  // 1e9 / 7: remainder 6
  ASSERT_EQ(s.rem, 6u);
  const uint64_t t = s.t_next;

  // Same rate (say, a new overhead): the remainder is kept.
  parq_shaper_set(&s, 7, 24, 0, kHorizon, 0);
  EXPECT_EQ(s.rem, 6u);
  EXPECT_EQ(s.overhead, 24);

  // New rate: the remainder was in units of the old rate; dropped.
  parq_shaper_set(&s, 3, 0, 0, kHorizon, t);
  EXPECT_EQ(s.t_next, t);
  EXPECT_EQ(s.rem, 0u);
  EXPECT_EQ(s.rate, 3u);
  parq_shaper_charge(&s, t, 1);
  EXPECT_EQ(s.t_next, t + kNsPerSec / 3);
  EXPECT_EQ(s.rem, kNsPerSec % 3);

  // And so does turning the shaper off.
  parq_shaper_set(&s, 0, 0, 0, kHorizon, 0);
  EXPECT_EQ(s.rem, 0u);
  EXPECT_FALSE(parq_shaper_on(&s));
}

// A rate change drops the departure computed at the old rate: otherwise
// going from a very low rate to a high one stalls the qdisc until that old
// departure (at 1 B/s a 64 KiB packet holds everything back for 18 hours).
TEST(ParqShaperSet, NewRateDropsDepartureOfOldRate) {
  parq_shaper s = Make(1);  // 1 B/s
  const uint64_t now = 10 * kNsPerSec;
  parq_shaper_wake(&s, now);
  parq_shaper_charge(&s, now, 65536);
  ASSERT_EQ(s.t_next, now + 65536 * kNsPerSec);
  const uint64_t change = now + 1000;
  parq_shaper_set(&s, 125000000, 0, 0, kHorizon, change);  // 1 Gbit/s
  // The new rate starts at the change: the next packet may go at once,
  // and the one after waits its time at the new rate (no debt, no burst).
  EXPECT_EQ(s.t_next, change);
  EXPECT_TRUE(parq_shaper_ready(&s, change));
  parq_shaper_charge(&s, change + 10, 1500);
  EXPECT_EQ(s.t_next, change + Delay(125000000, 1500));
  EXPECT_FALSE(parq_shaper_ready(&s, change + 10));
}

// ---------------------------------------------------------------- off

TEST(ParqShaperOff, RateZeroIsOff) {
  parq_shaper s = Make(0, 100);
  s.t_next = 5000;  // whatever it held
  EXPECT_FALSE(parq_shaper_on(&s));
  for (uint64_t now :
       {uint64_t{0}, uint64_t{4999}, uint64_t{5000}, ~uint64_t{0}})
    EXPECT_TRUE(parq_shaper_ready(&s, now)) << now;
  EXPECT_EQ(parq_shaper_delay(&s, 1500), 0u);
  EXPECT_EQ(parq_shaper_delay(&s, 0xffffffffu), 0u);
  for (int i = 0; i < 1000; i++)
    parq_shaper_charge(&s, 100, 65536);
  EXPECT_EQ(s.t_next, 5000u);
  EXPECT_EQ(s.rem, 0u);
}

// ---------------------------------------------------------------- delay

TEST(ParqShaperDelay, LenTimesNsOverRate) {
  EXPECT_EQ(Delay(1000000000, 1500), 1500u);
  EXPECT_EQ(Delay(12500000, 1500),
            120000u);  // 1500 B at 100 Mbit/s
  EXPECT_EQ(Delay(7, 1),
            142857142u);  // floor
  EXPECT_EQ(Delay(PARQ_RATE_MAX, 64),
            0u);  // 0.32 ns
  EXPECT_EQ(Delay(PARQ_RATE_MAX, 65536), 327u);
  EXPECT_EQ(Delay(125000000, 0), 0u);
}

TEST(ParqShaperDelay, MatchesReference) {
  std::mt19937_64 rng(1);
  for (uint64_t rate : kRates) {
    for (int32_t overhead : {0, 24, PARQ_OVERHEAD_MIN, PARQ_OVERHEAD_MAX}) {
      const parq_shaper s = Make(rate, overhead);
      for (int i = 0; i < 2000; i++) {
        const uint32_t len = static_cast<uint32_t>(rng() % 70000);
        ASSERT_EQ(parq_shaper_delay(&s, len), RefNs(Bytes(len, overhead), rate))
            << rate << " " << overhead << " " << len;
      }
    }
  }
}

// The largest length a u32 can carry, with the largest overhead, at the
// slowest rate: still exact (len * 1e9 fits in 64 bits).
TEST(ParqShaperDelay, LargestLengthDoesNotOverflow) {
  for (uint64_t rate : {uint64_t{1}, uint64_t{7}, uint64_t{PARQ_RATE_MAX}}) {
    const parq_shaper s = Make(rate, PARQ_OVERHEAD_MAX);
    EXPECT_EQ(parq_shaper_delay(&s, 0xffffffffu),
              RefNs(u128{0xffffffffu} + PARQ_OVERHEAD_MAX, rate))
        << rate;
  }
}

TEST(ParqShaperDelay, OverheadAddedAndClampedAtZero) {
  const uint64_t rate = 1000000000;  // 1 B/ns
  EXPECT_EQ(Delay(rate, 24, 1500), 1524u);
  EXPECT_EQ(Delay(rate, 256, 0), 256u);
  EXPECT_EQ(Delay(rate, -64, 1500), 1436u);
  EXPECT_EQ(Delay(rate, -64, 64), 0u);
  EXPECT_EQ(Delay(rate, -64, 10), 0u);
  EXPECT_EQ(Delay(rate, -64, 0), 0u);

  // Charging a packet smaller than -overhead costs nothing.
  parq_shaper s = Make(rate, -64);
  parq_shaper_charge(&s, 0, 1000);
  ASSERT_EQ(s.t_next, 936u);
  parq_shaper_charge(&s, s.t_next, 10);
  EXPECT_EQ(s.t_next, 936u);
  EXPECT_EQ(s.rem, 0u);
}

// ---------------------------------------------------------------- charge

TEST(ParqShaperCharge, AdvancesDepartureAndGatesReady) {
  parq_shaper s = Make(12500000);
  const uint64_t t0 = 1000;  // < horizon: no re-anchor from t_next = 0
  EXPECT_TRUE(parq_shaper_ready(&s, 0));
  parq_shaper_charge(&s, t0, 1500);
  EXPECT_EQ(s.t_next, 120000u);  // kept the schedule that started at 0
  EXPECT_FALSE(parq_shaper_ready(&s, 119999));
  EXPECT_TRUE(parq_shaper_ready(&s, 120000));
  EXPECT_TRUE(parq_shaper_ready(&s, 120001));
}

// The qdisc calls wake when its first packet arrives: the schedule starts
// at now, whatever t_next held.
TEST(ParqShaperWake, FirstPacketAnchorsAtNow) {
  parq_shaper s = Make(12500000);
  const uint64_t now = 5 * kNsPerSec;
  parq_shaper_wake(&s, now);
  EXPECT_EQ(s.t_next, now);
  parq_shaper_charge(&s, now, 1500);
  EXPECT_EQ(s.t_next, now + 120000);
  EXPECT_FALSE(parq_shaper_ready(&s, now + 119999));
}

// After idle time, wake drops the unused time and the remainder: no burst.
TEST(ParqShaperWake, IdleTimeIsNotCaughtUp) {
  parq_shaper s = Make(7);
  parq_shaper_charge(&s, 0, 1);
  ASSERT_EQ(s.rem, 6u);
  const uint64_t now = s.t_next + 3 * kNsPerSec;
  parq_shaper_wake(&s, now);
  EXPECT_EQ(s.t_next, now);
  EXPECT_EQ(s.rem, 0u);
  parq_shaper_charge(&s, now, 1);
  EXPECT_EQ(s.t_next, now + 142857142u);
  EXPECT_FALSE(parq_shaper_ready(&s, now));
}

// Waking while the last departure is still ahead changes nothing: packets
// that arrive in a busy period keep the schedule.
TEST(ParqShaperWake, PendingDepartureIsKept) {
  parq_shaper s = Make(7);
  parq_shaper_charge(&s, 0, 1);
  const parq_shaper before = s;
  parq_shaper_wake(&s, before.t_next - 1);
  EXPECT_EQ(s.t_next, before.t_next);
  EXPECT_EQ(s.rem, before.rem);
  parq_shaper_wake(&s, before.t_next);  // due exactly now: nothing lost
  EXPECT_EQ(s.t_next, before.t_next);
  EXPECT_EQ(s.rem, before.rem);
}

TEST(ParqShaperWake, OffShaperIsUntouched) {
  parq_shaper s = Make(0);
  s.t_next = 5000;
  parq_shaper_wake(&s, 10 * kNsPerSec);
  EXPECT_EQ(s.t_next, 5000u);
}

TEST(ParqShaperCharge, CarriesTheRemainder) {
  parq_shaper s = Make(7);
  parq_shaper_charge(&s, 0, 1);
  EXPECT_EQ(s.t_next, 142857142u);
  EXPECT_EQ(s.rem, 6u);
  parq_shaper_charge(&s, s.t_next, 1);
  EXPECT_EQ(s.t_next, 285714285u);  // floor(2e9 / 7)
  EXPECT_EQ(s.rem, 5u);
  for (int i = 2; i < 7; i++)
    parq_shaper_charge(&s, s.t_next, 1);
  EXPECT_EQ(s.t_next, kNsPerSec);  // 7 B at 7 B/s: exactly one second
  EXPECT_EQ(s.rem, 0u);
}

// 10^6 back-to-back packets of mixed sizes: after every packet t_next is
// exactly floor(sum(bytes) * 1e9 / rate) past the start.  No drift.
class NoDrift : public ::testing::TestWithParam<uint64_t> {};

TEST_P(NoDrift, BackToBackMatchesExactSchedule) {
  const uint64_t rate = GetParam();
  const std::vector<uint32_t> sizes = {64, 1500, 9000, 65536, 1, 577};
  for (int32_t overhead : {0, 38, PARQ_OVERHEAD_MIN}) {
    for (uint64_t start : {uint64_t{0}, uint64_t{123456789012}}) {
      parq_shaper s = Make(rate, overhead);
      parq_shaper_wake(&s, start);  // as the qdisc does for a first packet
      std::mt19937_64 rng(rate ^ static_cast<uint64_t>(overhead));
      u128 sum = 0;
      uint64_t now = start;
      for (int i = 0; i < 1000000; i++) {
        ASSERT_TRUE(parq_shaper_ready(&s, now));
        const uint32_t len = sizes[rng() % sizes.size()];
        parq_shaper_charge(&s, now, len);
        sum += Bytes(len, overhead);
        const uint64_t want = start + RefNs(sum, rate);
        if (s.t_next != want) {  // (a plain test: 10^6 times per case)
          FAIL() << "rate " << rate << " overhead " << overhead << " packet "
                 << i << ": t_next " << s.t_next << " want " << want;
        }
        now = s.t_next;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rates, NoDrift, ::testing::ValuesIn(kRates),
                         [](const auto& info) {
                           return "Rate" + std::to_string(info.param);
                         });

// Departures late by up to the horizon (timer slack, a busy CPU) are caught
// up: the long-run schedule is that of back-to-back sending.
TEST(ParqShaperCharge, LatenessWithinHorizonIsCaughtUp) {
  for (uint64_t rate : kRates) {
    parq_shaper s = Make(rate);
    std::mt19937_64 rng(rate);
    u128 sum = 0;
    for (int i = 0; i < 200000; i++) {
      // Late by 0..horizon inclusive; the horizon itself is still caught up.
      uint64_t late = rng() % (kHorizon + 1);
      if (i % 1000 == 0)
        late = kHorizon;
      const uint64_t now = s.t_next + late;
      const uint32_t len = static_cast<uint32_t>(64 + rng() % 9000);
      parq_shaper_charge(&s, now, len);
      sum += len;
      ASSERT_EQ(s.t_next, RefNs(sum, rate)) << "rate " << rate << " " << i;
    }
  }
}

// Beyond the horizon (a backlogged shaper stalled, e.g. a stopped device)
// the debt is capped at the horizon: the schedule continues from
// now - horizon, so at most the horizon's worth of bytes leaves early.
TEST(ParqShaperCharge, LatenessBeyondHorizonIsCapped) {
  for (uint64_t rate : kRates) {
    parq_shaper s = Make(rate);
    std::mt19937_64 rng(rate + 1);
    uint64_t now = 0;
    for (int i = 0; i < 1000; i++) {  // build up a remainder
      parq_shaper_charge(&s, now, static_cast<uint32_t>(64 + rng() % 9000));
      now = s.t_next;
    }
    for (uint64_t stall : {kHorizon + 1, 10 * kHorizon, 1000 * kNsPerSec}) {
      const uint64_t t = s.t_next + stall;
      const uint64_t anchor = t - kHorizon;
      parq_shaper_charge(&s, t, 1500);
      EXPECT_EQ(s.t_next, anchor + RefNs(1500, rate)) << rate << " " << stall;
      EXPECT_EQ(s.rem, (u128{1500} * kNsPerSec) % rate);
      // Back to back at t: bytes sent before the shaper blocks are the
      // horizon's worth, give or take the last packet.
      u128 sum = 1500;
      while (parq_shaper_ready(&s, t) && sum < (u128{1} << 40)) {
        parq_shaper_charge(&s, t, 1500);
        sum += 1500;
      }
      const u128 budget = u128{kHorizon} * rate / kNsPerSec;
      EXPECT_LE(sum, budget + 1500) << rate << " " << stall;
      EXPECT_GE(sum + 1500, budget) << rate << " " << stall;
      // From the anchor, the schedule is exact.
      EXPECT_EQ(s.t_next, anchor + RefNs(sum, rate)) << rate << " " << stall;
    }
  }
}

// A change of the qdisc that keeps the rate (its limit, its burst) gives
// no fresh allowance; a new rate restarts the schedule with a whole one.
TEST(ParqShaper, AChangeOtherThanTheRateGivesNoFreshAllowance) {
  parq_shaper s{};
  parq_shaper_set(&s, 1000000, 0, 4000, kHorizon, 0);
  EXPECT_EQ(s.allow_ns, 4000000u);
  parq_shaper_spend(&s);
  parq_shaper_set(&s, 1000000, 0, 4000, kHorizon, 5);
  EXPECT_EQ(s.allow_ns, 0u);
  parq_shaper_set(&s, 2000000, 0, 4000, kHorizon, 5);
  EXPECT_EQ(s.allow_ns, 2000000u);
  parq_shaper_set(&s, 2000000, 0, 2000, kHorizon, 5);  // a smaller burst
  EXPECT_EQ(s.allow_ns, 1000000u);
}

// A GSO packet that leaves whole is charged each segment's overhead, and
// never less than nothing: a negative overhead over many tiny segments
// cannot move the next departure back.
TEST(ParqShaper, WholeGsoPacketsPayEachSegmentsOverhead) {
  parq_shaper s{};
  parq_shaper_set(&s, 125000000, 24, 0, kHorizon, 0);  // 8 ns a byte
  parq_shaper_charge_segs(&s, 0, 1000, 4);
  EXPECT_EQ(s.t_next, (1000u + 4 * 24) * 8);
  parq_shaper_charge_segs(&s, 0, 1000, 0);  // no count: one segment
  EXPECT_EQ(s.t_next, (2000u + 5 * 24) * 8);
  parq_shaper s2{};
  parq_shaper_set(&s2, 125000000, -64, 0, kHorizon, 0);
  parq_shaper_charge_segs(&s2, 0, 1000, 4);
  EXPECT_EQ(s2.t_next, (1000u - 4 * 64) * 8);
  const uint64_t before = s2.t_next;
  parq_shaper_charge_segs(&s2, 0, 3200, 64);  // 64 segments of 50 bytes
  EXPECT_EQ(s2.t_next, before);
}

}  // namespace
