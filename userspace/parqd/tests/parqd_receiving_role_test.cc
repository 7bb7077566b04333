// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of receiving_role.cc: the receiving role's decisions from what a
// fake receive monitor reports, and the messages it sends (decoded again
// with the protocol library).

#include "credit/receiving_role.h"

#include <gtest/gtest.h>

#include <deque>

#include "fake_kernel.h"
#include "prom_check.h"
#include "proto/wire.h"
#include "test_util.h"

namespace {

using namespace parq::parqd;
using parq::parqd::test::A;
using parq::parqd::test::FakeMonitor;
using parq::parqd::test::PromDocumented;
using parq::parqd::test::PromFamilies;
using parq::parqd::test::PromWellFormed;
using parq::parqd::test::TestKey;
using parq::parqd::test::TestKeys;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kHold = 10 * kMs;
constexpr uint32_t kMinBytes = 1500;
constexpr uint64_t kEpochUs = 1000;
constexpr uint64_t kRealtime = 1'700'000'000'000'000'000ULL;
constexpr uint16_t kPort = 7207;

struct Sent {
  Address to;
  uint16_t port;
  wire::Message m;
};

// A SendFn from what sends one datagram.
ReceivingRole::SendFn EachOf(std::function<bool(const Outgoing&)> one) {
  return [one = std::move(one)](std::span<const Outgoing> batch) {
    std::vector<bool> ok;
    for (const Outgoing& o : batch)
      ok.push_back(one(o));
    return ok;
  };
}

PeerSample Source(const char* addr, std::optional<uint64_t> par_age,
                  std::optional<uint64_t> loc_age, uint64_t loc_bytes = 0) {
  PeerSample s;
  s.address = A(addr);
  s.par_age_ns = par_age;
  s.par_packets = par_age ? 1 : 0;
  s.loc_age_ns = loc_age;
  s.loc_bytes = loc_bytes;
  return s;
}

// P (peer 2, 10.0.0.2) sends parallel traffic, L (peer 3, 10.0.0.3) local
// traffic, to this host R (node 1, 10.0.0.1).
class RoleTest : public ::testing::Test {
 protected:
  RoleTest()
      : role_(
            Config(), TestKeys(), mon_,
            [this](std::span<const Outgoing> batch) {
              ++batches_;
              std::vector<bool> ok;
              for (const Outgoing& o : batch) {
                ok.push_back(!fail_send_);
                if (fail_send_)
                  continue;
                auto m = wire::Decode(o.bytes, TestKey(), o.to);
                EXPECT_TRUE(m.ok());
                if (m.ok())
                  sent_.push_back({o.to, o.port, m.value()});
              }
              return ok;
            },
            kRealtime) {}

  static ReceivingRoleConfig Config() {
    ReceivingRoleConfig c;
    c.node_id = 1;
    c.policy = {3000, kHold, kEpochUs, 3};
    c.own_addresses = {A("10.0.0.1")};
    c.peers = {{2, {A("10.0.0.2")}}, {3, {A("10.0.0.3"), A("10.0.1.3")}}};
    c.peer_port = kPort;
    c.parallel_min_bytes = kMinBytes;
    return c;
  }

  // The types sent since the last call, by peer.
  std::vector<std::pair<uint64_t, wire::Type>> Take() {
    std::vector<std::pair<uint64_t, wire::Type>> out;
    for (const Sent& s : sent_)
      out.push_back({s.to == A("10.0.0.2") ? 2u : 3u, s.m.type});
    sent_.clear();
    return out;
  }

