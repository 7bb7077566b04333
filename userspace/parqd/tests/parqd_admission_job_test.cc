// SPDX-License-Identifier: GPL-2.0
//
// Tests of jobs admitted as a whole (cluster_jobs.cc) against a real etcd
// (etcd_server.h): a job is admitted for all its flows or none, and what
// it holds counts against every later reservation and job; it needs every
// host's consent, and a host can neither charge another's NIC by naming
// it in a job nor have a consent given after the job count; a job and a
// reservation that race are never both admitted beyond a link's capacity;
// a job of 64 hosts (4 032 flows) is one transaction within etcd's
// default --max-txn-ops.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "admission/cluster_admission.h"
#include "admission/etcd.h"
#include "admission/topology.h"
#include "etcd_server.h"
#include "topology_text.h"

namespace {

using namespace parq::parqd;
using namespace std::chrono_literals;
using etcd_test::EtcdTest;
using etcd_test::server;
using test::TomlCable;
using test::TomlHost;
using test::TomlSwitch;

constexpr uint64_t kMbit = 1'000'000;

class JobTest : public EtcdTest {
 protected:
  // Two racks, every NIC 1gbit.
  void SetUp() override { Load(test::TwoRacks("1gbit")); }
  void Load(const std::string& text) {
    EtcdTest::SetUp();
    auto t = Topology::Parse(text, "test.toml");
    ASSERT_TRUE(t.ok()) << t.error();
    topo_ = std::move(t).value();
    auto l = Client().LeaseGrant(3600);
    ASSERT_TRUE(l.ok()) << l.error();
    lease_ = l.value().id;
  }
  // Each of `hosts` consents to job `name` of `leader` for alice.
  void JoinAll(ClusterAdmission& adm, const std::string& name,
               const std::string& leader,
               const std::vector<std::string>& hosts) {
    for (const std::string& h : hosts) {
      auto j = adm.Join({h, name, leader, "alice"}, lease_);
      ASSERT_TRUE(j.ok()) << j.error();
    }
  }
  JobRequest Job(const std::string& name, uint64_t rate,
                 std::vector<std::string> hosts = {"a1", "a2", "b1", "b2"}) {
    return {name, hosts[0], std::move(hosts), rate, "", "alice", std::nullopt};
  }
  uint64_t Reserved(ClusterAdmission& adm, const std::string& resource) {
    auto use = adm.Use();
    EXPECT_TRUE(use.ok()) << use.error();
    for (const ResourceUse& u : use.value())
      if (u.resource->id == resource)
        return u.reserved;
    ADD_FAILURE() << "no resource " << resource;
    return 0;
  }
  // Keys under `kind` (job/, member/, ...).
  size_t Keys(const std::string& kind) {
    const std::string pre = prefix_ + kind;
    auto r = Client().Range(pre, EtcdPrefixEnd(pre));
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() ? r.value().kvs.size() : 0;
  }
  ReservationRequest Flow(const char* from, const char* to, uint64_t rate) {
    return {from, to, rate, "", "alice", std::nullopt, ""};
  }

  Topology topo_;
  int64_t lease_ = 0;
};

// 4 hosts: 12 flows, 4 of them (a* -> b*) through tor1 -> tor2.
TEST_F(JobTest, AJobIsAdmittedWholeOrNotAtAll) {
  EtcdClient c = Client();
  ClusterAdmission adm(topo_, c, prefix_);
  JoinAll(adm, "job1", "a1", {"a1", "a2", "b1", "b2"});
  auto flow = adm.Reserve(Flow("a2", "b2", 500 * kMbit), lease_);
  ASSERT_TRUE(flow.ok()) << flow.error();
  // 4 x 100mbit more on tor1 -> tor2 would be 900mbit: refused whole.
  auto refused = adm.ReserveJob(Job("job1", 100 * kMbit), lease_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(),
            "job job1 (12 flows of 100mbit) is refused: link tor1 -> tor2 is "
            "full: capacity 1gbit, reservable 800mbit (80%), reserved "
            "500mbit, requested 400mbit");
  EXPECT_EQ(Keys("job/"), 0u);
  EXPECT_EQ(Reserved(adm, "host/a1/send"), 0u);

  ASSERT_TRUE(adm.Release(flow.value().id).ok());
  auto job = adm.ReserveJob(Job("job1", 100 * kMbit), lease_);
  ASSERT_TRUE(job.ok()) << job.error();
  EXPECT_EQ(job.value().flows(), 12u);
  EXPECT_EQ(job.value().joined.size(), 4u);
  EXPECT_EQ(Reserved(adm, "link/tor1/tor2"), 400 * kMbit);
  EXPECT_EQ(Reserved(adm, "host/a1/send"), 300 * kMbit);
  EXPECT_EQ(Reserved(adm, "host/b2/receive"), 300 * kMbit);
  EXPECT_EQ(Reserved(adm, "link/tor2/tor1"), 400 * kMbit);
  // What the job holds counts against a reservation...
  EXPECT_FALSE(adm.Reserve(Flow("a2", "b2", 400 * kMbit + 1), lease_).ok());
  // ... and against another job: its name is taken, and its flows would
  // go over.
  auto again = adm.ReserveJob(Job("job1", 1), lease_);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error(), "job job1 of a1 is admitted already");
  JoinAll(adm, "job2", "a2", {"a2", "b1"});
  JobRequest two = Job("job2", 400 * kMbit + 1, {"a2", "b1"});
  EXPECT_FALSE(adm.ReserveJob(two, lease_).ok());
  two.rate = 400 * kMbit;
  EXPECT_TRUE(adm.ReserveJob(two, lease_).ok());

