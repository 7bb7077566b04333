// SPDX-License-Identifier: GPL-2.0
//
// Tests of parqd's admission role (admission_agent.cc, admission_socket.cc,
// reserved_classes.cc): the match syntax, the classes and filters, the policy
// (who may reserve how much, who may release what), changes, a class that
// cannot be installed, the lease (demotion before it could expire when
// etcd stops answering, an expired lease, release at stop), the JSON
// requests, a request over the Unix socket with SO_PEERCRED, and libparq
// (parq.h) and its example over that socket.  The
// agent runs against a real etcd (etcd_server.h) and a fake qdisc.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "admission/admission_agent.h"
#include "admission/admission_client.h"
#include "admission/admission_socket.h"
#include "admission/cluster_admission.h"
#include "admission/etcd.h"
#include "admission/incoming.h"
#include "admission/reserved_classes.h"
#include "admission/topology.h"
#include "ctl/ctl.h"
#include "etcd_server.h"
#include "fake_classes.h"
#include "fake_tc_link.h"
#include "parq.h"
#include "topology_text.h"

namespace {

using namespace parq::parqd;
using namespace std::chrono_literals;
using etcd_test::EtcdTest;
using etcd_test::server;
using nlohmann::json;
using test::TomlCable;
using test::TomlHost;
using test::TomlSwitch;

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kMbit = 1'000'000;

// n1 and n2 (1 Gbit/s NICs) on switch s1: 800 Mbit/s reservable each way.
std::string Text() {
  return "reservable = 80\n" + TomlHost("n1", {"10.0.0.1"}, "1gbit") +
         TomlHost("n2", {"10.0.0.2", "fd00::2"}, "1gbit") + TomlSwitch("s1") +
         TomlCable("n1", "s1", "1gbit") + TomlCable("n2", "s1", "1gbit");
}

// The qdisc's reserved classes: minor -> rate, and what was asked.
using test::FakeClasses;
using test::FakeTcLink;
using test::RecordingNft;

uint64_t MonotonicNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

const Requester kRoot{0, "root", {"root"}};
const Requester kAlice{1001, "alice", {"alice", "hpc"}};
const Requester kBob{1002, "bob", {"bob"}};
const Requester kCarol{1003, "carol", {"carol", "hpc"}};

class AgentTest : public EtcdTest {
 protected:
  void SetUp() override {
    EtcdTest::SetUp();
    auto t = Topology::Parse(Text(), "test.toml");
    ASSERT_TRUE(t.ok()) << t.error();
    topology_.emplace(std::move(t.value()));
    // The transport fails while `down_`: etcd stops answering, at once,
    // or (`silent_`) after the whole timeout, which passes on now_.
    if (endpoints_.empty())
      endpoints_ = {server->endpoint()};
    etcd_.emplace(endpoints_, 2s,
                  [this, post = CurlPost()](const std::string& url,
                                            const std::string& body,
                                            std::chrono::milliseconds timeout)
                      -> Result<EtcdBody, std::string> {
                    if (silent_) {
                      now_ += static_cast<uint64_t>(timeout.count()) * kMs;
                      return Err{std::string("Operation timed out")};
                    }
                    if (down_)
                      return Err{std::string("Couldn't connect to server")};
                    return post(url, body, timeout);
                  });
    admission_.emplace(*topology_, *etcd_, prefix_);
    // This test's own user may reserve too (root has no limit anyway).
    AgentConfig c{"n1",
                  ttl_s_,
                  {{"alice", "", 300 * kMbit},
                   {"", "hpc", 100 * kMbit},
                   {RequesterOf(getuid(), getgid()).user, "", 800 * kMbit}}};
    agent_.emplace(
        c, *topology_, *admission_, *etcd_, classes_,
        [this](int level, const std::string& line) {
          log_.push_back(std::to_string(level) + " " + line);
        },
        [this] { return real_clock_ ? MonotonicNs() : now_; });
    agent_->Tick(now_);
    ASSERT_TRUE(agent_->leased()) << (log_.empty() ? "" : log_.back());
  }

  // Runs `client` on a thread while this one serves `s` for the agent, as
  // parqd's loop does, until the client returns.
  template <typename F>
  void ServeWhile(AdmissionServer& s, F client) {
    std::atomic<bool> done{false};
    std::thread t([&] {
      client();
      done = true;
    });
    for (int i = 0; i < 2000 && !done; i++) {
      s.Serve(*agent_, now_);
      std::this_thread::sleep_for(5ms);
    }
    t.join();
  }

  // parqctl `a` against the socket at `path`, which `s` serves: its exit
  // status, stdout and stderr.
  std::tuple<int, std::string, std::string> Ctl(AdmissionServer& s,
                                                const std::string& path,
                                                CtlArgs a) {
    a.socket = path;
    std::ostringstream out, err;
    int rc = -1;
    ServeWhile(s, [&] {
      rc = RunCtl(
          a,
          []() -> Result<std::unique_ptr<KernelCreditTable>, KernelError> {
            return Err{KernelError{ENODEV, "not used"}};
          },
          out, err);
    });
    return {rc, out.str(), err.str()};
  }

  size_t InEtcd() {
    auto l = admission_->List();
    EXPECT_TRUE(l.ok()) << l.error();
    return l.ok() ? l.value().size() : 0;
  }

  std::optional<Topology> topology_;
  std::optional<EtcdClient> etcd_;
  std::optional<ClusterAdmission> admission_;
  std::optional<AdmissionAgent> agent_;
  FakeClasses classes_;
  std::vector<std::string> log_;
  std::atomic<bool> down_{false};
  bool silent_ = false;
  bool real_clock_ = false;  // the agent's clock: now_, or the real one
  uint64_t now_ = 1000 * kSec;
  std::vector<std::string> endpoints_;  // empty: the test program's etcd
  int64_t ttl_s_ = 4;
};

// A cluster of three members and the agent on the real clock, with a
// lease of 6 s: it keeps its lease while one member is down (etcd's
// election takes about a second), demotes when two are (no quorum), and
// once they are back takes a new lease and revokes the one it gave up.
class QuorumAgentTest : public AgentTest {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(cluster_.Start(why, 3)) << why;
    endpoints_ = cluster_.endpoints();
    ttl_s_ = 6;
    now_ = MonotonicNs();
    real_clock_ = true;
    AgentTest::SetUp();
  }

