// SPDX-License-Identifier: GPL-2.0
//
// Tests of etcd.cc and cluster_admission.cc against a real etcd (Debian's
// etcd-server, which scripts/install-deps check installs; the tests fail,
// not skip, without it): the client's calls, leases, a refusal for each
// of admission's three conditions, changes and releases, 16 reservations
// raced from 4 threads over one shared port that fits exactly k of them
// (exactly k admitted, 20 times), an unreachable etcd, a call that gives
// up when told (parqd's stop), etcd over TLS with client certificates,
// watches (events from a revision, compaction), and the destination's
// view of the reservations toward it (incoming.h).

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "admission/cluster_admission.h"
#include "admission/etcd.h"
#include "admission/incoming.h"
#include "admission/topology.h"
#include "ctl/cli.h"
#include "ctl/ctl.h"
#include "etcd_server.h"
#include "proto/metrics.h"
#include "topology_text.h"

namespace {

using namespace parq::parqd;
using namespace std::chrono_literals;

using etcd_test::EtcdTest;
using etcd_test::server;

TEST_F(EtcdTest, PutRangeAndPrefixes) {
  EtcdClient c = Client();
  ASSERT_TRUE(c.Put(prefix_ + "a/1", "x").ok());
  ASSERT_TRUE(c.Put(prefix_ + "a/2", std::string("\0\xff y", 4)).ok());
  ASSERT_TRUE(c.Put(prefix_ + "b", "z").ok());
  auto r = c.Range(prefix_ + "a/", EtcdPrefixEnd(prefix_ + "a/"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r.value().kvs.size(), 2u);
  EXPECT_EQ(r.value().kvs[1].value, std::string("\0\xff y", 4));
  EXPECT_GT(r.value().revision, 0);
  EXPECT_EQ(EtcdPrefixEnd("ab"), "ac");
  EXPECT_EQ(EtcdPrefixEnd(std::string("a\xff", 2)), "b");
}

TEST_F(EtcdTest, ACompareOverARangeSeesACreatedKey) {
  EtcdClient c = Client();
  const std::string pre = prefix_ + "use/";
  auto r = c.Range(pre, EtcdPrefixEnd(pre));
  ASSERT_TRUE(r.ok());
  const EtcdCompare unchanged{pre, EtcdPrefixEnd(pre),
                              EtcdCompare::Target::kModRevision,
                              EtcdCompare::Op::kLess, r.value().revision + 1};
  const EtcdOp put{EtcdOp::Kind::kPut, pre + "x", "1", "", 0};
  auto t1 = c.Txn({unchanged}, {put});
  ASSERT_TRUE(t1.ok()) << t1.error();
  EXPECT_TRUE(t1.value().succeeded);  // nothing changed (empty range)
  auto t2 = c.Txn({unchanged}, {put});
  ASSERT_TRUE(t2.ok());
  EXPECT_FALSE(t2.value().succeeded);  // pre + "x" was created since
}

TEST_F(EtcdTest, ALeaseTakesItsKeysAway) {
  EtcdClient c = Client();
  auto l = c.LeaseGrant(5);
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_GE(l.value().ttl_s, 5);
  ASSERT_TRUE(c.Put(prefix_ + "k", "v", l.value().id).ok());
  auto k = c.LeaseKeepAlive(l.value().id);
  ASSERT_TRUE(k.ok()) << k.error();
  EXPECT_GT(k.value().ttl_s, 0);
  ASSERT_TRUE(c.LeaseRevoke(l.value().id).ok());
  EXPECT_TRUE(c.Range(prefix_ + "k").value().kvs.empty());
  auto gone = c.LeaseKeepAlive(l.value().id);
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone.value().ttl_s, 0);
  EXPECT_TRUE(c.LeaseRevoke(l.value().id).ok());  // twice: harmless
}

TEST_F(EtcdTest, AnUnreachableEtcdIsAClearError) {
  EtcdClient c({"http://127.0.0.1:1", "http://127.0.0.1:2"}, 500ms, CurlPost());
  auto r = c.Range("x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.error().rfind("etcd: no endpoint answered (http://127.0.0.1:1: ", 0),
      0u)
      << r.error();
  EXPECT_NE(r.error().find("; http://127.0.0.1:2: "), std::string::npos);
}

TEST_F(EtcdTest, TheSecondEndpointServesWhenTheFirstIsDown) {
  EtcdClient c({"http://127.0.0.1:1", server->endpoint()}, 2s, CurlPost());
  ASSERT_TRUE(c.Put(prefix_ + "k", "v").ok());
  EXPECT_EQ(c.last_endpoint(), server->endpoint());
}

// etcd over TLS with client certificates, as a production cluster runs
// it: a client with the CA and its certificate is served; one without a
// certificate, or trusting another CA, is refused with the reason.
// Polls `done` every 20 ms for up to `seconds`; false if it never held.
template <typename F>
bool WaitFor(F done, int seconds = 10) {
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done())
      return true;
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

// Compacts the store up to its current revision; that revision.
int64_t Compact(EtcdClient& c, const std::string& key) {
  auto rev = c.Put(key, "x");
  EXPECT_TRUE(rev.ok()) << rev.error();
  auto r = CurlPost()(server->endpoint() + "/v3/kv/compaction",
                      nlohmann::json{{"revision", std::to_string(rev.value())},
                                     {"physical", true}}
                          .dump(),
                      5s);
  EXPECT_TRUE(r.ok()) << r.error();
  return rev.value();
}

// A watch from a revision sees the puts and deletes after it, in order,
// and stops within a second of being told to.
TEST_F(EtcdTest, AWatchSeesPutsAndDeletesFromItsRevision) {
  EtcdClient c = Client();
  auto r0 = c.Put(prefix_ + "a", "1");
  ASSERT_TRUE(r0.ok()) << r0.error();
  ASSERT_TRUE(c.Put(prefix_ + "b", "2").ok());  // before the watch's start
  std::mutex mu;
  std::vector<EtcdEvent> seen;
  std::atomic<bool> stop{false};
  EtcdWatchEnd end;
  std::thread t([&] {
    end = EtcdWatch(
        {"http://127.0.0.1:1", server->endpoint()}, CurlStream(), prefix_,
        EtcdPrefixEnd(prefix_), r0.value() + 2, 2s, 60s,
        [&](const std::vector<EtcdEvent>& events, int64_t) {
          const std::lock_guard lock(mu);
          seen.insert(seen.end(), events.begin(), events.end());
        },
        [&] { return !stop.load(); });
  });
  ASSERT_TRUE(c.Put(prefix_ + "c", "3").ok());
  ASSERT_TRUE(
      c.Txn({}, {{EtcdOp::Kind::kDelete, prefix_ + "a", "", "", 0}}).ok());
  ASSERT_TRUE(c.Put("/elsewhere", "4").ok());
  auto last = c.Put(prefix_ + "c", "5");
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(WaitFor([&] {
    const std::lock_guard lock(mu);
    return seen.size() >= 3;
  }));
  const auto asked = std::chrono::steady_clock::now();
  stop = true;
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 2500ms);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_FALSE(seen[0].deleted);
  EXPECT_EQ(seen[0].kv.key, prefix_ + "c");
  EXPECT_EQ(seen[0].kv.value, "3");
  EXPECT_TRUE(seen[1].deleted);
  EXPECT_EQ(seen[1].kv.key, prefix_ + "a");
  EXPECT_EQ(seen[2].kv.value, "5");
  EXPECT_EQ(end.kind, EtcdWatchEnd::kStopped);
  EXPECT_EQ(end.next_revision, last.value() + 1);
}

// Revisions etcd has compacted away: the watch says so (list again), and
// an etcd that nobody answers for is a failure naming the endpoints.
TEST_F(EtcdTest, AWatchOfCompactedRevisionsOrNoEtcdSaysSo) {
  EtcdClient c = Client();
  auto r0 = c.Put(prefix_ + "a", "1");
  ASSERT_TRUE(r0.ok());
  const int64_t compacted = Compact(c, prefix_ + "b");
  auto never = [](const std::vector<EtcdEvent>&, int64_t) {};
  auto go = [] { return true; };
  EtcdWatchEnd end =
      EtcdWatch({server->endpoint()}, CurlStream(), prefix_,
                EtcdPrefixEnd(prefix_), r0.value(), 2s, 10s, never, go);
  EXPECT_EQ(end.kind, EtcdWatchEnd::kCompacted) << end.why;
  EXPECT_EQ(end.next_revision, compacted);
  end = EtcdWatch({"http://127.0.0.1:1", "http://127.0.0.1:2"}, CurlStream(),
                  prefix_, EtcdPrefixEnd(prefix_), 1, 2s, 10s, never, go);
  EXPECT_EQ(end.kind, EtcdWatchEnd::kFailed);
  EXPECT_EQ(end.why.rfind("etcd watch: http://127.0.0.1:1: ", 0), 0u)
      << end.why;
  EXPECT_NE(end.why.find("; http://127.0.0.1:2: "), std::string::npos)
      << end.why;
}

// parqd's stop: a call to an etcd that never answers gives up when told,
// not when etcd-timeout (10 s here) passes.
TEST(EtcdCurlTest, AbortEndsACallInFlight) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  // Listening, never accepting: connections complete, no answer comes.
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(fd, 8), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string url =
      "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/v3/kv/range";
  std::atomic<bool> abort{false};
  const auto post = CurlPost({}, &abort);
  const auto t0 = std::chrono::steady_clock::now();
  std::thread stopper([&abort] {
    std::this_thread::sleep_for(300ms);
    abort = true;
  });
  const auto r = post(url, "{}", 10s);
  const auto took = std::chrono::steady_clock::now() - t0;
  stopper.join();
  close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "stopped");
  // About a second after the abort (libcurl's progress interval); the
  // timeout is 10 s.
  EXPECT_LT(took, 5s);
}