  // A new rate is admitted the same way, its own charges left out.
  EXPECT_FALSE(adm.ChangeJob("a1", "job1", 100 * kMbit + 1).ok());
  auto down = adm.ChangeJob("a1", "job1", 50 * kMbit);
  ASSERT_TRUE(down.ok()) << down.error();
  EXPECT_EQ(Reserved(adm, "link/tor1/tor2"), 600 * kMbit);
  auto gone = adm.ReleaseJob("a1", "job1");
  ASSERT_TRUE(gone.ok()) << gone.error();
  EXPECT_EQ(gone.value().rate, 50 * kMbit);
  EXPECT_EQ(Reserved(adm, "link/tor1/tor2"), 400 * kMbit);
  EXPECT_FALSE(adm.ReleaseJob("a1", "job1").ok());
}

// A job is its leader's and its name: a record of the same name written
// by another host first neither blocks the job nor stands in for it.
TEST_F(JobTest, AnotherHostsRecordOfTheSameNameIsAnotherJob) {
  EtcdClient c = Client();
  ClusterAdmission adm(topo_, c, prefix_);
  ASSERT_TRUE(c.Put(prefix_ + "job/b2/job1",
                    R"({"name":"job1","leader":"b2","hosts":["b1","b2"],)"
                    R"("rate":1,"match":"","owner":"mallory"})",
                    lease_)
                  .ok());
  JoinAll(adm, "job1", "a1", {"a1", "a2"});
  auto job = adm.ReserveJob(Job("job1", 10 * kMbit, {"a1", "a2"}), lease_);
  ASSERT_TRUE(job.ok()) << job.error();
  auto up = adm.ChangeJob("a1", "job1", 20 * kMbit);
  ASSERT_TRUE(up.ok()) << up.error();
  EXPECT_EQ(up.value().leader, "a1");
  EXPECT_EQ(up.value().joined.size(), 2u);
  auto again = adm.ReserveJob(Job("job1", 1, {"a1", "a2"}), lease_);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error(), "job job1 of a1 is admitted already");
}

// A record under this host's consent key that is not a live consent (no
// lease, or not one) is replaced, not an error that repeats 64 times.
TEST_F(JobTest, JoiningReplacesWhatIsNotALiveConsent) {
  EtcdClient c = Client();
  ClusterAdmission adm(topo_, c, prefix_);
  ASSERT_TRUE(c.Put(prefix_ + "member/a1/j", "{}").ok());
  auto m = adm.Join({"a1", "j", "a1", "alice", 0}, lease_);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(adm.retries(), 0u);
  auto mine = adm.Memberships("a1");
  ASSERT_TRUE(mine.ok()) << mine.error();
  ASSERT_EQ(mine.value().size(), 1u);
  EXPECT_EQ(mine.value()[0].leader, "a1");
}

