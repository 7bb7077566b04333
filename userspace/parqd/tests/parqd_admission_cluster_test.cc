// SPDX-License-Identifier: GPL-2.0
//
// Tests of parqd's admission role across hosts and over time
// (admission_agent.cc, cluster_admission.cc, reserved_classes.cc): a
// user's allowance holds across the cluster, also when two hosts admit for
// the user at once; a reservation made for a Slurm job ends with the job
// (the epilog's release, or the job's cgroup gone); a parqd that died
// without stopping leaves nothing behind once it starts again (classes it
// does not hold are removed, the reservations of its earlier lease
// revoked).  The agents run against a real etcd (etcd_server.h) and a fake
// qdisc.

#include <gtest/gtest.h>
#include <linux/parq.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "admission/admission_agent.h"
#include "admission/admission_socket.h"
#include "admission/cluster_admission.h"
#include "admission/etcd.h"
#include "admission/reserved_classes.h"
#include "admission/topology.h"
#include "ctl/ctl.h"
#include "etcd_server.h"
#include "fake_classes.h"
#include "fake_tc_link.h"
#include "topology_text.h"

namespace {

using namespace parq::parqd;
using namespace std::chrono_literals;
using etcd_test::EtcdTest;
using etcd_test::server;
using test::FakeTcLink;
using test::RecordingNft;
using test::TomlCable;
using test::TomlHost;
using test::TomlSwitch;

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kMbit = 1'000'000;

// n1 and n2 (1 Gbit/s NICs) on switch s1: 800 Mbit/s reservable each way.
std::string Text() {
  return "reservable = 80\n" + TomlHost("n1", {"10.0.0.1"}, "1gbit") +
         TomlHost("n2", {"10.0.0.2"}, "1gbit") + TomlSwitch("s1") +
         TomlCable("n1", "s1", "1gbit") + TomlCable("n2", "s1", "1gbit");
}

// A host's qdisc: its reserved classes, minor -> rate.
using test::FakeClasses;

const Requester kRoot{0, "root", {"root"}};
const Requester kAlice{1001, "alice", {"alice"}};
const Requester kBob{1002, "bob", {"bob"}};

// One host's parqd: its etcd client, whose transport runs `before_txn`
// (once) right before its next admitting transaction is sent, and its
// agent.
struct Host {
  Host(const std::string& name, const Topology& t, const std::string& prefix,
       FakeClasses& classes, uint64_t* now,
       std::function<bool(const std::string&)> job_alive = {})
      : etcd({server->endpoint()}, 2s,
             [this, post = CurlPost()](const std::string& url,
                                       const std::string& body,
                                       std::chrono::milliseconds timeout) {
               // The transaction that admits: the one that puts keys
               // with a lease (not one that makes a serial/ key).
               if (before_txn && url.ends_with("/kv/txn") &&
                   body.find("\"lease\"") != std::string::npos) {
                 auto f = std::move(before_txn);
                 before_txn = nullptr;
                 f();
               }
               return post(url, body, timeout);
             }),
        admission(t, etcd, prefix),
        agent(
            AgentConfig{
                name,
                4,
                {{"alice", "", 300 * kMbit},
                 {"bob", "", 300 * kMbit},
                 {RequesterOf(getuid(), getgid()).user, "", 800 * kMbit}}},
            t, admission, etcd, classes,
            [this](int, const std::string& line) { log.push_back(line); },
            [now] { return *now; }) {
    agent.set_job_alive(std::move(job_alive));
  }

  std::function<void()> before_txn;
  EtcdClient etcd;
  ClusterAdmission admission;
  AdmissionAgent agent;
  std::vector<std::string> log;
};

class ClusterTest : public EtcdTest {
 protected:
  void SetUp() override {
    EtcdTest::SetUp();
    auto t = Topology::Parse(Text(), "test.toml");
    ASSERT_TRUE(t.ok()) << t.error();
    topology_.emplace(std::move(t.value()));
  }

  std::unique_ptr<Host> Start(const std::string& name, FakeClasses& classes) {
    auto h = std::make_unique<Host>(
        name, *topology_, prefix_, classes, &now_,
        [this](const std::string& job) { return alive_.count(job) > 0; });
    h->agent.Tick(now_);
    EXPECT_TRUE(h->agent.leased()) << (h->log.empty() ? "" : h->log.back());
    return h;
  }

  // The reservations in etcd, by id.
  std::map<std::string, Reservation> InEtcd() {
    EtcdClient etcd({server->endpoint()}, 2s, CurlPost());
    ClusterAdmission adm(*topology_, etcd, prefix_);
    auto l = adm.List();
    EXPECT_TRUE(l.ok()) << l.error();
    std::map<std::string, Reservation> out;
    if (l.ok())
      for (Reservation& r : l.value())
        out[r.id] = std::move(r);
    return out;
  }

  // n2 reserves toward n1; a parqd on n1 reserves twice toward n2 and is
  // killed (no Stop()); n1's qdisc also has a class made by hand, 0x10.
  void KillAParqdOnN1(Host& n2) {
    ASSERT_TRUE(n2.agent.Reserve(kRoot, "n1", 100 * kMbit, "").ok());
    {
      auto n1 = Start("n1", n1_classes_);
      ASSERT_TRUE(n1->agent.Reserve(kRoot, "n2", 100 * kMbit, "").ok());
      ASSERT_TRUE(n1->agent.Reserve(kAlice, "n2", 100 * kMbit, "").ok());
    }
    n1_classes_.rates[0x10] = kMbit;
  }