// A loopback server that answers one request with `answer` (and a header
// that announces nothing of its length: it closes the connection at the
// end), for the tests of the answers' cap.
class OneAnswerServer {
 public:
  explicit OneAnswerServer(std::string answer) : answer_(std::move(answer)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        listen(fd_, 8) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    url_ = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    thread_ = std::thread([this] {
      const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0)
        return;
      char buf[4096];
      (void)read(c, buf, sizeof(buf));  // the request: not read further
      const std::string head =
          "HTTP/1.1 200 OK\r\nContent-Type: "
          "application/json\r\nConnection: close\r\n\r\n";
      const std::string all = head + answer_;
      for (size_t off = 0; off < all.size();) {
        const ssize_t n = write(c, all.data() + off, all.size() - off);
        if (n <= 0)
          break;
        off += static_cast<size_t>(n);
      }
      close(c);
    });
  }
  ~OneAnswerServer() {
    if (fd_ >= 0)
      shutdown(fd_, SHUT_RDWR);
    if (thread_.joinable())
      thread_.join();
    if (fd_ >= 0)
      close(fd_);
  }
  OneAnswerServer(const OneAnswerServer&) = delete;
  OneAnswerServer& operator=(const OneAnswerServer&) = delete;
  const std::string& url() const { return url_; }

 private:
  std::string answer_, url_;
  int fd_ = -1;
  std::thread thread_;
};

// An answer, and a watch line, of more than kEtcdMaxAnswerBytes (16 MiB)
// are refused once the cap is passed, not kept in memory whatever their
// size.
TEST(EtcdCurlTest, AnswersPastTheCapAreRefused) {
  const std::string big =
      R"({"header":{},"pad":")" + std::string(size_t{16} << 20, 'x') + "\"}";
  {
    OneAnswerServer s(big);
    ASSERT_FALSE(s.url().empty());
    const auto r = CurlPost()(s.url() + "/v3/kv/range", "{}", 10s);
    ASSERT_FALSE(r.ok()) << "an answer of " << big.size()
                         << " bytes was taken whole";
    EXPECT_NE(r.error().find("larger than"), std::string::npos) << r.error();
  }
  {
    OneAnswerServer s(big);
    ASSERT_FALSE(s.url().empty());
    size_t lines = 0;
    const auto r = CurlStream()(
        s.url() + "/v3/watch", "{}", 10s, 10s,
        [&lines](std::string_view) {
          lines++;
          return true;
        },
        [] { return true; });
    ASSERT_FALSE(r.ok()) << "a watch line of " << big.size()
                         << " bytes was buffered whole";
    EXPECT_NE(r.error().find("longer than"), std::string::npos) << r.error();
    EXPECT_EQ(lines, 0u);
  }
}

