// SPDX-License-Identifier: GPL-2.0

#include "seeds.h"

#include "fuzz_common.h"
#include "proto/wire.h"

namespace parq::parqd::fuzz {

namespace {

std::vector<uint8_t> Encoded(const wire::Message& m,
                             const Address& to = FuzzRecipient()) {
  return wire::Encode(m, FuzzKey(), to).value();
}

// Stamped `steps` time steps after mode 2's first record.
wire::Message Grant(uint64_t seq, uint64_t steps, std::vector<Address> to) {
  wire::Message m;
  m.type = wire::Type::kGrant;
  m.sender = 1;
  m.time_ns = kRealtimeBase + kFirstNs + steps * kTimeStepNs;
  m.sequence = seq;
  m.credit = 15000;
  m.epoch_us = 10000;
  m.lease = 3;
  m.addresses = std::move(to);
  return m;
}

wire::Message Release(uint64_t seq, uint64_t steps, std::vector<Address> to) {
  wire::Message m = Grant(seq, steps, std::move(to));
  m.type = wire::Type::kRelease;
  m.credit = 0;
  m.lease = 0;
  return m;
}

std::vector<uint8_t> WithMode(Mode mode, std::vector<uint8_t> d) {
  d.insert(d.begin(), mode);
  return d;
}

void AddRecord(std::vector<uint8_t>& out, uint8_t ctl,
               const std::vector<uint8_t>& d) {
  out.push_back(ctl);
  out.push_back(static_cast<uint8_t>(d.size() >> 8));
  out.push_back(static_cast<uint8_t>(d.size()));
  out.insert(out.end(), d.begin(), d.end());
}

}  // namespace

std::vector<std::vector<uint8_t>> Seeds() {
  const auto& s = FuzzSources();
  std::vector<Address> many;
  for (uint8_t i = 0; i < wire::kMaxAddresses; i++)
    many.push_back(Address::V4({192, 0, 2, i}));

  const std::vector<wire::Message> messages = {
      Grant(1, 0, {s[0]}),
      Grant(2, 1, {s[0], s[1], s[2]}),
      Release(3, 2, {s[2]}),
      Grant(4, 3, many),
  };
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& m : messages) {
    seeds.push_back(WithMode(kRaw, Encoded(m)));
    seeds.push_back(WithMode(kFixMac, Encoded(m)));
  }

  // A session of peer 1: grant, duplicate, restatement, next, release, a
  // reordered one, a wrong source, one made for another host, time passing,
  // stamps beyond the skew either way.
  std::vector<uint8_t> session{kReceive};
  const uint8_t step = 1 << kCtlTimeShift;
  AddRecord(session, 0, Encoded(Grant(10, 0, {s[0], s[2]})));
  AddRecord(session, 0, Encoded(Grant(10, 0, {s[0], s[2]})));
  AddRecord(session, 1 | step, Encoded(Grant(11, 1, {s[0], s[2]})));
  AddRecord(session, 2 | step, Encoded(Grant(12, 2, {s[0]})));
  AddRecord(session, 0, Encoded(Release(13, 2, {s[2]})));
  AddRecord(session, 0, Encoded(Grant(9, 2, {s[0]})));
  AddRecord(session, 3, Encoded(Grant(15, 2, {s[0]})));
  AddRecord(session, 0, Encoded(Grant(15, 2, {s[0]}), s[3]));
  AddRecord(session, 0 | 31 << kCtlTimeShift, Encoded(Grant(16, 33, {s[1]})));
  AddRecord(session, 0, Encoded(Grant(17, 33 + 11, {s[1]})));
  AddRecord(session, 0, Encoded(Grant(18, 33 - 11, {s[1]})));
  seeds.push_back(session);
  return seeds;
}

}  // namespace parq::parqd::fuzz
