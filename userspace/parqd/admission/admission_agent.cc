// SPDX-License-Identifier: GPL-2.0

#include "admission/admission_agent.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <set>

#include <unistd.h>

namespace parq::parqd {

namespace {

constexpr uint64_t kSecNs = 1'000'000'000;
constexpr uint64_t kRetryNs = kSecNs;  // without a lease, or after an error
// How often the agent looks for a renewal its keeper has not reported yet.
constexpr uint64_t kKeeperCheckNs = 100'000'000;

std::string Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ')
    s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ')
    s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

Result<Match, std::string> ParseMatch(std::string_view text) {
  constexpr const char* kHint =
      "write comma-separated proto=udp|tcp, dport=N, sport=N (ports need "
      "proto), or nothing for all traffic to the destination";
  Match m;
  std::vector<std::string> seen;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = std::min(text.find(',', i), text.size());
    const std::string item = Trim(text.substr(i, j - i));
    i = j + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      return Err{"match: \"" + item + "\" is not key=value; " + kHint};
    const std::string key = Trim(std::string_view(item).substr(0, eq));
    const std::string val = Trim(std::string_view(item).substr(eq + 1));
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      return Err{"match: " + key + " is given twice"};
    seen.push_back(key);
    if (key == "proto") {
      if (val != "udp" && val != "tcp")
        return Err{"match: proto=" + val + ": give udp or tcp"};
      m.proto = val;
    } else if (key == "dport" || key == "sport") {
      unsigned port = 0;
      const char* end = val.data() + val.size();
      const auto [p, ec] = std::from_chars(val.data(), end, port);
      if (ec != std::errc() || p != end || port == 0 || port > 65535)
        return Err{"match: " + key + "=" + val + ": give a port 1..65535"};
      (key == "dport" ? m.dport : m.sport) = static_cast<uint16_t>(port);
    } else {
      return Err{"match: unknown key \"" + key + "\"; " + kHint};
    }
  }
  if ((m.dport || m.sport) && m.proto.empty())
    return Err{std::string("match: a port needs proto=udp or proto=tcp")};
  return m;
}

std::string FormatMatch(const Match& m) {
  std::string s;
  auto add = [&s](const std::string& item) {
    s += (s.empty() ? "" : ",") + item;
  };
  if (!m.proto.empty())
    add("proto=" + m.proto);
  if (m.dport)
    add("dport=" + std::to_string(m.dport));
  if (m.sport)
    add("sport=" + std::to_string(m.sport));
  return s;
}

Result<AgentTopology, std::string> LoadAgentTopology(const AdmissionConfig& a) {
  for (const auto& [key, file] :
       {std::pair{"etcd-ca-file", &a.etcd_tls.ca_file},
        std::pair{"etcd-cert-file", &a.etcd_tls.cert_file},
        std::pair{"etcd-key-file", &a.etcd_tls.key_file}})
    if (!file->empty() && access(file->c_str(), R_OK) != 0)
      return Err{std::string("admission.") + key + " " + *file +
                 ": cannot read it: " + std::strerror(errno)};
  if (!a.etcd_tls.key_file.empty())
    if (auto e = EtcdKeyFileProblem(a.etcd_tls.key_file))
      return Err{*e};
  if (!a.etcd_auth.password_file.empty())
    if (auto e = EtcdKeyFileProblem(a.etcd_auth.password_file,
                                    "admission.etcd-password-file"))
      return Err{*e};
  auto t = Topology::Load(a.topology_file);
  if (!t.ok())
    return Err{t.error()};
  std::string host = a.host;
  if (host.empty()) {
    char name[256] = {};
    gethostname(name, sizeof(name) - 1);
    host = name;
  }
  if (!t.value().FindHost(host))
    return Err{"this host, \"" + host + "\", is not in the topology " +
               a.topology_file +
               ": name it there, or set host in the [admission] section"};
  return AgentTopology{std::move(t.value()), host};
}

AdmissionAgent::AdmissionAgent(AgentConfig config, const Topology& topology,
                               ClusterAdmission& admission, EtcdClient& etcd,
                               ReservedClasses& classes, Log log,
                               EtcdClient::Clock clock, LeaseKeeper* keeper)
    : config_(std::move(config)),
      topology_(topology),
      admission_(admission),
      etcd_(etcd),
      classes_(classes),
      log_(std::move(log)),
      clock_(std::move(clock)),
      keeper_(keeper) {}

uint64_t AdmissionAgent::TtlNs() const {
  return static_cast<uint64_t>(config_.lease_ttl_s) * kSecNs;
}

uint64_t AdmissionAgent::DemoteAt() const {
  return renewed_ns_ + TtlNs() / 4 * 3;
}

void AdmissionAgent::Renewed(uint64_t now) {
  renewed_ns_ = now;
  next_keepalive_ns_ = now + TtlNs() / 4;
  etcd_.set_deadline(DemoteAt(), clock_);
}

void AdmissionAgent::Tick(uint64_t now) {
  if (now >= next_check_ns_)
    Check(now);
  if (lease_ == 0) {
    if (now < next_keepalive_ns_)
      return;
    auto g = etcd_.LeaseGrant(config_.lease_ttl_s);
    if (!g.ok()) {
      etcd_error_ = g.error();
      if (!warned_)
        log_(kWarn, "admission: no lease from etcd, admitting nothing: " +
                        etcd_error_);
      warned_ = true;
      next_keepalive_ns_ = now + kRetryNs;
      return;
    }
    lease_ = g.value().id;
    Renewed(now);
    if (keeper_)
      keeper_->Keep(lease_, now);
    counters_.lease_grants++;
    warned_ = false;
    etcd_error_.clear();
    log_(kInfo, "admission: etcd lease " + std::to_string(lease_) + " (TTL " +
                    std::to_string(config_.lease_ttl_s) + " s) via " +
                    etcd_.last_endpoint());
    RevokeStale();
    RevokeEarlier();
    return;
  }
  if (keeper_ && now >= next_keepalive_ns_) {
    // The keeper renews; the agent reads what etcd answered it.
    const LeaseKeeper::State s = keeper_->state();
    counters_.keepalive_errors = s.errors;
    if (s.lease == lease_ && s.expired) {
      Demote("etcd says lease " + std::to_string(lease_) + " has expired");
      return;
    }
    if (s.lease == lease_ && s.renewed_ns > renewed_ns_) {
      Renewed(s.renewed_ns);
      if (warned_)
        log_(kInfo, "admission: etcd answers again; lease " +
                        std::to_string(lease_) + " renewed");
      warned_ = false;
      etcd_error_.clear();
    } else if (!s.error.empty()) {
      etcd_error_ = s.error;
      if (!warned_)
        log_(kWarn, "admission: cannot renew lease " + std::to_string(lease_) +
                        ": " + etcd_error_);
      warned_ = true;
    }
    // Until the keeper's next renewal is in.
    next_keepalive_ns_ = std::max(next_keepalive_ns_, now + kKeeperCheckNs);
  } else if (now >= next_keepalive_ns_) {
    auto k = etcd_.LeaseKeepAlive(lease_);
    if (k.ok() && k.value().ttl_s > 0) {
      Renewed(now);
      if (warned_)
        log_(kInfo, "admission: etcd answers again; lease " +
                        std::to_string(lease_) + " renewed");
      warned_ = false;
      etcd_error_.clear();
    } else if (k.ok()) {
      Demote("etcd says lease " + std::to_string(lease_) + " has expired");
      return;
    } else {
      counters_.keepalive_errors++;
      etcd_error_ = k.error();
      if (!warned_)
        log_(kWarn, "admission: cannot renew lease " + std::to_string(lease_) +
                        ": " + etcd_error_);
      warned_ = true;
      next_keepalive_ns_ = now + std::min(kRetryNs, TtlNs() / 4);
    }
    // The call took time (up to the deadline, when etcd did not answer).
    now = std::max(now, clock_());
  }
  // Demote before etcd could let the lease go (it counts the TTL from a
  // renewal it received, which was sent no earlier than renewed_ns_).
  if (now >= DemoteAt()) {
    Demote("lease " + std::to_string(lease_) + " not renewed for " +
           std::to_string((now - renewed_ns_) / 1'000'000) + " ms (" +
           etcd_error_ + ")");
    return;
  }
  for (auto it = unreleased_.begin(); it != unreleased_.end();) {
    if (admission_.Release(*it).ok())
      it = unreleased_.erase(it);
    else
      ++it;
  }
}

// The lease a demotion gave up may still hold its reservations in etcd: it
// was not renewed, but etcd restarts a lease's TTL when it elects a new
// leader, so after a quorum loss they could hold capacity for a whole TTL
// more.  parqd revokes it once etcd answers again (a lease etcd no longer
// has is no error), so that the capacity is free at once.
void AdmissionAgent::RevokeStale() {
  if (stale_lease_ == 0)
    return;
  if (auto r = etcd_.LeaseRevoke(stale_lease_); !r.ok()) {
    log_(kWarn, "admission: cannot revoke lease " +
                    std::to_string(stale_lease_) +
                    ", given up at a demotion (it will expire): " + r.error());
    return;
  }
  log_(kInfo, "admission: revoked lease " + std::to_string(stale_lease_) +
                  ", given up at a demotion: its reservations' capacity is "
                  "free");
  stale_lease_ = 0;
}

bool OfSlurmJob(std::string_view name, std::string_view slurm) {
  return name.size() >= slurm.size() && name.substr(0, slurm.size()) == slurm &&
         (name.size() == slurm.size() || name[slurm.size()] == '.');
}

std::string SlurmJobOf(std::string_view proc_cgroup) {
  // The cgroup v2 line, "0::PATH"; Slurm's job directory is job_N.
  size_t at = 0;
  while (at < proc_cgroup.size()) {
    size_t end = std::min(proc_cgroup.find('\n', at), proc_cgroup.size());
    std::string_view line = proc_cgroup.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with("0::"))
      continue;
    line.remove_prefix(3);
    while (!line.empty()) {
      const size_t slash = std::min(line.find('/'), line.size());
      const std::string_view dir = line.substr(0, slash);
      line.remove_prefix(std::min(slash + 1, line.size()));
      if (dir.size() > 4 && dir.size() <= 4 + 19 && dir.starts_with("job_") &&
          dir.find_first_not_of("0123456789", 4) == std::string_view::npos)
        return std::string(dir.substr(4));
    }
  }
  return "";
}

