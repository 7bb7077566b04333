// SPDX-License-Identifier: GPL-2.0
// Receiver-side credits (parq_credit_*): epoch arithmetic, the packed usage
// word, debts carried across epochs, saturation.  The same parq_core.c as the
// module.
#include <gtest/gtest.h>

#include <cstdint>

#include "parq_core.h"

namespace {

constexpr uint64_t kMs = 1000000;

parq_credit_cfg Cfg(uint32_t credit, uint64_t epoch = kMs,
                    uint64_t start = 1000) {
  parq_credit_cfg c{};
  c.start = start;
  c.epoch = epoch;
  c.credit = credit;
  return c;
}

// Charges packets of @len at @now until one is refused; returns how many.
int Fill(const parq_credit_cfg& c, uint64_t* state, uint64_t now,
         uint32_t len) {
  int n = 0;
  uint64_t next;
  while (parq_credit_take(&c, *state, now, len, &next)) {
    *state = next;
    if (++n > 1000000)
      break;
  }
  return n;
}

TEST(ParqCreditEpoch, CountsFromStart) {
  const parq_credit_cfg c = Cfg(1500);
  EXPECT_EQ(parq_credit_epoch(&c, 0), 0u);  // before start
  EXPECT_EQ(parq_credit_epoch(&c, 1000), 0u);
  EXPECT_EQ(parq_credit_epoch(&c, 1000 + kMs - 1), 0u);
  EXPECT_EQ(parq_credit_epoch(&c, 1000 + kMs), 1u);
  EXPECT_EQ(parq_credit_epoch(&c, 1000 + 7 * kMs + 3), 7u);
}

TEST(ParqCreditEpoch, NextIsTheFollowingBoundary) {
  const parq_credit_cfg c = Cfg(1500);
  EXPECT_EQ(parq_credit_next(&c, 0), 1000u);  // before start: start
  EXPECT_EQ(parq_credit_next(&c, 1000), 1000 + kMs);
  EXPECT_EQ(parq_credit_next(&c, 1000 + kMs - 1), 1000 + kMs);
  EXPECT_EQ(parq_credit_next(&c, 1000 + kMs), 1000 + 2 * kMs);
}

TEST(ParqCreditEpoch, NextSaturatesAtTheEndOfTime) {
  const parq_credit_cfg c = Cfg(1500, PARQ_EPOCH_MAX, 0);
  EXPECT_EQ(parq_credit_next(&c, UINT64_MAX - 5), UINT64_MAX);
  EXPECT_EQ(parq_credit_next(&c, UINT64_MAX), UINT64_MAX);
}

// The epoch number is kept mod 2^32: with the shortest epoch that is about
// 12 hours of epochs, after which the numbers wrap.  (A debt left by a
// destination silent for exactly 2^32 epochs would count again: it delays
// that destination by at most one packet's worth of epochs.)
TEST(ParqCreditEpoch, NumberWrapsModulo32Bits) {
  const parq_credit_cfg c = Cfg(1500, PARQ_EPOCH_MIN, 0);
  const uint64_t t = (uint64_t{1} << 32) * PARQ_EPOCH_MIN;
  EXPECT_EQ(parq_credit_epoch(&c, t - 1), UINT32_MAX);
  EXPECT_EQ(parq_credit_epoch(&c, t), 0u);
}

TEST(ParqCreditTake, CreditPerEpochExactly) {
  const parq_credit_cfg c = Cfg(3000);
  uint64_t state = 0;
  EXPECT_EQ(Fill(c, &state, 1000, 1000), 3);
  EXPECT_EQ(parq_credit_used(&c, state, 1000), 3000u);
  // The same epoch, later: still nothing.
  EXPECT_EQ(Fill(c, &state, 1000 + kMs - 1, 1), 0);
  // The next epoch starts from zero.
  EXPECT_EQ(parq_credit_used(&c, state, 1000 + kMs), 0u);
  EXPECT_EQ(Fill(c, &state, 1000 + kMs, 1500), 2);
}

// A packet goes while the epoch's usage is below the credit, whatever its
// size; the excess is a debt the next epoch starts with.
TEST(ParqCreditTake, OvershootIsCarriedIntoTheNextEpoch) {
  const parq_credit_cfg c = Cfg(2500);
  uint64_t state = 0, next = 0;
  ASSERT_TRUE(parq_credit_take(&c, state, 1000, 1500, &next));
  state = next;
  ASSERT_TRUE(parq_credit_take(&c, state, 1000, 1001, &next));
  state = next;
  EXPECT_EQ(parq_credit_used(&c, state, 1000), 2501u);
  EXPECT_FALSE(parq_credit_take(&c, state, 1000, 1, &next));
  // The next epoch pays off 2500 of it: 1 byte is left used.
  EXPECT_EQ(parq_credit_used(&c, state, 1000 + kMs), 1u);
  EXPECT_EQ(Fill(c, &state, 1000 + kMs, 1250), 2);
  EXPECT_EQ(parq_credit_used(&c, state, 1000 + kMs), 2501u);
}

TEST(ParqCreditTake, ZeroStops) {
  const parq_credit_cfg c = Cfg(0);
  uint64_t next;
  for (uint32_t len : {1u, 64u, 1500u})
    EXPECT_FALSE(parq_credit_take(&c, 0, 1000, len, &next)) << len;
  EXPECT_FALSE(parq_credit_take(&c, 0, 1000 + 50 * kMs, 1, &next));
}

// Packets far larger than the credit (64 KB GSO packets against 3000 bytes
// per epoch): one goes, then the destination waits until the debt is paid,
// so the rate over many epochs is the credit's, plus one packet.
TEST(ParqCreditTake, LargePacketsWaitUntilTheirDebtIsPaid) {
  const parq_credit_cfg c = Cfg(3000);
  const uint32_t gso = 65536;
  uint64_t state = 0;
  EXPECT_EQ(Fill(c, &state, 1000, gso), 1);
  for (uint64_t e = 1; e <= 21; e++) {
    const int sent = Fill(c, &state, 1000 + e * kMs, gso);
    // 65536 - 21 * 3000 = 2536 < 3000: the 21st epoch sends again.
    EXPECT_EQ(sent, e == 21 ? 1 : 0) << "epoch " << e;
  }
  state = 0;
  uint64_t bytes = 0;
  const uint64_t epochs = 1000;
  for (uint64_t e = 0; e < epochs; e++)
    bytes += uint64_t{gso} * Fill(c, &state, 1000 + e * kMs, gso);
  EXPECT_LE(bytes, epochs * 3000 + gso);
  EXPECT_GE(bytes, (epochs - 21) * 3000);
}

// A credit below one packet still lets packets go now and then (nothing
// stuck), at the credit's rate on average.
TEST(ParqCreditTake, CreditBelowOnePacketStillMovesPackets) {
  const parq_credit_cfg c = Cfg(100);
  uint64_t state = 0;
  EXPECT_EQ(Fill(c, &state, 1000, 1500), 1);
  EXPECT_EQ(parq_credit_used(&c, state, 1000), 1500u);
  EXPECT_EQ(Fill(c, &state, 1000, 1), 0);                // over: nothing more
  EXPECT_EQ(Fill(c, &state, 1000 + 14 * kMs, 1500), 0);  // 100 left
  EXPECT_EQ(Fill(c, &state, 1000 + 15 * kMs, 1500), 1);
  const parq_credit_cfg one = Cfg(1);
  state = 0;
  EXPECT_EQ(Fill(one, &state, 1000, UINT32_MAX), 1);
  EXPECT_EQ(parq_credit_used(&one, state, 1000), UINT32_MAX);
}

// The epoch numbers wrap mod 2^32; the epochs between a charge and now are
// counted across the wrap.
TEST(ParqCreditTake, DebtIsPaidAcrossTheWrapOfTheEpochNumber) {
  const parq_credit_cfg c = Cfg(1000, PARQ_EPOCH_MIN, 0);
  const uint64_t wrap = (uint64_t{1} << 32) * PARQ_EPOCH_MIN;
  uint64_t state = 0;
  ASSERT_EQ(Fill(c, &state, wrap - PARQ_EPOCH_MIN, 5000), 1);
  EXPECT_EQ(parq_credit_used(&c, state, wrap), 4000u);
  EXPECT_EQ(parq_credit_used(&c, state, wrap + 2 * uint64_t{PARQ_EPOCH_MIN}),
            2000u);
}

// A usage word left from an epoch long gone (the wrap of the number
// aside) counts nothing.
TEST(ParqCreditTake, StaleWordIsIgnored) {
  const parq_credit_cfg c = Cfg(1500);
  uint64_t state = 0;
  ASSERT_EQ(Fill(c, &state, 1000 + 3 * kMs, 1500), 1);
  EXPECT_EQ(Fill(c, &state, 1000 + 9 * kMs, 1500), 1);
  EXPECT_EQ(state >> 32, 9u);
}

TEST(ParqCreditTake, MaximumCreditDoesNotOverflow) {
  const parq_credit_cfg c = Cfg(PARQ_CREDIT_MAX);
  uint64_t state = 0, next = 0;
  ASSERT_TRUE(parq_credit_take(&c, state, 1000, UINT32_MAX - 10, &next));
  state = next;
  EXPECT_TRUE(parq_credit_take(&c, state, 1000, 10, &next));
  EXPECT_EQ(parq_credit_used(&c, next, 1000), UINT32_MAX);
  state = next;
  EXPECT_FALSE(parq_credit_take(&c, state, 1000, 1, &next));
  EXPECT_FALSE(parq_credit_take(&c, state, 1000, UINT32_MAX, &next));
}

TEST(ParqCreditExpiry, Saturates) {
  EXPECT_EQ(parq_credit_expiry(1000, 3 * kMs), 1000 + 3 * kMs);
  EXPECT_EQ(parq_credit_expiry(UINT64_MAX - 10, PARQ_LEASE_MAX), UINT64_MAX);
  EXPECT_EQ(parq_credit_expiry(UINT64_MAX, 1), UINT64_MAX);
  EXPECT_EQ(parq_credit_expiry(0, PARQ_LEASE_MAX), PARQ_LEASE_MAX);
}

}  // namespace