  FakeMonitor mon_;
  std::vector<Sent> sent_;
  bool fail_send_ = false;
  int batches_ = 0;  // calls of the SendFn
  ReceivingRole role_;
};

using Types = std::vector<std::pair<uint64_t, wire::Type>>;
constexpr auto kG = wire::Type::kGrant;
constexpr auto kR = wire::Type::kRelease;

TEST_F(RoleTest, StartEnablesTheMonitorWithHold) {
  EXPECT_FALSE(role_.Start());
  EXPECT_TRUE(mon_.enabled);
  EXPECT_EQ(mon_.hold, kHold);
  EXPECT_FALSE(mon_.mask);
  // Local senders come as reports: no table read every epoch.
  EXPECT_TRUE(mon_.report_local);
  // A trickle of parallel packets does not count as parallel traffic.
  EXPECT_EQ(mon_.min_bytes, kMinBytes);
  // Every address of every configured peer, and nobody else.
  EXPECT_EQ(mon_.counted, (std::vector<Address>{A("10.0.0.2"), A("10.0.0.3"),
                                                A("10.0.1.3")}));
  mon_.enable_error = KernelError{EPERM, "no"};
  EXPECT_TRUE(role_.Start());
}

// parallel-dscp reaches the kernel's monitor.
TEST(RoleDscpTest, StartGivesTheMonitorTheConfiguredDscps) {
  FakeMonitor mon;
  ReceivingRoleConfig c;
  c.node_id = 1;
  c.policy = {3000, kHold, kEpochUs, 3};
  c.parallel_dscp = uint64_t{1} << 34;  // AF41
  ReceivingRole role(c, TestKeys(), mon,
                     EachOf([](const Outgoing&) { return true; }), kRealtime);
  EXPECT_FALSE(role.Start());
  EXPECT_EQ(mon.mask, uint64_t{1} << 34);
}

TEST_F(RoleTest, NothingWithoutParallel) {
  mon_.peers = {Source("10.0.0.3", std::nullopt, 0, 1000)};
  role_.Tick(100 * kMs, kRealtime);
  EXPECT_TRUE(sent_.empty());
  EXPECT_FALSE(role_.busy(100 * kMs));
}

TEST_F(RoleTest, GrantsTheLocalSenderWhileParallelArrives) {
  mon_.peers = {Source("10.0.0.2", 0, std::nullopt),
                Source("10.0.0.3", std::nullopt, kMs, 5000)};
  role_.Tick(100 * kMs, kRealtime);
  ASSERT_EQ(sent_.size(), 1u);
  const Sent& s = sent_[0];
  EXPECT_EQ(s.to, A("10.0.0.3"));  // the peer's first address
  EXPECT_EQ(s.port, kPort);
  EXPECT_EQ(s.m.type, kG);
  EXPECT_EQ(s.m.sender, 1u);
  EXPECT_EQ(s.m.credit, 3000u);
  EXPECT_EQ(s.m.lease, 3u);
  EXPECT_EQ(s.m.epoch_us, kEpochUs);
  EXPECT_EQ(s.m.key_id, 1u);
  EXPECT_EQ(s.m.time_ns, kRealtime);
  EXPECT_EQ(s.m.sequence, kRealtime + 1);  // seeded from the real-time clock
  EXPECT_EQ(s.m.addresses, std::vector<Address>{A("10.0.0.1")});
  EXPECT_TRUE(role_.busy(100 * kMs));
  EXPECT_EQ(role_.granted(), std::set<uint64_t>{3});
  EXPECT_EQ(role_.counters().grants_sent, 1u);
  // parqctl peers: the newest message sent to each peer that got one.
  ASSERT_EQ(role_.sent().size(), 1u);
  const SentRecord& r = role_.sent().at(3);
  EXPECT_EQ(r.type, kG);
  EXPECT_EQ(r.sequence, kRealtime + 1);
  EXPECT_EQ(r.credit, 3000u);
  EXPECT_EQ(r.at, 100 * kMs);
}

TEST_F(RoleTest, RestatesEveryEpochWithIncreasingSequenceAndTime) {
  uint64_t last_seq = 0, last_time = 0;
  for (int i = 0; i < 5; i++) {
    const uint64_t now = 100 * kMs + i * kMs;
    mon_.peers = {
        Source("10.0.0.2", 0, std::nullopt),
        Source("10.0.0.3", std::nullopt, 0, uint64_t{1000} * (i + 1))};
    role_.Tick(now, kRealtime + i * kMs);
    ASSERT_EQ(sent_.size(), 1u) << i;
    EXPECT_GT(sent_[0].m.sequence, last_seq);
    EXPECT_GT(sent_[0].m.time_ns, last_time);
    last_seq = sent_[0].m.sequence;
    last_time = sent_[0].m.time_ns;
    sent_.clear();
  }
  EXPECT_EQ(role_.counters().grants_sent, 5u);
}

TEST_F(RoleTest, LocalSeenByBytesGrowingEvenWhenTheAgeIsOld) {
  // The age says "long ago" (e.g. a stale dump), but bytes grew since the
  // previous dump: that host is sending.
  mon_.peers = {Source("10.0.0.2", 0, std::nullopt),
                Source("10.0.0.3", std::nullopt, 50 * kMs, 1000)};
  role_.Tick(100 * kMs, kRealtime);
  EXPECT_EQ(Take(), Types{});  // first sight, old: not sending
  mon_.peers = {Source("10.0.0.2", 0, std::nullopt),
                Source("10.0.0.3", std::nullopt, 50 * kMs, 2000)};
  role_.Tick(101 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kG}}));
}

