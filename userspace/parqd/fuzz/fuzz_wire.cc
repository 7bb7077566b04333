// SPDX-License-Identifier: GPL-2.0
//
// libFuzzer target for the credit message decoder and the receive path;
// the input layout is in fuzz_common.h.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <span>
#include <vector>

#include "fuzz_common.h"
#include "proto/inbox.h"
#include "proto/wire.h"

namespace {

using namespace parq::parqd;

#define FUZZ_CHECK(cond)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

void FixMac(std::vector<uint8_t>& d) {
  if (d.size() < wire::kMacBytes || d.size() > wire::kMaxMessageBytes)
    return;
  const size_t off = d.size() - wire::kMacBytes;
  auto mac =
      wire::MessageMac(fuzz::FuzzKey(), std::span<const uint8_t>(d).first(off),
                       fuzz::FuzzRecipient());
  FUZZ_CHECK(mac.ok());
  std::copy(mac.value().begin(), mac.value().end(), d.begin() + off);
}

// Decodes; a message that decodes must be the canonical encoding of itself.
void DecodeOne(std::span<const uint8_t> d) {
  auto m = wire::Decode(d, fuzz::FuzzKey(), fuzz::FuzzRecipient());
  if (!m.ok()) {
    FUZZ_CHECK(m.error() != wire::WireError::kCryptoFailure);
    return;
  }
  FUZZ_CHECK(wire::Validate(m.value()).ok());
  auto again = wire::Encode(m.value(), fuzz::FuzzKey(), fuzz::FuzzRecipient());
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(std::equal(d.begin(), d.end(), again.value().begin(),
                        again.value().end()));
}

void ReceiveSequence(std::span<const uint8_t> d) {
  auto created = Inbox::Create(fuzz::FuzzKeys(), fuzz::FuzzPeers(),
                               {fuzz::kMaxSkewNs, fuzz::kRealtimeBase});
  FUZZ_CHECK(created.ok());
  Inbox& r = created.value();
  uint64_t now = fuzz::kFirstNs;
  size_t pos = 0;
  while (pos + 3 <= d.size()) {
    const uint8_t ctl = d[pos];
    const size_t len = (size_t{d[pos + 1]} << 8 | d[pos + 2]) % 512;
    pos += 3;
    std::vector<uint8_t> dgram(d.begin() + pos,
                               d.begin() + pos + std::min(len, d.size() - pos));
    pos += dgram.size();
    if (ctl & fuzz::kCtlFixMac)
      FixMac(dgram);
    now +=
        static_cast<uint64_t>(ctl >> fuzz::kCtlTimeShift) * fuzz::kTimeStepNs;

    const auto before = r.table().entries();
    const Counters c = r.counters();
    const uint64_t realtime = fuzz::kRealtimeBase + now;
    const Outcome o = r.Receive(dgram, fuzz::FuzzSources()[ctl & 3],
                                fuzz::FuzzRecipient(), now, realtime);
    const Counters& n = r.counters();
    FUZZ_CHECK(n.received == c.received + 1);
    if (o.accepted) {
      FUZZ_CHECK(n.accepted == c.accepted + 1);
      // Nothing outside the skew, or from before the start, gets in.
      FUZZ_CHECK(o.message->time_ns <= realtime + fuzz::kMaxSkewNs);
      FUZZ_CHECK(o.message->time_ns + fuzz::kMaxSkewNs >= realtime);
      FUZZ_CHECK(o.message->time_ns >= fuzz::kRealtimeBase + fuzz::kMaxSkewNs);
      FUZZ_CHECK(n.dropped_total() == c.dropped_total());
    } else {
      FUZZ_CHECK(r.table().entries() == before);
      FUZZ_CHECK(n.accepted == c.accepted);
      FUZZ_CHECK(n.drop(o.reason) == c.drop(o.reason) + 1);
    }
    FUZZ_CHECK(n.received == n.accepted + n.dropped_total());

    const size_t size = r.table().size();
    const auto gone = r.Expire(now);
    FUZZ_CHECK(r.table().size() + gone.size() == size);
    for (const auto& [a, e] : r.table().entries())
      FUZZ_CHECK(e.expires > now);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  const std::span<const uint8_t> body(data + 1, size - 1);
  switch (data[0] % fuzz::kModes) {
    case fuzz::kRaw:
      DecodeOne(body);
      break;
    case fuzz::kFixMac: {
      std::vector<uint8_t> d(body.begin(), body.end());
      FixMac(d);
      DecodeOne(d);
      break;
    }
    case fuzz::kReceive:
      ReceiveSequence(body);
      break;
  }
  return 0;
}
