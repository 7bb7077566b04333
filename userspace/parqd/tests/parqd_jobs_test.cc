// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of jobs.cc (parqctl job ...) against a fake file system and a
// fake nft, and of nft.cc's refusals.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ctl/cli.h"
#include "jobs/jobs.h"
#include "jobs/nft.h"
#include "test_util.h"

namespace {

using namespace parq::parqd;
using nlohmann::json;

constexpr char kRoot[] = "/sys/fs/cgroup";

// Directories, which of them are cgroup v2, and symlinks.
struct FakeFs {
  std::set<std::string> dirs = {kRoot};
  std::set<std::string> files;
  std::set<std::string> v1;  // directories on another file system
  std::map<std::string, std::string> links;

  CgroupProbe Probe() {
    CgroupProbe p;
    p.realpath = [this](const std::string& path) -> std::optional<std::string> {
      const auto l = links.find(path);
      const std::string real = l != links.end() ? l->second : path;
      if (dirs.count(real) || files.count(real))
        return real;
      return std::nullopt;
    };
    p.is_dir = [this](const std::string& path) { return dirs.count(path) > 0; };
    p.is_cgroup2 = [this](const std::string& path) {
      return (dirs.count(path) || files.count(path)) && !v1.count(path);
    };
    return p;
  }
};

// What nft 1.0.6 prints for `nft -j list table inet parq`.
std::string NftJson(const std::map<unsigned, std::vector<json>>& sets) {
  json items = json::array();
  items.push_back({{"metainfo", {{"version", "1.0.6"}}}});
  items.push_back({{"table", {{"family", "inet"}, {"name", "parq"}}}});
  for (const char* chain : {"jobs", "parallel", "egress", "forward"})
    items.push_back(
        {{"chain", {{"family", "inet"}, {"table", "parq"}, {"name", chain}}}});
  for (const auto& [level, elems] : sets) {
    json set = {{"family", "inet"},
                {"name", "jobs_" + std::to_string(level)},
                {"table", "parq"},
                {"type", "cgroupsv2"}};
    if (!elems.empty())
      set["elem"] = elems;
    items.push_back({{"set", set}});
  }
  items.push_back({{"set", {{"name", "other"}, {"elem", {"x"}}}}});
  return json{{"nftables", items}}.dump();
}

// nft: a table (or none), the scripts it was given, an answer to give.
struct FakeNft {
  std::optional<std::map<unsigned, std::vector<json>>> table;
  std::vector<std::string> scripts;
  bool broken = false;  // no nftables in the kernel
  int refuse = 0;       // status for -f: 1, nftables refuses the script

  NftRunner Runner() {
    return [this](
               const std::vector<std::string>& args,
               const std::string& input) -> Result<ProgramOutput, std::string> {
      if (broken)
        return Err{
            std::string("this kernel offers no nftables (netfilter netlink: "
                        "Protocol not supported)")};
      ProgramOutput o;
      if (args.size() >= 2 && args[0] == "-j" && args[1] == "list") {
        if (!table) {
          o.status = 1;
          o.err = "Error: No such file or directory\nlist table inet parq\n";
        } else {
          o.out = NftJson(*table);
        }
        return o;
      }
      if (args == std::vector<std::string>{"-f", "-"}) {
        scripts.push_back(input);
        o.status = refuse;
        if (refuse)
          o.err = "Error: Could not process rule: Operation not permitted\n";
        return o;
      }
      o.status = 1;
      o.err = "Error: the fake nft knows no such command\n";
      return o;
    };
  }
};

class JobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.empty());
    fs_.dirs.insert(std::string(kRoot) + "/slurm");
    fs_.dirs.insert(std::string(kRoot) + "/slurm/job_7");
    fs_.dirs.insert(std::string(kRoot) + "/slurm/job_8");
    fs_.dirs.insert(std::string(kRoot) + "/user.slice");
  }
  void TearDown() override { ASSERT_TRUE(tmp_.Remove()); }

  JobEnv Env() {
    JobEnv e;
    e.probe = fs_.Probe();
    e.nft = nft_.Runner();
    e.lock_path = dir_ + "/jobs.lock";
    e.policy_path = dir_ + "/jobs.toml";
    e.state_path = dir_ + "/jobs";
    return e;
  }

  int Add(const std::string& path, bool as_json = false) {
    return Capture([&](std::ostream& o, std::ostream& e) {
      return JobAdd(Env(), path, as_json, o, e);
    });
  }
  int Del(const std::string& path, bool as_json = false) {
    return Capture([&](std::ostream& o, std::ostream& e) {
      return JobDel(Env(), path, as_json, o, e);
    });
  }
  int List(bool as_json) {
    return Capture([&](std::ostream& o, std::ostream& e) {
      return JobList(Env(), as_json, o, e);
    });
  }
  int Policy(const JobPolicy& p) {
    return Capture([&](std::ostream& o, std::ostream& e) {
      return JobPolicySet(Env(), p, false, o, e);
    });
  }
  int Restore() {
    return Capture([&](std::ostream& o, std::ostream& e) {
      return NftRestore(Env(), true, o, e);
    });
  }
  int Sweep() {
    return Capture([&](std::ostream& o, std::ostream& e) {
      return JobSweep(Env(), true, o, e);
    });
  }
  template <typename F>
  int Capture(F f) {
    std::ostringstream o, e;
    const int rc = f(o, e);
    out_ = o.str();
    err_ = e.str();
    return rc;
  }

  parq::parqd::test::TempDir tmp_{"parqd_jobs_test"};
  const std::string dir_ = tmp_.path();
  FakeFs fs_;
  FakeNft nft_;
  std::string out_, err_;
};