  std::optional<Topology> topology_;
  FakeClasses n1_classes_, n2_classes_;
  std::set<std::string> alive_;  // the jobs whose cgroup exists
  uint64_t now_ = 1000 * kSec;
};

// alice may hold 300 Mbit/s: 200 from n1 and 200 from n2 would be 400.
TEST_F(ClusterTest, TheAllowanceHoldsAcrossHosts) {
  auto n1 = Start("n1", n1_classes_);
  auto n2 = Start("n2", n2_classes_);
  auto a1 = n1->agent.Reserve(kAlice, "n2", 200 * kMbit, "");
  ASSERT_TRUE(a1.ok()) << a1.error();
  auto a2 = n2->agent.Reserve(kAlice, "n1", 200 * kMbit, "");
  ASSERT_FALSE(a2.ok()) << "n2 admitted " << a2.value().id;
  EXPECT_EQ(a2.error(),
            "user alice may hold 300mbit of reservations in the cluster; "
            "holds 200mbit, asks 200mbit more");
  EXPECT_TRUE(n2_classes_.rates.empty());
  // What is left is hers on either host; a change beyond it is refused.
  auto a3 = n2->agent.Reserve(kAlice, "n1", 100 * kMbit, "");
  ASSERT_TRUE(a3.ok()) << a3.error();
  auto c = n2->agent.Change(kAlice, a3.value().id, 150 * kMbit);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(),
            "user alice may hold 300mbit of reservations in the cluster; "
            "holds 200mbit besides " +
                a3.value().id + ", asks 150mbit for it");
  EXPECT_EQ(n2_classes_.rates.begin()->second, 100 * kMbit);
  EXPECT_EQ(InEtcd().size(), 2u);
  // Root has no limit.
  EXPECT_TRUE(n2->agent.Reserve(kRoot, "n1", 500 * kMbit, "").ok());
}

// n2 has read alice's sum (nothing) when n1 admits 200 for her and then
// `meanwhile` runs; n2's transaction must then fail, and n2 decide again
// and refuse.  n2 retried.
void ExpectTheSecondRefused(Host& n1, Host& n2,
                            const std::function<void()>& meanwhile = {}) {
  bool ran = false;
  n2.before_txn = [&] {
    ran = true;
    auto a = n1.agent.Reserve(kAlice, "n2", 200 * kMbit, "");
    EXPECT_TRUE(a.ok()) << a.error();
    if (meanwhile)
      meanwhile();
  };
  auto b = n2.agent.Reserve(kAlice, "n1", 200 * kMbit, "");
  EXPECT_TRUE(ran);
  ASSERT_FALSE(b.ok()) << "both admitted: 400mbit for alice";
  EXPECT_EQ(b.error(),
            "user alice may hold 300mbit of reservations in the cluster; "
            "holds 200mbit, asks 200mbit more");
  EXPECT_EQ(n2.admission.retries(), 1u);
}

TEST_F(ClusterTest, TwoHostsAdmittingAtOnceCannotExceedTheAllowance) {
  auto n1 = Start("n1", n1_classes_);
  auto n2 = Start("n2", n2_classes_);
  ExpectTheSecondRefused(*n1, *n2);
  EXPECT_EQ(InEtcd().size(), 1u);
}

// The same race, and whoever can write serial/ keys (every host's role)
// deletes alice's right after n1's admission: a key that is gone must not
// pass for one unchanged since n2 read it.
TEST_F(ClusterTest, ADeletedSerialKeyLetsNoSecondAdmissionThrough) {
  auto n1 = Start("n1", n1_classes_);
  auto n2 = Start("n2", n2_classes_);
  ExpectTheSecondRefused(*n1, *n2, [this] {
    EtcdClient attacker({server->endpoint()}, 2s, CurlPost());
    auto del = attacker.Txn({}, {{EtcdOp::Kind::kDelete,
                                  prefix_ + "serial/user/alice", "", "", 0}});
    EXPECT_TRUE(del.ok() && del.value().succeeded);
  });
}

// A use/ key whose rate would wrap the sum around (a host may charge any
// destination's receiving NIC) counts as all of it, not as what is left
// after the wrap: b's NIC is full, not empty.
TEST_F(ClusterTest, AUseKeyCannotWrapASumAround) {
  auto n1 = Start("n1", n1_classes_);
  ASSERT_TRUE(n1->agent.Reserve(kRoot, "n2", 100 * kMbit, "").ok());
  EtcdClient other({server->endpoint()}, 2s, CurlPost());
  auto lease = other.LeaseGrant(60);
  ASSERT_TRUE(lease.ok()) << lease.error();
  ASSERT_TRUE(other
                  .Put(prefix_ + "use/n1/host/n2/receive/n1-00000000000000aa",
                       std::to_string(UINT64_MAX - 100 * kMbit + 1),
                       lease.value().id)
                  .ok());
  auto n2 = Start("n2", n2_classes_);
  auto b = n1->agent.Reserve(kRoot, "n2", 700 * kMbit, "");
  ASSERT_FALSE(b.ok()) << "admitted on a NIC whose sum wrapped to 0";
  EXPECT_NE(b.error().find("n2's NIC (receiving) is full"), std::string::npos)
      << b.error();
}

// A reservation made for a job carries it, in etcd too; ending the job
// (the epilog's `parqctl release --job N`) releases it on the qdisc and
// in etcd, and nothing else.
TEST_F(ClusterTest, TheEpilogReleasesTheJobsReservations) {
  alive_ = {"42", "43"};
  auto n1 = Start("n1", n1_classes_);
  auto j42 = n1->agent.Reserve(kAlice, "n2", 100 * kMbit, "", "42");
  ASSERT_TRUE(j42.ok()) << j42.error();
  EXPECT_EQ(j42.value().job, "42");
  EXPECT_EQ(InEtcd()[j42.value().id].job, "42");
  auto j43 = n1->agent.Reserve(kAlice, "n2", 100 * kMbit, "", "43");
  ASSERT_TRUE(j43.ok()) << j43.error();
  auto none = n1->agent.Reserve(kAlice, "n2", 100 * kMbit, "");
  ASSERT_TRUE(none.ok()) << none.error();
  // A job that does not run here, and a job id that is not one.
  EXPECT_EQ(n1->agent.Reserve(kAlice, "n2", kMbit, "", "99").error(),
            "job 99 does not run on this host (it has no cgroup here)");
  EXPECT_EQ(n1->agent.Reserve(kAlice, "n2", kMbit, "", "4/../2").error(),
            "job \"4/../2\" is not a Slurm job id (digits)");
  // The asking process's own cgroup names its job: it cannot claim
  // another.
  std::string job = "42";
  EXPECT_EQ(RequestJob("43", &job),
            "the request names job 42, but the asking process runs in job "
            "43");
  job = "";
  EXPECT_EQ(RequestJob("43", &job), std::nullopt);
  EXPECT_EQ(job, "43");
  job = "42";
  EXPECT_EQ(RequestJob("", &job), std::nullopt);
  EXPECT_EQ(job, "42");

  auto gone = n1->agent.ReleaseJob(kRoot, "42");
  ASSERT_TRUE(gone.ok()) << gone.error();
  ASSERT_EQ(gone.value().size(), 1u);
  EXPECT_EQ(gone.value()[0].id, j42.value().id);
  EXPECT_EQ(n1_classes_.rates.size(), 2u);
  auto in = InEtcd();
  EXPECT_EQ(in.count(j42.value().id), 0u);
  EXPECT_EQ(in.size(), 2u);
  // A job with nothing reserved is no error: the epilog runs for every job.
  auto nothing = n1->agent.ReleaseJob(kRoot, "7");
  ASSERT_TRUE(nothing.ok()) << nothing.error();
  EXPECT_TRUE(nothing.value().empty());
}

