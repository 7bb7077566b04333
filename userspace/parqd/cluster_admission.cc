// SPDX-License-Identifier: GPL-2.0

#include "cluster_admission.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

namespace parq::parqd {

namespace {

using nlohmann::json;

// Enough for every contender on a shared resource to win once in turn.
constexpr int kMaxAttempts = 64;

std::string NewId(const std::string& from) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(rng()));
  return from + "-" + hex;
}

uint64_t Rate(const std::string& text) {
  uint64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

std::string ToJson(const Reservation& r) {
  return json{{"id", r.id},     {"from", r.from},          {"to", r.to},
              {"rate", r.rate}, {"match", r.match},        {"owner", r.owner},
              {"job", r.job},   {"resources", r.resources}}
      .dump();
}

}  // namespace

Result<Reservation, std::string> ReservationFromKv(const EtcdKv& kv) {
  const json j = json::parse(kv.value, nullptr, false);
  const std::string bad = "etcd: " + kv.key + " is not a reservation";
  if (j.is_discarded() || !j.is_object() || !j.contains("id") ||
      !j.contains("resources"))
    return Err{bad};
  // Each field read only once its type is checked: json's value() and
  // get() throw on a field of another type.
  std::string wrong;
  const auto text = [&](const char* name, std::string& to) {
    const auto it = j.find(name);
    if (it == j.end())
      return;
    if (it->is_string())
      to = it->get<std::string>();
    else if (wrong.empty())
      wrong = name;
  };
  Reservation r;
  text("id", r.id);
  text("from", r.from);
  text("to", r.to);
  text("match", r.match);
  text("owner", r.owner);
  text("job", r.job);
  if (const auto it = j.find("rate"); it != j.end()) {
    if (it->is_number_unsigned())
      r.rate = it->get<uint64_t>();
    else if (wrong.empty())
      wrong = "rate";
  }
  const json& resources = j["resources"];
  if (!resources.is_array() ||
      !std::all_of(resources.begin(), resources.end(),
                   [](const json& e) { return e.is_string(); })) {
    if (wrong.empty())
      wrong = "resources";
  } else {
    for (const json& e : resources)
      r.resources.push_back(e.get<std::string>());
  }
  if (!wrong.empty())
    return Err{bad + ": its '" + wrong + "' is of the wrong type"};
  r.lease = kv.lease;
  return r;
}

std::string IncomingPrefix(const std::string& prefix, const std::string& host) {
  return prefix + "to/" + host + "/";
}

ClusterAdmission::ClusterAdmission(const Topology& topology, EtcdClient& etcd,
                                   std::string prefix, Log log)
    : topology_(topology),
      etcd_(etcd),
      prefix_(std::move(prefix)),
      log_(std::move(log)) {}

bool ClusterAdmission::Counts(const EtcdKv& kv) {
  if (kv.lease != 0)
    return true;
  if (ignored_.insert(kv.key).second && log_)
    log_(kWarn, "etcd: " + kv.key +
                    " has no lease, so nothing would ever remove it: "
                    "admission leaves it out; delete it with: etcdctl del " +
                    kv.key);
  return false;
}

std::string ClusterAdmission::UseKey(const std::string& resource,
                                     const std::string& id) const {
  return prefix_ + "use/" + resource + "/" + id;
}

std::string ClusterAdmission::UserPrefix(const std::string& owner) const {
  return prefix_ + "user/" + owner + "/";
}

Result<Reservation, std::string> ClusterAdmission::Reserve(
    const ReservationRequest& req, int64_t lease) {
  const auto from = topology_.FindHost(req.from);
  const auto to = topology_.FindHost(req.to);
  if (!from)
    return Err{"no host named or addressed \"" + req.from +
               "\" in the topology"};
  if (!to)
    return Err{"no host named or addressed \"" + req.to + "\" in the topology"};
  if (*from == *to)
    return Err{"the source and the destination are the same host, " +
               topology_.hosts()[*from].name};
  if (req.rate == 0)
    return Err{std::string("a rate of 0 reserves nothing")};
  if (lease <= 0)
    return Err{std::string(
        "a reservation needs a lease (its holder's), or it would never end")};
  Reservation r;
  r.from = topology_.hosts()[*from].name;
  r.to = topology_.hosts()[*to].name;
  r.id = NewId(r.from);
  r.rate = req.rate;
  r.match = req.match;
  r.owner = req.owner;
  r.job = req.job;
  r.lease = lease;
  const std::vector<size_t> path = topology_.Path(*from, *to);
  for (size_t i : path)
    r.resources.push_back(topology_.resources()[i].id);
  return Commit(std::move(r), path, req.allowance, "", 0);
}

