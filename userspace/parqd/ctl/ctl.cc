// SPDX-License-Identifier: GPL-2.0

#include "ctl/ctl.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "admission/admission_client.h"
#include "admission/admission_socket.h"
#include "admission/cluster_admission.h"
#include "admission/etcd.h"
#include "admission/topology.h"
#include "base/dscp.h"
#include "config/config.h"
#include "netlink/qdisc_json.h"
#include "proto/key.h"

namespace parq::parqd {

namespace {

using nlohmann::json;

int Fail(const CtlArgs& a, std::ostream& out, std::ostream& err,
         const std::string& what, int error) {
  if (a.json) {
    json j = {{"ok", false}, {"error", what}};
    if (error)
      j["errno"] = error;
    out << j.dump() << "\n";
  } else {
    err << "parqctl: " << what << "\n";
  }
  return 1;
}

int Ok(const CtlArgs& a, std::ostream& out) {
  if (a.json)
    out << json{{"ok", true}}.dump() << "\n";
  return 0;
}

void Flatten(const json& j, const std::string& prefix, std::ostream& o) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items())
      Flatten(v, prefix.empty() ? k : prefix + "." + k, o);
  } else {
    o << "  " << std::left << std::setw(28) << prefix << " "
      << (j.is_string() ? j.get<std::string>() : j.dump()) << "\n";
  }
}