// A user who ends a job releases their own reservations for it and no one
// else's: another user's reservation naming the same job neither stops
// the release half-way nor goes with it.
TEST_F(ClusterTest, ReleasingAJobTakesOnlyWhatTheAskerMayTouch) {
  alive_ = {"42"};
  auto n1 = Start("n1", n1_classes_);
  auto a = n1->agent.Reserve(kAlice, "n2", 100 * kMbit, "", "42");
  ASSERT_TRUE(a.ok()) << a.error();
  auto b = n1->agent.Reserve(kBob, "n2", 100 * kMbit, "", "42");
  ASSERT_TRUE(b.ok()) << b.error();
  auto gone = n1->agent.ReleaseJob(kAlice, "42");
  ASSERT_TRUE(gone.ok()) << gone.error();
  ASSERT_EQ(gone.value().size(), 1u);
  EXPECT_EQ(gone.value()[0].id, a.value().id);
  auto in = InEtcd();
  EXPECT_EQ(in.count(a.value().id), 0u);
  EXPECT_EQ(in.count(b.value().id), 1u);
}

// The epilog's own call: parqctl release --job N over the socket.
// Runs parqctl's command line `argv` against `host`'s admission socket,
// serving it meanwhile; its exit status, with what it printed in `out`.
int Parqctl(Host& host, uint64_t now, std::vector<std::string> argv,
            std::string& out) {
  // Each test program its own: ctest runs the tests two at a time.
  const std::string path = ::testing::TempDir() + "/parq-cluster-test-" +
                           std::to_string(getpid()) + ".sock";
  auto s = AdmissionServer::Open(path);
  EXPECT_TRUE(s.ok()) << s.error();
  if (!s.ok())
    return -1;
  argv.insert(argv.begin(), "parqctl");
  argv.insert(argv.end(), {"--socket", path});
  std::ostringstream o, e;
  auto parsed = ParseCtlArgs(argv, o, e);
  if (!std::holds_alternative<CtlArgs>(parsed)) {
    out = o.str() + e.str();
    return std::get<int>(parsed);
  }
  int rc = -1;
  std::atomic<bool> done{false};
  std::thread t([&] {
    rc = RunCtl(
        std::get<CtlArgs>(parsed),
        []() -> Result<std::unique_ptr<KernelCreditTable>, KernelError> {
          return Err{KernelError{ENODEV, "not used"}};
        },
        o, e);
    done = true;
  });
  for (int i = 0; i < 2000 && !done; i++) {
    s.value().Serve(host.agent, now);
    std::this_thread::sleep_for(5ms);
  }
  t.join();
  out = o.str() + e.str();
  return rc;
}

// The epilog's own call: parqctl release --job N over the socket.
TEST_F(ClusterTest, ParqctlReleasesByJob) {
  alive_ = {"42"};
  auto n1 = Start("n1", n1_classes_);
  const Requester me = RequesterOf(getuid(), getgid());
  auto r = n1->agent.Reserve(me, "n2", 100 * kMbit, "", "42");
  ASSERT_TRUE(r.ok()) << r.error();
  std::string out;
  EXPECT_EQ(Parqctl(*n1, now_, {"release", "--job", "42"}, out), 0) << out;
  EXPECT_NE(out.find(r.value().id), std::string::npos) << out;
  EXPECT_TRUE(n1_classes_.rates.empty());
  EXPECT_TRUE(InEtcd().empty());
}

// parqctl reserve with the bounds of its adaptation, and parqctl
// reservations with what the reservation carried at parqd's last check.
TEST_F(ClusterTest, ParqctlShowsWhatAReservationCarried) {
  auto n1 = Start("n1", n1_classes_);
  std::string out;
  ASSERT_EQ(Parqctl(*n1, now_,
                    {"reserve", "--to", "n2", "--rate", "40mbit", "--min-rate",
                     "10mbit", "--max-rate", "60mbit", "--job", ""},
                    out),
            0)
      << out;
  auto held = n1->agent.Holdings();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].min, 10 * kMbit);
  EXPECT_EQ(held[0].max, 60 * kMbit);
  const uint32_t minor = n1_classes_.rates.begin()->first;
  for (int i = 0; i < 2; i++) {
    n1_classes_.uses[minor].bytes += 10 * kMbit / 8 * 5;  // 10 Mbit/s
    n1_classes_.uses[minor].throttled_ns += 500'000'000;  // 10 %
    for (int s = 0; s < 5; s++) {  // the lease is renewed each second
      now_ += kJobCheckNs / 5;
      n1->agent.Tick(now_);
    }
  }
  ASSERT_EQ(Parqctl(*n1, now_, {"reservations"}, out), 0) << out;
  const std::string me = RequesterOf(getuid(), getgid()).user;
  EXPECT_EQ(out, held[0].r.id + ": n1 -> n2 40mbit, owner " + me +
                     "\n  sent 10mbit, choked 10.0%, unused 75.0% over the "
                     "last 5 s\n  host/n1/send\n  link/n1/s1\n  "
                     "link/s1/n2\n  host/n2/receive\n");
  EXPECT_EQ(Parqctl(*n1, now_,
                    {"reserve", "--to", "n2", "--rate", "40mbit", "--min-rate",
                     "fast"},
                    out),
            2);
  EXPECT_NE(out.find("parqctl: --min-rate fast: "), std::string::npos) << out;
  EXPECT_EQ(Parqctl(*n1, now_,
                    {"reserve", "--to", "n2", "--rate", "10mbit", "--max-rate",
                     "5mbit", "--job", ""},
                    out),
            1);
  EXPECT_EQ(out,
            "parqctl: the maximum rate 5mbit is below the rate asked, "
            "10mbit\n");
}

