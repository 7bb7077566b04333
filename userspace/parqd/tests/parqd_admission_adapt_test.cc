// SPDX-License-Identifier: GPL-2.0
//
// Tests of reservations that adapt to what they carry (agent_adapt.cc):
// what each reservation carried, measured from its class's counters at each
// check and shown by the socket's list and the metrics; with [admission]
// adapt on, one that sends a quarter of its rate is shrunk toward what it
// sends plus the margin, and the capacity freed admits a reservation that
// was refused before; one that is choked grows when room appears on its
// path, never past its maximum nor below its minimum; with adapt off,
// nothing changes.  The agent runs against a real etcd
// (etcd_server.h), a fake qdisc whose counters the test advances as the
// kernel would, and a clock of the test's.

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "admission/admission_agent.h"
#include "admission/admission_socket.h"
#include "admission/cluster_admission.h"
#include "admission/etcd.h"
#include "admission/reserved_classes.h"
#include "admission/topology.h"
#include "etcd_server.h"
#include "fake_classes.h"
#include "proto/metrics.h"
#include "topology_text.h"

namespace {

using namespace parq::parqd;
using namespace std::chrono_literals;
using etcd_test::EtcdTest;
using etcd_test::server;
using nlohmann::json;
using test::FakeClasses;
using test::TomlCable;
using test::TomlHost;
using test::TomlSwitch;

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kMbit = 1'000'000;

const Requester kAlice{1001, "alice", {"alice"}};
const Requester kBob{1002, "bob", {"bob"}};
const Requester kCarol{1003, "carol", {"carol"}};

// n1 and n2 with 100 Mbit/s NICs on switch s1: 80 Mbit/s reservable each
// way.
std::string Text() {
  return "reservable = 80\n" + TomlHost("n1", {"10.0.0.1"}, "100mbit") +
         TomlHost("n2", {"10.0.0.2"}, "100mbit") + TomlSwitch("s1") +
         TomlCable("n1", "s1", "100mbit") + TomlCable("n2", "s1", "100mbit");
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines)
    out += l + "\n";
  return out;
}

class AdaptTest : public EtcdTest {
 protected:
  void SetUp() override {
    EtcdTest::SetUp();
    auto t = Topology::Parse(Text(), "test.toml");
    ASSERT_TRUE(t.ok()) << t.error();
    topology_.emplace(std::move(t.value()));
    etcd_.emplace(std::vector<std::string>{server->endpoint()}, 2s, CurlPost());
    admission_.emplace(*topology_, *etcd_, prefix_);
  }

  void Start(bool adapt) {
    AgentConfig c{"n1",
                  10,
                  {{"alice", "", 300 * kMbit},
                   {"bob", "", 300 * kMbit},
                   {"carol", "", 300 * kMbit}}};
    c.adapt.on = adapt;
    agent_.emplace(
        c, *topology_, *admission_, *etcd_, classes_,
        [this](int, const std::string& line) { log_.push_back(line); },
        [this] { return now_; });
    agent_->Tick(now_);
    ASSERT_TRUE(agent_->leased());
  }

  // The class of `who`'s reservation (each user here holds one).
  uint32_t MinorOf(const Requester& who) {
    for (const auto& [minor, uid] : classes_.owners)
      if (uid == who.uid && classes_.rates.count(minor))
        return minor;
    ADD_FAILURE() << who.user << " has no class";
    return 0;
  }

  // 5 s pass, in which the class of each user's reservation sends the
  // first figure, in bits/s, and is held back by its rate the second
  // share of the time (as the kernel counts them); then the agent's check.
  void Carry(
      const std::map<const Requester*, std::pair<uint64_t, double>>& load) {
    for (const auto& [who, l] : load) {
      ReservedClasses::Use& u = classes_.uses[MinorOf(*who)];
      u.bytes += l.first / 8 * 5;
      u.throttled_ns += static_cast<uint64_t>(l.second * 5 * kSec);
    }
    now_ += kJobCheckNs;
    agent_->Tick(now_);
  }

  std::optional<HeldReservation> Held(const std::string& id) {
    for (const HeldReservation& h : agent_->Holdings())
      if (h.r.id == id)
        return h;
    return std::nullopt;
  }

  uint64_t RateInEtcd(const std::string& id) {
    auto l = admission_->List();
    EXPECT_TRUE(l.ok()) << l.error();
    for (const Reservation& r : l.value())
      if (r.id == id)
        return r.rate;
    return 0;
  }

  std::optional<Topology> topology_;
  std::optional<EtcdClient> etcd_;
  std::optional<ClusterAdmission> admission_;
  std::optional<AdmissionAgent> agent_;
  FakeClasses classes_;
  std::vector<std::string> log_;
  uint64_t now_ = 1000 * kSec;
};