TEST_F(JobTest, BadInputChangesNothing) {
  EtcdClient c = Client();
  ClusterAdmission adm(topo_, c, prefix_);
  const auto error = [&](const JobRequest& r) {
    auto j = adm.ReserveJob(r, lease_);
    return j.ok() ? std::string("admitted") : j.error();
  };
  EXPECT_EQ(error(Job("a/b", 1)),
            "\"a/b\" cannot name a job: 1 to 63 letters, digits, '-', '_', "
            "'.'");
  EXPECT_EQ(error(Job("j", 1, {"a1", "zz"})),
            "no host named or addressed \"zz\" in the topology");
  EXPECT_EQ(error(Job("j", 1, {"a1", "10.0.1.1"})),
            "job j names host a1 twice");
  EXPECT_EQ(error(Job("j", 1, {"a1"})),
            "job j has fewer than two hosts: it has no flows to reserve");
  JobRequest r = Job("j", 1);
  r.leader = "zz";
  EXPECT_EQ(error(r), "the job's leader \"zz\" is not one of its hosts");
  EXPECT_EQ(error(Job("j", 0)), "a rate of 0 reserves nothing");
  EXPECT_FALSE(adm.Join({"a1", "j", "zz", "alice"}, lease_).ok());
  EXPECT_FALSE(adm.Join({"a1", "j", "a1", "alice"}, 0).ok());
  EXPECT_EQ(Keys(""), 0u);
}

// A job counts only the flows of hosts that agreed to carry it, for that
// leader and owner, before it was admitted: a host cannot take another's
// sending NIC by naming it.
TEST_F(JobTest, AJobNeedsEveryHostsConsent) {
  EtcdClient c = Client();
  ClusterAdmission adm(topo_, c, prefix_);
  JoinAll(adm, "job1", "a1", {"a1", "a2", "b1"});
  // b2 consents to a job of that name, but of another leader.
  ASSERT_TRUE(adm.Join({"b2", "job1", "b1", "alice"}, lease_).ok());
  auto refused = adm.ReserveJob(Job("job1", 100 * kMbit), lease_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(),
            "job job1: 1 of its 4 hosts have not joined it (of a1, for "
            "alice, at 100mbit a flow): b2");
  EXPECT_EQ(Keys("job/"), 0u);
  // A second consent of b2 to the name is refused until b2 leaves.
  auto twice = adm.Join({"b2", "job1", "a1", "alice"}, lease_);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error(),
            "b2 has joined job job1 of b1 for alice already; leave it first");
  EXPECT_TRUE(adm.Leave("b2", "job1").value());
  EXPECT_FALSE(adm.Leave("b2", "job1").value());
  JoinAll(adm, "job1", "a1", {"b2"});
  EXPECT_TRUE(adm.ReserveJob(Job("job1", 100 * kMbit), lease_).ok());
  // A host that leaves takes its flows out of the sums.
  ASSERT_TRUE(adm.Leave("b2", "job1").value());
  EXPECT_EQ(Reserved(adm, "host/b2/send"), 0u);
  EXPECT_EQ(Reserved(adm, "host/a1/send"), 300 * kMbit);
  auto jobs = adm.Jobs();
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  ASSERT_EQ(jobs.value().size(), 1u);
  EXPECT_EQ(jobs.value()[0].joined,
            (std::vector<std::string>{"a1", "a2", "b1"}));
  // Joining again after the job was admitted does not bring them back.
  JoinAll(adm, "job1", "a1", {"b2"});
  EXPECT_EQ(Reserved(adm, "host/b2/send"), 0u);
}

