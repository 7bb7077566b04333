// SPDX-License-Identifier: GPL-2.0
//
// parqd's admission role on a source host (Documentation/admission.md,
// "parqd's admission role").  It admits this host's reservations across
// the cluster (ClusterAdmission), installs each admitted one on the local
// parq qdisc as a reserved class with the filters that send its traffic
// there (ReservedClasses), and releases them.  All of them hang on one
// etcd lease, which it keeps alive; when it cannot renew the lease, it
// demotes every class to best effort before the lease could have expired
// in etcd (a lease is not a fence: another host may then be admitted on
// the capacity).  Who may reserve how much is the configuration's
// [[admission.allow]]; root may reserve any rate and release anything.
//
// Single-threaded: parqd's event loop calls Tick() and the requests.

#ifndef PARQD_ADMISSION_ADMISSION_AGENT_H
#define PARQD_ADMISSION_ADMISSION_AGENT_H

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "admission/admission_config.h"
#include "admission/cluster_admission.h"
#include "admission/etcd.h"
#include "admission/lease_keeper.h"
#include "admission/topology.h"
#include "base/address.h"
#include "base/result.h"
#include "proto/metrics.h"

namespace parq::parqd {

// The traffic a reservation covers, toward the destination host's
// addresses: "" (all of it), or comma-separated proto=udp|tcp, dport=N,
// sport=N (ports need proto).
struct Match {
  std::string proto;  // "", "udp", "tcp"
  uint16_t dport = 0, sport = 0;

  bool operator==(const Match&) const = default;
};
Result<Match, std::string> ParseMatch(std::string_view text);
// The text ParseMatch reads back, in a fixed order ("" for all traffic).
std::string FormatMatch(const Match& m);

// The cluster's topology and this host in it.
struct AgentTopology {
  Topology topology;
  std::string host;
};
// Loads a.topology_file and finds this host there (a.host, or the
// system's host name), and checks that etcd's TLS files can be read; an
// error says what to fix.
Result<AgentTopology, std::string> LoadAgentTopology(const AdmissionConfig& a);

// Reserved classes on this host's parq qdisc (TcReservedClasses in
// reserved_classes.h; tests give their own).
class ReservedClasses {
 public:
  virtual ~ReservedClasses() = default;
  // Class `minor` at `rate` bits/s, and filters sending the traffic of
  // user `owner`'s sockets that `match` toward any of `to` into it, and
  // nobody else's; on an error nothing of it stays.
  virtual std::optional<std::string> Install(uint32_t minor, uint64_t rate,
                                             const Match& match,
                                             const std::vector<Address>& to,
                                             uint32_t owner) = 0;
  virtual std::optional<std::string> SetRate(uint32_t minor, uint64_t rate) = 0;
  // Filters, then the class.
  virtual std::optional<std::string> Remove(uint32_t minor) = 0;
  // The minors of the agent's range (kAgentMinorFirst..kAgentMinorLast)
  // that have a class, or a filter into one, on the qdisc now, in order:
  // what the agent compares with what it holds.
  virtual Result<std::vector<uint32_t>, std::string> Installed() = 0;
  // What a class has carried since it was made: the bytes sent and the
  // time it was held back by its rate (the kernel's
  // tc_parq_class_xstats).
  struct Use {
    uint64_t bytes = 0;
    uint64_t throttled_ns = 0;
  };
  // Installed(), and of those the minors that lack a part (the class,
  // its filter, or its nftables chain with its rules: `nft flush ruleset`
  // removes chains), and what each class carried (`uses`, by minor; a
  // kernel without the statistics gives none), from one look at the
  // qdisc: what the agent's check measures, removes and installs again.
  // When the chains cannot be read, `incomplete_error` says why and
  // `incomplete` is empty.
  struct Parts {
    std::vector<uint32_t> installed, incomplete;
    std::string incomplete_error;
    std::map<uint32_t, Use> uses;
  };
  virtual Result<Parts, std::string> InstalledParts() = 0;
};

// Who asks (from SO_PEERCRED and the user database).
struct Requester {
  uint32_t uid = 0;
  std::string user;                 // name (the uid in decimal if none)
  std::vector<std::string> groups;  // names of the user's groups
};

struct AgentConfig {
  std::string host;  // this host, as the topology names it
  int64_t lease_ttl_s = 10;
  std::vector<AllowRule> allow;
  AdaptConfig adapt{};
};

// The rates between which the adaptation of reservations may move one
// (0: the default: AdaptConfig's floor of the rate asked, and the rate
// asked).
struct RateBounds {
  uint64_t min = 0, max = 0;
};

// What a reservation carried over the last check (kJobCheckNs), from its
// class's statistics: the share of the time its class was held back by
// its rate (choked), what it sent, and the share of its rate it did not
// send (over-allocated).
struct ReservationUse {
  uint64_t window_ns = 0;
  double choked = 0;
  double unused = 0;
  uint64_t sent_bps = 0;
};

// A reservation as this host holds it: the record, the rate asked and the
// bounds of its adaptation, and what it carried (none before two checks).
struct HeldReservation {
  Reservation r;
  uint64_t asked = 0, min = 0, max = 0;
  std::optional<ReservationUse> use;
};

// What the agent counts, for metrics.
struct AgentCounters {
  uint64_t admitted = 0, refused = 0, released = 0, changed = 0;
  uint64_t lease_grants = 0, keepalive_errors = 0, demotions = 0;
  uint64_t demoted = 0;  // reservations demoted in all
  uint64_t jobs_admitted = 0, jobs_refused = 0;
  uint64_t shrunk = 0, grown = 0;  // reservations adapted
};

// The consents to jobs one user may hold on a host at once.
inline constexpr size_t kMaxJoinedPerUser = 64;

// Reserved class minors the agent uses: its own range, so that classes
// made by hand (<handle>:16 and up) stay clear of it.
inline constexpr uint32_t kAgentMinorFirst = 0x1000;
inline constexpr uint32_t kAgentMinorLast = 0xffff;

// How often the agent checks that each reservation's job still runs and
// that the qdisc holds no class of its range that it does not hold (left
// by a parqd that died, or made by hand): the longest a reservation
// outlives its job's cgroup.
inline constexpr uint64_t kJobCheckNs = 5'000'000'000;

// The Slurm job id in a process's /proc/PID/cgroup (a job_N directory on
// its cgroup v2 path, as Slurm's cgroup/v2 plugin makes them), or "".
std::string SlurmJobOf(std::string_view proc_cgroup);
// Whether the job admitted as a whole named `name` is Slurm job `slurm`'s:
// named `slurm`, or `slurm`, a dot and more ("42.world").
bool OfSlurmJob(std::string_view name, std::string_view slurm);
// The job a request is for: `*job` holds the one the request names ("":
// none) and becomes the one the asking process runs in (`process_job`,
// from its cgroup; "" when unknown) if there is one; an error when they
// differ.
std::optional<std::string> RequestJob(const std::string& process_job,
                                      std::string* job);

class AdmissionAgent {
 public:
  using Log = std::function<void(int level, const std::string& line)>;
  enum LogLevel { kInfo, kWarn, kError };