// What a reservation carried, from two looks at its class 5 s apart, in
// the socket's list and the metrics; nothing before the second look.
TEST_F(AdaptTest, EachReservationShowsWhatItCarried) {
  Start(false);
  auto a = agent_->Reserve(kAlice, "n2", 40 * kMbit, "");
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_FALSE(Held(a.value().id)->use);
  Carry({{&kAlice, {10 * kMbit, 0.0}}});  // the first look
  EXPECT_FALSE(Held(a.value().id)->use);
  Carry({{&kAlice, {10 * kMbit, 0.25}}});
  auto h = Held(a.value().id);
  ASSERT_TRUE(h->use);
  EXPECT_EQ(h->use->window_ns, kJobCheckNs);
  EXPECT_EQ(h->use->sent_bps, 10 * kMbit);
  EXPECT_DOUBLE_EQ(h->use->unused, 0.75);
  EXPECT_DOUBLE_EQ(h->use->choked, 0.25);

  const json list =
      json::parse(HandleAdmissionRequest(*agent_, kAlice, R"({"op":"list"})"));
  ASSERT_TRUE(list.value("ok", false)) << list.dump();
  const json& r = list["reservations"][0];
  EXPECT_EQ(r["asked_bps"], 40 * kMbit);
  EXPECT_EQ(r["use"]["sent_bps"], 10 * kMbit);
  EXPECT_DOUBLE_EQ(r["use"]["unused"].get<double>(), 0.75);
  EXPECT_FALSE(r.contains("min_bps"));

  PromText m;
  agent_->Metrics(m);
  const std::string id = a.value().id;
  EXPECT_NE(m.text().find("parqd_admission_reservation_unused_ratio{id=\"" +
                          id + "\"} 0.75\n"),
            std::string::npos)
      << m.text();
  EXPECT_NE(m.text().find("parqd_admission_reservation_choked_ratio{id=\"" +
                          id + "\"} 0.25\n"),
            std::string::npos);
  EXPECT_NE(m.text().find("parqd_admission_reservation_rate_bps{id=\"" + id +
                          "\"} 40000000\n"),
            std::string::npos);

  // A class installed again (its counters restart) is measured anew.
  classes_.uses[MinorOf(kAlice)] = {};
  Carry({});
  EXPECT_TRUE(Held(a.value().id)->use) << "the last figures stay";
  Carry({{&kAlice, {20 * kMbit, 0.0}}});
  EXPECT_EQ(Held(a.value().id)->use->sent_bps, 20 * kMbit);
}

// A check looks at the qdisc once while it holds a reservation: what the
// classes carried comes from the same look as which of them are whole
// (not from a second read of the statistics).
TEST_F(AdaptTest, ACheckListsTheClassesOnce) {
  Start(true);
  auto a = agent_->Reserve(kAlice, "n2", 40 * kMbit, "");
  ASSERT_TRUE(a.ok()) << a.error();
  Carry({{&kAlice, {10 * kMbit, 0.0}}});
  classes_.listings = 0;
  Carry({{&kAlice, {10 * kMbit, 0.0}}});
  EXPECT_EQ(classes_.listings, 1u);
  EXPECT_TRUE(Held(a.value().id)->use);
}

// A check that cannot look at the qdisc measures nothing and changes no
// rate: what was measured before stays, and the next look that works
// measures from the last one that did.
TEST_F(AdaptTest, ACheckThatCannotListChangesNothing) {
  Start(true);
  auto a = agent_->Reserve(kAlice, "n2", 40 * kMbit, "");
  ASSERT_TRUE(a.ok()) << a.error();
  const std::string id = a.value().id;
  Carry({{&kAlice, {10 * kMbit, 0.0}}});
  Carry({{&kAlice, {10 * kMbit, 0.0}}});
  const auto before = Held(id);
  ASSERT_TRUE(before->use);
  classes_.fail_list = true;
  for (int i = 0; i < 4; i++)
    Carry({{&kAlice, {10 * kMbit, 0.0}}});
  const auto after = Held(id);
  EXPECT_EQ(after->r.rate, 40 * kMbit) << "adapted on what it could not see";
  EXPECT_EQ(after->use->window_ns, before->use->window_ns);
  EXPECT_EQ(after->use->sent_bps, before->use->sent_bps);
  EXPECT_NE(Joined(log_).find("cannot list the reserved classes: tc: "
                              "cannot dump the classes"),
            std::string::npos)
      << Joined(log_);
  classes_.fail_list = false;
  Carry({{&kAlice, {10 * kMbit, 0.0}}});
  EXPECT_EQ(Held(id)->use->window_ns, 5 * kJobCheckNs);
  EXPECT_EQ(Held(id)->use->sent_bps, 10 * kMbit);
}

