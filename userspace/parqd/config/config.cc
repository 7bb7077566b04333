// SPDX-License-Identifier: GPL-2.0

#include "config/config.h"
#include "config/config_sections.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <linux/parq.h>
#include <toml++/toml.h>

#include "admission/admission_client.h"
#include "admission/topology.h"
#include "base/dscp.h"
#include "base/satmath.h"
#include "base/toml_read.h"
#include "base/units.h"
#include "proto/grant.h"
#include "proto/wire.h"

namespace parq::parqd {

namespace {

using config_sections::Admission;
using config_sections::Hosts;
using config_sections::Peers;
using config_sections::ReadDuration;
using config_sections::Reader;
using config_sections::SelectHost;

// A DSCP as the file writes one: a name ("ef", "cs6") or 0..PARQ_DSCP_MAX.
std::optional<uint8_t> DscpOf(const toml::node& v) {
  if (const auto* s = v.as_string())
    return ParseDscp(s->get());
  if (const auto* i = v.as_integer();
      i && i->get() >= 0 && i->get() <= PARQ_DSCP_MAX)
    return static_cast<uint8_t>(i->get());
  return std::nullopt;
}

// Reads one key's value into the configuration; an error names the file,
// the line and the key, what is wrong and what to write instead.
using ReadFn = std::optional<std::string> (*)(const Reader& r,
                                              std::string_view source,
                                              const toml::node& v, Config& c);

// Every key, declared once: --help, the command-line options, parsing and
// the check of Documentation/parqd.md all come from this table.
struct ConfigKey {
  ConfigKeyInfo info;
  std::string_view missing;  // required keys: the message when absent
  ReadFn read;
};

#define PARQD_READ(body)                                            \
  [](const Reader& r, std::string_view source, const toml::node& v, \
     Config& c) -> std::optional<std::string> {                     \
    (void)r, (void)source, (void)v, (void)c;                        \
    body                                                            \
  }

const ConfigKey kKeys[] = {
    {{"interface", ConfigType::kString, false, true, true,
      "interface = \"eth0\"", "the interface parq runs on"},
     "'interface' is missing; name the interface parq runs on, e.g. "
     "interface = \"eth0\"",
     PARQD_READ({
       auto s = r.String(v, "interface");
       if (!s.ok())
         return s.error();
       if (auto e = InterfaceNameProblem(s.value().text))
         return r.Err(v, "interface", *e);
       c.interface = s.value().text;
       return std::nullopt;
     })},
    {{"node-id", ConfigType::kInteger, false, false, true, "node-id = 1",
      "this host's node id (0..2^63-1), unique in the cluster; with "
      "[[host]] sections, found by host name or address unless given"},
     {},
     PARQD_READ({
       auto n = r.Integer(v, "node-id", 0, INT64_MAX);
       if (!n.ok())
         return n.error();
       c.node_id = n.value();
       return std::nullopt;
     })},
    {{"key-file", ConfigType::kString, false, false, true,
      "key-file = \"/etc/parq/cluster.key\"",
      "the cluster key (hex, 32 to 1024 bytes, mode 0600 or 0640 "
      "root:parqd), shared by every host; this or keys-file"},
     {},
     PARQD_READ({
       auto s = r.String(v, "key-file");
       if (!s.ok())
         return s.error();
       c.key_file = s.value().text;
       return std::nullopt;
     })},
    {{"keys-file", ConfigType::kString, false, false, true,
      "keys-file = \"/etc/parq/pair.keys\"",
      "this host's pair keys, one per peer and key id (parqctl key derive; "
      "mode 0600 or 0640 root:parqd); this or key-file"},
     {},
     PARQD_READ({
       auto s = r.String(v, "keys-file");
       if (!s.ok())
         return s.error();
       c.keys_file = s.value().text;
       return std::nullopt;
     })},
    {{"control-dscp", ConfigType::kDscp, false, false, false,
      "control-dscp = \"cs6\"",
      "the DSCP of the credit messages parqd sends (a name such as "
      "\"cs6\" or 0..63; not one of parallel-dscp); the socket also "
      "gets priority 7 (TC_PRIO_CONTROL), which sch_parq serves ahead of "
      "data"},
     {},
     PARQD_READ({
       const std::optional<uint8_t> d = DscpOf(v);
       if (!d)
         return r.Err(v, "control-dscp",
                      "must be one DSCP, a name (\"cs0\"..\"cs7\", "
                      "\"af11\"..\"af43\", \"ef\") or a number 0..63, "
                      "e.g. \"cs6\"");
       c.control_dscp = *d;
       return std::nullopt;
     })},
    {{"key-id", ConfigType::kInteger, false, false, true, "key-id = 1",
      "the id of key-file's key in the messages, 1..4294967295 (a new key "
      "gets a new id: Documentation/parqd-protocol.md, Keys)"},
     {},
     PARQD_READ({
       auto n = r.Integer(v, "key-id", 1, UINT32_MAX);
       if (!n.ok())
         return n.error();
       c.key_id = static_cast<uint32_t>(n.value());
       return std::nullopt;
     })},
    {{"max-clock-skew", ConfigType::kDuration, false, false, true,
      "max-clock-skew = \"500ms\"",
      "how far a credit message's timestamp may be from this host's clock "
      "(clock synchronisation plus network delay), 1ms..60s"},
     {},
     PARQD_READ({
       uint64_t ns = 0;
       if (auto e = ReadDuration(r, v, "max-clock-skew", kNsPerMs,
                                 60 * kNsPerSec, "a skew from 1ms to 60s", ns))
         return e;
       c.max_clock_skew_ns = ns;
       return std::nullopt;
     })},
    {{"listen-address", ConfigType::kAddress, false, false, true,
      "listen-address = \"::\"",
      "UDP address credit messages arrive on (\"::\" takes IPv4 too)"},
     {},
     PARQD_READ({
       auto a = r.Addr(v, "listen-address");
       if (!a.ok())
         return a.error();
       c.listen_address = a.value().ToString();
       return std::nullopt;
     })},
    {{"listen-port", ConfigType::kInteger, false, false, true,
      "listen-port = 7207", "UDP port, 1..65535"},
     {},
     PARQD_READ({
       auto p = r.Integer(v, "listen-port", 1, 65535);
       if (!p.ok())
         return p.error();
       c.listen_port = static_cast<uint16_t>(p.value());
       return std::nullopt;
     })},
    {{"metrics-file", ConfigType::kString, false, false, true,
      "metrics-file = \"\"",
      "Prometheus text file, rewritten every metrics-period (\"\": none)"},
     {},
     PARQD_READ({
       // The default, "", is the only empty value allowed.
       if (const auto* e = v.as_string(); e && e->get().empty()) {
         c.metrics_file.clear();
         return std::nullopt;
       }
       auto s = r.String(v, "metrics-file");
       if (!s.ok())
         return s.error();
       if (s.value().text.back() == '/')
         return r.Err(v, "metrics-file",
                      "\"" + s.value().text +
                          "\" is a directory; give a file name ending in "
                          ".prom, e.g. \"/var/lib/prometheus/node-exporter/"
                          "parqd.prom\"");
       c.metrics_file = s.value().text;
       return std::nullopt;
     })},
    {{"metrics-period", ConfigType::kDuration, false, false, true,
      "metrics-period = \"10s\"", "10ms..1h"},
     {},
     PARQD_READ({
       return ReadDuration(r, v, "metrics-period", 10 * kNsPerMs,
                           3600 * kNsPerSec, "a period from 10ms to 1h",
                           c.metrics_period_ns);
     })},
    {{"status-socket", ConfigType::kString, false, false, true,
      "status-socket = \"/run/parqd/status.sock\"",
      "Unix socket that parqctl peers asks (\"\": none)"},
     {},
     PARQD_READ({
       if (const auto* e = v.as_string(); e && e->get().empty()) {
         c.status_socket.clear();
         return std::nullopt;
       }
       auto s = r.String(v, "status-socket");
       if (!s.ok())
         return s.error();
       sockaddr_un a;
       if (s.value().text.front() != '/' || !UnixSockaddr(s.value().text, &a))
         return r.Err(v, "status-socket",
                      "\"" + s.value().text +
                          "\" is not a socket path; give an absolute path "
                          "of at most " +
                          std::to_string(sizeof(a.sun_path) - 1) +
                          " characters, or \"\" for none");
       c.status_socket = s.value().text;
       return std::nullopt;
     })},
    {{"peer", ConfigType::kPeers, false, false, false,
      "[[peer]]\nid = 2\naddresses = [\"192.0.2.2\"]",
      "one section per host that grants this host credit: its node id, and "
      "the addresses it sends from and grants for (1..16); this or "
      "[[host]]"},
     {},
     PARQD_READ({
       auto p = Peers(r, source, v);
       if (!p.ok())
         return p.error();
       c.peers = std::move(p.value());
       return std::nullopt;
     })},
    {{"host", ConfigType::kHosts, false, false, false,
      "[[host]]\nid = 1\nname = \"node1\"\naddresses = [\"192.0.2.1\"]",
      "a cluster file, the same on every host: one section per host of the "
      "cluster, its node id, host name (optional) and addresses (1..16); "
      "this host finds its own by node-id, host name or address, and the "
      "others are its peers; this or [[peer]]"},
     {},
     PARQD_READ({
       auto h = Hosts(r, source, v);
       if (!h.ok())
         return h.error();
       c.hosts = std::move(h.value());
       return std::nullopt;
     })},
    {{"admission", ConfigType::kAdmission, false, false, false,
      "[admission]\netcd-endpoints = [\"http://10.0.0.5:2379\"]\n"
      "topology-file = \"/etc/parq/topology.toml\"",
      "the admission role: reservations admitted across the cluster on "
      "etcd, installed as reserved classes on this host "
      "(Documentation/admission.md)"},
     {},
     PARQD_READ({
       auto a = Admission(r, source, v);
       if (!a.ok())
         return a.error();
       c.admission = std::move(a.value());
       return std::nullopt;
     })},
    {{"receiver", ConfigType::kBoolean, true, false, true, "receiver = false",
      "true: run the receiving role too"},
     {},
     PARQD_READ({
       const auto* b = v.as_boolean();
       if (!b)
         return r.Err(v, "receiver", "must be true or false (no quotes)");
       c.receiver = b->get();
       return std::nullopt;
     })},
    {{"addresses", ConfigType::kAddresses, true, false, false,
      "addresses = [\"192.0.2.1\"]",
      "this host's own addresses, what its grants are for (1..16; required "
      "with receiver)"},
     {},
     PARQD_READ({
       const auto* arr = v.as_array();
       if (!arr || arr->empty() || arr->size() > wire::kMaxAddresses)
         return r.Err(v, "addresses",
                      "must be a list of 1 to " +
                          std::to_string(wire::kMaxAddresses) +
                          " addresses, e.g. [\"192.0.2.1\"]");
       std::set<Address> seen;
       for (const toml::node& an : *arr) {
         auto a = r.Addr(an, "addresses");
         if (!a.ok())
           return a.error();
         if (!seen.insert(a.value()).second)
           return r.Err(an, "addresses",
                        a.value().ToString() + " is listed twice");
         c.addresses.push_back(a.value());
       }
       return std::nullopt;
     })},
    {{"threshold-recv", ConfigType::kInteger, true, false, true,
      "threshold-recv = 0", "bytes per epoch each granted host gets at least"},
     {},
     PARQD_READ({
       auto n = r.Integer(v, "threshold-recv", 0, INT64_MAX);
       if (!n.ok())
         return n.error();
       c.threshold_recv = n.value();
       return std::nullopt;
     })},
    {{"local-floor", ConfigType::kInteger, true, false, true,
      "local-floor = 20",
      "percent of link-rate the local senders share while parallel "
      "traffic arrives (0: strict priority)"},
     {},
     PARQD_READ({
       auto n = r.Integer(v, "local-floor", 0, 100);
       if (!n.ok())
         return n.error();
       c.local_floor = static_cast<unsigned>(n.value());
       return std::nullopt;
     })},
    {{"link-rate", ConfigType::kInteger, true, false, true, "link-rate = 0",
      "bits/s of this host's link, for local-floor (0: the interface's "
      "speed)"},
     {},
     PARQD_READ({
       auto n = r.Integer(v, "link-rate", 0, INT64_MAX);
       if (!n.ok())
         return n.error();
       c.link_rate = n.value();
       return std::nullopt;
     })},
    {{"epoch", ConfigType::kDuration, true, false, true, "epoch = \"1ms\"",
      "epoch length, 100us..60s, whole microseconds"},
     {},
     PARQD_READ({
       uint64_t ns = 0;
       if (auto e = ReadDuration(
               r, v, "epoch", wire::kMinEpochUs * kNsPerUs,
               wire::kMaxEpochUs * kNsPerUs,
               "a whole number of microseconds from 100us to 60s", ns))
         return e;
       if (ns % kNsPerUs != 0)
         return r.Err(v, "epoch",
                      "is " + FormatDuration(ns) +
                          "; give a whole number of microseconds from "
                          "100us to 60s");
       c.epoch_ns = ns;
       return std::nullopt;
     })},
    {{"hold", ConfigType::kDuration, true, false, true, "hold = \"10ms\"",
      "how long traffic counts as arriving"},
     {},
     PARQD_READ({
       auto d = r.Duration(v, "hold");
       if (!d.ok())
         return d.error();
       if (d.value() == 0)
         return r.Err(v, "hold", "must be longer than 0");
       c.hold_ns = d.value();
       return std::nullopt;
     })},
    {{"parallel-min-bytes", ConfigType::kInteger, true, false, true,
      "parallel-min-bytes = 0",
      "parallel bytes that must arrive within one hold before parallel "
      "traffic counts as arriving (0: any parallel packet)"},
     {},
     PARQD_READ({
       auto n = r.Integer(v, "parallel-min-bytes", 0, UINT32_MAX);
       if (!n.ok())
         return n.error();
       c.parallel_min_bytes = static_cast<uint32_t>(n.value());
       return std::nullopt;
     })},
    {{"lease", ConfigType::kInteger, true, false, true, "lease = 49",
      "epochs a grant lasts, 1..65535"},
     {},
     PARQD_READ({
       auto n = r.Integer(v, "lease", 1, 65535);
       if (!n.ok())
         return n.error();
       c.lease = static_cast<uint16_t>(n.value());
       return std::nullopt;
     })},
    {{"parallel-dscp", ConfigType::kDscps, true, false, false,
      "parallel-dscp = [\"cs5\", \"ef\"]",
      "receiving role: the DSCPs the kernel's monitor counts as parallel "
      "traffic (names such as \"ef\", \"af41\", or 0..63; 1 to 64 of "
      "them); the senders' qdiscs' dscp-parallel and parqctl job's mark "
      "should agree"},
     {},
     PARQD_READ({
       const std::string want =
           "must be a list of 1 to 64 DSCPs, names (\"cs0\".."
           "\"cs7\", \"af11\"..\"af43\", \"ef\") or numbers 0..63, e.g. "
           "[\"cs5\", \"ef\"]";
       const auto* arr = v.as_array();
       if (!arr || arr->empty() || arr->size() > PARQ_DSCP_MAX + 1)
         return r.Err(v, "parallel-dscp", want);
       uint64_t mask = 0;
       for (const toml::node& dn : *arr) {
         const std::optional<uint8_t> d = DscpOf(dn);
         if (!d)
           return r.Err(dn, "parallel-dscp", want);
         if (mask & PARQ_DSCP_BIT(*d))
           return r.Err(dn, "parallel-dscp", DscpName(*d) + " is listed twice");
         mask |= PARQ_DSCP_BIT(*d);
       }
       c.parallel_dscp = mask;
       return std::nullopt;
     })},
};

#undef PARQD_READ

const ConfigKey* FindKey(std::string_view name) {
  for (const ConfigKey& k : kKeys)
    if (k.info.name == name)
      return &k;
  return nullptr;
}

std::string KeyList() {
  std::string out;
  for (const ConfigKey& k : kKeys) {
    if (!out.empty())
      out += ", ";
    out += k.info.name;
  }
  return out;
}

// A command-line value as the TOML value its key takes: an integer or a
// boolean when it reads as one, else a string, so that a wrong one gets
// the file's message ("must be an integer").
void ApplyOverrides(toml::table& t, const ConfigOverrides& o) {
  for (const auto& [name, text] : o.values) {
    const ConfigKey* k = FindKey(name);
    if (!k || !k->info.option)
      continue;  // the command line offers no such option
    int64_t n = 0;
    const char* end = text.data() + text.size();
    if (k->info.type == ConfigType::kInteger &&
        std::from_chars(text.data(), end, n).ptr == end && !text.empty())
      t.insert_or_assign(name, n);
    else if (k->info.type == ConfigType::kBoolean &&
             (text == "true" || text == "false"))
      t.insert_or_assign(name, text == "true");
    else
      t.insert_or_assign(name, text);
  }
}

// `text` in lines of at most `width` characters.
std::vector<std::string> Wrap(std::string_view text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string_view::npos)
      j = text.size();
    const std::string_view word = text.substr(i, j - i);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line.clear();
    }
    if (!line.empty())
      line += ' ';
    line += word;
    i = j + 1;
  }
  if (!line.empty())
    lines.push_back(line);
  return lines;
}

}  // namespace