  // Ticks the agent as parqd's admission thread does until `done()` or
  // `seconds` pass; false if they pass.
  template <typename F>
  bool TickUntil(F done, int seconds) {
    const uint64_t end = MonotonicNs() + seconds * kSec;
    while (MonotonicNs() < end) {
      now_ = MonotonicNs();
      if (now_ >= agent_->NextTick())
        agent_->Tick(now_);
      if (done())
        return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  etcd_test::EtcdServer cluster_;
};

TEST(MatchTest, ParsesAndFormats) {
  auto m = ParseMatch(" dport=5001 , proto=udp");
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m.value(), (Match{"udp", 5001, 0}));
  EXPECT_EQ(FormatMatch(m.value()), "proto=udp,dport=5001");
  EXPECT_EQ(FormatMatch(ParseMatch("").value()), "");
  EXPECT_EQ(ParseMatch("proto=tcp,sport=22").value(), (Match{"tcp", 0, 22}));
}

TEST(MatchTest, RefusesWhatItCannotInstall) {
  EXPECT_EQ(ParseMatch("dport=80").error(),
            "match: a port needs proto=udp or proto=tcp");
  EXPECT_EQ(ParseMatch("proto=sctp").error(),
            "match: proto=sctp: give udp or tcp");
  EXPECT_EQ(ParseMatch("proto=udp,dport=0").error(),
            "match: dport=0: give a port 1..65535");
  EXPECT_EQ(ParseMatch("proto=udp,dport=65536").error(),
            "match: dport=65536: give a port 1..65535");
  EXPECT_EQ(ParseMatch("proto=udp,proto=tcp").error(),
            "match: proto is given twice");
  EXPECT_NE(ParseMatch("dscp=ef").error().find("unknown key \"dscp\""),
            std::string::npos);
  EXPECT_NE(ParseMatch("udp").error().find("is not key=value"),
            std::string::npos);
}

// Another user sending the same traffic must not ride the class: the tc
// filter matches the mark that nftables sets for the owner's sockets only,
// not the destination and ports.
TEST(TcClassesTest, InstallIsOneClassAndAFilterOnItsMark) {
  auto link =
      std::make_unique<FakeTcLink>(FakeTcLink::WithRoot("parq", 0x10000));
  FakeTcLink* l = link.get();
  std::vector<std::vector<std::string>> ran;
  TcReservedClasses tc("eth0", RecordingNft(ran), std::move(link));
  EXPECT_EQ(
      tc.Install(0x1000, 250 * kMbit, {}, {*Address::Parse("10.0.0.2")}, 0),
      std::nullopt);
  EXPECT_EQ(l->log, (std::vector<std::string>{
                        // 250 Mbit/s is 31 250 000 bytes/s, as tc
                        // reads "250mbit".
                        "class add 1:1000 rate 31250000",
                        "filter add 1: prio 4096 fw 0x10000000/0xffff0000 "
                        "classid 1:1000"}));
  EXPECT_EQ(ran, (std::vector<std::vector<std::string>>{{"nft", "-f", "-"}}));
  EXPECT_EQ(tc.SetRate(0x1000, kMbit), std::nullopt);
  EXPECT_EQ(l->log.back(), "class change 1:1000 rate 125000");
  EXPECT_EQ(ClassBytes(7), 1u);
  EXPECT_EQ(ClassBytes(15), 1u);
  EXPECT_EQ(ClassBytes(16), 2u);
  auto in = tc.Installed();
  ASSERT_TRUE(in.ok()) << in.error();
  EXPECT_EQ(in.value(), (std::vector<uint32_t>{0x1000}));
  EXPECT_EQ(tc.Remove(0x1000), std::nullopt);
  EXPECT_TRUE(l->classes.empty());
  EXPECT_TRUE(l->filters.empty());
}

TEST(TcClassesTest, NftMarksTheOwnersTrafficPerAddress) {
  const std::vector<Address> to = {*Address::Parse("10.0.0.2"),
                                   *Address::Parse("fd00::2")};
  const std::string head =
      "add table inet parq\n"
      "add chain inet parq resv_1000 { type filter hook output priority "
      "mangle; policy accept; }\n"
      "flush chain inet parq resv_1000\n";
  const std::string mark = " meta mark set meta mark & 0xffff | 0x10000000\n";
  EXPECT_EQ(ReservedNftScript(0x1000, 1000, {"udp", 5001, 0}, to),
            head +
                "add rule inet parq resv_1000 meta skuid 1000 ip daddr "
                "10.0.0.2 udp dport 5001" +
                mark +
                "add rule inet parq resv_1000 meta skuid 1000 ip6 daddr "
                "fd00::2 udp dport 5001" +
                mark);
  EXPECT_EQ(ReservedNftScript(0x1000, 0, {"tcp", 0, 0}, {to[0]}),
            head +
                "add rule inet parq resv_1000 meta skuid 0 ip daddr "
                "10.0.0.2 meta l4proto tcp" +
                mark);
  EXPECT_EQ(ReservedNftScript(0x1000, 7, {"tcp", 80, 1024}, {to[0]}),
            head +
                "add rule inet parq resv_1000 meta skuid 7 ip daddr "
                "10.0.0.2 tcp dport 80 tcp sport 1024" +
                mark);
  EXPECT_EQ(ReservedNftScript(0x1000, 7, {}, {to[0]}),
            head +
                "add rule inet parq resv_1000 meta skuid 7 ip daddr "
                "10.0.0.2" +
                mark);
}

TEST(TcClassesTest, NeedsAParqRootAndCleansUpAFailedInstall) {
  std::vector<std::vector<std::string>> ran;
  auto link = std::make_unique<FakeTcLink>(FakeTcLink::WithRoot("fq_codel", 0));
  FakeTcLink* l = link.get();
  TcReservedClasses tc("eth0", RecordingNft(ran), std::move(link));
  auto e = tc.Install(0x1000, kMbit, {}, {*Address::Parse("10.0.0.2")}, 0);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(*e,
            "eth0's root qdisc is fq_codel, not parq; add one with: tc qdisc "
            "add dev eth0 root handle 1: parq linkrate RATE");
  EXPECT_TRUE(ran.empty());
  EXPECT_TRUE(l->log.empty());
  l->qdiscs = {{0x70000, TC_H_ROOT, 0, "parq", std::nullopt}};
  l->refuse = "filter add";
  l->refusal = {EINVAL,
                "parq: the reserved classes' sum would exceed the capacity."};
  e = tc.Install(0x1000, kMbit, {}, {*Address::Parse("10.0.0.2")}, 1000);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->find("would exceed the capacity"), std::string::npos) << *e;
  // The owner's marking went in before the class; after the refused
  // filter: the marking, the filters of priority 4096, then the class.
  EXPECT_EQ(ran, (std::vector<std::vector<std::string>>{
                     {"nft", "-f", "-"},
                     {"nft", "delete", "chain", "inet", "parq", "resv_1000"}}));
  EXPECT_EQ(l->log, (std::vector<std::string>{
                        "class add 7:1000 rate 125000",
                        "filter add 7: prio 4096 fw 0x10000000/0xffff0000 "
                        "classid 7:1000",
                        "filter del 7: prio 4096", "class del 7:1000"}));
  EXPECT_TRUE(l->classes.empty());
  // No root at all.
  l->qdiscs.clear();
  e = tc.Remove(0x1000);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->rfind("no root qdisc on eth0", 0), 0u) << *e;
}

