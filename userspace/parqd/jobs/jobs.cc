// SPDX-License-Identifier: GPL-2.0

#include "jobs/jobs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/toml_read.h"
#include "jobs/nft.h"

namespace parq::parqd {

namespace {

using nlohmann::json;

constexpr const char* kTable = kNftTable;

std::string SetName(unsigned level) {
  return "jobs_" + std::to_string(level);
}

// nft quotes the path in double quotes, with no escapes.
bool Quotable(const std::string& s) {
  return std::none_of(s.begin(), s.end(), [](char c) {
    return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 ||
           c == 0x7f;
  });
}

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return c >= '0' && c <= '9'; });
}

// Lexically: "/a//b/./c/../d/" -> "/a/b/d"; nullopt if not absolute.
std::optional<std::string> Normalize(const std::string& path) {
  if (path.empty() || path[0] != '/')
    return std::nullopt;
  std::vector<std::string> parts;
  std::istringstream in(path);
  std::string part;
  while (std::getline(in, part, '/')) {
    if (part.empty() || part == ".")
      continue;
    if (part == "..") {
      if (!parts.empty())
        parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (const std::string& p : parts)
    out += "/" + p;
  return out.empty() ? "/" : out;
}

// `abs` below `root`: the relative path and its depth, or nullopt.
std::optional<JobCgroup> Below(const std::string& abs,
                               const std::string& root) {
  const std::string prefix = root == "/" ? "/" : root + "/";
  if (abs.size() <= prefix.size() || abs.compare(0, prefix.size(), prefix))
    return std::nullopt;
  JobCgroup j;
  j.rel = abs.substr(prefix.size());
  j.level =
      static_cast<unsigned>(std::count(j.rel.begin(), j.rel.end(), '/')) + 1;
  return j;
}

std::string Quote(const std::string& s) {
  return "\"" + s + "\"";
}

int Fail(bool as_json, std::ostream& out, std::ostream& err,
         const std::string& what) {
  if (as_json)
    out << json{{"ok", false}, {"error", what}}.dump() << "\n";
  else
    err << "parqctl: " << what << "\n";
  return 1;
}

int Ok(bool as_json, std::ostream& out, json extra = json::object()) {
  if (as_json) {
    extra["ok"] = true;
    out << extra.dump() << "\n";
  }
  return 0;
}

// The table, or nullopt if there is none; an error if nft failed.
Result<std::optional<JobTable>, std::string> ReadTable(const JobEnv& env) {
  auto r = env.nft({"-j", "list", "table", "inet", "parq"}, "");
  if (!r.ok())
    return Err{"nft list table inet parq: " + r.error()};
  if (r.value().status != 0) {
    if (r.value().err.find("No such file or directory") != std::string::npos)
      return std::optional<JobTable>();
    return Err{"nft list table inet parq: " + ErrorText(r.value())};
  }
  auto t = ParseJobTable(r.value().out);
  if (!t.ok())
    return Err{t.error()};
  return std::optional<JobTable>(std::move(t.value()));
}

std::optional<std::string> Apply(const JobEnv& env, const std::string& script) {
  auto r = env.nft({"-f", "-"}, script);
  if (!r.ok())
    return "nft: " + r.error();
  if (r.value().status != 0)
    return "nft refused the change: " + ErrorText(r.value());
  return std::nullopt;
}

// flock()ed for the life of the object.
class Lock {
 public:
  explicit Lock(const std::string& path) {
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0)
      mkdir(path.substr(0, slash).c_str(), 0755);  // EEXIST is fine
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0)
      error_ = "cannot open " + path + ": " + std::strerror(errno);
    else if (flock(fd_, LOCK_EX) != 0)
      error_ = "cannot lock " + path + ": " + std::strerror(errno);
  }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;
  ~Lock() {
    if (fd_ >= 0)
      close(fd_);
  }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  std::string error_;
};

// `change` with the lock held and the table read (nullopt: none yet); a
// failure to lock or to read fails the command `what`.
template <typename Change>
int WithTable(const JobEnv& env, const std::string& what, bool as_json,
              std::ostream& out, std::ostream& err, Change change) {
  const Lock lock(env.lock_path);
  if (!lock.error().empty())
    return Fail(as_json, out, err, what + ": " + lock.error());
  const auto t = ReadTable(env);
  if (!t.ok())
    return Fail(as_json, out, err, what + ": " + t.error());
  return change(t.value());
}