// The whole story: alice reserves 40 Mbit/s and sends 10; bob holds the
// other 40, which he uses, and may grow to 60; carol's 25 is refused.
// After 15 s alice is shrunk to 12.5 Mbit/s (what she sent plus 25 %) and
// carol is admitted.  Then bob is choked: he cannot grow (2.5 Mbit/s free,
// less than a quarter of his rate) until carol leaves, and then grows to
// his maximum.
TEST_F(AdaptTest, AnOverAllocatedOneShrinksAndAChokedOneGrowsWhenRoomAppears) {
  Start(true);
  auto a = agent_->Reserve(kAlice, "n2", 40 * kMbit, "");
  ASSERT_TRUE(a.ok()) << a.error();
  auto b = agent_->Reserve(kBob, "n2", 40 * kMbit, "", "",
                           RateBounds{0, 60 * kMbit});
  ASSERT_TRUE(b.ok()) << b.error();
  auto c = agent_->Reserve(kCarol, "n2", 25 * kMbit, "");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("n1"), std::string::npos) << c.error();

  const std::map<const Requester*, std::pair<uint64_t, double>> load = {
      {&kAlice, {10 * kMbit, 0.0}}, {&kBob, {38 * kMbit, 0.2}}};
  Carry(load);  // the first look
  for (int i = 0; i < 2; i++) {
    Carry(load);
    EXPECT_EQ(Held(a.value().id)->r.rate, 40 * kMbit) << "after " << i;
  }
  Carry(load);  // 15 s over-allocated
  EXPECT_EQ(Held(a.value().id)->r.rate, 12'500'000u);
  EXPECT_EQ(RateInEtcd(a.value().id), 12'500'000u);

  EXPECT_EQ(Held(a.value().id)->asked, 40 * kMbit) << "what she asked stays";
  EXPECT_EQ(Held(b.value().id)->r.rate, 40 * kMbit);

  c = agent_->Reserve(kCarol, "n2", 25 * kMbit, "");
  ASSERT_TRUE(c.ok()) << "the capacity freed admits carol: " << c.error();

  for (int i = 0; i < 4; i++)
    Carry({{&kAlice, {10 * kMbit, 0.0}},
           {&kBob, {40 * kMbit, 0.95}},
           {&kCarol, {25 * kMbit, 0.0}}});
  EXPECT_EQ(Held(b.value().id)->r.rate, 40 * kMbit);
  EXPECT_EQ(Held(a.value().id)->r.rate, 12'500'000u)
      << "no shrink below what it sends plus the margin";
  size_t refused = 0;
  for (const std::string& l : log_)
    refused +=
        l.find("is choked at 40mbit and cannot grow") != std::string::npos;
  // Once, not at every check.
  EXPECT_EQ(refused, 1u) << "logged once while the reason stays:\n"
                         << Joined(log_);

  // A refused growth is tried again after adapt-after more (15 s): within
  // four checks of carol leaving, not at every check.
  ASSERT_TRUE(agent_->Release(kCarol, c.value().id).ok());
  int checks = 0;
  while (checks < 4 && Held(b.value().id)->r.rate == 40 * kMbit) {
    Carry({{&kAlice, {10 * kMbit, 0.0}}, {&kBob, {40 * kMbit, 0.95}}});
    checks++;
  }
  EXPECT_GT(checks, 1);
  EXPECT_EQ(Held(b.value().id)->r.rate, 60 * kMbit) << "grown, to its max";
  EXPECT_EQ(RateInEtcd(b.value().id), 60 * kMbit);
  EXPECT_EQ(classes_.rates.at(MinorOf(kBob)), 60 * kMbit);
  for (int i = 0; i < 4; i++)
    Carry({{&kAlice, {10 * kMbit, 0.0}}, {&kBob, {60 * kMbit, 0.99}}});
  EXPECT_EQ(Held(b.value().id)->r.rate, 60 * kMbit) << "never past its max";

  PromText m;
  agent_->Metrics(m);
  EXPECT_NE(
      m.text().find("parqd_admission_adapted_total{direction=\"shrunk\"} 1\n"),
      std::string::npos)
      << m.text();
  EXPECT_NE(
      m.text().find("parqd_admission_adapted_total{direction=\"grown\"} 1\n"),
      std::string::npos);
}

