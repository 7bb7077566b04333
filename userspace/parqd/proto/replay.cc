// SPDX-License-Identifier: GPL-2.0

#include "proto/replay.h"

namespace parq::parqd {

std::string_view Name(ReplayVerdict v) {
  switch (v) {
    case ReplayVerdict::kFresh:
      return "fresh";
    case ReplayVerdict::kDuplicate:
      return "duplicate";
    case ReplayVerdict::kTooOld:
      return "too_old";
  }
  return "unknown";
}

ReplayVerdict ReplayWindow::Check(uint64_t seq) const {
  if (seq == 0)
    return ReplayVerdict::kTooOld;  // never valid; the decoder rejects it
  if (seq > top_)
    return ReplayVerdict::kFresh;
  const uint64_t behind = top_ - seq;
  if (behind >= kSize)
    return ReplayVerdict::kTooOld;
  return (seen_ >> behind) & 1 ? ReplayVerdict::kDuplicate
                               : ReplayVerdict::kFresh;
}

void ReplayWindow::Accept(uint64_t seq) {
  if (seq > top_) {
    const uint64_t shift = seq - top_;
    seen_ = shift >= kSize ? 0 : seen_ << shift;
    seen_ |= 1;
    top_ = seq;
    return;
  }
  seen_ |= uint64_t{1} << (top_ - seq);
}

}  // namespace parq::parqd