// A job admitted as a whole, from parqctl on each host: join, reserve on
// the leader, show, change, and the epilog's release.
TEST_F(ClusterTest, ParqctlAdmitsAJobAsAWhole) {
  auto n1 = Start("n1", n1_classes_);
  auto n2 = Start("n2", n2_classes_);
  std::string out;
  ASSERT_EQ(Parqctl(*n2, now_, {"join", "--leader", "n1", "--job", "j"}, out),
            0)
      << out;
  const std::vector<std::string> reserve = {
      "reserve", "--hosts", "n1,n2", "--rate", "10mbit", "--job", "j"};
  ASSERT_EQ(Parqctl(*n1, now_, reserve, out), 1) << out;
  EXPECT_EQ(out,
            "parqctl: join job j here first, with this host (n1) as its "
            "leader\n");
  ASSERT_EQ(Parqctl(*n1, now_, {"join", "--leader", "n1", "--job", "j"}, out),
            0)
      << out;
  ASSERT_EQ(Parqctl(*n1, now_, reserve, out), 0) << out;
  ASSERT_EQ(
      Parqctl(*n1, now_, {"change", "--job", "j", "--rate", "20mbit"}, out), 0)
      << out;
  ASSERT_EQ(Parqctl(*n2, now_, {"reservations", "--job", "j"}, out), 0) << out;
  const std::string me = RequesterOf(getuid(), getgid()).user;
  EXPECT_EQ(out, "job j: 2 flows of 20mbit among 2 hosts, leader n1, owner " +
                     me + "\n  n1\n  n2\n");
  EXPECT_EQ(n2_classes_.rates.size(), 1u);
  EXPECT_EQ(Parqctl(*n1, now_, {"reserve", "--rate", "1mbit"}, out), 2);
  EXPECT_EQ(out,
            "parqctl reserve: give --to HOST, or --hosts A,B,... for a job "
            "admitted as a whole\n");
  ASSERT_EQ(Parqctl(*n1, now_, {"release", "--job", "j"}, out), 0) << out;
  ASSERT_EQ(Parqctl(*n2, now_, {"release", "--job", "j"}, out), 0) << out;
  EXPECT_TRUE(n1_classes_.rates.empty());
  EXPECT_TRUE(n2_classes_.rates.empty());
  EXPECT_EQ(Parqctl(*n2, now_, {"reservations", "--job", "j"}, out), 1);
  EXPECT_EQ(out, "parqctl: no job j is admitted\n");
}

// The job's cgroup removed (the job ended, with or without the epilog):
// its reservations go within the job check's period.
TEST_F(ClusterTest, AJobWhoseCgroupIsGoneLosesItsReservations) {
  alive_ = {"42", "43"};
  auto n1 = Start("n1", n1_classes_);
  auto j42 = n1->agent.Reserve(kAlice, "n2", 100 * kMbit, "", "42");
  ASSERT_TRUE(j42.ok()) << j42.error();
  auto j43 = n1->agent.Reserve(kAlice, "n2", 100 * kMbit, "", "43");
  ASSERT_TRUE(j43.ok()) << j43.error();
  alive_.erase("42");
  for (uint64_t t = now_; t <= now_ + kJobCheckNs; t += kSec / 4)
    if (t >= n1->agent.NextTick())
      n1->agent.Tick(t);
  EXPECT_EQ(n1_classes_.rates.size(), 1u);
  auto in = InEtcd();
  EXPECT_EQ(in.size(), 1u);
  EXPECT_EQ(in.count(j43.value().id), 1u);
}

// Advances the clock past the next check of each agent, ticking them.
void PassACheck(uint64_t* now, std::initializer_list<Host*> hosts) {
  const uint64_t end = *now + kJobCheckNs;
  for (; *now <= end; *now += kSec / 4)
    for (Host* h : hosts)
      if (*now >= h->agent.NextTick())
        h->agent.Tick(*now);
}

