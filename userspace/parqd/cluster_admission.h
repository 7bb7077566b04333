// SPDX-License-Identifier: GPL-2.0
//
// Reservations admitted across the cluster, their state in etcd
// (Documentation/admission.md, "State in etcd").  Under one prefix P:
//
//   P use/RESOURCE/ID   the rate (bits/s, decimal) reservation ID takes on
//                       RESOURCE (a Resource::id: host/H/send, link/A/B,
//                       host/H/receive)
//   P resv/ID           the reservation (JSON: id, from, to, rate, match,
//                       owner, resources)
//   P to/HOST/ID        the same, under its destination host: what that
//                       host watches (IncomingReservations)
//   P user/OWNER/ID     the rate reservation ID takes of its owner's
//                       allowance, wherever it was made
//
// all attached to the lease of the agent that holds the reservation, so
// that a dead agent's reservations disappear with its lease.  A use/ key
// without a lease would hold its resource for ever: the sums leave it out
// and the log names it (once).
//
// Reserve() reads the use/ keys of every resource on the path (one range
// each, at revision R_i), applies Admit() (topology.h) to the sums, and
// commits with one transaction whose compares say that no key under any
// of those use/ prefixes was created or changed since it was read
// (mod_revision < R_i + 1 over the prefix's range).  A concurrent
// admission on a shared resource makes all but one transaction fail; the
// others read again and decide again, so the sum on a resource can never
// exceed what is reservable.  Admissions whose paths share no resource
// compare disjoint ranges and never fail each other.  A request with an
// allowance reads and compares its owner's user/ prefix the same way, so
// that two hosts admitting for one user at once cannot together exceed
// it.  A released
// reservation's deleted keys do not fail the compares (they only free
// capacity).

#ifndef PARQD_CLUSTER_ADMISSION_H
#define PARQD_CLUSTER_ADMISSION_H

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "etcd.h"
#include "result.h"
#include "topology.h"

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
// Where the reservations toward `host` are kept under `prefix`.
std::string IncomingPrefix(const std::string& prefix, const std::string& host);

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

  Result<std::vector<Reservation>, std::string> List();
  // Every resource of the topology, in its order.
  Result<std::vector<ResourceUse>, std::string> Use();

  // Transactions that failed a compare and were retried, since creation.
  uint64_t retries() const { return retries_; }

 private:
  std::string UseKey(const std::string& resource, const std::string& id) const;
  std::string UserPrefix(const std::string& owner) const;
  Result<Reservation, std::string> Get(const std::string& id,
                                       int64_t* mod_revision);
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

  const Topology& topology_;
  EtcdClient& etcd_;
  std::string prefix_;
  Log log_;
  std::set<std::string, std::less<>> ignored_;  // keys already logged
  uint64_t retries_ = 0;
};

}  // namespace parq::parqd

#endif
