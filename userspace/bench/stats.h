// SPDX-License-Identifier: GPL-2.0
//
// Latency statistics.  Percentiles are nearest-rank, without interpolation:
// the p-th percentile of n samples is the k-th smallest sample with
// k = ceil(p/100 * n) (and k = 1 when that is 0), so the value reported is
// always one that was measured.  k is computed in integers (p in units of
// 1/1000 %), so p99.9 of 1000 samples is exactly the 999th smallest.

#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <cstdint>
#include <string>
#include <vector>

#include "parqd/base/result.h"

namespace parqbench {

using parq::parqd::Err;
using parq::parqd::Result;

// The k-th smallest (nearest rank) for p = milli_pct / 1000 percent, over an
// ascending vector; an error when it is empty or p is above 100.
Result<uint64_t, std::string> Percentile(const std::vector<uint64_t>& sorted,
                                         uint32_t milli_pct);

struct Summary {
  uint64_t count = 0;
  double mean = 0;  // arithmetic mean
  uint64_t min = 0, p50 = 0, p99 = 0, p999 = 0, max = 0;
};

// Sorts samples in place; count == 0 when there are none (the other fields
// are then meaningless and reported as null).
Summary Summarize(std::vector<uint64_t>& samples);

}  // namespace parqbench

#endif