std::optional<std::string> InterfaceNameProblem(std::string_view name) {
  // The kernel's isspace(): its ctype table also marks Latin-1's no-break
  // space.
  const auto bad = [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c == '/' || c == ':' || c == ' ' || (c >= '\t' && c <= '\r') ||
           c == 0xa0 || c == 0;
  };
  if (name.empty() || name.size() >= IFNAMSIZ || name == "." || name == ".." ||
      std::any_of(name.begin(), name.end(), bad)) {
    std::string shown;
    for (const char ch : name) {
      const auto c = static_cast<unsigned char>(ch);
      if (c < 0x20 || c == 0x7f) {
        char esc[8];
        std::snprintf(esc, sizeof(esc), "\\x%02x", c);
        shown += esc;
      } else {
        shown += ch;
      }
    }
    return "\"" + shown +
           "\" is not an interface name (1 to 15 bytes, not \".\" or "
           "\"..\", no '/', ':' or white space)";
  }
  return std::nullopt;
}

Result<Config, std::string> ParseConfig(std::string_view text,
                                        std::string_view source,
                                        const ConfigOverrides& o,
                                        const Identity* self) {
  auto parsed = ParseToml(text, source);
  if (!parsed.ok())
    return Err{parsed.error()};
  toml::table t = std::move(parsed.value().table);
  ApplyOverrides(t, o);

  const Reader r(source);
  Config c;
  std::set<std::string_view> seen;
  for (auto&& [k, v] : t) {
    const ConfigKey* key = FindKey(k.str());
    if (!key)
      return Err{r.Err(v, k.str(),
                       "unknown key; the keys are " + KeyList() +
                           " (see Documentation/parqd.md)")};
    if (auto e = key->read(r, source, v, c))
      return Err{*e};
    seen.insert(key->info.name);
  }

  const std::string file(source);
  for (const ConfigKey& k : kKeys)
    if (k.info.required && !seen.count(k.info.name))
      return Err{file + ": " + std::string(k.missing)};
  if (seen.count("peer") && seen.count("host"))
    return Err{file +
               ": give [[peer]] sections (this host's peers) or [[host]] "
               "sections (the whole cluster), not both"};
  if (seen.count("host")) {
    if (auto e = SelectHost(c, seen.count("node-id") > 0, self, file))
      return Err{*e};
  } else if (!seen.count("node-id")) {
    return Err{file +
               ": 'node-id' is missing; give this host's node id (an "
               "integer unique in the cluster), e.g. node-id = 1, or list "
               "the cluster in [[host]] sections"};
  } else if (!seen.count("peer")) {
    return Err{file +
               ": no [[peer]] section; list every host that may grant "
               "this host credit, with its id and addresses (or the whole "
               "cluster in [[host]] sections)"};
  }
  if (c.key_file.empty() == c.keys_file.empty())
    return Err{file + (c.key_file.empty()
                           ? ": give 'key-file', the cluster key (make it "
                             "with: openssl rand -hex 32), or 'keys-file', "
                             "this host's pair keys (make them with: parqctl "
                             "key derive)"
                           : ": give 'key-file' or 'keys-file', not both")};
  std::set<uint64_t> ids;
  for (const PeerConfig& p : c.peers) {
    if (!ids.insert(p.id).second)
      return Err{file + ": peer " + std::to_string(p.id) +
                 " is configured twice; merge its [[peer]] sections"};
    if (p.id == c.node_id)
      return Err{file + ": peer " + std::to_string(p.id) +
                 " has this host's own node-id; give each host its own id"};
  }

  if (c.receiver && c.addresses.empty())
    return Err{file +
               ": 'receiver' is true but 'addresses' is missing; "
               "list this host's own addresses (the destinations "
               "its grants are for, as its peers list them), e.g. "
               "addresses = [\"192.0.2.1\"]"};
  size_t peer_addresses = 0;
  for (const PeerConfig& p : c.peers)
    peer_addresses += p.addresses.size();
  if (c.receiver && peer_addresses > PARQ_MON_PEERS_MAX)
    return Err{file + ": the peers have " + std::to_string(peer_addresses) +
               " addresses; a receiver's monitor counts at most " +
               std::to_string(PARQ_MON_PEERS_MAX) + " peer addresses"};
  for (const Address& a : c.addresses)
    for (const PeerConfig& p : c.peers)
      if (std::find(p.addresses.begin(), p.addresses.end(), a) !=
          p.addresses.end())
        return Err{file + ": " + a.ToString() +
                   " is in 'addresses' and "
                   "is also an address of peer " +
                   std::to_string(p.id) + "; an address belongs to one host"};

  if (c.parallel_dscp & PARQ_DSCP_BIT(c.control_dscp))
    return Err{file + ": control-dscp " + DscpName(c.control_dscp) +
               " is one of parallel-dscp: the receivers' monitors would "
               "count the credit messages as parallel traffic; give the "
               "credit messages a DSCP of their own"};

  GrantPolicy policy{c.threshold_recv, c.hold_ns,
                     static_cast<uint32_t>(c.epoch_ns / kNsPerUs), c.lease};
  if (auto e = CheckPolicy(policy))
    return Err{file + ": " + *e};
  return c;
}