std::optional<std::string> RequestJob(const std::string& process_job,
                                      std::string* job) {
  if (process_job.empty())
    return std::nullopt;
  if (!job->empty() && *job != process_job)
    return "the request names job " + *job +
           ", but the asking process runs in job " + process_job;
  *job = process_job;
  return std::nullopt;
}

namespace {

// Revokes the leases, other than `keep`, of `host`'s reservations in etcd:
// an earlier parqd's; false if etcd could not be read or a lease not be
// revoked (they go when they expire).
bool RevokeLeasesOf(const std::string& host, int64_t keep,
                    ClusterAdmission& admission, EtcdClient& etcd,
                    const AdmissionAgent::Log& log) {
  auto all = admission.List(host);
  if (!all.ok()) {
    log(AdmissionAgent::kWarn,
        "admission: cannot read the reservations of an earlier parqd on "
        "this host (they go when its lease expires): " +
            all.error());
    return false;
  }
  std::map<int64_t, size_t> leases;
  for (const Reservation& r : all.value())
    if (r.from == host && r.lease != keep && r.lease != 0)
      leases[r.lease]++;
  bool ok = true;
  for (const auto& [l, n] : leases) {
    if (auto r = etcd.LeaseRevoke(l); !r.ok()) {
      log(AdmissionAgent::kWarn,
          "admission: cannot revoke lease " + std::to_string(l) +
              " of an earlier parqd on this host (its reservations go when "
              "it expires): " +
              r.error());
      ok = false;
      continue;
    }
    log(AdmissionAgent::kInfo, "admission: revoked lease " + std::to_string(l) +
                                   " of an earlier parqd on this host: its " +
                                   std::to_string(n) +
                                   " reservation(s) released");
  }
  return ok;
}

}  // namespace

