// SPDX-License-Identifier: GPL-2.0
//
// The reservations toward this host: what its admission role knows as a
// destination (Documentation/admission.md, "The destination's view").
// Every reservation is also kept under P to/FROM/TO/ID
// (cluster_admission.h), on its holder's lease, where only FROM may write
// it.  Run() lists P to/ once and then watches it
// from the listed revision, applying each put and delete; when etcd has
// compacted the revisions the watch needs, or the watch failed, it lists
// again.  A watch lasts at most `kWatchPeriod`, then resumes from where it
// was, so that a member that went silent is left within that time.
//
// Run() is the body of a thread of its own (parqd's watch thread); the
// other calls may come from any thread.

#ifndef PARQD_ADMISSION_INCOMING_H
#define PARQD_ADMISSION_INCOMING_H

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "admission/cluster_admission.h"
#include "admission/etcd.h"
#include "proto/metrics.h"

namespace parq::parqd {

class IncomingReservations {
 public:
  using Log = std::function<void(int level, const std::string& line)>;
  enum LogLevel { kInfo, kWarn, kError };
  static constexpr std::chrono::milliseconds kWatchPeriod{60'000};

  // `host`: this host as the topology names it; `prefix`: the cluster's
  // (ends with '/'); `etcd` lists (this thread's own client); `stream`
  // watches the same `endpoints`.
  IncomingReservations(std::string host, const std::string& prefix,
                       EtcdClient& etcd, std::vector<std::string> endpoints,
                       EtcdStream stream, std::chrono::milliseconds timeout,
                       Log log);

  // Lists and watches until `stop` is set (checked at least each second).
  void Run(const std::atomic<bool>& stop);

  struct View {
    bool synced = false;  // listed, and the watch since has not failed
    std::string error;    // why not, when not synced
    std::vector<Reservation> reservations;  // by id
    uint64_t lists = 0, watch_errors = 0;
    uint64_t malformed = 0;  // records skipped (each version once)
  };
  View Snapshot() const;

  // Its families (parqd_admission_incoming_*), for the metrics file.
  void Metrics(PromText& out) const;

 private:
  // The parts of `key` (under P to/) when it is toward this host; an
  // empty IncomingKey for a key that has not the parts FROM/TO/ID.
  std::optional<IncomingKey> Ours(const std::string& key) const;
  // The reservation a record toward this host holds: one that is not
  // what its key says (IncomingRecordProblem) is malformed.
  Result<Reservation, std::string> Read(const IncomingKey& key,
                                        const EtcdKv& kv) const;
  // Replaces the view with what etcd holds; the revision to watch from,
  // or 0 on an error.
  int64_t List();
  void Apply(const std::vector<EtcdEvent>& events);
  void Failed(const std::string& why);
  // A record that is no reservation: logged and counted the first time
  // (of each of its versions), skipped always.  Under mu_.
  void Malformed(const EtcdKv& kv, const std::string& why);

  const std::string host_, prefix_, end_;
  EtcdClient& etcd_;
  const std::vector<std::string> endpoints_;
  const EtcdStream stream_;
  const std::chrono::milliseconds timeout_;
  Log log_;

  mutable std::mutex mu_;
  std::map<std::string, Reservation> by_id_;
  bool synced_ = false;
  std::string error_;
  uint64_t lists_ = 0, watch_errors_ = 0, malformed_ = 0;
  std::map<std::string, int64_t> malformed_seen_;  // key -> mod_revision
};

}  // namespace parq::parqd

#endif
