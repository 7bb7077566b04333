// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of parq_use, what a reserved flow carries against its rate:
// the share of each window it was held back by its rate (choked) and the
// share of the window's bytes at its rate it did not send (over-
// allocated); then a random schedule of events checked against a
// reference that keeps every interval.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "parq_core.h"

namespace {

constexpr uint64_t kMs = 1000000;
constexpr uint64_t kWindow = PARQ_USE_WINDOW_MS * kMs;
constexpr uint32_t kPpm = 1000000;
constexpr uint64_t k40Mbit = 5000000;  // bytes/s

parq_use Fresh(uint64_t now) {
  parq_use u{};
  parq_use_reset(&u, now);
  return u;
}

// A packet of `len` bytes that arrives at `t` and leaves at once.
void PassThrough(parq_use* u, uint64_t t, uint64_t bw, uint32_t len) {
  parq_use_wait(u, t, bw, t);
  parq_use_sent(u, t, bw, len);
}

// Reserved 40 Mbit/s, sends 10 Mbit/s, never waits: 75 % over-allocated.
TEST(ParqUse, SendingAQuarterOfTheRateLeavesThreeQuartersUnused) {
  parq_use u = Fresh(0);
  for (uint64_t t = 0; t < 3 * kWindow; t += kMs)
    PassThrough(&u, t, k40Mbit, 1250);  // 1.25 MB/s
  EXPECT_EQ(u.windows, 2u);             // the third is not over yet
  parq_use_roll(&u, 3 * kWindow, k40Mbit);
  EXPECT_EQ(u.windows, 3u);
  EXPECT_EQ(u.unused, 750000u);
  EXPECT_EQ(u.choked, 0u);
  EXPECT_EQ(parq_use_busy_total(&u, 3 * kWindow), 0u);
}

// Held back throughout and sending at its rate: choked, nothing unused.
TEST(ParqUse, HeldBackThroughoutIsChokedWithNothingUnused) {
  parq_use u = Fresh(0);
  for (uint64_t t = 0; t < 2 * kWindow; t += 250000) {  // 1250 B per 250 us
    parq_use_sent(&u, t, k40Mbit, 1250);
    parq_use_wait(&u, t, k40Mbit, t + 250000);  // the next one's NDT
  }
  parq_use_roll(&u, 2 * kWindow, k40Mbit);
  EXPECT_EQ(u.windows, 2u);
  EXPECT_EQ(u.choked, kPpm);
  EXPECT_EQ(u.unused, 0u);
  EXPECT_EQ(parq_use_busy_total(&u, 2 * kWindow), 2 * kWindow);
}

// Held back 300 ms of each window: 30 % choked, whatever the windows'
// phase against it.  The time a packet waits past its NDT (it left late)
// does not count.
TEST(ParqUse, APartialWaitIsItsShareOfTheWindow) {
  for (uint64_t phase : {uint64_t{0}, 100 * kMs, 850 * kMs}) {
    parq_use u = Fresh(0);
    for (uint64_t w = 0; w < 4; w++) {
      const uint64_t on = w * kWindow + phase;
      parq_use_wait(&u, on, k40Mbit, on + 300 * kMs);
      parq_use_sent(&u, on + 350 * kMs, k40Mbit, 1500);  // 50 ms late
      parq_use_wait(&u, on + 350 * kMs, k40Mbit, 0);     // nothing left
    }
    parq_use_roll(&u, 4 * kWindow, k40Mbit);
    EXPECT_EQ(u.windows, 4u);
    EXPECT_EQ(u.choked, 300000u) << "phase " << phase;
    EXPECT_EQ(parq_use_busy_total(&u, 4 * kWindow), 1200 * kMs);
  }
}

// Windows with no event in them count as they were.
TEST(ParqUse, WindowsWithoutAnEventCountAsTheyWere) {
  parq_use u = Fresh(0);
  PassThrough(&u, 10 * kMs, k40Mbit, 5000000);  // a whole window's bytes
  parq_use_roll(&u, kWindow + 1, k40Mbit);
  EXPECT_EQ(u.unused, 0u);
  // Idle for 5.5 windows more: all unused, none choked.
  parq_use_roll(&u, 6 * kWindow + kWindow / 2, k40Mbit);
  EXPECT_EQ(u.windows, 6u);
  EXPECT_EQ(u.unused, kPpm);
  EXPECT_EQ(u.choked, 0u);
  // Held back and sending nothing for 3 windows: choked, all unused.
  parq_use_wait(&u, 7 * kWindow, k40Mbit, 20 * kWindow);
  parq_use_roll(&u, 10 * kWindow + 5, k40Mbit);
  EXPECT_EQ(u.windows, 10u);
  EXPECT_EQ(u.choked, kPpm);
  EXPECT_EQ(u.unused, kPpm);
  EXPECT_EQ(parq_use_busy_total(&u, 10 * kWindow + 5), 3 * kWindow + 5);
}

// A new rate starts a new window: its figures are of one rate.  The count
// of windows and the time held back go on.
TEST(ParqUse, AResetStartsAWindowAndKeepsTheTotals) {
  parq_use u = Fresh(0);
  parq_use_wait(&u, 0, k40Mbit, 5 * kWindow);
  parq_use_roll(&u, kWindow + 200 * kMs, k40Mbit);
  ASSERT_EQ(u.windows, 1u);
  parq_use_reset(&u, kWindow + 200 * kMs);
  EXPECT_EQ(parq_use_busy_total(&u, kWindow + 200 * kMs), kWindow + 200 * kMs);
  parq_use_wait(&u, kWindow + 700 * kMs, k40Mbit, 0);
  parq_use_roll(&u, 2 * kWindow + 199 * kMs, k40Mbit);
  EXPECT_EQ(u.windows, 1u);  // the window began at the reset
  parq_use_roll(&u, 2 * kWindow + 200 * kMs, k40Mbit);
  EXPECT_EQ(u.windows, 2u);
  EXPECT_EQ(u.choked, 500000u);
  EXPECT_EQ(parq_use_busy_total(&u, 3 * kWindow), kWindow + 700 * kMs);
}

// More than the window's bytes (a flow catching up), or no rate: nothing
// unused.  The largest rate does not overflow.
TEST(ParqUse, EdgesOfTheUnusedShare) {
  parq_use u = Fresh(0);
  PassThrough(&u, 1, k40Mbit, 6000000);
  parq_use_roll(&u, kWindow, k40Mbit);
  EXPECT_EQ(u.unused, 0u);
  u = Fresh(0);
  PassThrough(&u, 1, 0, 1500);
  parq_use_roll(&u, kWindow, 0);
  EXPECT_EQ(u.unused, 0u);
  u = Fresh(0);
  PassThrough(&u, 1, PARQ_RATE_MAX, 1);
  parq_use_roll(&u, kWindow, PARQ_RATE_MAX);
  EXPECT_EQ(u.unused, kPpm - 1);  // one byte short of all, rounded down
}

// A clock read before the window's start (another CPU's, a little behind)
// neither closes a window nor counts negative time.
TEST(ParqUse, AnEarlierClockIsHarmless) {
  parq_use u = Fresh(5 * kMs);
  parq_use_wait(&u, 4 * kMs, k40Mbit, 5 * kMs);
  parq_use_roll(&u, 2 * kMs, k40Mbit);
  EXPECT_EQ(u.windows, 0u);
  EXPECT_EQ(parq_use_busy_total(&u, 6 * kMs), 0u);
  parq_use_wait(&u, 3 * kMs, k40Mbit, 7 * kMs);  // counts from the start
  EXPECT_EQ(parq_use_busy_total(&u, 8 * kMs), 2 * kMs);
}

// Random events against a reference that keeps every interval held back
// (each cut where the next begins) and every packet: each closed window's
// shares, and the total.
TEST(ParqUse, MatchesAReferenceOverRandomEvents) {
  std::mt19937_64 rng(20261206);
  for (int run = 0; run < 200; run++) {
    const uint64_t bw = 1 + rng() % 20000000;
    const uint64_t t0 = rng() % (3 * kWindow);
    parq_use u = Fresh(t0);
    std::vector<std::pair<uint64_t, uint64_t>> held;  // [from, to)
    std::vector<std::pair<uint64_t, uint32_t>> sent;
    uint64_t t = t0;
    uint64_t checked = 0;
    for (int i = 0; i < 400; i++) {
      t += rng() % (rng() % 8 == 0 ? 3 * kWindow : 50 * kMs);
      switch (rng() % 3) {
        case 0: {
          const uint64_t until = t - kWindow / 2 + rng() % (2 * kWindow);
          parq_use_wait(&u, t, bw, until);
          if (!held.empty())
            held.back().second = std::min(held.back().second, t);
          held.emplace_back(t, std::max(t, until));
          break;
        }
        case 1: {
          const uint32_t len = 64 + rng() % 64000;
          parq_use_sent(&u, t, bw, len);
          sent.emplace_back(t, len);
          break;
        }
        default:
          parq_use_roll(&u, t, bw);
      }
      const uint64_t windows = (t - t0) / kWindow;
      ASSERT_EQ(u.windows, windows) << "run " << run << " event " << i;
      if (windows == 0 || windows == checked)
        continue;
      checked = windows;
      // The last closed window is [b, e); a packet sent at e is the next's.
      const uint64_t e = t0 + windows * kWindow, b = e - kWindow;
      uint64_t ns = 0, bytes = 0;
      for (auto [x, y] : held)
        if (y > b && x < e)
          ns += std::min(y, e) - std::max(x, b);
      for (auto [s, len] : sent)
        if (s >= b && s < e)
          bytes += len;
      const uint64_t allow = bw * PARQ_USE_WINDOW_MS / 1000;
      const uint64_t unused =
          bytes >= allow ? 0 : (allow - bytes) * kPpm / allow;
      ASSERT_EQ(u.choked, ns * kPpm / kWindow) << "run " << run;
      ASSERT_EQ(u.unused, unused) << "run " << run;
    }
    uint64_t total = 0;
    for (auto [x, y] : held)
      total += std::min(y, t + 7) - std::min(x, t + 7);
    EXPECT_EQ(parq_use_busy_total(&u, t + 7), total) << "run " << run;
  }
}

}  // namespace