// The attacker is host a1, writing under its own name what its etcd role
// allows: a job naming b1, which never agreed, at b1's whole NIC, and one
// naming b1 and b2 with consents b1 and b2 gave to another leader's job.
TEST_F(JobTest, AHostCannotChargeAnothersNicThroughAJob) {
  EtcdClient c = Client();
  std::vector<std::string> log;
  ClusterAdmission adm(topo_, c, prefix_,
                       [&log](int, const std::string& l) { log.push_back(l); });
  ASSERT_TRUE(adm.Join({"b1", "real", "b2", "alice"}, lease_).ok());
  ASSERT_TRUE(adm.Join({"b2", "real", "b2", "alice"}, lease_).ok());
  ASSERT_TRUE(adm.Join({"a1", "real", "a1", "alice"}, lease_).ok());
  ASSERT_TRUE(c.Put(prefix_ + "job/a1/grab",
                    R"({"name":"grab","leader":"a1","hosts":["a1","b1"],)"
                    R"("rate":800000000,"match":"","owner":"alice"})",
                    lease_)
                  .ok());
  ASSERT_TRUE(c.Put(prefix_ + "job/a1/real",
                    R"({"name":"real","leader":"a1","hosts":["a1","b1","b2"],)"
                    R"("rate":400000000,"match":"","owner":"alice"})",
                    lease_)
                  .ok());
  // A record whose hosts are not the topology's, one without a lease, and
  // one that is not JSON: left out and named once.
  ASSERT_TRUE(c.Put(prefix_ + "job/a1/odd",
                    R"({"name":"odd","leader":"a1","hosts":["a1","zz"],)"
                    R"("rate":1,"match":"","owner":"alice"})",
                    lease_)
                  .ok());
  ASSERT_TRUE(c.Put(prefix_ + "job/a1/bare",
                    R"({"name":"bare","leader":"a1","hosts":["a1","b1"],)"
                    R"("rate":1,"match":"","owner":"alice"})")
                  .ok());
  ASSERT_TRUE(c.Put(prefix_ + "job/a1/junk", "{", lease_).ok());
  auto b1 = adm.Reserve(Flow("b1", "a2", 800 * kMbit), lease_);
  EXPECT_TRUE(b1.ok()) << "a1's job took b1's NIC: " << b1.error();
  auto b2 = adm.Reserve(Flow("b2", "a1", 800 * kMbit), lease_);
  EXPECT_TRUE(b2.ok()) << "a1's job took b2's NIC: " << b2.error();
  EXPECT_EQ(Reserved(adm, "host/b1/send"), 800 * kMbit);
  // a1's own flows count: it agreed to "real" of a1... but not to "grab".
  EXPECT_EQ(Reserved(adm, "host/a1/send"), 800 * kMbit);
  const auto named = [&](const std::string& key) {
    size_t n = 0;
    for (const std::string& l : log)
      n += l.find(prefix_ + key + " ") != std::string::npos;
    return n;
  };
  // a1 leads "real" at 400mbit, which b1 and b2 agreed to for b2; a
  // consent with a cap counts a job only within it: b2's record of a job
  // above b1's cap charges nothing on b1.
  ASSERT_TRUE(
      adm.Join({"b1", "capped", "b2", "alice", 100 * kMbit}, lease_).ok());
  ASSERT_TRUE(adm.Join({"b2", "capped", "b2", "alice", 0}, lease_).ok());
  ASSERT_TRUE(c.Put(prefix_ + "job/b2/capped",
                    R"({"name":"capped","leader":"b2","hosts":["b1","b2"],)"
                    R"("rate":700000000,"match":"","owner":"alice"})",
                    lease_)
                  .ok());
  auto capped = adm.Jobs();
  ASSERT_TRUE(capped.ok()) << capped.error();
  for (const JobReservation& j : capped.value()) {
    if (j.name == "capped") {
      EXPECT_EQ(j.joined, (std::vector<std::string>{"b2"}));
    }
  }
  EXPECT_EQ(Reserved(adm, "host/b1/send"), 800 * kMbit);
  EXPECT_EQ(named("job/a1/odd"), 1u);
  EXPECT_EQ(named("job/a1/bare"), 1u);
  EXPECT_EQ(named("job/a1/junk"), 1u);
}

// EtcdPost wrapper: runs `before` once, just before the first transaction
// that puts a key under `marker`, as another host committing in the
// moment between this client's reads and its transaction.
EtcdClient::Post Interleave(const std::string& marker,
                            const std::function<void()>& before) {
  auto real = CurlPost();
  auto once = std::make_shared<bool>(false);
  return [=](const std::string& url, const std::string& body,
             std::chrono::milliseconds timeout) {
    if (!*once && url.ends_with("/v3/kv/txn") &&
        body.find(marker) != std::string::npos) {
      *once = true;
      before();
    }
    return real(url, body, timeout);
  };
}

// What etcd's gateway carries for every key that starts with `s`: the
// base64 of its first multiple of 3 bytes.
std::string B64(std::string s) {
  s.resize(s.size() / 3 * 3);
  static const char* t =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < s.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(s[i]) << 16;
    if (i + 1 < s.size())
      v |= static_cast<uint8_t>(s[i + 1]) << 8;
    if (i + 2 < s.size())
      v |= static_cast<uint8_t>(s[i + 2]);
    out += t[(v >> 18) & 63];
    out += t[(v >> 12) & 63];
    out += i + 1 < s.size() ? t[(v >> 6) & 63] : '=';
    out += i + 2 < s.size() ? t[v & 63] : '=';
  }
  return out;
}