Result<Reservation, std::string> ClusterAdmission::Change(
    const std::string& id, uint64_t rate, std::optional<uint64_t> allowance) {
  if (rate == 0)
    return Err{"a rate of 0 reserves nothing; release " + id + " instead"};
  int64_t rev = 0;
  auto got = Get(id, &rev);
  if (!got.ok())
    return got;
  Reservation r = std::move(got).value();
  std::vector<size_t> path;
  for (const std::string& rid : r.resources) {
    size_t i = 0;
    while (i < topology_.resources().size() &&
           topology_.resources()[i].id != rid)
      i++;
    if (i == topology_.resources().size())
      return Err{"reservation " + id + " charges " + rid +
                 ", which the topology no longer has; release it and "
                 "reserve again"};
    path.push_back(i);
  }
  r.rate = rate;
  return Commit(std::move(r), path, allowance, id, rev);
}

Result<Reservation, std::string> ClusterAdmission::Commit(
    Reservation r, const std::vector<size_t>& path,
    std::optional<uint64_t> allowance, const std::string& own,
    int64_t own_revision) {
  const auto& res = topology_.resources();
  for (int attempt = 0; attempt < kMaxAttempts; attempt++) {
    std::vector<uint64_t> reserved(res.size(), 0);
    std::vector<EtcdCompare> compares;
    for (size_t i : path) {
      const std::string pre = prefix_ + "use/" + res[i].id + "/";
      const std::string end = EtcdPrefixEnd(pre);
      auto range = etcd_.Range(pre, end);
      if (!range.ok())
        return Err{range.error()};
      for (const EtcdKv& kv : range.value().kvs)
        if ((own.empty() || kv.key != pre + own) && Counts(kv))
          reserved[i] += Rate(kv.value);
      compares.push_back({pre, end, EtcdCompare::Target::kModRevision,
                          EtcdCompare::Op::kLess, range.value().revision + 1});
    }
    if (allowance) {
      // The owner's reservations on every host, read and compared like a
      // resource's: a concurrent admission for the same owner anywhere
      // fails this transaction, which then decides again.
      const std::string pre = UserPrefix(r.owner);
      const std::string end = EtcdPrefixEnd(pre);
      auto range = etcd_.Range(pre, end);
      if (!range.ok())
        return Err{range.error()};
      uint64_t held = 0;
      for (const EtcdKv& kv : range.value().kvs)
        if ((own.empty() || kv.key != pre + own) && Counts(kv))
          held += Rate(kv.value);
      if (held + r.rate > *allowance || held + r.rate < held)
        return Err{"user " + r.owner + " may hold " + FormatRate(*allowance) +
                   " of reservations in the cluster; holds " +
                   FormatRate(held) +
                   (own.empty() ? ", asks " + FormatRate(r.rate) + " more"
                                : " besides " + own + ", asks " +
                                      FormatRate(r.rate) + " for it")};
      compares.push_back({pre, end, EtcdCompare::Target::kModRevision,
                          EtcdCompare::Op::kLess, range.value().revision + 1});
    }
    if (auto refusal = Admit(topology_, path, reserved, r.rate))
      return Err{RefusalMessage(topology_, *refusal)};
    if (!own.empty())
      compares.push_back({prefix_ + "resv/" + own, "",
                          EtcdCompare::Target::kModRevision,
                          EtcdCompare::Op::kEqual, own_revision});
    std::vector<EtcdOp> ops;
    ops.reserve(path.size() + 3);
    for (size_t i : path)
      ops.push_back({EtcdOp::Kind::kPut, UseKey(res[i].id, r.id),
                     std::to_string(r.rate), "", r.lease});
    ops.push_back({EtcdOp::Kind::kPut, UserPrefix(r.owner) + r.id,
                   std::to_string(r.rate), "", r.lease});
    const std::string value = ToJson(r);
    ops.push_back(
        {EtcdOp::Kind::kPut, prefix_ + "resv/" + r.id, value, "", r.lease});
    ops.push_back({EtcdOp::Kind::kPut, IncomingPrefix(prefix_, r.to) + r.id,
                   value, "", r.lease});
    auto txn = etcd_.Txn(compares, ops);
    if (!txn.ok())
      return Err{txn.error()};
    if (txn.value().succeeded)
      return r;
    retries_++;
    if (!own.empty()) {  // the reservation itself may have changed
      auto again = Get(own, &own_revision);
      if (!again.ok())
        return again;
    }
  }
  return Err{"gave up after " + std::to_string(kMaxAttempts) +
             " attempts: the reservations on the path kept changing"};
}

