// SPDX-License-Identifier: GPL-2.0
//
// Jobs admitted as a whole (cluster_admission.h): the consents, the job
// records, what a job charges, and its admission in one transaction.

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "admission/cluster_admission.h"
#include "base/satmath.h"

namespace parq::parqd {

namespace {

using nlohmann::json;

constexpr int kMaxAttempts = 64;

// The string field `name` of `j` into `to`; false when it is there but
// not a string.  (json's get() throws on a field of another type.)
bool Text(const json& j, const char* name, std::string& to) {
  const auto it = j.find(name);
  if (it == j.end())
    return true;
  if (!it->is_string())
    return false;
  to = it->get<std::string>();
  return true;
}

// KIND/A/B after the kind's prefix: A and B, both non-empty, no more '/'.
std::optional<std::pair<std::string, std::string>> TwoParts(
    std::string_view rest) {
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 ||
      slash + 1 == rest.size() ||
      rest.find('/', slash + 1) != std::string_view::npos)
    return std::nullopt;
  return std::pair{std::string(rest.substr(0, slash)),
                   std::string(rest.substr(slash + 1))};
}

std::string MemberJson(const JobMembership& m) {
  return json{{"name", m.name},
              {"leader", m.leader},
              {"owner", m.owner},
              {"rate", m.max_rate}}
      .dump();
}

// Whether consent `m` lets its host carry job `j`'s flows: the job's
// name, leader and owner, and a rate within what the host agreed to.  (It
// must also be older than the job's record: ReadJobs().)
bool Allows(const JobMembership& m, const JobReservation& j) {
  return m.name == j.name && m.leader == j.leader && m.owner == j.owner &&
         (m.max_rate == 0 || j.rate <= m.max_rate);
}

std::string JobJson(const JobReservation& j) {
  return json{{"name", j.name}, {"leader", j.leader}, {"hosts", j.hosts},
              {"rate", j.rate}, {"match", j.match},   {"owner", j.owner}}
      .dump();
}

}  // namespace

std::optional<std::string> JobNameProblem(std::string_view name) {
  if (ValidName(name))
    return std::nullopt;
  return "\"" + std::string(name) +
         "\" cannot name a job: 1 to 63 letters, digits, '-', '_', '.'";
}

EtcdCompare ClusterAdmission::Unchanged(const char* kind,
                                        int64_t revision) const {
  const std::string pre = prefix_ + kind;
  return {pre, EtcdPrefixEnd(pre), EtcdCompare::Target::kModRevision,
          EtcdCompare::Op::kLess, revision + 1};
}

std::string ClusterAdmission::JobKey(const std::string& leader,
                                     const std::string& name) const {
  return prefix_ + "job/" + leader + "/" + name;
}

std::string ClusterAdmission::MemberKey(const std::string& host,
                                        const std::string& name) const {
  return prefix_ + "member/" + host + "/" + name;
}

std::optional<size_t> ClusterAdmission::HostNamed(std::string_view name) const {
  const auto it = host_index_.find(name);
  if (it == host_index_.end())
    return std::nullopt;
  return it->second;
}

std::vector<uint64_t> ClusterAdmission::JobCharges(
    const JobReservation& j) const {
  // Bounded: whoever writes jobs could otherwise grow it without end.
  constexpr size_t kMaxRemembered = 256;
  const std::string key = j.leader + "/" + j.name;
  if (const auto it = charges_.find(key);
      it != charges_.end() && it->second.hosts == j.hosts &&
      it->second.joined == j.joined && it->second.rate == j.rate)
    return it->second.charges;
  std::vector<uint64_t> charges(topology_.resources().size(), 0);
  std::vector<size_t> hosts;
  hosts.reserve(j.hosts.size());
  for (const std::string& h : j.hosts)
    if (const auto i = HostNamed(h))
      hosts.push_back(*i);
  for (const std::string& from : j.joined) {
    const auto s = HostNamed(from);
    if (!s)
      continue;
    for (size_t d : hosts)
      for (size_t r : topology_.Path(*s, d))
        charges[r] = SatAdd(charges[r], j.rate);
  }
  if (charges_.size() >= kMaxRemembered)
    charges_.clear();
  charges_[key] = Charges{j.hosts, j.joined, j.rate, charges};
  return charges;
}