// A job admitted as a whole by its leader n1: every host that joined it
// installs its flows (the leader at once, n2 at its next check), for the
// user who joined; a new rate reaches both; the epilog on each host ends
// it; and a job that does not fit installs nothing anywhere.
TEST_F(ClusterTest, EveryHostThatJoinedAJobCarriesItsFlows) {
  alive_ = {"42"};
  auto n1 = Start("n1", n1_classes_);
  auto n2 = Start("n2", n2_classes_);
  ASSERT_TRUE(n2->agent.JoinJob(kAlice, "42", "n1", 0, "42").ok());
  // Not yet n1's consent: the leader must have joined too.
  auto early =
      n1->agent.ReserveJob(kAlice, "42", {"n1", "n2"}, 100 * kMbit, "");
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error(),
            "join job 42 here first, with this host (n1) as its leader");
  ASSERT_TRUE(n1->agent.JoinJob(kAlice, "42", "n1", 0, "42").ok());
  // alice may hold 300mbit: two flows of 151mbit are refused whole, and
  // nothing is installed.
  ASSERT_TRUE(n1->agent.Reserve(kBob, "n2", 300 * kMbit, "").ok());
  auto over = n1->agent.ReserveJob(kAlice, "42", {"n1", "n2"}, 151 * kMbit, "");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error(),
            "user alice may hold 300mbit of reservations in the cluster; "
            "holds 0bit, and job 42 asks 302mbit (2 flows of 151mbit)");
  EXPECT_EQ(n1_classes_.rates.size(), 1u);
  auto job = n1->agent.ReserveJob(kAlice, "42", {"n1", "n2"}, 100 * kMbit, "");
  ASSERT_TRUE(job.ok()) << job.error();
  EXPECT_EQ(job.value().joined, (std::vector<std::string>{"n1", "n2"}));
  const auto flows = n1->agent.JobFlows();
  ASSERT_EQ(flows.size(), 1u);
  const uint32_t minor = flows.at({"42", "n2"});
  EXPECT_EQ(n1_classes_.rates.at(minor), 100 * kMbit);
  EXPECT_EQ(n1_classes_.owners.at(minor), kAlice.uid);
  EXPECT_EQ(n1_classes_.dests.at(minor)[0].ToString(), "10.0.0.2");
  EXPECT_TRUE(n2_classes_.rates.empty());
  PassACheck(&now_, {n1.get(), n2.get()});
  ASSERT_EQ(n2->agent.JobFlows().size(), 1u);
  const uint32_t back = n2->agent.JobFlows().at({"42", "n1"});
  EXPECT_EQ(n2_classes_.rates.at(back), 100 * kMbit);
  EXPECT_EQ(n2_classes_.owners.at(back), kAlice.uid);

  // Only the leader changes it, for its owner or root.
  EXPECT_FALSE(n2->agent.ChangeJob(kAlice, "42", 150 * kMbit).ok());
  EXPECT_FALSE(n1->agent.ChangeJob(kBob, "42", 150 * kMbit).ok());
  EXPECT_FALSE(n1->agent.ChangeJob(kAlice, "42", 151 * kMbit).ok());
  auto up = n1->agent.ChangeJob(kAlice, "42", 150 * kMbit);
  ASSERT_TRUE(up.ok()) << up.error();
  EXPECT_EQ(n1_classes_.rates.at(minor), 150 * kMbit);
  auto shown = n2->agent.ShowJob("42");  // n2 installs as it reads
  ASSERT_TRUE(shown.ok()) << shown.error();
  EXPECT_EQ(shown.value().rate, 150 * kMbit);
  EXPECT_EQ(n2_classes_.rates.at(back), 150 * kMbit);

  // The epilog on the leader ends the job; n2 drops its flow at its next
  // check, and its own epilog withdraws its consent.
  ASSERT_TRUE(n1->agent.ReleaseJob(kRoot, "42").ok());
  EXPECT_EQ(n1_classes_.rates.size(), 1u);  // bob's reservation
  EXPECT_FALSE(n1->agent.ShowJob("42").ok());
  PassACheck(&now_, {n1.get(), n2.get()});
  EXPECT_TRUE(n2_classes_.rates.empty());
  ASSERT_TRUE(n2->agent.ReleaseJob(kRoot, "42").ok());
  EXPECT_TRUE(n2->agent.JobFlows().empty());
  auto members = n2->admission.Memberships("");
  ASSERT_TRUE(members.ok()) << members.error();
  EXPECT_TRUE(members.value().empty());
}

// A consent made for a Slurm job ends with the job's cgroup, and with it
// the host's flows of the job; a process of Slurm job 42 names its jobs
// 42 or 42.NAME.
TEST_F(ClusterTest, AConsentEndsWithItsSlurmJob) {
  alive_ = {"42"};
  auto n1 = Start("n1", n1_classes_);
  auto n2 = Start("n2", n2_classes_);
  const std::string join = R"({"op":"join","job":"42.world","leader":"n1"})";
  EXPECT_NE(HandleAdmissionRequest(n1->agent, kAlice, join, nullptr, "42")
                .find("\"ok\":true"),
            std::string::npos);
  EXPECT_NE(HandleAdmissionRequest(n2->agent, kAlice, join, nullptr, "42")
                .find("\"ok\":true"),
            std::string::npos);
  const std::string other = R"({"op":"join","job":"43","leader":"n1"})";
  EXPECT_EQ(HandleAdmissionRequest(n1->agent, kAlice, other, nullptr, "42"),
            R"({"error":"the asking process runs in Slurm job 42: its jobs )"
            R"(are named 42 or 42.NAME","ok":false})");
  const std::string reserve =
      R"({"op":"reserve","job":"42.world","hosts":["n1","n2"],"rate":"50mbit"})";
  const std::string reply =
      HandleAdmissionRequest(n1->agent, kAlice, reserve, nullptr, "42");
  ASSERT_NE(reply.find("\"ok\":true"), std::string::npos) << reply;
  EXPECT_NE(reply.find("\"flows\":2"), std::string::npos) << reply;
  PassACheck(&now_, {n1.get(), n2.get()});
  EXPECT_EQ(n2_classes_.rates.size(), 1u);
  // Outside Slurm, names of digits are Slurm's.
  EXPECT_EQ(HandleAdmissionRequest(n1->agent, kAlice, other, nullptr, ""),
            R"({"error":"job names of digits (and digits.NAME) are Slurm )"
            R"(jobs': name the job otherwise outside Slurm","ok":false})");
  // The job ends without an epilog: its cgroup goes, and with it the
  // consents, the job (on its leader) and every class.
  alive_.clear();
  PassACheck(&now_, {n1.get(), n2.get()});
  EXPECT_TRUE(n1_classes_.rates.empty());
  EXPECT_TRUE(n2_classes_.rates.empty());
  auto members = n1->admission.Memberships("");
  ASSERT_TRUE(members.ok()) << members.error();
  EXPECT_TRUE(members.value().empty());
  auto jobs = n1->admission.Jobs();
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  EXPECT_TRUE(jobs.value().empty()) << "the job outlived its cgroup";
}