std::string Hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof(b), "%x", v);
  return b;
}

bool CleanUpAfterParqd(const std::string& host, ClusterAdmission& admission,
                       EtcdClient& etcd, ReservedClasses& classes,
                       const AdmissionAgent::Log& log) {
  bool ok = true;
  auto installed = classes.Installed();
  if (!installed.ok()) {
    log(AdmissionAgent::kError,
        "admission: cannot list the reserved classes: " + installed.error());
    ok = false;
  } else {
    for (uint32_t minor : installed.value())
      if (auto e = classes.Remove(minor)) {
        log(AdmissionAgent::kError,
            "admission: cannot remove class " + Hex(minor) + ": " + *e);
        ok = false;
      } else {
        log(AdmissionAgent::kInfo, "admission: removed class " + Hex(minor));
      }
  }
  return RevokeLeasesOf(host, 0, admission, etcd, log) && ok;
}

void AdmissionAgent::RevokeEarlier() {
  (void)RevokeLeasesOf(config_.host, lease_, admission_, etcd_, log_);
}

void AdmissionAgent::Check(uint64_t now) {
  next_check_ns_ = now + kJobCheckNs;
  std::vector<std::string> ended;
  for (const auto& [id, h] : held_)
    if (!h.r.job.empty() && (!job_alive_ || !job_alive_(h.r.job)))
      ended.push_back(id);
  for (const std::string& id : ended) {
    const std::string job = held_.at(id).r.job;
    if (Release(Requester{0, "root", {}}, id).ok())
      log_(kInfo, "admission: " + id + " released: job " + job +
                      " has ended (its cgroup is gone)");
  }
  // One look at the qdisc serves the measurement, the adaptation and the
  // repair; without it none of them runs (nothing is decided on what
  // could not be seen, and the next look measures from the last one).
  auto parts = classes_.InstalledParts();
  if (!parts.ok()) {
    log_(kWarn,
         "admission: cannot list the reserved classes: " + parts.error());
    return;
  }
  Measure(now, parts.value().uses);
  if (config_.adapt.on)
    Adapt(now);
  std::vector<std::string> left;
  for (const auto& [name, j] : joined_)
    if (!j.slurm.empty() && (!job_alive_ || !job_alive_(j.slurm)))
      left.push_back(name);
  for (const std::string& name : left) {
    const std::string slurm = joined_.at(name).slurm;
    if (LeaveJob(Requester{0, "root", {}}, name).ok())
      log_(kInfo, "admission: left job " + name + ": Slurm job " + slurm +
                      " has ended (its cgroup is gone)");
  }
  SyncJobs();
  std::set<uint32_t> held;
  for (const auto& [id, h] : held_)
    held.insert(h.minor);
  for (const auto& [key, f] : job_flows_)
    held.insert(f.minor);
  Repair(parts.value());
  for (uint32_t minor : parts.value().installed) {
    if (held.count(minor))
      continue;
    if (auto e = classes_.Remove(minor))
      log_(kError, "admission: cannot remove class " + Hex(minor) +
                       ", which no reservation holds: " + *e);
    else
      log_(kWarn, "admission: removed class " + Hex(minor) +
                      ", which no reservation of this parqd holds (left by "
                      "one that died, or made by hand in parqd's range)");
  }
}

