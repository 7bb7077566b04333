// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of parq_resv, the reserved flows (NDT/IDT pacing) and their
// admission control, in the order of parq_core.c: set, rebase, wake, before,
// dispatch, eligible; then schedules of several flows, driven through a
// model of the kernel's dispatch tree; then bw, capacity, admit.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "parq_core.h"
#include "two_class_model.h"

namespace {

using parq::model::Fixed;
using parq::model::LenGen;
using parq::model::RandomOf;

using u128 = unsigned __int128;

constexpr uint64_t kNsPerSec = 1000000000ULL;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kTick = 1000;  // ns: one dispatch opportunity
constexpr uint64_t kMiB = 1ULL << 20;
constexpr uint64_t kRateMax = PARQ_RATE_MAX;  // bytes/s
constexpr uint64_t kIdtMax = PARQ_IDT_MAX;    // ns
// Classids as the kernel gives them, major and minor: 1:16 and 1:17 in
// tc's (hexadecimal) notation.
constexpr uint32_t kMajor = 1U << 16;
constexpr uint32_t kA = kMajor | PARQ_RESV_MINOR_MIN;
constexpr uint32_t kB = kMajor | (PARQ_RESV_MINOR_MIN + 1);

// floor(bytes * 1e9 / rate) without any risk of overflow.
uint64_t RefNs(u128 bytes, uint64_t rate) {
  const u128 ns = bytes * kNsPerSec / rate;
  EXPECT_LT(ns, u128{1} << 64) << "test parameters overflow u64 ns";
  return static_cast<uint64_t>(ns);
}

// A reserved flow of @classid, configured by parq_resv_set, NDT @ndt.
parq_resv Make(uint32_t classid, uint64_t rate, uint64_t idt,
               uint64_t ndt = 0) {
  parq_resv r{};
  r.classid = classid;
  r.ndt = ndt;
  parq_resv_set(&r, rate, idt);
  return r;
}

// ---------------------------------------------------------------- set

TEST(ParqResvSet, StoresParametersAndNothingElse) {
  parq_resv r{};
  r.classid = kA;
  r.ndt = 5000;
  r.dispatches = 3;
  r.lateness_max = 40;
  r.lateness_sum = 70;

  parq_resv_set(&r, 12500000, 0);
  EXPECT_EQ(r.rate, 12500000u);
  EXPECT_EQ(r.idt, 0u);
  parq_resv_set(&r, 0, 2500);
  EXPECT_EQ(r.rate, 0u);
  EXPECT_EQ(r.idt, 2500u);

  // The schedule and the statistics are the flow's, not the config's.
  EXPECT_EQ(r.ndt, 5000u);
  EXPECT_EQ(r.dispatches, 3u);
  EXPECT_EQ(r.lateness_max, 40u);
  EXPECT_EQ(r.lateness_sum, 70u);
  EXPECT_EQ(r.classid, kA);
}

TEST(ParqResvSet, NewRateResetsRemainder) {
  parq_resv r = Make(kA, 7, 0);
  parq_resv_dispatch(&r, 0, 1);  // 1e9 / 7: remainder 6
  ASSERT_EQ(r.ndt, 142857142u);
  ASSERT_EQ(r.rem, 6u);

  // Same rate: the remainder is kept.
  parq_resv_set(&r, 7, 0);
  EXPECT_EQ(r.rem, 6u);

  // New rate: the remainder was in units of the old rate; dropped.
  parq_resv_set(&r, 3, 0);
  EXPECT_EQ(r.rem, 0u);
  EXPECT_EQ(r.rate, 3u);
  const uint64_t t = r.ndt;
  parq_resv_dispatch(&r, t, 1);
  EXPECT_EQ(r.ndt, t + kNsPerSec / 3);
  EXPECT_EQ(r.rem, kNsPerSec % 3);
}

// In idt mode the remainder is unused, so this is only visible in the field.
TEST(ParqResvSet, NewIdtResetsRemainder) {
  parq_resv r = Make(kA, 0, 2500);
  r.rem = 5;
  parq_resv_set(&r, 0, 2500);
  EXPECT_EQ(r.rem, 5u);
  parq_resv_set(&r, 0, 2501);
  EXPECT_EQ(r.rem, 0u);
  EXPECT_EQ(r.idt, 2501u);
}

// An idt class is admitted for one MTU per IDT: a packet larger than that
// (the device's MTU raised after the admission, a GSO packet) takes
// len / mtu IDTs, rounded up, so that no more than the admitted bytes
// leave per second; a smaller one takes one IDT, as always.
TEST(ParqResvDispatch, IdtPacesAPacketLargerThanItsMtuByItsLength) {
  parq_resv r = Make(kA, 0, 1'000'000);
  r.mtu = 1514;
  parq_resv_dispatch(&r, 0, 1514);
  EXPECT_EQ(r.ndt, 1'000'000u);
  parq_resv_dispatch(&r, r.ndt, 64);
  EXPECT_EQ(r.ndt, 2'000'000u);
  parq_resv_dispatch(&r, r.ndt, 9014);
  EXPECT_EQ(r.ndt, 2'000'000u + (9014ull * 1'000'000 + 1513) / 1514);
  // 1000 jumbo packets: at most the admitted 1514 bytes per millisecond.
  const uint64_t start = r.ndt;
  for (int i = 0; i < 1000; i++)
    parq_resv_dispatch(&r, r.ndt, 9014);
  EXPECT_GE(r.ndt - start, 9014ull * 1000 * 1'000'000 / 1514);
  // Without an MTU (0), each packet takes one IDT whatever its length.
  parq_resv any = Make(kA, 0, 1'000'000);
  parq_resv_dispatch(&any, 0, 9014);
  EXPECT_EQ(any.ndt, 1'000'000u);
}

TEST(ParqResvSet, SwitchesMode) {
  // rate -> idt: the length no longer counts, the remainder is dropped.
  parq_resv r = Make(kA, 7, 0);
  parq_resv_dispatch(&r, 0, 1);
  ASSERT_EQ(r.rem, 6u);
  parq_resv_set(&r, 0, 2500);
  EXPECT_EQ(r.rate, 0u);
  EXPECT_EQ(r.idt, 2500u);
  EXPECT_EQ(r.rem, 0u);
  uint64_t t = r.ndt;
  parq_resv_dispatch(&r, t, 9000);
  EXPECT_EQ(r.ndt, t + 2500);
  parq_resv_dispatch(&r, r.ndt, 64);
  EXPECT_EQ(r.ndt, t + 5000);
  EXPECT_EQ(r.rem, 0u);

  // idt -> rate: len / rate again, from a clean remainder.
  parq_resv_set(&r, 3, 0);
  EXPECT_EQ(r.rate, 3u);
  EXPECT_EQ(r.idt, 0u);
  EXPECT_EQ(r.rem, 0u);
  t = r.ndt;
  parq_resv_dispatch(&r, t, 2);
  EXPECT_EQ(r.ndt, t + 666666666);
  EXPECT_EQ(r.rem, 2u);

  // ... and back and forth: each switch drops the remainder of the other.
  parq_resv_set(&r, 0, 1000);
  EXPECT_EQ(r.rem, 0u);
  parq_resv_set(&r, 3, 0);
  EXPECT_EQ(r.rem, 0u);
  t = r.ndt;
  parq_resv_dispatch(&r, t, 1);
  EXPECT_EQ(r.ndt, t + 333333333);  // not (1e9 + 2) / 3 = 333333334
  EXPECT_EQ(r.rem, 1u);
  EXPECT_EQ(r.dispatches, 5u);
}

// ---------------------------------------------------------------- rebase

// An NDT ahead of now, paced at the old rate, comes back to now: from 1 B/s
// to 1 Gbit/s the flow would otherwise wait 25 minutes for it.
TEST(ParqResvRebase, NdtAheadComesBackToNow) {
  const uint64_t now = 10 * kNsPerSec;
  parq_resv r = Make(kA, 1, 0, now);  // 1 B/s
  parq_resv_dispatch(&r, now, 1500);
  ASSERT_EQ(r.ndt, now + 1500 * kNsPerSec);
  parq_resv_set(&r, 125000000, 0);  // 1 Gbit/s
  parq_resv_rebase(&r, now + 5);
  EXPECT_EQ(r.ndt, now + 5);
  EXPECT_TRUE(parq_resv_eligible(&r, now + 5));
  parq_resv_dispatch(&r, now + 5, 1500);
  EXPECT_EQ(r.ndt, now + 5 + 12000);  // paced at the new rate
  EXPECT_EQ(r.lateness_max, 0u);

  // idt 10 s -> 1 us.
  parq_resv s = Make(kB, 0, kIdtMax, now);
  parq_resv_dispatch(&s, now, 1500);
  ASSERT_EQ(s.ndt, now + kIdtMax);
  parq_resv_set(&s, 0, 1000);
  parq_resv_rebase(&s, now + 1);
  EXPECT_EQ(s.ndt, now + 1);
  parq_resv_dispatch(&s, now + 1, 1500);
  EXPECT_EQ(s.ndt, now + 1001);
  // The statistics are the flow's.
  EXPECT_EQ(s.dispatches, 2u);
  EXPECT_EQ(s.lateness_sum, 0u);
}

TEST(ParqResvRebase, MovedNdtDropsRemainder) {
  parq_resv r = Make(kA, 7, 0);
  parq_resv_dispatch(&r, 0, 1);
  ASSERT_EQ(r.ndt, 142857142u);
  ASSERT_EQ(r.rem, 6u);
  parq_resv_rebase(&r, 1000);
  EXPECT_EQ(r.ndt, 1000u);
  EXPECT_EQ(r.rem, 0u);
  parq_resv_dispatch(&r, 1000, 1);
  EXPECT_EQ(r.ndt, 1000u + 142857142);
  EXPECT_EQ(r.rem, 6u);
}

// An NDT at or behind now is kept, remainder and all: a late backlogged
// flow keeps its schedule (rebase is no wake).
TEST(ParqResvRebase, NdtNotAheadIsKept) {
  parq_resv r = Make(kA, 7, 0);
  parq_resv_dispatch(&r, 0, 1);
  const uint64_t ndt = r.ndt;
  for (uint64_t now : {ndt, ndt + 1, ndt + kNsPerSec, kMax}) {
    parq_resv_rebase(&r, now);
    EXPECT_EQ(r.ndt, ndt) << now;
    EXPECT_EQ(r.rem, 6u) << now;
  }
  parq_resv_rebase(&r, ndt - 1);
  EXPECT_EQ(r.ndt, ndt - 1);
  EXPECT_EQ(r.rem, 0u);
}

// ---------------------------------------------------------------- wake

TEST(ParqResvWake, PastNdtMovesToNowAndDropsRemainder) {
  parq_resv r = Make(kA, 7, 0);
  parq_resv_dispatch(&r, 0, 1);
  ASSERT_EQ(r.ndt, 142857142u);
  ASSERT_EQ(r.rem, 6u);

  const uint64_t now = r.ndt + 5000;
  parq_resv_wake(&r, now);
  EXPECT_EQ(r.ndt, now);
  EXPECT_EQ(r.rem, 0u);
  // The schedule starts afresh at now: 1 B at 7 B/s is 1e9 / 7 again.
  parq_resv_dispatch(&r, now, 1);
  EXPECT_EQ(r.ndt, now + 142857142);
  EXPECT_EQ(r.rem, 6u);

  // Idt mode; the statistics are untouched by a wake.
  parq_resv s = Make(kB, 0, 2500, 1000);
  parq_resv_wake(&s, 123456789);
  EXPECT_EQ(s.ndt, 123456789u);
  EXPECT_EQ(s.idt, 2500u);
  EXPECT_EQ(s.dispatches, 0u);
  EXPECT_EQ(s.lateness_max, 0u);
  EXPECT_EQ(s.lateness_sum, 0u);
}

// NDT = max(NDT, now): a flow that ran empty and refilled before its NDT
// gets no earlier dispatch, and keeps its carried remainder.
TEST(ParqResvWake, NdtNotPastIsKept) {
  parq_resv r = Make(kA, 7, 0);
  parq_resv_dispatch(&r, 0, 1);
  const uint64_t ndt = r.ndt;
  for (uint64_t now : {ndt, ndt - 1, uint64_t{1}, uint64_t{0}}) {
    parq_resv_wake(&r, now);
    EXPECT_EQ(r.ndt, ndt) << now;
    EXPECT_EQ(r.rem, 6u) << now;
  }
  parq_resv_wake(&r, ndt + 1);
  EXPECT_EQ(r.ndt, ndt + 1);
  EXPECT_EQ(r.rem, 0u);
}

// ---------------------------------------------------------------- before

TEST(ParqResvBefore, SmallerNdtFirst) {
  // Whatever the classids.
  const parq_resv a = Make(kB, 0, 1000, 10);
  const parq_resv b = Make(kA, 0, 1000, 11);
  EXPECT_TRUE(parq_resv_before(&a, &b));
  EXPECT_FALSE(parq_resv_before(&b, &a));

  const parq_resv c = Make(0xffffffffu, 0, 1000, kMax - 1);
  const parq_resv d = Make(0, 0, 1000, kMax);
  EXPECT_TRUE(parq_resv_before(&c, &d));
  EXPECT_FALSE(parq_resv_before(&d, &c));
  const parq_resv e = Make(0xffffffffu, 0, 1000, 0);
  EXPECT_TRUE(parq_resv_before(&e, &d));
  EXPECT_FALSE(parq_resv_before(&d, &e));
}

TEST(ParqResvBefore, TiesToLowerClassid) {
  for (uint64_t ndt : {uint64_t{0}, uint64_t{5000}, kMax}) {
    const parq_resv a = Make(kA, 0, 1000, ndt);
    const parq_resv b = Make(kB, 0, 1000, ndt);
    EXPECT_TRUE(parq_resv_before(&a, &b)) << ndt;
    EXPECT_FALSE(parq_resv_before(&b, &a)) << ndt;
    // Irreflexive: a flow is not before itself.
    EXPECT_FALSE(parq_resv_before(&a, &a)) << ndt;
  }
  const parq_resv lo = Make(0, 0, 1000, 7);
  const parq_resv hi = Make(0xffffffffu, 0, 1000, 7);
  EXPECT_TRUE(parq_resv_before(&lo, &hi));
  EXPECT_FALSE(parq_resv_before(&hi, &lo));
}

// std::set (and the kernel's rb-tree) need a strict total order on flows
// with distinct classids: exactly one of before(a, b), before(b, a) for
// a != b, transitive, and it is the lexicographic order of (NDT, classid).
TEST(ParqResvBefore, IsAStrictTotalOrder) {
  std::mt19937_64 rng(16);
  std::vector<parq_resv> v;
  for (uint32_t i = 0; i < 24; i++)
    v.push_back(Make(kA + static_cast<uint32_t>(rng() % 1000) * 24 + i, 0, 1000,
                     rng() % 4));
  for (const parq_resv& a : v) {
    for (const parq_resv& b : v) {
      const bool ab = parq_resv_before(&a, &b);
      const bool ba = parq_resv_before(&b, &a);
      if (&a == &b) {
        EXPECT_FALSE(ab);
        continue;
      }
      EXPECT_NE(ab, ba) << a.classid << " " << b.classid;
      EXPECT_EQ(ab, std::tie(a.ndt, a.classid) < std::tie(b.ndt, b.classid))
          << a.ndt << "/" << a.classid << " " << b.ndt << "/" << b.classid;
      for (const parq_resv& c : v) {
        if (ab && parq_resv_before(&b, &c)) {
          EXPECT_TRUE(parq_resv_before(&a, &c));
        }
      }
    }
  }
}

// ---------------------------------------------------------------- dispatch

TEST(ParqResvDispatch, IdtModeAdvancesByIdtWhateverTheLength) {
  parq_resv r = Make(kA, 0, 2500, 1000);
  parq_resv_dispatch(&r, 1000, 64);
  EXPECT_EQ(r.ndt, 3500u);
  parq_resv_dispatch(&r, 3500, 65535);
  EXPECT_EQ(r.ndt, 6000u);
  parq_resv_dispatch(&r, 6000, 0);
  EXPECT_EQ(r.ndt, 8500u);
  EXPECT_EQ(r.dispatches, 3u);
  EXPECT_EQ(r.rem, 0u);
  EXPECT_EQ(r.idt, 2500u);
  EXPECT_EQ(r.classid, kA);

  // The extremes of the idt range.
  parq_resv s = Make(kB, 0, kIdtMax, 7);
  parq_resv_dispatch(&s, 7, 1500);
  EXPECT_EQ(s.ndt, 7 + kIdtMax);
  parq_resv t = Make(kB, 0, 1, 7);
  parq_resv_dispatch(&t, 7, 1500);
  EXPECT_EQ(t.ndt, 8u);
}

TEST(ParqResvDispatch, RateModeAdvancesByLenOverRate) {
  parq_resv r = Make(kA, 12500000, 0, 1000);  // 100 Mbit/s
  parq_resv_dispatch(&r, 1000, 1500);
  EXPECT_EQ(r.ndt, 1000u + 120000);
  parq_resv_dispatch(&r, r.ndt, 64);
  EXPECT_EQ(r.ndt, 1000u + 120000 + 5120);
  parq_resv_dispatch(&r, r.ndt, 0);
  EXPECT_EQ(r.ndt, 1000u + 120000 + 5120);
  EXPECT_EQ(r.dispatches, 3u);
  EXPECT_EQ(r.rem, 0u);
}

// From the NDT, not from now: a late dispatch keeps the schedule.
TEST(ParqResvDispatch, LateDispatchKeepsTheSchedule) {
  parq_resv r = Make(kA, 0, 2500, 1000);
  parq_resv_dispatch(&r, 1000 + 2000, 1500);
  EXPECT_EQ(r.ndt, 3500u);
  parq_resv_dispatch(&r, 3500 + 2499, 1500);
  EXPECT_EQ(r.ndt, 6000u);

  parq_resv s = Make(kA, kNsPerSec, 0, 1000);  // 1 B/ns
  parq_resv_dispatch(&s, 1000 + 700, 1500);
  EXPECT_EQ(s.ndt, 2500u);
}

// Held back beyond the catch-up horizon (a stopped device), a busy flow
// keeps a debt of exactly the horizon: it catches up that much, back to
// back, and no more.
TEST(ParqResvDispatch, StallBeyondHorizonCapsTheDebt) {
  const uint64_t idt = 10000;  // 10 us
  parq_resv r = Make(kA, 0, idt, 1000);
  const uint64_t late = 1000 + PARQ_CATCHUP_NS + 1;
  parq_resv_dispatch(&r, late, 1500);
  EXPECT_EQ(r.ndt, late - PARQ_CATCHUP_NS + idt);
  EXPECT_EQ(r.lateness_max, PARQ_CATCHUP_NS + 1);  // still accounted
  // At @late, the flow may send the horizon's worth and then must wait.
  uint64_t early = 1;  // the dispatch above
  while (parq_resv_eligible(&r, late)) {
    parq_resv_dispatch(&r, late, 1500);
    early++;
  }
  EXPECT_EQ(early, PARQ_CATCHUP_NS / idt + 1);
  EXPECT_GT(r.ndt, late);

  parq_resv k = Make(kA, 0, idt, 1000);  // exactly at the horizon: kept
  parq_resv_dispatch(&k, 1000 + PARQ_CATCHUP_NS, 1500);
  EXPECT_EQ(k.ndt, 1000u + idt);

  // Rate mode: the same cap, and the remainder starts afresh.
  parq_resv m = Make(kA, 7, 0, 1000);
  parq_resv_dispatch(&m, 1000, 1);
  ASSERT_NE(m.rem, 0u);
  const uint64_t t = m.ndt + 5 * PARQ_CATCHUP_NS;
  parq_resv_dispatch(&m, t, 1);
  EXPECT_EQ(m.ndt, t - PARQ_CATCHUP_NS + 142857142u);
  EXPECT_EQ(m.rem, 6u);
}

TEST(ParqResvDispatch, RateModeCarriesTheRemainder) {
  parq_resv r = Make(kA, 7, 0);
  parq_resv_dispatch(&r, 0, 1);
  EXPECT_EQ(r.ndt, 142857142u);
  EXPECT_EQ(r.rem, 6u);
  parq_resv_dispatch(&r, r.ndt, 1);
  EXPECT_EQ(r.ndt, 285714285u);  // floor(2e9 / 7)
  EXPECT_EQ(r.rem, 5u);
  for (int i = 2; i < 7; i++)
    parq_resv_dispatch(&r, r.ndt, 1);
  EXPECT_EQ(r.ndt, kNsPerSec);  // 7 B at 7 B/s: exactly one second
  EXPECT_EQ(r.rem, 0u);
  EXPECT_EQ(r.dispatches, 7u);
}

// The largest length a u32 carries, at the slowest and the fastest rate:
// len * 1e9 + rem still fits in 64 bits.
TEST(ParqResvDispatch, LargestLengthDoesNotOverflow) {
  for (uint64_t rate : {uint64_t{1}, uint64_t{7}, kRateMax}) {
    parq_resv r = Make(kA, rate, 0);
    parq_resv_dispatch(&r, 0, 0xffffffffu);
    EXPECT_EQ(r.ndt, RefNs(0xffffffffu, rate)) << rate;
    EXPECT_EQ(r.rem,
              static_cast<uint64_t>((u128{0xffffffffu} * kNsPerSec) % rate))
        << rate;
    if (rate == 1)
      continue;  // two of them would not fit in u64 ns
    parq_resv_dispatch(&r, r.ndt, 0xffffffffu);
    EXPECT_EQ(r.ndt, RefNs(2 * u128{0xffffffffu}, rate)) << rate;
  }
}

TEST(ParqResvDispatch, LatenessAccounting) {
  parq_resv r = Make(kA, 0, 1000, 10000);

  parq_resv_dispatch(&r, 10000, 1500);  // on time
  EXPECT_EQ(r.dispatches, 1u);
  EXPECT_EQ(r.lateness_max, 0u);
  EXPECT_EQ(r.lateness_sum, 0u);

  parq_resv_dispatch(&r, 11000 + 250, 1500);
  EXPECT_EQ(r.lateness_max, 250u);
  EXPECT_EQ(r.lateness_sum, 250u);

  parq_resv_dispatch(&r, 12000 + 100, 1500);  // less late: max stays
  EXPECT_EQ(r.lateness_max, 250u);
  EXPECT_EQ(r.lateness_sum, 350u);

  parq_resv_dispatch(&r, 13000 + 999, 1500);
  EXPECT_EQ(r.lateness_max, 999u);
  EXPECT_EQ(r.lateness_sum, 1349u);

  // Before the NDT (a caller ignoring eligibility): lateness 0, no wrap;
  // the NDT still advances from the NDT.
  ASSERT_EQ(r.ndt, 14000u);
  parq_resv_dispatch(&r, 13500, 1500);
  EXPECT_EQ(r.ndt, 15000u);
  parq_resv_dispatch(&r, 0, 1500);
  EXPECT_EQ(r.ndt, 16000u);
  parq_resv_dispatch(&r, 16000, 1500);  // at the NDT exactly
  EXPECT_EQ(r.lateness_max, 999u);
  EXPECT_EQ(r.lateness_sum, 1349u);
  EXPECT_EQ(r.dispatches, 7u);

  // Very late: 1000 s.
  const uint64_t d = 1000 * kNsPerSec;
  parq_resv_dispatch(&r, r.ndt + d, 1500);
  EXPECT_EQ(r.lateness_max, d);
  EXPECT_EQ(r.lateness_sum, 1349 + d);
  // Beyond the horizon: the debt is capped at the horizon.
  EXPECT_EQ(r.ndt, 17000u + d - PARQ_CATCHUP_NS + 1000);
  EXPECT_EQ(r.dispatches, 8u);

  // Rate mode is accounted the same way.
  parq_resv s = Make(kB, kNsPerSec, 0, 500);  // 1 B/ns
  parq_resv_dispatch(&s, 500 + 30, 100);
  parq_resv_dispatch(&s, 600 + 10, 100);
  parq_resv_dispatch(&s, 650, 100);  // before its NDT 700
  EXPECT_EQ(s.lateness_max, 30u);
  EXPECT_EQ(s.lateness_sum, 40u);
  EXPECT_EQ(s.dispatches, 3u);
  EXPECT_EQ(s.ndt, 800u);
}

// Long runs of mixed sizes, each packet dispatched a little late: after N
// packets the NDT is exactly start + floor(sum(len) * 1e9 / rate).
class ResvNoDrift : public ::testing::TestWithParam<uint64_t> {};

TEST_P(ResvNoDrift, NdtMatchesExactSchedule) {
  const uint64_t rate = GetParam();
  const std::vector<uint32_t> sizes = {64, 1500, 9000, 65535, 1, 577, 0};
  for (uint64_t start : {uint64_t{0}, uint64_t{123456789012}}) {
    parq_resv r{};
    r.classid = kA;
    parq_resv_set(&r, rate, 0);
    parq_resv_wake(&r, start);
    ASSERT_EQ(r.ndt, start);
    std::mt19937_64 rng(rate ^ start);
    u128 sum = 0;
    for (uint64_t i = 0; i < 200000; i++) {
      const uint32_t len = sizes[rng() % sizes.size()];
      parq_resv_dispatch(&r, r.ndt + rng() % 3000, len);
      sum += len;
      const uint64_t want = start + RefNs(sum, rate);
      if (r.ndt != want || r.dispatches != i + 1) {
        FAIL() << "rate " << rate << " start " << start << " packet " << i
               << ": ndt " << r.ndt << " want " << want << ", dispatches "
               << r.dispatches;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rates, ResvNoDrift,
                         ::testing::Values(3ULL, 7ULL, 5 * kMiB, 1000000007ULL,
                                           kRateMax),
                         [](const auto& info) {
                           return "Rate" + std::to_string(info.param);
                         });

// ---------------------------------------------------------------- eligible

TEST(ParqResvEligible, FromTheNdtOn) {
  const parq_resv r = Make(kA, 0, 1000, 5000);
  EXPECT_FALSE(parq_resv_eligible(&r, 0));
  EXPECT_FALSE(parq_resv_eligible(&r, 4999));
  EXPECT_TRUE(parq_resv_eligible(&r, 5000));
  EXPECT_TRUE(parq_resv_eligible(&r, 5001));
  EXPECT_TRUE(parq_resv_eligible(&r, kMax));

  const parq_resv z = Make(kA, 0, 1000, 0);
  EXPECT_TRUE(parq_resv_eligible(&z, 0));
  const parq_resv m = Make(kA, 0, 1000, kMax);
  EXPECT_FALSE(parq_resv_eligible(&m, kMax - 1));
  EXPECT_TRUE(parq_resv_eligible(&m, kMax));
}

// ---------------------------------------------------------------- schedules
//
// A model of sch_parq's reserved flows: each flow is a FIFO of packet
// lengths; the backlogged ones are kept in a std::set ordered by
// parq_resv_before, as the kernel keeps them in an rb-tree keyed the same
// way.  A flow that becomes backlogged is woken and inserted; a dispatch
// takes the first flow if it is eligible, erases it (its key changes),
// dispatches it and reinserts it unless it ran empty.  The model holds no
// scheduling logic of its own.

struct ByDispatchOrder {
  bool operator()(const parq_resv* a, const parq_resv* b) const {
    return parq_resv_before(a, b);
  }
};

class ResvSched {
 public:
  struct Flow {
    parq_resv r{};
    std::deque<uint32_t> q;
    LenGen src;  // saturated: refilled whenever its last packet is sent
    uint64_t bytes = 0;
  };

  struct Sent {
    uint32_t classid;
    uint32_t len;
    uint64_t due;  // the NDT it was dispatched for
  };

  // A reserved flow, @rate and @idt as parq_resv_set takes them.
  Flow& Add(uint32_t classid, uint64_t rate, uint64_t idt) {
    auto f = std::make_unique<Flow>();
    f->r.classid = classid;
    parq_resv_set(&f->r, rate, idt);
    owner_[&f->r] = f.get();
    flows_.push_back(std::move(f));
    return *flows_.back();
  }

  // A packet of @len arrives for @f at @now.
  void Enqueue(Flow& f, uint64_t now, uint32_t len) {
    if (f.q.empty()) {
      parq_resv_wake(&f.r, now);
      if (!tree_.insert(&f.r).second)
        ADD_FAILURE() << "flow " << f.r.classid << " already in the tree";
    }
    f.q.push_back(len);
  }

  // @f always has a packet from @now on.
  void Saturate(Flow& f, uint64_t now, LenGen src) {
    f.src = std::move(src);
    if (f.q.empty())
      Enqueue(f, now, f.src());
  }

  // tc class change at @now, as the kernel does it: a backlogged flow is
  // taken out of the tree, changed and rebased, and put back.
  void Change(Flow& f, uint64_t rate, uint64_t idt, uint64_t now) {
    const bool backlogged = !f.q.empty();
    if (backlogged && tree_.erase(&f.r) != 1)
      ADD_FAILURE() << "flow " << f.r.classid << " not in the tree";
    parq_resv_set(&f.r, rate, idt);
    parq_resv_rebase(&f.r, now);
    if (backlogged && !tree_.insert(&f.r).second)
      ADD_FAILURE() << "flow " << f.r.classid << " reinserted twice";
  }

  bool InTree(const Flow& f) const {
    return tree_.count(const_cast<parq_resv*>(&f.r)) != 0;
  }

  // NDT of the first flow in dispatch order, if any is backlogged.
  std::optional<uint64_t> NextNdt() const {
    if (tree_.empty())
      return std::nullopt;
    return (*tree_.begin())->ndt;
  }

  // One dispatch opportunity at @now.
  std::optional<Sent> Dequeue(uint64_t now) {
    CheckTree();
    if (tree_.empty())
      return std::nullopt;
    parq_resv* r = *tree_.begin();
    if (!parq_resv_eligible(r, now))
      return std::nullopt;
    tree_.erase(tree_.begin());
    Flow& f = *owner_.at(r);
    if (f.q.empty()) {
      ADD_FAILURE() << "flow " << r->classid << " in the tree, empty";
      return std::nullopt;
    }
    const uint32_t len = f.q.front();
    f.q.pop_front();
    const uint64_t due = r->ndt;
    parq_resv_dispatch(r, now, len);
    f.bytes += len;
    if (f.q.empty() && f.src)
      f.q.push_back(f.src());
    if (!f.q.empty() && !tree_.insert(r).second)
      ADD_FAILURE() << "flow " << r->classid << " reinserted twice";
    return Sent{r->classid, len, due};
  }

 private:
  // The tree holds exactly the backlogged flows.
  void CheckTree() const {
    if (tree_.size() > flows_.size())
      ADD_FAILURE() << "tree holds " << tree_.size() << " of " << flows_.size()
                    << " flows";
    for (const auto& f : flows_)
      if (InTree(*f) == f->q.empty())
        ADD_FAILURE() << "flow " << f->r.classid << " backlogged "
                      << !f->q.empty() << " in tree " << InTree(*f);
  }

  std::vector<std::unique_ptr<Flow>> flows_;
  std::unordered_map<const parq_resv*, Flow*> owner_;
  std::set<parq_resv*, ByDispatchOrder> tree_;
};

// 'A' for 1:16, 'B' for 1:17, ...
char Letter(uint32_t classid) {
  return static_cast<char>('A' + (classid - kA));
}

// One dispatch opportunity per tick for @n ticks from tick @first: the flows
// served, '-' for an opportunity with no eligible flow.
std::string RunTicks(ResvSched& s, uint64_t first, uint64_t n) {
  std::string out;
  for (uint64_t t = first; t < first + n; t++) {
    const auto sent = s.Dequeue(t * kTick);
    out += sent ? Letter(sent->classid) : '-';
  }
  return out;
}

// A link that sends in no time: @n dispatches from @now on, jumping to the
// next NDT whenever no flow is eligible.  The flows served, with the times.
std::string RunBusy(ResvSched& s, uint64_t now, int n,
                    std::vector<uint64_t>* times = nullptr) {
  std::string out;
  for (int i = 0; i < n; i++) {
    auto sent = s.Dequeue(now);
    if (!sent) {
      const auto next = s.NextNdt();
      if (!next || *next <= now) {
        ADD_FAILURE() << "nothing eligible at " << now;
        break;
      }
      now = *next;
      sent = s.Dequeue(now);
      if (!sent) {
        ADD_FAILURE() << "first flow not eligible at its NDT " << now;
        break;
      }
    }
    out += Letter(sent->classid);
    if (times)
      times->push_back(now);
  }
  return out;
}

// Two idt flows of 2 and 3 ticks, both backlogged from 0, one dispatch
// opportunity per tick: each gets one dispatch per IDT.
TEST(ParqResvSchedule, TwoIdtsOneOpportunityPerTick) {
  ResvSched s;
  ResvSched::Flow& a = s.Add(kA, 0, 2 * kTick);
  ResvSched::Flow& b = s.Add(kB, 0, 3 * kTick);
  s.Saturate(a, 0, Fixed(1500));
  s.Saturate(b, 0, Fixed(1500));

  EXPECT_EQ(RunTicks(s, 0, 6), "ABABA-");
  EXPECT_EQ(a.r.ndt, 6 * kTick);
  EXPECT_EQ(b.r.ndt, 6 * kTick);
  // B was served at t = 1 for its NDT 0: one tick late, once.
  EXPECT_EQ(a.r.lateness_max, 0u);
  EXPECT_EQ(b.r.lateness_max, kTick);
  EXPECT_EQ(b.r.lateness_sum, kTick);

  // Both NDTs meet again every 6 ticks: the pattern repeats exactly, and
  // each flow gets one dispatch per IDT.
  std::string want;
  for (int i = 1; i < 1000; i++)
    want += "ABABA-";
  EXPECT_EQ(RunTicks(s, 6, uint64_t{6} * 999), want);
  EXPECT_EQ(a.r.dispatches, 3000u);
  EXPECT_EQ(b.r.dispatches, 2000u);
  EXPECT_EQ(a.r.lateness_max, 0u);
  EXPECT_EQ(b.r.lateness_max, kTick);
  EXPECT_EQ(b.r.lateness_sum, 1000 * kTick);
}

// Equal IDTs alternate strictly by classid, whatever the order in which the
// flows were added.
class ResvEqualIdt : public ::testing::TestWithParam<std::vector<uint32_t>> {};

TEST_P(ResvEqualIdt, AlternateByClassid) {
  const std::vector<uint32_t>& order = GetParam();
  const uint64_t idt = 5 * kTick;
  std::string round;
  for (uint32_t i = 0; i < order.size(); i++)
    round += Letter(kA + i);

  {  // One opportunity per tick.
    ResvSched s;
    for (uint32_t classid : order)
      s.Saturate(s.Add(classid, 0, idt), 0, Fixed(1500));
    std::string want;
    for (int i = 0; i < 200; i++)
      want += round + std::string(5 - order.size(), '-');
    EXPECT_EQ(RunTicks(s, 0, 1000), want);
  }
  {  // A link that is never busy: every round at its NDT.
    ResvSched s;
    for (uint32_t classid : order)
      s.Saturate(s.Add(classid, 0, idt), 0, Fixed(1500));
    std::string want;
    std::vector<uint64_t> want_times;
    for (uint64_t i = 0; i < 300; i++) {
      want += round;
      want_times.insert(want_times.end(), order.size(), i * idt);
    }
    std::vector<uint64_t> times;
    EXPECT_EQ(RunBusy(s, 0, static_cast<int>(want.size()), &times), want);
    EXPECT_EQ(times, want_times);
  }
  {  // Added one tick apart in the given order: the NDT comes first,
     // so they are served in the order they were added.
    ResvSched s;
    uint64_t now = 0;
    std::string in_order;
    for (uint32_t classid : order) {
      s.Saturate(s.Add(classid, 0, idt), now, Fixed(1500));
      in_order += Letter(classid);
      now += kTick;
    }
    std::string want;
    std::vector<uint64_t> want_times;
    for (uint64_t i = 0; i < 300; i++) {
      want += in_order;
      for (uint64_t j = 0; j < order.size(); j++)
        want_times.push_back(i * idt + j * kTick);
    }
    std::vector<uint64_t> times;
    EXPECT_EQ(RunBusy(s, 0, static_cast<int>(want.size()), &times), want);
    EXPECT_EQ(times, want_times);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Orders, ResvEqualIdt,
    ::testing::Values(std::vector<uint32_t>{kA, kB},
                      std::vector<uint32_t>{kB, kA},
                      std::vector<uint32_t>{kA + 2, kB, kA},
                      std::vector<uint32_t>{kB, kA + 2, kA}),
    [](const auto& info) {
      std::string name;
      for (uint32_t c : info.param)
        name += Letter(c);
      return name;
    });

// An idle flow cannot catch up: woken 100 IDTs after its NDT, it is served
// once per IDT from the wake on, not in a burst.
TEST(ParqResvSchedule, IdleThenBusyDoesNotCatchUp) {
  ResvSched s;
  const uint64_t idt = 10 * kTick;
  ResvSched::Flow& a = s.Add(kA, 0, idt);
  s.Enqueue(a, 0, 1500);
  EXPECT_EQ(RunTicks(s, 0, 1), "A");
  EXPECT_EQ(a.r.ndt, idt);
  EXPECT_FALSE(s.InTree(a));  // ran empty

  const uint64_t wake = 1003 * kTick;  // 100 IDTs and then some
  for (int i = 0; i < 1000; i++)
    s.Enqueue(a, wake, 1500);
  EXPECT_EQ(a.r.ndt, wake);  // max(NDT, now)

  std::vector<uint64_t> times;
  for (uint64_t t = 1003; t < 1003 + 1000; t++)
    if (s.Dequeue(t * kTick))
      times.push_back(t * kTick);
  ASSERT_EQ(times.size(), 100u);
  for (uint64_t k = 0; k < times.size(); k++)
    EXPECT_EQ(times[k], wake + k * idt) << k;
  EXPECT_EQ(a.r.lateness_max, 0u);
  EXPECT_EQ(a.r.dispatches, 101u);
}

// Same with a busy flow beside it: the woken flow does not take the busy
// one's dispatches either.
TEST(ParqResvSchedule, IdleThenBusyBesideABusyFlow) {
  ResvSched s;
  const uint64_t idt = 10 * kTick;
  ResvSched::Flow& a = s.Add(kA, 0, idt);
  ResvSched::Flow& b = s.Add(kB, 0, idt);
  s.Saturate(b, 0, Fixed(1500));
  s.Enqueue(a, 0, 1500);
  RunTicks(s, 0, 2);  // A at 0, B at 1
  ASSERT_FALSE(s.InTree(a));

  const uint64_t wake = 1003 * kTick;
  EXPECT_EQ(RunTicks(s, 2, 1001).find('A'), std::string::npos);
  for (int i = 0; i < 1000; i++)
    s.Enqueue(a, wake, 1500);
  EXPECT_EQ(a.r.ndt, wake);

  const std::string run = RunTicks(s, 1003, 1000);
  std::string want(1000, '-');
  for (std::size_t k = 0; k < 100; k++) {
    want[k * 10] = 'A';      // 1003 + 10k
    want[k * 10 + 7] = 'B';  // 1010 + 10k: B's own schedule, on time
  }
  EXPECT_EQ(run, want);
  EXPECT_EQ(a.r.dispatches, 101u);
  EXPECT_EQ(b.r.dispatches, 101u + 100u);
}

// A flow that runs empty and refills before its NDT keeps the NDT.
TEST(ParqResvSchedule, RefillBeforeNdtWaitsForIt) {
  ResvSched s;
  ResvSched::Flow& a = s.Add(kA, 0, 10 * kTick);
  s.Enqueue(a, 0, 1500);
  EXPECT_EQ(RunTicks(s, 0, 1), "A");
  ASSERT_FALSE(s.InTree(a));
  s.Enqueue(a, 4 * kTick, 1500);
  s.Enqueue(a, 4 * kTick, 1500);
  EXPECT_EQ(a.r.ndt, 10 * kTick);
  EXPECT_EQ(RunTicks(s, 4, 17), "------A---------A");
}

// A backlogged flow changed from 10 s to 5 ticks per packet is served at
// once and at its new pace, in order with the others.
TEST(ParqResvSchedule, ChangeToAFasterPaceTakesEffectAtOnce) {
  ResvSched s;
  ResvSched::Flow& a = s.Add(kA, 0, kIdtMax);
  ResvSched::Flow& b = s.Add(kB, 0, 10 * kTick);
  s.Saturate(a, 0, Fixed(1500));
  s.Saturate(b, 0, Fixed(1500));
  EXPECT_EQ(RunTicks(s, 0, 20), "AB--------B---------");
  ASSERT_EQ(a.r.ndt, kIdtMax);

  s.Change(a, 0, 5 * kTick, 20 * kTick);
  EXPECT_EQ(a.r.ndt, 20 * kTick);
  // t = 20: both due, A first by classid; then A every 5 ticks, B every 10.
  std::string want;
  for (int i = 0; i < 50; i++)
    want += "AB---A----";
  EXPECT_EQ(RunTicks(s, 20, 500), want);
  EXPECT_EQ(a.r.dispatches, 101u);
  EXPECT_EQ(b.r.dispatches, 52u);

  // And back to slow at t = 520, when A is due: the NDT (not ahead) is
  // kept, A sends once more, then waits 10 s.
  s.Change(a, 0, kIdtMax, 520 * kTick);
  EXPECT_EQ(a.r.ndt, 520 * kTick);
  EXPECT_EQ(RunTicks(s, 520, 30), "AB--------B---------B---------");
  EXPECT_EQ(a.r.ndt, 520 * kTick + kIdtMax);
}

// A busy flow dispatched late, by less than its IDT, keeps its schedule:
// opportunities every 3 ticks, IDT 10 ticks.
TEST(ParqResvSchedule, LateBusyFlowKeepsItsSchedule) {
  ResvSched s;
  const uint64_t idt = 10 * kTick;
  ResvSched::Flow& a = s.Add(kA, 0, idt);
  s.Saturate(a, 0, Fixed(1500));

  uint64_t n = 0;
  for (uint64_t t = 0; t <= 30000; t += 3) {
    const auto sent = s.Dequeue(t * kTick);
    if (!sent)
      continue;
    n++;
    ASSERT_LT(t * kTick - sent->due, idt);
  }
  // NDTs 0, 10, ..., 30000 ticks: served at the next multiple of 3.
  EXPECT_EQ(n, 3001u);
  EXPECT_EQ(a.r.dispatches, 3001u);
  EXPECT_EQ(a.r.ndt, 3001 * idt);
  EXPECT_EQ(a.r.lateness_max, 2 * kTick);
  // NDT 10k ticks is late by (-k mod 3) ticks: 1000 times 2, 1000 times 1.
  EXPECT_EQ(a.r.lateness_sum, 3000 * kTick);
}

// Same with random gaps between opportunities, all shorter than the IDT:
// after the last opportunity t the flow was served exactly
// floor(t / IDT) + 1 times.
TEST(ParqResvSchedule, RandomlyLateBusyFlowCountIsExact) {
  for (uint64_t idt : {uint64_t{10 * kTick}, uint64_t{7777}, uint64_t{3}}) {
    ResvSched s;
    ResvSched::Flow& a = s.Add(kA, 0, idt);
    const uint64_t start = 5 * idt + 3;
    s.Saturate(a, start, Fixed(9000));
    std::mt19937_64 rng(idt);
    uint64_t t = start, last = start;
    for (int i = 0; i < 100000; i++) {
      const auto sent = s.Dequeue(t);
      if (sent) {
        ASSERT_LT(t - sent->due, idt) << idt;
      }
      // Never more than one NDT passes between two opportunities.
      ASSERT_FALSE(parq_resv_eligible(&a.r, t)) << idt << " " << t;
      last = t;
      t += 1 + rng() % (idt - 1);
    }
    const uint64_t n = (last - start) / idt + 1;
    EXPECT_EQ(a.r.dispatches, n) << idt;
    EXPECT_EQ(a.r.ndt, start + n * idt) << idt;
    EXPECT_LT(a.r.lateness_max, idt) << idt;
    EXPECT_GT(a.r.lateness_sum, 0u) << idt;
  }
}

// Byte (rate) mode on a work-conserving link: whenever a flow is eligible
// the first one in dispatch order is sent (the link is then busy for the
// packet's transmission time); otherwise time jumps to the next NDT.
// Flows at 5, 20 and 50 MiB/s with 64/1500/9000 byte packets on a 100 MiB/s
// link: each gets its rate within 0.1 %, and its NDT is always exactly
// start + floor(sum(len) * 1e9 / rate).
TEST(ParqResvSchedule, RateModeIsRateProportional) {
  struct Spec {
    uint32_t classid;
    uint64_t rate;
    uint64_t start;
  };
  const std::vector<Spec> specs = {
      {kA, 5 * kMiB, 0},
      {kB, 20 * kMiB, 1000003},
      {kA + 2, 50 * kMiB, 2500017},
  };
  const uint64_t link = 100 * kMiB;
  const uint64_t end = 10 * kNsPerSec;

  ResvSched s;
  std::vector<ResvSched::Flow*> flows;
  for (const Spec& sp : specs) {
    flows.push_back(&s.Add(sp.classid, sp.rate, 0));
    s.Saturate(*flows.back(), sp.start, RandomOf({64, 1500, 9000}, sp.classid));
    ASSERT_EQ(flows.back()->r.ndt, sp.start);
  }

  std::vector<u128> sum(specs.size());
  uint64_t now = 0, busy = 0, idle_jumps = 0;
  while (now < end) {
    const auto sent = s.Dequeue(now);
    if (!sent) {
      const auto next = s.NextNdt();
      ASSERT_TRUE(next);
      ASSERT_GT(*next, now);
      now = *next;
      idle_jumps++;
      continue;
    }
    const std::size_t i = sent->classid - kA;
    const Spec& sp = specs[i];
    sum[i] += sent->len;
    ASSERT_EQ(flows[i]->r.ndt, sp.start + RefNs(sum[i], sp.rate))
        << "flow " << sent->classid << " packet " << flows[i]->r.dispatches;
    const uint64_t tx = RefNs(sent->len, link);
    now += tx;
    busy += tx;
  }

  for (std::size_t i = 0; i < specs.size(); i++) {
    const Spec& sp = specs[i];
    const double want = static_cast<double>(sp.rate) *
                        static_cast<double>(end - sp.start) /
                        static_cast<double>(kNsPerSec);
    const double got = static_cast<double>(flows[i]->bytes);
    EXPECT_NEAR(got / want, 1.0, 0.001)
        << "flow " << sp.classid << ": " << got << " bytes, want " << want;
    EXPECT_EQ(flows[i]->bytes, static_cast<uint64_t>(sum[i]));
  }
  // The link was loaded (75 %) and also idle at times: both paths ran.
  EXPECT_GT(busy, end / 2);
  EXPECT_GT(idle_jumps, 1000u);
}

// ---------------------------------------------------------------- bw

TEST(ParqResvBw, RateModeIsTheRate) {
  for (uint64_t rate : {uint64_t{1}, uint64_t{12500000}, kRateMax})
    for (uint32_t mtu : {0u, 1500u, 65535u, 0xffffffffu})
      EXPECT_EQ(parq_resv_bw(rate, 0, mtu), rate) << rate << " " << mtu;
}

TEST(ParqResvBw, IdtModeIsOneMtuPerIdtRoundedUp) {
  struct Case {
    uint64_t idt;
    uint32_t mtu;
    uint64_t bw;
  };
  const Case cases[] = {
      {1, 1500, 1500000000000ULL},
      {1, 65535, 65535000000000ULL},
      {1, 0xffffffffu, 4294967295000000000ULL},
      {kIdtMax, 1500, 150},      // exact
      {kIdtMax, 65535, 6554},    // 6553.5
      {kIdtMax - 1, 1500, 151},  // 150.000000015
      {kIdtMax, 1, 1},           // 0.1
      {kIdtMax, 0, 0},
      {12000, 1500, 125000000},  // 1500 B per 12 us: exact
      {12001, 1500, 124989585},  // 124989584.2
      {3, 1, 333333334},
      {2, 1, 500000000},
      {1000, 1500, 1500000000},
  };
  for (const Case& c : cases)
    EXPECT_EQ(parq_resv_bw(0, c.idt, c.mtu), c.bw) << c.idt << " " << c.mtu;
}

// bw is the least rate at which one MTU per IDT fits:
// bw * idt >= mtu * 1e9 > (bw - 1) * idt.
TEST(ParqResvBw, IdtModeMatchesCeilReference) {
  std::mt19937_64 rng(17);
  for (int i = 0; i < 200000; i++) {
    uint64_t idt = 1 + rng() % kIdtMax;
    if (i % 4 == 1)
      idt = 1 + rng() % 100000;
    if (i % 4 == 2)
      idt = kIdtMax - rng() % 1000;
    uint32_t mtu = static_cast<uint32_t>(rng());
    if (i % 2)
      mtu = static_cast<uint32_t>(rng() % 65536);
    const u128 bits = u128{mtu} * kNsPerSec;
    const uint64_t bw = parq_resv_bw(0, idt, mtu);
    ASSERT_EQ(bw, static_cast<uint64_t>((bits + idt - 1) / idt))
        << idt << " " << mtu;
    ASSERT_GE(u128{bw} * idt, bits);
    if (bw) {
      ASSERT_LT(u128{bw - 1} * idt, bits);
    }
  }
}

// ---------------------------------------------------------------- capacity

TEST(ParqResvCapacity, PercentOfLinkrateRoundedDown) {
  struct Case {
    uint64_t linkrate;
    uint32_t percent;
    uint64_t capacity;
  };
  const Case cases[] = {
      {0, 1, 0},
      {0, 90, 0},
      {0, 100, 0},
      // 1 B/s (8 bit/s) is the least linkrate; 1 bit/s is not representable.
      {1, 1, 0},
      {1, 90, 0},
      {1, 100, 1},
      {kRateMax, 1, 2000000000ULL},
      {kRateMax, 90, 180000000000ULL},
      {kRateMax, PARQ_RESERVABLE_DEFAULT, 180000000000ULL},
      {kRateMax, 100, kRateMax},
      {kRateMax - 1, 90, 179999999999ULL},  // .1 dropped
      {kRateMax - 1, 1, 1999999999ULL},     // .99 dropped
      {125000000, 90, 112500000},           // 1 Gbit/s
      {999, 90, 899},
      {99, 1, 0},
      {100, 1, 1},
      {101, 100, 101},
  };
  for (const Case& c : cases)
    EXPECT_EQ(parq_resv_capacity(c.linkrate, c.percent), c.capacity)
        << c.linkrate << " " << c.percent;
}

TEST(ParqResvCapacity, MatchesReference) {
  std::mt19937_64 rng(18);
  for (int i = 0; i < 200000; i++) {
    uint64_t linkrate = rng() % (kRateMax + 1);
    if (i % 3 == 1)
      linkrate = rng() % 1000;
    if (i % 3 == 2)
      linkrate = kRateMax - rng() % 1000;
    const uint32_t percent = 1 + static_cast<uint32_t>(rng() % 100);
    const uint64_t cap = parq_resv_capacity(linkrate, percent);
    ASSERT_EQ(cap, static_cast<uint64_t>(u128{linkrate} * percent / 100))
        << linkrate << " " << percent;
    ASSERT_LE(cap, linkrate);
  }
}

// ---------------------------------------------------------------- admit

TEST(ParqResvAdmit, NewReservation) {
  const uint64_t cap = parq_resv_capacity(125000000, 90);  // 112500000
  EXPECT_TRUE(parq_resv_admit(0, 0, 0, cap));
  EXPECT_TRUE(parq_resv_admit(0, 0, cap, cap));       // exactly at capacity
  EXPECT_FALSE(parq_resv_admit(0, 0, cap + 1, cap));  // one byte/s over
  EXPECT_TRUE(parq_resv_admit(400, 0, cap - 400, cap));
  EXPECT_FALSE(parq_resv_admit(400, 0, cap - 399, cap));
  EXPECT_TRUE(parq_resv_admit(cap, 0, 0, cap));
  EXPECT_FALSE(parq_resv_admit(cap, 0, 1, cap));
  EXPECT_FALSE(parq_resv_admit(cap - 1, 0, 2, cap));

  // No capacity at all (linkrate 0, or 1 B/s at 90 %): only nothing fits.
  for (uint64_t zero :
       {parq_resv_capacity(0, 100), parq_resv_capacity(1, 90)}) {
    ASSERT_EQ(zero, 0u);
    EXPECT_TRUE(parq_resv_admit(0, 0, 0, zero));
    EXPECT_FALSE(parq_resv_admit(0, 0, 1, zero));
  }
}

// old_bw is part of sum: it is replaced, not added to.
TEST(ParqResvAdmit, ReplacingAReservation) {
  const uint64_t cap = 1000;
  // Full link: the same, less, or nothing is fine; more is not.
  EXPECT_TRUE(parq_resv_admit(1000, 300, 300, cap));
  EXPECT_TRUE(parq_resv_admit(1000, 300, 299, cap));
  EXPECT_TRUE(parq_resv_admit(1000, 300, 0, cap));
  EXPECT_FALSE(parq_resv_admit(1000, 300, 301, cap));
  // 300 free: up to exactly the capacity.
  EXPECT_TRUE(parq_resv_admit(700, 300, 600, cap));
  EXPECT_FALSE(parq_resv_admit(700, 300, 601, cap));
  EXPECT_TRUE(parq_resv_admit(700, 300, 100, cap));
  // The only reservation: it may take all of the capacity.
  EXPECT_TRUE(parq_resv_admit(300, 300, 1000, cap));
  EXPECT_FALSE(parq_resv_admit(300, 300, 1001, cap));
}

TEST(ParqResvAdmit, NewBwAboveCapacity) {
  for (uint64_t cap : {uint64_t{0}, uint64_t{1000}, kRateMax, kMax - 1}) {
    for (uint64_t new_bw : {cap + 1, kMax}) {
      EXPECT_FALSE(parq_resv_admit(0, 0, new_bw, cap)) << cap;
      EXPECT_FALSE(parq_resv_admit(5, 5, new_bw, cap)) << cap;
      EXPECT_FALSE(parq_resv_admit(cap, cap, new_bw, cap)) << cap;
    }
  }
}

// sum near 2^64, all of it the reservation being replaced: admitted iff
// new_bw <= capacity.
TEST(ParqResvAdmit, SumNearTwoToThe64) {
  const uint64_t sum = kMax - 5;
  for (uint64_t cap : {uint64_t{0}, uint64_t{1000}, kRateMax, kMax - 6,
                       kMax - 5, kMax - 1, kMax}) {
    for (uint64_t new_bw :
         {uint64_t{0}, cap - 1, cap, cap + 1, kMax - 5, kMax}) {
      EXPECT_EQ(parq_resv_admit(sum, sum, new_bw, cap), new_bw <= cap)
          << cap << " " << new_bw;
    }
  }
  EXPECT_TRUE(parq_resv_admit(kMax, kMax, kMax, kMax));
  EXPECT_TRUE(parq_resv_admit(kMax, 0, 0, kMax));
  EXPECT_FALSE(parq_resv_admit(kMax, 0, 1, kMax));  // would wrap to 0
  EXPECT_FALSE(parq_resv_admit(kMax, 1, 2, kMax));
  EXPECT_TRUE(parq_resv_admit(kMax, 1, 1, kMax));
}

// The reserved sum above the capacity (the link speed, which the capacity
// follows by default, went down): only a change that ends within the
// capacity is admitted; a decrease that does not is refused too.
TEST(ParqResvAdmit, OverCapacityOnlyChangesEndingWithinIt) {
  const uint64_t cap = 1000;
  EXPECT_FALSE(parq_resv_admit(5000, 3000, 2000, cap));  // 4000 after
  EXPECT_FALSE(parq_resv_admit(5000, 3000, 0, cap));     // 2000 after
  EXPECT_TRUE(parq_resv_admit(5000, 4500, 500, cap));    // 1000 after
  EXPECT_FALSE(parq_resv_admit(5000, 4500, 501, cap));
  EXPECT_TRUE(parq_resv_admit(5000, 5000, 0, cap));
  const uint64_t sum = kMax - 5;
  EXPECT_FALSE(parq_resv_admit(sum, sum - 1 - cap, 0, cap));
  EXPECT_TRUE(parq_resv_admit(sum, sum - cap, 0, cap));
  EXPECT_FALSE(parq_resv_admit(sum, 0, 0, cap));
}

// Capacity near 2^64: no sum wraps around into a wrong "admitted".
TEST(ParqResvAdmit, CapacityNearTwoToThe64NoWrap) {
  const uint64_t cap = kMax - 1;
  EXPECT_TRUE(parq_resv_admit(kMax - 10, 0, 9, cap));    // = cap
  EXPECT_FALSE(parq_resv_admit(kMax - 10, 0, 10, cap));  // = kMax > cap
  EXPECT_FALSE(parq_resv_admit(kMax - 10, 0, 20, cap));  // wraps to 9
  EXPECT_FALSE(parq_resv_admit(10, 0, kMax - 5, cap));   // wraps to 4
  EXPECT_TRUE(parq_resv_admit(10, 0, kMax - 11, cap));   // = cap
  EXPECT_FALSE(parq_resv_admit(10, 0, kMax - 10, cap));
  EXPECT_TRUE(parq_resv_admit(kMax - 1, 5, 5, cap));
  EXPECT_FALSE(parq_resv_admit(kMax - 1, 5, 6, cap));  // = kMax
  EXPECT_FALSE(parq_resv_admit(kMax - 1, 5, 7, cap));  // wraps to 0
  EXPECT_FALSE(parq_resv_admit(kMax - 1, 5, kMax, cap));
  EXPECT_FALSE(parq_resv_admit(1, 0, kMax - 1, cap));  // = kMax
  EXPECT_FALSE(parq_resv_admit(2, 0, kMax, cap));      // wraps to 1
}

// Against sum - old_bw + new_bw <= capacity computed in 128 bits, for small
// values and values near the capacity and near 2^64.
TEST(ParqResvAdmit, MatchesReference) {
  std::mt19937_64 rng(19);
  auto pick = [&rng](uint64_t around) {
    switch (rng() % 4) {
      case 0:
        return rng() % 2000;
      case 1:
        return around - std::min(around, rng() % 2000);
      case 2:
        return kMax - rng() % 2000;
      default:
        return rng();
    }
  };
  uint64_t admitted = 0;
  for (int i = 0; i < 400000; i++) {
    const uint64_t cap = i % 2 ? pick(kRateMax) : pick(kMax);
    const uint64_t sum = pick(cap);
    const uint64_t old_bw = rng() % 3 ? sum - std::min(sum, rng() % 2000)
                                      : sum - (rng() % (sum / 2 + 1)) * 2;
    const uint64_t new_bw = pick(cap - std::min(cap, sum - old_bw));
    const bool want = u128{sum} - old_bw + new_bw <= cap;
    ASSERT_EQ(parq_resv_admit(sum, old_bw, new_bw, cap), want)
        << "sum " << sum << " old " << old_bw << " new " << new_bw << " cap "
        << cap;
    admitted += want;
  }
  // Both outcomes are well represented.
  EXPECT_GT(admitted, 40000u);
  EXPECT_LT(admitted, 360000u);
}

// The three together, as the kernel uses them on tc class add/change.
TEST(ParqResvAdmit, ReservationsOnAGigabitLink) {
  const uint64_t cap = parq_resv_capacity(125000000, PARQ_RESERVABLE_DEFAULT);
  ASSERT_EQ(cap, 112500000u);
  uint64_t sum = 0;
  // 1500 B per 12 us is the whole link: refused.
  EXPECT_FALSE(parq_resv_admit(sum, 0, parq_resv_bw(0, 12000, 1500), cap));
  // 1500 B per 24 us, half of it: admitted.
  const uint64_t a = parq_resv_bw(0, 24000, 1500);
  ASSERT_EQ(a, 62500000u);
  ASSERT_TRUE(parq_resv_admit(sum, 0, a, cap));
  sum += a;
  // The same again does not fit; 50 MB/s fills it exactly.
  EXPECT_FALSE(parq_resv_admit(sum, 0, a, cap));
  const uint64_t b = parq_resv_bw(50000000, 0, 1500);
  ASSERT_TRUE(parq_resv_admit(sum, 0, b, cap));
  sum += b;
  ASSERT_EQ(sum, cap);
  // Full: a flow of one 64 B packet per 10 s needs 7 B/s and is refused;
  // the first may shrink to 1500 B per 25 us, and then it fits.
  EXPECT_FALSE(parq_resv_admit(sum, 0, parq_resv_bw(0, kIdtMax, 64), cap));
  const uint64_t a2 = parq_resv_bw(0, 25000, 1500);  // 60 MB/s
  ASSERT_TRUE(parq_resv_admit(sum, a, a2, cap));
  sum = sum - a + a2;
  EXPECT_TRUE(parq_resv_admit(sum, 0, parq_resv_bw(0, kIdtMax, 64), cap));
  // 1 ns IDT is beyond any capacity.
  EXPECT_FALSE(parq_resv_admit(0, 0, parq_resv_bw(0, 1, 1500),
                               parq_resv_capacity(kRateMax, 100)));
}

}  // namespace
