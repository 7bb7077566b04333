// SPDX-License-Identifier: GPL-2.0

#include "jobs.h"

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

#include <nlohmann/json.hpp>

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
    return Err{r.error() + " (install nftables)"};
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
    return r.error() + " (install nftables)";
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

std::string PolicyScript(const JobPolicy& policy, bool table_exists) {
  std::ostringstream o;
  const std::string mark = DscpName(policy.dscp);
  if (!table_exists) {
    o << "add table " << kTable << "\n"
      << "add chain " << kTable << " jobs\n"
      << "add chain " << kTable << " parallel\n"
      << "add chain " << kTable
      << " egress { type filter hook output priority mangle; "
         "policy accept; }\n";
  } else {
    o << "flush chain " << kTable << " parallel\n"
      << "flush chain " << kTable << " egress\n";
  }
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
    for (const char* ip : {"ip", "ip6"})
      o << "add rule " << kTable << " egress " << ip << " dscp " << set << " "
        << ip << " dscp set cs0\n";
  }
  return o.str();
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
    std::vector<std::string> argv = {"nft"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProgram(argv, input);
  };
}

int JobAdd(const JobEnv& env, const std::string& path, const JobPolicy& policy,
           bool as_json, std::ostream& out, std::ostream& err) {
  const auto job = ResolveJobToAdd(path, env.root, env.probe);
  if (!job.ok())
    return Fail(as_json, out, err, "job add: " + job.error());
  return WithTable(
      env, "job add", as_json, out, err, [&](const std::optional<JobTable>& t) {
        // One transaction: the table if missing, the level if
        // new, the job.
        std::string script;
        if (!t)
          script += PolicyScript(policy, false);
        if (!t || !t->elems.count(job.value().level))
          script += LevelScript(job.value().level);
        script += AddJobScript(job.value());
        if (auto e = Apply(env, script))
          return Fail(as_json, out, err, "job add " + path + ": " + *e);
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
        if (auto e = Apply(env, PolicyScript(policy, t.has_value())))
          return Fail(as_json, out, err, "job policy: " + *e);
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
        return Ok(as_json, out, {{"removed", removed}});
      });
}

}  // namespace parq::parqd