void AdmissionAgent::Repair(const ReservedClasses::Parts& parts) {
  if (!parts.incomplete_error.empty()) {
    log_(kWarn, "admission: cannot check the reserved classes: " +
                    parts.incomplete_error);
    return;
  }
  const std::set<uint32_t> present(parts.installed.begin(),
                                   parts.installed.end());
  const std::set<uint32_t> broken(parts.incomplete.begin(),
                                  parts.incomplete.end());
  for (auto& [id, h] : held_) {
    if (present.count(h.minor) && !broken.count(h.minor))
      continue;
    // Gone in part or whole (a flushed ruleset, a class deleted by hand):
    // installed again as it was admitted.
    const auto dest = topology_.FindHost(h.r.to);
    auto m = ParseMatch(h.r.match);
    std::optional<std::string> e;
    if (!dest || !m.ok())
      e = "its destination or match no longer reads";
    if (!e)
      e = classes_.Remove(h.minor);
    if (!e)
      e = classes_.Install(h.minor, h.r.rate, m.value(),
                           topology_.hosts()[*dest].addresses, h.who.uid);
    // A failure is logged once, not at every check, until it heals.
    if (e && repair_failing_.insert(h.minor).second)
      log_(kError, "admission: cannot install class " + Hex(h.minor) + " of " +
                       id + " again (parqd tries every 5 s): " + *e);
    if (!e) {
      h.seen_ns = 0;  // a new class counts from 0
      repair_failing_.erase(h.minor);
      log_(kWarn, "admission: installed class " + Hex(h.minor) + " of " + id +
                      " again: its class, filter or nftables chain was gone");
    }
  }
}