// The policy file's policy; the defaults if there is no file.
Result<JobPolicy, std::string> LoadPolicy(const JobEnv& env) {
  std::ifstream in(env.policy_path);
  if (!in) {
    if (errno == ENOENT)
      return JobPolicy{};
    return Err{"cannot read " + env.policy_path + ": " + std::strerror(errno)};
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ParseJobPolicy(text.str(), env.policy_path);
}

// `text` as file `path`, whole or not at all (a new file renamed over it).
std::optional<std::string> WriteWhole(const std::string& path,
                                      const std::string& text) {
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0)
    mkdir(path.substr(0, slash).c_str(), 0755);  // EEXIST is fine
  const std::string tmp = path + ".new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out)
      return "cannot write " + tmp + ": " + std::strerror(errno);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0)
    return "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
  return std::nullopt;
}

// The jobs kept in the state file (none if there is none).
std::vector<JobCgroup> ReadState(const JobEnv& env) {
  std::vector<JobCgroup> jobs;
  std::ifstream in(env.state_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || !Quotable(line))
      continue;
    if (auto j = Below(env.root + "/" + line, env.root))
      jobs.push_back(*j);
  }
  return jobs;
}

// The state file with `add` added and `del` removed.
std::optional<std::string> UpdateState(const JobEnv& env,
                                       const std::vector<std::string>& add,
                                       const std::vector<std::string>& del) {
  std::set<std::string> rels;
  for (const JobCgroup& j : ReadState(env))
    rels.insert(j.rel);
  for (const std::string& d : del)
    rels.erase(d);
  rels.insert(add.begin(), add.end());
  std::string text;
  for (const std::string& r : rels)
    text += r + "\n";
  return WriteWhole(env.state_path, text);
}

// The table has its fixed chains (jobs and sets aside).
bool Complete(const JobTable& t) {
  for (const char* c : {"jobs", "parallel", "egress", "forward"})
    if (!t.chains.count(c))
      return false;
  return true;
}

}  // namespace

