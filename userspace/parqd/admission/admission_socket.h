// SPDX-License-Identifier: GPL-2.0
//
// How applications and parqctl ask parqd's admission role for bandwidth:
// a Unix socket of type SOCK_SEQPACKET (default /run/parqd/admission.sock,
// mode 0666: anyone may ask, the policy decides), one JSON request per
// connection and one JSON reply (Documentation/admission.md, "Asking for
// a reservation"):
//
//   {"op": "reserve", "to": "n2", "rate": "100mbit", "match": "proto=udp",
//    "job": "42"}                          ("job": optional, a Slurm job)
//   {"op": "change", "id": "n1-...", "rate": "200mbit"}
//   {"op": "release", "id": "n1-..."}
//   {"op": "release", "job": "42"}       (all of the job's on this host)
//   {"op": "list"}
//   {"op": "incoming"}
//
// Jobs admitted as a whole (cluster_admission.h), named by "job":
//   {"op": "join", "job": "42", "leader": "n1"}  (this host's consent)
//   {"op": "leave", "job": "42"}
//   {"op": "reserve", "job": "42", "hosts": ["n1", "n2", ...],
//    "rate": "10mbit", "match": ""}        (on the leader; every pair)
//   {"op": "change", "job": "42", "rate": "20mbit"}
//   {"op": "job", "job": "42"}              -> {"ok": true, "job": {...}}
//   {"op": "release", "job": "42"}          (also ends the job and leaves)
// A process of a Slurm job names its jobs by the job's id, or the id, a
// dot and more ("42.world").
//
//   {"ok": true, "reservation": {...}}    {"ok": true, "reservations": [...]}
//   (incoming: the reservations toward this host, and "synced": whether
//   its watch of etcd is in sync, with "sync_error" when not)
//   {"ok": false, "error": "link s1 -> tor2 is full: ..."}
//
// The requester is the peer's SO_PEERCRED uid, its name and groups from the
// user database: an application cannot speak for another user.  When the
// peer's /proc/PID/cgroup can be read and names a Slurm job, that is the
// reservation's job, and a request naming another is refused.  Rates are
// a tc rate ("100mbit") or bits/s as a number.

#ifndef PARQD_ADMISSION_ADMISSION_SOCKET_H
#define PARQD_ADMISSION_ADMISSION_SOCKET_H

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "admission/admission_agent.h"
#include "admission/admission_client.h"
#include "admission/incoming.h"
#include "admission/request_server.h"
#include "base/result.h"

namespace parq::parqd {

nlohmann::json ReservationJson(const Reservation& r);

// The reply to one request (never throws; bad JSON gets an error reply);
// `incoming`: the destination's view, if this parqd keeps one;
// `process_job`: the Slurm job the asking process runs in ("": none;
// nullopt: its cgroup could not be read, and only root may reserve).
std::string HandleAdmissionRequest(
    AdmissionAgent& agent, const Requester& who, std::string_view request,
    const IncomingReservations* incoming = nullptr,
    const std::optional<std::string>& process_job = std::string());

// The Slurm job process `pid` runs in, from /proc/PID/cgroup: "" when it
// names none, nullopt when it cannot be read (the process is gone).
std::optional<std::string> SlurmJobOfPid(pid_t pid);

// `uid`'s name and groups from the user database (the uid in decimal when
// it has no entry).
Requester RequesterOf(uid_t uid, gid_t gid);

// The admission socket: a RequestServer that answers through
// HandleAdmissionRequest().
class AdmissionServer {
 public:
  // Binds `path` (replacing a stale socket; its directory must exist),
  // mode 0666, and listens.
  static Result<AdmissionServer, std::string> Open(const std::string& path);

  // The descriptors to poll for input: the listener, then connections.
  std::vector<int> fds() const { return server_.fds(); }
  // Accepts, answers what has arrived, and closes connections that asked
  // or that waited longer than 2 s.  `now_ns`: monotonic.
  void Serve(AdmissionAgent& agent, uint64_t now_ns);
  // What the "incoming" op answers from (it must outlive the server).
  void set_incoming(const IncomingReservations* incoming) {
    incoming_ = incoming;
  }

 private:
  explicit AdmissionServer(RequestServer s) : server_(std::move(s)) {}

  RequestServer server_;
  const IncomingReservations* incoming_ = nullptr;
};

}  // namespace parq::parqd

#endif