TEST_F(AgentTest, ReservesInstallsAndReleases) {
  auto r = agent_->Reserve(kRoot, "n2", 200 * kMbit, "proto=udp,dport=5001");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().from, "n1");
  EXPECT_EQ(r.value().owner, "root");
  EXPECT_EQ(classes_.rates,
            (std::map<uint32_t, uint64_t>{{kAgentMinorFirst, 200 * kMbit}}));
  EXPECT_EQ(classes_.matches[kAgentMinorFirst], (Match{"udp", 5001, 0}));
  EXPECT_EQ(classes_.dests[kAgentMinorFirst].size(), 2u);  // n2's addresses
  EXPECT_EQ(InEtcd(), 1u);
  // A second takes the next class.
  auto r2 = agent_->Reserve(kRoot, "10.0.0.2", 100 * kMbit, "");
  ASSERT_TRUE(r2.ok()) << r2.error();
  EXPECT_EQ(classes_.rates.count(kAgentMinorFirst + 1), 1u);
  // The cluster's rule: 800 Mbit/s reservable on n1's NIC.
  auto full = agent_->Reserve(kRoot, "n2", 600 * kMbit, "");
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.error().find("is full"), std::string::npos) << full.error();
  EXPECT_EQ(classes_.rates.size(), 2u);

  auto rel = agent_->Release(kRoot, r.value().id);
  ASSERT_TRUE(rel.ok()) << rel.error();
  EXPECT_EQ(classes_.rates.count(kAgentMinorFirst), 0u);
  EXPECT_EQ(InEtcd(), 1u);
  EXPECT_EQ(agent_->List().size(), 1u);
  EXPECT_FALSE(agent_->Release(kRoot, r.value().id).ok());
  const AgentCounters& c = agent_->counters();
  EXPECT_EQ(c.admitted, 2u);
  EXPECT_EQ(c.refused, 1u);
  EXPECT_EQ(c.released, 1u);
}

// `nft flush ruleset` (nftables.service's reload) takes a reservation's
// chain away, and with it the mark its filter matches: the owner's traffic
// would be best effort for as long as the reservation lasts.  A class
// deleted by hand is the same.  The next check (every 5 s) installs each
// again, as it was admitted, and says so.
TEST_F(AgentTest, AReservationThatLostAPartIsInstalledAgain) {
  auto r = agent_->Reserve(kAlice, "n2", 100 * kMbit, "proto=udp,dport=5001");
  ASSERT_TRUE(r.ok()) << r.error();
  auto r2 = agent_->Reserve(kRoot, "n2", 50 * kMbit, "");
  ASSERT_TRUE(r2.ok()) << r2.error();
  ASSERT_EQ(classes_.installs, 2u);
  classes_.incomplete.insert(kAgentMinorFirst);  // its chain was flushed
  classes_.rates.erase(kAgentMinorFirst + 1);    // tc class del by hand
  classes_.matches.clear();
  // A second at a time, so that the lease (4 s) is renewed meanwhile.
  const auto check = [this] {
    for (uint64_t t = 0; t < kJobCheckNs; t += kSec) {
      now_ += kSec;
      agent_->Tick(now_);
    }
  };
  check();
  EXPECT_EQ(classes_.installs, 4u);
  EXPECT_TRUE(classes_.incomplete.empty());
  EXPECT_EQ(classes_.rates,
            (std::map<uint32_t, uint64_t>{{kAgentMinorFirst, 100 * kMbit},
                                          {kAgentMinorFirst + 1, 50 * kMbit}}));
  EXPECT_EQ(classes_.matches[kAgentMinorFirst], (Match{"udp", 5001, 0}));
  EXPECT_EQ(classes_.owners[kAgentMinorFirst], kAlice.uid);
  EXPECT_EQ(std::count_if(log_.begin(), log_.end(),
                          [](const std::string& l) {
                            return l.find("installed class") !=
                                       std::string::npos &&
                                   l.find("again") != std::string::npos;
                          }),
            2);
  // Whole again: the next check leaves them alone.
  check();
  EXPECT_EQ(classes_.installs, 4u);
}

TEST_F(AgentTest, BadRequestsChangeNothing) {
  EXPECT_EQ(agent_->Reserve(kRoot, "n9", kMbit, "").error(),
            "no host named or addressed \"n9\" in the topology");
  EXPECT_EQ(agent_->Reserve(kRoot, "n2", 0, "").error(),
            "a rate of 0 reserves nothing");
  EXPECT_NE(agent_->Reserve(kRoot, "n2", kMbit, "dport=1")
                .error()
                .find("needs proto"),
            std::string::npos);
  EXPECT_FALSE(agent_->Reserve(kRoot, "n1", kMbit, "").ok());  // itself
  EXPECT_TRUE(classes_.rates.empty());
  EXPECT_EQ(InEtcd(), 0u);
}

TEST_F(AgentTest, UsersGetTheirAllowanceAndNoMore) {
  // alice: her own rule (300) beats her group's (100).
  auto a1 = agent_->Reserve(kAlice, "n2", 200 * kMbit, "");
  ASSERT_TRUE(a1.ok()) << a1.error();
  // The class is installed for alice's sockets.
  EXPECT_EQ(classes_.owners[kAgentMinorFirst], kAlice.uid);
  auto a2 = agent_->Reserve(kAlice, "n2", 150 * kMbit, "");
  ASSERT_FALSE(a2.ok());
  EXPECT_EQ(a2.error(),
            "user alice may hold 300mbit of reservations in the cluster; holds "
            "200mbit, asks 150mbit more");
  // carol: her group's 100.
  EXPECT_TRUE(agent_->Reserve(kCarol, "n2", 100 * kMbit, "").ok());
  EXPECT_FALSE(agent_->Reserve(kCarol, "n2", kMbit, "").ok());
  // bob: no rule.
  EXPECT_EQ(agent_->Reserve(kBob, "n2", kMbit, "").error(),
            "user bob may not reserve: no [[admission.allow]] names the user "
            "or one of their groups");
  // Only the owner or root releases or changes.
  EXPECT_EQ(agent_->Release(kBob, a1.value().id).error(),
            "reservation " + a1.value().id +
                " belongs to alice; only they or root may change or release "
                "it");
  EXPECT_FALSE(agent_->Change(kCarol, a1.value().id, kMbit).ok());
  EXPECT_EQ(InEtcd(), 2u);
  EXPECT_TRUE(agent_->Release(kRoot, a1.value().id).ok());
  EXPECT_EQ(InEtcd(), 1u);
}