TEST_F(JobsTest, ResolveToAddGivesThePathBelowTheRootAndItsDepth) {
  const auto j =
      ResolveJobToAdd("/sys/fs/cgroup/slurm/job_7", kRoot, fs_.Probe());
  ASSERT_TRUE(j.ok()) << j.error();
  EXPECT_EQ(j.value(), (JobCgroup{"slurm/job_7", 2}));
  const auto top =
      ResolveJobToAdd("/sys/fs/cgroup/user.slice", kRoot, fs_.Probe());
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(top.value(), (JobCgroup{"user.slice", 1}));
}

TEST_F(JobsTest, ResolveToAddFollowsSymlinks) {
  fs_.links["/run/job"] = "/sys/fs/cgroup/slurm/job_8";
  const auto j = ResolveJobToAdd("/run/job", kRoot, fs_.Probe());
  ASSERT_TRUE(j.ok()) << j.error();
  EXPECT_EQ(j.value(), (JobCgroup{"slurm/job_8", 2}));
}

TEST_F(JobsTest, ResolveToAddRefusesWhatIsNotAJobCgroup) {
  struct Case {
    std::string path, want;
  } cases[] = {
      {"/sys/fs/cgroup/slurm/job_9", "no such cgroup"},
      {"/sys/fs/cgroup", "the root cgroup"},
      {"/tmp", "not below /sys/fs/cgroup"},
      {"/sys/fs/cgroup/slurm/job_7/cgroup.procs", "not a directory"},
      {"/sys/fs/cgroup/bad\"name", "cannot quote"},
      {"/sys/fs/cgroup/net_cls", "not a cgroup v2 directory"},
  };
  fs_.dirs.insert("/tmp");
  fs_.files.insert("/sys/fs/cgroup/slurm/job_7/cgroup.procs");
  fs_.dirs.insert("/sys/fs/cgroup/bad\"name");
  fs_.dirs.insert("/sys/fs/cgroup/net_cls");
  fs_.v1.insert("/sys/fs/cgroup/net_cls");
  for (const Case& c : cases) {
    const auto j = ResolveJobToAdd(c.path, kRoot, fs_.Probe());
    ASSERT_FALSE(j.ok()) << c.path;
    EXPECT_NE(j.error().find(c.want), std::string::npos)
        << c.path << ": " << j.error();
  }
}

TEST_F(JobsTest, ResolveToAddOnCgroupV1SaysSo) {
  fs_.v1.insert(kRoot);
  const auto j =
      ResolveJobToAdd("/sys/fs/cgroup/slurm/job_7", kRoot, fs_.Probe());
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().find("cgroup v1"), std::string::npos) << j.error();
}