Result<std::vector<JobMembership>, std::string> ClusterAdmission::Memberships(
    const std::string& host) {
  const std::string pre =
      prefix_ + "member/" + (host.empty() ? "" : host + "/");
  auto range = etcd_.Range(pre, EtcdPrefixEnd(pre));
  if (!range.ok())
    return Err{range.error()};
  const size_t skip = prefix_.size() + 7;  // member/
  std::vector<JobMembership> out;
  for (const EtcdKv& kv : range.value().kvs) {
    const auto parts = TwoParts(std::string_view(kv.key).substr(skip));
    const json j = json::parse(kv.value, nullptr, false);
    JobMembership m;
    const bool rate =
        j.is_object() && j.contains("rate") && j["rate"].is_number_unsigned();
    if (!parts || !j.is_object() || !Text(j, "name", m.name) ||
        !Text(j, "leader", m.leader) || !Text(j, "owner", m.owner) || !rate ||
        m.name != parts->second) {
      Ignore(kv.key, "is not a host's consent to a job: left out");
      continue;
    }
    if (!Counts(kv))
      continue;
    m.host = parts->first;
    m.max_rate = j["rate"].get<uint64_t>();
    m.lease = kv.lease;
    m.create_revision = kv.create_revision;
    out.push_back(std::move(m));
  }
  return out;
}

