// SPDX-License-Identifier: GPL-2.0
//
// Tests of the lease's renewal off the request path (lease_keeper.cc with
// admission_agent.cc), against a real etcd (etcd_server.h): a request
// stuck in tc for longer than the lease's TTL does not stop the renewals,
// which go on at their interval; nothing is demoted, and the lease lives
// in etcd all along.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "admission/admission_agent.h"
#include "admission/cluster_admission.h"
#include "admission/etcd.h"
#include "admission/lease_keeper.h"
#include "admission/topology.h"
#include "etcd_server.h"
#include "fake_classes.h"
#include "topology_text.h"

namespace {

using namespace parq::parqd;
using namespace std::chrono_literals;
using etcd_test::EtcdTest;
using etcd_test::server;

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kMbit = 1'000'000;

uint64_t MonotonicNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Classes whose Install() takes `stuck` (a tc that hangs), then succeeds.
class StuckClasses : public test::FakeClasses {
 public:
  std::optional<std::string> Install(uint32_t minor, uint64_t rate,
                                     const Match& match,
                                     const std::vector<Address>& to,
                                     uint32_t owner) override {
    std::this_thread::sleep_for(stuck);
    return FakeClasses::Install(minor, rate, match, to, owner);
  }

  std::chrono::milliseconds stuck{0};
};

class LeaseKeeperTest : public EtcdTest {};

// TTL 2 s: renewals every 500 ms, demotion 1.5 s after the last one.  A
// request stuck for 4 s: the renewals keep their interval meanwhile (gaps
// of 1 s at most, a generous bound), nothing is demoted, and the lease is
// still etcd's afterwards.
TEST_F(LeaseKeeperTest, AStuckRequestDoesNotHoldBackTheRenewals) {
  auto t = Topology::Parse(
      "reservable = 80\n" + test::TomlHost("n1", {"10.0.0.1"}, "1gbit") +
          test::TomlHost("n2", {"10.0.0.2"}, "1gbit") + test::TomlSwitch("s1") +
          test::TomlCable("n1", "s1", "1gbit") +
          test::TomlCable("n2", "s1", "1gbit"),
      "test.toml");
  ASSERT_TRUE(t.ok()) << t.error();
  // Both clients record when each renewal etcd answered was sent, whoever
  // renews.
  std::mutex mu;
  std::vector<uint64_t> renewals;
  auto recorded = [&, post = CurlPost()](const std::string& url,
                                         const std::string& body,
                                         std::chrono::milliseconds timeout) {
    const uint64_t sent = MonotonicNs();
    auto r = post(url, body, timeout);
    if (r.ok() && url.ends_with("/v3/lease/keepalive")) {
      const std::lock_guard lock(mu);
      renewals.push_back(sent);
    }
    return r;
  };
  EtcdClient keeper_etcd({server->endpoint()}, 2s, recorded);
  EtcdClient etcd({server->endpoint()}, 2s, recorded);
  ClusterAdmission admission(t.value(), etcd, prefix_);
  StuckClasses classes;
  std::vector<std::string> log;
  LeaseKeeper keeper(keeper_etcd, 2, MonotonicNs);
  AdmissionAgent agent(
      AgentConfig{"n1", 2, {}}, t.value(), admission, etcd, classes,
      [&](int level, const std::string& line) {
        log.push_back(std::to_string(level) + " " + line);
      },
      MonotonicNs, &keeper);
  agent.Tick(MonotonicNs());
  ASSERT_TRUE(agent.leased()) << (log.empty() ? "" : log.back());
  const int64_t lease = agent.lease();

  classes.stuck = 4s;
  const uint64_t start = MonotonicNs();
  auto r = agent.Reserve({0, "root", {"root"}}, "n2", 100 * kMbit, "");
  const uint64_t end = MonotonicNs();
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_GE(end - start, 4 * kSec);
  std::vector<uint64_t> during;
  {
    const std::lock_guard lock(mu);
    for (uint64_t at : renewals)
      if (at >= start && at <= end)
        during.push_back(at);
  }
  // 8 at their interval; 3 at least, each gap 1 s at most.
  ASSERT_GE(during.size(), 3u) << "renewals while the request was stuck";
  EXPECT_LE(during.front() - start, kSec);
  for (size_t i = 1; i < during.size(); i++)
    EXPECT_LE(during[i] - during[i - 1], kSec) << "renewal " << i;
  EXPECT_LE(end - during.back(), kSec);
  // The agent takes the keeper's renewals: no demotion.
  agent.Tick(MonotonicNs());
  EXPECT_TRUE(agent.leased());
  EXPECT_EQ(agent.lease(), lease);
  EXPECT_EQ(agent.counters().demotions, 0u);
  EXPECT_EQ(agent.List().size(), 1u);
  auto in_etcd = admission.List();
  ASSERT_TRUE(in_etcd.ok()) << in_etcd.error();
  EXPECT_EQ(in_etcd.value().size(), 1u);
  agent.Stop();
}

}  // namespace
