// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of the scheduling policy (kmod/core/parq_policy.c), the rules
// sch_parq's dequeue and enqueue follow: the shaper's gate, reserved
// before the threshold rule, a local class blocked by credit, the
// watchdog's deadline, admission and the eviction order.  Then randomized
// backlogs, decision by decision, against a reference model written here.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

#include "parq_core.h"
#include "parq_policy.h"

namespace {

constexpr uint64_t kNone = UINT64_MAX;
constexpr uint8_t kBytes = PARQ_UNIT_BYTES;
constexpr uint8_t kPackets = PARQ_UNIT_PACKETS;

parq_sched Sched(uint32_t threshold, uint8_t unit) {
  parq_sched s;
  parq_sched_init(&s, threshold, unit);
  return s;
}

parq_view View(bool parallel, bool local, uint64_t resv_ndt = kNone,
               uint64_t lwait_next = kNone) {
  return parq_view{resv_ndt, lwait_next, parallel, local, false};
}

// Decides at @now and, if a class may send, sends @len bytes of it.
parq_decision Step(parq_sched& s, const parq_view& v, uint64_t now,
                   uint32_t len = 1000) {
  const parq_decision d = parq_sched_decide(&s, &v, now);
  if (d.act == PARQ_ACT_WAIT)
    parq_sched_wait(&s);
  else
    parq_sched_sent(&s, &d, now, len, 1);
  return d;
}

char Letter(const parq_decision& d) {
  switch (d.act) {
    case PARQ_ACT_NONE:
      return '-';
    case PARQ_ACT_WAIT:
      return 'w';
    case PARQ_ACT_RESV:
      return 'R';
    case PARQ_ACT_PARALLEL:
      return 'P';
    case PARQ_ACT_LOCAL:
      return 'L';
    case PARQ_ACT_CONTROL:
      return 'C';
  }
  return '?';
}

std::string Trace(parq_sched& s, const parq_view& v, int n) {
  std::string out;
  for (int i = 0; i < n; i++)
    out += Letter(Step(s, v, 0));
  return out;
}

// ------------------------------------------------------------ ordering

TEST(ParqPolicyOrder, ShaperGateHoldsEverythingBack) {
  parq_sched s = Sched(4, kPackets);
  parq_shaper_set(&s.shaper, 1000000, 0, 0, PARQ_CATCHUP_NS, 0);
  s.shaper.t_next = 5000;
  const parq_view v = View(true, true, /*resv_ndt=*/0);
  parq_decision d = parq_sched_decide(&s, &v, 4999);
  EXPECT_EQ(d.act, PARQ_ACT_WAIT);
  EXPECT_EQ(d.until, 5000u);
  d = parq_sched_decide(&s, &v, 5000);
  EXPECT_EQ(d.act, PARQ_ACT_RESV);
}

TEST(ParqPolicyOrder, DueReservedGoesBeforeBothClasses) {
  parq_sched s = Sched(4, kPackets);
  s.thresh.credit = 0;  // local's turn is due
  for (uint64_t ndt : {0ull, 99ull, 100ull}) {
    const parq_view v = View(true, true, ndt);
    EXPECT_EQ(parq_sched_decide(&s, &v, 100).act, PARQ_ACT_RESV) << ndt;
  }
  const parq_view v = View(true, true, 101);
  EXPECT_EQ(parq_sched_decide(&s, &v, 100).act, PARQ_ACT_LOCAL);
}

TEST(ParqPolicyOrder, ReservedSendDoesNotMoveTheThreshold) {
  parq_sched s = Sched(2, kPackets);
  const parq_view v = View(true, true, 0);
  for (int i = 0; i < 10; i++)
    Step(s, v, 10);
  EXPECT_EQ(s.thresh.credit, 2);
  EXPECT_EQ(s.xs.resv_dispatches, 10u);
}

TEST(ParqPolicyOrder, ThresholdTurnsInPackets) {
  parq_sched s = Sched(3, kPackets);
  EXPECT_EQ(Trace(s, View(true, true), 12), "PPPLPPPLPPPL");
  EXPECT_EQ(s.xs.threshold_turns, 3u);
  EXPECT_EQ(s.xs.parallel_only, 0u);
}

TEST(ParqPolicyOrder, StrictThresholdNeverTurns) {
  parq_sched s = Sched(PARQ_THRESHOLD_INF, kPackets);
  EXPECT_EQ(Trace(s, View(true, true), 8), "PPPPPPPP");
}

TEST(ParqPolicyOrder, OneClassAloneGoesAndIsCounted) {
  parq_sched s = Sched(3, kPackets);
  EXPECT_EQ(Trace(s, View(true, false), 3), "PPP");
  EXPECT_EQ(Trace(s, View(false, true), 2), "LL");
  EXPECT_EQ(s.xs.parallel_only, 3u);
  EXPECT_EQ(s.xs.local_only, 2u);
  EXPECT_EQ(s.xs.threshold_turns, 0u);
}

// A local class whose every destination waits for credit costs parallel no
// turn: parallel sent meanwhile does not bring local's turn closer.
TEST(ParqPolicyCredit, BlockedLocalCostsParallelNoTurn) {
  parq_sched s = Sched(3, kPackets);
  // Local may go, so the first decision names it once parallel has had
  // its three; the qdisc then finds every destination over its credit and
  // asks again without local.
  EXPECT_EQ(Trace(s, View(true, true), 3), "PPP");
  parq_view v = View(true, true, kNone, 7000);
  parq_decision d = parq_sched_decide(&s, &v, 10);
  ASSERT_EQ(d.act, PARQ_ACT_LOCAL);
  v.local = false;
  d = parq_sched_decide(&s, &v, 10);
  EXPECT_EQ(d.act, PARQ_ACT_PARALLEL);
  EXPECT_FALSE(d.other);
  const int64_t credit = s.thresh.credit;
  for (int i = 0; i < 20; i++)
    Step(s, v, 10);
  EXPECT_EQ(s.thresh.credit, credit);
  EXPECT_EQ(s.xs.parallel_only, 20u);
  // The wait is over: local's turn comes first, as it was due.
  EXPECT_EQ(Trace(s, View(true, true), 5), "LPPPL");
}

TEST(ParqPolicyCredit, OnlyWaitingLocalArmsTheWatchdogAtTheWaitsEnd) {
  parq_sched s = Sched(3, kPackets);
  const parq_view v = View(false, false, kNone, 7000);
  const parq_decision d = parq_sched_decide(&s, &v, 10);
  EXPECT_EQ(d.act, PARQ_ACT_WAIT);
  EXPECT_EQ(d.until, 7000u);
}

// ------------------------------------------------------------ watchdog

TEST(ParqPolicyWatchdog, EarliestOfReservedAndCreditWait) {
  parq_sched s = Sched(3, kPackets);
  struct {
    uint64_t ndt, lwait, until;
  } cases[] = {
      {5000, 3000, 3000},  {3000, 5000, 3000}, {5000, kNone, 5000},
      {kNone, 5000, 5000}, {101, 101, 101},
  };
  for (const auto& c : cases) {
    const parq_view v = View(false, false, c.ndt, c.lwait);
    const parq_decision d = parq_sched_decide(&s, &v, 100);
    EXPECT_EQ(d.act, PARQ_ACT_WAIT) << c.ndt << " " << c.lwait;
    EXPECT_EQ(d.until, c.until) << c.ndt << " " << c.lwait;
  }
}

TEST(ParqPolicyWatchdog, NothingQueuedIsNone) {
  parq_sched s = Sched(3, kPackets);
  const parq_view v = View(false, false);
  EXPECT_EQ(parq_sched_decide(&s, &v, 100).act, PARQ_ACT_NONE);
}

TEST(ParqPolicyWatchdog, ShaperDeadlineBeatsAnEarlierReservedOne) {
  parq_sched s = Sched(3, kPackets);
  parq_shaper_set(&s.shaper, 1000000, 0, 0, PARQ_CATCHUP_NS, 0);
  s.shaper.t_next = 9000;
  const parq_view v = View(false, false, 200, 300);
  const parq_decision d = parq_sched_decide(&s, &v, 100);
  EXPECT_EQ(d.act, PARQ_ACT_WAIT);
  EXPECT_EQ(d.until, 9000u);
}

TEST(ParqPolicyWatchdog, ThrottledAndWakeupsCountedOncePerWait) {
  parq_sched s = Sched(3, kPackets);
  const parq_view wait = View(false, false, 500);
  Step(s, wait, 100);
  Step(s, wait, 200);
  EXPECT_EQ(s.xs.throttled, 1u);
  EXPECT_EQ(s.xs.wakeups, 0u);
  Step(s, wait, 500);
  EXPECT_EQ(s.xs.wakeups, 1u);
  Step(s, View(true, false), 600);
  EXPECT_EQ(s.xs.wakeups, 1u);
}

TEST(ParqPolicyShaper, SendsAdvanceTheGateAndWakeRestartsIt) {
  parq_sched s = Sched(3, kPackets);
  parq_shaper_set(&s.shaper, 1000000000 / 8, 0, 0, PARQ_CATCHUP_NS, 1000);
  const parq_view v = View(true, false);
  Step(s, v, 1000, 1000);  // 1000 bytes at 1 Gbit/s: 8 us
  EXPECT_EQ(s.shaper.t_next, 9000u);
  EXPECT_EQ(parq_sched_decide(&s, &v, 8999).act, PARQ_ACT_WAIT);
  // Idle since: the next packet leaves when it comes.
  parq_shaper_wake(&s.shaper, 500000);
  EXPECT_EQ(parq_sched_decide(&s, &v, 500000).act, PARQ_ACT_PARALLEL);
}

TEST(ParqPolicyShaper, ResetForgetsTheTurnAndTheDepartureNotTheCounters) {
  parq_sched s = Sched(3, kPackets);
  parq_shaper_set(&s.shaper, 1000000, 0, 0, PARQ_CATCHUP_NS, 0);
  const parq_view v = View(true, true);
  Step(s, v, 0);
  Step(s, v, 0);
  parq_sched_wait(&s);
  ASSERT_NE(s.shaper.t_next, 0u);
  parq_sched_reset(&s);
  EXPECT_EQ(s.thresh.credit, 3);
  EXPECT_EQ(s.thresh.threshold, 3u);
  EXPECT_EQ(s.thresh.unit, kPackets);
  EXPECT_EQ(s.shaper.t_next, 0u);
  EXPECT_EQ(s.shaper.rate, 1000000u);
  EXPECT_FALSE(s.throttled);
  EXPECT_EQ(s.xs.throttled, 1u);
}

// ------------------------------------------------------ control queue

parq_view WithControl(parq_view v) {
  v.control = true;
  return v;
}

TEST(ParqPolicyControl, GoesBeforeReservedParallelAndLocal) {
  parq_sched s = Sched(4, kPackets);
  const parq_view v = WithControl(View(true, true, /*resv_ndt=*/0));
  EXPECT_EQ(parq_sched_decide(&s, &v, 100).act, PARQ_ACT_CONTROL);
  // Alone, it still goes; with a credit wait pending too.
  const parq_view alone = WithControl(View(false, false, kNone, 7000));
  EXPECT_EQ(parq_sched_decide(&s, &alone, 100).act, PARQ_ACT_CONTROL);
}

TEST(ParqPolicyControl, PassesTheShapersGateAndPushesItBack) {
  parq_sched s = Sched(4, kPackets);
  parq_shaper_set(&s.shaper, 1000000000 / 8, 0, 0, PARQ_CATCHUP_NS, 0);
  s.shaper.t_next = 5000;
  const parq_view v = WithControl(View(true, true, /*resv_ndt=*/0));
  const parq_decision d = Step(s, v, 1000, 1000);  // 8 us at 1 Gbit/s
  EXPECT_EQ(d.act, PARQ_ACT_CONTROL);
  EXPECT_EQ(s.shaper.t_next, 13000u);
  // The classes wait for the departure it pushed back.
  const parq_view classes = View(true, true, /*resv_ndt=*/0);
  EXPECT_EQ(parq_sched_decide(&s, &classes, 12999).act, PARQ_ACT_WAIT);
  EXPECT_EQ(parq_sched_decide(&s, &classes, 13000).act, PARQ_ACT_RESV);
}

// Control beyond the rate waits for the gate too: it passes a closed gate
// only while the gate opens within PARQ_CONTROL_AHEAD_NS, so once a flood
// of it stops the classes wait no longer than that (and one packet).
TEST(ParqPolicyControl, BeyondTheRateItWaitsForTheGateAheadOfTheClasses) {
  parq_sched s = Sched(4, kPackets);
  parq_shaper_set(&s.shaper, 1000000000 / 8, 0, 0, PARQ_CATCHUP_NS, 0);
  const parq_view flood = WithControl(View(true, true, /*resv_ndt=*/0));
  const uint64_t now = 1000;
  int sent = 0;
  parq_decision d{};
  while (sent < 1000 && (d = Step(s, flood, now, 1000)).act == PARQ_ACT_CONTROL)
    sent++;  // 8 us each at 1 Gbit/s
  EXPECT_EQ(sent, 251);
  EXPECT_EQ(d.act, PARQ_ACT_WAIT);
  // Control's own gate comes PARQ_CONTROL_AHEAD_NS before the classes'.
  EXPECT_EQ(d.until, s.shaper.t_next - PARQ_CONTROL_AHEAD_NS);
  EXPECT_LE(s.shaper.t_next - now, PARQ_CONTROL_AHEAD_NS + 8000);
  // The flood stops: the classes wait for that departure, no longer.
  const parq_view classes = View(true, true, /*resv_ndt=*/0);
  EXPECT_EQ(parq_sched_decide(&s, &classes, s.shaper.t_next - 1).act,
            PARQ_ACT_WAIT);
  EXPECT_EQ(parq_sched_decide(&s, &classes, s.shaper.t_next).act,
            PARQ_ACT_RESV);
  // Control goes again once the gate is within reach.
  EXPECT_EQ(
      parq_sched_decide(&s, &flood, s.shaper.t_next - PARQ_CONTROL_AHEAD_NS)
          .act,
      PARQ_ACT_CONTROL);
}

// A control packet sent while the classes wait for the gate is not their
// wake-up: that is counted when one of them goes.
TEST(ParqPolicyControl, NotTheClassesWakeUp) {
  parq_sched s = Sched(4, kPackets);
  parq_shaper_set(&s.shaper, 1000000000 / 8, 0, 0, PARQ_CATCHUP_NS, 0);
  s.shaper.t_next = 100000;
  const parq_view classes = View(true, true);
  const parq_decision w = parq_sched_decide(&s, &classes, 0);
  ASSERT_EQ(w.act, PARQ_ACT_WAIT);
  parq_sched_wait(&s);
  EXPECT_EQ(s.xs.throttled, 1u);
  EXPECT_EQ(Step(s, WithControl(classes), 50000, 1000).act, PARQ_ACT_CONTROL);
  EXPECT_EQ(s.xs.wakeups, 0u);
  EXPECT_EQ(Step(s, classes, s.shaper.t_next, 1000).act, PARQ_ACT_PARALLEL);
  EXPECT_EQ(s.xs.wakeups, 1u);
}

TEST(ParqPolicyControl, CountedAndNoTurnOfTheThresholdRule) {
  parq_sched s = Sched(2, kPackets);
  const parq_view v = WithControl(View(true, true));
  for (int i = 0; i < 5; i++)
    EXPECT_EQ(Step(s, v, 0).act, PARQ_ACT_CONTROL);
  EXPECT_EQ(s.xs.control_sent, 5u);
  EXPECT_EQ(s.xs.parallel_only + s.xs.local_only + s.xs.threshold_turns, 0u);
  // The threshold rule's turn is where it was: two parallel, one local.
  EXPECT_EQ(Trace(s, View(true, true), 6), "PPLPPL");
}

TEST(ParqPolicyControl, AdmittedOutsideTheLimitUpToItsOwn) {
  parq_sched s = Sched(3, kPackets);
  parq_fill f{};
  f.control = true;
  f.qlen = 100;  // a full qdisc does not matter
  f.limit = 100;
  f.flow_limit = 1;
  f.flow_qlen = PARQ_CONTROL_LIMIT - 1;
  EXPECT_EQ(parq_sched_admit(&s, &f), PARQ_ADMIT_QUEUE);
  f.flow_qlen = PARQ_CONTROL_LIMIT;
  EXPECT_EQ(parq_sched_admit(&s, &f), PARQ_ADMIT_DROP_CONTROL);
  EXPECT_EQ(s.xs.drop_control, 1u);
  EXPECT_EQ(s.xs.drop_flow_limit + s.xs.drop_local_full +
                s.xs.drop_parallel_full + s.xs.drop_local_evicted,
            0u);
}

// ---------------------------------------------------- burst allowance

// 1 Gbit/s: 1 000 bytes take 8 us; a burst of 4 000 bytes is 32 us.
parq_sched BurstSched(uint32_t burst) {
  parq_sched s = Sched(4, kPackets);
  parq_shaper_set(&s.shaper, 1000000000 / 8, 0, burst, PARQ_CATCHUP_NS, 0);
  return s;
}

parq_decision Decide(const parq_sched& s, const parq_view& v, uint64_t now) {
  return parq_sched_decide(&s, &v, now);
}

// Packets of 1 000 bytes that go at @now before the gate closes.
int SentAt(parq_sched& s, const parq_view& v, uint64_t now) {
  int n = 0;
  while (n < 1000 && Step(s, v, now).act != PARQ_ACT_WAIT)
    n++;
  return n;
}

TEST(ParqPolicyBurst, ParallelAloneLeavesAtOnceUpToTheAllowance) {
  parq_sched s = BurstSched(4000);
  // Four packets of the allowance and the one that finds the gate open.
  EXPECT_EQ(SentAt(s, View(true, false), 0), 5);
  const parq_decision d = Decide(s, View(true, false), 0);
  ASSERT_EQ(d.act, PARQ_ACT_WAIT);
  // Then at the rate: the next one packet's time later.
  EXPECT_EQ(d.until, 8000u);
  EXPECT_EQ(SentAt(s, View(true, false), 8000), 1);
  // Reserved traffic too; and local that waits for credit is idle.
  parq_sched r = BurstSched(4000);
  EXPECT_EQ(SentAt(r, View(false, false, /*resv_ndt=*/0), 0), 5);
  parq_sched c = BurstSched(4000);
  EXPECT_EQ(SentAt(c, View(true, false, kNone, /*lwait_next=*/90000), 0), 5);
}

TEST(ParqPolicyBurst, NoAllowanceWhileLocalMayGo) {
  parq_sched s = BurstSched(4000);
  EXPECT_EQ(SentAt(s, View(true, true), 0), 1);
  EXPECT_EQ(Decide(s, View(true, true), 0).until, 8000u);
  parq_sched l = BurstSched(4000);
  EXPECT_EQ(SentAt(l, View(false, true), 0), 1);
  // Local arrives after a parallel burst: it waits for the schedule, the
  // whole burst's time, and so does parallel.
  parq_sched b = BurstSched(4000);
  ASSERT_EQ(SentAt(b, View(true, false), 0), 5);
  EXPECT_EQ(Decide(b, View(true, true), 0).until, 40000u);
  EXPECT_EQ(SentAt(b, View(true, true), 39999), 0);
  EXPECT_EQ(SentAt(b, View(true, true), 40000), 1);
}

// A local packet that arrives behind a parallel burst waits for it to be
// paid, once: the allowance is gone when the local packet leaves, until
// the qdisc is idle again, so the parallel classes cannot burst again
// after every local packet.
TEST(ParqPolicyBurst, LocalPaysForABurstOnceAndItComesBackOnlyWhenIdle) {
  parq_sched s = BurstSched(4000);
  ASSERT_EQ(SentAt(s, View(true, false), 0), 5);
  EXPECT_EQ(Decide(s, View(true, true), 0).until, 40000u);
  EXPECT_EQ(Step(s, View(false, true), 40000).act, PARQ_ACT_LOCAL);
  // Parallel alone again: paced, no second burst.
  EXPECT_EQ(SentAt(s, View(true, false), 48000), 1);
  EXPECT_EQ(Decide(s, View(true, false), 48000).until, 56000u);
  // The qdisc empties and an idle spell later the allowance is back.
  parq_shaper_wake(&s.shaper, 1000000);
  EXPECT_EQ(SentAt(s, View(true, false), 1000000), 5);
}

// Control passes the gate as the parallel classes see it with what is
// left of the allowance, not the schedule a queued local packet waits for.
TEST(ParqPolicyBurst, ControlUsesWhatIsLeftOfTheAllowance) {
  parq_sched s = Sched(4, kPackets);
  // 1 MB/s: 1 000 bytes take 1 ms; the allowance is 4 ms.
  parq_shaper_set(&s.shaper, 1000000, 0, 4000, PARQ_CATCHUP_NS, 0);
  ASSERT_EQ(SentAt(s, View(true, false), 0), 5);
  EXPECT_EQ(Decide(s, WithControl(View(true, true)), 0).act, PARQ_ACT_CONTROL);
  EXPECT_EQ(Decide(s, View(true, true), 0).until, 5000000u);
}

// Control that cannot pass yet waits for its own gate, not for the
// schedule a queued local packet waits for.
TEST(ParqPolicyBurst, ControlWaitsForItsOwnGate) {
  parq_sched s = Sched(4, kPackets);
  parq_shaper_set(&s.shaper, 1000000, 0, 4000, PARQ_CATCHUP_NS, 0);
  s.shaper.t_next = 10000000;  // 10 ms; with the allowance, 6 ms
  const parq_decision d = Decide(s, WithControl(View(true, true)), 0);
  ASSERT_EQ(d.act, PARQ_ACT_WAIT);
  EXPECT_EQ(d.until, 6000000 - PARQ_CONTROL_AHEAD_NS);
  EXPECT_EQ(Decide(s, View(true, true), 0).until, 10000000u);
}

TEST(ParqPolicyBurst, ZeroIsTheScheduleItself) {
  parq_sched s = BurstSched(0);
  EXPECT_EQ(SentAt(s, View(true, false), 0), 1);
  EXPECT_EQ(Decide(s, View(true, false), 0).until, 8000u);
}

// Both classes backlogged for 100 ms: the rate holds to within the
// allowance and one packet, and local keeps its turn of the threshold
// rule (threshold 4: one packet in five) as without an allowance.
TEST(ParqPolicyBurst, BacklogKeepsTheRateAndTheThresholdRule) {
  for (const uint32_t burst : {0u, 4000u, 64000u}) {
    parq_sched s = BurstSched(burst);
    uint64_t now = 0;
    uint64_t sent[PARQ_ACT_CONTROL + 1] = {};
    while (now < 100000000) {
      const parq_decision d = Step(s, View(true, true), now);
      if (d.act == PARQ_ACT_WAIT)
        now = d.until;
      else
        sent[d.act]++;
    }
    const uint64_t total = sent[PARQ_ACT_PARALLEL] + sent[PARQ_ACT_LOCAL];
    EXPECT_EQ(total, 100000000 / 8000) << burst;
    EXPECT_EQ(sent[PARQ_ACT_LOCAL], total / 5) << burst;
  }
}

// Parallel for 100 ms, busy one ms in two, each busy ms ending with a
// local departure (which spends the allowance): each busy ms starts with
// the whole allowance again (the idle ms gave it back), and the bytes
// never exceed the rate's since the start plus the allowance and one
// packet.
TEST(ParqPolicyBurst, AloneTheRateHoldsToWithinTheAllowance) {
  parq_sched s = BurstSched(4000);
  uint64_t bytes = 0;
  int bursts = 0;
  for (uint64_t now = 0; now < 100000000; now += 3000) {
    if ((now / 1000000) % 2)
      continue;  // idle
    const bool start = now % 1000000 < 3000;
    if (start)
      parq_shaper_wake(&s.shaper, now);
    const int n = SentAt(s, View(true, false), now);
    if (start && n == 5)
      bursts++;
    bytes += uint64_t{1000} * static_cast<uint64_t>(n);
    ASSERT_LE(bytes, now / 8 + 4000 + 1000) << now;
    if (now % 1000000 >= 1000000 - 3000)
      parq_shaper_spend(&s.shaper);  // a local packet left
  }
  EXPECT_EQ(bursts, 50);
  EXPECT_GE(bytes, 50 * (1000000 / 8));
}

// ------------------------------------------------- admission, eviction

parq_fill Fill(uint32_t qlen, uint32_t flow_qlen, uint32_t local_qlen,
               bool local) {
  return parq_fill{qlen, 100, flow_qlen, 10, local_qlen, local, false};
}

TEST(ParqPolicyAdmit, Rules) {
  parq_sched s = Sched(3, kPackets);
  struct {
    parq_fill f;
    parq_admit want;
  } cases[] = {
      {Fill(0, 0, 0, false), PARQ_ADMIT_QUEUE},
      {Fill(99, 9, 50, true), PARQ_ADMIT_QUEUE},
      {Fill(5, 10, 0, false), PARQ_ADMIT_DROP_FLOW_LIMIT},
      {Fill(100, 10, 50, false), PARQ_ADMIT_DROP_FLOW_LIMIT},
      {Fill(100, 0, 50, true), PARQ_ADMIT_DROP_LOCAL_FULL},
      {Fill(100, 0, 0, true), PARQ_ADMIT_DROP_LOCAL_FULL},
      {Fill(100, 0, 0, false), PARQ_ADMIT_DROP_FULL},
      {Fill(100, 0, 1, false), PARQ_ADMIT_EVICT},
      {Fill(150, 3, 1, false), PARQ_ADMIT_EVICT},
  };
  for (const auto& c : cases)
    EXPECT_EQ(parq_sched_admit(&s, &c.f), c.want)
        << c.f.qlen << " " << c.f.flow_qlen << " " << c.f.local_qlen << " "
        << c.f.local;
  EXPECT_EQ(s.xs.drop_flow_limit, 2u);
  EXPECT_EQ(s.xs.drop_local_full, 2u);
  EXPECT_EQ(s.xs.drop_parallel_full, 1u);
  EXPECT_EQ(s.xs.drop_local_evicted, 2u);
}

TEST(ParqPolicyEvict, LocalThenParallelThenReserved) {
  parq_sched s = Sched(3, kPackets);
  EXPECT_EQ(parq_sched_evict(&s, 5, 5), PARQ_ACT_LOCAL);
  EXPECT_EQ(parq_sched_evict(&s, 1, 0), PARQ_ACT_LOCAL);
  EXPECT_EQ(parq_sched_evict(&s, 0, 5), PARQ_ACT_PARALLEL);
  EXPECT_EQ(parq_sched_evict(&s, 0, 0), PARQ_ACT_RESV);
  EXPECT_EQ(s.xs.drop_local_full, 2u);
  EXPECT_EQ(s.xs.drop_parallel_full, 2u);
}

// ------------------------------------------------------- randomized

// The rules restated from their description, with totals in place of the
// core's running credit: parallel may go while local also may iff the
// parallel units sent while local waited are fewer than @threshold times
// (1 + the local units sent on a turn or while a turn was pending).
struct Reference {
  uint32_t threshold;
  bool packets;
  uint64_t contended = 0;  // parallel units sent while local could go
  uint64_t turned = 0;     // local units that refilled the threshold
  uint64_t sent[5] = {};
  uint64_t parallel_only = 0;
  uint64_t threshold_turns = 0;

