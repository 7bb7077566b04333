// SPDX-License-Identifier: GPL-2.0
//
// Per-peer replay window over message sequence numbers, in the manner of
// IPsec's anti-replay window (RFC 4303, 3.4.3): the highest sequence number
// accepted so far, `top`, and a 64-bit bitmap of which of top, top-1, ...,
// top-63 have been accepted.
//
//   seq > top            fresh: the window slides (a jump of 64 or more
//                        clears it)
//   top - 63 <= seq <= top  fresh unless its bit is set (duplicate)
//   seq < top - 63       too old: it cannot be told from a replay
//
// Sequence numbers start at 1 (the decoder rejects 0) and never wrap: a
// sender seeds its counter from CLOCK_REALTIME in ns at start, which stays
// below 2^64 until the year 2554 and keeps increasing across its restarts.
// After UINT64_MAX nothing is fresh any more, by design: a wrap would let
// every old message in again.
//
// Check() does not change the window; Accept() records a sequence number
// Check() found fresh, once the message has passed every other test.

#ifndef PARQD_PROTO_REPLAY_H
#define PARQD_PROTO_REPLAY_H

#include <cstdint>
#include <string_view>

namespace parq::parqd {

enum class ReplayVerdict : uint8_t { kFresh, kDuplicate, kTooOld };

std::string_view Name(ReplayVerdict v);

class ReplayWindow {
 public:
  static constexpr uint64_t kSize = 64;

  ReplayVerdict Check(uint64_t seq) const;
  // Precondition: Check(seq) == kFresh.
  void Accept(uint64_t seq);

  uint64_t top() const { return top_; }  // 0: nothing accepted yet

 private:
  uint64_t top_ = 0;
  uint64_t seen_ = 0;  // bit i: top_ - i was accepted
};

}  // namespace parq::parqd

#endif