  // Everything given must outlive the agent.  `clock`: monotonic
  // nanoseconds, the time Tick() and `etcd`'s deadline are in.  `keeper`:
  // renews the lease on its own thread (parqd's); without one, Tick()
  // renews it through `etcd`, between requests.
  AdmissionAgent(AgentConfig config, const Topology& topology,
                 ClusterAdmission& admission, EtcdClient& etcd,
                 ReservedClasses& classes, Log log, EtcdClient::Clock clock,
                 LeaseKeeper* keeper = nullptr);

  // Grants the lease when there is none (retrying each second), renews it
  // every TTL / 4, and demotes everything once 3/4 of the TTL has passed
  // since the last renewal that etcd answered.  While it holds a lease,
  // every call of `etcd` ends by that moment (EtcdClient::set_deadline):
  // a call that etcd does not answer, a renewal's or a request's, cannot
  // hold the classes past it.  `now_ns`: the clock's.
  void Tick(uint64_t now_ns);
  // When Tick() has something to do next.
  uint64_t NextTick() const;

  // `job`: the Slurm job the reservation is for ("": none), which must
  // run on this host; the reservation ends with it.
  // `bounds`: how far the adaptation of reservations may move it (none
  // while [admission] adapt is off).
  Result<Reservation, std::string> Reserve(const Requester& who,
                                           const std::string& to, uint64_t rate,
                                           const std::string& match,
                                           const std::string& job = "",
                                           RateBounds bounds = {});
  Result<Reservation, std::string> Change(const Requester& who,
                                          const std::string& id, uint64_t rate);
  Result<Reservation, std::string> Release(const Requester& who,
                                           const std::string& id);
  // Releases this host's reservations for `job` that `who` may touch (all
  // of them for root): the job ended.  None is no error, nor are others'.
  // Also ends what this host has of a job admitted as a whole (below)
  // named `job` and of `who` (any for root): the job itself if this host
  // leads it, and this host's consent.
  Result<std::vector<Reservation>, std::string> ReleaseJob(
      const Requester& who, const std::string& job);