  uint64_t Units(uint32_t len) const { return packets ? 1 : len; }
  bool Strict() const { return threshold >= PARQ_THRESHOLD_INF; }
  bool ParallelMayGo() const {
    return Strict() ||
           static_cast<int64_t>(contended) <
               static_cast<int64_t>(threshold) * (1 + (int64_t)turned);
  }

  parq_act Decide(const parq_view& v, uint64_t now, uint64_t gate,
                  uint64_t* until) const {
    if (now < gate) {
      *until = gate;
      return PARQ_ACT_WAIT;
    }
    if (v.resv_ndt <= now)
      return PARQ_ACT_RESV;
    if (v.parallel && v.local)
      return ParallelMayGo() ? PARQ_ACT_PARALLEL : PARQ_ACT_LOCAL;
    if (v.parallel)
      return PARQ_ACT_PARALLEL;
    if (v.local)
      return PARQ_ACT_LOCAL;
    *until = std::min(v.resv_ndt, v.lwait_next);
    return *until == kNone ? PARQ_ACT_NONE : PARQ_ACT_WAIT;
  }

  void Sent(parq_act a, const parq_view& v, uint32_t len) {
    sent[a]++;
    if (a == PARQ_ACT_PARALLEL && !v.local)
      parallel_only++;
    if (a == PARQ_ACT_LOCAL && v.parallel)
      threshold_turns++;
    if (Strict())
      return;
    if (a == PARQ_ACT_PARALLEL && v.local)
      contended += Units(len);
    if (a == PARQ_ACT_LOCAL && (v.parallel || !ParallelMayGo()))
      turned += Units(len);
  }
};

class ParqPolicyRandom : public ::testing::TestWithParam<int> {};

TEST_P(ParqPolicyRandom, MatchesTheReference) {
  const int seed = GetParam();
  std::mt19937_64 rng(seed);
  const uint32_t thresholds[] = {1, 3, 16, 1500, PARQ_THRESHOLD_INF};
  const uint32_t threshold = thresholds[seed % 5];
  const uint8_t unit = seed % 2 ? kBytes : kPackets;
  parq_sched s = Sched(threshold, unit);
  Reference ref{threshold, unit == kPackets};
  const bool shaped = seed % 3 == 0;
  // Half of the shaped seeds with a burst allowance: 20 us at 1 Gbit/s.
  const uint32_t burst = seed % 2 ? 2500 : 0;
  const uint64_t burst_ns = uint64_t{burst} * 8;
  if (shaped)
    parq_shaper_set(&s.shaper, 125000000, 0, burst, PARQ_CATCHUP_NS, 0);

  uint64_t now = 1000000;
  // What is left of the allowance: whole after an idle spell, gone once a
  // local packet has left.
  uint64_t allow_ns = burst_ns;
  for (int i = 0; i < 20000; i++) {
    now += rng() % 20000;
    if (rng() % 50 == 0) {  // the qdisc was empty
      if (s.shaper.t_next < now)
        allow_ns = burst_ns;
      parq_shaper_wake(&s.shaper, now);
    }
    parq_view v{};
    v.parallel = rng() % 4 != 0;
    v.local = rng() % 3 != 0;
    const uint64_t r = rng() % 8;
    v.resv_ndt = r < 5    ? kNone
                 : r == 5 ? now - rng() % 1000
                          : now + 1 + rng() % 5000;
    v.lwait_next = rng() % 3 ? kNone : now + 1 + rng() % 5000;
    const uint32_t len = 64 + rng() % 9000;

    // The burst allowance opens the gate early while no local may go.
    uint64_t gate = parq_shaper_on(&s.shaper) ? s.shaper.t_next : 0;
    if (!v.local)
      gate = gate > allow_ns ? gate - allow_ns : 0;
    uint64_t until = 0;
    const parq_act want = ref.Decide(v, now, gate, &until);
    const parq_decision d = parq_sched_decide(&s, &v, now);
    ASSERT_EQ(d.act, want) << "step " << i;
    if (want == PARQ_ACT_WAIT) {
      ASSERT_EQ(d.until, until) << "step " << i;
      parq_sched_wait(&s);
      continue;
    }
    if (want == PARQ_ACT_NONE)
      continue;
    const bool other = want == PARQ_ACT_PARALLEL ? v.local : v.parallel;
    if (want != PARQ_ACT_RESV) {
      ASSERT_EQ(d.other, other) << "step " << i;
    }
    parq_sched_sent(&s, &d, now, len, 1);
    ref.Sent(want, v, len);
    if (want == PARQ_ACT_LOCAL)
      allow_ns = 0;
  }
  EXPECT_EQ(s.xs.resv_dispatches, ref.sent[PARQ_ACT_RESV]);
  EXPECT_EQ(s.xs.parallel_only, ref.parallel_only);
  EXPECT_EQ(s.xs.threshold_turns, ref.threshold_turns);
  EXPECT_EQ(s.xs.threshold_turns + s.xs.local_only, ref.sent[PARQ_ACT_LOCAL]);
  // Every kind of decision was taken, or the test proved little.
  for (parq_act a : {PARQ_ACT_RESV, PARQ_ACT_PARALLEL, PARQ_ACT_LOCAL})
    EXPECT_GT(ref.sent[a], 100u) << a;
  if (!ref.Strict()) {
    EXPECT_GT(s.xs.threshold_turns, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, ParqPolicyRandom, ::testing::Range(0, 30));

// ------------------------------------------------------------ sojourn

// Bucket b holds [2^(b+10), 2^(b+11)) ns, bucket 0 everything below 2048 ns
// and the last everything from 2^25 ns (linux/parq.h).
TEST(ParqPolicySojourn, BucketBoundsArePowersOfTwo) {
  EXPECT_EQ(parq_sojourn_bucket(0), 0u);
  EXPECT_EQ(parq_sojourn_bucket(1), 0u);
  EXPECT_EQ(parq_sojourn_bucket(2047), 0u);
  for (unsigned b = 1; b < PARQ_SOJOURN_BUCKETS; b++) {
    const uint64_t low = uint64_t{1} << (b + PARQ_SOJOURN_SHIFT);
    EXPECT_EQ(parq_sojourn_bucket(low - 1), b - 1) << b;
    EXPECT_EQ(parq_sojourn_bucket(low), b) << b;
  }
  EXPECT_EQ(parq_sojourn_bucket(uint64_t{1} << 40), PARQ_SOJOURN_BUCKETS - 1);
  EXPECT_EQ(parq_sojourn_bucket(UINT64_MAX), PARQ_SOJOURN_BUCKETS - 1);
}

TEST(ParqPolicySojourn, CountedForTheClassThatSent) {
  parq_sched s = Sched(4, kPackets);
  const parq_decision par{PARQ_ACT_PARALLEL, false, 0};
  const parq_decision loc{PARQ_ACT_LOCAL, true, 0};
  const parq_decision resv{PARQ_ACT_RESV, false, 0};
  const parq_decision wait{PARQ_ACT_WAIT, false, 5};
  parq_sched_sojourn(&s, &par, 3000);     // [2048, 4096): bucket 1
  parq_sched_sojourn(&s, &par, 100);      // bucket 0
  parq_sched_sojourn(&s, &loc, 5000000);  // [4.19 ms, 8.39 ms): bucket 12
  parq_sched_sojourn(&s, &resv, 7000);    // reserved: not these classes'
  parq_sched_sojourn(&s, &wait, 7000);    // nothing sent
  EXPECT_EQ(s.xs.parallel_sojourn_sum, 3100u);
  EXPECT_EQ(s.xs.local_sojourn_sum, 5000000u);
  for (unsigned b = 0; b < PARQ_SOJOURN_BUCKETS; b++) {
    EXPECT_EQ(s.xs.parallel_sojourn[b], b <= 1 ? 1u : 0u) << b;
    EXPECT_EQ(s.xs.local_sojourn[b], b == 12 ? 1u : 0u) << b;
  }
  EXPECT_TRUE(parq_sojourn_counted(&par));
  EXPECT_TRUE(parq_sojourn_counted(&loc));
  EXPECT_FALSE(parq_sojourn_counted(&resv));
  EXPECT_FALSE(parq_sojourn_counted(&wait));
  // A reset keeps the counters, as it keeps the others.
  parq_sched_reset(&s);
  EXPECT_EQ(s.xs.parallel_sojourn_sum, 3100u);
}

}  // namespace