// Between the job's reads and its transaction, another host admits a
// reservation on the link the job needs; and the other way round.  Each
// time the later one reads again and is refused: never both.
TEST_F(JobTest, AJobAndAReservationThatRaceAreNeverBothAdmitted) {
  EtcdClient other = Client();
  ClusterAdmission rival(topo_, other, prefix_);
  {
    EtcdClient c(
        {server->endpoint()}, 5s, Interleave(B64(prefix_ + "job/a1/job1"), [&] {
          auto r = rival.Reserve(Flow("a2", "b2", 500 * kMbit), lease_);
          ASSERT_TRUE(r.ok()) << r.error();
        }));
    ClusterAdmission adm(topo_, c, prefix_);
    JoinAll(adm, "job1", "a1", {"a1", "a2", "b1", "b2"});
    auto job = adm.ReserveJob(Job("job1", 100 * kMbit), lease_);
    ASSERT_FALSE(job.ok()) << "both admitted";
    EXPECT_NE(job.error().find("link tor1 -> tor2 is full"), std::string::npos)
        << job.error();
    EXPECT_EQ(adm.retries(), 1u);
  }
  ASSERT_TRUE(rival.Release(rival.List().value()[0].id).ok());
  {
    EtcdClient c({server->endpoint()}, 5s,
                 Interleave(B64(prefix_ + "use/a2/link/tor1/tor2/"), [&] {
                   auto j = rival.ReserveJob(Job("job1", 100 * kMbit), lease_);
                   ASSERT_TRUE(j.ok()) << j.error();
                 }));
    ClusterAdmission adm(topo_, c, prefix_);
    auto r = adm.Reserve(Flow("a2", "b2", 500 * kMbit), lease_);
    ASSERT_FALSE(r.ok()) << "both admitted";
    EXPECT_NE(r.error().find("link tor1 -> tor2 is full"), std::string::npos)
        << r.error();
    EXPECT_EQ(adm.retries(), 1u);
  }
  EXPECT_EQ(Reserved(rival, "link/tor1/tor2"), 400 * kMbit);
}

// 64 hosts in 4 racks of 16 under one spine, 10gbit NICs and 40gbit
// uplinks: a job of all 64 (4 032 flows) is one etcd transaction of 2
// compares and 1 put, whatever its size.
TEST_F(JobTest, A64HostJobIsOneTransaction) {
  std::string text = TomlSwitch("spine");
  std::vector<std::string> hosts;
  for (int rack = 0; rack < 4; rack++) {
    const std::string tor = "tor" + std::to_string(rack);
    text += TomlSwitch(tor) + TomlCable(tor, "spine", "40gbit");
    for (int i = 0; i < 16; i++) {
      const std::string h = "n" + std::to_string(rack * 16 + i);
      text +=
          TomlHost(
              h, {"10.0." + std::to_string(rack) + "." + std::to_string(i + 1)},
              "10gbit") +
          TomlCable(h, tor, "10gbit");
      hosts.push_back(h);
    }
  }
  Load(text);
  int txns = 0;
  size_t largest = 0;
  auto real = CurlPost();
  EtcdClient c({server->endpoint()}, 5s,
               [&](const std::string& url, const std::string& body,
                   std::chrono::milliseconds timeout) {
                 if (url.ends_with("/v3/kv/txn")) {
                   txns++;
                   largest = std::max(largest, body.size());
                 }
                 return real(url, body, timeout);
               });
  ClusterAdmission adm(topo_, c, prefix_);
  JoinAll(adm, "big", hosts[0], hosts);
  txns = 0;
  largest = 0;
  // Each uplink carries 16 x 48 flows: 40gbit x 80% / 768 = 41.66mbit.
  JobRequest req = Job("big", 42 * kMbit, hosts);
  auto over = adm.ReserveJob(req, lease_);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().find("link tor0 -> spine is full"), std::string::npos)
      << over.error();
  req.rate = 41 * kMbit;
  const auto t0 = std::chrono::steady_clock::now();
  auto job = adm.ReserveJob(req, lease_);
  const auto ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
  ASSERT_TRUE(job.ok()) << job.error();
  EXPECT_EQ(job.value().flows(), 64u * 63u);
  EXPECT_EQ(txns, 1);
  EXPECT_EQ(Reserved(adm, "link/tor0/spine"), uint64_t{768} * 41 * kMbit);
  std::printf(
      "[ figures  ] a job of 64 hosts (4032 flows of 41mbit) admitted in one "
      "transaction of %zu bytes, in %.1f ms\n",
      largest, ms);
}

}  // namespace