  // Jobs admitted as a whole (cluster_admission.h, "A job").  This host's
  // consent to carry its part of job `name` of `leader` for `who`; its
  // flows are installed once the job is admitted (SyncJobs()).  `slurm`:
  // the Slurm job the asking process runs in ("": none), with which the
  // consent ends.
  // `max_rate`: the highest rate a flow of the job may have (0: any).
  // A user holds at most kMaxJoinedPerUser consents on a host.
  Result<JobMembership, std::string> JoinJob(const Requester& who,
                                             const std::string& name,
                                             const std::string& leader,
                                             uint64_t max_rate = 0,
                                             const std::string& slurm = "");
  // Withdraws the consent (root: anyone's); this host's flows of the job
  // are removed, and the job itself if this host leads it.  Whether there
  // was one.
  Result<bool, std::string> LeaveJob(const Requester& who,
                                     const std::string& name);
  // Admits job `name`, led by this host: `rate` for every ordered pair of
  // distinct `hosts`, each of which has joined it; installs this host's
  // flows of it.
  Result<JobReservation, std::string> ReserveJob(
      const Requester& who, const std::string& name,
      const std::vector<std::string>& hosts, uint64_t rate,
      const std::string& match);
  // The job's new rate, admitted as a new job would be (leader only).
  Result<JobReservation, std::string> ChangeJob(const Requester& who,
                                                const std::string& name,
                                                uint64_t rate);
  // Job `name` as etcd holds it (of the leader this host joined it for,
  // if it did), once this host's flows of it are installed as it says:
  // an error when this host joined it but does not carry them.
  Result<JobReservation, std::string> ShowJob(const std::string& name);
  // Installs this host's flows of every job it has joined (a class toward
  // each other host of the job, at the job's rate, for the consenting
  // user's sockets), changes their rate, and removes those of jobs gone
  // or left.  Called at each check (kJobCheckNs) and after each job
  // request.
  void SyncJobs();
  // The classes this host carries for jobs: (job, destination) -> minor.
  std::map<std::pair<std::string, std::string>, uint32_t> JobFlows() const;
  // Whether a Slurm job runs on this host (its cgroup exists); unset,
  // reservations for a job are refused.
  void set_job_alive(std::function<bool(const std::string& job)> alive) {
    job_alive_ = std::move(alive);
  }
  // This host's reservations, by id.
  std::vector<Reservation> List() const;
  // The same, with their bounds and what they carried.
  std::vector<HeldReservation> Holdings() const;

  // parqd's stop: removes every class, deletes the reservations and
  // revokes the lease, so that their capacity is free at once.
  void Stop();

  // Its families (parqd_admission_*), for the metrics file.
  void Metrics(PromText& out) const;

  bool leased() const { return lease_ != 0; }
  int64_t lease() const { return lease_; }
  const AgentCounters& counters() const { return counters_; }

 private:
  struct Held {
    Reservation r;
    uint32_t minor = 0;
    // Who asked: the owner, whose sockets the class is for and whose
    // allowance growth counts.
    Requester who;
    uint64_t asked = 0, min = 0, max = 0;  // HeldReservation's
    // The class's counters at the last check, and when they were read
    // (0: not yet, or its class was installed again since).
    ReservedClasses::Use seen;
    uint64_t seen_ns = 0;
    std::optional<ReservationUse> use;
    // Since when it has been over-allocated, or choked, at every check
    // (0: it was not at the last), and the most it sent since.
    uint64_t over_since = 0, choked_since = 0;
    uint64_t peak_bps = 0;
    std::string grow_refused;  // why it last could not grow (logged once)
  };
  // The adaptation's changes at one check are at most kAdaptPerCheck, each
  // a transaction; the next check goes on from the reservation after the
  // last one it looked at.
  static constexpr size_t kAdaptPerCheck = 8;
  size_t adapt_next_ = 0;

