// SPDX-License-Identifier: GPL-2.0
//
// One clock (CLOCK_MONOTONIC, ns) and the inter-arrival generator.

#ifndef BENCH_TIMING_H
#define BENCH_TIMING_H

#include <cstdint>
#include <random>

namespace parqbench {

uint64_t NowNs();

// Gaps between message (or iteration) starts: constant, or exponential
// with the given mean (Poisson arrivals).  The exponential gaps come from
// mt19937_64 by inverse transform, so a seed gives the same sequence on
// every platform (std::exponential_distribution does not promise that).
class Arrivals {
 public:
  Arrivals(uint64_t mean_ns, bool exponential, uint64_t seed);
  uint64_t next_gap_ns();

 private:
  uint64_t mean_ns_;
  bool exponential_;
  std::mt19937_64 rng_;
};

}  // namespace parqbench

#endif