TEST_F(AgentTest, ChangesAreAdmittedAndApplied) {
  auto r = agent_->Reserve(kAlice, "n2", 100 * kMbit, "");
  ASSERT_TRUE(r.ok()) << r.error();
  const std::string id = r.value().id;
  auto up = agent_->Change(kAlice, id, 300 * kMbit);
  ASSERT_TRUE(up.ok()) << up.error();
  EXPECT_EQ(classes_.rates[kAgentMinorFirst], 300 * kMbit);
  EXPECT_FALSE(agent_->Change(kAlice, id, 301 * kMbit).ok());  // allowance
  auto down = agent_->Change(kAlice, id, 50 * kMbit);
  ASSERT_TRUE(down.ok()) << down.error();
  EXPECT_EQ(classes_.rates[kAgentMinorFirst], 50 * kMbit);
  // Beyond the cluster's capacity (root has no allowance): refused, kept.
  auto big = agent_->Change(kRoot, id, 900 * kMbit);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().find("is full"), std::string::npos) << big.error();
  EXPECT_EQ(classes_.rates[kAgentMinorFirst], 50 * kMbit);
  // The class cannot follow: etcd keeps the old rate too.
  classes_.fail_set = true;
  EXPECT_FALSE(agent_->Change(kRoot, id, 60 * kMbit).ok());
  auto l = admission_->List();
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l.value().size(), 1u);
  EXPECT_EQ(l.value()[0].rate, 50 * kMbit);
}

TEST_F(AgentTest, AClassThatCannotBeInstalledIsReleased) {
  classes_.fail_install = true;
  auto r = agent_->Reserve(kRoot, "n2", kMbit, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(),
            "admitted, but the reserved class could not be installed: tc: no "
            "parq qdisc; the reservation was released");
  EXPECT_EQ(InEtcd(), 0u);
  EXPECT_TRUE(agent_->List().empty());
}

// etcd stops answering: the classes stay while the lease may still live,
// and go at 3/4 of its TTL (4 s: 3 s) after the last renewal, before etcd
// could give their capacity to another host.
TEST_F(AgentTest, WithoutEtcdTheClassesAreDemotedBeforeTheLeaseCouldExpire) {
  ASSERT_TRUE(agent_->Reserve(kRoot, "n2", 100 * kMbit, "").ok());
  const uint64_t renewed = now_;
  down_ = true;
  agent_->Tick(renewed + kSec);  // the keepalive fails
  EXPECT_EQ(agent_->counters().keepalive_errors, 1u);
  EXPECT_EQ(classes_.rates.size(), 1u);
  agent_->Tick(renewed + 3 * kSec - 1);
  EXPECT_EQ(classes_.rates.size(), 1u);
  EXPECT_LE(agent_->NextTick(), renewed + 3 * kSec);
  agent_->Tick(renewed + 3 * kSec);
  EXPECT_TRUE(classes_.rates.empty());
  EXPECT_TRUE(agent_->List().empty());
  EXPECT_FALSE(agent_->leased());
  EXPECT_EQ(agent_->counters().demotions, 1u);
  EXPECT_EQ(agent_->counters().demoted, 1u);
  // No lease, no admission; the message says why.
  auto r = agent_->Reserve(kRoot, "n2", kMbit, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("no lease with etcd"), std::string::npos)
      << r.error();
  // etcd is back: the demoted reservation is still there, on the lease
  // parqd gave up (etcd never saw it lapse).  A new lease, the old one
  // revoked, admissions again.
  down_ = false;
  EXPECT_EQ(InEtcd(), 1u);
  agent_->Tick(renewed + 4 * kSec);
  ASSERT_TRUE(agent_->leased());
  EXPECT_EQ(InEtcd(), 0u);
  EXPECT_TRUE(agent_->Reserve(kRoot, "n2", kMbit, "").ok());
  EXPECT_EQ(InEtcd(), 1u);
}

