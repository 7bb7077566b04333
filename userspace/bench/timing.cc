// SPDX-License-Identifier: GPL-2.0
#include "timing.h"

#include <cmath>
#include <ctime>

namespace parqbench {

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

Arrivals::Arrivals(uint64_t mean_ns, bool exponential, uint64_t seed)
    : mean_ns_(mean_ns), exponential_(exponential), rng_(seed) {}

uint64_t Arrivals::next_gap_ns() {
  if (!exponential_ || mean_ns_ == 0)
    return mean_ns_;
  // u in [0, 1) with 53 random bits; -log(1 - u) is at most 36.8.
  double u = double(rng_() >> 11) * 0x1p-53;
  return uint64_t(std::llround(-double(mean_ns_) * std::log1p(-u)));
}

}  // namespace parqbench
