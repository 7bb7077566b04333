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
// Reserve() reads the serial/ keys of the path's resources and of the
// owner, then the use/ keys (one range) and, with an allowance, the user/
// keys; it applies Admit() (topology.h) to the sums and commits with one
// transaction that writes the reservation's keys and puts each of those
// serial/ keys, on condition that each is as it was read: the same
// creation and modification revisions.  A concurrent admission on a
// shared resource (or for the same owner) makes all but one transaction
// fail; the others read again and decide again, so the sum on a resource
// can never exceed what is reservable.  Admissions whose paths share no
// resource compare different serial/ keys and never fail each other.
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
};

}  // namespace parq::parqd

#endif