// etcd stops answering and each call waits its whole timeout (2 s, half
// the TTL): no call may hold the classes past 3/4 of the TTL after the last
// renewal.  The keepalive at TTL / 4 is cut at that deadline and the
// classes go then; before the deadline, a request is cut there too.
TEST_F(AgentTest, ACallEtcdDoesNotAnswerEndsByTheDeadline) {
  ASSERT_TRUE(agent_->Reserve(kRoot, "n2", 100 * kMbit, "").ok());
  const uint64_t deadline = now_ + 3 * kSec;
  silent_ = true;
  now_ += kSec;
  agent_->Tick(now_);  // the keepalive: it would have taken 2 s
  EXPECT_EQ(now_, deadline);
  EXPECT_TRUE(classes_.rates.empty());
  EXPECT_EQ(agent_->counters().demotions, 1u);
  // Without a lease there is no deadline, and no request reaches etcd.
  auto r = agent_->Reserve(kRoot, "n2", kMbit, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(now_, deadline);
}

TEST_F(AgentTest, ARequestEtcdDoesNotAnswerEndsByTheDeadline) {
  ASSERT_TRUE(agent_->Reserve(kRoot, "n2", 100 * kMbit, "").ok());
  const uint64_t deadline = now_ + 3 * kSec;
  silent_ = true;
  now_ += 2500 * kMs;
  // Its first call gets the half second left, not 2 s.
  auto r = agent_->Reserve(kRoot, "n2", kMbit, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(now_, deadline);
  // The next one calls nothing.
  r = agent_->Reserve(kRoot, "n2", kMbit, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("no time left before the deadline"),
            std::string::npos)
      << r.error();
  EXPECT_EQ(now_, deadline);
  ASSERT_LE(agent_->NextTick(), now_);
  agent_->Tick(now_);
  EXPECT_TRUE(classes_.rates.empty());
}

TEST_F(QuorumAgentTest, OneMemberDownIsNothingTwoDownDemote) {
  ASSERT_TRUE(agent_->Reserve(kRoot, "n2", 100 * kMbit, "").ok());
  cluster_.Stop(0, SIGKILL);  // the member the client asks first
  ASSERT_TRUE(TickUntil(
      [&] { return agent_->Reserve(kRoot, "n2", 100 * kMbit, "").ok(); }, 15))
      << (log_.empty() ? "" : log_.back());
  EXPECT_EQ(agent_->counters().demotions, 0u);
  EXPECT_EQ(classes_.rates.size(), 2u);

  cluster_.Stop(1, SIGKILL);  // no quorum
  ASSERT_TRUE(TickUntil([&] { return !agent_->leased(); }, 2 * ttl_s_))
      << (log_.empty() ? "" : log_.back());
  EXPECT_TRUE(classes_.rates.empty());
  EXPECT_EQ(agent_->counters().demotions, 1u);
  EXPECT_EQ(agent_->counters().demoted, 2u);
  auto r = agent_->Reserve(kRoot, "n2", kMbit, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("no lease with etcd"), std::string::npos)
      << r.error();

  std::string why;
  ASSERT_TRUE(cluster_.Restart(0, why)) << why;
  ASSERT_TRUE(cluster_.Restart(1, why)) << why;
  ASSERT_TRUE(TickUntil([&] { return agent_->leased(); }, 15))
      << (log_.empty() ? "" : log_.back());
  // The two demoted reservations went with the revoked lease.
  EXPECT_EQ(InEtcd(), 0u);
  EXPECT_TRUE(agent_->Reserve(kRoot, "n2", 100 * kMbit, "").ok());
  EXPECT_EQ(InEtcd(), 1u);
}

TEST_F(AgentTest, AnExpiredLeaseDemotes) {
  ASSERT_TRUE(agent_->Reserve(kRoot, "n2", 100 * kMbit, "").ok());
  ASSERT_TRUE(etcd_->LeaseRevoke(agent_->lease()).ok());  // as if expired
  EXPECT_EQ(InEtcd(), 0u);
  agent_->Tick(now_ + kSec);  // the renewal finds no lease
  EXPECT_TRUE(classes_.rates.empty());
  EXPECT_FALSE(agent_->leased());
  EXPECT_EQ(agent_->counters().demotions, 1u);
}

TEST_F(AgentTest, StopFreesTheCapacityAtOnce) {
  ASSERT_TRUE(agent_->Reserve(kRoot, "n2", 100 * kMbit, "").ok());
  ASSERT_TRUE(agent_->Reserve(kAlice, "n2", 100 * kMbit, "").ok());
  agent_->Stop();
  EXPECT_TRUE(classes_.rates.empty());
  EXPECT_EQ(InEtcd(), 0u);
}

// A user's reservation is bound to the job the asking process runs in, so
// that it ends with the job: when parqd cannot read that process's cgroup
// (it ended before its answer, or /proc is hidden from parqd), a user's
// request is refused rather than taken as made outside any job.  Root's
// is not.
TEST_F(AgentTest, AnAskerWhoseJobCannotBeReadIsRefused) {
  const std::string req = R"({"op":"reserve","to":"n2","rate":"10mbit"})";
  json r = json::parse(
      HandleAdmissionRequest(*agent_, kAlice, req, nullptr, std::nullopt));
  EXPECT_FALSE(r["ok"].get<bool>()) << r.dump();
  EXPECT_NE(r["error"].get<std::string>().find("cannot tell which Slurm job"),
            std::string::npos)
      << r.dump();
  r = json::parse(
      HandleAdmissionRequest(*agent_, kRoot, req, nullptr, std::nullopt));
  EXPECT_TRUE(r["ok"].get<bool>()) << r.dump();
  // A process that is gone has no cgroup to read; this one's is read.
  EXPECT_EQ(SlurmJobOfPid(-1), std::nullopt);
  EXPECT_EQ(SlurmJobOfPid(getpid()), std::optional<std::string>(""));
}

TEST_F(AgentTest, JsonRequests) {
  auto ask = [&](const Requester& who, const std::string& text) {
    return json::parse(HandleAdmissionRequest(*agent_, who, text));
  };
  json r = ask(kAlice, R"({"op":"reserve","to":"n2","rate":"100mbit",)"
                       R"("match":"proto=tcp,dport=22"})");
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  const std::string id = r["reservation"]["id"];
  EXPECT_EQ(r["reservation"]["rate_bps"], 100 * kMbit);
  EXPECT_EQ(r["reservation"]["owner"], "alice");
  EXPECT_EQ(r["reservation"]["match"], "proto=tcp,dport=22");
  r = ask(kAlice, R"({"op":"change","id":")" + id + R"(","rate":200000000})");
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(r["reservation"]["rate_bps"], 200 * kMbit);
  r = ask(kBob, R"({"op":"list"})");
  ASSERT_EQ(r["reservations"].size(), 1u);
  r = ask(kBob, R"({"op":"release","id":")" + id + "\"}");
  EXPECT_FALSE(r["ok"].get<bool>());
  r = ask(kAlice, R"({"op":"release","id":")" + id + "\"}");
  EXPECT_TRUE(r["ok"].get<bool>()) << r.dump();

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"not json", "the request is not a JSON object"},
      {"[1]", "the request is not a JSON object"},
      {R"({"rate":"1mbit"})", "the request has no \"op\""},
      {R"({"op":7})", "the request has no \"op\""},
      {R"({"op":"grant"})",
       "unknown \"op\" \"grant\"; the ops are reserve, change, release, list, "
       "incoming, join, leave and job"},
      {R"({"op":"reserve","to":"n2"})", "\"reserve\" needs \"rate\""},
      {R"({"op":"reserve","rate":"1mbit"})",
       "\"reserve\" needs \"to\": the destination host"},
      {R"({"op":"reserve","to":"n2","rate":true})",
       "\"rate\" must be a rate such as \"100mbit\" or bits/s as a number"},
      {R"({"op":"change","rate":"1mbit"})", "\"change\" needs \"id\""},
      {R"({"op":"release"})",
       "\"release\" needs \"id\", or \"job\" for a job's reservations"},
  };
  for (const auto& [req, why] : bad) {
    r = ask(kRoot, req);
    EXPECT_FALSE(r["ok"].get<bool>()) << req;
    EXPECT_EQ(r["error"], why) << req;
  }
  EXPECT_EQ(InEtcd(), 0u);
}

// Over the socket: the requester is the peer's uid (this process's).
TEST_F(AgentTest, TheSocketAnswersWithThePeersIdentity) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("parqd-adm-" + std::to_string(getpid())))
                               .string();
  auto s = AdmissionServer::Open(path);
  ASSERT_TRUE(s.ok()) << s.error();
  Result<json, AdmissionError> reply = Err{AdmissionError{}};
  ServeWhile(s.value(), [&] {
    reply = AdmissionCall(
        path, {{"op", "reserve"}, {"to", "n2"}, {"rate", "1mbit"}}, 10000);
  });
  ASSERT_TRUE(reply.ok()) << reply.error().why;
  ASSERT_TRUE(reply.value()["ok"].get<bool>()) << reply.value().dump();
  EXPECT_EQ(reply.value()["reservation"]["owner"],
            RequesterOf(getuid(), getgid()).user);
  // No parqd at a path: a sentence.
  auto none = AdmissionCall(path + ".none", {{"op", "list"}}, 1000);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().why.find("cannot reach parqd's admission socket"),
            std::string::npos);
}