TEST(Jobs, ResolveToDelNormalizesAPathThatMayBeGone) {
  const auto j = ResolveJobToDel("/sys/fs/cgroup//slurm/./x/../job_9/", kRoot);
  ASSERT_TRUE(j.ok()) << j.error();
  EXPECT_EQ(j.value(), (JobCgroup{"slurm/job_9", 2}));
  EXPECT_FALSE(ResolveJobToDel("slurm/job_9", kRoot).ok());
  EXPECT_FALSE(ResolveJobToDel("/sys/fs/cgroup/../etc", kRoot).ok());
  EXPECT_FALSE(ResolveJobToDel("/sys/fs/cgroup", kRoot).ok());
}

TEST(Jobs, PolicyScriptMakesOrRefillsTheFixedChains) {
  const std::string s = PolicyScript(JobPolicy{});
  const std::string egress =
      "add chain inet parq egress { type filter hook output priority "
      "mangle; policy accept; }\n";
  // Forwarded packets (a routed container or VM) are re-marked too.
  const std::string forward =
      "add chain inet parq forward { type filter hook forward priority "
      "mangle; policy accept; }\n";
  for (const char* want :
       {"add table inet parq\n", "add chain inet parq jobs\n", egress.c_str(),
        forward.c_str(), "flush chain inet parq parallel\n",
        "flush chain inet parq egress\n", "flush chain inet parq forward\n",
        "add rule inet parq parallel ip dscp set ef\n",
        "add rule inet parq parallel ip6 dscp set ef\n",
        "add rule inet parq egress jump jobs\n",
        "add rule inet parq egress ip dscp { cs5, ef } ip dscp set cs0\n",
        "add rule inet parq egress ip6 dscp { cs5, ef } ip6 dscp set cs0\n",
        "add rule inet parq forward ip dscp { cs5, ef } ip dscp set cs0\n",
        "add rule inet parq forward ip6 dscp { cs5, ef } ip6 dscp set cs0\n"})
    EXPECT_NE(s.find(want), std::string::npos) << want << "\n" << s;
  // The jobs and the sets stay.
  EXPECT_EQ(s.find("flush chain inet parq jobs"), std::string::npos);
  EXPECT_EQ(s.find("set"), s.find("set ef"));
  // The chains are flushed before they are filled, and jump jobs comes
  // before the anti-spoofing rule.
  EXPECT_LT(s.find("flush"), s.find("add rule"));
  EXPECT_LT(s.find("jump jobs"), s.find("dscp set cs0"));

  JobPolicy p;
  p.dscp = 40;
  p.anti_spoof = false;
  const std::string off = PolicyScript(p);
  EXPECT_NE(off.find("ip dscp set cs5\n"), std::string::npos);
  EXPECT_EQ(off.find("cs0"), std::string::npos);

  p.anti_spoof = true;
  p.claimed = {46, 40, 46, 12};
  EXPECT_NE(PolicyScript(p).find("egress ip dscp { af12, cs5, ef } ip dscp "
                                 "set cs0\n"),
            std::string::npos);
  p.forward = false;
  EXPECT_EQ(PolicyScript(p).find("forward ip"), std::string::npos);
  EXPECT_NE(PolicyScript(p).find("egress ip dscp"), std::string::npos);
}

TEST(Jobs, PolicyFileReadsWhatItWrites) {
  JobPolicy p;
  p.dscp = 34;
  p.anti_spoof = false;
  p.claimed = {34, 46};
  p.forward = false;
  auto back = ParseJobPolicy(FormatJobPolicy(p), "jobs.toml");
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back.value(), p);
  EXPECT_EQ(ParseJobPolicy("", "jobs.toml").value(), JobPolicy{});
  EXPECT_EQ(
      ParseJobPolicy("parallel-dscp = \"CS5\"\n", "jobs.toml").value().dscp,
      40);

  for (const auto& [text, want] :
       std::vector<std::pair<std::string, std::string>>{
           {"parallel-dscp = \"x\"\n",
            "jobs.toml:1:17: 'parallel-dscp': give a DSCP name"},
           {"anti-spoof = \"no\"\n",
            "jobs.toml:1:14: 'anti-spoof': give "
            "true or false"},
           {"claimed = \"ef\"\n", "'claimed': give a list of DSCPs"},
           {"dscp = \"ef\"\n", "'dscp': unknown key"},
           {"anti-spoof = \n", "jobs.toml:1:14: not valid TOML"}}) {
    auto r = ParseJobPolicy(text, "jobs.toml");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().find(want), std::string::npos) << r.error();
  }
}