TEST_F(RoleTest, UnconfiguredSourcesAreNotGrantedButTheirParallelCounts) {
  mon_.peers = {Source("192.0.2.9", 0, 0, 100),
                Source("10.0.1.3", std::nullopt, 0, 100)};  // L's 2nd address
  role_.Tick(100 * kMs, kRealtime);
  ASSERT_EQ(sent_.size(), 1u);
  EXPECT_EQ(sent_[0].to, A("10.0.0.3"));
}

TEST_F(RoleTest, StopReportReleasesAtOnce) {
  mon_.peers = {Source("10.0.0.2", 0, std::nullopt),
                Source("10.0.0.3", std::nullopt, 0, 1000)};
  role_.Tick(100 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kG}}));
  // The kernel says parallel stopped; its table still shows a young age
  // (a dump would race the report): the report wins, and the release goes
  // out without a dump first.
  mon_.events = {{MonitorEvent::Kind::kStop, std::nullopt}};
  mon_.peers = {Source("10.0.0.2", 0, std::nullopt),
                Source("10.0.0.3", std::nullopt, 0, 2000)};
  const int dumps = mon_.dumps;
  role_.OnEvents(101 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kR}}));
  EXPECT_EQ(mon_.dumps, dumps);
  EXPECT_TRUE(role_.granted().empty());
  EXPECT_EQ(role_.counters().monitor_stops, 1u);
  EXPECT_EQ(role_.counters().releases_sent, 1u);
}

TEST_F(RoleTest, StartReportGrantsWithoutWaitingForAnEpoch) {
  mon_.peers = {Source("10.0.0.3", std::nullopt, 0, 1000)};
  role_.Tick(100 * kMs, kRealtime);
  EXPECT_EQ(Take(), Types{});
  mon_.state.active = true;
  // The report comes before the table shows any parallel packet's age.
  mon_.events = {{MonitorEvent::Kind::kStart, A("10.0.0.2")}};
  role_.OnEvents(100 * kMs + 1, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kG}}));
  EXPECT_EQ(role_.counters().monitor_starts, 1u);
}

