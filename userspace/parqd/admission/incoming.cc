// SPDX-License-Identifier: GPL-2.0

#include "admission/incoming.h"

#include <thread>

namespace parq::parqd {

IncomingReservations::IncomingReservations(
    std::string host, const std::string& prefix, EtcdClient& etcd,
    std::vector<std::string> endpoints, EtcdStream stream,
    std::chrono::milliseconds timeout, Log log)
    : host_(std::move(host)),
      prefix_(prefix + "to/"),
      end_(EtcdPrefixEnd(prefix_)),
      etcd_(etcd),
      endpoints_(std::move(endpoints)),
      stream_(std::move(stream)),
      timeout_(timeout),
      log_(std::move(log)) {}

std::optional<IncomingKey> IncomingReservations::Ours(
    const std::string& key) const {
  auto k = ParseIncomingKey(std::string_view(key).substr(prefix_.size()));
  if (k)
    return k->to == host_ ? k : std::nullopt;
  // Unparsable: malformed here only if it names this host (else every
  // host would count it).
  if (key.find("/" + host_ + "/") == std::string::npos)
    return std::nullopt;
  return IncomingKey{};  // Read() refuses it
}

Result<Reservation, std::string> IncomingReservations::Read(
    const IncomingKey& key, const EtcdKv& kv) const {
  if (key.from.empty())
    return Err{"etcd: " + kv.key + " is not " + prefix_ + "FROM/TO/ID"};
  auto r = ReservationFromKv(kv);
  if (!r.ok())
    return r;
  if (auto e = IncomingRecordProblem(key, r.value()))
    return Err{"etcd: " + kv.key + ": " + *e};
  return r;
}

int64_t IncomingReservations::List() {
  auto range = etcd_.Range(prefix_, end_);
  if (!range.ok()) {
    Failed(range.error());
    return 0;
  }
  std::map<std::string, Reservation> fresh;
  std::lock_guard<std::mutex> lock(mu_);
  for (const EtcdKv& kv : range.value().kvs) {
    const auto key = Ours(kv.key);
    if (!key)
      continue;  // toward another host
    auto r = Read(*key, kv);
    if (!r.ok()) {
      Malformed(kv, r.error());
      continue;
    }
    const std::string id = r.value().id;
    fresh[id] = std::move(r).value();
  }
  const bool was = synced_;
  by_id_ = std::move(fresh);
  synced_ = true;
  error_.clear();
  lists_++;
  if (!was)
    log_(kInfo, "reservations toward " + host_ + ": " +
                    std::to_string(by_id_.size()) + " (etcd revision " +
                    std::to_string(range.value().revision) + "), watching");
  return range.value().revision + 1;
}

void IncomingReservations::Apply(const std::vector<EtcdEvent>& events) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const EtcdEvent& e : events) {
    if (e.kv.key.rfind(prefix_, 0) != 0)
      continue;
    const auto key = Ours(e.kv.key);
    if (!key)
      continue;  // toward another host
    // Only a valid record is held, under its id, which is its key's: a
    // delete, or a record that is no longer valid, ends it.
    const auto forget = [&] {
      const auto it = by_id_.find(key->id);
      if (it != by_id_.end() && it->second.from == key->from)
        by_id_.erase(it);
    };
    if (e.deleted) {
      forget();
      malformed_seen_.erase(e.kv.key);
      continue;
    }
    auto r = Read(*key, e.kv);
    if (r.ok()) {
      by_id_[key->id] = std::move(r).value();
    } else {
      forget();
      Malformed(e.kv, r.error());
    }
  }
}

void IncomingReservations::Malformed(const EtcdKv& kv, const std::string& why) {
  const auto [it, added] = malformed_seen_.emplace(kv.key, kv.mod_revision);
  if (!added && it->second == kv.mod_revision)
    return;
  it->second = kv.mod_revision;
  malformed_++;
  log_(kWarn, why + "; skipped");
}

void IncomingReservations::Failed(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (synced_ || error_ != why)
    log_(kWarn, "reservations toward " + host_ + " not in sync: " + why);
  synced_ = false;
  error_ = why;
}

void IncomingReservations::Run(const std::atomic<bool>& stop) {
  const auto keep_going = [&stop] { return !stop.load(); };
  const auto pause = [&stop] {
    for (int i = 0; i < 10 && !stop; i++)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  };
  int64_t next = 0;  // 0: list first
  while (!stop) {
    if (next == 0) {
      next = List();
      if (next == 0) {
        pause();
        continue;
      }
    }
    const EtcdWatchEnd end = EtcdWatch(
        endpoints_, stream_, prefix_, end_, next, timeout_, kWatchPeriod,
        [this](const std::vector<EtcdEvent>& events, int64_t) {
          Apply(events);
        },
        keep_going);
    switch (end.kind) {
      case EtcdWatchEnd::kStopped:
        next = end.next_revision;
        break;
      case EtcdWatchEnd::kCompacted:
        log_(kInfo, "etcd compacted the revisions from " +
                        std::to_string(next) + " on: listing again");
        next = 0;
        break;
      case EtcdWatchEnd::kFailed: {
        {
          std::lock_guard<std::mutex> lock(mu_);
          watch_errors_++;
        }
        Failed(end.why);
        next = 0;
        pause();
        break;
      }
    }
  }
}

IncomingReservations::View IncomingReservations::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  View v;
  v.synced = synced_;
  v.error = error_;
  v.lists = lists_;
  v.watch_errors = watch_errors_;
  v.malformed = malformed_;
  v.reservations.reserve(by_id_.size());
  for (const auto& [id, r] : by_id_)
    v.reservations.push_back(r);
  return v;
}

void IncomingReservations::Metrics(PromText& out) const {
  const View v = Snapshot();
  uint64_t rate = 0;
  for (const Reservation& r : v.reservations)
    rate += r.rate;
  out.Gauge("parqd_admission_incoming_reservations",
            "Reservations toward this host, from its watch of etcd.",
            v.reservations.size());
  out.Gauge("parqd_admission_incoming_reserved_bps",
            "Their rates' sum, bits/s.", rate);
  out.Gauge("parqd_admission_incoming_synced",
            "1 while the watch is in sync with etcd, else 0.", v.synced);
  out.Counter("parqd_admission_incoming_lists_total",
              "Times the reservations toward this host were listed (at "
              "start, after a compaction or a failed watch).",
              v.lists);
  out.Counter("parqd_admission_incoming_watch_errors_total",
              "Watches that failed (no endpoint answered, or broke).",
              v.watch_errors);
  out.Counter("parqd_admission_incoming_malformed_total",
              "Records toward this host under to/ that are no "
              "reservation or not what their key says (skipped; each "
              "version counted once).",
              v.malformed);
}

}  // namespace parq::parqd