TEST(Jobs, LevelAndElementScripts) {
  EXPECT_EQ(LevelScript(3),
            "add set inet parq jobs_3 { typeof socket cgroupv2 level 3; }\n"
            "add rule inet parq jobs socket cgroupv2 level 3 @jobs_3 goto "
            "parallel\n");
  EXPECT_EQ(AddJobScript({"a/b", 2}),
            "add element inet parq jobs_2 { \"a/b\" }\n");
  EXPECT_EQ(DelJobScript({"a/b", 2}),
            "delete element inet parq jobs_2 { \"a/b\" }\n");
  EXPECT_EQ(RefillScript(2, {"a/b", "a/c"}),
            "flush set inet parq jobs_2\n"
            "add element inet parq jobs_2 { \"a/b\", \"a/c\" }\n");
  EXPECT_EQ(RefillScript(2, {}), "flush set inet parq jobs_2\n");
}

TEST(Jobs, ParseJobTableReadsTheJobSetsAndTheChainsNames) {
  const auto t = ParseJobTable(
      NftJson({{2, {"slurm/job_7", "44"}}, {3, {}}, {1, {json(45)}}}));
  ASSERT_TRUE(t.ok()) << t.error();
  JobTable want;
  want.elems[1] = {"45"};
  want.elems[2] = {"slurm/job_7", "44"};
  want.elems[3] = {};
  want.chains = {"jobs", "parallel", "egress", "forward"};
  EXPECT_EQ(t.value(), want);
  EXPECT_FALSE(ParseJobTable("Error").ok());
  EXPECT_FALSE(ParseJobTable("[]").ok());
}

TEST_F(JobsTest, SplitJobsTellsLiveFromGone) {
  JobTable t;
  t.elems[2] = {"slurm/job_7", "44", "slurm/job_1"};
  const auto s = SplitJobs(t, kRoot, fs_.Probe());
  ASSERT_EQ(s.count(2), 1u);
  EXPECT_EQ(s.at(2).live, std::vector<std::string>{"slurm/job_7"});
  EXPECT_EQ(s.at(2).gone, (std::vector<std::string>{"44", "slurm/job_1"}));
}

TEST_F(JobsTest, AddMakesTheTableTheLevelAndTheJobInOneTransaction) {
  ASSERT_EQ(Add("/sys/fs/cgroup/slurm/job_7"), 0) << err_;
  ASSERT_EQ(nft_.scripts.size(), 1u);
  const std::string& s = nft_.scripts[0];
  EXPECT_EQ(s.find("add table inet parq\n"), 0u) << s;
  EXPECT_NE(s.find(LevelScript(2)), std::string::npos) << s;
  EXPECT_NE(s.find(AddJobScript({"slurm/job_7", 2})), std::string::npos);
}

// `nft flush ruleset` (nftables.service) and the next job add made the
// table again with the default policy: an operator's policy was lost.
TEST_F(JobsTest, ACustomPolicySurvivesTheTablesRecreation) {
  JobPolicy p;
  p.dscp = 34;
  p.anti_spoof = false;
  ASSERT_EQ(Policy(p), 0) << err_;
  ASSERT_EQ(nft_.scripts.size(), 1u);
  EXPECT_EQ(nft_.scripts[0], PolicyScript(p));
  nft_.table.reset();  // flushed
  ASSERT_EQ(Add("/sys/fs/cgroup/slurm/job_7"), 0) << err_;
  ASSERT_EQ(nft_.scripts.size(), 2u);
  EXPECT_EQ(nft_.scripts[1].find(PolicyScript(p)), 0u) << nft_.scripts[1];
  EXPECT_EQ(nft_.scripts[1].find("cs0"), std::string::npos);
}