// The log names a peer's first grant, not its restatements, and each
// release.
TEST_F(RoleTest, TheLogNamesEachFirstGrantAndEachRelease) {
  std::vector<std::string> lines;
  ReceivingRole role(
      Config(), TestKeys(), mon_, EachOf([](const Outgoing&) { return true; }),
      kRealtime, [&lines](const std::string& line) { lines.push_back(line); });
  mon_.state.active = true;
  mon_.peers = {Source("10.0.0.3", std::nullopt, 0, 1000)};
  mon_.events = {{MonitorEvent::Kind::kStart, A("10.0.0.2")}};
  role.OnEvents(100 * kMs, kRealtime);
  mon_.events = {{MonitorEvent::Kind::kLocal, A("10.0.0.2")}};
  role.OnEvents(101 * kMs, kRealtime);
  for (uint64_t t = 102; t < 110; ++t)
    role.Tick(t * kMs, kRealtime);  // restatements: lease 3, every epoch
  mon_.events = {{MonitorEvent::Kind::kStop, A("10.0.0.2")}};
  role.OnEvents(110 * kMs, kRealtime);
  ASSERT_EQ(lines.size(), 4u) << ::testing::PrintToString(lines);
  EXPECT_NE(lines[0].find("granting peer 3 "), std::string::npos);
  EXPECT_NE(lines[1].find("granting peer 2 "), std::string::npos);
  EXPECT_EQ(lines[2], "releasing peer 2");
  EXPECT_EQ(lines[3], "releasing peer 3");
}

// While the kernel reports, a local sender's report grants it at once,
// without reading the table; all the GRANTs of a decision go out in one
// batch.
TEST_F(RoleTest, LocalSenderReportGrantsWithoutADump) {
  mon_.state.active = true;
  mon_.peers = {Source("10.0.0.3", std::nullopt, 0, 1000)};
  mon_.events = {{MonitorEvent::Kind::kStart, A("10.0.0.2")}};
  role_.OnEvents(100 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kG}}));
  EXPECT_EQ(mon_.dumps, 1);
  mon_.events = {{MonitorEvent::Kind::kLocal, A("10.0.0.2")},
                 {MonitorEvent::Kind::kLocal, A("192.0.2.9")}};  // no peer
  role_.OnEvents(100 * kMs + 300'000, kRealtime);
  // The credit is the same (the floor is 0: threshold-recv each): peer 3
  // is not restated yet.
  EXPECT_EQ(Take(), (Types{{2, kG}}));
  EXPECT_EQ(mon_.dumps, 1);
  batches_ = 0;
  role_.Tick(role_.NextTick(100 * kMs + 300'000), kRealtime);
  EXPECT_EQ(Take(), (Types{{2, kG}, {3, kG}}));
  EXPECT_EQ(batches_, 1);
  EXPECT_EQ(mon_.dumps, 1);
  EXPECT_EQ(role_.granted(), (std::set<uint64_t>{2, 3}));
  EXPECT_EQ(role_.counters().monitor_locals, 2u);
}

// While the kernel reports, the role runs when a restatement is due (every
// epoch with lease 3) and reads the table and the monitor's state once a
// second; a state that says parallel traffic stopped (the stop report was
// lost) releases.
TEST_F(RoleTest, ReportedParallelReadsTheTableOnceASecond) {
  mon_.state.active = true;
  mon_.peers = {Source("10.0.0.2", 0, std::nullopt),
                Source("10.0.0.3", std::nullopt, 0, 1000)};
  mon_.events = {{MonitorEvent::Kind::kStart, A("10.0.0.2")}};
  uint64_t now = 100 * kMs;
  role_.OnEvents(now, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kG}}));
  // The table would say parallel traffic stopped long ago: not read.
  mon_.peers = {Source("10.0.0.2", 500 * kMs, std::nullopt),
                Source("10.0.0.3", std::nullopt, 500 * kMs, 1000)};
  int ticks = 0;
  while ((now = role_.NextTick(now)) < 100 * kMs + ReceivingRole::kResyncNs) {
    role_.Tick(now, kRealtime);
    ++ticks;
  }
  EXPECT_EQ(ticks, 999);  // one per epoch (lease 3), after the first
  EXPECT_EQ(mon_.dumps, 1);
  EXPECT_EQ(role_.granted(), std::set<uint64_t>{3});
  EXPECT_EQ(Take().size(), 999u);
  mon_.state.active = false;
  role_.Tick(now, kRealtime);
  EXPECT_EQ(mon_.dumps, 2);
  EXPECT_EQ(Take(), (Types{{3, kR}}));
  EXPECT_EQ(role_.counters().monitor_resyncs, 1u);
  EXPECT_EQ(role_.NextTick(now), now + ReceivingRole::kIdleNs);
}

