// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of inbox.cc: the whole receive path, each drop reason,
// that a dropped message changes nothing but the counters, and the
// freshness rules against the attacks they exist for (clock steps, epoch
// changes, restarts, a sequence number near 2^64, old recordings).

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proto/inbox.h"
#include "test_util.h"

namespace {

using namespace parq::parqd;
using parq::parqd::test::A;
using parq::parqd::test::Bytes;
using parq::parqd::test::MakeKey;
using parq::parqd::test::Recipient;
using parq::parqd::test::Resign;
using parq::parqd::test::TestKey;
using parq::parqd::test::TestKeys;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSec = 1000 * kMs;
constexpr uint64_t kEpoch = 10 * kMs;
constexpr uint64_t kSkew = 500 * kMs;
// CLOCK_REALTIME of the tests' "now = 0": 2027-01-15, in ns.
constexpr uint64_t kT0 = 1'800'000'000 * kSec;

// test::Grant() and Release() stamped at kT0 + `at` ns.
wire::Message Grant(uint64_t sender, uint64_t at, uint64_t seq, uint64_t credit,
                    std::vector<Address> to) {
  return parq::parqd::test::Grant(sender, kT0 + at, seq, credit, std::move(to));
}
wire::Message Release(uint64_t sender, uint64_t at, uint64_t seq,
                      std::vector<Address> to) {
  return parq::parqd::test::Release(sender, kT0 + at, seq, std::move(to));
}

Result<Inbox, std::string> MakeInbox(KeyRing keys, uint64_t start,
                                     Inbox::LogSink log = {}) {
  return Inbox::Create(std::move(keys),
                       {PeerConfig{1, {A("10.0.0.1"), A("fd00::1")}},
                        PeerConfig{2, {A("10.0.0.2")}}},
                       {kSkew, start}, std::move(log));
}

class ReceiverTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(kT0 - 10 * kSec); }

  // (Re)starts this host's parqd at CLOCK_REALTIME `start`: a new inbox.
  void Start(uint64_t start) {
    auto r = MakeInbox(TestKeys(), start, [this](const std::string& line) {
      log_.push_back(line);
    });
    ASSERT_TRUE(r.ok()) << r.error();
    rx_.emplace(std::move(r.value()));
  }

  // `now`: both clocks, as ns after kT0 (CLOCK_MONOTONIC starts at 0).
  Outcome Rx(const wire::Message& m, const Address& from, uint64_t now) {
    return rx_->Receive(Bytes(m), from, Recipient(), now, kT0 + now);
  }

  // Receives `d`, expects it dropped for `reason` with no change but the
  // counters.
  void ExpectDropped(const std::vector<uint8_t>& d, const Address& from,
                     uint64_t now, DropReason reason) {
    const auto before = rx_->table().entries();
    const Counters c = rx_->counters();
    const Outcome o = rx_->Receive(d, from, Recipient(), now, kT0 + now);
    EXPECT_FALSE(o.accepted);
    EXPECT_EQ(o.reason, reason) << Name(o.reason);
    EXPECT_EQ(rx_->table().entries(), before);
    EXPECT_EQ(rx_->counters().drop(reason), c.drop(reason) + 1);
    EXPECT_EQ(rx_->counters().dropped_total(), c.dropped_total() + 1);
    EXPECT_EQ(rx_->counters().accepted, c.accepted);
  }

  std::optional<Inbox> rx_;
  std::vector<std::string> log_;
};

TEST_F(ReceiverTest, AcceptsAndApplies) {
  const Outcome o = Rx(Grant(1, 100, 1, 1500, {A("10.0.0.1"), A("fd00::1")}),
                       A("fd00::1"), 1000);
  EXPECT_TRUE(o.accepted);
  EXPECT_EQ(rx_->table().size(), 2u);
  EXPECT_EQ(rx_->table().Lookup(A("10.0.0.1"), 1000)->credit, 1500u);
  EXPECT_EQ(rx_->counters().received, 1u);
  EXPECT_EQ(rx_->counters().accepted, 1u);
  EXPECT_EQ(rx_->counters().grants, 1u);
  EXPECT_TRUE(log_.empty());
}