Result<Config, std::string> LoadConfig(const std::string& path,
                                       const ConfigOverrides& o) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Err{path + ": cannot open the configuration file: " +
               std::string(std::strerror(errno)) +
               "; give its path with --config (see Documentation/parqd.md "
               "for an example)"};
  std::ostringstream s;
  s << in.rdbuf();
  const Identity self = SystemIdentity();
  auto c = ParseConfig(s.str(), path, o, &self);
  if (c.ok())
    ResolveKeyPaths(c.value(), path, std::getenv("CREDENTIALS_DIRECTORY"));
  return c;
}

Identity SystemIdentity() {
  Identity id;
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) == 0)
    id.hostname = name.data();
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0)
    return id;
  for (const ifaddrs* i = list; i; i = i->ifa_next)
    if (i->ifa_addr)
      if (auto a = FromSockaddr(*i->ifa_addr))
        id.addresses.push_back(*a);
  freeifaddrs(list);
  return id;
}

void ResolveKeyPaths(Config& c, const std::string& config_path,
                     [[maybe_unused]] const char* credentials_dir) {
  const std::filesystem::path beside =
      std::filesystem::path(config_path).parent_path();
  // parqd's credit keys are always the files themselves: their owner and
  // mode are checked where an operator sets them, and SIGHUP rereads them
  // (a credential's copy hides the original's mode, and systemd 252 does
  // not refresh it on reload).
  for (std::string* p : {&c.key_file, &c.keys_file})
    if (!p->empty() && p->front() != '/')
      *p = (beside / *p).string();
}

