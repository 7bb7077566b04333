// SPDX-License-Identifier: GPL-2.0
//
// Reservations admitted across the cluster, their state in etcd
// (Documentation/admission.md, "State in etcd").  Under one prefix P, each
// key a host writes sits under that host's name, so that an etcd role can
// let each host write its own keys only (admission.md, "etcd roles"):
//
//   P resv/FROM/ID            the reservation (JSON: id, from, to, rate,
//                             match, owner, job, resources)
//   P use/FROM/RESOURCE/ID    the rate (bits/s, decimal) it takes on
//                             RESOURCE (a Resource::id: host/H/send,
//                             link/A/B, host/H/receive)
//   P user/FROM/OWNER/ID      the rate it takes of its owner's allowance
//   P to/FROM/TO/ID           the reservation again, for its destination
//                             TO to watch (IncomingReservations)
//
// all attached to the lease of the agent that holds the reservation, so
// that a dead agent's reservations disappear with its lease.  A use/ key
// without a lease would hold its resource for ever: the sums leave it
// out and the log names it (once).  So does a use/ key by which FROM
// would charge another host's sending NIC or uplink.  FROM is a topology
// host name (no '/'), and ID is FROM-<16 hex digits>.
//
//   P serial/RESOURCE         written by every admission that charges
//   P serial/user/OWNER       RESOURCE (or is for OWNER), no lease
//
// A job (a parallel job's all-to-all, admitted as a whole) is one record
// and one consent per host:
//
//   P job/LEADER/NAME         the job (JSON: name, leader, hosts, rate,
//                             match, owner): `rate` for every ordered
//                             pair of distinct hosts, written by LEADER
//                             under its lease in one transaction
//   P member/HOST/NAME        HOST's consent to carry its part of job NAME
//                             of LEADER for OWNER, at RATE a flow at most
//                             (JSON: name, leader, owner, rate; 0: any),
//                             under HOST's lease
//
// A job's flows from HOST count (are charged, and HOST installs them)
// only while HOST's consent names the job's leader and owner, allows its
// rate, and is older than the job's record: a host cannot charge another
// host's sending NIC or uplink by naming it in a job, nor beyond the rate
// that host agreed to, nor bring a host into a job after it was admitted.
// A job is known by its leader and name: another host's record of the
// same name is another job.  The leader computes a job's charges from the
// topology (every ordered pair's path), as everyone who sums them does; the
// record
// holds none, so it is the same size for any topology and can claim no
// charge its hosts do not imply.
//
// ReserveJob() reads the use/ keys, the jobs and the consents (and, with
// an allowance, the user/ keys), each range at a revision, and commits
// the job's one key on condition that no key in those ranges was written
// since (one range compare each): a transaction of at most 3 compares and
// 1 put whatever the job's size, within etcd's --max-txn-ops (128).  Any
// admission committed meanwhile fails it and it decides again.  A job's
// commit in turn fails every admission that read the jobs before it:
// Reserve() and Change() compare the job/ range the same way.
//
// Reserve() reads the serial/ keys of the path's resources and of the
// owner, then the use/ keys (one range) and, with an allowance, the user/
// keys; it applies Admit() (topology.h) to the sums and commits with one
// transaction that writes the reservation's keys and puts each of those
// serial/ keys, on condition that each is as it was read: the same
// creation and modification revisions.  A concurrent admission on a
// shared resource (or for the same owner) makes all but one transaction
// fail; the others read again and decide again, so the sum on a resource
// can never exceed what is reservable.  Reservations whose paths share no
// resource compare different serial/ keys and never fail each other (a
// job admitted meanwhile fails them all: they compare the job/ range).
// Every host may write serial/ keys, so one may delete them: a deleted
// key fails the compare (its creation revision is gone), and one not
// there yet is made before it is read, so that absence never passes for
// "unchanged".  Sums saturate: no use/ key can wrap one around.  A
// released reservation's deleted keys fail no compare (they only free
// capacity).