// parqctl reserve, reservations, change and release, through the socket.
TEST_F(AgentTest, ParqctlAsksOverTheSocket) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("parqd-ctl-" + std::to_string(getpid())))
                               .string();
  auto s = AdmissionServer::Open(path);
  ASSERT_TRUE(s.ok()) << s.error();
  auto run = [&](CtlArgs a) { return Ctl(s.value(), path, std::move(a)); };
  CtlArgs a;
  a.cmd = CtlArgs::Cmd::kReserve;
  a.to = "n2";
  a.rate = 100 * kMbit;
  a.match = "proto=udp,dport=9";
  auto [rc, out, err] = run(a);
  ASSERT_EQ(rc, 0) << err;
  const std::string id = out.substr(0, out.size() - 1);
  EXPECT_EQ(id.rfind("n1-", 0), 0u) << out;
  a.cmd = CtlArgs::Cmd::kReservations;
  std::tie(rc, out, err) = run(a);
  EXPECT_EQ(out, id + ": n1 -> n2 100mbit, owner " +
                     RequesterOf(getuid(), getgid()).user +
                     ", match "
                     "proto=udp,dport=9\n  host/n1/send\n  link/n1/s1\n  "
                     "link/s1/n2\n  host/n2/receive\n");
  a.cmd = CtlArgs::Cmd::kChange;
  a.id = id;
  a.rate = 900 * kMbit;
  std::tie(rc, out, err) = run(a);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find("is full"), std::string::npos) << err;
  a.rate = 200 * kMbit;
  std::tie(rc, out, err) = run(a);
  EXPECT_EQ(out, id + ": 200mbit\n");
  a.cmd = CtlArgs::Cmd::kRelease;
  a.json = true;
  std::tie(rc, out, err) = run(a);
  ASSERT_EQ(rc, 0) << err;
  EXPECT_EQ(json::parse(out)["reservation"]["id"], id);
  EXPECT_TRUE(agent_->List().empty());
  EXPECT_EQ(InEtcd(), 0u);
}

// parqctl reservations --incoming: the destination's view over the socket
// (here n2's, served by n1's socket: what matters is what it answers).
TEST_F(AgentTest, ParqctlShowsTheReservationsTowardTheHost) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("parqd-in-" + std::to_string(getpid())))
                               .string();
  auto s = AdmissionServer::Open(path);
  ASSERT_TRUE(s.ok()) << s.error();
  EtcdClient watch_etcd({server->endpoint()}, 2s, CurlPost());
  IncomingReservations incoming("n2", prefix_, watch_etcd, {server->endpoint()},
                                CurlStream(), 2s,
                                [](int, const std::string&) {});
  std::atomic<bool> stop{false};
  std::thread watch([&] { incoming.Run(stop); });
  auto run = [&](CtlArgs a) { return Ctl(s.value(), path, std::move(a)); };
  CtlArgs a;
  a.cmd = CtlArgs::Cmd::kReservations;
  a.incoming = true;
  // Before set_incoming(): this parqd keeps no such view.
  auto [rc, out, err] = run(a);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.find("does not watch"), std::string::npos) << err;
  s.value().set_incoming(&incoming);
  auto r = agent_->Reserve(kRoot, "n2", 100 * kMbit, "proto=tcp");
  ASSERT_TRUE(r.ok()) << r.error();
  const std::string want = r.value().id +
                           ": n1 -> n2 100mbit, owner root, match proto=tcp\n"
                           "  host/n1/send\n  link/n1/s1\n  link/s1/n2\n"
                           "  host/n2/receive\n";
  for (int i = 0; i < 100 && out != want; i++) {
    std::this_thread::sleep_for(50ms);
    std::tie(rc, out, err) = run(a);
  }
  EXPECT_EQ(rc, 0) << err;
  EXPECT_EQ(out, want);
  EXPECT_EQ(err, "");
  // This host's own list is another thing: n1's reservations.
  a.incoming = false;
  a.json = true;
  std::tie(rc, out, err) = run(a);
  EXPECT_EQ(json::parse(out).size(), 1u);
  stop = true;
  watch.join();
}

// libparq (parq.h), as an application calls it, through the socket.
class LibparqTest : public AgentTest {
 protected:
  void SetUp() override {
    AgentTest::SetUp();
    path_ = (std::filesystem::temp_directory_path() /
             ("parqd-lib-" + std::to_string(getpid())))
                .string();
    auto s = AdmissionServer::Open(path_);
    ASSERT_TRUE(s.ok()) << s.error();
    server_.emplace(std::move(s.value()));
    p_ = parq_open(path_.c_str());
    ASSERT_NE(p_, nullptr);
  }
  void TearDown() override {
    parq_close(p_);
    server_.reset();
    AgentTest::TearDown();
  }
  // `call` on a thread while the socket is served; its status.
  template <typename F>
  int Call(F call) {
    int rc = 1;
    ServeWhile(*server_, [&] { rc = call(); });
    return rc;
  }

  std::string path_;
  std::optional<AdmissionServer> server_;
  parq_ctx* p_ = nullptr;
};

