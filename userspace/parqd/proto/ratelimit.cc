// SPDX-License-Identifier: GPL-2.0

#include "proto/ratelimit.h"

#include "base/satmath.h"

namespace parq::parqd {

RateLimiter::RateLimiter(uint32_t burst, uint64_t interval_ns)
    : burst_(burst), interval_ns_(interval_ns), tokens_(burst) {}

bool RateLimiter::Allow(uint64_t now, uint64_t* suppressed) {
  if (!started_) {
    started_ = true;
    refilled_at_ = now;
  }
  // Whole intervals since the last refill each add a token; the remainder
  // carries over, so the long-run rate is exact.
  const uint64_t intervals = Elapsed(now, refilled_at_) / interval_ns_;
  if (intervals > 0) {
    const uint64_t room = burst_ - tokens_;
    tokens_ += static_cast<uint32_t>(intervals < room ? intervals : room);
    refilled_at_ += intervals * interval_ns_;
  }
  if (tokens_ == 0) {
    suppressed_++;
    return false;
  }
  tokens_--;
  *suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

}  // namespace parq::parqd