// For people: exact when short ("2ms"), else three decimals ("8.774s").
std::string Human(uint64_t ns) {
  std::string exact = FormatDuration(ns);
  if (exact.size() <= 7)
    return exact;
  char buf[32];
  if (ns >= 1'000'000'000)
    std::snprintf(buf, sizeof(buf), "%.3fs", static_cast<double>(ns) / 1e9);
  else if (ns >= 1'000'000)
    std::snprintf(buf, sizeof(buf), "%.3fms", static_cast<double>(ns) / 1e6);
  else
    std::snprintf(buf, sizeof(buf), "%.3fus", static_cast<double>(ns) / 1e3);
  return buf;
}

json ResourceJson(const Topology& t, const Resource& r) {
  return {{"id", r.id},
          {"name", r.name},
          {"capacity_bps", r.capacity},
          {"reservable_bps", t.Reservable(r)}};
}

void ResourceLine(const Topology& t, const Resource& r, std::ostream& out) {
  out << "  " << std::left << std::setw(32) << r.name << " " << std::setw(10)
      << FormatRate(r.capacity) << " reservable " << FormatRate(t.Reservable(r))
      << "\n";
}

int TopologyCheck(const CtlArgs& a, const Topology& t, std::ostream& out) {
  const char* ec = t.equal_cost() == EqualCost::kFirst ? "first" : "charge-all";
  std::vector<const Resource*> links;
  for (const Resource& r : t.resources())
    if (r.kind == Resource::Kind::kLink)
      links.push_back(&r);
  if (a.json) {
    json j = {{"file", a.topology},
              {"reservable_percent", t.reservable_percent()},
              {"equal_cost", ec},
              {"hosts", json::array()},
              {"switches", t.switches()},
              {"links", json::array()}};
    for (const TopologyHost& h : t.hosts()) {
      json addrs = json::array();
      for (const Address& ad : h.addresses)
        addrs.push_back(ad.ToString());
      j["hosts"].push_back(
          {{"name", h.name}, {"addresses", addrs}, {"nic_bps", h.nic}});
    }
    for (const Resource* r : links)
      j["links"].push_back(ResourceJson(t, *r));
    out << j.dump() << "\n";
    return 0;
  }
  out << a.topology << ": " << t.hosts().size() << " hosts, "
      << t.switches().size() << " switches, " << links.size()
      << " links; reservations may take " << t.reservable_percent()
      << "% of each capacity; equal-cost paths: " << ec << "\n";
  for (const TopologyHost& h : t.hosts()) {
    out << "  host " << std::left << std::setw(27) << h.name << " "
        << std::setw(10) << FormatRate(h.nic);
    for (size_t i = 0; i < h.addresses.size(); i++)
      out << (i ? ", " : " ") << h.addresses[i].ToString();
    out << "\n";
  }
  for (const Resource* r : links)
    ResourceLine(t, *r, out);
  return 0;
}

// `s` in single quotes, for sh.
std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int TopologyEtcdRoles(const CtlArgs& a, const Topology& t, std::ostream& out) {
  const std::string dir = a.passwords.empty() || a.passwords.back() != '/'
                              ? a.passwords + "/"
                              : a.passwords;
  out << "#!/bin/sh\n"
         "# etcd users and roles for parq on the hosts of "
      << a.topology
      << ":\n"
         "# each reads everything under "
      << a.etcd_prefix
      << " and writes only its own keys\n"
         "# (Documentation/admission.md, \"etcd roles\").  Run it where "
         "etcdctl reaches\n"
         "# the cluster as root (ETCDCTL_ENDPOINTS, ETCDCTL_CACERT, "
         "ETCDCTL_CERT,\n"
         "# ETCDCTL_KEY, and ETCDCTL_USER once authentication is on); run "
         "it again\n"
         "# when hosts are added.  A host's password is the first line of "
         "the file\n"
         "# named as the host in "
      << dir
      << ".\n"
         "set -e\n"
         "role() { etcdctl role get \"$1\" >/dev/null 2>&1 || etcdctl role "
         "add \"$1\"; }\n"
         "user() { etcdctl user get \"$1\" >/dev/null 2>&1 ||\n"
         "\tetcdctl user add \"$1\" --interactive=false <\"$2\"; }\n";
  for (const TopologyHost& h : t.hosts()) {
    const EtcdRole role = HostRole(h.name, a.etcd_prefix);
    out << "\nrole " << role.name << "\n";
    for (const EtcdPermission& p : role.permissions)
      out << "etcdctl role grant-permission " << role.name
          << (p.write ? " readwrite " : " read ") << ShellQuote(p.key)
          << " --prefix\n";
    out << "user " << role.name << " " << ShellQuote(dir + h.name) << "\n"
        << "etcdctl user grant-role " << role.name << " " << role.name << "\n";
  }
  return 0;
}

int TopologyPath(const CtlArgs& a, const Topology& t, std::ostream& out,
                 std::ostream& err) {
  std::optional<size_t> ends[2];
  const std::string* names[2] = {&a.from, &a.to};
  for (int i = 0; i < 2; i++) {
    ends[i] = t.FindHost(*names[i]);
    if (!ends[i]) {
      std::string hosts;
      for (const TopologyHost& h : t.hosts())
        hosts += (hosts.empty() ? "" : ", ") + h.name;
      return Fail(a, out, err,
                  a.topology + " has no host named or addressed \"" +
                      *names[i] + "\" (hosts: " + hosts + ")",
                  0);
    }
  }
  if (*ends[0] == *ends[1])
    return Fail(a, out, err,
                "FROM and TO are the same host, " + t.hosts()[*ends[0]].name +
                    ": nothing to reserve",
                0);
  const std::vector<size_t> path = t.Path(*ends[0], *ends[1]);
  const std::string& from = t.hosts()[*ends[0]].name;
  const std::string& to = t.hosts()[*ends[1]].name;
  if (a.json) {
    json j = {{"from", from}, {"to", to}, {"resources", json::array()}};
    for (size_t i : path)
      j["resources"].push_back(ResourceJson(t, t.resources()[i]));
    out << j.dump() << "\n";
    return 0;
  }
  out << from << " -> " << to << ": a reservation charges " << path.size()
      << " resources\n";
  for (size_t i : path)
    ResourceLine(t, t.resources()[i], out);
  return 0;
}

int Links(const CtlArgs& a, ClusterAdmission& adm, std::ostream& out,
          std::ostream& err) {
  auto use = adm.Use();
  if (!use.ok())
    return Fail(a, out, err, use.error(), 0);
  if (a.json) {
    json j = json::array();
    for (const ResourceUse& u : use.value())
      j.push_back({{"id", u.resource->id},
                   {"name", u.resource->name},
                   {"capacity_bps", u.resource->capacity},
                   {"reservable_bps", u.reservable},
                   {"reserved_bps", u.reserved},
                   {"best_effort_bps", u.resource->capacity - u.reserved},
                   {"reservations", u.reservations}});
    out << j.dump() << "\n";
    return 0;
  }
  out << std::left << std::setw(32) << "resource"
      << " " << std::setw(10) << "capacity"
      << " " << std::setw(10) << "reservable"
      << " " << std::setw(10) << "reserved"
      << " " << std::setw(11) << "best effort"
      << " reservations\n";
  for (const ResourceUse& u : use.value())
    out << std::setw(32) << u.resource->name << " " << std::setw(10)
        << FormatRate(u.resource->capacity) << " " << std::setw(10)
        << FormatRate(u.reservable) << " " << std::setw(10)
        << (u.reserved ? FormatRate(u.reserved) : "0") << " " << std::setw(11)
        << FormatRate(u.resource->capacity - u.reserved) << " "
        << u.reservations << "\n";
  return 0;
}

// Reservations as ReservationJson() writes them: that JSON with --json,
// else a line each with its resources below.
void PrintReservations(const CtlArgs& a, const json& list, std::ostream& out) {
  if (a.json) {
    out << list.dump() << "\n";
    return;
  }
  for (const json& r : list) {
    out << r.value("id", "") << ": " << r.value("from", "") << " -> "
        << r.value("to", "") << " "
        << FormatRate(r.value("rate_bps", uint64_t{0})) << ", owner "
        << r.value("owner", "");
    if (!r.value("match", "").empty())
      out << ", match " << r.value("match", "");
    const uint64_t asked = r.value("asked_bps", uint64_t{0});
    if (asked && asked != r.value("rate_bps", uint64_t{0}))
      out << ", asked " << FormatRate(asked);
    out << "\n";
    // What it carried at parqd's last check (this host's reservations).
    if (r.contains("use") && r["use"].is_object()) {
      const json& u = r["use"];
      char shares[96];
      std::snprintf(shares, sizeof(shares), "choked %.1f%%, unused %.1f%%",
                    100 * u.value("choked", 0.0), 100 * u.value("unused", 0.0));
      out << "  sent " << FormatRate(u.value("sent_bps", uint64_t{0})) << ", "
          << shares << " over the last "
          << u.value("window_ns", uint64_t{0}) / 1'000'000'000 << " s\n";
    }
    for (const json& id : r.value("resources", json::array()))
      out << "  " << id.get<std::string>() << "\n";
  }
}

int Reservations(const CtlArgs& a, ClusterAdmission& adm, std::ostream& out,
                 std::ostream& err) {
  auto list = adm.List();
  if (!list.ok())
    return Fail(a, out, err, list.error(), 0);
  json j = json::array();
  for (const Reservation& r : list.value())
    j.push_back(ReservationJson(r));
  PrintReservations(a, j, out);
  return 0;
}

// What parqd's admission socket answers, printed; its refusal is the error.
int Ask(const CtlArgs& a, const json& request, std::ostream& out,
        std::ostream& err) {
  auto r = AdmissionCall(a.socket, request);
  if (!r.ok())
    return Fail(a, out, err, r.error().why, 0);
  const json& reply = r.value();
  if (!reply.value("ok", false))
    return Fail(a, out, err,
                reply.contains("error") && reply["error"].is_string()
                    ? reply["error"].get<std::string>()
                    : std::string("parqd refused without a reason"),
                0);
  if (reply.contains("reservations")) {
    if (!reply.value("synced", true))
      err << "parqctl: parqd's view is not in sync with etcd: "
          << reply.value("sync_error", std::string("no reason given")) << "\n";
    PrintReservations(a, reply["reservations"], out);
    return 0;
  }
  if (a.json) {
    out << reply.dump() << "\n";
    return 0;
  }
  if (reply.contains("job") && reply["job"].is_object()) {
    // What parqd wrote, read without throwing on a field of another type.
    json j = reply["job"];
    for (const char* f : {"job", "leader", "owner", "match"})
      if (j.contains(f) && !j[f].is_string())
        j.erase(f);
    for (const char* f : {"flows", "rate_bps"})
      if (j.contains(f) && !j[f].is_number_unsigned())
        j.erase(f);
    for (const char* f : {"hosts", "joined"})
      if (j.contains(f) && !j[f].is_array())
        j.erase(f);
    const json hosts = j.value("hosts", json::array());
    const json joined = j.value("joined", json::array());
    out << "job " << j.value("job", "") << ": " << j.value("flows", 0)
        << " flows of " << FormatRate(j.value("rate_bps", uint64_t{0}))
        << " among " << hosts.size() << " hosts, leader "
        << j.value("leader", "") << ", owner " << j.value("owner", "");
    if (!j.value("match", "").empty())
      out << ", match " << j.value("match", "");
    out << "\n";
    for (const json& h : hosts) {
      if (!h.is_string())
        continue;
      const bool in =
          std::find(joined.begin(), joined.end(), h) != joined.end();
      out << "  " << h.get<std::string>()
          << (in ? "" : "  (has not joined: its flows are not reserved)")
          << "\n";
    }
    return 0;
  }
  if (reply.contains("joined") || reply.contains("left"))
    return 0;
  const json& res = reply["reservation"];
  if (a.cmd == CtlArgs::Cmd::kReserve)
    out << res.value("id", "") << "\n";
  else if (a.cmd == CtlArgs::Cmd::kChange)
    out << res.value("id", "") << ": "
        << FormatRate(res.value("rate_bps", uint64_t{0})) << "\n";
  return 0;
}

// Writes `text` to `path` with mode 0600: a temporary file beside it,
// then rename(), so that a reader never sees half a keys file.
Result<std::monostate, std::string> WriteSecret(const std::string& path,
                                                const std::string& text) {
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = mkstemp(tmp.data());  // mode 0600
  if (fd < 0)
    return Err{path +
               ": cannot create a file beside it: " + std::strerror(errno)};
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      break;
    done += static_cast<size_t>(n);
  }
  const int saved = errno;
  const bool ok = done == text.size() && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(ok ? errno : saved);
    unlink(tmp.c_str());
    return Err{path + ": cannot write it: " + why};
  }
  return std::monostate{};
}