// A number the gateway writes as a string is read whole or not at all: a
// revision with trailing bytes reads as absent, as a revision of another
// type does, never as its leading digits.
TEST(EtcdCurlTest, NumbersWithTrailingBytesReadAsAbsent) {
  OneAnswerServer s(
      R"({"header":{"revision":"12abc"},"kvs":[{"key":"aw==","value":"dg==",)"
      R"("create_revision":"5","mod_revision":"7 ","version":"0x1",)"
      R"("lease":"-3"}]})");
  ASSERT_FALSE(s.url().empty());
  EtcdClient c({s.url()}, 10s, CurlPost());
  const auto r = c.Range("k");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().revision, 0);
  ASSERT_EQ(r.value().kvs.size(), 1u);
  const EtcdKv& kv = r.value().kvs[0];
  EXPECT_EQ(kv.key, "k");
  EXPECT_EQ(kv.create_revision, 5);
  EXPECT_EQ(kv.mod_revision, 0);
  EXPECT_EQ(kv.version, 0);
  EXPECT_EQ(kv.lease, -3);
}

TEST(EtcdTlsTest, ClientCertificatesAndTheirErrors) {
  etcd_test::TestPki pki{std::filesystem::temp_directory_path() /
                         ("parqd-etcd-pki-" + std::to_string(getpid()))};
  std::string why;
  ASSERT_TRUE(pki.Make(why)) << why;
  etcd_test::EtcdServer tls_server;
  ASSERT_TRUE(tls_server.Start(why, 1, &pki)) << why;
  const std::string url = tls_server.endpoint();
  ASSERT_EQ(url.rfind("https://127.0.0.1:", 0), 0u) << url;

  EtcdClient good({url}, 5s, CurlPost(pki.Client()));
  ASSERT_TRUE(good.Put("/tls/k", "v").ok());
  auto r = good.Range("/tls/k");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r.value().kvs.size(), 1u);
  EXPECT_EQ(r.value().kvs[0].value, "v");

  // No client certificate: etcd ends the handshake.
  EtcdClient anonymous({url}, 5s, CurlPost({pki.Path("ca.pem"), "", ""}));
  auto e = anonymous.Range("/tls/k");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().rfind("etcd: no endpoint answered (" + url + ": ", 0), 0u)
      << e.error();
  // etcd's certificate is not signed by the CA the client trusts.
  EtcdClient wrong_ca(
      {url}, 5s,
      CurlPost({pki.Path("other-ca.pem"), pki.Path("client.pem"),
                pki.Path("client-key.pem")}));
  e = wrong_ca.Range("/tls/k");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find("certificate"), std::string::npos) << e.error();
  // Plain HTTP to a TLS member.
  EtcdClient plain({"http" + url.substr(5)}, 5s, CurlPost());
  EXPECT_FALSE(plain.Range("/tls/k").ok());
  std::error_code ec;
  std::filesystem::remove_all(pki.dir, ec);
}

// parqctl with `argv`: its exit status (100 + the status for an error of
// the command line), its output and errors in `out`.
int RunParqctl(const std::vector<std::string>& argv, std::string& out) {
  std::ostringstream o, e;
  auto parsed = ParseCtlArgs(argv, o, e);
  if (!std::holds_alternative<CtlArgs>(parsed)) {
    out = o.str() + e.str();
    return std::get<int>(parsed) + 100;
  }
  const int rc = RunCtl(
      std::get<CtlArgs>(parsed),
      []() -> Result<std::unique_ptr<KernelCreditTable>, KernelError> {
        return Err{KernelError{ENOENT, "no kernel in this test"}};
      },
      o, e);
  out = o.str() + e.str();
  return rc;
}

// Hosts a1, a2 (rack 1) and b1, b2 (rack 2); the racks' spine port
// tor1 -> tor2 1gbit: every condition has a bound of 800mbit.
std::string TopologyText() {
  return parq::parqd::test::TwoRacks("10gbit");
}

class AdmissionTest : public EtcdTest {
 protected:
  void SetUp() override {
    EtcdTest::SetUp();
    auto t = Topology::Parse(TopologyText(), "test.toml");
    ASSERT_TRUE(t.ok()) << t.error();
    topo_ = std::move(t).value();
    // Reservations are held by a lease, as an agent's are.
    auto l = Client().LeaseGrant(3600);
    ASSERT_TRUE(l.ok()) << l.error();
    lease_ = l.value().id;
  }
  static ReservationRequest Req(const char* from, const char* to,
                                uint64_t rate) {
    return {from, to, rate, "dport 5000", "alice", std::nullopt, ""};
  }
  Topology topo_;
  int64_t lease_ = 0;
};

TEST_F(AdmissionTest, EachConditionRefusesAtItsBound) {
  EtcdClient c = Client();
  ClusterAdmission adm(topo_, c, prefix_);
  // (1) the source's NIC: a1 sends at most 800mbit.
  ASSERT_TRUE(adm.Reserve(Req("a1", "a2", 500'000'000), lease_).ok());
  auto r = adm.Reserve(Req("a1", "a2", 300'000'001), lease_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(),
            "a1's NIC (sending) is full: capacity 1gbit, reservable 800mbit "
            "(80%), reserved 500mbit, requested 300000001bit");
  // (2) the port between the switches: tor1 -> tor2, 800mbit.
  ASSERT_TRUE(adm.Reserve(Req("a2", "b2", 700'000'000), lease_).ok());
  r = adm.Reserve(Req("a2", "b2", 100'000'001), lease_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind("link tor1 -> tor2 is full: capacity 1gbit", 0), 0u)
      << r.error();
  // (3) the destination's NIC: b1 receives at most 800mbit (from b2, in
  // its rack, so that no port between the switches is charged).
  ASSERT_TRUE(adm.Reserve(Req("b2", "b1", 800'000'000), lease_).ok());
  r = adm.Reserve(Req("b2", "b1", 1), lease_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind("b1's NIC (receiving) is full", 0), 0u)
      << r.error();
  // What is held, resource by resource.
  auto use = adm.Use();
  ASSERT_TRUE(use.ok()) << use.error();
  for (const ResourceUse& u : use.value()) {
    if (u.resource->id == "link/tor1/tor2") {
      EXPECT_EQ(u.reserved, 700'000'000u);
      EXPECT_EQ(u.reservations, 1u);
    }
  }
  EXPECT_EQ(adm.List().value().size(), 3u);
}