std::vector<ConfigKeyInfo> ConfigKeys() {
  std::vector<ConfigKeyInfo> out;
  for (const ConfigKey& k : kKeys)
    out.push_back(k.info);
  return out;
}

std::string ConfigKeysHelp() {
  constexpr size_t kLeft = 30, kWidth = 80;
  std::string out =
      "Configuration file (TOML; Documentation/parqd.md).  Command-line "
      "options of\nthe same name replace the file's values.\n";
  bool receiving = false;
  for (const ConfigKey& k : kKeys) {
    if (k.info.receiving_role && !receiving) {
      receiving = true;
      out +=
          "Receiving role (grants credit to the peers sending this host "
          "local traffic\nwhile parallel traffic arrives; peers listen on "
          "this host's listen-port):\n";
    }
    std::vector<std::string> left;
    for (size_t i = 0, j; i <= k.info.example.size(); i = j + 1) {
      j = std::min(k.info.example.find('\n', i), k.info.example.size());
      left.push_back(std::string(k.info.example.substr(i, j - i)));
    }
    std::string help(k.info.help);
    if (k.info.required)
      help = "required: " + help;
    const std::vector<std::string> right = Wrap(help, kWidth - kLeft - 4);
    // Side by side when every line of the left column fits in it; else the
    // left column's lines alone, then the right column below them.
    const bool fits =
        std::all_of(left.begin(), left.end(),
                    [](const std::string& l) { return l.size() + 2 <= kLeft; });
    const size_t below = fits ? 0 : left.size();
    for (size_t i = 0; i < std::max(left.size(), right.size() + below); i++) {
      const std::string l = i < left.size() ? left[i] : "";
      out += "  " + l;
      if (i >= below && i - below < right.size())
        out += std::string(kLeft - l.size(), ' ') + right[i - below];
      out += '\n';
    }
  }
  out +=
      "Durations are numbers with a unit: ns, us, ms, s (\"250us\", "
      "\"1.5s\").";
  return out;
}

}  // namespace parq::parqd