Result<std::vector<JobReservation>, std::string> ClusterAdmission::ReadJobs(
    int64_t* job_revision) {
  const std::string pre = prefix_ + "job/";
  auto range = etcd_.Range(pre, EtcdPrefixEnd(pre));
  if (!range.ok())
    return Err{range.error()};
  *job_revision = range.value().revision;
  std::vector<JobReservation> out;
  if (range.value().kvs.empty())
    return out;
  auto members = Memberships("");
  if (!members.ok())
    return Err{members.error()};
  // host/name -> consent
  std::map<std::string, const JobMembership*, std::less<>> consent;
  for (const JobMembership& m : members.value())
    consent.emplace(m.host + "/" + m.name, &m);
  for (const EtcdKv& kv : range.value().kvs) {
    const auto parts = TwoParts(std::string_view(kv.key).substr(pre.size()));
    const json j = json::parse(kv.value, nullptr, false);
    JobReservation r;
    bool ok = parts && j.is_object() && Text(j, "name", r.name) &&
              Text(j, "leader", r.leader) && Text(j, "match", r.match) &&
              Text(j, "owner", r.owner) && j.contains("rate") &&
              j["rate"].is_number_unsigned() && j.contains("hosts") &&
              j["hosts"].is_array();
    if (ok) {
      r.rate = j["rate"].get<uint64_t>();
      std::set<std::string, std::less<>> seen;
      for (const json& h : j["hosts"]) {
        ok = ok && h.is_string() && HostNamed(h.get<std::string>()) &&
             seen.insert(h.get<std::string>()).second;
        if (ok)
          r.hosts.push_back(h.get<std::string>());
      }
    }
    if (!ok || r.leader != parts->first || r.name != parts->second ||
        r.rate == 0 || r.hosts.size() < 2 ||
        std::find(r.hosts.begin(), r.hosts.end(), r.leader) == r.hosts.end()) {
      Ignore(kv.key,
             "is not a job of its key's leader and name, among the "
             "topology's hosts: left out");
      continue;
    }
    if (!Counts(kv))
      continue;
    r.lease = kv.lease;
    r.create_revision = kv.create_revision;
    for (const std::string& h : r.hosts) {
      const auto it = consent.find(h + "/" + r.name);
      if (it != consent.end() && Allows(*it->second, r) &&
          it->second->create_revision < r.create_revision)
        r.joined.push_back(h);
    }
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<JobReservation>, std::string> ClusterAdmission::Jobs() {
  int64_t revision = 0;
  return ReadJobs(&revision);
}

Result<JobMembership, std::string> ClusterAdmission::Join(
    const JobMembership& m, int64_t lease) {
  if (auto e = JobNameProblem(m.name))
    return Err{*e};
  if (!HostNamed(m.host))
    return Err{"no host named \"" + m.host + "\" in the topology"};
  if (!HostNamed(m.leader))
    return Err{"no host named \"" + m.leader + "\" in the topology"};
  if (lease <= 0)
    return Err{std::string("a consent needs a lease (its host's)")};
  const std::string key = MemberKey(m.host, m.name);
  for (int attempt = 0; attempt < kMaxAttempts; attempt++) {
    auto mine = Memberships(m.host);
    if (!mine.ok())
      return Err{mine.error()};
    auto raw = etcd_.Range(key);
    if (!raw.ok())
      return Err{raw.error()};
    // What is there: 0, or the creation revision of a record to replace
    // (this consent with another rate, or one that is not a live consent).
    const int64_t there =
        raw.value().kvs.empty() ? 0 : raw.value().kvs[0].create_revision;
    for (const JobMembership& e : mine.value()) {
      if (e.name != m.name || e.create_revision != there)
        continue;
      if (e.leader != m.leader || e.owner != m.owner)
        return Err{m.host + " has joined job " + m.name + " of " + e.leader +
                   " for " + e.owner + " already; leave it first"};
      if (e.max_rate == m.max_rate && e.lease == lease)
        return e;
    }
    auto txn = etcd_.Txn({{key, "", EtcdCompare::Target::kCreateRevision,
                           EtcdCompare::Op::kEqual, there}},
                         {{EtcdOp::Kind::kPut, key, MemberJson(m), "", lease}});
    if (!txn.ok())
      return Err{txn.error()};
    if (txn.value().succeeded) {
      JobMembership out = m;
      out.lease = lease;
      out.create_revision = there ? there : txn.value().revision;
      return out;
    }
    retries_++;
  }
  return Err{"gave up after " + std::to_string(kMaxAttempts) +
             " attempts: " + key + " kept changing"};
}

Result<bool, std::string> ClusterAdmission::Leave(const std::string& host,
                                                  const std::string& name) {
  if (JobNameProblem(name) || !HostNamed(host))
    return false;
  const std::string key = MemberKey(host, name);
  auto txn = etcd_.Txn({{key, "", EtcdCompare::Target::kCreateRevision,
                         EtcdCompare::Op::kGreater, 0}},
                       {{EtcdOp::Kind::kDelete, key, "", "", 0}});
  if (!txn.ok())
    return Err{txn.error()};
  return txn.value().succeeded;
}

Result<JobReservation, std::string> ClusterAdmission::ReserveJob(
    const JobRequest& req, int64_t lease) {
  if (auto e = JobNameProblem(req.name))
    return Err{*e};
  JobReservation j;
  j.name = req.name;
  std::set<size_t> seen;
  for (const std::string& h : req.hosts) {
    const auto i = topology_.FindHost(h);
    if (!i)
      return Err{"no host named or addressed \"" + h + "\" in the topology"};
    if (!seen.insert(*i).second)
      return Err{"job " + req.name + " names host " +
                 topology_.hosts()[*i].name + " twice"};
    j.hosts.push_back(topology_.hosts()[*i].name);
  }
  if (j.hosts.size() < 2)
    return Err{"job " + req.name +
               " has fewer than two hosts: it has no flows to reserve"};
  const auto leader = topology_.FindHost(req.leader);
  if (!leader || !seen.count(*leader))
    return Err{"the job's leader \"" + req.leader +
               "\" is not one of its hosts"};
  if (req.rate == 0)
    return Err{std::string("a rate of 0 reserves nothing")};
  if (lease <= 0)
    return Err{std::string(
        "a job needs a lease (its leader's), or it would never end")};
  j.leader = topology_.hosts()[*leader].name;
  j.rate = req.rate;
  j.match = req.match;
  j.owner = req.owner;
  j.lease = lease;
  return CommitJob(std::move(j), req.allowance, false);
}

Result<JobReservation, std::string> ClusterAdmission::ChangeJob(
    const std::string& leader, const std::string& name, uint64_t rate,
    std::optional<uint64_t> allowance) {
  if (rate == 0)
    return Err{"a rate of 0 reserves nothing; release job " + name +
               " instead"};
  JobReservation j;
  j.name = name;
  j.leader = leader;
  j.rate = rate;
  return CommitJob(std::move(j), allowance, true);
}

Result<JobReservation, std::string> ClusterAdmission::CommitJob(
    JobReservation j, std::optional<uint64_t> allowance, bool change) {
  const std::string key = JobKey(j.leader, j.name);
  const std::string own = change ? j.leader + "/" + j.name : "";
  const uint64_t rate = j.rate;
  for (int attempt = 0; attempt < kMaxAttempts; attempt++) {
    auto held = ReadHoldings("", "", own);
    if (!held.ok())
      return Err{held.error()};
    const Holdings& h = held.value();
    const JobReservation* now = nullptr;
    for (const JobReservation& e : h.jobs)
      if (e.name == j.name && e.leader == j.leader)
        now = &e;
    if (!change && now)
      return Err{"job " + j.name + " of " + j.leader + " is admitted already"};
    if (change && !now)
      return Err{"no job " + j.name + " of " + j.leader};
    if (change) {
      j = *now;  // its hosts, owner, lease and who joined, as etcd holds them
      j.rate = rate;
    }
    auto members = Memberships("");
    if (!members.ok())
      return Err{members.error()};
    if (!change) {
      // Whose consent holds: every host's (the record will be younger
      // than any consent there is now).
      j.joined.clear();
      std::vector<std::string> missing;
      for (const std::string& host : j.hosts) {
        const bool joined =
            std::any_of(members.value().begin(), members.value().end(),
                        [&](const JobMembership& m) {
                          return m.host == host && Allows(m, j);
                        });
        (joined ? j.joined : missing).push_back(host);
      }
      if (!missing.empty()) {
        std::string list;
        for (const std::string& m : missing)
          list += (list.empty() ? "" : ", ") + m;
        return Err{"job " + j.name + ": " + std::to_string(missing.size()) +
                   " of its " + std::to_string(j.hosts.size()) +
                   " hosts have not joined it (of " + j.leader + ", for " +
                   j.owner + ", at " + FormatRate(j.rate) +
                   " a flow): " + list};
      }
    } else {
      // A host carries a flow only up to the rate it agreed to.
      std::string below;
      for (const JobMembership& m : members.value())
        if (m.name == j.name && !Allows(m, j) &&
            std::find(j.joined.begin(), j.joined.end(), m.host) !=
                j.joined.end())
          below += (below.empty() ? "" : ", ") + m.host + " (" +
                   FormatRate(m.max_rate) + ")";
      if (!below.empty())
        return Err{"job " + j.name + ": hosts agreed to less than " +
                   FormatRate(j.rate) + " a flow: " + below +
                   "; they must join again with a higher rate"};
    }
    std::vector<EtcdCompare> compares = {Unchanged("use/", h.use_revision),
                                         Unchanged("job/", h.job_revision)};
    if (allowance) {
      int64_t user_revision = 0;
      auto mine = Held(j.owner, "", "", h.jobs, own, &user_revision);
      if (!mine.ok())
        return Err{mine.error()};
      const uint64_t total = SatMul(j.rate, j.flows());
      if (SatAdd(mine.value(), total) > *allowance)
        return Err{"user " + j.owner + " may hold " + FormatRate(*allowance) +
                   " of reservations in the cluster; holds " +
                   FormatRate(mine.value()) + (own.empty() ? "" : " besides") +
                   ", and job " + j.name + " asks " + FormatRate(total) + " (" +
                   std::to_string(j.flows()) + " flows of " +
                   FormatRate(j.rate) + ")"};
      compares.push_back(Unchanged("user/", user_revision));
    }
    const std::vector<uint64_t> charges = JobCharges(j);
    for (size_t i = 0; i < charges.size(); i++) {
      if (charges[i] == 0)
        continue;
      const Resource& r = topology_.resources()[i];
      const uint64_t reservable = topology_.Reservable(r);
      if (SatAdd(h.reserved[i], charges[i]) > reservable)
        return Err{"job " + j.name + " (" + std::to_string(j.flows()) +
                   " flows of " + FormatRate(j.rate) + ") is refused: " +
                   RefusalMessage(topology_, {i, r.capacity, reservable,
                                              h.reserved[i], charges[i]})};
    }
    auto txn = etcd_.Txn(compares,
                         {{EtcdOp::Kind::kPut, key, JobJson(j), "", j.lease}});
    if (!txn.ok())
      return Err{txn.error()};
    if (txn.value().succeeded) {
      if (!change)
        j.create_revision = txn.value().revision;
      return j;
    }
    retries_++;
  }
  return Err{"gave up after " + std::to_string(kMaxAttempts) +
             " attempts: the reservations kept changing"};
}

Result<JobReservation, std::string> ClusterAdmission::ReleaseJob(
    const std::string& leader, const std::string& name) {
  int64_t revision = 0;
  auto jobs = ReadJobs(&revision);
  if (!jobs.ok())
    return Err{jobs.error()};
  JobReservation gone{name, leader, {}, 0, {}, {}, {}, 0, 0};
  for (JobReservation& j : jobs.value())
    if (j.leader == leader && j.name == name)
      gone = std::move(j);
  // Also a record that is not a job: its leader may delete what it wrote.
  const std::string key = JobKey(leader, name);
  auto txn = etcd_.Txn({{key, "", EtcdCompare::Target::kCreateRevision,
                         EtcdCompare::Op::kGreater, 0}},
                       {{EtcdOp::Kind::kDelete, key, "", "", 0}});
  if (!txn.ok())
    return Err{txn.error()};
  if (!txn.value().succeeded)
    return Err{"no job " + name + " of " + leader};
  return gone;
}

}  // namespace parq::parqd