int KeyDerive(const CtlArgs& a, std::ostream& out, std::ostream& err) {
  auto secret = Key::FromFile(a.secret_file);
  if (!secret.ok())
    return Fail(a, out, err, secret.error(), 0);
  auto text = PairKeysText(secret.value(), a.key_id, a.node, a.peers);
  if (!text.ok())
    return Fail(a, out, err, text.error(), 0);
  if (a.output.empty()) {
    out << text.value().text;
    return 0;
  }
  if (auto w = WriteSecret(a.output, text.value().text); !w.ok())
    return Fail(a, out, err, w.error(), 0);
  return Ok(a, out);
}

}  // namespace

std::string FormatEntries(const std::vector<KernelEntry>& entries,
                          bool as_json) {
  if (as_json) {
    json arr = json::array();
    for (const KernelEntry& e : entries)
      arr.push_back({{"addr", e.address.ToString()},
                     {"credit", e.credit},
                     {"epoch_ns", e.epoch_ns},
                     {"lease_ns", e.lease_ns},
                     {"used", e.used},
                     {"passed", e.passed},
                     {"held", e.held}});
    return arr.dump() + "\n";
  }
  std::ostringstream o;
  o << std::left << std::setw(40) << "ADDRESS" << std::right << std::setw(11)
    << "CREDIT" << std::setw(11) << "EPOCH" << std::setw(12) << "LEASE-LEFT"
    << std::setw(11) << "USED" << std::setw(12) << "PASSED" << std::setw(12)
    << "HELD"
    << "\n";
  for (const KernelEntry& e : entries)
    o << std::left << std::setw(40) << e.address.ToString() << std::right
      << std::setw(11) << e.credit << std::setw(11) << Human(e.epoch_ns)
      << std::setw(12) << Human(e.lease_ns) << std::setw(11) << e.used
      << std::setw(12) << e.passed << std::setw(12) << e.held << "\n";
  return o.str();
}

