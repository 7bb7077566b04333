// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of ctl.cc: what parqctl asks the kernel and prints.

#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <linux/parq.h>
#include <linux/pkt_sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctl/ctl.h"
#include "fake_kernel.h"
#include "netlink/qdisc_json.h"
#include "proto/key.h"
#include "test_util.h"
#include "topology_text.h"

namespace {

using namespace parq::parqd;
using nlohmann::json;
using parq::parqd::test::A;
using parq::parqd::test::FakeKernel;
using parq::parqd::test::FakeMonitor;

class CtlTest : public ::testing::Test {
 protected:
  int Run(const CtlArgs& a) {
    std::ostringstream out, err;
    const int rc = RunCtl(
        a,
        [this]() -> Result<std::unique_ptr<KernelCreditTable>, KernelError> {
          if (open_error_)
            return Err{*open_error_};
          return std::unique_ptr<KernelCreditTable>(
              std::make_unique<Proxy>(kernel_));
        },
        out, err);
    out_ = out.str();
    err_ = err.str();
    return rc;
  }

  // Forwards to the test's FakeKernel (RunCtl owns what it opens).
  struct Proxy : KernelCreditTable {
    explicit Proxy(FakeKernel& k) : k(k) {}
    std::optional<KernelError> Apply(const CreditRequest& r) override {
      return k.Apply(r);
    }
    Result<std::vector<KernelEntry>, KernelError> Dump() override {
      return k.Dump();
    }
    FakeKernel& k;
  };

