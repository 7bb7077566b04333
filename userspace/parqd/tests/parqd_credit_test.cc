// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of credit.cc: lease arithmetic, absolute and idempotent
// credits, release and expiry, at the edges of u64 time.

#include <gtest/gtest.h>

#include <cstdint>

#include "proto/credit.h"
#include "test_util.h"

namespace {

using namespace parq::parqd;
using parq::parqd::test::A;
using parq::parqd::test::Grant;
using parq::parqd::test::Release;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kEpoch = 10 * kMs;  // test::Grant's epoch_us

// ---- LeaseExpiry -------------------------------------------------------

TEST(LeaseExpiry, Plain) {
  EXPECT_EQ(LeaseExpiry(1000, 3, kEpoch), 1000 + 30 * kMs);
  EXPECT_EQ(LeaseExpiry(0, 1, 1), 1u);
  EXPECT_EQ(LeaseExpiry(5, 0, kEpoch), 5u);
}

TEST(LeaseExpiry, LargestLeaseAndEpochFitWithoutSaturating) {
  const uint64_t longest = uint64_t{UINT16_MAX} * wire::kMaxEpochUs * 1000;
  EXPECT_EQ(LeaseExpiry(0, UINT16_MAX, uint64_t{wire::kMaxEpochUs} * 1000),
            longest);
}

TEST(LeaseExpiry, SaturatesNearU64Max) {
  EXPECT_EQ(LeaseExpiry(UINT64_MAX, 3, kEpoch), UINT64_MAX);
  EXPECT_EQ(LeaseExpiry(UINT64_MAX - 30 * kMs, 3, kEpoch), UINT64_MAX);
  EXPECT_EQ(LeaseExpiry(UINT64_MAX - 30 * kMs - 1, 3, kEpoch), UINT64_MAX - 1);
  EXPECT_EQ(LeaseExpiry(UINT64_MAX - 1, 1, 2), UINT64_MAX);
  EXPECT_EQ(LeaseExpiry(1, UINT16_MAX, UINT64_MAX), UINT64_MAX);  // product
}

// ---- Apply -------------------------------------------------------------

TEST(CreditTable, GrantCreatesEntriesForEveryAddress) {
  CreditTable t;
  const auto r =
      t.Apply(Grant(7, 100, 1, 1500, {A("10.0.0.1"), A("fd00::1")}), 1000);
  EXPECT_EQ(r.applied, 2u);
  ASSERT_EQ(t.size(), 2u);
  const auto e = t.Lookup(A("fd00::1"), 1000);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->credit, 1500u);
  EXPECT_EQ(e->epoch_ns, kEpoch);
  EXPECT_EQ(e->granter, 7u);
  EXPECT_EQ(e->expires, 1000 + 3 * kEpoch);
  EXPECT_FALSE(t.Lookup(A("10.0.0.2"), 1000));
}

TEST(CreditTable, CreditIsAbsoluteNotAdded) {
  CreditTable t;
  t.Apply(Grant(7, 100, 1, 1500, {A("10.0.0.1")}), 0);
  t.Apply(Grant(7, 101, 2, 500, {A("10.0.0.1")}), kEpoch);
  EXPECT_EQ(t.Lookup(A("10.0.0.1"), kEpoch)->credit, 500u);
}

TEST(CreditTable, ZeroCreditIsAnEntryThatStops) {
  CreditTable t;
  t.Apply(Grant(7, 100, 1, 0, {A("10.0.0.1")}), 0);
  const auto e = t.Lookup(A("10.0.0.1"), 0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->credit, 0u);
}

TEST(CreditTable, DuplicateIsIdempotent) {
  CreditTable t;
  const auto m = Grant(7, 100, 1, 1500, {A("10.0.0.1")});
  t.Apply(m, 1000);
  const auto before = t.entries();
  t.Apply(m, 1000);
  EXPECT_EQ(t.entries(), before);
}

TEST(CreditTable, DuplicateLaterExtendsTheLeaseOnly) {
  // A duplicate applied later is a restatement: same credit, lease from now.
  CreditTable t;
  const auto m = Grant(7, 100, 1, 1500, {A("10.0.0.1")});
  t.Apply(m, 1000);
  t.Apply(m, 2000);
  const auto e = t.Lookup(A("10.0.0.1"), 2000);
  EXPECT_EQ(e->credit, 1500u);
  EXPECT_EQ(e->expires, 2000 + 3 * kEpoch);
}