#ifndef PARQD_ADMISSION_CLUSTER_ADMISSION_H
#define PARQD_ADMISSION_CLUSTER_ADMISSION_H

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "admission/etcd.h"
#include "admission/topology.h"
#include "base/result.h"

namespace parq::parqd {

struct ReservationRequest {
  std::string from, to;  // host names or addresses (Topology::FindHost)
  uint64_t rate = 0;     // bits/s
  std::string match;     // the traffic it covers (opaque here)
  std::string owner;     // who asked (a user name)
  // The most the owner may hold across the cluster, this included;
  // nullopt: no limit (root).
  std::optional<uint64_t> allowance;
  std::string job;  // the Slurm job it was made for ("": none)
};

struct Reservation {
  std::string id;        // FROM-<16 hex digits>
  std::string from, to;  // host names
  uint64_t rate = 0;
  std::string match, owner;
  std::string job;                     // Slurm job id ("": none)
  std::vector<std::string> resources;  // Resource ids, path order
  int64_t lease = 0;
};

// What reservations hold of one resource.
struct ResourceUse {
  const Resource* resource = nullptr;
  uint64_t reservable = 0, reserved = 0;
  size_t reservations = 0;
};

// A reservation as it is stored (its value and lease), or why not.
Result<Reservation, std::string> ReservationFromKv(const EtcdKv& kv);
// The parts of a key under P to/ (FROM/TO/ID, `rest`: what follows
// P to/), or nullopt when it has not three non-empty parts.
struct IncomingKey {
  std::string from, to, id;
};
std::optional<IncomingKey> ParseIncomingKey(std::string_view rest);
// What is wrong with `r`, the record kept under P to/ with parts `key`:
// a holder that is not the key's FROM (a host can write only its own
// keys), a destination that is not its TO, an id that is not its ID or
// not FROM's; nullopt when nothing is.
std::optional<std::string> IncomingRecordProblem(const IncomingKey& key,
                                                 const Reservation& r);

// The etcd role of `host` (and its user's name, the same): it may read
// everything under `prefix` and write only its own keys (resv/, use/,
// user/ and to/ under its name) and the serial/ keys every admission
// writes (admission.md, "etcd roles").
struct EtcdPermission {
  bool write = false;  // readwrite; else read
  std::string key;     // a prefix: every key that starts with it
};
struct EtcdRole {
  std::string name;
  std::vector<EtcdPermission> permissions;
};
EtcdRole HostRole(const std::string& host, const std::string& prefix);

// A job asked for: `rate` bits/s for every ordered pair of distinct
// `hosts`, admitted all or nothing.
struct JobRequest {
  std::string name;    // 1-63 letters, digits, '-', '_', '.'
  std::string leader;  // the host that asks and holds it, among `hosts`
  std::vector<std::string> hosts;  // names or addresses, 2 or more
  uint64_t rate = 0;
  std::string match, owner;
  std::optional<uint64_t> allowance;  // as ReservationRequest's
};

struct JobReservation {
  std::string name, leader;
  std::vector<std::string> hosts;  // topology names, in the request's order
  uint64_t rate = 0;               // each ordered pair of distinct hosts
  std::string match, owner;
  // The hosts whose flows count: those whose consent holds (above).
  std::vector<std::string> joined;
  int64_t lease = 0, create_revision = 0;

  // Ordered pairs of distinct hosts: n (n - 1).
  uint64_t flows() const { return hosts.size() * (hosts.size() - 1); }
};

// A host's consent to a job (P member/HOST/NAME).
struct JobMembership {
  std::string host, name, leader, owner;  // host and leader: topology names
  // The highest rate a flow of the job may have for this host to carry
  // it (0: any): a leader cannot raise it past what the host agreed to.
  uint64_t max_rate = 0;
  int64_t lease = 0, create_revision = 0;
};

// Why `name` cannot name a job (it must be a valid topology name,
// ValidName()), or nullopt.
std::optional<std::string> JobNameProblem(std::string_view name);

class ClusterAdmission {
 public:
  using Log = std::function<void(int level, const std::string& line)>;
  enum LogLevel { kInfo, kWarn, kError };