Result<std::vector<Reservation>, std::string> AdmissionAgent::ReleaseJob(
    const Requester& who, const std::string& job) {
  if (job.empty())
    return Err{std::string("no job named")};
  // Another user's reservation naming the job is theirs to release (or
  // root's epilog's): skipped, not an error that stops half-way.
  std::vector<std::string> ids;
  for (const auto& [id, h] : held_)
    if (h.r.job == job && !MayTouch(who, h))
      ids.push_back(id);
  std::vector<Reservation> out;
  for (const std::string& id : ids) {
    auto r = Release(who, id);
    if (!r.ok())
      return Err{r.error()};
    out.push_back(std::move(r).value());
  }
  // The jobs admitted as a whole under that name (or named "JOB.more",
  // as a Slurm job's processes name theirs) that `who` joined here: the
  // job itself if this host leads it, and this host's consent.
  std::vector<std::string> names;
  for (const auto& [name, j] : joined_)
    if (OfSlurmJob(name, job) && (who.uid == 0 || who.uid == j.who.uid))
      names.push_back(name);
  for (const std::string& name : names) {
    auto left = LeaveJob(who, name);  // the job too, if this host leads it
    if (!left.ok())
      return Err{left.error()};
  }
  // Jobs this host leads that it no longer has a consent for (left by
  // hand, or joined by a parqd before this one).
  auto jobs = admission_.Jobs();
  if (!jobs.ok())
    return Err{jobs.error()};
  for (const JobReservation& j : jobs.value()) {
    if (j.leader != config_.host || !OfSlurmJob(j.name, job) ||
        (who.uid != 0 && j.owner != who.user))
      continue;
    auto gone = admission_.ReleaseJob(config_.host, j.name);
    if (!gone.ok())
      return Err{gone.error()};
    log_(kInfo, "admission: job " + j.name + " released");
  }
  return out;
}

uint64_t AdmissionAgent::NextTick() const {
  if (lease_ == 0)
    return std::min(next_keepalive_ns_, next_check_ns_);
  return std::min({next_keepalive_ns_, DemoteAt(), next_check_ns_});
}