  FakeKernel kernel_;
  std::optional<KernelError> open_error_;
  std::string out_, err_;
};

TEST_F(CtlTest, SetSendsOneRequest) {
  CtlArgs a;
  a.cmd = CtlArgs::Cmd::kCreditSet;
  a.address = A("10.0.0.2");
  a.credit = 1500;
  a.epoch_ns = 2'000'000;
  a.lease_ns = 1'000'000'000;
  a.json = true;
  EXPECT_EQ(Run(a), 0);
  ASSERT_EQ(kernel_.requests.size(), 1u);
  const CreditRequest& r = kernel_.requests[0];
  EXPECT_EQ(r.op, CreditRequest::Op::kSet);
  EXPECT_EQ(r.address, A("10.0.0.2"));
  EXPECT_EQ(r.credit, 1500u);
  EXPECT_EQ(r.epoch_ns, 2'000'000u);
  EXPECT_EQ(r.lease_ns, 1'000'000'000u);
  EXPECT_EQ(json::parse(out_), json({{"ok", true}}));
}

TEST_F(CtlTest, KernelErrorsCarryTheExtackMessage) {
  CtlArgs a;
  a.cmd = CtlArgs::Cmd::kCreditClear;
  a.address = A("10.0.0.9");
  kernel_.errors.push_back(
      KernelError{ENOENT, "parq: no credit entry for that address"});
  EXPECT_EQ(Run(a), 1);
  EXPECT_EQ(err_,
            "parqctl: credit clear 10.0.0.9: parq: no credit entry for that "
            "address (No such file or directory)\n");
  EXPECT_EQ(out_, "");
  a.json = true;
  kernel_.errors.push_back(KernelError{EPERM, ""});
  EXPECT_EQ(Run(a), 1);
  const json j = json::parse(out_);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["errno"], EPERM);
  EXPECT_EQ(j["error"], "credit clear 10.0.0.9: Operation not permitted");
}

TEST_F(CtlTest, ClearAllHasNoAddress) {
  CtlArgs a;
  a.cmd = CtlArgs::Cmd::kCreditClear;
  EXPECT_EQ(Run(a), 0);
  ASSERT_EQ(kernel_.requests.size(), 1u);
  EXPECT_EQ(kernel_.requests[0].op, CreditRequest::Op::kDel);
  EXPECT_FALSE(kernel_.requests[0].address);
  EXPECT_EQ(out_, "");
}

TEST_F(CtlTest, ShowJsonAndText) {
  kernel_.entries = {
      KernelEntry{A("10.0.0.2"), 1500, 1'000'000, 500'000'000, 100, 7, 2},
      KernelEntry{A("fd00::2"), 0, 2'000'000, 1'000, 0, 0, 0}};
  CtlArgs a;
  a.cmd = CtlArgs::Cmd::kCreditShow;
  a.json = true;
  EXPECT_EQ(Run(a), 0);
  const json j = json::parse(out_);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0], json({{"addr", "10.0.0.2"},
                        {"credit", 1500},
                        {"epoch_ns", 1000000},
                        {"lease_ns", 500000000},
                        {"used", 100},
                        {"passed", 7},
                        {"held", 2}}));
  EXPECT_EQ(j[1]["addr"], "fd00::2");
  a.json = false;
  EXPECT_EQ(Run(a), 0);
  EXPECT_NE(out_.find("ADDRESS"), std::string::npos);
  EXPECT_NE(out_.find("10.0.0.2"), std::string::npos);
  EXPECT_NE(out_.find("500ms"), std::string::npos) << out_;
  EXPECT_NE(out_.find("1us"), std::string::npos) << out_;
  kernel_.entries.clear();
  a.json = true;
  EXPECT_EQ(Run(a), 0);
  EXPECT_EQ(out_, "[]\n");
}

// parqctl monitor: the state and the table, in text and JSON; a kernel
// error is the command's error.
int RunMonitor(const FakeMonitor& m, bool as_json, std::string* out,
               std::string* err) {
  CtlArgs a;
  a.cmd = CtlArgs::Cmd::kMonitor;
  a.json = as_json;
  std::ostringstream o, e;
  const int rc = RunCtl(
      a, {}, o, e, {},
      [&m]() -> Result<std::unique_ptr<KernelMonitor>, KernelError> {
        return std::unique_ptr<KernelMonitor>(std::make_unique<FakeMonitor>(m));
      });
  *out = o.str();
  *err = e.str();
  return rc;
}

TEST(CtlMonitorTest, StateAndSources) {
  FakeMonitor m;
  m.enabled = true;
  m.hold = 10'000'000;
  m.report_local = true;
  m.state = {.size = 1024,
             .dscp_mask = (uint64_t{1} << 40) | (uint64_t{1} << 46),
             .sources = 2,
             .active = true,
             .evicted = 1,
             .events = 4,
             .uncounted = 5,
             .peers = 3,
             .foreign = 7,
             .local_events = 9};
  PeerSample p;
  p.address = A("10.0.0.2");
  p.par_packets = 10;
  p.par_bytes = 640;
  p.par_age_ns = 2'000'000;
  p.loc_packets = 3;
  p.loc_bytes = 4500;
  m.peers = {p};
  std::string out, err;
  ASSERT_EQ(RunMonitor(m, false, &out, &err), 0) << err;
  EXPECT_EQ(out,
            "monitor: enabled, parallel traffic arriving\n"
            "parallel DSCPs cs5,ef, hold 10ms, 2 of 1024 sources kept\n"
            "counting 3 peer address(es); foreign 7, uncounted 5, evicted 1, "
            "events 4, local-sender events 9\n\n"
            "SOURCE                                      PAR-PKTS     "
            "PAR-BYTES   PAR-AGE    LOC-PKTS     LOC-BYTES   LOC-AGE\n"
            "10.0.0.2                                          10           "
            "640       2ms           3          4500         -\n");
  ASSERT_EQ(RunMonitor(m, true, &out, &err), 0) << err;
  const json j = json::parse(out);
  EXPECT_EQ(j["enabled"], true);
  EXPECT_EQ(j["dscp"], json({"cs5", "ef"}));
  EXPECT_EQ(j["hold_ns"], 10'000'000);
  EXPECT_EQ(j["foreign"], 7);
  EXPECT_EQ(j["report_local"], true);
  EXPECT_EQ(j["local_events"], 9);
  ASSERT_EQ(j["table"].size(), 1u);
  EXPECT_EQ(j["table"][0]["addr"], "10.0.0.2");
  EXPECT_EQ(j["table"][0]["par_age_ns"], 2'000'000);
  EXPECT_TRUE(j["table"][0]["loc_age_ns"].is_null());

  m.state_error = KernelError{ENOENT, "no parq family"};
  EXPECT_EQ(RunMonitor(m, false, &out, &err), 1);
  EXPECT_EQ(err,
            "parqctl: monitor: no parq family (No such file or directory)\n");
  EXPECT_EQ(out, "");
}

TEST_F(CtlTest, NoFamily) {
  open_error_ = KernelError{ENOENT, "the kernel has no \"parq\" family"};
  CtlArgs a;
  a.json = true;
  EXPECT_EQ(Run(a), 1);
  EXPECT_EQ(json::parse(out_)["ok"], false);
}

// An attribute as the kernel lays it out.
template <typename T>
void PutAttr(std::vector<uint8_t>& b, uint16_t type, T v) {
  const nlattr a{static_cast<uint16_t>(NLA_HDRLEN + sizeof(v)), type};
  const size_t at = b.size();
  b.resize(at + NLA_ALIGN(a.nla_len));
  std::memcpy(b.data() + at, &a, sizeof(a));
  std::memcpy(b.data() + at + NLA_HDRLEN, &v, sizeof(v));
}

std::vector<uint8_t> Bytes(const tc_parq_xstats& x, size_t n) {
  const auto* p = reinterpret_cast<const uint8_t*>(&x);
  return {p, p + n};
}

// parqctl qdisc show reads the kernel's attributes by the parameter and
// statistics tables, under tc -s -j's names (parq_parqd compares it with
// tc's on a real qdisc).
TEST(FormatQdiscTest, KeepsParqQdiscsAndReadsThemByTheTables) {
  TcObject parq{0x10000, TC_H_ROOT, 0, "parq", std::nullopt, {}, {}, {}};
  PutAttr<uint32_t>(parq.options, TCA_PARQ_THRESHOLD, 4);
  PutAttr<uint8_t>(parq.options, TCA_PARQ_UNIT, PARQ_UNIT_PACKETS);
  PutAttr<uint64_t>(parq.options, TCA_PARQ_RATE, PARQ_RATE_UNLIMITED);
  PutAttr<int32_t>(parq.options, TCA_PARQ_OVERHEAD, -4);
  PutAttr<uint64_t>(parq.options, TCA_PARQ_DSCP_PARALLEL,
                    (1ULL << 40) | (1ULL << 46) | (1ULL << 5));
  PutAttr<uint8_t>(parq.options, TCA_PARQ_DSCP_MARK, PARQ_DSCP_MARK_OFF);
  PutAttr<uint64_t>(parq.options, 200, 1);  // from a newer module
  parq.stats = TcStats{100, 2, 0, 0, 0, 0, 0};
  tc_parq_xstats x{};
  x.version = PARQ_XSTATS_VERSION;
  x.threshold_turns = 3;
  x.resv_sum_rate = 125000;
  x.parallel_sojourn_sum = 10;
  x.parallel_sojourn[0] = 2;
  parq.xstats = Bytes(x, sizeof(x));
  const std::vector<TcObject> qdiscs = {
      {0, TC_H_INGRESS, 0, "ingress", std::nullopt, {}, {}, {}}, parq};
  auto j = FormatQdisc(qdiscs, "veth0a", true);
  ASSERT_TRUE(j.ok()) << j.error();
  const json p = json::parse(j.value().text);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0]["dev"], "veth0a");
  EXPECT_EQ(p[0]["handle"], "1:");
  EXPECT_EQ(p[0]["root"], true);
  EXPECT_EQ(p[0]["bytes"], 100);
  EXPECT_EQ(p[0]["options"], json::parse(R"({"threshold": 4, "unit": "packets",
              "rate": "unlimited", "overhead": -4,
              "dscp_parallel": [5, "CS5", "EF"], "dscp_mark": "off"})"));
  const json& xs = p[0]["xstats"];
  EXPECT_EQ(xs["xstats_version"], PARQ_XSTATS_VERSION);
  EXPECT_EQ(xs["threshold_turns"], 3);
  EXPECT_EQ(xs["resv_sum_rate"], 125000);
  EXPECT_EQ(xs["parallel_sojourn_pkts"], 2);
  EXPECT_EQ(xs["parallel_sojourn_mean"], 5);
  EXPECT_EQ(xs["parallel_sojourn_hist"].size(), size_t{PARQ_SOJOURN_BUCKETS});
  EXPECT_EQ(xs["local_sojourn_pkts"], 0);
  EXPECT_FALSE(xs.contains("pad") || xs.contains("parallel_sojourn_sum_sum"));
  auto t = FormatQdisc(qdiscs, "veth0a", false);
  ASSERT_TRUE(t.ok());
  EXPECT_NE(t.value().text.find("parq 1: dev veth0a root"), std::string::npos)
      << t.value().text;
  EXPECT_NE(t.value().text.find("xstats.threshold_turns"), std::string::npos);
  auto none = FormatQdisc({qdiscs[0]}, "eth0", true);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("no parq qdisc on eth0"), std::string::npos);
}

