// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of replay.cc: the 64-entry window at its edges.

#include <gtest/gtest.h>

#include <cstdint>

#include "proto/replay.h"

namespace {

using parq::parqd::ReplayVerdict;
using parq::parqd::ReplayWindow;

constexpr auto kFresh = ReplayVerdict::kFresh;
constexpr auto kDup = ReplayVerdict::kDuplicate;
constexpr auto kOld = ReplayVerdict::kTooOld;

// Check, and accept when fresh: what the receive path does.
ReplayVerdict Offer(ReplayWindow& w, uint64_t seq) {
  const ReplayVerdict v = w.Check(seq);
  if (v == kFresh)
    w.Accept(seq);
  return v;
}

TEST(Replay, FirstPacketIsFreshWhateverItsNumber) {
  for (uint64_t first :
       {uint64_t{1}, uint64_t{2}, uint64_t{1} << 40, UINT64_MAX}) {
    ReplayWindow w;
    EXPECT_EQ(w.top(), 0u);
    EXPECT_EQ(Offer(w, first), kFresh) << first;
    EXPECT_EQ(w.top(), first);
    EXPECT_EQ(Offer(w, first), kDup) << first;
  }
}

TEST(Replay, ZeroIsNeverFresh) {
  ReplayWindow w;
  EXPECT_EQ(w.Check(0), kOld);
  EXPECT_EQ(Offer(w, 5), kFresh);
  EXPECT_EQ(w.Check(0), kOld);
}

TEST(Replay, CheckDoesNotChangeTheWindow) {
  ReplayWindow w;
  EXPECT_EQ(w.Check(10), kFresh);
  EXPECT_EQ(w.Check(10), kFresh);
  EXPECT_EQ(w.top(), 0u);
}

TEST(Replay, InOrderAndDuplicates) {
  ReplayWindow w;
  for (uint64_t s = 1; s <= 200; s++) {
    EXPECT_EQ(Offer(w, s), kFresh) << s;
    EXPECT_EQ(Offer(w, s), kDup) << s;
  }
  for (uint64_t s = 200 - 63; s <= 200; s++)
    EXPECT_EQ(w.Check(s), kDup) << s;
  EXPECT_EQ(w.Check(200 - 64), kOld);
}

TEST(Replay, WindowBoundary) {
  ReplayWindow w;
  ASSERT_EQ(Offer(w, 100), kFresh);
  EXPECT_EQ(Offer(w, 100 - 63), kFresh);  // oldest slot in the window
  EXPECT_EQ(Offer(w, 100 - 63), kDup);
  EXPECT_EQ(Offer(w, 100 - 64), kOld);  // just outside
  EXPECT_EQ(Offer(w, 1), kOld);
  // Slide by one: 37 falls out, and is then too old rather than a dup.
  ASSERT_EQ(Offer(w, 101), kFresh);
  EXPECT_EQ(w.Check(37), kOld);
  EXPECT_EQ(w.Check(38), kFresh);
  EXPECT_EQ(w.Check(100), kDup);
}

TEST(Replay, ReorderedWithinTheWindowIsAccepted) {
  ReplayWindow w;
  for (uint64_t s : {10, 8, 9, 7, 12, 11})
    EXPECT_EQ(Offer(w, s), kFresh) << s;
  for (uint64_t s : {7, 8, 9, 10, 11, 12})
    EXPECT_EQ(w.Check(s), kDup) << s;
  EXPECT_EQ(w.Check(6), kFresh);
}

TEST(Replay, JumpOfExactlyTheWindowSize) {
  ReplayWindow w;
  ASSERT_EQ(Offer(w, 10), kFresh);
  ASSERT_EQ(Offer(w, 74), kFresh);  // 10 is now 64 behind: out
  EXPECT_EQ(w.Check(10), kOld);
  EXPECT_EQ(w.Check(11), kFresh);
  ASSERT_EQ(Offer(w, 137), kFresh);  // 74 is now 63 behind: still in
  EXPECT_EQ(w.Check(74), kDup);
}

TEST(Replay, JumpFarAheadClearsTheWindow) {
  ReplayWindow w;
  for (uint64_t s = 1; s <= 64; s++)
    ASSERT_EQ(Offer(w, s), kFresh);
  ASSERT_EQ(Offer(w, 1'000'000), kFresh);
  EXPECT_EQ(w.Check(1'000'000 - 1), kFresh);
  EXPECT_EQ(w.Check(1'000'000 - 63), kFresh);
  EXPECT_EQ(w.Check(64), kOld);
}

TEST(Replay, JumpByMoreThanTheShiftWidth) {
  // A shift of >= 64 bits would be UB if it were done; UBSan watches.
  ReplayWindow w;
  ASSERT_EQ(Offer(w, 1), kFresh);
  ASSERT_EQ(Offer(w, UINT64_MAX - 1), kFresh);
  EXPECT_EQ(w.Check(1), kOld);
  EXPECT_EQ(Offer(w, UINT64_MAX - 2), kFresh);
}

TEST(Replay, TopOfTheRangeDoesNotWrap) {
  ReplayWindow w;
  ASSERT_EQ(Offer(w, UINT64_MAX - 1), kFresh);
  ASSERT_EQ(Offer(w, UINT64_MAX), kFresh);
  EXPECT_EQ(Offer(w, UINT64_MAX), kDup);
  EXPECT_EQ(Offer(w, UINT64_MAX - 1), kDup);
  EXPECT_EQ(Offer(w, UINT64_MAX - 63), kFresh);
  EXPECT_EQ(Offer(w, UINT64_MAX - 64), kOld);
  // After UINT64_MAX nothing is new: small numbers are not a wrap.
  EXPECT_EQ(Offer(w, 1), kOld);
  EXPECT_EQ(w.top(), UINT64_MAX);
}

}  // namespace
