// SPDX-License-Identifier: GPL-2.0

#include "seeds.h"

#include "fuzz_common.h"
#include "wire.h"

namespace parq::parqd::fuzz {

namespace {

std::vector<uint8_t> Encoded(const wire::Message& m) {
  return wire::Encode(m, FuzzKey()).value();
}

wire::Message Grant(uint64_t seq, uint64_t epoch, std::vector<Address> to) {
  wire::Message m;
  m.type = wire::Type::kGrant;
  m.sender = 1;
  m.epoch = epoch;
  m.sequence = seq;
  m.credit = 15000;
  m.epoch_us = 10000;
  m.lease = wire::kDefaultLeaseEpochs;
  m.addresses = std::move(to);
  return m;
}

wire::Message Release(uint64_t seq, uint64_t epoch, std::vector<Address> to) {
  wire::Message m = Grant(seq, epoch, std::move(to));
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
      Grant(1, 100, {s[0]}),
      Grant(2, 101, {s[0], s[1], s[2]}),
      Release(3, 102, {s[2]}),
      Grant(4, 103, many),
  };
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& m : messages) {
    seeds.push_back(WithMode(kRaw, Encoded(m)));
    seeds.push_back(WithMode(kFixMac, Encoded(m)));
  }

  // A session of peer 1: grant, duplicate, restatement in the same epoch,
  // next epoch, release, a stale one, a wrong source, time passing.
  std::vector<uint8_t> session{kReceive};
  const uint8_t step = 1 << kCtlTimeShift;
  AddRecord(session, 0, Encoded(Grant(10, 100, {s[0], s[2]})));
  AddRecord(session, 0, Encoded(Grant(10, 100, {s[0], s[2]})));
  AddRecord(session, 1 | step, Encoded(Grant(11, 100, {s[0], s[2]})));
  AddRecord(session, 2 | step, Encoded(Grant(12, 101, {s[0]})));
  AddRecord(session, 0, Encoded(Release(13, 101, {s[2]})));
  AddRecord(session, 0, Encoded(Grant(14, 99, {s[0]})));
  AddRecord(session, 3, Encoded(Grant(15, 102, {s[0]})));
  AddRecord(session, 0 | 31 << kCtlTimeShift, Encoded(Grant(16, 103, {s[1]})));
  seeds.push_back(session);
  return seeds;
}

}  // namespace parq::parqd::fuzz