// An older module's shorter statistics: what is there, whole fields only,
// and the histograms together or not at all; a class's are not a
// qdisc's.
TEST(FormatQdiscTest, ShorterStatisticsShowWhatIsThere) {
  tc_parq_xstats x{};
  x.version = 1;
  x.flows_active = 9;
  x.local_only = 7;
  json xs = ParqXstatsJson(Bytes(x, offsetof(tc_parq_xstats, local_only) + 4));
  EXPECT_EQ(xs, json::parse(R"({"xstats_version": 1, "flows_active": 9,
      "threshold_turns": 0, "parallel_only": 0})"));
  xs = ParqXstatsJson(Bytes(x, offsetof(tc_parq_xstats, local_sojourn) + 8));
  EXPECT_TRUE(xs.contains("drop_local_nomem"));
  EXPECT_FALSE(xs.contains("parallel_sojourn_pkts"));
  EXPECT_EQ(ParqXstatsJson(Bytes(x, 2)), json::object());
  x.version = PARQ_XSTATS_CLASS | 1;
  EXPECT_EQ(ParqXstatsJson(Bytes(x, sizeof(x))), json::object());
  // No DSCP at all is an empty list, as tc prints it, not the word
  // "none"; a split-gso mode this reader does not know is left out, as tc
  // leaves it.
  std::vector<uint8_t> none;
  PutAttr<uint64_t>(none, TCA_PARQ_DSCP_PARALLEL, 0);
  PutAttr<uint8_t>(none, TCA_PARQ_SPLIT_GSO, PARQ_SPLIT_GSO_MAX + 1);
  EXPECT_EQ(ParqOptionsJson(none), json::parse(R"({"dscp_parallel": []})"));
  // Options cut short are left out, not misread.
  std::vector<uint8_t> o;
  PutAttr<uint16_t>(o, TCA_PARQ_LIMIT, 5);
  EXPECT_EQ(ParqOptionsJson(o), json::object());
  o.resize(3);
  EXPECT_EQ(ParqOptionsJson(o), json::object());
}