void AdmissionAgent::Demote(const std::string& why) {
  size_t n = held_.size() + job_flows_.size();
  DropJobs();
  for (const auto& [id, h] : held_)
    if (auto e = classes_.Remove(h.minor))
      log_(kError, "admission: cannot remove the class of " + id + ": " + *e);
  held_.clear();
  unreleased_.clear();
  stale_lease_ = lease_;
  lease_ = 0;
  if (keeper_)
    keeper_->Drop();
  etcd_.clear_deadline();
  next_keepalive_ns_ = 0;  // a new lease at the next tick
  counters_.demotions++;
  counters_.demoted += n;
  log_(kError, "admission: " + why + ": " + std::to_string(n) +
                   " reservation(s) demoted to best effort; their owners "
                   "must reserve again");
}

std::optional<uint64_t> AdmissionAgent::Allowance(const Requester& who) const {
  if (who.uid == 0)
    return std::nullopt;
  uint64_t best = 0;
  for (const AllowRule& a : config_.allow) {
    const bool match =
        (!a.user.empty() && a.user == who.user) ||
        (!a.group.empty() && std::find(who.groups.begin(), who.groups.end(),
                                       a.group) != who.groups.end());
    if (match)
      best = std::max(best, a.rate);
  }
  return best;
}

std::optional<std::string> AdmissionAgent::CheckAllowance(const Requester& who,
                                                          uint64_t more) const {
  const auto allowance = Allowance(who);
  if (!allowance || more == 0 || *allowance != 0)
    return std::nullopt;
  return "user " + who.user +
         " may not reserve: no [[admission.allow]] names the user or one of "
         "their groups";
}

std::optional<std::string> AdmissionAgent::MayTouch(const Requester& who,
                                                    const Held& h) const {
  if (who.uid == 0 || who.uid == h.who.uid)
    return std::nullopt;
  return "reservation " + h.r.id + " belongs to " + h.r.owner +
         "; only they or root may change or release it";
}

std::optional<uint32_t> AdmissionAgent::FreeMinor() const {
  std::vector<uint32_t> used;
  for (const auto& [id, h] : held_)
    used.push_back(h.minor);
  for (const auto& [key, f] : job_flows_)
    used.push_back(f.minor);
  std::sort(used.begin(), used.end());
  uint32_t m = kAgentMinorFirst;
  for (uint32_t u : used) {
    if (u != m)
      break;
    m++;
  }
  if (m > kAgentMinorLast)
    return std::nullopt;
  return m;
}

std::string AdmissionAgent::NoLease() const {
  return "cannot admit now: parqd holds no lease with etcd (" +
         (etcd_error_.empty() ? std::string("not granted yet") : etcd_error_) +
         ")";
}