TEST_F(LibparqTest, ReservesChangesQueriesListsAndReleases) {
  const std::string me = RequesterOf(getuid(), getgid()).user;
  parq_reservation r{};
  ASSERT_EQ(Call([&] {
              return parq_reserve(p_, "n2", 100 * kMbit, "proto=udp,dport=9",
                                  &r);
            }),
            PARQ_OK)
      << parq_error(p_);
  EXPECT_STREQ(parq_error(p_), "");
  EXPECT_EQ(std::string(r.id).rfind("n1-", 0), 0u) << r.id;
  EXPECT_STREQ(r.from, "n1");
  EXPECT_STREQ(r.to, "n2");
  EXPECT_EQ(r.rate_bps, 100 * kMbit);
  EXPECT_STREQ(r.match, "proto=udp,dport=9");
  EXPECT_EQ(r.owner, me);
  EXPECT_EQ(classes_.rates.size(), 1u);
  EXPECT_EQ(InEtcd(), 1u);

  // Beyond the link: refused, with the link named; nothing changes.
  parq_reservation c{};
  EXPECT_EQ(Call([&] { return parq_change(p_, r.id, 900 * kMbit, &c); }),
            PARQ_ERR_DENIED);
  EXPECT_NE(std::string(parq_error(p_)).find("is full"), std::string::npos)
      << parq_error(p_);
  ASSERT_EQ(Call([&] { return parq_change(p_, r.id, 200 * kMbit, &c); }),
            PARQ_OK)
      << parq_error(p_);
  EXPECT_EQ(c.rate_bps, 200 * kMbit);
  EXPECT_EQ(classes_.rates.begin()->second, 200 * kMbit);

  parq_reservation q{};
  ASSERT_EQ(Call([&] { return parq_query(p_, r.id, &q); }), PARQ_OK)
      << parq_error(p_);
  EXPECT_EQ(q.rate_bps, 200 * kMbit);
  EXPECT_EQ(Call([&] { return parq_query(p_, "n1-0000000000000000", &q); }),
            PARQ_ERR_DENIED);

  // A second one; a list with room for one says how many there are.
  parq_reservation r2{};
  ASSERT_EQ(Call([&] { return parq_reserve(p_, "10.0.0.2", 1, nullptr, &r2); }),
            PARQ_OK)
      << parq_error(p_);
  EXPECT_STREQ(r2.match, "");
  parq_reservation all[2]{};
  size_t n = 0;
  EXPECT_EQ(Call([&] { return parq_list(p_, all, 1, &n); }), PARQ_ERR_RANGE);
  EXPECT_EQ(n, 2u);
  ASSERT_EQ(Call([&] { return parq_list(p_, all, 2, &n); }), PARQ_OK);
  ASSERT_EQ(n, 2u);
  std::set<std::string> ids = {all[0].id, all[1].id};
  EXPECT_EQ(ids, (std::set<std::string>{r.id, r2.id}));

  for (const auto* id : {r.id, r2.id})
    EXPECT_EQ(Call([&] { return parq_release(p_, id); }), PARQ_OK)
        << parq_error(p_);
  EXPECT_EQ(Call([&] { return parq_release(p_, r.id); }), PARQ_ERR_DENIED);
  EXPECT_EQ(Call([&] { return parq_list(p_, nullptr, 0, &n); }), PARQ_OK);
  EXPECT_EQ(n, 0u);
  EXPECT_TRUE(classes_.rates.empty());
  EXPECT_EQ(InEtcd(), 0u);
}

// parqd's refusals come back as PARQ_ERR_DENIED with its sentence.
TEST_F(LibparqTest, RefusalsCarryParqdsReason) {
  parq_reservation r{};
  EXPECT_EQ(Call([&] { return parq_reserve(p_, "n9", kMbit, "", &r); }),
            PARQ_ERR_DENIED);
  EXPECT_NE(std::string(parq_error(p_)).find("n9"), std::string::npos)
      << parq_error(p_);
  EXPECT_EQ(
      Call([&] { return parq_reserve(p_, "n2", kMbit, "proto=icmp", &r); }),
      PARQ_ERR_DENIED);
  EXPECT_NE(std::string(parq_error(p_)).find("icmp"), std::string::npos)
      << parq_error(p_);
  EXPECT_EQ(Call([&] { return parq_reserve(p_, "n2", 900 * kMbit, "", &r); }),
            PARQ_ERR_DENIED);
  EXPECT_NE(std::string(parq_error(p_)).find("is full"), std::string::npos)
      << parq_error(p_);
  EXPECT_EQ(InEtcd(), 0u);
  EXPECT_TRUE(classes_.rates.empty());
}

// The bounds of adaptation through libparq: given to parqd, and bounds
// that do not hold the rate refused before anything is asked.
TEST_F(LibparqTest, ReservesWithTheBoundsOfItsAdaptation) {
  parq_reservation r{};
  ASSERT_EQ(Call([&] {
              return parq_reserve_adaptive(p_, "n2", 40 * kMbit, 10 * kMbit,
                                           60 * kMbit, "", &r);
            }),
            PARQ_OK)
      << parq_error(p_);
  const auto held = agent_->Holdings();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].min, 10 * kMbit);
  EXPECT_EQ(held[0].max, 60 * kMbit);
  EXPECT_EQ(r.rate_bps, 40 * kMbit);
  EXPECT_EQ(parq_reserve_adaptive(p_, "n2", 40 * kMbit, 50 * kMbit, 0, "", &r),
            PARQ_ERR_INVALID);
  EXPECT_EQ(parq_reserve_adaptive(p_, "n2", 40 * kMbit, 0, 30 * kMbit, "", &r),
            PARQ_ERR_INVALID);
  EXPECT_EQ(InEtcd(), 1u);
}

// A job admitted as a whole through libparq: n1 leads it, n2's consent is
// written as n2's parqd would.
TEST_F(LibparqTest, JobsJoinReserveChangeQueryAndRelease) {
  const std::string me = RequesterOf(getuid(), getgid()).user;
  const char* hosts[] = {"n1", "n2"};
  parq_job j{};
  EXPECT_EQ(parq_job_reserve(p_, "j", hosts, 1, kMbit, nullptr, &j),
            PARQ_ERR_INVALID);
  EXPECT_EQ(parq_job_join(p_, "j", "", 0), PARQ_ERR_INVALID);
  ASSERT_EQ(Call([&] { return parq_job_join(p_, "j", "n1", 0); }), PARQ_OK)
      << parq_error(p_);
  EXPECT_EQ(
      Call([&] { return parq_job_reserve(p_, "j", hosts, 2, kMbit, "", &j); }),
      PARQ_ERR_DENIED);
  EXPECT_EQ(std::string(parq_error(p_)),
            "job j: 1 of its 2 hosts have not joined it (of n1, for " + me +
                ", at 1mbit a flow): n2");
  auto n2_lease = etcd_->LeaseGrant(60);
  ASSERT_TRUE(n2_lease.ok()) << n2_lease.error();
  ASSERT_TRUE(
      admission_->Join({"n2", "j", "n1", me}, n2_lease.value().id).ok());
  ASSERT_EQ(Call([&] {
              return parq_job_reserve(p_, "j", hosts, 2, 100 * kMbit,
                                      "proto=udp", &j);
            }),
            PARQ_OK)
      << parq_error(p_);
  EXPECT_STREQ(j.name, "j");
  EXPECT_STREQ(j.leader, "n1");
  EXPECT_EQ(j.owner, me);
  EXPECT_EQ(j.rate_bps, 100 * kMbit);
  EXPECT_EQ(j.flows, 2u);
  EXPECT_EQ(j.hosts, 2u);
  EXPECT_EQ(j.joined, 2u);
  ASSERT_EQ(classes_.rates.size(), 1u);
  EXPECT_EQ(classes_.matches.begin()->second.proto, "udp");
  ASSERT_EQ(Call([&] { return parq_job_change(p_, "j", 200 * kMbit, &j); }),
            PARQ_OK)
      << parq_error(p_);
  EXPECT_EQ(classes_.rates.begin()->second, 200 * kMbit);
  parq_job q{};
  ASSERT_EQ(Call([&] { return parq_job_query(p_, "j", &q); }), PARQ_OK)
      << parq_error(p_);
  EXPECT_EQ(q.rate_bps, 200 * kMbit);
  ASSERT_EQ(Call([&] { return parq_job_release(p_, "j"); }), PARQ_OK)
      << parq_error(p_);
  EXPECT_TRUE(classes_.rates.empty());
  EXPECT_EQ(Call([&] { return parq_job_query(p_, "j", &q); }), PARQ_ERR_DENIED);
  EXPECT_STREQ(parq_error(p_), "no job j is admitted");
}

