// SPDX-License-Identifier: GPL-2.0
// Nearest-rank percentiles and the summary.
#include <gtest/gtest.h>

#include <numeric>

#include "stats.h"

using namespace parqbench;

TEST(Percentile, OneSampleIsEveryPercentile) {
  std::vector<uint64_t> v{42};
  for (uint32_t p : {0u, 1u, 50000u, 99000u, 99900u, 100000u})
    EXPECT_EQ(Percentile(v, p).value(), 42u) << p;
}

TEST(Percentile, ThousandSamplesP999IsThe999th) {
  std::vector<uint64_t> v(1000);
  std::iota(v.begin(), v.end(), 1);  // 1..1000
  EXPECT_EQ(Percentile(v, 99900).value(), 999u);
  EXPECT_EQ(Percentile(v, 99000).value(), 990u);
  EXPECT_EQ(Percentile(v, 50000).value(), 500u);
  EXPECT_EQ(Percentile(v, 100000).value(), 1000u);
  EXPECT_EQ(Percentile(v, 0).value(), 1u);
}

TEST(Percentile, RanksRoundUpNotInterpolate) {
  // 10 samples: p99 -> k = ceil(9.9) = 10, p50 -> k = 5, p99.9 -> 10.
  std::vector<uint64_t> v{10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  EXPECT_EQ(Percentile(v, 99000).value(), 100u);
  EXPECT_EQ(Percentile(v, 50000).value(), 50u);
  EXPECT_EQ(Percentile(v, 50001).value(), 60u);
  EXPECT_EQ(Percentile(v, 99900).value(), 100u);
  // Two samples: the median is the lower one, not their mean.
  EXPECT_EQ(Percentile(std::vector<uint64_t>{1, 3}, 50000).value(), 1u);
}

TEST(Percentile, LargeCountNoFloatingError) {
  // 100000 samples: p99.9 is exactly the 99900th smallest.
  std::vector<uint64_t> v(100000);
  std::iota(v.begin(), v.end(), 1);
  EXPECT_EQ(Percentile(v, 99900).value(), 99900u);
  EXPECT_EQ(Percentile(v, 99000).value(), 99000u);
}

TEST(Percentile, RejectsEmptyAndAbove100) {
  const auto empty = Percentile({}, 50000);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error(), "percentile of no samples");
  const auto above = Percentile(std::vector<uint64_t>{1}, 100001);
  ASSERT_FALSE(above.ok());
  EXPECT_EQ(above.error(), "percentile above 100");
}

TEST(Summary, SortsAndSummarizes) {
  std::vector<uint64_t> v{5, 1, 4, 2, 3};
  Summary s = Summarize(v);
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_EQ(s.min, 1u);
  EXPECT_EQ(s.max, 5u);
  EXPECT_EQ(s.p50, 3u);
  EXPECT_EQ(s.p99, 5u);
  EXPECT_EQ(s.p999, 5u);
}

TEST(Summary, EmptyHasCountZero) {
  std::vector<uint64_t> v;
  EXPECT_EQ(Summarize(v).count, 0u);
}

TEST(Summary, MeanOfHugeValuesDoesNotOverflow) {
  std::vector<uint64_t> v(4, uint64_t(1) << 62);
  EXPECT_DOUBLE_EQ(Summarize(v).mean, double(uint64_t(1) << 62));
}
