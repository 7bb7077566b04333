// SPDX-License-Identifier: GPL-2.0
//
// The admission role's part in jobs admitted as a whole
// (admission_agent.h): this host's consents, the jobs it leads, and the
// classes it installs for its flows of each.

#include <algorithm>
#include <map>
#include <set>

#include "admission/admission_agent.h"

namespace parq::parqd {

Result<JobMembership, std::string> AdmissionAgent::JoinJob(
    const Requester& who, const std::string& name, const std::string& leader,
    uint64_t max_rate, const std::string& slurm) {
  if (lease_ == 0)
    return Err{NoLease()};
  if (auto e = CheckAllowance(who, 1))
    return Err{*e};
  const auto l = topology_.FindHost(leader);
  if (!l)
    return Err{"no host named or addressed \"" + leader + "\" in the topology"};
  const auto it = joined_.find(name);
  if (it != joined_.end() && it->second.who.uid != who.uid)
    return Err{"this host has joined job " + name + " for " +
               it->second.who.user + " already"};
  const size_t mine =
      std::count_if(joined_.begin(), joined_.end(),
                    [&](const auto& j) { return j.second.who.uid == who.uid; });
  if (it == joined_.end() && mine >= kMaxJoinedPerUser)
    return Err{"user " + who.user + " has joined " + std::to_string(mine) +
               " jobs on this host, as many as parqd keeps; leave one first"};
  auto m = admission_.Join(
      {config_.host, name, topology_.hosts()[*l].name, who.user, max_rate},
      lease_);
  if (!m.ok())
    return m;
  joined_[name] = Joined{m.value().leader, who, slurm};
  SyncJobs();
  return m;
}

Result<bool, std::string> AdmissionAgent::LeaveJob(const Requester& who,
                                                   const std::string& name) {
  const auto it = joined_.find(name);
  if (it != joined_.end() && who.uid != 0 && who.uid != it->second.who.uid)
    return Err{"job " + name + " was joined here by " + it->second.who.user +
               "; only they or root may leave it"};
  if (it == joined_.end() && who.uid != 0)
    return false;
  const bool had = it != joined_.end();
  // The job goes with its leader's consent: its record would otherwise
  // hold its capacity, and its owner's allowance, until parqd stops.
  if (had && it->second.leader == config_.host) {
    auto gone = admission_.ReleaseJob(config_.host, name);
    if (gone.ok())
      log_(kInfo, "admission: job " + name + " released");
    else if (gone.error() != "no job " + name + " of " + config_.host)
      return Err{gone.error()};
  }
  auto left = admission_.Leave(config_.host, name);
  if (!left.ok())
    return left;
  if (had)
    joined_.erase(it);
  SyncJobs();
  return left.value() || had;
}

Result<JobReservation, std::string> AdmissionAgent::ReserveJob(
    const Requester& who, const std::string& name,
    const std::vector<std::string>& hosts, uint64_t rate,
    const std::string& match) {
  if (lease_ == 0)
    return Err{NoLease()};
  auto m = ParseMatch(match);
  if (!m.ok())
    return Err{m.error()};
  if (auto e = CheckAllowance(who, rate))
    return Err{*e};
  const auto it = joined_.find(name);
  if (it == joined_.end() || it->second.who.uid != who.uid ||
      it->second.leader != config_.host)
    return Err{"join job " + name + " here first, with this host (" +
               config_.host + ") as its leader"};
  JobRequest req{name,     config_.host,  hosts, rate, FormatMatch(m.value()),
                 who.user, Allowance(who)};
  auto j = admission_.ReserveJob(req, lease_);
  if (!j.ok()) {
    counters_.jobs_refused++;
    return j;
  }
  counters_.jobs_admitted++;
  log_(kInfo, "admission: job " + name +
                  " admitted: " + std::to_string(j.value().flows()) +
                  " flows of " + FormatRate(rate) + " among " +
                  std::to_string(j.value().hosts.size()) + " hosts, for " +
                  who.user);
  SyncJobs();
  return j;
}

Result<JobReservation, std::string> AdmissionAgent::ChangeJob(
    const Requester& who, const std::string& name, uint64_t rate) {
  if (lease_ == 0)
    return Err{NoLease()};
  const auto it = joined_.find(name);
  if (it == joined_.end() || it->second.leader != config_.host)
    return Err{"this host does not lead job " + name};
  if (who.uid != 0 && who.uid != it->second.who.uid)
    return Err{"job " + name + " belongs to " + it->second.who.user +
               "; only they or root may change it"};
  if (rate == 0)
    return Err{"a rate of 0 reserves nothing; release job " + name +
               " instead"};
  auto j =
      admission_.ChangeJob(config_.host, name, rate, Allowance(it->second.who));
  if (!j.ok()) {
    counters_.jobs_refused++;
    return j;
  }
  log_(kInfo, "admission: job " + name + " changed to " + FormatRate(rate) +
                  " a flow");
  SyncJobs();
  return j;
}

Result<JobReservation, std::string> AdmissionAgent::ShowJob(
    const std::string& name) {
  auto jobs = admission_.Jobs();
  if (!jobs.ok())
    return Err{jobs.error()};
  SyncJobs(jobs.value());
  const auto mine = joined_.find(name);
  for (JobReservation& j : jobs.value()) {
    if (j.name != name ||
        (mine != joined_.end() && j.leader != mine->second.leader))
      continue;
    if (mine == joined_.end())
      return std::move(j);
    // Joined here: its flows from here must be installed.
    if (std::find(j.joined.begin(), j.joined.end(), config_.host) ==
        j.joined.end())
      return Err{"job " + name + " of " + j.leader +
                 " does not count this host's flows: its consent does not "
                 "hold (another owner, a rate above what it allows, or "
                 "given after the job was admitted)"};
    for (const std::string& d : j.hosts)
      if (d != config_.host && !job_flows_.count({name, d}))
        return Err{"job " + name + " is admitted, but this host's flow to " +
                   d + " is not installed (parqd's log says why)"};
    return std::move(j);
  }
  return Err{"no job " + name + " is admitted"};
}

std::map<std::pair<std::string, std::string>, uint32_t>
AdmissionAgent::JobFlows() const {
  std::map<std::pair<std::string, std::string>, uint32_t> out;
  for (const auto& [key, f] : job_flows_)
    out.emplace(key, f.minor);
  return out;
}

void AdmissionAgent::SyncJobs() {
  if (lease_ == 0)
    return;
  if (joined_.empty()) {
    SyncJobs({});
    return;
  }
  auto jobs = admission_.Jobs();
  if (!jobs.ok()) {
    // Nothing is removed on a failed read: etcd may only be slow.
    log_(kWarn, "admission: cannot read the jobs: " + jobs.error());
    return;
  }
  SyncJobs(jobs.value());
}

void AdmissionAgent::SyncJobs(const std::vector<JobReservation>& jobs) {
  if (lease_ == 0)
    return;
  // What should be installed: (job, destination) -> its rate and owner.
  struct Want {
    uint64_t rate;
    Match match;
    uint32_t uid;
  };
  std::map<std::pair<std::string, std::string>, Want> want;
  for (const JobReservation& j : jobs) {
    const auto it = joined_.find(j.name);
    if (it == joined_.end() || it->second.leader != j.leader ||
        it->second.who.user != j.owner ||
        std::find(j.joined.begin(), j.joined.end(), config_.host) ==
            j.joined.end())
      continue;
    auto m = ParseMatch(j.match);
    if (!m.ok()) {
      log_(kWarn, "admission: job " + j.name + "'s match does not read (" +
                      m.error() + "): not installed");
      continue;
    }
    for (const std::string& d : j.hosts)
      if (d != config_.host)
        want[{j.name, d}] = Want{j.rate, m.value(), it->second.who.uid};
  }
  for (auto it = job_flows_.begin(); it != job_flows_.end();) {
    if (want.count(it->first)) {
      ++it;
      continue;
    }
    if (auto e = classes_.Remove(it->second.minor))
      log_(kError, "admission: cannot remove class " + Hex(it->second.minor) +
                       " of job " + it->first.first + ": " + *e);
    log_(kInfo, "admission: job " + it->first.first + "'s flow to " +
                    it->first.second + " removed");
    it = job_flows_.erase(it);
  }
  for (const auto& [key, w] : want) {
    const auto have = job_flows_.find(key);
    if (have != job_flows_.end()) {
      if (have->second.rate == w.rate)
        continue;
      if (auto e = classes_.SetRate(have->second.minor, w.rate)) {
        log_(kError, "admission: cannot change class " +
                         Hex(have->second.minor) + " of job " + key.first +
                         ": " + *e);
        continue;
      }
      have->second.rate = w.rate;
      continue;
    }
    const auto minor = FreeMinor();
    const auto dest = topology_.FindHost(key.second);
    if (!minor || !dest) {
      log_(kError,
           "admission: job " + key.first + "'s flow to " + key.second +
               " cannot be installed: " +
               (dest ? "no class is free" : "no such host in the topology"));
      continue;
    }
    if (auto e = classes_.Install(*minor, w.rate, w.match,
                                  topology_.hosts()[*dest].addresses, w.uid)) {
      log_(kError, "admission: cannot install job " + key.first +
                       "'s flow to " + key.second +
                       " (parqd tries every 5 s): " + *e);
      continue;
    }
    job_flows_[key] = JobFlow{*minor, w.rate};
  }
}

void AdmissionAgent::DropJobs() {
  for (const auto& [key, f] : job_flows_)
    if (auto e = classes_.Remove(f.minor))
      log_(kError, "admission: cannot remove class " + Hex(f.minor) +
                       " of job " + key.first + ": " + *e);
  job_flows_.clear();
  joined_.clear();
}

}  // namespace parq::parqd