// The example program (libparq/examples/parq-reserve.c) end to end.
TEST_F(LibparqTest, TheExampleReservesChangesAndReleases) {
  const std::string cmd = "PARQ_ADMISSION_SOCKET=" + path_ + " " +
                          PARQ_RESERVE_EXAMPLE +
                          " n2 50000000 proto=tcp,dport=80 0 60000000 2>&1";
  std::string out;
  int status = -1;
  ServeWhile(*server_, [&] {
    FILE* f = popen(cmd.c_str(), "r");
    if (!f)
      return;
    char buf[512];
    while (fgets(buf, sizeof(buf), f))
      out += buf;
    status = pclose(f);
  });
  EXPECT_EQ(status, 0) << out;
  for (const char* line :
       {"reserved n1-", "n1 -> n2 50000000 bit/s, match \"proto=tcp,dport=80\"",
        "changed n1-", "n1 -> n2 60000000 bit/s", "held n1-", "released n1-"})
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  EXPECT_EQ(InEtcd(), 0u);
  EXPECT_TRUE(classes_.rates.empty());
}

// Bad arguments are refused before anything is asked (no parqd at all).
TEST(Libparq, BadArgumentsAskNothing) {
  EXPECT_EQ(parq_open(""), nullptr);
  EXPECT_EQ(parq_open(std::string(200, 'x').c_str()), nullptr);
  const std::string none = (std::filesystem::temp_directory_path() /
                            ("parqd-none-" + std::to_string(getpid())))
                               .string();
  parq_ctx* p = parq_open(none.c_str());
  ASSERT_NE(p, nullptr);
  parq_reservation r{};
  size_t n = 0;
  EXPECT_EQ(parq_reserve(p, nullptr, kMbit, "", &r), PARQ_ERR_INVALID);
  EXPECT_EQ(parq_reserve(p, "", kMbit, "", &r), PARQ_ERR_INVALID);
  EXPECT_EQ(parq_reserve(p, "n2", 0, "", &r), PARQ_ERR_INVALID);
  EXPECT_STREQ(parq_error(p), "a rate of 0 reserves nothing");
  EXPECT_EQ(parq_reserve(p, "n\xff", kMbit, "", &r), PARQ_ERR_INVALID);
  EXPECT_EQ(parq_change(p, "x", 0, &r), PARQ_ERR_INVALID);
  EXPECT_EQ(parq_change(p, nullptr, kMbit, &r), PARQ_ERR_INVALID);
  EXPECT_EQ(parq_release(p, ""), PARQ_ERR_INVALID);
  EXPECT_EQ(parq_query(p, "x", nullptr), PARQ_ERR_INVALID);
  EXPECT_EQ(parq_list(p, nullptr, 1, &n), PARQ_ERR_INVALID);
  EXPECT_EQ(parq_list(p, &r, 1, nullptr), PARQ_ERR_INVALID);
  EXPECT_EQ(parq_set_timeout(p, 0), PARQ_ERR_INVALID);
  EXPECT_EQ(parq_reserve(nullptr, "n2", kMbit, "", &r), PARQ_ERR_INVALID);
  // Well-formed, but nobody listens.
  EXPECT_EQ(parq_reserve(p, "n2", kMbit, "", &r), PARQ_ERR_UNREACHABLE);
  EXPECT_NE(std::string(parq_error(p))
                .find("cannot reach parqd's admission "
                      "socket " +
                      none),
            std::string::npos)
      << parq_error(p);
  EXPECT_STREQ(parq_status_name(PARQ_ERR_DENIED), "PARQ_ERR_DENIED");
  EXPECT_STREQ(parq_status_name(7), "unknown parq status");
  parq_close(p);
  parq_close(nullptr);
}

// Answers this library cannot read, from a server that is not parqd, and
// one that never answers.
TEST(Libparq, AnswersItCannotReadAreErrors) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("parqd-fake-" + std::to_string(getpid())))
                               .string();
  unlink(path.c_str());
  const int l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  ASSERT_GE(l, 0);
  sockaddr_un a;
  ASSERT_TRUE(UnixSockaddr(path, &a));
  ASSERT_EQ(bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(l, 8), 0);
  const std::vector<std::string> answers = {
      "not json",
      R"({"result": 1})",
      R"({"ok": true})",
      R"({"ok": true, "reservation": {"id": "x"}})",
      R"({"ok": true, "reservation": {"id": "x", "from": "a", "to": "b",
          "rate_bps": -1, "match": "", "owner": "o"}})",
      R"({"ok": true, "reservation": {"id": ")" + std::string(200, 'x') +
          R"(", "from": "a", "to": "b", "rate_bps": 1, "match": "",
          "owner": "o"}})",
      R"({"ok": false})",
      "",  // no answer at all
  };
  std::thread server([&] {
    for (const std::string& answer : answers) {
      const int c = accept(l, nullptr, nullptr);
      if (c < 0)
        return;
      char buf[4096];
      (void)!recv(c, buf, sizeof(buf), 0);
      if (!answer.empty())
        (void)!send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
      else
        std::this_thread::sleep_for(700ms);
      close(c);
    }
  });
  parq_ctx* p = parq_open(path.c_str());
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(parq_set_timeout(p, 300), PARQ_OK);
  parq_reservation r{};
  std::vector<std::pair<int, std::string>> got;
  for (size_t i = 0; i < answers.size(); i++) {
    const int rc = parq_reserve(p, "n2", kMbit, "", &r);
    got.emplace_back(rc, parq_error(p));
  }
  server.join();
  close(l);
  unlink(path.c_str());
  parq_close(p);
  const std::vector<std::pair<int, std::string>> want = {
      {PARQ_ERR_REPLY, "parqd's answer on " + path + " is not JSON"},
      {PARQ_ERR_REPLY, "parqd's answer has no \"ok\""},
      {PARQ_ERR_REPLY,
       "parqd's answer holds no reservation this library reads"},
      {PARQ_ERR_REPLY,
       "parqd's answer holds no reservation this library reads"},
      {PARQ_ERR_REPLY,
       "parqd's answer holds no reservation this library reads"},
      {PARQ_ERR_REPLY,
       "parqd's answer holds no reservation this library reads"},
      {PARQ_ERR_DENIED, "parqd refused without a reason"},
      {PARQ_ERR_UNREACHABLE, "parqd did not answer within 300 ms on " + path},
  };
  EXPECT_EQ(got, want);
}

}  // namespace