// The epilog of Slurm job 42 on the leader ends the jobs named 42.NAME
// too, also one whose consent the leader had already withdrawn.
TEST_F(ClusterTest, TheEpilogEndsTheJobsOfItsSlurmJob) {
  alive_ = {"42"};
  auto n1 = Start("n1", n1_classes_);
  auto n2 = Start("n2", n2_classes_);
  for (const char* name : {"42.a", "42.b"}) {
    for (Host* h : {n1.get(), n2.get()})
      ASSERT_TRUE(h->agent.JoinJob(kAlice, name, "n1", 0, "42").ok());
    ASSERT_TRUE(
        n1->agent.ReserveJob(kAlice, name, {"n1", "n2"}, 10 * kMbit, "").ok());
  }
  // n1's consent to 42.b goes in etcd alone (a parqd before this one).
  ASSERT_TRUE(n1->admission.Leave("n1", "42.b").value());
  ASSERT_TRUE(n1->agent.ReleaseJob(kRoot, "42").ok());
  auto jobs = n1->admission.Jobs();
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  EXPECT_TRUE(jobs.value().empty());
  EXPECT_TRUE(n1_classes_.rates.empty());
  EXPECT_FALSE(n2->agent.ShowJob("42.a").ok());
  EXPECT_TRUE(n2_classes_.rates.empty());
}

// A host agrees to a rate: a job above it is refused, a change above it
// too until the host joins again with a higher one.
TEST_F(ClusterTest, AHostCarriesAJobOnlyUpToTheRateItAgreedTo) {
  auto n1 = Start("n1", n1_classes_);
  auto n2 = Start("n2", n2_classes_);
  ASSERT_TRUE(n1->agent.JoinJob(kAlice, "j", "n1", 100 * kMbit).ok());
  ASSERT_TRUE(n2->agent.JoinJob(kAlice, "j", "n1", 50 * kMbit).ok());
  auto over = n1->agent.ReserveJob(kAlice, "j", {"n1", "n2"}, 60 * kMbit, "");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error(),
            "job j: 1 of its 2 hosts have not joined it (of n1, for alice, at "
            "60mbit a flow): n2");
  ASSERT_TRUE(
      n1->agent.ReserveJob(kAlice, "j", {"n1", "n2"}, 50 * kMbit, "").ok());
  auto up = n1->agent.ChangeJob(kAlice, "j", 80 * kMbit);
  ASSERT_FALSE(up.ok());
  EXPECT_EQ(up.error(),
            "job j: hosts agreed to less than 80mbit a flow: n2 (50mbit); "
            "they must join again with a higher rate");
  // Joining again keeps the consent's age: the job still counts n2.
  ASSERT_TRUE(n2->agent.JoinJob(kAlice, "j", "n1", 80 * kMbit).ok());
  ASSERT_TRUE(n1->agent.ChangeJob(kAlice, "j", 80 * kMbit).ok());
  auto shown = n2->agent.ShowJob("j");
  ASSERT_TRUE(shown.ok()) << shown.error();
  EXPECT_EQ(shown.value().joined.size(), 2u);
  EXPECT_EQ(n2_classes_.rates.begin()->second, 80 * kMbit);
}

// Two ranks of an MPI program, one on each host (PARQ_HOST and its
// parqd's socket), through libparq-mpi: the communicator's attribute
// reserves as a job, changes and releases it; and an unmodified program
// with the library preloaded and PARQ_MPI_RATE holds a reservation from
// MPI_Init to MPI_Finalize.
class MpiTest : public ClusterTest {
 protected:
  // `program` on two ranks (n1's, then n2's) while both hosts serve their
  // sockets; its output, and the most classes each host held meanwhile.
  std::string Run(const std::string& env, const std::string& program) {
    // Each test program its own: ctest runs the tests two at a time.
    const std::string dir =
        ::testing::TempDir() + "/parq-mpi-" + std::to_string(getpid());
    const std::string p1 = dir + "-n1.sock";
    const std::string p2 = dir + "-n2.sock";
    auto s1 = AdmissionServer::Open(p1);
    auto s2 = AdmissionServer::Open(p2);
    EXPECT_TRUE(s1.ok() && s2.ok());
    if (!s1.ok() || !s2.ok())
      return "";
    const std::string mpirun =
        "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
        "ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 "
        "timeout 120 mpirun --oversubscribe --bind-to none --mca btl "
        "self,tcp ";
    const auto rank = [&](const char* host, const std::string& socket) {
      return "-np 1 -x PARQ_HOST=" + std::string(host) +
             " -x PARQ_ADMISSION_SOCKET=" + socket + " " + env + " " + program;
    };
    const std::string cmd =
        mpirun + rank("n1", p1) + " : " + rank("n2", p2) + " 2>&1";
    std::string out;
    std::atomic<bool> done{false};
    std::thread t([&] {
      FILE* f = popen(cmd.c_str(), "r");
      if (f) {
        char buf[512];
        while (fgets(buf, sizeof(buf), f))
          out += buf;
        status_ = pclose(f);
      }
      done = true;
    });
    most1_ = most2_ = 0;
    while (!done) {
      s1.value().Serve(n1_->agent, now_);
      s2.value().Serve(n2_->agent, now_);
      most1_ = std::max(most1_, n1_classes_.rates.size());
      most2_ = std::max(most2_, n2_classes_.rates.size());
      std::this_thread::sleep_for(2ms);
    }
    t.join();
    return out;
  }
  void SetUp() override {
    ClusterTest::SetUp();
    n1_ = Start("n1", n1_classes_);
    n2_ = Start("n2", n2_classes_);
  }
  size_t Jobs() {
    auto j = n1_->admission.Jobs();
    EXPECT_TRUE(j.ok()) << j.error();
    return j.ok() ? j.value().size() : 0;
  }

  std::unique_ptr<Host> n1_, n2_;
  int status_ = -1;
  size_t most1_ = 0, most2_ = 0;
};

TEST_F(MpiTest, ACommunicatorReservesChangesAndReleasesThroughItsAttribute) {
#ifndef PARQ_MPI_QOS
  FAIL() << "libparq-mpi was not built: install libopenmpi-dev";
#else
  std::string out = Run("", std::string(PARQ_MPI_QOS) + " 100000000 200000000");
  ASSERT_EQ(status_, 0) << out;
  const std::string job = "(job mpi-n1-";
  EXPECT_NE(out.find("set: admitted 100000000 bit/s for each of 2 flows "
                     "among 2 hosts " +
                     job),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("changed: admitted 200000000 bit/s"), std::string::npos)
      << out;
  EXPECT_NE(out.find("released: not admitted\n"), std::string::npos) << out;
  EXPECT_EQ(most1_, 1u);  // a class toward n2 on n1, and back on n2
  EXPECT_EQ(most2_, 1u);
  EXPECT_TRUE(n1_classes_.rates.empty());
  EXPECT_TRUE(n2_classes_.rates.empty());
  EXPECT_EQ(Jobs(), 0u);

  // Beyond the NICs: refused whole, with parqd's reason on every rank.
  out = Run("", std::string(PARQ_MPI_QOS) + " 900000000");
  ASSERT_EQ(status_, 0) << out;
  EXPECT_NE(out.find("set: not admitted: mpi-n1-"), std::string::npos) << out;
  EXPECT_NE(out.find("n1's NIC (sending) is full"), std::string::npos) << out;
  EXPECT_EQ(most1_ + most2_, 0u);
  EXPECT_EQ(Jobs(), 0u);
#endif
}