  // This host's consent to a job.
  struct Joined {
    std::string leader;
    Requester who;
    std::string slurm;  // the Slurm job it ends with ("": none)
  };
  // A class this host installed for a job's flow.
  struct JobFlow {
    uint32_t minor = 0;
    uint64_t rate = 0;
  };
  // SyncJobs() with the jobs as read: what is installed follows `jobs`.
  void SyncJobs(const std::vector<JobReservation>& jobs);
  // Removes the classes of every job flow and forgets the consents (the
  // lease that held them is gone or going).
  void DropJobs();

  // Changes `h`'s rate, admitted as a new one would be against its
  // owner's allowance (`who`'s when it asked; growth by the adaptation:
  // `h.who`'s).  `adapting`: the adaptation's, counted by it alone.
  Result<Reservation, std::string> SetRate(const Requester& who, Held& h,
                                           uint64_t rate, bool adapting);
  // At each check: what each reservation carried since the last
  // (Measure), and the changes of rate that adaptation makes (Adapt).
  void Measure(uint64_t now,
               const std::map<uint32_t, ReservedClasses::Use>& uses);
  void Adapt(uint64_t now);
  // What each reservation carried, for the metrics file.
  void UseMetrics(PromText& out) const;

  // The rate `who` may hold in all; nullopt: no limit (root).
  std::optional<uint64_t> Allowance(const Requester& who) const;
  // `who` may act on `h`, or why not.
  std::optional<std::string> MayTouch(const Requester& who,
                                      const Held& h) const;
  std::optional<std::string> CheckAllowance(const Requester& who,
                                            uint64_t more) const;
  std::optional<uint32_t> FreeMinor() const;
  // Installs again each held reservation whose class is not among
  // `parts.installed` or is among `parts.incomplete`.
  void Repair(const ReservedClasses::Parts& parts);
  // Why nothing can be admitted while parqd holds no lease.
  std::string NoLease() const;
  void Demote(const std::string& why);
  void RevokeStale();
  // Revokes the leases of this host's reservations that etcd holds under
  // another lease than ours: an earlier parqd's, which died without
  // revoking it.
  void RevokeEarlier();
  // Every kJobCheckNs: releases the reservations whose job ended,
  // installs again those whose class lacks a part, and removes the
  // classes of its range that it does not hold.
  void Check(uint64_t now);
  // A renewal answered at `now`: the next one, and the deadline.
  void Renewed(uint64_t now);
  uint64_t TtlNs() const;
  uint64_t DemoteAt() const;

  AgentConfig config_;
  const Topology& topology_;
  ClusterAdmission& admission_;
  EtcdClient& etcd_;
  ReservedClasses& classes_;
  Log log_;
  EtcdClient::Clock clock_;
  LeaseKeeper* keeper_;
  std::map<std::string, Held> held_;
  std::map<std::string, Joined> joined_;  // by job name
  // (job, destination host) -> its class.
  std::map<std::pair<std::string, std::string>, JobFlow> job_flows_;
  std::set<uint32_t> repair_failing_;  // classes Repair() cannot install
  // Released here but not yet in etcd (it did not answer): retried.
  std::vector<std::string> unreleased_;
  int64_t lease_ = 0;
  int64_t stale_lease_ = 0;         // given up at a demotion, not yet revoked
  uint64_t renewed_ns_ = 0;         // when the last answered renewal was sent
  uint64_t next_keepalive_ns_ = 0;  // or the next grant, without a lease
  uint64_t next_check_ns_ = 0;      // Check()
  std::function<bool(const std::string&)> job_alive_;
  std::string etcd_error_;  // the last one, for refusals
  bool warned_ = false;     // etcd_error_ was logged
  AgentCounters counters_;
};

// A class minor in hexadecimal, as tc writes it.
std::string Hex(uint32_t minor);

// What parqd --clean-up does after a parqd that did not stop cleanly
// (SIGKILL, OOM, its watchdog; the unit's ExecStopPost): removes every
// class of the agent's range from the qdisc, with its filters, and revokes
// the leases of `host`'s reservations in etcd, so that their capacity is
// free at once.  Each step is logged; false if one failed.
bool CleanUpAfterParqd(const std::string& host, ClusterAdmission& admission,
                       EtcdClient& etcd, ReservedClasses& classes,
                       const AdmissionAgent::Log& log);

}  // namespace parq::parqd

#endif