  // `topology` and `etcd` must outlive this.  `prefix` ends with '/'.
  // `log` hears of the use/ keys left out of the sums.
  ClusterAdmission(const Topology& topology, EtcdClient& etcd,
                   std::string prefix = "/parq/v1/", Log log = {});

  // Admits and records the reservation under `lease`, or says why not:
  // a refusal names the full resource (RefusalMessage()); bad input (an
  // unknown host, the same host twice, a rate of 0, no lease) and etcd's
  // errors are errors too.  Nothing is written unless it is admitted.
  Result<Reservation, std::string> Reserve(const ReservationRequest& req,
                                           int64_t lease);
  // The reservation's new rate, admitted the same way (its own use is
  // not counted against it), within its owner's `allowance`.
  Result<Reservation, std::string> Change(
      const std::string& id, uint64_t rate,
      std::optional<uint64_t> allowance = std::nullopt);
  // Deletes the reservation; an error when there is none of that id.
  Result<Reservation, std::string> Release(const std::string& id);

  // Records `m.host`'s consent to job `m.name` of `m.leader` for
  // `m.owner` up to `m.max_rate`, under `lease`.  Joining again for the
  // same leader and owner sets the new rate (the consent keeps its age);
  // a consent to that name of another leader or owner is an error (leave
  // it first).  A record there that is not a live consent is replaced.
  Result<JobMembership, std::string> Join(const JobMembership& m,
                                          int64_t lease);
  // Withdraws `host`'s consent to `name`: its flows stop counting.
  // Whether there was one.
  Result<bool, std::string> Leave(const std::string& host,
                                  const std::string& name);
  // Admits the job as a whole or not at all: a refusal names the first
  // resource (in the topology's order) the job would take beyond what is
  // reservable, or the hosts that have not joined it.  Nothing is written
  // unless it is admitted.
  Result<JobReservation, std::string> ReserveJob(const JobRequest& req,
                                                 int64_t lease);
  // The job's new rate for each pair, admitted the same way (its own
  // charges not counted against it).
  Result<JobReservation, std::string> ChangeJob(
      const std::string& leader, const std::string& name, uint64_t rate,
      std::optional<uint64_t> allowance = std::nullopt);
  Result<JobReservation, std::string> ReleaseJob(const std::string& leader,
                                                 const std::string& name);
  // Every job, each with the hosts whose consent holds; records that are
  // not jobs, or not where their leader keeps them, are logged (once)
  // and left out.
  Result<std::vector<JobReservation>, std::string> Jobs();
  // The consents of `host`, every one (whether its job exists or not).
  Result<std::vector<JobMembership>, std::string> Memberships(
      const std::string& host);
  // What job `j` charges each resource (indices into the topology's
  // resources(), 0 where nothing), counting its joined hosts' flows.
  // Remembered for each job while its hosts, rate and joined hosts stay
  // the same: a job of n hosts is n (n - 1) paths, which every admission
  // would otherwise compute again.
  std::vector<uint64_t> JobCharges(const JobReservation& j) const;

  // The reservations of every host, or of `from` only; a record that is
  // not a reservation, or not where its holder keeps it, is logged (once)
  // and left out.
  Result<std::vector<Reservation>, std::string> List(
      const std::string& from = {});
  // Every resource of the topology, in its order.
  Result<std::vector<ResourceUse>, std::string> Use();

  // Transactions that failed a compare and were retried, since creation.
  uint64_t retries() const { return retries_; }

