// SPDX-License-Identifier: GPL-2.0
//
// A token bucket for log lines about dropped messages: at most `burst` lines
// at once and one more per `interval_ns`, so that a flood of bad packets
// cannot flood the log.  The lines it suppresses are counted and reported
// with the next line let through.  Pure: time is passed in.

#ifndef PARQD_PROTO_RATELIMIT_H
#define PARQD_PROTO_RATELIMIT_H

#include <cstdint>

namespace parq::parqd {

class RateLimiter {
 public:
  // Precondition: burst > 0, interval_ns > 0.
  RateLimiter(uint32_t burst, uint64_t interval_ns);

  // Whether a line may go out at `now`.  When it may, *suppressed is the
  // number refused since the last one let through.
  bool Allow(uint64_t now, uint64_t* suppressed);

 private:
  uint32_t burst_;
  uint64_t interval_ns_;
  uint32_t tokens_;
  uint64_t refilled_at_ = 0;
  bool started_ = false;
  uint64_t suppressed_ = 0;
};

}  // namespace parq::parqd

#endif