TEST(CreditTable, LostMessageIsRepairedByTheNext) {
  CreditTable t;
  t.Apply(Grant(7, 100, 1, 1500, {A("10.0.0.1")}), 0);
  // Epoch 101 (credit 900) lost; 102 arrives.
  t.Apply(Grant(7, 102, 3, 700, {A("10.0.0.1")}), 2 * kEpoch);
  const auto e = t.Lookup(A("10.0.0.1"), 2 * kEpoch);
  EXPECT_EQ(e->credit, 700u);
}

TEST(CreditTable, NewerSequenceOverrides) {
  CreditTable t;
  t.Apply(Grant(7, 100, 1, 1500, {A("10.0.0.1")}), 0);
  t.Apply(Grant(7, 100, 2, 0, {A("10.0.0.1")}), 0);
  EXPECT_EQ(t.Lookup(A("10.0.0.1"), 0)->credit, 0u);
}

TEST(CreditTable, ReleaseRemovesAndIsIdempotent) {
  CreditTable t;
  t.Apply(Grant(7, 100, 1, 1500, {A("10.0.0.1"), A("10.0.0.2")}), 0);
  auto r = t.Apply(Release(7, 100, 2, {A("10.0.0.1")}), 0);
  EXPECT_EQ(r.applied, 1u);
  EXPECT_FALSE(t.Lookup(A("10.0.0.1"), 0));
  EXPECT_TRUE(t.Lookup(A("10.0.0.2"), 0));
  r = t.Apply(Release(7, 100, 2, {A("10.0.0.1")}), 0);
  EXPECT_EQ(r.applied, 1u);
  EXPECT_EQ(t.size(), 1u);
}

// ---- Expiry ------------------------------------------------------------

TEST(CreditTable, ExpiresExactlyAtLeaseEnd) {
  CreditTable t;
  t.Apply(Grant(7, 100, 1, 1500, {A("10.0.0.1")}), 1000);
  const uint64_t end = 1000 + 3 * kEpoch;
  EXPECT_TRUE(t.Lookup(A("10.0.0.1"), end - 1));
  EXPECT_TRUE(t.Expire(end - 1).empty());
  EXPECT_FALSE(t.Lookup(A("10.0.0.1"), end));  // expired, not yet removed
  EXPECT_EQ(t.size(), 1u);
  const auto gone = t.Expire(end);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0], A("10.0.0.1"));
  EXPECT_EQ(t.size(), 0u);
}

TEST(CreditTable, RestatementKeepsTheEntryAlive) {
  CreditTable t;
  uint64_t now = 0;
  for (uint64_t epoch = 100; epoch < 200; epoch++, now += kEpoch) {
    t.Apply(Grant(7, epoch, epoch, 1500, {A("10.0.0.1")}), now);
    EXPECT_TRUE(t.Expire(now).empty());
  }
  // Then silence: gone after the lease of the last one.
  const uint64_t last = now - kEpoch;
  EXPECT_TRUE(t.Expire(last + 3 * kEpoch - 1).empty());
  EXPECT_EQ(t.Expire(last + 3 * kEpoch).size(), 1u);
}

TEST(CreditTable, ExpiryKeepsUnexpiredEntries) {
  CreditTable t;
  auto m = Grant(7, 100, 1, 1, {A("10.0.0.1")});
  m.lease = 1;
  t.Apply(m, 0);
  t.Apply(Grant(7, 100, 2, 1, {A("10.0.0.2")}), 0);  // lease 3
  EXPECT_EQ(t.NextExpiry(), kEpoch);
  EXPECT_EQ(t.Expire(kEpoch).size(), 1u);
  EXPECT_TRUE(t.Lookup(A("10.0.0.2"), kEpoch));
  EXPECT_EQ(t.NextExpiry(), 3 * kEpoch);
  t.Expire(3 * kEpoch);
  EXPECT_FALSE(t.NextExpiry());
}

TEST(CreditTable, NearU64MaxTheEntryLivesUntilTheEnd) {
  CreditTable t;
  const uint64_t now = UINT64_MAX - kEpoch;  // lease would pass UINT64_MAX
  t.Apply(Grant(7, 100, 1, 1, {A("10.0.0.1")}), now);
  const auto e = t.Lookup(A("10.0.0.1"), now);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->expires, UINT64_MAX);  // not wrapped into the past
  EXPECT_TRUE(t.Expire(UINT64_MAX - 1).empty());
  EXPECT_EQ(t.Expire(UINT64_MAX).size(), 1u);
}

TEST(CreditTable, AppliedAtU64Max) {
  CreditTable t;
  t.Apply(Grant(7, 100, 1, 1, {A("10.0.0.1")}), UINT64_MAX);
  EXPECT_FALSE(t.Lookup(A("10.0.0.1"), UINT64_MAX));
  EXPECT_EQ(t.Expire(UINT64_MAX).size(), 1u);
}

}  // namespace
