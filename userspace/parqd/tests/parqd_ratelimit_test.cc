// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of ratelimit.cc.

#include <gtest/gtest.h>

#include <cstdint>

#include "proto/ratelimit.h"

namespace {

using parq::parqd::RateLimiter;

constexpr uint64_t kSec = 1'000'000'000;

TEST(RateLimiter, BurstThenOnePerInterval) {
  RateLimiter l(3, kSec);
  uint64_t s = 99;
  for (int i = 0; i < 3; i++) {
    EXPECT_TRUE(l.Allow(5 * kSec, &s));
    EXPECT_EQ(s, 0u);
  }
  EXPECT_FALSE(l.Allow(5 * kSec, &s));
  EXPECT_FALSE(l.Allow(6 * kSec - 1, &s));
  EXPECT_TRUE(l.Allow(6 * kSec, &s));
  EXPECT_EQ(s, 2u);  // the two refused since the last one let through
  EXPECT_FALSE(l.Allow(6 * kSec, &s));
}

TEST(RateLimiter, RefillIsCappedAtTheBurst) {
  RateLimiter l(2, kSec);
  uint64_t s = 0;
  EXPECT_TRUE(l.Allow(0, &s));
  EXPECT_TRUE(l.Allow(0, &s));
  int allowed = 0;
  for (int i = 0; i < 10; i++)
    allowed += l.Allow(1000 * kSec, &s);
  EXPECT_EQ(allowed, 2);
}

TEST(RateLimiter, LongRunRateIsExact) {
  RateLimiter l(1, kSec);
  uint64_t s = 0;
  int allowed = 0;
  for (uint64_t t = 0; t < 100 * kSec; t += kSec / 10)
    allowed += l.Allow(t, &s);
  EXPECT_EQ(allowed, 100);
}

TEST(RateLimiter, ClockGoingBackwardsRefillsNothing) {
  RateLimiter l(1, kSec);
  uint64_t s = 0;
  EXPECT_TRUE(l.Allow(10 * kSec, &s));
  EXPECT_FALSE(l.Allow(0, &s));
  EXPECT_TRUE(l.Allow(11 * kSec, &s));
}

TEST(RateLimiter, NearU64Max) {
  RateLimiter l(1, kSec);
  uint64_t s = 0;
  EXPECT_TRUE(l.Allow(UINT64_MAX - kSec, &s));
  EXPECT_FALSE(l.Allow(UINT64_MAX - 1, &s));
  EXPECT_TRUE(l.Allow(UINT64_MAX, &s));
}

}  // namespace