Result<Reservation, std::string> AdmissionAgent::Reserve(
    const Requester& who, const std::string& to, uint64_t rate,
    const std::string& match, const std::string& job, RateBounds bounds) {
  if (lease_ == 0)
    return Err{NoLease()};
  if (rate == 0)
    return Err{std::string("a rate of 0 reserves nothing")};
  if (bounds.min > rate)
    return Err{"the minimum rate " + FormatRate(bounds.min) +
               " is above the rate asked, " + FormatRate(rate)};
  if (bounds.max && bounds.max < rate)
    return Err{"the maximum rate " + FormatRate(bounds.max) +
               " is below the rate asked, " + FormatRate(rate)};
  auto m = ParseMatch(match);
  if (!m.ok())
    return Err{m.error()};
  const auto dest = topology_.FindHost(to);
  if (!dest)
    return Err{"no host named or addressed \"" + to + "\" in the topology"};
  if (auto e = CheckAllowance(who, rate))
    return Err{*e};
  if (!job.empty()) {
    if (job.find_first_not_of("0123456789") != std::string::npos ||
        job.size() > 19)
      return Err{"job \"" + job + "\" is not a Slurm job id (digits)"};
    if (!job_alive_ || !job_alive_(job))
      return Err{"job " + job +
                 " does not run on this host (it has no cgroup here)"};
  }
  const auto minor = FreeMinor();
  if (!minor)
    return Err{"this host holds " + std::to_string(held_.size()) +
               " reservations, as many as parqd installs"};
  ReservationRequest req;
  req.from = config_.host;
  req.to = to;
  req.rate = rate;
  req.match = FormatMatch(m.value());
  req.owner = who.user;
  // What the user holds is summed across the cluster, in the same etcd
  // transaction as the admission.
  req.allowance = Allowance(who);
  req.job = job;
  auto r = admission_.Reserve(req, lease_);
  if (!r.ok()) {
    counters_.refused++;
    return r;
  }
  const TopologyHost& d = topology_.hosts()[*dest];
  if (auto e =
          classes_.Install(*minor, rate, m.value(), d.addresses, who.uid)) {
    std::string undo;
    if (auto rel = admission_.Release(r.value().id); !rel.ok()) {
      unreleased_.push_back(r.value().id);
      undo = " (etcd: " + rel.error() + "; parqd will retry)";
    }
    return Err{"admitted, but the reserved class could not be installed: " +
               *e + "; the reservation was released" + undo};
  }
  counters_.admitted++;
  log_(kInfo, "admission: " + r.value().id + " admitted: " + FormatRate(rate) +
                  " to " + r.value().to + " for " + who.user + ", class " +
                  std::to_string(*minor));
  Held& h = held_[r.value().id];
  h.r = r.value();
  h.minor = *minor;
  h.who = who;
  h.asked = rate;
  h.min = bounds.min;
  h.max = bounds.max;
  return r;
}

Result<Reservation, std::string> AdmissionAgent::Change(const Requester& who,
                                                        const std::string& id,
                                                        uint64_t rate) {
  auto it = held_.find(id);
  if (it == held_.end())
    return Err{"no reservation " + id + " on this host"};
  Held& h = it->second;
  if (auto e = MayTouch(who, h))
    return Err{*e};
  if (rate == 0)
    return Err{"a rate of 0 reserves nothing; release " + id + " instead"};
  auto r = SetRate(who, h, rate, false);
  if (!r.ok())
    return r;
  // What its owner asks now: the adaptation starts from it.
  h.asked = rate;
  h.min = std::min(h.min, rate);
  if (h.max && h.max < rate)
    h.max = rate;
  h.over_since = h.choked_since = 0;
  h.peak_bps = 0;
  h.seen_ns = 0;  // measured at its new rate from the next check
  return r;
}

Result<Reservation, std::string> AdmissionAgent::SetRate(const Requester& who,
                                                         Held& h, uint64_t rate,
                                                         bool adapting) {
  const std::string& id = h.r.id;
  if (lease_ == 0)
    return Err{NoLease()};
  const uint64_t old = h.r.rate;
  if (auto e = CheckAllowance(who, rate > old ? rate - old : 0))
    return Err{*e};
  // Lower the class before the record and raise it after, so that the
  // class never sends more than etcd has admitted.
  if (rate < old)
    if (auto e = classes_.SetRate(h.minor, rate))
      return Err{"cannot change the reserved class: " + *e};
  auto r =
      admission_.Change(id, rate, rate > old ? Allowance(who) : std::nullopt);
  if (!r.ok()) {
    if (rate < old)
      (void)classes_.SetRate(h.minor, old);
    if (!adapting)
      counters_.refused++;
    return r;
  }
  if (rate > old)
    if (auto e = classes_.SetRate(h.minor, rate)) {
      (void)admission_.Change(id, old);
      return Err{"admitted, but the reserved class could not be changed: " +
                 *e + "; the reservation keeps " + FormatRate(old)};
    }
  if (!adapting)
    counters_.changed++;
  h.r = r.value();
  log_(kInfo, "admission: " + id + " changed from " + FormatRate(old) + " to " +
                  FormatRate(rate));
  return r;
}