TEST_F(ReceiverTest, ReleaseUnblocks) {
  ASSERT_TRUE(
      Rx(Grant(1, 100, 1, 0, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
  ASSERT_TRUE(
      Rx(Release(1, 101, 2, {A("10.0.0.1")}), A("10.0.0.1"), kEpoch).accepted);
  EXPECT_EQ(rx_->table().size(), 0u);
  EXPECT_EQ(rx_->counters().releases, 1u);
}

TEST_F(ReceiverTest, Malformed) {
  auto d = Bytes(Grant(1, 100, 1, 1, {A("10.0.0.1")}));
  d[0] = 'X';
  ExpectDropped(d, A("10.0.0.1"), 0, DropReason::kMalformed);
  ExpectDropped({1, 2, 3}, A("10.0.0.1"), 0, DropReason::kMalformed);
  EXPECT_EQ(rx_->counters().malformed[size_t(wire::WireError::kBadMagic)], 1u);
  EXPECT_EQ(rx_->counters().malformed[size_t(wire::WireError::kShort)], 1u);
}

TEST_F(ReceiverTest, MalformedAfterTheMac) {
  auto d = Bytes(Grant(1, 100, 1, 1, {A("10.0.0.1")}));
  d[wire::kOffFlags] = 1;
  Resign(d);
  ExpectDropped(d, A("10.0.0.1"), 0, DropReason::kMalformed);
  EXPECT_EQ(rx_->counters().malformed[size_t(wire::WireError::kBadFlags)], 1u);
}

TEST_F(ReceiverTest, BadMac) {
  const auto m = Grant(1, 100, 1, 1, {A("10.0.0.1")});
  ExpectDropped(Bytes(m, MakeKey(42)), A("10.0.0.1"), 0, DropReason::kBadMac);
  auto d = Bytes(m);
  d[wire::kOffCredit] ^= 0x80;
  ExpectDropped(d, A("10.0.0.1"), 0, DropReason::kBadMac);
  // The genuine message still gets in: the forgeries left no trace.
  EXPECT_TRUE(Rx(m, A("10.0.0.1"), 0).accepted);
}

TEST_F(ReceiverTest, UnknownPeer) {
  ExpectDropped(Bytes(Grant(3, 100, 1, 1, {A("10.0.0.1")})), A("10.0.0.1"), 0,
                DropReason::kUnknownPeer);
}

TEST_F(ReceiverTest, WrongSource) {
  ExpectDropped(Bytes(Grant(1, 100, 1, 1, {A("10.0.0.1")})), A("10.0.0.2"), 0,
                DropReason::kWrongSource);
  ExpectDropped(Bytes(Grant(1, 100, 1, 1, {A("10.0.0.1")})), A("10.9.9.9"), 0,
                DropReason::kWrongSource);
}

TEST_F(ReceiverTest, ForeignAddress) {
  // Peer 1 may not limit traffic to peer 2's address.
  ExpectDropped(Bytes(Grant(1, 100, 1, 1, {A("10.0.0.1"), A("10.0.0.2")})),
                A("10.0.0.1"), 0, DropReason::kForeignAddress);
}

TEST_F(ReceiverTest, DuplicateIsDroppedAndHarmless) {
  const auto m = Grant(1, 100, 1, 1500, {A("10.0.0.1")});
  ASSERT_TRUE(Rx(m, A("10.0.0.1"), 0).accepted);
  ExpectDropped(Bytes(m), A("10.0.0.1"), kMs, DropReason::kDuplicate);
  // Its lease was not extended by the duplicate.
  EXPECT_EQ(rx_->table().Lookup(A("10.0.0.1"), kMs)->expires, 3 * kEpoch);
}

TEST_F(ReceiverTest, ReplayFromLongAgoIsTooOld) {
  const auto old = Grant(1, 100, 1, 0, {A("10.0.0.1")});
  ASSERT_TRUE(Rx(old, A("10.0.0.1"), 0).accepted);
  for (uint64_t s = 2; s <= 70; s++)
    ASSERT_TRUE(
        Rx(Grant(1, 100 + s, s, 1500, {A("10.0.0.1")}), A("10.0.0.1"), s * kMs)
            .accepted);
  // Still within the skew: the window is what stops it.
  ExpectDropped(Bytes(old), A("10.0.0.1"), 71 * kMs, DropReason::kTooOld);
}

TEST_F(ReceiverTest, ReorderedOlderMessageIsStale) {
  ASSERT_TRUE(
      Rx(Grant(1, 100, 5, 1500, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
  // Sequence 4 arrives after 5: in the window, never seen, but outdated.
  ExpectDropped(Bytes(Grant(1, 99, 4, 0, {A("10.0.0.1")})), A("10.0.0.1"), 0,
                DropReason::kStale);
  // A delayed GRANT must not resurrect a released entry either.
  ASSERT_TRUE(
      Rx(Release(1, 101, 7, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
  ExpectDropped(Bytes(Grant(1, 100, 6, 1500, {A("10.0.0.1")})), A("10.0.0.1"),
                0, DropReason::kStale);
  EXPECT_EQ(rx_->table().size(), 0u);
}

TEST_F(ReceiverTest, StaleMessageDoesNotConsumeItsSequenceNumber) {
  ASSERT_TRUE(
      Rx(Grant(1, 100, 5, 1500, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
  ExpectDropped(Bytes(Grant(1, 99, 6, 0, {A("10.0.0.1")})), A("10.0.0.2"), 0,
                DropReason::kWrongSource);
  EXPECT_TRUE(
      Rx(Grant(1, 100, 6, 1400, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
}

TEST_F(ReceiverTest, RestatementRenewsTheLease) {
  ASSERT_TRUE(
      Rx(Grant(1, 100, 1, 1500, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
  EXPECT_TRUE(
      Rx(Grant(1, 100, 2, 1500, {A("10.0.0.1")}), A("10.0.0.1"), kMs).accepted);
  EXPECT_EQ(rx_->table().Lookup(A("10.0.0.1"), kMs)->expires, kMs + 3 * kEpoch);
}

// ---- Freshness: the timestamp against this host's clock.

TEST_F(ReceiverTest, TimestampWithinTheSkewIsAccepted) {
  // 499 ms ahead and 499 ms behind this host's clock.
  EXPECT_TRUE(Rx(Grant(1, 10 * kSec + 499 * kMs, 1, 1, {A("10.0.0.1")}),
                 A("10.0.0.1"), 10 * kSec)
                  .accepted);
  EXPECT_TRUE(Rx(Grant(1, 20 * kSec - 499 * kMs, 2, 1, {A("10.0.0.1")}),
                 A("10.0.0.1"), 20 * kSec)
                  .accepted);
}

TEST_F(ReceiverTest, TimestampBeyondTheSkewIsDropped) {
  ExpectDropped(Bytes(Grant(1, 10 * kSec + 501 * kMs, 1, 1, {A("10.0.0.1")})),
                A("10.0.0.1"), 10 * kSec, DropReason::kTimeAhead);
  ExpectDropped(Bytes(Grant(1, 10 * kSec - 501 * kMs, 1, 1, {A("10.0.0.1")})),
                A("10.0.0.1"), 10 * kSec, DropReason::kTimeBehind);
  // Neither took sequence 1.
  EXPECT_TRUE(
      Rx(Grant(1, 10 * kSec, 1, 1, {A("10.0.0.1")}), A("10.0.0.1"), 10 * kSec)
          .accepted);
}

// A GRANT recorded a week before parqd restarts is dropped after the
// restart: its timestamp is far outside the skew.
TEST_F(ReceiverTest, GrantRecordedAWeekAgoIsDroppedAfterARestart) {
  constexpr uint64_t kWeek = uint64_t{7} * 24 * 3600 * kSec;
  const auto old = Grant(1, 100, 1, 0, {A("10.0.0.1")});
  ASSERT_TRUE(Rx(old, A("10.0.0.1"), 100).accepted);
  Start(kT0 + kWeek);
  ExpectDropped(Bytes(old), A("10.0.0.1"), kWeek + kSec,
                DropReason::kTimeBehind);
  EXPECT_EQ(rx_->table().size(), 0u);
}

// What was recorded just before a restart cannot be replayed after it,
// though its timestamp is still within the skew.
TEST_F(ReceiverTest, GrantRecordedJustBeforeARestartIsDroppedAfterIt) {
  const auto m = Grant(1, 5 * kSec, 9, 0, {A("10.0.0.1")});
  ASSERT_TRUE(Rx(m, A("10.0.0.1"), 5 * kSec).accepted);
  Start(kT0 + 5 * kSec + 100 * kMs);
  ExpectDropped(Bytes(m), A("10.0.0.1"), 5 * kSec + 200 * kMs,
                DropReason::kBeforeStart);
  // The peer's next message, stamped after start + skew, gets in, with
  // any sequence number: the new inbox has no window yet.
  EXPECT_TRUE(Rx(Grant(1, 5 * kSec + 601 * kMs, 10, 0, {A("10.0.0.1")}),
                 A("10.0.0.1"), 5 * kSec + 601 * kMs)
                  .accepted);
}

// A receiving host whose epoch changes (1 ms to 10 ms) and that restarts
// is still heard: freshness is the timestamp, not the epoch number.
TEST_F(ReceiverTest, GranterRestartingWithAnotherEpochLengthIsHeard) {
  auto m = Grant(1, kSec, kT0 + kSec, 1500, {A("10.0.0.1")});
  m.epoch_us = 1000;  // 1 ms
  ASSERT_TRUE(Rx(m, A("10.0.0.1"), kSec).accepted);
  // Restarted 2 ms later with 10 ms epochs; its sequence numbers are
  // seeded from its clock again.
  auto after =
      Grant(1, kSec + 2 * kMs, kT0 + kSec + 2 * kMs, 1500, {A("10.0.0.1")});
  after.epoch_us = 10'000;
  const Outcome o = Rx(after, A("10.0.0.1"), kSec + 2 * kMs);
  EXPECT_TRUE(o.accepted) << Name(o.reason);
  EXPECT_EQ(rx_->table().Lookup(A("10.0.0.1"), kSec + 2 * kMs)->epoch_ns,
            10 * kMs);
}

// So is one whose clock steps back 2 s.  With a skew of 3 s (a clock 2 s
// off is outside the default), the granter's clock goes from 1.5 s ahead
// to 0.5 s behind and its messages keep their order.
TEST(ReceiverFreshness, GranterClockSteppingBackIsHeard) {
  auto rx = Inbox::Create(TestKeys(), {PeerConfig{1, {A("10.0.0.1")}}},
                          {3 * kSec, kT0 - 10 * kSec});
  ASSERT_TRUE(rx.ok());
  Inbox& in = rx.value();
  uint64_t seq = kT0;
  for (uint64_t t = 0; t < 10 * kEpoch; t += kEpoch) {
    const auto m = parq::parqd::test::Grant(1, kT0 + t + 1500 * kMs, ++seq, 1,
                                            {A("10.0.0.1")});
    ASSERT_TRUE(
        in.Receive(Bytes(m), A("10.0.0.1"), Recipient(), t, kT0 + t).accepted);
  }
  for (uint64_t t = 10 * kEpoch; t < 20 * kEpoch; t += kEpoch) {
    const auto m = parq::parqd::test::Grant(1, kT0 + t - 500 * kMs, ++seq, 1,
                                            {A("10.0.0.1")});
    const Outcome o =
        in.Receive(Bytes(m), A("10.0.0.1"), Recipient(), t, kT0 + t);
    EXPECT_TRUE(o.accepted) << Name(o.reason);
  }
  EXPECT_EQ(in.counters().dropped_total(), 0u);
}

// The granter restarted after its clock stepped back: its new sequence
// numbers start below the old ones.  They are dropped until every
// message of the old numbering is older than the skew, then heard.
TEST_F(ReceiverTest, GranterRestartingBelowItsOldSequenceIsHeardWithinTheSkew) {
  ASSERT_TRUE(Rx(Grant(1, kSec, kT0 + 3 * kSec, 0, {A("10.0.0.1")}),
                 A("10.0.0.1"), kSec)
                  .accepted);
  const auto low = [](uint64_t at, uint64_t seq) {
    return Grant(1, at, kT0 + seq, 1500, {A("10.0.0.1")});
  };
  ExpectDropped(Bytes(low(kSec + 10 * kMs, kSec)), A("10.0.0.1"),
                kSec + 10 * kMs, DropReason::kTooOld);
  ExpectDropped(Bytes(low(kSec + kSkew, kSec + 1)), A("10.0.0.1"), kSec + kSkew,
                DropReason::kTooOld);
  const Outcome o =
      Rx(low(kSec + kSkew + 1, kSec + 2), A("10.0.0.1"), kSec + kSkew + 1);
  EXPECT_TRUE(o.accepted) << Name(o.reason);
  EXPECT_EQ(rx_->counters().forgotten, 1u);
  EXPECT_EQ(rx_->table().Lookup(A("10.0.0.1"), kSec + kSkew + 1)->credit,
            1500u);
}

// A message with sequence 2^64-1 and a valid MAC holds the peer's replay
// window only until it is older than the skew: after that, genuine
// messages with lower sequence numbers are accepted again.
TEST_F(ReceiverTest, SequenceNearTwoToTheSixtyFourHoldsOnlyForTheSkew) {
  ASSERT_TRUE(
      Rx(Grant(1, kSec, 1000, 1500, {A("10.0.0.1")}), A("10.0.0.1"), kSec)
          .accepted);
  ASSERT_TRUE(Rx(Grant(1, kSec + kMs, UINT64_MAX, 0, {A("10.0.0.1")}),
                 A("10.0.0.1"), kSec + kMs)
                  .accepted);
  ExpectDropped(Bytes(Grant(1, kSec + 2 * kMs, 1001, 1500, {A("10.0.0.1")})),
                A("10.0.0.1"), kSec + 2 * kMs, DropReason::kTooOld);
  const uint64_t healed = kSec + kMs + kSkew + 1;
  const Outcome o =
      Rx(Grant(1, healed, 1002, 1500, {A("10.0.0.1")}), A("10.0.0.1"), healed);
  EXPECT_TRUE(o.accepted) << Name(o.reason);
  EXPECT_EQ(rx_->table().Lookup(A("10.0.0.1"), healed)->credit, 1500u);
}

// ---- Keys: by key id, and nothing computed for a stranger.

TEST_F(ReceiverTest, UnknownKeyIdIsDroppedBeforeTheMac) {
  auto m = Grant(1, 100, 1, 1, {A("10.0.0.1")});
  m.key_id = 2;
  ExpectDropped(Bytes(m, MakeKey(2)), A("10.0.0.1"), 0,
                DropReason::kUnknownKey);
}

TEST(ReceiverKeys, TwoKeysAreAcceptedDuringARotation) {
  std::map<uint32_t, Key> keys;
  keys.emplace(1, TestKey());
  keys.emplace(2, MakeKey(2));
  auto ring = KeyRing::Create(std::move(keys), 2);
  ASSERT_TRUE(ring.ok()) << ring.error();
  auto rx = MakeInbox(std::move(ring.value()), kT0 - 10 * kSec);
  ASSERT_TRUE(rx.ok());
  auto m = Grant(1, 100, 1, 1, {A("10.0.0.1")});
  EXPECT_TRUE(rx.value()
                  .Receive(Bytes(m), A("10.0.0.1"), Recipient(), 100, kT0 + 100)
                  .accepted);
  m.key_id = 2;
  m.sequence = 2;
  EXPECT_TRUE(rx.value()
                  .Receive(Bytes(m, MakeKey(2)), A("10.0.0.1"), Recipient(),
                           100, kT0 + 100)
                  .accepted);
  // A message under id 2 made with key 1 is a forgery.
  m.sequence = 3;
  const Outcome o =
      rx.value().Receive(Bytes(m), A("10.0.0.1"), Recipient(), 100, kT0 + 100);
  EXPECT_EQ(o.reason, DropReason::kBadMac);
}

// SIGHUP reloads the configuration without losing replay state: a reload
// that swaps key 1 for key 2 and changes the skew keeps the peers'
// windows and entries, so sequence 5, accepted under key 1, is still a
// duplicate under key 2.
TEST_F(ReceiverTest, AReloadKeepsTheReplayWindows) {
  ASSERT_TRUE(
      Rx(Grant(1, 100, 5, 700, {A("10.0.0.1")}), A("10.0.0.1"), 100).accepted);
  auto ring = KeyRing::Cluster(2, MakeKey(2));
  ASSERT_TRUE(ring.ok()) << ring.error();
  rx_->Reload(std::move(ring.value()), 2 * kSkew);
  EXPECT_EQ(rx_->freshness().max_skew_ns, 2 * kSkew);
  EXPECT_EQ(rx_->keys().send_id(), 2u);
  EXPECT_EQ(rx_->table().Lookup(A("10.0.0.1"), 200)->credit, 700u);

  auto m = Grant(1, 200, 5, 1, {A("10.0.0.1")});
  m.key_id = 2;
  ExpectDropped(Bytes(m, MakeKey(2)), A("10.0.0.1"), 200,
                DropReason::kDuplicate);
  // Key 1 is gone.
  ExpectDropped(Bytes(Grant(1, 200, 6, 1, {A("10.0.0.1")})), A("10.0.0.1"), 200,
                DropReason::kUnknownKey);
  m.sequence = 6;
  EXPECT_TRUE(rx_->Receive(Bytes(m, MakeKey(2)), A("10.0.0.1"), Recipient(),
                           300, kT0 + 300)
                  .accepted);
  // The new skew: stamped 0.9 s ahead is within 2 x 500 ms.
  m.sequence = 7;
  m.time_ns = kT0 + 300 + 900 * kMs;
  EXPECT_TRUE(rx_->Receive(Bytes(m, MakeKey(2)), A("10.0.0.1"), Recipient(),
                           300, kT0 + 300)
                  .accepted);
}

// With one cluster key, any host that holds it and can spoof another
// host's source address could send credit 0 for that host's addresses.
// With pair keys, host 3 holds the keys of its own pairs only: a message
// it forges as host 1, from host 1's address, fails the MAC of pair
// (1, 9), this host being node 9.
TEST(ReceiverPairKeys, ACompromisedHostCannotForgeForAnother) {
  const Key secret = MakeKey(77);
  KeyRing::PairKeys mine;
  for (uint64_t p : {1, 3})
    mine.emplace(std::pair{1u, p}, DerivePairKey(secret, 1, 9, p).value());
  auto ring = KeyRing::CreatePairs(std::move(mine), 1);
  ASSERT_TRUE(ring.ok()) << ring.error();
  auto rx = Inbox::Create(
      std::move(ring.value()),
      {PeerConfig{1, {A("10.0.0.1")}}, PeerConfig{3, {A("10.0.0.3")}}},
      {kSkew, kT0 - 10 * kSec});
  ASSERT_TRUE(rx.ok()) << rx.error();
  Inbox& in = rx.value();
  // What host 3 holds: its pairs' keys, (3, 9) among them.
  const Key k39 = DerivePairKey(secret, 1, 3, 9).value();
  const Key k13 = DerivePairKey(secret, 1, 1, 3).value();
  for (const Key* k : {&k39, &k13}) {
    const Outcome o =
        in.Receive(Bytes(Grant(1, 100, 5, 0, {A("10.0.0.1")}), *k),
                   A("10.0.0.1"), Recipient(), 100, kT0 + 100);
    EXPECT_EQ(o.reason, DropReason::kBadMac);
  }
  EXPECT_EQ(in.table().size(), 0u);
  // Host 3's own messages, and host 1's genuine ones, get in.
  EXPECT_TRUE(in.Receive(Bytes(Grant(3, 100, 1, 0, {A("10.0.0.3")}), k39),
                         A("10.0.0.3"), Recipient(), 100, kT0 + 100)
                  .accepted);
  EXPECT_TRUE(in.Receive(Bytes(Grant(1, 100, 6, 0, {A("10.0.0.1")}),
                               DerivePairKey(secret, 1, 1, 9).value()),
                         A("10.0.0.1"), Recipient(), 100, kT0 + 100)
                  .accepted);
}

// With a cluster key every host holds the same key.  Host 1 grants
// credit 0 to host B (192.0.2.11); an attacker captures the GRANT and
// replays it to host C (this inbox, 192.0.2.12) with host 1's source
// address.  The MAC covers the recipient: C drops it as bad_mac
// (parqd_messages_dropped_total{reason="bad_mac"}) and stays unthrottled;
// B, where it was sent, accepts it.
TEST(ReceiverRecipient, AGrantCapturedForAnotherHostIsRefused) {
  const Address b = A("192.0.2.11");
  const Address c = A("192.0.2.12");
  const std::vector<uint8_t> grant =
      Bytes(Grant(1, 100, 5, 0, {A("10.0.0.1")}), TestKey(), b);
  auto at_c = MakeInbox(TestKeys(), kT0 - 10 * kSec);
  ASSERT_TRUE(at_c.ok()) << at_c.error();
  const Outcome o =
      at_c.value().Receive(grant, A("10.0.0.1"), c, 100, kT0 + 100);
  EXPECT_FALSE(o.accepted);
  EXPECT_EQ(o.reason, DropReason::kBadMac) << Name(o.reason);
  EXPECT_EQ(at_c.value().counters().drop(DropReason::kBadMac), 1u);
  EXPECT_EQ(at_c.value().table().size(), 0u);

  auto at_b = MakeInbox(TestKeys(), kT0 - 10 * kSec);
  ASSERT_TRUE(at_b.ok()) << at_b.error();
  EXPECT_TRUE(
      at_b.value().Receive(grant, A("10.0.0.1"), b, 100, kT0 + 100).accepted);
  EXPECT_EQ(at_b.value().table().Lookup(A("10.0.0.1"), 100)->credit, 0u);
}

// The recipient is compared as an address, family included: a message made
// for an IPv4 address does not pass at the IPv6 address of the same bytes.
TEST(ReceiverRecipient, TheFamilyOfTheRecipientCounts) {
  auto rx = MakeInbox(TestKeys(), kT0 - 10 * kSec);
  ASSERT_TRUE(rx.ok()) << rx.error();
  const std::vector<uint8_t> d =
      Bytes(Grant(1, 100, 5, 0, {A("10.0.0.1")}), TestKey(), A("10.0.0.1"));
  EXPECT_EQ(
      rx.value().Receive(d, A("10.0.0.1"), A("a00:1::"), 100, kT0 + 100).reason,
      DropReason::kBadMac);
}

// A datagram from a stranger is dropped on its header: its MAC is never
// checked (it would have been bad_mac).
TEST_F(ReceiverTest, StrangersAreDroppedBeforeTheMac) {
  auto d = Bytes(Grant(1, 100, 1, 1, {A("10.0.0.1")}), MakeKey(42));
  ExpectDropped(d, A("192.0.2.7"), 0, DropReason::kWrongSource);
  auto e = Bytes(Grant(9, 100, 1, 1, {A("10.0.0.1")}), MakeKey(42));
  ExpectDropped(e, A("10.0.0.1"), 0, DropReason::kUnknownPeer);
  EXPECT_EQ(rx_->counters().drop(DropReason::kBadMac), 0u);
}

TEST_F(ReceiverTest, LostMessagesAreRepairedByTheNext) {
  ASSERT_TRUE(
      Rx(Grant(1, 100, 1, 1500, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
  // 101, 102 lost.
  ASSERT_TRUE(
      Rx(Grant(1, 103, 4, 600, {A("10.0.0.1")}), A("10.0.0.1"), 2 * kEpoch)
          .accepted);
  EXPECT_EQ(rx_->table().Lookup(A("10.0.0.1"), 2 * kEpoch)->credit, 600u);
}

TEST_F(ReceiverTest, LostReleaseEndsWithTheLease) {
  ASSERT_TRUE(
      Rx(Grant(1, 100, 1, 0, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
  EXPECT_TRUE(rx_->Expire(3 * kEpoch - 1).empty());
  const auto gone = rx_->Expire(3 * kEpoch);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0], A("10.0.0.1"));
  EXPECT_EQ(rx_->counters().expired, 1u);
}

TEST_F(ReceiverTest, PeersHaveSeparateWindows) {
  ASSERT_TRUE(
      Rx(Grant(1, 100, 1, 1, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
  EXPECT_TRUE(
      Rx(Grant(2, 5, 1, 1, {A("10.0.0.2")}), A("10.0.0.2"), 0).accepted);
}

TEST_F(ReceiverTest, CountersAddUp) {
  const auto m = Grant(1, 100, 1, 1, {A("10.0.0.1")});
  Rx(m, A("10.0.0.1"), 0);
  Rx(m, A("10.0.0.1"), 0);
  rx_->Receive(std::vector<uint8_t>{}, A("10.0.0.1"), Recipient(), 0, kT0);
  const Counters& c = rx_->counters();
  EXPECT_EQ(c.received, 3u);
  EXPECT_EQ(c.received, c.accepted + c.dropped_total());
}

// parqctl peers: what each peer sent that was accepted, the drops that
// named it, and the credit its grants hold; a datagram naming no peer
// counts for none.
TEST_F(ReceiverTest, PeerStatusByPeer) {
  const auto g = Grant(1, 100, 7, 1500, {A("10.0.0.1")});
  ASSERT_TRUE(Rx(g, A("10.0.0.1"), 2 * kMs).accepted);
  Rx(g, A("10.0.0.1"), 3 * kMs);  // duplicate
  rx_->Receive(Bytes(g, MakeKey(42)), A("10.0.0.1"), Recipient(), 3 * kMs,
               kT0);                                                 // bad MAC
  Rx(Grant(2, 100, 1, 1, {A("10.0.0.2")}), A("10.0.0.1"), 3 * kMs);  // source
  Rx(Grant(3, 100, 1, 1, {A("10.0.0.1")}), A("10.0.0.1"), 3 * kMs);  // peer 3

  const std::vector<PeerStatus> ps = rx_->Peers(4 * kMs);
  ASSERT_EQ(ps.size(), 2u);
  const PeerStatus& one = ps[0];
  EXPECT_EQ(one.id, 1u);
  EXPECT_EQ(one.addresses.size(), 2u);
  EXPECT_EQ(one.accepted, 1u);
  ASSERT_TRUE(one.last.has_value());
  EXPECT_EQ(one.last->type, wire::Type::kGrant);
  EXPECT_EQ(one.last->sequence, 7u);
  EXPECT_EQ(one.last->time_ns, kT0 + 100);
  EXPECT_EQ(one.last->at, 2 * kMs);
  EXPECT_EQ(one.dropped[size_t(DropReason::kDuplicate)], 1u);
  EXPECT_EQ(one.dropped[size_t(DropReason::kBadMac)], 1u);
  uint64_t total = 0;
  for (uint64_t n : one.dropped)
    total += n;
  EXPECT_EQ(total, 2u);
  ASSERT_EQ(one.held.size(), 1u);
  EXPECT_EQ(one.held[0].first, A("10.0.0.1"));
  EXPECT_EQ(one.held[0].second.credit, 1500u);

  const PeerStatus& two = ps[1];
  EXPECT_EQ(two.id, 2u);
  EXPECT_EQ(two.accepted, 0u);
  EXPECT_FALSE(two.last.has_value());
  EXPECT_EQ(two.dropped[size_t(DropReason::kWrongSource)], 1u);
  EXPECT_TRUE(two.held.empty());
  EXPECT_EQ(rx_->counters().drop(DropReason::kUnknownPeer), 1u);

  // Once the lease ends, nothing is held.
  EXPECT_TRUE(rx_->Peers(10 * kSec)[0].held.empty());
}

TEST_F(ReceiverTest, LogsDropsAtALimitedRate) {
  const std::vector<uint8_t> junk(5, 0);
  for (int i = 0; i < 100; i++)
    rx_->Receive(junk, A("10.0.0.9"), Recipient(), 0, kT0);
  ASSERT_EQ(log_.size(), Inbox::kLogBurst);
  EXPECT_EQ(log_[0],
            "parqd: dropped a credit message from 10.0.0.9: malformed (short)");
  rx_->Receive(Bytes(Grant(3, 1, 1, 1, {A("10.0.0.1")})), A("10.0.0.1"),
               Recipient(), Inbox::kLogIntervalNs, kT0 + Inbox::kLogIntervalNs);
  ASSERT_EQ(log_.size(), Inbox::kLogBurst + 1);
  EXPECT_EQ(log_.back(),
            "parqd: dropped a credit message from 10.0.0.1 (peer 3): "
            "unknown_peer; 90 similar lines suppressed");
  EXPECT_EQ(rx_->counters().received, 101u);
}

TEST(ReceiverCreate, RejectsBadConfigurations) {
  auto r = Inbox::Create(TestKeys(), {PeerConfig{1, {}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "peer 1 has no addresses");

  r = Inbox::Create(TestKeys(), {PeerConfig{1, {A("10.0.0.1")}},
                                 PeerConfig{1, {A("10.0.0.2")}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "peer 1 is configured twice");

  r = Inbox::Create(TestKeys(), {PeerConfig{1, {A("10.0.0.1")}},
                                 PeerConfig{2, {A("10.0.0.1")}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "address 10.0.0.1 is configured for peer 1 and peer 2");

  r = Inbox::Create(TestKeys(),
                    {PeerConfig{1, {A("10.0.0.1"), A("10.0.0.1")}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "address 10.0.0.1 is configured for peer 1 twice");

  std::vector<Address> many;
  for (uint8_t i = 0; i < 17; i++)
    many.push_back(Address::V4({10, 1, 0, i}));
  r = Inbox::Create(TestKeys(), {PeerConfig{1, many}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("at most 16"), std::string::npos);

  EXPECT_TRUE(Inbox::Create(TestKeys(), {}).ok());
}

}  // namespace