TEST_F(AdmissionTest, BadInputChangesNothing) {
  EtcdClient c = Client();
  ClusterAdmission adm(topo_, c, prefix_);
  EXPECT_EQ(adm.Reserve(Req("a1", "zz", 1), lease_).error(),
            "no host named or addressed \"zz\" in the topology");
  EXPECT_EQ(adm.Reserve(Req("a1", "10.0.1.1", 1), lease_).error(),
            "the source and the destination are the same host, a1");
  EXPECT_EQ(adm.Reserve(Req("a1", "b1", 0), lease_).error(),
            "a rate of 0 reserves nothing");
  EXPECT_EQ(adm.Release("a1-nope").error(), "no reservation a1-nope");
  EXPECT_TRUE(adm.List().value().empty());
  auto c2 = c.Range(prefix_, EtcdPrefixEnd(prefix_));
  EXPECT_TRUE(c2.value().kvs.empty());
}

TEST_F(AdmissionTest, ChangeAndRelease) {
  EtcdClient c = Client();
  ClusterAdmission adm(topo_, c, prefix_);
  auto r = adm.Reserve(Req("a2", "b2", 400'000'000), lease_);
  ASSERT_TRUE(r.ok()) << r.error();
  // Its own 400mbit is not counted against its new rate.
  auto up = adm.Change(r.value().id, 800'000'000);
  ASSERT_TRUE(up.ok()) << up.error();
  EXPECT_FALSE(adm.Change(r.value().id, 800'000'001).ok());
  EXPECT_FALSE(adm.Reserve(Req("a2", "b2", 1), lease_).ok());
  auto rel = adm.Release(r.value().id);
  ASSERT_TRUE(rel.ok()) << rel.error();
  EXPECT_EQ(rel.value().rate, 800'000'000u);
  EXPECT_TRUE(adm.Reserve(Req("a2", "b2", 800'000'000), lease_).ok());
  EXPECT_FALSE(adm.Release(r.value().id).ok());  // gone
}

TEST_F(AdmissionTest, AnAgentsLeaseHoldsItsReservations) {
  EtcdClient c = Client();
  ClusterAdmission adm(topo_, c, prefix_);
  auto lease = c.LeaseGrant(10);
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(adm.Reserve(Req("a2", "b2", 800'000'000), lease.value().id).ok());
  EXPECT_FALSE(adm.Reserve(Req("a2", "b2", 1), lease_).ok());
  // The agent dies (its lease ends): the capacity is free again.
  ASSERT_TRUE(c.LeaseRevoke(lease.value().id).ok());
  EXPECT_TRUE(adm.List().value().empty());
  EXPECT_TRUE(adm.Reserve(Req("a2", "b2", 800'000'000), lease_).ok());
}

// A use/ key that no lease holds would never go away: whoever wrote it
// (an agent's bug, a hand-made etcdctl put) would hold its link for ever.
// Admission counts only what a live lease holds and says which key it
// left out.
TEST_F(AdmissionTest, UseWithoutALeaseIsIgnoredAndNamed) {
  EtcdClient c = Client();
  std::vector<std::string> log;
  ClusterAdmission adm(topo_, c, prefix_, [&log](int, const std::string& line) {
    log.push_back(line);
  });
  const std::string stray =
      prefix_ + "use/a2/link/tor1/tor2/a2-0000000000000000";
  ASSERT_TRUE(c.Put(stray, "800000000").ok());
  auto r = adm.Reserve(Req("a2", "b2", 800'000'000), lease_);
  ASSERT_TRUE(r.ok()) << "a use/ key without a lease blocked the link: "
                      << r.error();
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log[0].find(stray), std::string::npos) << log[0];
  EXPECT_NE(log[0].find("no lease"), std::string::npos) << log[0];
  auto use = adm.Use();
  ASSERT_TRUE(use.ok()) << use.error();
  for (const ResourceUse& u : use.value()) {
    if (u.resource->id == "link/tor1/tor2") {
      EXPECT_EQ(u.reserved, 800'000'000u);
    }
  }
  // A reservation must itself be held by a lease.
  auto unheld = adm.Reserve(Req("a1", "b1", 1), 0);
  ASSERT_FALSE(unheld.ok());
  EXPECT_NE(unheld.error().find("lease"), std::string::npos) << unheld.error();
}