CgroupProbe SystemCgroupProbe() {
  CgroupProbe p;
  p.realpath = [](const std::string& path) -> std::optional<std::string> {
    char buf[PATH_MAX];
    if (!::realpath(path.c_str(), buf))
      return std::nullopt;
    return std::string(buf);
  };
  p.is_dir = [](const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  p.is_cgroup2 = [](const std::string& path) {
    struct statfs fs {};
    return statfs(path.c_str(), &fs) == 0 &&
           static_cast<unsigned long>(fs.f_type) == CGROUP2_SUPER_MAGIC;
  };
  return p;
}

Result<JobCgroup, std::string> ResolveJobToAdd(const std::string& path,
                                               const std::string& root,
                                               const CgroupProbe& probe) {
  if (!probe.is_cgroup2(root))
    return Err{root +
               " is not a cgroup v2 file system: this host uses cgroup v1 "
               "or the hybrid layout, and parq's jobs need the unified "
               "hierarchy (boot with systemd.unified_cgroup_hierarchy=1)"};
  const auto real = probe.realpath(path);
  if (!real)
    return Err{path + ": no such cgroup"};
  if (!probe.is_dir(*real))
    return Err{path + " is not a directory (give the job's cgroup, e.g. " +
               root + "/system.slice/slurmstepd.scope/job_7)"};
  const auto j = Below(*real, root);
  if (!j) {
    if (*real == root)
      return Err{path +
                 " is the root cgroup, which holds every process: not a job"};
    return Err{path + " is not below " + root +
               ", where nftables looks up cgroups"};
  }
  if (!probe.is_cgroup2(*real))
    return Err{path + " is not a cgroup v2 directory"};
  if (!Quotable(j->rel))
    return Err{path +
               ": nftables cannot quote a cgroup name with '\"', "
               "'\\' or control characters"};
  return *j;
}

Result<JobCgroup, std::string> ResolveJobToDel(const std::string& path,
                                               const std::string& root) {
  const auto abs = Normalize(path);
  if (!abs)
    return Err{path + ": give the job's cgroup as an absolute path"};
  const auto j = Below(*abs, root);
  if (!j)
    return Err{path + " is not below " + root + ": not a job"};
  if (!Quotable(j->rel))
    return Err{path +
               ": not a job (no job's name has '\"', '\\' or "
               "control characters)"};
  return *j;
}

std::string PolicyScript(const JobPolicy& policy) {
  std::ostringstream o;
  const std::string mark = DscpName(policy.dscp);
  // add is harmless on what exists: one script for a new table and an
  // old one, or one a flush left without a chain.
  o << "add table " << kTable << "\n"
    << "add chain " << kTable << " jobs\n"
    << "add chain " << kTable << " parallel\n"
    << "add chain " << kTable
    << " egress { type filter hook output priority mangle; "
       "policy accept; }\n"
    << "add chain " << kTable
    << " forward { type filter hook forward priority mangle; "
       "policy accept; }\n"
    << "flush chain " << kTable << " parallel\n"
    << "flush chain " << kTable << " egress\n"
    << "flush chain " << kTable << " forward\n";
  o << "add rule " << kTable << " parallel ip dscp set " << mark << "\n"
    << "add rule " << kTable << " parallel ip6 dscp set " << mark << "\n"
    << "add rule " << kTable << " parallel accept\n"
    << "add rule " << kTable << " egress jump jobs\n";
  std::vector<uint8_t> claimed = policy.claimed;
  std::sort(claimed.begin(), claimed.end());
  claimed.erase(std::unique(claimed.begin(), claimed.end()), claimed.end());
  if (policy.anti_spoof && !claimed.empty()) {
    std::string set = "{ ";
    for (size_t i = 0; i < claimed.size(); i++)
      set += (i ? ", " : "") + DscpName(claimed[i]);
    set += " }";
    for (const char* chain : {"egress", "forward"}) {
      if (std::string(chain) == "forward" && !policy.forward)
        continue;
      for (const char* ip : {"ip", "ip6"})
        o << "add rule " << kTable << " " << chain << " " << ip << " dscp "
          << set << " " << ip << " dscp set cs0\n";
    }
  }
  return o.str();
}

Result<JobPolicy, std::string> ParseJobPolicy(const std::string& text,
                                              const std::string& source) {
  auto doc = ParseToml(text, source);
  if (!doc.ok())
    return Err{doc.error()};
  const TomlReader r(source);
  JobPolicy p;
  const auto dscp = [&](const toml::node& n,
                        std::string_view key) -> Result<uint8_t, std::string> {
    const auto v = n.value<std::string>();
    const auto d = v ? ParseDscp(*v) : std::nullopt;
    if (!d)
      return Err{r.Err(n, key,
                       "give a DSCP name in quotes (\"EF\", \"CS5\") "
                       "or a number 0..63 in quotes")};
    return *d;
  };
  const auto boolean = [&](const toml::node& n, std::string_view key,
                           bool* to) -> std::optional<std::string> {
    const auto v = n.value<bool>();
    if (!v || !n.is_boolean())
      return r.Err(n, key, "give true or false");
    *to = *v;
    return std::nullopt;
  };
  for (const auto& [k, v] : doc.value().table) {
    const std::string key(k.str());
    if (key == "parallel-dscp") {
      auto d = dscp(v, key);
      if (!d.ok())
        return Err{d.error()};
      p.dscp = d.value();
    } else if (key == "anti-spoof") {
      if (auto e = boolean(v, key, &p.anti_spoof))
        return Err{*e};
    } else if (key == "anti-spoof-forward") {
      if (auto e = boolean(v, key, &p.forward))
        return Err{*e};
    } else if (key == "claimed") {
      const toml::array* a = v.as_array();
      if (!a)
        return Err{r.Err(v, key, "give a list of DSCPs: [\"CS5\", \"EF\"]")};
      p.claimed.clear();
      for (const toml::node& e : *a) {
        auto d = dscp(e, key);
        if (!d.ok())
          return Err{d.error()};
        p.claimed.push_back(d.value());
      }
    } else {
      return Err{r.Err(v, key,
                       "unknown key (the keys are parallel-dscp, anti-spoof, "
                       "claimed and anti-spoof-forward)")};
    }
  }
  return p;
}

std::string FormatJobPolicy(const JobPolicy& p) {
  std::string s =
      "# parq's parallel jobs policy, kept by `parqctl job policy` "
      "(parqctl(8)).\n"
      "parallel-dscp = \"" +
      DscpName(p.dscp) + "\"\n" +
      "anti-spoof = " + (p.anti_spoof ? "true" : "false") + "\n" +
      "claimed = [";
  for (size_t i = 0; i < p.claimed.size(); i++)
    s += (i ? ", \"" : "\"") + DscpName(p.claimed[i]) + "\"";
  s += "]\nanti-spoof-forward = ";
  s += p.forward ? "true\n" : "false\n";
  return s;
}

std::string LevelScript(unsigned level) {
  const std::string l = std::to_string(level);
  return "add set " + std::string(kTable) + " " + SetName(level) +
         " { typeof socket cgroupv2 level " + l + "; }\n" + "add rule " +
         kTable + " jobs socket cgroupv2 level " + l + " @" + SetName(level) +
         " goto parallel\n";
}

std::string AddJobScript(const JobCgroup& job) {
  return "add element " + std::string(kTable) + " " + SetName(job.level) +
         " { " + Quote(job.rel) + " }\n";
}

std::string DelJobScript(const JobCgroup& job) {
  return "delete element " + std::string(kTable) + " " + SetName(job.level) +
         " { " + Quote(job.rel) + " }\n";
}

std::string RefillScript(unsigned level, const std::vector<std::string>& live) {
  std::string s =
      "flush set " + std::string(kTable) + " " + SetName(level) + "\n";
  if (!live.empty()) {
    s += "add element " + std::string(kTable) + " " + SetName(level) + " { ";
    for (size_t i = 0; i < live.size(); i++)
      s += (i ? ", " : "") + Quote(live[i]);
    s += " }\n";
  }
  return s;
}

Result<JobTable, std::string> ParseJobTable(const std::string& nft_json) {
  const json all = json::parse(nft_json, nullptr, /*allow_exceptions=*/false);
  if (all.is_discarded() || !all.is_object() || !all.contains("nftables") ||
      !all["nftables"].is_array())
    return Err{std::string("nft printed something that is not its JSON")};
  JobTable t;
  for (const json& item : all["nftables"]) {
    if (item.is_object() && item.contains("chain") && item["chain"].is_object())
      t.chains.insert(item["chain"].value("name", ""));
    if (!item.is_object() || !item.contains("set"))
      continue;
    const json& set = item["set"];
    const std::string name = set.value("name", "");
    if (name.rfind("jobs_", 0) != 0 || !AllDigits(name.substr(5)))
      continue;
    const unsigned long level = std::strtoul(name.c_str() + 5, nullptr, 10);
    if (level == 0 || level > UINT_MAX)
      continue;
    std::vector<std::string>& elems = t.elems[static_cast<unsigned>(level)];
    if (!set.contains("elem") || !set["elem"].is_array())
      continue;
    for (const json& e : set["elem"]) {
      if (e.is_string())
        elems.push_back(e.get<std::string>());
      else if (e.is_number_unsigned())
        elems.push_back(std::to_string(e.get<uint64_t>()));
    }
  }
  return t;
}

std::map<unsigned, JobLevel> SplitJobs(const JobTable& t,
                                       const std::string& root,
                                       const CgroupProbe& probe) {
  std::map<unsigned, JobLevel> out;
  for (const auto& [level, elems] : t.elems) {
    JobLevel& l = out[level];
    for (const std::string& e : elems) {
      // A cgroup named by digits alone is live if it exists; a gone
      // cgroup's id never does.
      if (probe.is_dir(root + "/" + e))
        l.live.push_back(e);
      else
        l.gone.push_back(e);
    }
  }
  return out;
}

NftRunner SystemNft() {
  return [](const std::vector<std::string>& args, const std::string& input) {
    return RunNft(args, input);
  };
}

int JobAdd(const JobEnv& env, const std::string& path, bool as_json,
           std::ostream& out, std::ostream& err) {
  const auto job = ResolveJobToAdd(path, env.root, env.probe);
  if (!job.ok())
    return Fail(as_json, out, err, "job add: " + job.error());
  const auto policy = LoadPolicy(env);
  if (!policy.ok())
    return Fail(as_json, out, err, "job add: " + policy.error());
  return WithTable(
      env, "job add", as_json, out, err, [&](const std::optional<JobTable>& t) {
        // One transaction: the table (with the kept policy) if missing or
        // incomplete, the level if new, the job.
        std::string script;
        if (!t || !Complete(*t))
          script += PolicyScript(policy.value());
        if (!t || !t->elems.count(job.value().level))
          script += LevelScript(job.value().level);
        script += AddJobScript(job.value());
        if (auto e = Apply(env, script))
          return Fail(as_json, out, err, "job add " + path + ": " + *e);
        if (auto e = UpdateState(env, {job.value().rel}, {}))
          return Fail(as_json, out, err,
                      "job add " + path + ": the job is in the table, but " +
                          *e + ", and a restored table would miss it");
        return Ok(as_json, out);
      });
}

namespace {

// job del of `j` from table `t`, under the lock.
int DelFrom(const JobEnv& env, const std::optional<JobTable>& t,
            const JobCgroup& j, const std::string& path, bool as_json,
            std::ostream& out, std::ostream& err) {
  if (!t)
    return Ok(as_json, out, {{"removed", false}});
  const auto levels = SplitJobs(*t, env.root, env.probe);
  const auto it = levels.find(j.level);
  if (it == levels.end())
    return Ok(as_json, out, {{"removed", false}});
  const JobLevel& l = it->second;
  std::string script;
  if (std::find(l.live.begin(), l.live.end(), j.rel) != l.live.end())
    script = DelJobScript(j);
  else if (!l.gone.empty() && !env.probe.is_dir(env.root + "/" + j.rel))
    // Its cgroup is gone, and nft cannot name it any more.
    script = RefillScript(j.level, l.live);
  else
    return Ok(as_json, out, {{"removed", false}});
  if (auto e = Apply(env, script))
    return Fail(as_json, out, err, "job del " + path + ": " + *e);
  if (auto e = UpdateState(env, {}, {j.rel}))
    return Fail(as_json, out, err,
                "job del " + path + ": the job left the table, but " + *e);
  return Ok(as_json, out, {{"removed", true}});
}

}  // namespace

int JobDel(const JobEnv& env, const std::string& path, bool as_json,
           std::ostream& out, std::ostream& err) {
  const auto job = ResolveJobToDel(path, env.root);
  if (!job.ok())
    return Fail(as_json, out, err, "job del: " + job.error());
  return WithTable(
      env, "job del", as_json, out, err, [&](const std::optional<JobTable>& t) {
        // Kept or not, it is no job any more (nor after a restore).
        if (auto e = UpdateState(env, {}, {job.value().rel}))
          return Fail(as_json, out, err, "job del " + path + ": " + *e);
        return DelFrom(env, t, job.value(), path, as_json, out, err);
      });
}

int JobList(const JobEnv& env, bool as_json, std::ostream& out,
            std::ostream& err) {
  const auto t = ReadTable(env);
  if (!t.ok())
    return Fail(as_json, out, err, "job list: " + t.error());
  std::map<unsigned, JobLevel> levels;
  if (t.value())
    levels = SplitJobs(*t.value(), env.root, env.probe);
  if (as_json) {
    json jobs = json::array(), gone = json::array();
    for (const auto& [level, l] : levels) {
      for (const std::string& p : l.live)
        jobs.push_back({{"path", env.root + "/" + p}, {"level", level}});
      for (const std::string& g : l.gone)
        gone.push_back({{"cgroup", g}, {"level", level}});
    }
    out << json{{"jobs", jobs}, {"gone", gone}}.dump() << "\n";
    return 0;
  }
  for (const auto& [level, l] : levels) {
    for (const std::string& p : l.live)
      out << env.root << "/" << p << "\n";
    for (const std::string& g : l.gone)
      out << "(cgroup " << g << " at level " << level
          << " is gone: parqctl job sweep removes it)\n";
  }
  return 0;
}

int JobPolicySet(const JobEnv& env, const JobPolicy& policy, bool as_json,
                 std::ostream& out, std::ostream& err) {
  return WithTable(
      env, "job policy", as_json, out, err,
      [&](const std::optional<JobTable>& t) {
        (void)t;
        if (auto e = Apply(env, PolicyScript(policy)))
          return Fail(as_json, out, err, "job policy: " + *e);
        if (auto e = WriteWhole(env.policy_path, FormatJobPolicy(policy)))
          return Fail(as_json, out, err,
                      "job policy: the table has the policy, but " + *e +
                          ", and a restored table would not have it");
        return Ok(as_json, out);
      });
}

int JobSweep(const JobEnv& env, bool as_json, std::ostream& out,
             std::ostream& err) {
  return WithTable(
      env, "job sweep", as_json, out, err,
      [&](const std::optional<JobTable>& t) {
        size_t removed = 0;
        std::string script;
        if (t)
          for (const auto& [level, l] : SplitJobs(*t, env.root, env.probe))
            if (!l.gone.empty()) {
              script += RefillScript(level, l.live);
              removed += l.gone.size();
            }
        if (!script.empty())
          if (auto e = Apply(env, script))
            return Fail(as_json, out, err, "job sweep: " + *e);
        std::vector<std::string> gone;
        for (const JobCgroup& j : ReadState(env))
          if (!env.probe.is_dir(env.root + "/" + j.rel))
            gone.push_back(j.rel);
        if (!gone.empty())
          if (auto e = UpdateState(env, {}, gone))
            return Fail(as_json, out, err, "job sweep: " + *e);
        return Ok(as_json, out, {{"removed", removed}});
      });
}

std::string RestoreScript(const JobPolicy& policy,
                          const std::optional<JobTable>& t,
                          const std::vector<JobCgroup>& state,
                          const std::string& root, const CgroupProbe& probe) {
  std::string script;
  if (!t || !Complete(*t))
    script += PolicyScript(policy);
  std::set<unsigned> levels;
  for (const JobCgroup& j : state) {
    // nft cannot add a cgroup that is gone: job sweep forgets it.
    if (!probe.is_dir(root + "/" + j.rel))
      continue;
    if (!t || !t->elems.count(j.level)) {
      if (levels.insert(j.level).second)
        script += LevelScript(j.level);
    } else {
      const std::vector<std::string>& have = t->elems.at(j.level);
      if (std::find(have.begin(), have.end(), j.rel) != have.end())
        continue;
    }
    script += AddJobScript(j);
  }
  return script;
}

namespace {

// What a restore added: "" if nothing was missing.
struct Restored {
  std::string what;
};

// One restore, or an error.
Result<Restored, std::string> RestoreOnce(const JobEnv& env) {
  const auto policy = LoadPolicy(env);
  if (!policy.ok())
    return Err{policy.error()};
  const Lock lock(env.lock_path);
  if (!lock.error().empty())
    return Err{lock.error()};
  const auto t = ReadTable(env);
  if (!t.ok())
    return Err{t.error()};
  const std::string script = RestoreScript(policy.value(), t.value(),
                                           ReadState(env), env.root, env.probe);
  if (script.empty())
    return Restored{};
  if (auto e = Apply(env, script))
    return Err{*e};
  if (!t.value())
    return Restored{"the table was missing"};
  return Restored{Complete(*t.value()) ? "the table missed jobs"
                                       : "the table missed a chain"};
}

}  // namespace

int NftRestore(const JobEnv& env, bool as_json, std::ostream& out,
               std::ostream& err) {
  const auto r = RestoreOnce(env);
  if (!r.ok())
    return Fail(as_json, out, err, "nft restore: " + r.error());
  const std::string& what = r.value().what;
  if (!as_json && !what.empty())
    out << "table inet parq restored: " << what << "\n";
  return Ok(as_json, out, {{"restored", !what.empty()}});
}

int NftWatch(const JobEnv& env, std::ostream& out, std::ostream& err) {
  // nftables' notifications: every change of any table.  Without them
  // (an old kernel, a seccomp filter), a poll every 0.5 s.
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK,
                  NETLINK_NETFILTER);
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  int group = NFNLGRP_NFTABLES;
  if (fd >= 0 && (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
                  setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group,
                             sizeof(group)) != 0)) {
    close(fd);
    fd = -1;
  }
  if (fd < 0)
    err << "parqctl: nft watch: no nftables notifications ("
        << std::strerror(errno) << "): looking every 0.5 s\n";
  int failures = 0;
  for (;;) {
    const auto r = RestoreOnce(env);
    if (!r.ok()) {
      err << "parqctl: nft watch: cannot restore table inet parq: " << r.error()
          << "\n";
      // Each error once a second at most, and give up after a minute of
      // them: systemd restarts the watch.
      if (++failures > 60)
        return 1;
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    failures = 0;
    if (!r.value().what.empty()) {
      out << "parqctl: nft watch: table inet parq restored: " << r.value().what
          << "\n";
      out.flush();
    }
    pollfd p{fd, POLLIN, 0};
    if (fd < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    if (poll(&p, 1, 5000) <= 0)
      continue;
    // A transaction is several messages: read them all (ENOBUFS, some
    // lost, is as good as a message) after a moment for the rest.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    char buf[8192];
    while (recv(fd, buf, sizeof(buf), 0) > 0 || errno == ENOBUFS) {
    }
  }
}

}  // namespace parq::parqd
