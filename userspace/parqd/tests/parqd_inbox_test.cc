// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of inbox.cc: the whole receive path, each drop reason,
// and that a dropped message changes nothing but the counters.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "inbox.h"
#include "test_util.h"

namespace {

using namespace parq::parqd;
using parq::parqd::test::A;
using parq::parqd::test::Bytes;
using parq::parqd::test::Grant;
using parq::parqd::test::MakeKey;
using parq::parqd::test::Release;
using parq::parqd::test::Resign;
using parq::parqd::test::TestKey;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kEpoch = 10 * kMs;

class ReceiverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = Inbox::Create(
        TestKey(),
        {PeerConfig{1, {A("10.0.0.1"), A("fd00::1")}},
         PeerConfig{2, {A("10.0.0.2")}}},
        [this](const std::string& line) { log_.push_back(line); });
    ASSERT_TRUE(r.ok()) << r.error();
    rx_.emplace(std::move(r.value()));
  }

  Outcome Rx(const wire::Message& m, const Address& from, uint64_t now) {
    return rx_->Receive(Bytes(m), from, now);
  }

  // Receives `d`, expects it dropped for `reason` with no change but the
  // counters.
  void ExpectDropped(const std::vector<uint8_t>& d, const Address& from,
                     uint64_t now, DropReason reason) {
    const auto before = rx_->table().entries();
    const Counters c = rx_->counters();
    const Outcome o = rx_->Receive(d, from, now);
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
    ASSERT_TRUE(Rx(Grant(1, 100 + s, s, 1500, {A("10.0.0.1")}), A("10.0.0.1"),
                   s * kEpoch)
                    .accepted);
  ExpectDropped(Bytes(old), A("10.0.0.1"), 71 * kEpoch, DropReason::kTooOld);
}

TEST_F(ReceiverTest, OlderEpochIsStale) {
  ASSERT_TRUE(
      Rx(Grant(1, 100, 5, 1500, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
  // A newer sequence number, an older epoch: reordered or a confused peer.
  ExpectDropped(Bytes(Grant(1, 99, 6, 0, {A("10.0.0.1")})), A("10.0.0.1"), 0,
                DropReason::kStale);
  // A delayed GRANT must not resurrect a released entry either.
  ASSERT_TRUE(
      Rx(Release(1, 101, 7, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
  ExpectDropped(Bytes(Grant(1, 100, 4, 1500, {A("10.0.0.1")})), A("10.0.0.1"),
                0, DropReason::kStale);
  EXPECT_EQ(rx_->table().size(), 0u);
}

TEST_F(ReceiverTest, StaleMessageDoesNotConsumeItsSequenceNumber) {
  ASSERT_TRUE(
      Rx(Grant(1, 100, 5, 1500, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
  ExpectDropped(Bytes(Grant(1, 99, 6, 0, {A("10.0.0.1")})), A("10.0.0.1"), 0,
                DropReason::kStale);
  EXPECT_TRUE(
      Rx(Grant(1, 100, 6, 1400, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
}

TEST_F(ReceiverTest, SameEpochRestatementIsAccepted) {
  ASSERT_TRUE(
      Rx(Grant(1, 100, 1, 1500, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
  EXPECT_TRUE(
      Rx(Grant(1, 100, 2, 1500, {A("10.0.0.1")}), A("10.0.0.1"), kMs).accepted);
  EXPECT_EQ(rx_->table().Lookup(A("10.0.0.1"), kMs)->expires, kMs + 3 * kEpoch);
}

TEST_F(ReceiverTest, ReorderedWithinTheWindowButSameEpochIsAccepted) {
  ASSERT_TRUE(
      Rx(Grant(1, 100, 3, 1500, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
  EXPECT_TRUE(
      Rx(Grant(1, 100, 2, 1500, {A("10.0.0.1")}), A("10.0.0.1"), 0).accepted);
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
  rx_->Receive(std::vector<uint8_t>{}, A("10.0.0.1"), 0);
  const Counters& c = rx_->counters();
  EXPECT_EQ(c.received, 3u);
  EXPECT_EQ(c.received, c.accepted + c.dropped_total());
}

TEST_F(ReceiverTest, LogsDropsAtALimitedRate) {
  const std::vector<uint8_t> junk(5, 0);
  for (int i = 0; i < 100; i++)
    rx_->Receive(junk, A("10.0.0.9"), 0);
  ASSERT_EQ(log_.size(), Inbox::kLogBurst);
  EXPECT_EQ(log_[0],
            "parqd: dropped a credit message from 10.0.0.9: malformed (short)");
  rx_->Receive(Bytes(Grant(3, 1, 1, 1, {A("10.0.0.1")})), A("10.0.0.1"),
               Inbox::kLogIntervalNs);
  ASSERT_EQ(log_.size(), Inbox::kLogBurst + 1);
  EXPECT_EQ(log_.back(),
            "parqd: dropped a credit message from 10.0.0.1 (peer 3): "
            "unknown_peer; 90 similar lines suppressed");
  EXPECT_EQ(rx_->counters().received, 101u);
}

TEST(ReceiverCreate, RejectsBadConfigurations) {
  auto r = Inbox::Create(TestKey(), {PeerConfig{1, {}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "peer 1 has no addresses");

  r = Inbox::Create(TestKey(), {PeerConfig{1, {A("10.0.0.1")}},
                                PeerConfig{1, {A("10.0.0.2")}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "peer 1 is configured twice");

  r = Inbox::Create(TestKey(), {PeerConfig{1, {A("10.0.0.1")}},
                                PeerConfig{2, {A("10.0.0.1")}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "address 10.0.0.1 is configured for peer 1 and peer 2");

  r = Inbox::Create(TestKey(), {PeerConfig{1, {A("10.0.0.1"), A("10.0.0.1")}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "address 10.0.0.1 is configured for peer 1 twice");

  std::vector<Address> many;
  for (uint8_t i = 0; i < 17; i++)
    many.push_back(Address::V4({10, 1, 0, i}));
  r = Inbox::Create(TestKey(), {PeerConfig{1, many}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("at most 16"), std::string::npos);

  EXPECT_TRUE(Inbox::Create(TestKey(), {}).ok());
}

}  // namespace