// Never below the minimum asked, nor (none asked) below adapt-floor of the
// rate asked; never past the rate asked when no maximum was; and a
// reservation that is over-allocated only now and then is not shrunk.
TEST_F(AdaptTest, TheBoundsHold) {
  Start(true);
  auto a = agent_->Reserve(kAlice, "n2", 40 * kMbit, "", "",
                           RateBounds{30 * kMbit, 0});
  ASSERT_TRUE(a.ok()) << a.error();
  auto b = agent_->Reserve(kBob, "n2", 20 * kMbit, "");
  ASSERT_TRUE(b.ok()) << b.error();
  for (int i = 0; i < 5; i++)
    Carry({{&kAlice, {1 * kMbit, 0.0}}, {&kBob, {0, 0.0}}});
  EXPECT_EQ(Held(a.value().id)->r.rate, 30 * kMbit) << "its minimum";
  EXPECT_EQ(Held(b.value().id)->r.rate, 5 * kMbit) << "25 % of 20";

  // Bob is choked: he grows back to the 20 he asked, and no further.
  for (int i = 0; i < 8; i++)
    Carry({{&kAlice, {30 * kMbit, 0.0}}, {&kBob, {20 * kMbit, 0.9}}});
  EXPECT_EQ(Held(b.value().id)->r.rate, 20 * kMbit);

  // Carol's sends in bursts: over-allocated one check in two.
  auto c = agent_->Reserve(kCarol, "n2", 20 * kMbit, "");
  ASSERT_TRUE(c.ok()) << c.error();
  for (int i = 0; i < 8; i++)
    Carry({{&kCarol, {i % 2 ? 20 * kMbit : 0, 0.0}}});
  EXPECT_EQ(Held(c.value().id)->r.rate, 20 * kMbit);

  // Bounds that do not hold the rate asked are refused.
  auto bad = agent_->Reserve(kCarol, "n2", 10 * kMbit, "", "",
                             RateBounds{11 * kMbit, 0});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("minimum"), std::string::npos) << bad.error();
  bad = agent_->Reserve(kCarol, "n2", 10 * kMbit, "", "",
                        RateBounds{0, 9 * kMbit});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("maximum"), std::string::npos) << bad.error();
}

// At most 8 changes at a check, each a transaction, and the next check
// goes on from there: twelve reservations due at once are shrunk at two
// checks.
TEST_F(AdaptTest, AtMostEightChangesAtACheck) {
  Start(true);
  std::vector<std::string> ids;
  for (int i = 0; i < 12; i++) {
    auto r = agent_->Reserve(kAlice, "n2", 4 * kMbit,
                             "proto=udp,dport=" + std::to_string(5000 + i));
    ASSERT_TRUE(r.ok()) << r.error();
    ids.push_back(r.value().id);
  }
  auto shrunk = [&] {
    int n = 0;
    for (const std::string& id : ids)
      n += Held(id)->r.rate < 4 * kMbit;
    return n;
  };
  for (const auto& [minor, rate] : classes_.rates)
    classes_.uses[minor] = {};  // nothing sent: the counters stay at 0
  for (int i = 0; i < 4; i++)
    Carry({});
  EXPECT_EQ(shrunk(), 8);
  Carry({});
  EXPECT_EQ(shrunk(), 12);
}

// Adaptation is off by default: a reservation keeps its rate whatever it
// carries.
TEST_F(AdaptTest, OffByDefaultNothingChanges) {
  Start(false);
  auto a = agent_->Reserve(kAlice, "n2", 40 * kMbit, "");
  ASSERT_TRUE(a.ok()) << a.error();
  auto b = agent_->Reserve(kBob, "n2", 20 * kMbit, "", "",
                           RateBounds{0, 40 * kMbit});
  ASSERT_TRUE(b.ok()) << b.error();
  for (int i = 0; i < 10; i++)
    Carry({{&kAlice, {1 * kMbit, 0.0}}, {&kBob, {20 * kMbit, 1.0}}});
  EXPECT_EQ(Held(a.value().id)->r.rate, 40 * kMbit);
  EXPECT_EQ(Held(b.value().id)->r.rate, 20 * kMbit);
}

// The socket takes the bounds, and refuses ones that are no rates.
TEST_F(AdaptTest, TheSocketTakesTheBounds) {
  Start(true);
  json r = json::parse(HandleAdmissionRequest(
      *agent_, kAlice,
      R"({"op":"reserve","to":"n2","rate":"40mbit","min_rate":"10mbit",)"
      R"("max_rate":50000000})",
      nullptr, std::string()));
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  auto h = Held(r["reservation"]["id"].get<std::string>());
  EXPECT_EQ(h->min, 10 * kMbit);
  EXPECT_EQ(h->max, 50 * kMbit);
  r = json::parse(HandleAdmissionRequest(
      *agent_, kBob,
      R"({"op":"reserve","to":"n2","rate":"10mbit","min_rate":true})", nullptr,
      std::string()));
  EXPECT_FALSE(r.value("ok", true));
  EXPECT_NE(r.value("error", "").find("\"min_rate\" must be a rate"),
            std::string::npos)
      << r.dump();
}

}  // namespace