namespace {

// The names of the DSCPs of `mask` (bit n: DSCP n), lowest first.
std::vector<std::string> DscpNames(uint64_t mask) {
  std::vector<std::string> names;
  for (uint8_t d = 0; d < 64; d++)
    if (mask & (uint64_t{1} << d))
      names.push_back(DscpName(d));
  return names;
}

}  // namespace

std::string FormatMonitor(const MonitorState& s,
                          const std::vector<PeerSample>& sources,
                          bool as_json) {
  const std::vector<std::string> dscps = DscpNames(s.dscp_mask);
  auto age = [](const std::optional<uint64_t>& a) -> json {
    return a ? json(*a) : json(nullptr);
  };
  if (as_json) {
    json arr = json::array();
    for (const PeerSample& p : sources)
      arr.push_back({{"addr", p.address.ToString()},
                     {"par_packets", p.par_packets},
                     {"par_bytes", p.par_bytes},
                     {"par_age_ns", age(p.par_age_ns)},
                     {"loc_packets", p.loc_packets},
                     {"loc_bytes", p.loc_bytes},
                     {"loc_age_ns", age(p.loc_age_ns)}});
    const json j = {{"enabled", s.enabled},
                    {"size", s.size},
                    {"dscp", dscps},
                    {"hold_ns", s.hold_ns},
                    {"active", s.active},
                    {"sources", s.sources},
                    {"evicted", s.evicted},
                    {"events", s.events},
                    {"uncounted", s.uncounted},
                    {"peers", s.peers},
                    {"foreign", s.foreign},
                    {"report_local", s.report_local},
                    {"local_events", s.local_events},
                    {"min_bytes", s.min_bytes},
                    {"below", s.below},
                    {"table", arr}};
    return j.dump() + "\n";
  }
  std::string list;
  for (const std::string& n : dscps)
    list += (list.empty() ? "" : ",") + n;
  std::ostringstream o;
  o << "monitor: " << (s.enabled ? "enabled" : "disabled") << ", "
    << (s.active ? "parallel traffic arriving" : "no parallel traffic")
    << "\nparallel DSCPs " << (list.empty() ? "none" : list) << ", hold "
    << Human(s.hold_ns) << ", " << s.sources << " of " << s.size
    << " sources kept\ncounting "
    << (s.peers ? std::to_string(s.peers) + " peer address(es)"
                : std::string("every source"))
    << "; foreign " << s.foreign << ", uncounted " << s.uncounted
    << ", evicted " << s.evicted << ", events " << s.events;
  if (s.min_bytes)
    o << "\nparallel traffic from " << s.min_bytes
      << " bytes in a hold; packets below it " << s.below;
  if (s.report_local)
    o << ", local-sender events " << s.local_events;
  o << "\n";
  if (sources.empty())
    return o.str();
  auto text_age = [](const std::optional<uint64_t>& a) {
    return a ? Human(*a) : std::string("-");
  };
  o << "\n"
    << std::left << std::setw(40) << "SOURCE" << std::right << std::setw(12)
    << "PAR-PKTS" << std::setw(14) << "PAR-BYTES" << std::setw(10) << "PAR-AGE"
    << std::setw(12) << "LOC-PKTS" << std::setw(14) << "LOC-BYTES"
    << std::setw(10) << "LOC-AGE"
    << "\n";
  for (const PeerSample& p : sources)
    o << std::left << std::setw(40) << p.address.ToString() << std::right
      << std::setw(12) << p.par_packets << std::setw(14) << p.par_bytes
      << std::setw(10) << text_age(p.par_age_ns) << std::setw(12)
      << p.loc_packets << std::setw(14) << p.loc_bytes << std::setw(10)
      << text_age(p.loc_age_ns) << "\n";
  return o.str();
}