// 16 reservations of 100mbit from 4 threads (each its own client, as 4
// hosts would be) through tor1 -> tor2, which fits exactly k = 8 of them
// (800mbit reservable); 20 repetitions.
TEST_F(AdmissionTest, RacedReservationsNeverOverAdmit) {
  constexpr int kThreads = 4, kEach = 4, kFits = 8, kReps = 20;
  const char* from[] = {"a1", "a2", "a1", "a2"};
  const char* to[] = {"b2", "b2", "b1", "b1"};
  uint64_t retries = 0;
  for (int rep = 0; rep < kReps; rep++) {
    const std::string pre = prefix_ + std::to_string(rep) + "/";
    std::atomic<int> admitted{0}, refused{0}, failed{0};
    std::mutex m;
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; t++) {
      threads.emplace_back([&, t] {
        EtcdClient c = Client();
        ClusterAdmission adm(topo_, c, pre);
        for (int i = 0; i < kEach; i++) {
          auto r = adm.Reserve(Req(from[t], to[t], 100'000'000), lease_);
          if (r.ok())
            admitted++;
          else if (r.error().find(" is full: ") != std::string::npos)
            refused++;
          else
            failed++;
        }
        const std::lock_guard<std::mutex> g(m);
        retries += adm.retries();
      });
    }
    for (std::thread& th : threads)
      th.join();
    EXPECT_EQ(failed.load(), 0) << "repetition " << rep;
    EXPECT_EQ(admitted.load(), kFits) << "repetition " << rep;
    EXPECT_EQ(refused.load(), kThreads * kEach - kFits) << "repetition " << rep;
    EtcdClient c = Client();
    ClusterAdmission adm(topo_, c, pre);
    auto use = adm.Use();
    ASSERT_TRUE(use.ok()) << use.error();
    for (const ResourceUse& u : use.value())
      EXPECT_LE(u.reserved, u.reservable) << u.resource->id;
  }
  // The race was real: some transactions lost and were retried.
  std::printf("[ figures  ] %d repetitions: %llu retried transactions\n", kReps,
              static_cast<unsigned long long>(retries));
}

// The destination's view (incoming.h): what is reserved toward b2, kept by
// list-then-watch while reservations come, change, go with a lease and
// are released.
class IncomingTest : public AdmissionTest {
 protected:
  void SetUp() override {
    AdmissionTest::SetUp();
    client_.emplace(Client());
    adm_.emplace(topo_, *client_, prefix_);
    watch_client_.emplace(Client());
  }
  void Start(EtcdStream stream,
             std::vector<std::string> endpoints = {server->endpoint()}) {
    incoming_.emplace("b2", prefix_, *watch_client_, std::move(endpoints),
                      std::move(stream), 2s,
                      [this](int, const std::string& line) {
                        const std::lock_guard lock(log_mu_);
                        log_.push_back(line);
                      });
    thread_ = std::thread([this] { incoming_->Run(stop_); });
  }
  void TearDown() override {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
  }
  using Rates = std::map<std::string, uint64_t>;
  // The view's ids and rates once they are `want` and in sync, or as they
  // are after 10 s.
  Rates View(const Rates& want) {
    Rates got;
    WaitFor([&] {
      const auto v = incoming_->Snapshot();
      got.clear();
      for (const Reservation& r : v.reservations)
        got[r.id] = r.rate;
      return v.synced && got == want;
    });
    return got;
  }

