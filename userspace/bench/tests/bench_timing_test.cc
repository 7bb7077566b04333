// SPDX-License-Identifier: GPL-2.0
// Inter-arrival gaps.
#include <gtest/gtest.h>

#include <cmath>

#include "timing.h"

using namespace parqbench;

TEST(Arrivals, ConstantIsExact) {
  Arrivals a(12345, false, 1);
  for (int i = 0; i < 100; i++)
    EXPECT_EQ(a.next_gap_ns(), 12345u);
}

TEST(Arrivals, ExponentialMeanAndSpread) {
  // 200000 gaps of mean 100 us with a fixed seed: the sample mean of an
  // exponential has a relative standard error of 1/sqrt(n) = 0.22%, so
  // 2% is 9 standard errors; the fixed seed makes the outcome fixed too.
  const uint64_t mean = 100000;
  const int n = 200000;
  Arrivals a(mean, true, 42);
  double sum = 0, sumsq = 0;
  int below_mean = 0;
  for (int i = 0; i < n; i++) {
    double g = double(a.next_gap_ns());
    sum += g;
    sumsq += g * g;
    below_mean += g < mean;
  }
  double m = sum / n;
  double sd = std::sqrt(sumsq / n - m * m);
  EXPECT_NEAR(m, double(mean), 0.02 * mean);
  EXPECT_NEAR(sd, double(mean), 0.03 * mean);  // exponential: sd == mean
  // P(X < mean) = 1 - 1/e = 0.632.
  EXPECT_NEAR(double(below_mean) / n, 1 - std::exp(-1.0), 0.01);
}

TEST(Arrivals, SameSeedSameSequence) {
  Arrivals a(5000, true, 7), b(5000, true, 7), c(5000, true, 8);
  bool differs = false;
  for (int i = 0; i < 100; i++) {
    uint64_t x = a.next_gap_ns();
    EXPECT_EQ(x, b.next_gap_ns());
    differs |= x != c.next_gap_ns();
  }
  EXPECT_TRUE(differs);
}

TEST(Arrivals, ZeroMeanIsZero) {
  Arrivals a(0, true, 3);
  EXPECT_EQ(a.next_gap_ns(), 0u);
}

TEST(Clock, Monotonic) {
  uint64_t a = NowNs(), b = NowNs();
  EXPECT_LE(a, b);
  EXPECT_GT(a, 0u);
}