// parqctl key derive: standard output, --output (mode 0600) that parqd's
// keys file reader takes, and the errors.
TEST_F(CtlTest, KeyDerivePrintsAndWritesAKeysFile) {
  test::TempDir tmp("parqd_ctl_key");
  ASSERT_FALSE(tmp.path().empty());
  const std::string secret = tmp.path() + "/secret.key";
  {
    std::ofstream f(secret);
    f << std::string(64, 'a') << "\n";
  }
  ASSERT_EQ(chmod(secret.c_str(), 0600), 0);
  open_error_ = KernelError{ENOENT, "no kernel in this test"};
  CtlArgs a;
  a.cmd = CtlArgs::Cmd::kKeyDerive;
  a.secret_file = secret;
  a.node = 7;
  a.peers = {1, 2};
  a.key_id = 3;
  ASSERT_EQ(Run(a), 0) << err_;
  const Key s = Key::FromFile(secret).value();
  const std::string want = PairKeysText(s, 3, 7, {1, 2}).value().text;
  EXPECT_EQ(out_, want);
  EXPECT_EQ(std::count(out_.begin(), out_.end(), '\n'), 3);

  a.output = tmp.path() + "/7.keys";
  ASSERT_EQ(Run(a), 0) << err_;
  EXPECT_EQ(out_, "");
  struct stat st {};
  ASSERT_EQ(stat(a.output.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto keys = PairKeysFromFile(a.output);
  ASSERT_TRUE(keys.ok()) << keys.error();
  EXPECT_EQ(keys.value().size(), 2u);

  a.peers = {1, 7};
  EXPECT_EQ(Run(a), 1);
  EXPECT_EQ(err_, "parqctl: peer 7 is this node\n");
  a.secret_file = tmp.path() + "/none.key";
  EXPECT_EQ(Run(a), 1);
  EXPECT_NE(err_.find("cannot open it"), std::string::npos) << err_;
}

}  // namespace

// parqctl topology check and path read a file and need no kernel.
class CtlTopologyTest : public CtlTest {
 protected:
  void SetUp() override {
    // A directory of its own: ctest may run two of these tests at once.
    ASSERT_FALSE(dir_.path().empty());
    path_ = dir_.path() + "/topology.toml";
    std::ofstream(path_) << "reservable = 50\n" +
                                test::TomlHost("a", {"10.0.0.1"}, "1gbit") +
                                test::TomlHost("b", {"10.0.0.2", "fd00::2"},
                                               "10gbit") +
                                test::TomlSwitch("t") +
                                test::TomlCable("a", "t", "1gbit") +
                                test::TomlCable("b", "t", "10gbit");
    // The kernel is never asked: opening it would fail.
    open_error_ = KernelError{ENOENT, "no kernel in this test"};
  }

  CtlArgs Args(CtlArgs::Cmd cmd, bool json) {
    CtlArgs a;
    a.cmd = cmd;
    a.json = json;
    a.topology = path_;
    return a;
  }

  test::TempDir dir_{"parqd_ctl_topology"};
  std::string path_;
};

TEST_F(CtlTopologyTest, CheckPrintsHostsAndLinks) {
  ASSERT_EQ(Run(Args(CtlArgs::Cmd::kTopologyCheck, false)), 0) << err_;
  EXPECT_NE(out_.find(": 2 hosts, 1 switches, 4 links; reservations may "
                      "take 50% of each capacity; equal-cost paths: "
                      "charge-all"),
            std::string::npos)
      << out_;
  EXPECT_NE(out_.find("fd00::2"), std::string::npos) << out_;
  EXPECT_NE(out_.find("link t -> b"), std::string::npos) << out_;
  ASSERT_EQ(Run(Args(CtlArgs::Cmd::kTopologyCheck, true)), 0) << err_;
  const json j = json::parse(out_);
  EXPECT_EQ(j["reservable_percent"], 50);
  EXPECT_EQ(j["hosts"][1]["addresses"][1], "fd00::2");
  EXPECT_EQ(j["links"].size(), 4u);
  EXPECT_EQ(j["links"][0]["id"], "link/a/t");
  EXPECT_EQ(j["links"][0]["reservable_bps"], 500'000'000u);
}

TEST_F(CtlTopologyTest, PathByNameOrAddress) {
  CtlArgs a = Args(CtlArgs::Cmd::kTopologyPath, true);
  a.from = "a";
  a.to = "fd00::2";
  ASSERT_EQ(Run(a), 0) << err_;
  const json j = json::parse(out_);
  EXPECT_EQ(j["from"], "a");
  EXPECT_EQ(j["to"], "b");
  std::vector<std::string> ids;
  for (const json& r : j["resources"])
    ids.push_back(r["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"host/a/send", "link/a/t",
                                           "link/t/b", "host/b/receive"}));
}

TEST_F(CtlTopologyTest, BadInputIsAClearError) {
  CtlArgs a = Args(CtlArgs::Cmd::kTopologyPath, false);
  a.from = "a";
  a.to = "c";
  EXPECT_EQ(Run(a), 1);
  EXPECT_EQ(err_, "parqctl: " + path_ +
                      " has no host named or addressed \"c\" (hosts: a, b)\n");
  a.to = "10.0.0.1";
  EXPECT_EQ(Run(a), 1);
  EXPECT_EQ(err_,
            "parqctl: FROM and TO are the same host, a: nothing to reserve\n");
  a = Args(CtlArgs::Cmd::kTopologyCheck, true);
  a.topology = "/nonexistent.toml";
  EXPECT_EQ(Run(a), 1);
  EXPECT_EQ(json::parse(out_)["error"],
            "/nonexistent.toml: cannot read the topology file");
}