// After a flush, nft restore makes the table again with the policy and
// the jobs; with nothing missing it changes nothing.
TEST_F(JobsTest, RestoreRebuildsTheTableWithItsPolicyAndJobs) {
  JobPolicy p;
  p.dscp = 40;
  ASSERT_EQ(Policy(p), 0) << err_;
  ASSERT_EQ(Add("/sys/fs/cgroup/slurm/job_7"), 0) << err_;
  ASSERT_EQ(Add("/sys/fs/cgroup/slurm/job_8"), 0) << err_;
  ASSERT_EQ(Add("/sys/fs/cgroup/user.slice"), 0) << err_;
  ASSERT_EQ(Del("/sys/fs/cgroup/slurm/job_8"), 0) << err_;
  nft_.scripts.clear();
  nft_.table.reset();
  ASSERT_EQ(Restore(), 0) << err_;
  ASSERT_EQ(nft_.scripts.size(), 1u);
  EXPECT_EQ(nft_.scripts[0], PolicyScript(p) + LevelScript(2) +
                                 AddJobScript({"slurm/job_7", 2}) +
                                 LevelScript(1) +
                                 AddJobScript({"user.slice", 1}));
  EXPECT_EQ(json::parse(out_), (json{{"ok", true}, {"restored", true}}));
  // All there: nothing to do.
  nft_.table = {{{1, {"user.slice"}}, {2, {"slurm/job_7"}}}};
  ASSERT_EQ(Restore(), 0) << err_;
  EXPECT_EQ(nft_.scripts.size(), 1u);
  EXPECT_EQ(json::parse(out_), (json{{"ok", true}, {"restored", false}}));
  // A job missing from its set is added back; a cgroup that is gone is
  // not (nft could not add it).
  nft_.table = {{{1, {"user.slice"}}, {2, {}}}};
  fs_.dirs.erase(std::string(kRoot) + "/user.slice");
  ASSERT_EQ(Restore(), 0) << err_;
  ASSERT_EQ(nft_.scripts.size(), 2u);
  EXPECT_EQ(nft_.scripts[1], AddJobScript({"slurm/job_7", 2}));
  // Without a policy file, the defaults.
  ASSERT_EQ(unlink((dir_ + "/jobs.toml").c_str()), 0);
  nft_.table.reset();
  ASSERT_EQ(Restore(), 0) << err_;
  EXPECT_EQ(nft_.scripts[2].find(PolicyScript(JobPolicy{})), 0u);
}

TEST_F(JobsTest, ABadPolicyFileIsAnErrorThatNamesIt) {
  {
    std::ofstream f(dir_ + "/jobs.toml");
    f << "anti-spoof = 1\n";
  }
  EXPECT_EQ(Add("/sys/fs/cgroup/slurm/job_7"), 1);
  EXPECT_NE(err_.find("job add: " + dir_ + "/jobs.toml:1:14: 'anti-spoof'"),
            std::string::npos)
      << err_;
  EXPECT_EQ(Restore(), 1);
  EXPECT_TRUE(nft_.scripts.empty());
}

TEST_F(JobsTest, AddToAnExistingLevelAddsTheElementOnly) {
  nft_.table = {{{2, {"slurm/job_7"}}}};
  ASSERT_EQ(Add("/sys/fs/cgroup/slurm/job_8", true), 0) << err_;
  ASSERT_EQ(nft_.scripts.size(), 1u);
  EXPECT_EQ(nft_.scripts[0], AddJobScript({"slurm/job_8", 2}));
  EXPECT_EQ(json::parse(out_), (json{{"ok", true}}));
  // A new depth gets its set and rule, not a new table.
  ASSERT_EQ(Add("/sys/fs/cgroup/user.slice"), 0) << err_;
  EXPECT_EQ(nft_.scripts[1], LevelScript(1) + AddJobScript({"user.slice", 1}));
}

TEST_F(JobsTest, BadInputChangesNothing) {
  EXPECT_EQ(Add("/sys/fs/cgroup/slurm/job_9"), 1);
  EXPECT_NE(err_.find("parqctl: job add: "), std::string::npos) << err_;
  EXPECT_NE(err_.find("no such cgroup"), std::string::npos) << err_;
  fs_.v1.insert(kRoot);
  EXPECT_EQ(Add("/sys/fs/cgroup/slurm/job_7", true), 1);
  EXPECT_FALSE(json::parse(out_)["ok"].get<bool>());
  EXPECT_TRUE(nft_.scripts.empty());
}

TEST_F(JobsTest, WithoutNftablesTheErrorSaysSo) {
  nft_.broken = true;
  EXPECT_EQ(Add("/sys/fs/cgroup/slurm/job_7"), 1);
  EXPECT_NE(err_.find("offers no nftables"), std::string::npos) << err_;
  EXPECT_TRUE(nft_.scripts.empty());
}

TEST_F(JobsTest, RefusedByNftIsAnError) {
  nft_.refuse = 1;
  EXPECT_EQ(Add("/sys/fs/cgroup/slurm/job_7"), 1);
  EXPECT_NE(err_.find("nft refused the change: Error: Could not process"),
            std::string::npos)
      << err_;
}