// Lost reports: the monitor's state says parallel traffic arrives, so the
// role trusts it (and stops reading the table every epoch).
TEST_F(RoleTest, LostReportsTakeTheMonitorsState) {
  mon_.state.active = true;
  mon_.events_error = KernelError{ENOBUFS, "overrun"};
  mon_.peers = {Source("10.0.0.3", std::nullopt, 0, 1000)};
  role_.OnEvents(100 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kG}}));
  EXPECT_EQ(role_.counters().monitor_resyncs, 1u);
  EXPECT_EQ(role_.NextTick(100 * kMs), 101 * kMs);  // the restatement
  mon_.events_error.reset();
  for (uint64_t t = 101 * kMs; t < 200 * kMs; t += kMs)
    role_.Tick(t, kRealtime);
  EXPECT_EQ(mon_.dumps, 1);
}

TEST_F(RoleTest, HoldWithoutParallelReleasesEvenWithoutAReport) {
  mon_.peers = {Source("10.0.0.2", 0, std::nullopt),
                Source("10.0.0.3", std::nullopt, 0, 1000)};
  role_.Tick(100 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kG}}));
  mon_.peers = {Source("10.0.0.2", 9 * kMs, std::nullopt),
                Source("10.0.0.3", std::nullopt, 0, 2000)};
  role_.Tick(109 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kG}}));  // 9 ms < hold
  mon_.peers = {Source("10.0.0.2", kHold, std::nullopt),
                Source("10.0.0.3", std::nullopt, 0, 3000)};
  role_.Tick(110 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kR}}));
  role_.Tick(111 * kMs, kRealtime);
  EXPECT_EQ(Take(), Types{});  // released once
}

TEST_F(RoleTest, LostReportsFallBackToTheTable) {
  mon_.events_error = KernelError{ENOBUFS, "overrun"};
  mon_.peers = {Source("10.0.0.2", 0, std::nullopt),
                Source("10.0.0.3", std::nullopt, 0, 1000)};
  role_.OnEvents(100 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kG}}));
  EXPECT_EQ(role_.counters().monitor_errors, 1u);
  EXPECT_EQ(mon_.dumps, 1);
}

TEST_F(RoleTest, FailedDumpStillReleasesAfterHold) {
  mon_.peers = {Source("10.0.0.2", 0, std::nullopt),
                Source("10.0.0.3", std::nullopt, 0, 1000)};
  role_.Tick(100 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kG}}));
  mon_.peers_error = KernelError{EIO, "gone"};
  role_.Tick(105 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kG}}));  // within hold of what was seen
  role_.Tick(111 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{3, kR}}));
  EXPECT_EQ(role_.counters().monitor_errors, 2u);
}

TEST_F(RoleTest, SendFailuresAreCounted) {
  fail_send_ = true;
  mon_.peers = {Source("10.0.0.2", 0, std::nullopt),
                Source("10.0.0.3", std::nullopt, 0, 1000)};
  role_.Tick(100 * kMs, kRealtime);
  EXPECT_EQ(role_.counters().send_errors, 1u);
  EXPECT_EQ(role_.counters().grants_sent, 0u);
}

TEST_F(RoleTest, StopReleasesEveryGrantedPeer) {
  mon_.peers = {Source("10.0.0.2", 0, 0, 500),
                Source("10.0.0.3", std::nullopt, 0, 1000)};
  role_.Tick(100 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{2, kG}, {3, kG}}));
  role_.Stop(101 * kMs, kRealtime);
  EXPECT_EQ(Take(), (Types{{2, kR}, {3, kR}}));
}