Result<Output, std::string> FormatPeers(const json& reply, bool as_json) {
  if (!reply.is_object() || !reply.contains("peers") ||
      !reply["peers"].is_array())
    return Err{std::string("parqd's status reply has no list of peers")};
  if (as_json)
    return Output{reply.dump() + "\n"};
  const bool receiver = reply.value("receiver", false);
  const json& peers = reply["peers"];
  std::ostringstream o;
  o << "node " << reply.value("node", uint64_t{0}) << ": " << peers.size()
    << " peer(s), receiving role " << (receiver ? "on" : "off") << "\n";
  if (peers.empty())
    return Output{o.str()};
  // "grant 12ms ago", or "-".
  auto last = [](const json& l) -> std::string {
    if (!l.is_object())
      return "-";
    return l.value("type", std::string("?")) + " " +
           Human(l.value("age_ns", uint64_t{0})) + " ago";
  };
  o << "\n"
    << std::left << std::setw(8) << "PEER" << std::setw(12) << "NAME"
    << std::right << std::setw(10) << "ACCEPTED"
    << "  " << std::left << std::setw(20) << "LAST-ACCEPTED" << std::setw(28)
    << "HELD";
  if (receiver)
    o << std::setw(9) << "GRANTED" << std::setw(20) << "LAST-SENT";
  o << "DROPPED\n";
  for (const json& p : peers) {
    const json name = p.value("name", json(nullptr));
    std::string held = "-";
    if (const json h = p.value("held", json::array());
        h.is_array() && !h.empty())
      held = std::to_string(h[0].value("credit", uint64_t{0})) + " B/" +
             Human(h[0].value("epoch_ns", uint64_t{0})) + " for " +
             Human(h[0].value("expires_in_ns", uint64_t{0}));
    std::string dropped;
    const json drops = p.value("dropped", json::object());
    for (const auto& [reason, n] : drops.items())
      if (n.is_number_unsigned() && n.get<uint64_t>() > 0)
        dropped += (dropped.empty() ? "" : ", ") + reason + " " + n.dump();
    o << std::left << std::setw(8) << p.value("id", uint64_t{0})
      << std::setw(12) << (name.is_string() ? name.get<std::string>() : "-")
      << std::right << std::setw(10) << p.value("accepted", uint64_t{0}) << "  "
      << std::left << std::setw(20)
      << last(p.value("last_accepted", json(nullptr))) << std::setw(28) << held;
    if (receiver)
      o << std::setw(9) << (p.value("granted", false) ? "yes" : "no")
        << std::setw(20) << last(p.value("last_sent", json(nullptr)));
    o << (dropped.empty() ? "-" : dropped) << "\n";
  }
  return Output{o.str()};
}