TEST_F(MpiTest, AnUnmodifiedProgramReservesFromTheEnvironment) {
#ifndef PARQ_MPI_PLAIN
  FAIL() << "libparq-mpi was not built: install libopenmpi-dev";
#else
  const std::string env = "-x LD_PRELOAD=" + std::string(PARQ_MPI_LIB) +
                          " -x PARQ_MPI_RATE=50mbit -x PARQ_MPI_VERBOSE=1";
  // 200 all-reduces, then 1 s with the reservation held.
  std::string out = Run(env, std::string(PARQ_MPI_PLAIN) + " 200 1");
  ASSERT_EQ(status_, 0) << out;
  EXPECT_NE(out.find("parq: job mpi-n1-"), std::string::npos) << out;
  EXPECT_NE(out.find("admitted: 50000000 bit/s for each of 2 flows among 2 "
                     "hosts"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("2 ranks, 200 all-reduces, sum 2"), std::string::npos)
      << out;
  EXPECT_EQ(most1_, 1u);
  EXPECT_EQ(most2_, 1u);
  EXPECT_TRUE(n1_classes_.rates.empty());
  EXPECT_TRUE(n2_classes_.rates.empty());
  EXPECT_EQ(Jobs(), 0u);
  // A rate that is not one: said on rank 0, and the program runs.
  out = Run(
      "-x LD_PRELOAD=" + std::string(PARQ_MPI_LIB) + " -x PARQ_MPI_RATE=fast",
      std::string(PARQ_MPI_PLAIN) + " 10");
  ASSERT_EQ(status_, 0) << out;
  EXPECT_NE(out.find("parq: PARQ_MPI_RATE=fast is not a rate"),
            std::string::npos)
      << out;
  EXPECT_EQ(most1_ + most2_, 0u);
#endif
}

// parqd killed (SIGKILL, OOM, the watchdog): its classes stay on the qdisc
// and its reservations in etcd until the lease expires.  The next parqd
// removes the classes it does not hold and revokes the earlier lease, at
// once; from then on a class that appears unheld goes too.
TEST_F(ClusterTest, AfterACrashTheNextParqdLeavesNothingBehind) {
  auto n2 = Start("n2", n2_classes_);
  ASSERT_NO_FATAL_FAILURE(KillAParqdOnN1(*n2));
  ASSERT_EQ(n1_classes_.rates.size(), 3u);
  ASSERT_EQ(InEtcd().size(), 3u);
  auto n1 = Start("n1", n1_classes_);
  EXPECT_EQ(n1_classes_.rates, (std::map<uint32_t, uint64_t>{{0x10, kMbit}}));
  auto in = InEtcd();
  ASSERT_EQ(in.size(), 1u);  // n2's alone
  EXPECT_EQ(in.begin()->second.from, "n2");
  // Held classes stay; one it does not hold goes at the next check.
  auto r = n1->agent.Reserve(kRoot, "n2", 100 * kMbit, "");
  ASSERT_TRUE(r.ok()) << r.error();
  n1_classes_.rates[kAgentMinorFirst + 7] = kMbit;
  for (uint64_t t = now_; t <= now_ + kJobCheckNs; t += kSec / 4)
    if (t >= n1->agent.NextTick())
      n1->agent.Tick(t);
  EXPECT_EQ(n1_classes_.rates,
            (std::map<uint32_t, uint64_t>{{0x10, kMbit},
                                          {kAgentMinorFirst, 100 * kMbit}}));
}

// parqd --clean-up, the unit's ExecStopPost after a parqd that was killed:
// the classes of its range go, and its reservations from etcd, at once;
// another host's stay.
TEST_F(ClusterTest, CleanUpRemovesWhatAKilledParqdLeft) {
  auto n2 = Start("n2", n2_classes_);
  ASSERT_NO_FATAL_FAILURE(KillAParqdOnN1(*n2));
  EtcdClient etcd({server->endpoint()}, 2s, CurlPost());
  ClusterAdmission adm(*topology_, etcd, prefix_);
  std::vector<std::string> log;
  EXPECT_TRUE(CleanUpAfterParqd(
      "n1", adm, etcd, n1_classes_,
      [&](int, const std::string& line) { log.push_back(line); }));
  EXPECT_EQ(n1_classes_.rates, (std::map<uint32_t, uint64_t>{{0x10, kMbit}}));
  auto in = InEtcd();
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in.begin()->second.from, "n2");
  EXPECT_EQ(n2_classes_.rates.size(), 1u);
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0], "admission: removed class 1000");
}

// What TcReservedClasses finds on the qdisc: parq's classes by their
// classid, and the filters into them, whatever the filters match.
// A qdisc with the agent's classes 1000 (class, filter on its mark), 1004
// (a filter only) and 2a0f (a class only), and classes below the agent's
// range; `nft` answers `nft list table inet parq`.
std::unique_ptr<FakeTcLink> FakeQdisc() {
  auto l = std::make_unique<FakeTcLink>(FakeTcLink::WithRoot("parq", 0x10000));
  for (uint32_t minor : {0x1u, 0x2u, 0x10u, 0x1000u, 0x2a0fu})
    l->classes.push_back({0x10000 | minor, 0x10000, 0, "parq", std::nullopt});
  // A class of another qdisc with a minor in the agent's range.
  l->classes.push_back({0x20000 | 0x1008, 0x20000, 0, "htb", std::nullopt});
  l->filters = {{0, 0x10000, 4096, "fw", std::nullopt},
                {0x10000000, 0x10000, 4096, "fw", 0x11000},
                {0, 0x10000, 4100, "flower", std::nullopt},
                {1, 0x10000, 4100, "flower", 0x11004},
                {0x800800, 0x10000, 16, "u32", 0x10010}};
  return l;
}