// With a lease of 7 epochs a GRANT of unchanged credit goes out every 3
// epochs ((7 - 1) / 2: one lost restatement leaves time for the next); a
// change of credit goes out at once.
TEST(RoleRestatement, UnchangedCreditEveryHalfLease) {
  FakeMonitor mon;
  std::vector<wire::Message> sent;
  ReceivingRoleConfig c;
  c.node_id = 1;
  c.policy = {3000, kHold, kEpochUs, 7};
  c.policy.floor_bytes = 12000;
  c.own_addresses = {A("10.0.0.1")};
  c.peers = {{2, {A("10.0.0.2")}}, {3, {A("10.0.0.3")}}};
  c.peer_port = kPort;
  ReceivingRole role(c, TestKeys(), mon, EachOf([&sent](const Outgoing& o) {
                       auto m = wire::Decode(o.bytes, TestKey(), o.to);
                       EXPECT_TRUE(m.ok());
                       if (m.ok())
                         sent.push_back(m.value());
                       return true;
                     }),
                     kRealtime);
  EXPECT_EQ(role.restate_ns(), 3 * kEpochUs * 1000);
  std::vector<size_t> per_epoch;
  std::vector<uint64_t> credits;
  for (int i = 0; i < 8; i++) {
    const uint64_t now = 100 * kMs + i * kMs;
    mon.peers = {Source("10.0.0.2", 0,
                        i >= 5 ? std::optional<uint64_t>(0) : std::nullopt),
                 Source("10.0.0.3", std::nullopt, 0)};
    role.Tick(now, kRealtime + now);
    per_epoch.push_back(sent.size());
    for (const wire::Message& m : sent)
      credits.push_back(m.credit);
    sent.clear();
  }
  // Epoch 0: peer 3 alone gets the whole floor; 3 and 6: restated; 5: peer
  // 2 starts sending local traffic too, both get half at once.
  EXPECT_EQ(per_epoch, (std::vector<size_t>{1, 0, 0, 1, 0, 2, 0, 0}));
  EXPECT_EQ(credits, (std::vector<uint64_t>{12000, 12000, 6000, 6000}));
  EXPECT_EQ(role.counters().restatements_skipped, 7u);
  EXPECT_EQ(role.counters().grants_sent, 4u);
  // Parallel traffic seen in the table alone: every epoch.
  EXPECT_EQ(role.NextTick(107 * kMs), 108 * kMs);
  // Reported: when the next restatement is due (the last GRANTs went out
  // at 105 ms, restated every 3 epochs).
  mon.state.active = true;
  role.Tick(107 * kMs, kRealtime);
  EXPECT_EQ(role.counters().monitor_resyncs, 1u);
  EXPECT_EQ(role.NextTick(107 * kMs), 108 * kMs);
  role.Tick(108 * kMs, kRealtime);
  EXPECT_EQ(role.NextTick(108 * kMs), 111 * kMs);
}

// The daemon reports how late each epoch ran: late means more than one
// epoch after its time.
TEST_F(RoleTest, LatenessCounted) {
  role_.Ran(0);
  role_.Ran(kEpochUs * 1000);
  role_.Ran(kEpochUs * 1000 + 1);
  role_.Ran(5 * kMs);
  EXPECT_EQ(role_.counters().epochs_late, 2u);
  EXPECT_EQ(role_.counters().lateness_max_ns, 5 * kMs);
}

TEST_F(RoleTest, MetricsCountWhatWasSent) {
  mon_.peers = {Source("10.0.0.2", 0, std::nullopt),
                Source("10.0.0.3", std::nullopt, 0, 1000)};
  role_.Tick(100 * kMs, kRealtime);
  PromText text;
  role_.Metrics(text);
  const std::string& m = text.text();
  EXPECT_TRUE(PromWellFormed(m));
  for (const std::string& f : PromFamilies(m))
    EXPECT_TRUE(PromDocumented(f)) << f << " is not in Documentation/";
  EXPECT_NE(m.find("parqd_grants_sent_total 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("parqd_releases_sent_total 0\n"), std::string::npos);
  EXPECT_NE(m.find("parqd_peers_granted 1\n"), std::string::npos);
  EXPECT_NE(m.find("parqd_monitor_events_total{kind=\"stop\"} 0\n"),
            std::string::npos);
}

}  // namespace