TEST_F(JobsTest, DelRemovesAJobAndIsHarmlessTwice) {
  nft_.table = {{{2, {"slurm/job_7", "slurm/job_8"}}}};
  ASSERT_EQ(Del("/sys/fs/cgroup/slurm/job_7", true), 0) << err_;
  ASSERT_EQ(nft_.scripts.size(), 1u);
  EXPECT_EQ(nft_.scripts[0], DelJobScript({"slurm/job_7", 2}));
  EXPECT_TRUE(json::parse(out_)["removed"].get<bool>());
  nft_.table = {{{2, {"slurm/job_8"}}}};
  ASSERT_EQ(Del("/sys/fs/cgroup/slurm/job_7", true), 0) << err_;
  EXPECT_FALSE(json::parse(out_)["removed"].get<bool>());
  nft_.table.reset();
  ASSERT_EQ(Del("/sys/fs/cgroup/slurm/job_7"), 0) << err_;
  EXPECT_EQ(nft_.scripts.size(), 1u);
}

TEST_F(JobsTest, DelOfAJobWhoseCgroupIsGoneRefillsItsLevel) {
  nft_.table = {{{2, {"slurm/job_8", "44"}}}};
  ASSERT_EQ(Del("/sys/fs/cgroup/slurm/job_5"), 0) << err_;
  ASSERT_EQ(nft_.scripts.size(), 1u);
  EXPECT_EQ(nft_.scripts[0], RefillScript(2, {"slurm/job_8"}));
}

TEST_F(JobsTest, SweepRefillsTheLevelsWithGoneCgroups) {
  nft_.table = {{{1, {"user.slice"}}, {2, {"slurm/job_8", "44", "45"}}}};
  ASSERT_EQ(Sweep(), 0) << err_;
  ASSERT_EQ(nft_.scripts.size(), 1u);
  EXPECT_EQ(nft_.scripts[0], RefillScript(2, {"slurm/job_8"}));
  EXPECT_EQ(json::parse(out_)["removed"], 2);
  nft_.table = {{{2, {"slurm/job_8"}}}};
  ASSERT_EQ(Sweep(), 0);
  EXPECT_EQ(nft_.scripts.size(), 1u);
}

TEST_F(JobsTest, ListPrintsPathsAndGoneCgroups) {
  nft_.table = {{{2, {"slurm/job_7", "44"}}}};
  ASSERT_EQ(List(false), 0) << err_;
  EXPECT_EQ(out_,
            "/sys/fs/cgroup/slurm/job_7\n"
            "(cgroup 44 at level 2 is gone: parqctl job sweep removes it)\n");
  ASSERT_EQ(List(true), 0);
  EXPECT_EQ(
      json::parse(out_),
      (json{{"jobs", {{{"path", "/sys/fs/cgroup/slurm/job_7"}, {"level", 2}}}},
            {"gone", {{{"cgroup", "44"}, {"level", 2}}}}}));
  nft_.table.reset();
  ASSERT_EQ(List(true), 0);
  EXPECT_EQ(json::parse(out_),
            (json{{"jobs", json::array()}, {"gone", json::array()}}));
}

TEST(Jobs, Dscp) {
  EXPECT_EQ(ParseDscp("EF"), 46);
  EXPECT_EQ(ParseDscp("cs5"), 40);
  EXPECT_EQ(ParseDscp("AF41"), 34);
  EXPECT_EQ(ParseDscp("63"), 63);
  EXPECT_EQ(ParseDscp("64"), std::nullopt);
  EXPECT_EQ(ParseDscp("x"), std::nullopt);
  EXPECT_EQ(ParseDscp(""), std::nullopt);
  EXPECT_EQ(DscpName(46), "ef");
  EXPECT_EQ(DscpName(1), "1");
}

std::variant<CtlArgs, int> Ctl(std::vector<std::string> argv,
                               std::string* err_text = nullptr) {
  argv.insert(argv.begin(), "parqctl");
  std::ostringstream out, err;
  auto r = ParseCtlArgs(argv, out, err);
  if (err_text)
    *err_text = err.str();
  return r;
}