TEST(TcClassesTest, InstalledFindsTheAgentsClassesAndFilters) {
  std::vector<std::vector<std::string>> ran;
  TcReservedClasses tc("eth0", RecordingNft(ran, {1, "", "unexpected"}),
                       FakeQdisc());
  auto got = tc.Installed();
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(got.value(), (std::vector<uint32_t>{0x1000, 0x1004, 0x2a0f}));
  EXPECT_TRUE(ran.empty());
  auto broken = FakeQdisc();
  broken->broken = KernelError{EPERM, ""};
  TcReservedClasses cannot("eth0", RecordingNft(ran, {1, "", "unexpected"}),
                           std::move(broken));
  got = cannot.Installed();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error(), "Operation not permitted");
}

// A class is whole with its class, its filter and a chain whose rule
// marks: 1000 is; 1004 has no class, 2a0f no filter, and neither a chain
// that marks (2a0f's was flushed, its rules gone).  With no table at all
// (`nft flush ruleset`), none is whole.
TEST(TcClassesTest, PartsFindAClassWithoutItsFilterOrChain) {
  std::vector<std::vector<std::string>> ran;
  const std::string table =
      "table inet parq {\n"
      "\tchain resv_1000 {\n"
      "\t\ttype filter hook output priority mangle; policy accept;\n"
      "\t\tmeta skuid 1001 ip daddr 10.0.0.2 udp dport 5001 meta mark set "
      "meta mark & 0x0000ffff | 0x10000000\n"
      "\t}\n"
      "\tchain resv_2a0f {\n"
      "\t\ttype filter hook output priority mangle; policy accept;\n"
      "\t}\n"
      "}\n";
  TcReservedClasses tc("eth0", RecordingNft(ran, {0, table, ""}), FakeQdisc());
  auto got = tc.InstalledParts();
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(got.value().installed,
            (std::vector<uint32_t>{0x1000, 0x1004, 0x2a0f}));
  EXPECT_EQ(got.value().incomplete, (std::vector<uint32_t>{0x1004, 0x2a0f}));
  EXPECT_EQ(ran.back(),
            (std::vector<std::string>{"nft", "list", "table", "inet", "parq"}));
  TcReservedClasses flushed(
      "eth0",
      RecordingNft(
          ran,
          {1, "", "Error: No such file or directory\nlist table inet parq\n"}),
      FakeQdisc());
  got = flushed.InstalledParts();
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(got.value().incomplete,
            (std::vector<uint32_t>{0x1000, 0x1004, 0x2a0f}));
  // An nft that fails: the classes are still listed, the check says why.
  TcReservedClasses broken("eth0", RecordingNft(ran, {1, "", "Error: boom\n"}),
                           FakeQdisc());
  got = broken.InstalledParts();
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(got.value().installed.size(), 3u);
  EXPECT_TRUE(got.value().incomplete.empty());
  EXPECT_NE(got.value().incomplete_error.find("boom"), std::string::npos)
      << got.value().incomplete_error;
}

// What each class carried, from its statistics in the one dump of the
// classes that InstalledParts() makes: the bytes of TCA_STATS2 and the
// backlogged time of its xstats; a class of a kernel without them
// (version 1, shorter), without statistics, or with another kind's, and
// classes of other qdiscs or outside the agent's range give none.
TEST(TcClassesTest, PartsReadEachClassesBytesAndBackloggedTime) {
  std::vector<std::vector<std::string>> ran;
  auto l = FakeQdisc();
  auto xstats = [](uint32_t version, uint64_t backlogged, size_t len) {
    tc_parq_class_xstats xs{};
    xs.version = version;
    xs.throttled_ns = backlogged;
    std::vector<uint8_t> raw(sizeof(xs));
    std::memcpy(raw.data(), &xs, sizeof(xs));
    raw.resize(len);
    return raw;
  };
  const uint32_t v2 = PARQ_XSTATS_CLASS | 2;
  for (TcObject& c : l->classes) {
    c.stats = TcStats{};
    c.stats->bytes = 1000 + TC_H_MIN(c.handle);
    c.xstats = xstats(v2, uint64_t{7} * TC_H_MIN(c.handle),
                      sizeof(tc_parq_class_xstats));
  }
  // 1:1000 as a version 1 kernel dumps it; 1:2a0f without statistics.
  ASSERT_EQ(l->classes[3].handle, 0x11000u);
  ASSERT_EQ(l->classes[4].handle, 0x12a0fu);
  l->classes[3].xstats = xstats(PARQ_XSTATS_CLASS | 1, 5,
                                offsetof(tc_parq_class_xstats, throttled_ns));
  l->classes[4].stats.reset();
  l->classes.push_back({0x10000 | 0x1100, 0x10000, 0, "parq", std::nullopt});
  l->classes.back().stats = TcStats{};
  l->classes.back().xstats = xstats(0, 5, sizeof(tc_parq_class_xstats));
  l->classes.push_back({0x10000 | 0x1200, 0x10000, 0, "parq", std::nullopt});
  l->classes.back().stats = TcStats{};
  l->classes.back().stats->bytes = 99;
  l->classes.back().xstats = xstats(v2, 12345, sizeof(tc_parq_class_xstats));
  const FakeTcLink* dumps = l.get();
  TcReservedClasses tc("eth0", RecordingNft(ran), std::move(l));
  auto got = tc.InstalledParts();
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(dumps->class_dumps, 1u);
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> seen;
  for (const auto& [minor, u] : got.value().uses)
    seen[minor] = {u.bytes, u.throttled_ns};
  const std::map<uint32_t, std::pair<uint64_t, uint64_t>> want = {
      {0x1200, {99, 12345}}};
  EXPECT_EQ(seen, want);
}

}  // namespace