Result<Reservation, std::string> AdmissionAgent::Release(
    const Requester& who, const std::string& id) {
  auto it = held_.find(id);
  if (it == held_.end())
    return Err{"no reservation " + id + " on this host"};
  if (auto e = MayTouch(who, it->second))
    return Err{*e};
  Held h = it->second;
  held_.erase(it);
  if (auto e = classes_.Remove(h.minor))
    log_(kError, "admission: cannot remove the class of " + id + ": " + *e);
  if (auto r = admission_.Release(id); !r.ok()) {
    unreleased_.push_back(id);
    log_(kWarn, "admission: " + id + " released here, not yet in etcd (" +
                    r.error() + "); parqd will retry");
  }
  counters_.released++;
  log_(kInfo, "admission: " + id + " released");
  return h.r;
}

std::vector<Reservation> AdmissionAgent::List() const {
  std::vector<Reservation> out;
  for (const auto& [id, h] : held_)
    out.push_back(h.r);
  return out;
}

void AdmissionAgent::Metrics(PromText& out) const {
  const char* req = "parqd_admission_requests_total";
  out.Family(req, "counter",
             "Reservations and changes asked of the admission role, by "
             "result.");
  out.Sample(req, counters_.admitted, "result", "admitted");
  out.Sample(req, counters_.changed, "result", "changed");
  out.Sample(req, counters_.refused, "result", "refused");
  out.Counter("parqd_admission_released_total",
              "Reservations released by their owners.", counters_.released);
  out.Gauge("parqd_admission_reservations",
            "Reservations this host holds, each a reserved class.",
            held_.size());
  const char* adapted = "parqd_admission_adapted_total";
  out.Family(adapted, "counter",
             "Reservations whose rate the adaptation changed, by direction.");
  out.Sample(adapted, counters_.shrunk, "direction", "shrunk");
  out.Sample(adapted, counters_.grown, "direction", "grown");
  UseMetrics(out);
  out.Gauge("parqd_admission_lease_held",
            "1 while parqd holds its etcd lease, else 0.", lease_ != 0);
  out.Counter("parqd_admission_lease_grants_total", "Leases granted by etcd.",
              counters_.lease_grants);
  out.Counter("parqd_admission_keepalive_errors_total",
              "Lease renewals etcd did not answer.",
              counters_.keepalive_errors);
  out.Counter("parqd_admission_demotions_total",
              "Times the lease was lost and every reservation demoted.",
              counters_.demotions);
  out.Counter("parqd_admission_demoted_total",
              "Reservations demoted to best effort in all.", counters_.demoted);
  const char* jobs = "parqd_admission_job_requests_total";
  out.Family(jobs, "counter",
             "Jobs this host asked to admit as a whole, by result.");
  out.Sample(jobs, counters_.jobs_admitted, "result", "admitted");
  out.Sample(jobs, counters_.jobs_refused, "result", "refused");
  out.Gauge("parqd_admission_jobs_joined",
            "Jobs this host has consented to carry its part of.",
            joined_.size());
  out.Gauge("parqd_admission_job_flows",
            "Flows of jobs admitted as a whole that this host carries, each "
            "a reserved class.",
            job_flows_.size());
}

void AdmissionAgent::Stop() {
  DropJobs();
  for (const auto& [id, h] : held_)
    if (auto e = classes_.Remove(h.minor))
      log_(kError, "admission: cannot remove the class of " + id + ": " + *e);
  const size_t n = held_.size();
  held_.clear();
  RevokeStale();
  if (keeper_)
    keeper_->Drop();
  if (lease_ != 0) {
    if (auto r = etcd_.LeaseRevoke(lease_); !r.ok())
      log_(kWarn, "admission: cannot revoke lease " + std::to_string(lease_) +
                      " (its reservations go when it expires): " + r.error());
    else if (n)
      log_(kInfo, "admission: released " + std::to_string(n) +
                      " reservation(s) with lease " + std::to_string(lease_));
  }
  lease_ = 0;
}

}  // namespace parq::parqd