 private:
  std::string UseKey(const std::string& from, const std::string& resource,
                     const std::string& id) const;
  std::string UserKey(const std::string& from, const std::string& owner,
                      const std::string& id) const;
  // P resv/FROM/ID, FROM read from `id`.
  std::string ResvKey(const std::string& id) const;
  std::string ToKey(const Reservation& r) const;
  // Whether a use/ key of host `from` may charge `resource`: no host
  // charges another's sending NIC or uplink (sender_of_).
  bool MayCharge(std::string_view from, std::string_view resource) const;
  // The use/ key `kv`'s holder and resource, when it counts (Counts()
  // and MayCharge()); nullopt when it does not.
  struct UseOf {
    std::string from, resource;
  };
  std::optional<UseOf> Counted(const EtcdKv& kv);
  Result<Reservation, std::string> Get(const std::string& id,
                                       int64_t* mod_revision);
  // Compares that say that each of `keys` (serial/ keys) is as it is now:
  // the same creation and modification revisions.  A key not there yet is
  // made first: a key that is absent cannot be told from one deleted
  // since it was read.
  Result<std::vector<EtcdCompare>, std::string> Serials(
      const std::vector<std::string>& keys);
  // Admits `rate` on `path` (resource indices) and within `allowance`
  // and writes `r` with it; `own`: a reservation whose use is left out of
  // the sums (a change).
  Result<Reservation, std::string> Commit(Reservation r,
                                          const std::vector<size_t>& path,
                                          std::optional<uint64_t> allowance,
                                          const std::string& own,
                                          int64_t own_revision);

  // What every reservation and job holds of each resource, read for one
  // decision: the use/ keys but those of reservation `own` (of host
  // `own_from`), and the jobs but job `own_job` ("LEADER/NAME").
  struct Holdings {
    std::vector<uint64_t> reserved;  // by resource index
    std::vector<size_t> count;       // reservations and jobs on each
    std::vector<JobReservation> jobs;
    int64_t use_revision = 0, job_revision = 0;
  };
  Result<Holdings, std::string> ReadHoldings(const std::string& own_from,
                                             const std::string& own,
                                             const std::string& own_job);
  // The jobs as read (with their consents), and the revision of the
  // read of job/, the range a later transaction compares.
  Result<std::vector<JobReservation>, std::string> ReadJobs(
      int64_t* job_revision);
  // What `owner` holds of its allowance across the cluster: its
  // reservations' user/ keys (but reservation `own`'s) and its jobs (but
  // `own_job`); the user/ read's revision into *`revision`.
  Result<uint64_t, std::string> Held(const std::string& owner,
                                     const std::string& own_from,
                                     const std::string& own,
                                     const std::vector<JobReservation>& jobs,
                                     const std::string& own_job,
                                     int64_t* revision);
  // Admits and writes job `j`: a new one, or (`change`) a new rate for
  // the job of `j`'s leader and name, the rest of it as etcd holds it.
  Result<JobReservation, std::string> CommitJob(
      JobReservation j, std::optional<uint64_t> allowance, bool change);
  // The compare that every key under P `kind` is as it was read at
  // `revision`: none written since.
  EtcdCompare Unchanged(const char* kind, int64_t revision) const;
  std::string JobKey(const std::string& leader, const std::string& name) const;
  std::string MemberKey(const std::string& host, const std::string& name) const;
  // The topology index of the host named exactly `name`.
  std::optional<size_t> HostNamed(std::string_view name) const;
  // Resource id -> its index in the topology's resources(), and host
  // name -> its index in hosts().
  std::map<std::string, size_t, std::less<>> resource_index_, host_index_;

  // Whether the use/ key `kv` counts: only a live lease's do (etcd keeps
  // a key only while its lease lives); the first time a key is left out,
  // the log says so.
  bool Counts(const EtcdKv& kv);
  // Logs `why` of `key` the first time.
  void Ignore(const std::string& key, const std::string& why);

  const Topology& topology_;
  EtcdClient& etcd_;
  std::string prefix_;
  Log log_;
  std::set<std::string, std::less<>> ignored_;  // keys already logged
  bool ignored_full_ = false;
  // Resource id -> the host whose traffic alone it carries.
  std::map<std::string, std::string, std::less<>> sender_of_;
  uint64_t retries_ = 0;
  // JobCharges() of each job by LEADER/NAME, with what they were of.
  struct Charges {
    std::vector<std::string> hosts, joined;
    uint64_t rate = 0;
    std::vector<uint64_t> charges;
  };
  mutable std::map<std::string, Charges, std::less<>> charges_;
};

}  // namespace parq::parqd

#endif
