// SPDX-License-Identifier: GPL-2.0

#include "admission/cluster_admission.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "base/satmath.h"

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

// A key after its kind's prefix, KIND/FROM/MIDDLE/ID: FROM before the
// first '/', ID after the last, MIDDLE (not empty) between them.
struct KeyParts {
  std::string_view from, middle, id;
};
std::optional<KeyParts> SplitKey(std::string_view rest) {
  const size_t a = rest.find('/');
  const size_t b = rest.rfind('/');
  if (a == std::string_view::npos || b <= a + 1)
    return std::nullopt;
  return KeyParts{rest.substr(0, a), rest.substr(a + 1, b - a - 1),
                  rest.substr(b + 1)};
}

// The host an id (FROM-<16 hex digits>) belongs to; "" for none.
std::string FromOf(const std::string& id) {
  const size_t dash = id.rfind('-');
  return dash == std::string::npos ? "" : id.substr(0, dash);
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

std::optional<IncomingKey> ParseIncomingKey(std::string_view rest) {
  const auto p = SplitKey(rest);
  if (!p || p->from.empty() || p->id.empty() ||
      p->middle.find('/') != std::string_view::npos)
    return std::nullopt;
  return IncomingKey{std::string(p->from), std::string(p->middle),
                     std::string(p->id)};
}

std::optional<std::string> IncomingRecordProblem(const IncomingKey& key,
                                                 const Reservation& r) {
  if (r.from != key.from)
    return "it says it is held by \"" + r.from + "\", but it is kept under " +
           key.from + "'s keys";
  if (r.to != key.to)
    return "it is toward \"" + r.to + "\", but kept under " + key.to;
  if (r.id != key.id)
    return "it holds the reservation of id " + r.id + ", not its own";
  const std::string_view digits =
      std::string_view(r.id).substr(std::min(r.id.size(), key.from.size() + 1));
  const bool hex = std::all_of(digits.begin(), digits.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
  if (FromOf(r.id) != key.from || digits.size() != 16 || !hex)
    return "its id " + r.id + " is not one of " + key.from + "'s (" + key.from +
           "-<16 hex digits>)";
  return std::nullopt;
}

EtcdRole HostRole(const std::string& host, const std::string& prefix) {
  EtcdRole role{"parq-" + host, {{false, prefix}}};
  for (const char* kind : {"resv/", "use/", "user/", "to/", "job/", "member/"})
    role.permissions.push_back({true, prefix + kind + host + "/"});
  role.permissions.push_back({true, prefix + "serial/"});
  return role;
}

ClusterAdmission::ClusterAdmission(const Topology& topology, EtcdClient& etcd,
                                   std::string prefix, Log log)
    : topology_(topology),
      etcd_(etcd),
      prefix_(std::move(prefix)),
      log_(std::move(log)) {
  for (size_t i = 0; i < topology_.resources().size(); i++) {
    resource_index_.emplace(topology_.resources()[i].id, i);
    if (const auto h = topology_.SendingHost(i))
      sender_of_.emplace(topology_.resources()[i].id,
                         topology_.hosts()[*h].name);
  }
  for (size_t i = 0; i < topology_.hosts().size(); i++)
    host_index_.emplace(topology_.hosts()[i].name, i);
}

void ClusterAdmission::Ignore(const std::string& key, const std::string& why) {
  // Bounded: whoever writes keys could otherwise grow it without end.
  constexpr size_t kMaxIgnored = 4096;
  if (ignored_.size() >= kMaxIgnored) {
    if (!ignored_full_ && log_)
      log_(kWarn, "etcd: more than " + std::to_string(kMaxIgnored) +
                      " keys left out; no more are named");
    ignored_full_ = true;
    return;
  }
  if (ignored_.insert(key).second && log_)
    log_(kWarn, "etcd: " + key + " " + why);
}

bool ClusterAdmission::Counts(const EtcdKv& kv) {
  if (kv.lease != 0)
    return true;
  Ignore(kv.key,
         "has no lease, so nothing would ever remove it: admission leaves it "
         "out; delete it with: etcdctl del " +
             kv.key);
  return false;
}

bool ClusterAdmission::MayCharge(std::string_view from,
                                 std::string_view resource) const {
  const auto it = sender_of_.find(resource);
  return it == sender_of_.end() || it->second == from;
}

std::optional<ClusterAdmission::UseOf> ClusterAdmission::Counted(
    const EtcdKv& kv) {
  const auto p = SplitKey(
      std::string_view(kv.key).substr(prefix_.size() + 4));  // after use/
  if (!p || p->from.empty() || p->id.empty()) {
    Ignore(kv.key, "is not FROM/RESOURCE/ID: admission leaves it out");
    return std::nullopt;
  }
  UseOf u{std::string(p->from), std::string(p->middle)};
  if (!MayCharge(u.from, u.resource)) {
    Ignore(kv.key, "charges " + u.resource + " to " + u.from +
                       ", which is another host's: admission leaves it out");
    return std::nullopt;
  }
  if (!Counts(kv))
    return std::nullopt;
  return u;
}

std::string ClusterAdmission::UseKey(const std::string& from,
                                     const std::string& resource,
                                     const std::string& id) const {
  return prefix_ + "use/" + from + "/" + resource + "/" + id;
}

std::string ClusterAdmission::UserKey(const std::string& from,
                                      const std::string& owner,
                                      const std::string& id) const {
  return prefix_ + "user/" + from + "/" + owner + "/" + id;
}

std::string ClusterAdmission::ResvKey(const std::string& id) const {
  return prefix_ + "resv/" + FromOf(id) + "/" + id;
}

std::string ClusterAdmission::ToKey(const Reservation& r) const {
  return prefix_ + "to/" + r.from + "/" + r.to + "/" + r.id;
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
    const auto it = resource_index_.find(rid);
    if (it == resource_index_.end())
      return Err{"reservation " + id + " charges " + rid +
                 ", which the topology no longer has; release it and "
                 "reserve again"};
    path.push_back(it->second);
  }
  r.rate = rate;
  return Commit(std::move(r), path, allowance, id, rev);
}

Result<std::vector<EtcdCompare>, std::string> ClusterAdmission::Serials(
    const std::vector<std::string>& keys) {
  std::vector<EtcdCompare> out;
  for (const std::string& key : keys) {
    auto range = etcd_.Range(key);
    if (!range.ok())
      return Err{range.error()};
    if (range.value().kvs.empty()) {
      // Made once, if it still is not there; read again below.
      auto made = etcd_.Txn({{key, "", EtcdCompare::Target::kCreateRevision,
                              EtcdCompare::Op::kEqual, 0}},
                            {{EtcdOp::Kind::kPut, key, "", "", 0}});
      if (!made.ok())
        return Err{made.error()};
      range = etcd_.Range(key);
      if (!range.ok())
        return Err{range.error()};
      if (range.value().kvs.empty())
        return Err{"etcd: " + key + " went as soon as it was made"};
    }
    const EtcdKv& kv = range.value().kvs[0];
    out.push_back({key, "", EtcdCompare::Target::kCreateRevision,
                   EtcdCompare::Op::kEqual, kv.create_revision});
    out.push_back({key, "", EtcdCompare::Target::kModRevision,
                   EtcdCompare::Op::kEqual, kv.mod_revision});
  }
  return out;
}

Result<Reservation, std::string> ClusterAdmission::Commit(
    Reservation r, const std::vector<size_t>& path,
    std::optional<uint64_t> allowance, const std::string& own,
    int64_t own_revision) {
  const auto& res = topology_.resources();
  std::vector<std::string> serials;
  serials.reserve(path.size() + 1);
  for (size_t i : path)
    serials.push_back(prefix_ + "serial/" + res[i].id);
  serials.push_back(prefix_ + "serial/user/" + r.owner);
  for (int attempt = 0; attempt < kMaxAttempts; attempt++) {
    // The serial/ keys first, then the sums: an admission committed after
    // a serial/ key was read changes it and fails this transaction; one
    // committed before is in the sums.
    auto compares = Serials(serials);
    if (!compares.ok())
      return Err{compares.error()};
    auto held = ReadHoldings(r.from, own, "");
    if (!held.ok())
      return Err{held.error()};
    if (allowance) {
      // The owner's reservations on every host, guarded by the owner's
      // serial/ key as the resources are by theirs, and its jobs.
      int64_t user_revision = 0;
      auto h =
          Held(r.owner, r.from, own, held.value().jobs, "", &user_revision);
      if (!h.ok())
        return Err{h.error()};
      if (SatAdd(h.value(), r.rate) > *allowance)
        return Err{"user " + r.owner + " may hold " + FormatRate(*allowance) +
                   " of reservations in the cluster; holds " +
                   FormatRate(h.value()) +
                   (own.empty() ? ", asks " + FormatRate(r.rate) + " more"
                                : " besides " + own + ", asks " +
                                      FormatRate(r.rate) + " for it")};
    }
    const std::vector<uint64_t>& reserved = held.value().reserved;
    if (auto refusal = Admit(topology_, path, reserved, r.rate))
      return Err{RefusalMessage(topology_, *refusal)};
    if (!own.empty())
      compares.value().push_back({ResvKey(own), "",
                                  EtcdCompare::Target::kModRevision,
                                  EtcdCompare::Op::kEqual, own_revision});
    // A job admitted since the jobs were read is not in the sums.
    compares.value().push_back(Unchanged("job/", held.value().job_revision));
    std::vector<EtcdOp> ops;
    ops.reserve(path.size() + serials.size() + 4);
    for (size_t i : path)
      ops.push_back({EtcdOp::Kind::kPut, UseKey(r.from, res[i].id, r.id),
                     std::to_string(r.rate), "", r.lease});
    for (const std::string& key : serials)
      ops.push_back({EtcdOp::Kind::kPut, key, r.id, "", 0});
    ops.push_back({EtcdOp::Kind::kPut, UserKey(r.from, r.owner, r.id),
                   std::to_string(r.rate), "", r.lease});
    const std::string value = ToJson(r);
    ops.push_back({EtcdOp::Kind::kPut, ResvKey(r.id), value, "", r.lease});
    ops.push_back({EtcdOp::Kind::kPut, ToKey(r), value, "", r.lease});
    auto txn = etcd_.Txn(compares.value(), ops);
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
  if (id.find('/') != std::string::npos || id.rfind('-') == std::string::npos)
    return Err{"no reservation " + id};
  auto range = etcd_.Range(ResvKey(id));
  if (!range.ok())
    return Err{range.error()};
  if (range.value().kvs.empty())
    return Err{"no reservation " + id};
  *mod_revision = range.value().kvs[0].mod_revision;
  auto r = ReservationFromKv(range.value().kvs[0]);
  if (r.ok() && (r.value().id != id || r.value().from != FromOf(id)))
    return Err{"etcd: " + range.value().kvs[0].key + " holds reservation " +
               r.value().id + " of \"" + r.value().from +
               "\", not what its key says"};
  return r;
}

Result<Reservation, std::string> ClusterAdmission::Release(
    const std::string& id) {
  for (int attempt = 0; attempt < kMaxAttempts; attempt++) {
    int64_t rev = 0;
    auto got = Get(id, &rev);
    if (!got.ok())
      return got;
    const Reservation& r = got.value();
    std::vector<EtcdOp> ops;
    ops.reserve(r.resources.size() + 3);
    for (const std::string& rid : r.resources)
      ops.push_back(
          {EtcdOp::Kind::kDelete, UseKey(r.from, rid, id), "", "", 0});
    ops.push_back(
        {EtcdOp::Kind::kDelete, UserKey(r.from, r.owner, id), "", "", 0});
    ops.push_back({EtcdOp::Kind::kDelete, ResvKey(id), "", "", 0});
    ops.push_back({EtcdOp::Kind::kDelete, ToKey(r), "", "", 0});
    auto txn = etcd_.Txn({{ResvKey(id), "", EtcdCompare::Target::kModRevision,
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

Result<std::vector<Reservation>, std::string> ClusterAdmission::List(
    const std::string& from) {
  const std::string pre = prefix_ + "resv/" + (from.empty() ? "" : from + "/");
  auto range = etcd_.Range(pre, EtcdPrefixEnd(pre));
  if (!range.ok())
    return Err{range.error()};
  std::vector<Reservation> out;
  out.reserve(range.value().kvs.size());
  for (const EtcdKv& kv : range.value().kvs) {
    auto r = ReservationFromKv(kv);
    if (!r.ok()) {
      Ignore(kv.key, "is not a reservation: left out");
      continue;
    }
    if (kv.key != ResvKey(r.value().id) ||
        r.value().from != FromOf(r.value().id)) {
      Ignore(kv.key, "holds reservation " + r.value().id + " of \"" +
                         r.value().from +
                         "\", which that host keeps elsewhere: left out");
      continue;
    }
    out.push_back(std::move(r).value());
  }
  return out;
}

Result<std::vector<ResourceUse>, std::string> ClusterAdmission::Use() {
  auto held = ReadHoldings("", "", "");
  if (!held.ok())
    return Err{held.error()};
  const Holdings& h = held.value();
  std::vector<ResourceUse> out;
  out.reserve(topology_.resources().size());
  for (size_t i = 0; i < topology_.resources().size(); i++) {
    const Resource& r = topology_.resources()[i];
    out.push_back({&r, topology_.Reservable(r), h.reserved[i], h.count[i]});
  }
  return out;
}

Result<ClusterAdmission::Holdings, std::string> ClusterAdmission::ReadHoldings(
    const std::string& own_from, const std::string& own,
    const std::string& own_job) {
  const size_t n = topology_.resources().size();
  Holdings h{std::vector<uint64_t>(n, 0), std::vector<size_t>(n, 0), {}, 0, 0};
  const std::string pre = prefix_ + "use/";
  auto range = etcd_.Range(pre, EtcdPrefixEnd(pre));
  if (!range.ok())
    return Err{range.error()};
  h.use_revision = range.value().revision;
  for (const EtcdKv& kv : range.value().kvs) {
    const auto u = Counted(kv);
    if (!u || (!own.empty() && kv.key == UseKey(own_from, u->resource, own)))
      continue;
    const auto it = resource_index_.find(u->resource);
    if (it == resource_index_.end())
      continue;  // a resource the topology no longer has
    h.reserved[it->second] = SatAdd(h.reserved[it->second], Rate(kv.value));
    h.count[it->second]++;
  }
  auto jobs = ReadJobs(&h.job_revision);
  if (!jobs.ok())
    return Err{jobs.error()};
  for (JobReservation& j : jobs.value()) {
    if (own_job.empty() || j.leader + "/" + j.name != own_job) {
      const std::vector<uint64_t> charges = JobCharges(j);
      for (size_t i = 0; i < n; i++) {
        if (charges[i] == 0)
          continue;
        h.reserved[i] = SatAdd(h.reserved[i], charges[i]);
        h.count[i]++;
      }
    }
    h.jobs.push_back(std::move(j));
  }
  return h;
}

Result<uint64_t, std::string> ClusterAdmission::Held(
    const std::string& owner, const std::string& own_from,
    const std::string& own, const std::vector<JobReservation>& jobs,
    const std::string& own_job, int64_t* revision) {
  const std::string pre = prefix_ + "user/";
  auto range = etcd_.Range(pre, EtcdPrefixEnd(pre));
  if (!range.ok())
    return Err{range.error()};
  *revision = range.value().revision;
  uint64_t held = 0;
  for (const EtcdKv& kv : range.value().kvs) {
    const auto p = SplitKey(std::string_view(kv.key).substr(pre.size()));
    if (!p || p->middle != owner)
      continue;
    if ((own.empty() || kv.key != UserKey(own_from, owner, own)) && Counts(kv))
      held = SatAdd(held, Rate(kv.value));
  }
  for (const JobReservation& j : jobs)
    if (j.owner == owner && j.leader + "/" + j.name != own_job)
      held = SatAdd(held, SatMul(j.rate, j.flows()));
  return held;
}

}  // namespace parq::parqd