  std::optional<EtcdClient> client_, watch_client_;
  std::optional<ClusterAdmission> adm_;
  std::optional<IncomingReservations> incoming_;
  std::atomic<bool> paused_{false}, waiting_{false};  // a test's stream
  const EtcdStream real_ = CurlStream();
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(IncomingTest, TheDestinationSeesTheReservationsTowardIt) {
  auto before = adm_->Reserve(Req("a2", "b2", 100'000'000), lease_);  // listed
  ASSERT_TRUE(before.ok()) << before.error();
  Start(CurlStream());
  {
    const Rates want{{before.value().id, 100'000'000}};
    EXPECT_EQ(View(want), want);
  }
  // Watched: a new one, one toward another host, a change.
  auto to_b2 = adm_->Reserve(Req("a1", "b2", 200'000'000), lease_);
  ASSERT_TRUE(to_b2.ok()) << to_b2.error();
  ASSERT_TRUE(adm_->Reserve(Req("a1", "b1", 50'000'000), lease_).ok());
  ASSERT_TRUE(adm_->Change(before.value().id, 300'000'000).ok());
  {
    const Rates want{{before.value().id, 300'000'000},
                     {to_b2.value().id, 200'000'000}};
    EXPECT_EQ(View(want), want);
  }
  // A holder's lease ends: its reservation goes; a release.
  auto lease = client_->LeaseGrant(30);
  ASSERT_TRUE(lease.ok());
  auto leased = adm_->Reserve(Req("a2", "b2", 10'000'000), lease.value().id);
  ASSERT_TRUE(leased.ok()) << leased.error();
  EXPECT_EQ(View({{before.value().id, 300'000'000},
                  {to_b2.value().id, 200'000'000},
                  {leased.value().id, 10'000'000}})
                .count(leased.value().id),
            1u);
  ASSERT_TRUE(client_->LeaseRevoke(lease.value().id).ok());
  ASSERT_TRUE(adm_->Release(to_b2.value().id).ok());
  {
    const Rates want{{before.value().id, 300'000'000}};
    EXPECT_EQ(View(want), want);
  }
  const auto v = incoming_->Snapshot();
  EXPECT_EQ(v.lists, 1u);  // all of it from the one watch
  EXPECT_EQ(v.watch_errors, 0u);
  // The metrics say the same.
  PromText text;
  incoming_->Metrics(text);
  EXPECT_NE(text.text().find("parqd_admission_incoming_reservations 1\n"),
            std::string::npos)
      << text.text();
  EXPECT_NE(
      text.text().find("parqd_admission_incoming_reserved_bps 300000000\n"),
      std::string::npos);
  EXPECT_NE(text.text().find("parqd_admission_incoming_synced 1\n"),
            std::string::npos);
}

// While its watch was away, etcd compacted the revisions it would resume
// from: it lists again and has what changed meanwhile.
TEST_F(IncomingTest, AfterACompactionItListsAgain) {
  // The watch thread outlives this body (TearDown() joins it): what its
  // stream refers to is the fixture's.
  std::atomic<bool>& paused = paused_;
  std::atomic<bool>& waiting = waiting_;
  const EtcdStream& real = real_;
  Start([&paused, &waiting, &real](
            const std::string& url, const std::string& body,
            std::chrono::milliseconds ct, std::chrono::milliseconds d,
            const std::function<bool(std::string_view)>& on_line,
            const std::function<bool()>& keep_going)
            -> Result<EtcdStreamEnd, std::string> {
    while (paused && keep_going()) {
      waiting = true;
      std::this_thread::sleep_for(10ms);
    }
    waiting = false;
    return real(url, body, ct, d, on_line,
                [&keep_going, &paused] { return keep_going() && !paused; });
  });
  auto first = adm_->Reserve(Req("a2", "b2", 100'000'000), lease_);
  ASSERT_TRUE(first.ok());
  {
    const Rates want{{first.value().id, 100'000'000}};
    ASSERT_EQ(View(want), want);
  }
  paused = true;
  ASSERT_TRUE(WaitFor([&] { return waiting.load(); }));
  auto second = adm_->Reserve(Req("a1", "b2", 200'000'000), lease_);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(adm_->Release(first.value().id).ok());
  Compact(*client_, prefix_ + "compact");
  paused = false;
  EXPECT_TRUE(WaitFor([&] { return incoming_->Snapshot().lists == 2; }));
  {
    const Rates want{{second.value().id, 200'000'000}};
    EXPECT_EQ(View(want), want);
  }
  const std::lock_guard lock(log_mu_);
  bool said = false;
  for (const std::string& line : log_)
    said |= line.find("etcd compacted the revisions") != std::string::npos;
  EXPECT_TRUE(said);
}

// No etcd: not in sync, and why; it keeps trying.
TEST_F(IncomingTest, WithoutEtcdItIsNotInSyncAndSaysWhy) {
  watch_client_.emplace(EtcdClient({"http://127.0.0.1:1"}, 1s, CurlPost()));
  Start(CurlStream(), {"http://127.0.0.1:1"});
  std::this_thread::sleep_for(1500ms);
  const auto v = incoming_->Snapshot();
  EXPECT_FALSE(v.synced);
  EXPECT_EQ(v.lists, 0u);
  EXPECT_NE(v.error.find("http://127.0.0.1:1"), std::string::npos) << v.error;
}

// A record of the wrong type under this host's to/ prefix, there before
// the list and written while it watches: each is skipped, logged once and
// counted; the reservations beside them stay, and nothing throws on the
// watch thread (an exception there would abort parqd, and again at every
// restart).
TEST_F(IncomingTest, AMalformedRecordIsSkippedLoggedOnceAndCounted) {
  const std::string to = prefix_ + "to/a1/b2/";
  ASSERT_TRUE(
      client_->Put(to + "x", R"({"id":"x","resources":[],"rate":"boom"})")
          .ok());
  auto good = adm_->Reserve(Req("a2", "b2", 100'000'000), lease_);
  ASSERT_TRUE(good.ok()) << good.error();
  Start(CurlStream());
  {
    const Rates want{{good.value().id, 100'000'000}};
    EXPECT_EQ(View(want), want);
  }
  ASSERT_TRUE(client_->Put(to + "y", R"({"id":7,"resources":"r"})").ok());
  auto later = adm_->Reserve(Req("a1", "b2", 200'000'000), lease_);
  ASSERT_TRUE(later.ok()) << later.error();
  {
    const Rates want{{good.value().id, 100'000'000},
                     {later.value().id, 200'000'000}};
    EXPECT_EQ(View(want), want);
  }
  PromText text;
  incoming_->Metrics(text);
  EXPECT_NE(text.text().find("parqd_admission_incoming_malformed_total 2\n"),
            std::string::npos)
      << text.text();
  const std::lock_guard lock(log_mu_);
  for (const char* key : {"x", "y"})
    EXPECT_EQ(std::count_if(log_.begin(), log_.end(),
                            [&](const std::string& l) {
                              return l.find(to + key) != std::string::npos;
                            }),
              1)
        << key;
}

// A record is the reservation its key names: a copy of a live record put
// under another key (by whoever can write the prefix) would count its rate
// twice toward the destination, and be dropped or kept by whichever of its
// key or its id a later event names; under another host's name, it would
// pass for that host's.  It is malformed instead.
TEST_F(IncomingTest, ARecordWhoseIdIsNotItsKeyIsMalformed) {
  const std::string to = prefix_ + "to/a2/b2/";
  auto good = adm_->Reserve(Req("a2", "b2", 100'000'000), lease_);
  ASSERT_TRUE(good.ok()) << good.error();
  auto kv = client_->Range(to + good.value().id);
  ASSERT_TRUE(kv.ok() && kv.value().kvs.size() == 1);
  const std::string copy = kv.value().kvs[0].value;
  ASSERT_TRUE(client_->Put(to + "listed-copy", copy).ok());
  Start(CurlStream());
  const auto settled = [&](size_t malformed) {
    return WaitFor(
        [&] {
          const auto v = incoming_->Snapshot();
          return v.synced && v.malformed >= malformed;
        },
        3);
  };
  settled(1);
  EXPECT_EQ(incoming_->Snapshot().reservations.size(), 1u);
  // The same, written while it watches.
  ASSERT_TRUE(client_->Put(to + "watched-copy", copy).ok());
  settled(2);
  // Under another host's keys (a1's, which a1 alone may write), with its
  // own id: a1 cannot pass for a2.
  ASSERT_TRUE(client_->Put(prefix_ + "to/a1/b2/" + good.value().id, copy).ok());
  settled(3);
  const auto v = incoming_->Snapshot();
  ASSERT_EQ(v.reservations.size(), 1u);
  EXPECT_EQ(v.reservations[0].rate, 100'000'000u);
  EXPECT_EQ(v.malformed, 3u);
  // Its release leaves nothing behind.
  ASSERT_TRUE(adm_->Release(good.value().id).ok());
  EXPECT_EQ(View({}), Rates{});
}

// etcd's answers of the wrong shape (a member's bug, or whatever answers
// on its port) are errors, not exceptions.
TEST(EtcdShapeTest, AnswersOfTheWrongTypeAreErrors) {
  std::string answer;
  EtcdClient c({"http://etcd.invalid:2379"}, 1s,
               [&answer](const std::string&, const std::string&,
                         std::chrono::milliseconds)
                   -> parq::parqd::Result<EtcdBody, std::string> {
                 return EtcdBody{answer};
               });
  answer = R"({"succeeded":"yes","header":{"revision":"5"}})";
  auto txn = c.Txn({}, {});
  ASSERT_FALSE(txn.ok());
  EXPECT_NE(txn.error().find("not of the expected shape"), std::string::npos)
      << txn.error();
  // A watch line of the wrong shape breaks the watch, with a reason.
  for (const char* line :
       {R"({"result":{"canceled":"yes"}})", R"({"result":{"events":[7]}})",
        R"({"result":{"events":[{"type":1,"kv":{}}]}})", R"({"result":3})"}) {
    const EtcdStream stream =
        [line](const std::string&, const std::string&,
               std::chrono::milliseconds, std::chrono::milliseconds,
               const std::function<bool(std::string_view)>& on_line,
               const std::function<bool()>&)
        -> parq::parqd::Result<EtcdStreamEnd, std::string> {
      on_line(line);
      return EtcdStreamEnd{};
    };
    const EtcdWatchEnd end = EtcdWatch(
        {"http://etcd.invalid:2379"}, stream, "k", "", 1, 1s, 1s,
        [](const std::vector<EtcdEvent>&, int64_t) {}, [] { return true; });
    EXPECT_EQ(end.kind, EtcdWatchEnd::kFailed) << line;
    EXPECT_NE(end.why.find("not of the expected shape"), std::string::npos)
        << line << ": " << end.why;
  }
}

// parqctl links and reservations read what ClusterAdmission wrote.
TEST_F(AdmissionTest, ParqctlShowsLinksAndReservations) {
  const std::string file =
      ::testing::TempDir() + "parqd_etcd_test_topology.toml";
  std::ofstream(file) << TopologyText();
  EtcdClient c = Client();
  ClusterAdmission adm(topo_, c, prefix_);
  auto r = adm.Reserve(Req("a2", "b2", 300'000'000), lease_);
  ASSERT_TRUE(r.ok()) << r.error();
  const auto run = RunParqctl;
  std::string out;
  ASSERT_EQ(run({"parqctl", "links", "--topology", file, "--etcd",
                 "http://127.0.0.1:1," + server->endpoint(), "--prefix",
                 prefix_, "--json"},
                out),
            0)
      << out;
  const nlohmann::json links = nlohmann::json::parse(out);
  int seen = 0;
  for (const auto& l : links) {
    if (l["id"] == "link/tor1/tor2") {
      EXPECT_EQ(l["reserved_bps"], 300'000'000u);
      EXPECT_EQ(l["best_effort_bps"], 700'000'000u);
      EXPECT_EQ(l["reservations"], 1u);
      seen++;
    } else if (l["id"] == "link/tor2/tor1") {
      EXPECT_EQ(l["reserved_bps"], 0u);
      seen++;
    }
  }
  EXPECT_EQ(seen, 2);
  ASSERT_EQ(run({"parqctl", "reservations", "--topology", file, "--etcd",
                 server->endpoint(), "--prefix", prefix_},
                out),
            0)
      << out;
  EXPECT_EQ(out.rfind(r.value().id + ": a2 -> b2 300mbit, owner alice, "
                                     "match dport 5000\n  host/a2/send\n",
                      0),
            0u)
      << out;
  // Bad input: a clear error, exit status 1 or 2.
  EXPECT_EQ(
      run({"parqctl", "links", "--topology", file, "--etcd", "127.0.0.1:2379"},
          out),
      102);
  EXPECT_EQ(out,
            "parqctl: --etcd 127.0.0.1:2379: give a URL, e.g. "
            "http://10.0.0.1:2379\n");
  EXPECT_EQ(run({"parqctl", "links", "--topology", file, "--etcd",
                 "http://127.0.0.1:1"},
                out),
            1);
  EXPECT_EQ(out.rfind("parqctl: etcd: no endpoint answered", 0), 0u) << out;
  std::remove(file.c_str());
}

// etcd with authentication on and the roles `parqctl topology etcd-roles`
// prints, run by etcdctl: each host reads every reservation and writes
// its own keys only.  A host that tries to write, release or revoke
// another's is refused by etcd; what it may write under its own name
// cannot pass for another host's reservation, nor charge another host's
// sending NIC.  A password changed in etcd and in the file takes effect
// at the next call (etcd forgets the old token; the client authenticates
// again), and a wrong one is a clear error.
TEST(EtcdRolesTest, EachHostWritesItsOwnKeysOnly) {
  namespace fs = std::filesystem;
  etcd_test::EtcdServer own;  // authentication is the whole member's
  std::string why;
  ASSERT_TRUE(own.Start(why)) << why;
  const fs::path dir = fs::temp_directory_path() /
                       ("parqd-etcd-roles-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "pw");
  const std::string prefix = "/roles/";
  const std::string topo_file = (dir / "topology.toml").string();
  std::ofstream(topo_file) << TopologyText();
  const auto password = [&](const std::string& host, const std::string& pw) {
    const fs::path f = dir / "pw" / host;
    std::ofstream(f) << pw << "\n";
    fs::permissions(f, fs::perms::owner_read | fs::perms::owner_write);
    return f.string();
  };
  for (const char* h : {"a1", "a2", "b1", "b2"})
    password(h, std::string("pw-") + h);

  std::string script;
  ASSERT_EQ(
      RunParqctl({"parqctl", "topology", "etcd-roles", topo_file, "--prefix",
                  prefix, "--passwords", (dir / "pw").string()},
                 script),
      0)
      << script;
  std::ofstream(dir / "roles.sh") << script;
  const std::string etcdctl =
      "ETCDCTL_API=3 ETCDCTL_ENDPOINTS=" + own.endpoint() + " etcdctl ";
  const auto sh = [&](const std::string& command) {
    const std::string line =
        "exec >>'" + (dir / "sh.log").string() + "' 2>&1; " + command;
    return std::system(line.c_str());
  };
  ASSERT_EQ(sh("ETCDCTL_API=3 ETCDCTL_ENDPOINTS=" + own.endpoint() + " sh '" +
               (dir / "roles.sh").string() + "'"),
            0)
      << script;
  // Run again (hosts added later): nothing fails on what exists.
  ASSERT_EQ(sh("ETCDCTL_API=3 ETCDCTL_ENDPOINTS=" + own.endpoint() + " sh '" +
               (dir / "roles.sh").string() + "'"),
            0);
  ASSERT_EQ(
      sh(etcdctl + "user add root --new-user-password=rootpw && " + etcdctl +
         "user grant-role root root && " + etcdctl + "auth enable"),
      0);

  const auto as = [&](const std::string& host) {
    return EtcdClient(
        {own.endpoint()}, 5s,
        CurlPost({}, nullptr, {"parq-" + host, (dir / "pw" / host).string()}));
  };
  EtcdClient a1 = as("a1"), a2 = as("a2"), b1 = as("b1");
  EtcdClient anonymous({own.endpoint()}, 5s, CurlPost());
  EXPECT_FALSE(anonymous.Range(prefix).ok());
  Topology topo = Topology::Parse(TopologyText(), "test.toml").value();
  ClusterAdmission adm1(topo, a1, prefix), adm2(topo, a2, prefix),
      adm_b1(topo, b1, prefix);
  auto lease1 = a1.LeaseGrant(60);
  auto lease2 = a2.LeaseGrant(60);
  auto lease_b1 = b1.LeaseGrant(60);
  ASSERT_TRUE(lease1.ok() && lease2.ok() && lease_b1.ok()) << lease1.error();
  const ReservationRequest req{"a1",    "b2",         100'000'000, "dport 5000",
                               "alice", std::nullopt, ""};
  auto r1 = adm1.Reserve(req, lease1.value().id);
  ASSERT_TRUE(r1.ok()) << r1.error();
  ReservationRequest req2 = req;
  req2.from = "a2";
  auto r2 = adm2.Reserve(req2, lease2.value().id);
  ASSERT_TRUE(r2.ok()) << r2.error();
  ASSERT_EQ(adm1.List().value().size(), 2u);  // a1 reads a2's too

  // a1 cannot write a2's keys, release a2's reservation or end its lease.
  const std::string id2 = r2.value().id;
  for (const std::string& key :
       {prefix + "resv/a2/a2-0123456789abcdef",
        prefix + "use/a2/link/tor1/tor2/a2-0123456789abcdef",
        prefix + "to/a2/b2/a2-0123456789abcdef", prefix + "resv/" + id2,
        prefix + "job/a2/j", prefix + "member/b1/j"}) {
    auto put = a1.Put(key, "800000000", lease1.value().id);
    ASSERT_FALSE(put.ok()) << "a1 wrote " << key;
    EXPECT_NE(put.error().find("permission denied"), std::string::npos)
        << put.error();
  }
  auto release = adm1.Release(id2);
  ASSERT_FALSE(release.ok());
  EXPECT_NE(release.error().find("permission denied"), std::string::npos)
      << release.error();
  auto revoke = a1.LeaseRevoke(lease2.value().id);
  ASSERT_FALSE(revoke.ok()) << "a1 ended a2's lease";
  EXPECT_NE(revoke.error().find("permission denied"), std::string::npos)
      << revoke.error();
  ASSERT_EQ(adm2.List("a2").value().size(), 1u);

  // Under its own name, a1 can copy a2's record toward b2: b2 refuses it.
  auto record = a1.Range(prefix + "to/a2/b2/" + id2);
  ASSERT_TRUE(record.ok() && record.value().kvs.size() == 1);
  ASSERT_TRUE(
      a1.Put(prefix + "to/a1/b2/" + id2, record.value().kvs[0].value).ok());
  const auto key = ParseIncomingKey("a1/b2/" + id2);
  ASSERT_TRUE(key);
  auto copy = ReservationFromKv(record.value().kvs[0]);
  ASSERT_TRUE(copy.ok());
  EXPECT_TRUE(IncomingRecordProblem(*key, copy.value()));
  // ... nor charge b1's sending NIC: b1 still gets all of it.
  ASSERT_TRUE(a1.Put(prefix + "use/a1/host/b1/send/a1-0000000000000001",
                     "800000000", lease1.value().id)
                  .ok());
  ReservationRequest from_b1 = req;
  from_b1.from = "b1";
  from_b1.rate = 800'000'000;
  auto full = adm_b1.Reserve(from_b1, lease_b1.value().id);
  EXPECT_TRUE(full.ok()) << "a1's use/ key charged b1's NIC: " << full.error();

  // a1 leads a job of a1 and a2, with a2's consent written by a2 itself.
  ASSERT_TRUE(adm2.Join({"a2", "j", "a1", "alice"}, lease2.value().id).ok());
  ASSERT_TRUE(adm1.Join({"a1", "j", "a1", "alice"}, lease1.value().id).ok());
  auto job = adm1.ReserveJob({"j", "a1", {"a1", "a2"}, 1, "", "alice", {}},
                             lease1.value().id);
  EXPECT_TRUE(job.ok()) << job.error();

  // A new password, in etcd and in the file: the next call authenticates
  // again with it.
  ASSERT_EQ(sh(etcdctl + "--user root:rootpw user passwd parq-a1 "
                         "--interactive=false <<'EOF'\nnew-a1\nEOF"),
            0);
  password("a1", "new-a1");
  auto again = a1.Range(prefix + "resv/");
  EXPECT_TRUE(again.ok()) << again.error();
  // What a new client of `host` reads once its file holds `pw`.
  const auto read_with = [&](const std::string& host, const std::string& pw) {
    password(host, pw);
    return as(host).Range(prefix);
  };
  // A wrong password is an error that names the user.
  auto refused = read_with("a2", "wrong");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("authenticating as parq-a2: etcdserver: "
                                 "authentication failed"),
            std::string::npos)
      << refused.error();
  // The first line only, one word as etcdctl reads it: a second line is
  // ignored, a space is a mistake said without the password.
  auto read = read_with("a1", "new-a1\nsecond line");
  EXPECT_TRUE(read.ok()) << read.error();
  auto bad = read_with("a2", "pw a2");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("one word without spaces"), std::string::npos)
      << bad.error();
  EXPECT_EQ(bad.error().find("pw a2"), std::string::npos) << bad.error();
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