Result<Reservation, std::string> ClusterAdmission::Get(const std::string& id,
                                                       int64_t* mod_revision) {
  auto range = etcd_.Range(prefix_ + "resv/" + id);
  if (!range.ok())
    return Err{range.error()};
  if (range.value().kvs.empty())
    return Err{"no reservation " + id};
  *mod_revision = range.value().kvs[0].mod_revision;
  return ReservationFromKv(range.value().kvs[0]);
}

Result<Reservation, std::string> ClusterAdmission::Release(
    const std::string& id) {
  for (int attempt = 0; attempt < kMaxAttempts; attempt++) {
    int64_t rev = 0;
    auto got = Get(id, &rev);
    if (!got.ok())
      return got;
    std::vector<EtcdOp> ops;
    ops.reserve(got.value().resources.size() + 3);
    for (const std::string& rid : got.value().resources)
      ops.push_back({EtcdOp::Kind::kDelete, UseKey(rid, id), "", "", 0});
    ops.push_back(
        {EtcdOp::Kind::kDelete, UserPrefix(got.value().owner) + id, "", "", 0});
    ops.push_back({EtcdOp::Kind::kDelete, prefix_ + "resv/" + id, "", "", 0});
    ops.push_back({EtcdOp::Kind::kDelete,
                   IncomingPrefix(prefix_, got.value().to) + id, "", "", 0});
    auto txn = etcd_.Txn(
        {{prefix_ + "resv/" + id, "", EtcdCompare::Target::kModRevision,
          EtcdCompare::Op::kEqual, rev}},
        ops);
    if (!txn.ok())
      return Err{txn.error()};
    if (txn.value().succeeded)
      return got;
    retries_++;
  }
  return Err{"gave up after " + std::to_string(kMaxAttempts) +
             " attempts: reservation " + id + " kept changing"};
}

Result<std::vector<Reservation>, std::string> ClusterAdmission::List() {
  const std::string pre = prefix_ + "resv/";
  auto range = etcd_.Range(pre, EtcdPrefixEnd(pre));
  if (!range.ok())
    return Err{range.error()};
  std::vector<Reservation> out;
  out.reserve(range.value().kvs.size());
  for (const EtcdKv& kv : range.value().kvs) {
    auto r = ReservationFromKv(kv);
    if (!r.ok())
      return Err{r.error()};
    out.push_back(std::move(r).value());
  }
  return out;
}

Result<std::vector<ResourceUse>, std::string> ClusterAdmission::Use() {
  const std::string pre = prefix_ + "use/";
  auto range = etcd_.Range(pre, EtcdPrefixEnd(pre));
  if (!range.ok())
    return Err{range.error()};
  std::map<std::string, std::pair<uint64_t, size_t>, std::less<>> sums;
  for (const EtcdKv& kv : range.value().kvs) {
    if (!Counts(kv))
      continue;
    const std::string rest = kv.key.substr(pre.size());
    auto& s = sums[rest.substr(0, rest.rfind('/'))];
    s.first += Rate(kv.value);
    s.second++;
  }
  std::vector<ResourceUse> out;
  out.reserve(topology_.resources().size());
  for (const Resource& r : topology_.resources()) {
    const auto it = sums.find(r.id);
    out.push_back({&r, topology_.Reservable(r),
                   it == sums.end() ? 0 : it->second.first,
                   it == sums.end() ? 0 : it->second.second});
  }
  return out;
}

}  // namespace parq::parqd