Result<Output, std::string> FormatQdisc(const std::vector<TcObject>& qdiscs,
                                        const std::string& dev, bool as_json) {
  json parq = json::array();
  for (const TcObject& q : qdiscs)
    if (q.kind == "parq") {
      json s = QdiscJson(q);
      s["dev"] = dev;
      parq.push_back(std::move(s));
    }
  if (parq.empty())
    return Err{"no parq qdisc on " + dev + " (add one: tc qdisc add dev " +
               ShellWord(dev) + " root handle 1: parq)"};
  if (as_json)
    return Output{parq.dump() + "\n"};
  std::ostringstream o;
  for (const json& q : parq) {
    o << "parq " << q.value("handle", "?") << " dev " << dev
      << (q.contains("root") ? " root" : " parent " + q.value("parent", "?"))
      << "\n";
    json rest = q;
    for (const char* k : {"kind", "handle", "dev", "root", "parent"})
      rest.erase(k);
    Flatten(rest, "", o);
  }
  return Output{o.str()};
}

int RunCtl(const CtlArgs& a, const KernelOpener& open, std::ostream& out,
           std::ostream& err, const JobEnv& jobs,
           const MonitorOpener& open_monitor) {
  switch (a.cmd) {
    case CtlArgs::Cmd::kJobAdd:
      return JobAdd(jobs, a.job_path, a.json, out, err);
    case CtlArgs::Cmd::kJobDel:
      return JobDel(jobs, a.job_path, a.json, out, err);
    case CtlArgs::Cmd::kJobList:
      return JobList(jobs, a.json, out, err);
    case CtlArgs::Cmd::kJobSweep:
      return JobSweep(jobs, a.json, out, err);
    case CtlArgs::Cmd::kJobPolicy:
      return JobPolicySet(jobs, a.policy, a.json, out, err);
    case CtlArgs::Cmd::kNftRestore:
      return NftRestore(jobs, a.json, out, err);
    case CtlArgs::Cmd::kNftWatch:
      return NftWatch(jobs, out, err);
    case CtlArgs::Cmd::kReserve: {
      json req = {{"op", "reserve"}, {"rate", a.rate}, {"match", a.match}};
      if (a.hosts.empty())
        req["to"] = a.to;
      else
        req["hosts"] = a.hosts;
      if (!a.job.empty())
        req["job"] = a.job;
      if (a.min_rate)
        req["min_rate"] = a.min_rate;
      if (a.max_rate)
        req["max_rate"] = a.max_rate;
      return Ask(a, req, out, err);
    }
    case CtlArgs::Cmd::kChange:
      if (a.id.empty())
        return Ask(a, {{"op", "change"}, {"job", a.job}, {"rate", a.rate}}, out,
                   err);
      return Ask(a, {{"op", "change"}, {"id", a.id}, {"rate", a.rate}}, out,
                 err);
    case CtlArgs::Cmd::kJoin: {
      json req = {{"op", "join"}, {"job", a.job}, {"leader", a.leader}};
      if (a.rate)
        req["rate"] = a.rate;
      return Ask(a, req, out, err);
    }
    case CtlArgs::Cmd::kLeave:
      return Ask(a, {{"op", "leave"}, {"job", a.job}}, out, err);
    case CtlArgs::Cmd::kRelease:
      if (!a.job.empty())
        return Ask(a, {{"op", "release"}, {"job", a.job}}, out, err);
      return Ask(a, {{"op", "release"}, {"id", a.id}}, out, err);
    case CtlArgs::Cmd::kKeyDerive:
      return KeyDerive(a, out, err);
    case CtlArgs::Cmd::kReservations:
      if (!a.job.empty())
        return Ask(a, {{"op", "job"}, {"job", a.job}}, out, err);
      if (a.etcd.empty())
        return Ask(a, {{"op", a.incoming ? "incoming" : "list"}}, out, err);
      [[fallthrough]];
    case CtlArgs::Cmd::kTopologyCheck:
    case CtlArgs::Cmd::kTopologyPath:
    case CtlArgs::Cmd::kTopologyEtcdRoles:
    case CtlArgs::Cmd::kLinks: {
      auto t = Topology::Load(a.topology);
      if (!t.ok())
        return Fail(a, out, err, t.error(), 0);
      if (a.cmd == CtlArgs::Cmd::kTopologyCheck)
        return TopologyCheck(a, t.value(), out);
      if (a.cmd == CtlArgs::Cmd::kTopologyPath)
        return TopologyPath(a, t.value(), out, err);
      if (a.cmd == CtlArgs::Cmd::kTopologyEtcdRoles)
        return TopologyEtcdRoles(a, t.value(), out);
      EtcdClient etcd(a.etcd, std::chrono::seconds(5),
                      CurlPost(a.etcd_tls, nullptr, a.etcd_auth));
      // A use/ key left out of the sums is named on stderr.
      ClusterAdmission adm(t.value(), etcd, a.etcd_prefix,
                           [&err](int, const std::string& line) {
                             err << "parqctl: " << line << "\n";
                           });
      if (a.cmd == CtlArgs::Cmd::kLinks)
        return Links(a, adm, out, err);
      return Reservations(a, adm, out, err);
    }
    default:
      break;
  }
  if (a.cmd == CtlArgs::Cmd::kPeers) {
    auto r = SocketCall(
        a.status_socket, {{"op", "peers"}}, 5000,
        {"status socket", "is parqd running, with this status-socket?"});
    if (!r.ok())
      return Fail(a, out, err, r.error().why, 0);
    if (!r.value().value("ok", false))
      return Fail(a, out, err,
                  r.value().value("error", std::string("parqd refused")), 0);
    auto f = FormatPeers(r.value(), a.json);
    if (!f.ok())
      return Fail(a, out, err, f.error(), 0);
    out << f.value().text;
    return 0;
  }
  if (a.cmd == CtlArgs::Cmd::kMonitor) {
    if (!open_monitor)
      return Fail(a, out, err, "monitor: no kernel monitor here", ENOTSUP);
    auto m = open_monitor();
    if (!m.ok())
      return Fail(a, out, err, "monitor: " + m.error().Text(), m.error().error);
    auto s = m.value()->State();
    if (!s.ok())
      return Fail(a, out, err, "monitor: " + s.error().Text(), s.error().error);
    auto p = m.value()->Peers();
    if (!p.ok())
      return Fail(a, out, err, "monitor: " + p.error().Text(), p.error().error);
    out << FormatMonitor(s.value(), p.value(), a.json);
    return 0;
  }
  if (a.cmd == CtlArgs::Cmd::kQdiscShow) {
    auto qdiscs = RtnlTcLink(a.dev)->Qdiscs();
    if (!qdiscs.ok())
      return Fail(a, out, err, "qdisc show: " + qdiscs.error().Text(),
                  qdiscs.error().error);
    auto f = FormatQdisc(qdiscs.value(), a.dev, a.json);
    if (!f.ok())
      return Fail(a, out, err, f.error(), 0);
    out << f.value().text;
    return 0;
  }

  auto k = open();
  if (!k.ok())
    return Fail(a, out, err, k.error().Text(), k.error().error);
  KernelCreditTable& kernel = *k.value();

  switch (a.cmd) {
    case CtlArgs::Cmd::kCreditShow: {
      auto d = kernel.Dump();
      if (!d.ok())
        return Fail(a, out, err, "credit show: " + d.error().Text(),
                    d.error().error);
      out << FormatEntries(d.value(), a.json);
      return 0;
    }
    case CtlArgs::Cmd::kCreditSet: {
      CreditRequest r;
      r.op = CreditRequest::Op::kSet;
      r.address = a.address;
      r.credit = a.credit;
      r.epoch_ns = a.epoch_ns;
      r.lease_ns = a.lease_ns;
      if (auto e = kernel.Apply(r))
        return Fail(a, out, err,
                    "credit set " + a.address->ToString() + ": " + e->Text(),
                    e->error);
      return Ok(a, out);
    }
    case CtlArgs::Cmd::kCreditClear: {
      CreditRequest r;
      r.op = CreditRequest::Op::kDel;
      r.address = a.address;
      if (auto e = kernel.Apply(r))
        return Fail(a, out, err,
                    "credit clear" +
                        (a.address ? " " + a.address->ToString() : "") + ": " +
                        e->Text(),
                    e->error);
      return Ok(a, out);
    }
    default:
      break;
  }
  return 1;
}

}  // namespace parq::parqd