TEST(Jobs, CommandLines) {
  auto a = Ctl({"job", "add", "/sys/fs/cgroup/x", "--json"});
  ASSERT_TRUE(std::holds_alternative<CtlArgs>(a));
  EXPECT_EQ(std::get<CtlArgs>(a).cmd, CtlArgs::Cmd::kJobAdd);
  EXPECT_EQ(std::get<CtlArgs>(a).job_path, "/sys/fs/cgroup/x");
  EXPECT_TRUE(std::get<CtlArgs>(a).json);

  a = Ctl({"job", "policy", "--dscp", "cs5", "--anti-spoof", "off", "--claimed",
           "ef,CS5,af41"});
  ASSERT_TRUE(std::holds_alternative<CtlArgs>(a));
  const CtlArgs& p = std::get<CtlArgs>(a);
  EXPECT_EQ(p.cmd, CtlArgs::Cmd::kJobPolicy);
  EXPECT_EQ(p.policy.dscp, 40);
  EXPECT_FALSE(p.policy.anti_spoof);
  EXPECT_EQ(p.policy.claimed, (std::vector<uint8_t>{46, 40, 34}));
  EXPECT_TRUE(p.policy.forward);
  a = Ctl({"job", "policy", "--forward", "off"});
  ASSERT_TRUE(std::holds_alternative<CtlArgs>(a));
  EXPECT_FALSE(std::get<CtlArgs>(a).policy.forward);
  a = Ctl({"nft", "restore", "--json"});
  ASSERT_TRUE(std::holds_alternative<CtlArgs>(a));
  EXPECT_EQ(std::get<CtlArgs>(a).cmd, CtlArgs::Cmd::kNftRestore);
  a = Ctl({"nft", "watch"});
  ASSERT_TRUE(std::holds_alternative<CtlArgs>(a));
  EXPECT_EQ(std::get<CtlArgs>(a).cmd, CtlArgs::Cmd::kNftWatch);

  std::string err;
  a = Ctl({"job", "policy", "--dscp", "64"}, &err);
  ASSERT_TRUE(std::holds_alternative<int>(a));
  EXPECT_EQ(std::get<int>(a), 2);
  EXPECT_NE(err.find("--dscp 64"), std::string::npos) << err;
  a = Ctl({"job", "policy", "--claimed", "ef,,cs5"}, &err);
  ASSERT_TRUE(std::holds_alternative<int>(a));
  a = Ctl({"job", "add"}, &err);
  ASSERT_TRUE(std::holds_alternative<int>(a));
}

// nft's message, quoted in parqd's, without its trailing newlines.
TEST(RunNftTest, ErrorTextIsStandardErrorTrimmed) {
  EXPECT_EQ(ErrorText({1, "", "Error: No such file or directory\n \n"}),
            "Error: No such file or directory");
  EXPECT_EQ(ErrorText({1, "printed", ""}), "");
}

// RunNft takes nft's arguments as the jobs and the reserved classes give
// them; anything else is refused before nftables is asked.
TEST(RunNftTest, ArgumentsItDoesNotTakeAreRefused) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"-a", "list", "ruleset"},
                                             {"-f", "-", "list", "ruleset"},
                                             {},
                                             {"-j"},
                                             {"-f", "/etc/nftables.conf"}}) {
    auto r = RunNft(args, "");
    EXPECT_FALSE(r.ok()) << ::testing::PrintToString(args);
  }
}

// What parqd hands its reserved classes runs nft in this process and no
// program at all.
TEST(RunNftTest, RunCommandRunsNoProgram) {
  for (const std::vector<std::string>& argv :
       std::vector<std::vector<std::string>>{
           {"tc", "-batch", "-"}, {"/usr/sbin/nft", "list", "ruleset"}, {}}) {
    auto r = RunCommand(argv, "");
    ASSERT_FALSE(r.ok()) << ::testing::PrintToString(argv);
    EXPECT_NE(r.error().find("parqd runs no program"), std::string::npos)
        << r.error();
  }
}

// Without nftables in the kernel, libnftables would end the process: the
// probe's answer is the error, and libnftables is not asked.
TEST(RunNftTest, WithoutNftablesItIsAnErrorNotAnExit) {
  auto r = RunNft({"list", "table", "inet", "parq"}, "", [] {
    return std::optional<std::string>(
        "this kernel offers no nftables (netfilter netlink: Protocol not "
        "supported)");
  });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("offers no nftables"), std::string::npos);
}

}  // namespace
