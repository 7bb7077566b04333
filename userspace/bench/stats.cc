// SPDX-License-Identifier: GPL-2.0
#include "stats.h"

#include <algorithm>

namespace parqbench {

Result<uint64_t, std::string> Percentile(const std::vector<uint64_t>& sorted,
                                         uint32_t milli_pct) {
  if (sorted.empty())
    return Err{"percentile of no samples"};
  if (milli_pct > 100000)
    return Err{"percentile above 100"};
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
  // Neither can fail: samples is not empty and every p is at most 100.
  s.p50 = Percentile(samples, 50000).value();
  s.p99 = Percentile(samples, 99000).value();
  s.p999 = Percentile(samples, 99900).value();
  return s;
}

}  // namespace parqbench
