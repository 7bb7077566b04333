// SPDX-License-Identifier: GPL-2.0
#include "stats.h"

#include <algorithm>
#include <stdexcept>

namespace parqbench {

uint64_t Percentile(const std::vector<uint64_t>& sorted, uint32_t milli_pct) {
  if (sorted.empty())
    throw std::invalid_argument("percentile of no samples");
  if (milli_pct > 100000)
    throw std::invalid_argument("percentile above 100");
  const uint64_t n = sorted.size();
  uint64_t k = (n * milli_pct + 99999) / 100000;  // ceil
  if (k == 0)
    k = 1;
  return sorted[k - 1];
}

Summary Summarize(std::vector<uint64_t>& samples) {
  Summary s;
  if (samples.empty())
    return s;
  std::sort(samples.begin(), samples.end());
  s.count = samples.size();
  long double sum = 0;
  for (uint64_t v : samples)
    sum += v;
  s.mean = double(sum / s.count);
  s.min = samples.front();
  s.max = samples.back();
  s.p50 = Percentile(samples, 50000);
  s.p99 = Percentile(samples, 99000);
  s.p999 = Percentile(samples, 99900);
  return s;
}

}  // namespace parqbench
