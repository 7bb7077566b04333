// SPDX-License-Identifier: GPL-2.0

#include "config.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "grant.h"
#include "satmath.h"
#include "wire.h"

namespace parq::parqd {

namespace {

struct Unit {
  std::string_view name;
  uint64_t ns;
};
constexpr Unit kUnits[] = {
    {"ns", 1}, {"us", kNsPerUs}, {"ms", kNsPerMs}, {"s", kNsPerSec}};

constexpr const char* kDurationHint =
    "write a number with a unit, e.g. \"1ms\", \"250us\", \"1.5s\" (units: "
    "ns, us, ms, s)";

// Where a node is, for messages: "file:line:col" or "command line".
std::string Where(std::string_view source, const toml::node& n) {
  const auto& b = n.source().begin;
  if (b.line == 0)
    return "command line";
  return std::string(source) + ":" + std::to_string(b.line) + ":" +
         std::to_string(b.column);
}

std::string Quoted(std::string_view key) {
  return "'" + std::string(key) + "'";
}

// A string value (Result needs value and error types to differ).
struct Str {
  std::string text;
};

class Reader {
 public:
  Reader(std::string_view source) : source_(source) {}

  std::string Err(const toml::node& n, std::string_view key,
                  const std::string& what) const {
    return Where(source_, n) + ": " + Quoted(key) + ": " + what;
  }

  Result<Str, std::string> String(const toml::node& n,
                                  std::string_view key) const {
    if (const auto* s = n.as_string()) {
      if (s->get().empty())
        return parqd::Err{this->Err(n, key,
                                    "is empty; give a value or "
                                    "leave the key out")};
      return Str{s->get()};
    }
    return parqd::Err{this->Err(n, key, "must be a string (in double quotes)")};
  }

  Result<uint64_t, std::string> Integer(const toml::node& n,
                                        std::string_view key, int64_t min,
                                        int64_t max) const {
    const auto* i = n.as_integer();
    if (!i)
      return parqd::Err{this->Err(n, key, "must be an integer (no quotes)")};
    const int64_t v = i->get();
    if (v < min || v > max)
      return parqd::Err{
          this->Err(n, key,
                    "is " + std::to_string(v) + "; give a value from " +
                        std::to_string(min) + " to " + std::to_string(max))};
    return static_cast<uint64_t>(v);
  }

  Result<uint64_t, std::string> Duration(const toml::node& n,
                                         std::string_view key) const {
    const auto* s = n.as_string();
    if (!s)
      return parqd::Err{
          this->Err(n, key, std::string("must be a string: ") + kDurationHint)};
    auto d = ParseDuration(s->get());
    if (!d.ok())
      return parqd::Err{this->Err(n, key, d.error())};
    return d.value();
  }

  Result<Address, std::string> Addr(const toml::node& n,
                                    std::string_view key) const {
    auto s = String(n, key);
    if (!s.ok())
      return parqd::Err{s.error()};
    auto a = Address::Parse(s.value().text);
    if (!a)
      return parqd::Err{
          this->Err(n, key,
                    "\"" + s.value().text +
                        "\" is not an IPv4 or IPv6 address (write e.g. "
                        "\"192.0.2.1\" or \"2001:db8::1\", no port, no name)")};
    return *a;
  }

 private:
  std::string_view source_;
};

constexpr std::string_view kKeys[] = {
    "interface",    "listen-address", "listen-port", "node-id",  "key-file",
    "peer",         "threshold-recv", "epoch",       "hold",     "lease",
    "metrics-file", "metrics-period", "receiver",    "addresses"};

std::string KeyList() {
  std::string out;
  for (std::string_view k : kKeys) {
    if (!out.empty())
      out += ", ";
    out += k;
  }
  return out;
}

void ApplyOverrides(toml::table& t, const ConfigOverrides& o) {
  auto str = [&t](const char* k, const std::optional<std::string>& v) {
    if (v)
      t.insert_or_assign(k, *v);
  };
  auto num = [&t](const char* k, const std::optional<int64_t>& v) {
    if (v)
      t.insert_or_assign(k, *v);
  };
  str("interface", o.interface);
  str("listen-address", o.listen_address);
  str("key-file", o.key_file);
  str("metrics-file", o.metrics_file);
  str("epoch", o.epoch);
  str("hold", o.hold);
  str("metrics-period", o.metrics_period);
  num("listen-port", o.listen_port);
  num("node-id", o.node_id);
  num("threshold-recv", o.threshold_recv);
  num("lease", o.lease);
  if (o.receiver)
    t.insert_or_assign("receiver", *o.receiver);
}

Result<std::vector<PeerConfig>, std::string> Peers(const Reader& r,
                                                   std::string_view source,
                                                   const toml::node& n) {
  const auto* arr = n.as_array();
  if (!arr || !arr->is_array_of_tables())
    return Err{r.Err(n, "peer",
                     "must be a list of tables: write each peer as a "
                     "[[peer]] section with id and addresses")};
  std::vector<PeerConfig> peers;
  for (const toml::node& pn : *arr) {
    const toml::table& pt = *pn.as_table();
    PeerConfig p;
    bool have_id = false, have_addrs = false;
    for (auto&& [k, v] : pt) {
      const std::string_view key = k.str();
      if (key == "id") {
        auto id = r.Integer(v, "peer.id", 0, INT64_MAX);
        if (!id.ok())
          return Err{id.error()};
        p.id = id.value();
        have_id = true;
      } else if (key == "addresses") {
        const auto* aa = v.as_array();
        if (!aa || aa->empty())
          return Err{r.Err(v, "peer.addresses",
                           "must be a non-empty list of address strings, "
                           "e.g. [\"192.0.2.2\", \"2001:db8::2\"]")};
        for (const toml::node& an : *aa) {
          auto a = r.Addr(an, "peer.addresses");
          if (!a.ok())
            return Err{a.error()};
          p.addresses.push_back(a.value());
        }
        have_addrs = true;
      } else {
        return Err{r.Err(v, "peer." + std::string(key),
                         "unknown key in a [[peer]] section; the keys are "
                         "id and addresses")};
      }
    }
    const std::string at = Where(source, pn);
    if (!have_id)
      return Err{at +
                 ": a [[peer]] section has no 'id'; give the peer's "
                 "node id (an integer)"};
    if (!have_addrs)
      return Err{at + ": peer " + std::to_string(p.id) +
                 " has no 'addresses'; list the addresses it sends from "
                 "and grants for"};
    if (p.addresses.size() > wire::kMaxAddresses)
      return Err{at + ": peer " + std::to_string(p.id) + " has " +
                 std::to_string(p.addresses.size()) +
                 " addresses; a credit message carries at most " +
                 std::to_string(wire::kMaxAddresses)};
    peers.push_back(std::move(p));
  }
  return peers;
}

}  // namespace

Result<uint64_t, std::string> ParseDuration(std::string_view text) {
  const std::string shown = "\"" + std::string(text) + "\"";
  size_t i = 0;
  uint64_t whole = 0;
  bool digits = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; i++) {
    whole = SatAdd(SatMul(whole, 10), static_cast<uint64_t>(text[i] - '0'));
    digits = true;
  }
  std::string_view frac;
  if (i < text.size() && text[i] == '.') {
    const size_t start = ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9')
      i++;
    frac = text.substr(start, i - start);
    digits = digits || !frac.empty();
  }
  if (!digits)
    return Err{shown + " is not a duration; " + kDurationHint};
  const std::string_view unit = text.substr(i);
  const Unit* u = nullptr;
  for (const Unit& c : kUnits)
    if (c.name == unit)
      u = &c;
  if (!u)
    return Err{shown +
               (unit.empty() ? " has no unit; " : " has an unknown unit; ") +
               kDurationHint};
  uint64_t ns = SatMul(whole, u->ns);
  uint64_t scale = u->ns;
  for (char c : frac) {
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (scale % 10 != 0) {
      if (d != 0)
        return Err{shown + " is finer than a nanosecond; round it"};
      continue;
    }
    scale /= 10;
    ns = SatAdd(ns, d * scale);
  }
  if (ns == kU64Max)
    return Err{shown + " is too long"};
  return ns;
}

std::string FormatDuration(uint64_t ns) {
  for (auto it = std::rbegin(kUnits); it != std::rend(kUnits); ++it)
    if (ns != 0 && ns % it->ns == 0)
      return std::to_string(ns / it->ns) + std::string(it->name);
  return std::to_string(ns) + "ns";
}

Result<Config, std::string> ParseConfig(std::string_view text,
                                        std::string_view source,
                                        const ConfigOverrides& o) {
  toml::table t;
  try {
    t = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return Err{std::string(source) + ":" + std::to_string(b.line) + ":" +
               std::to_string(b.column) +
               ": not valid TOML: " + std::string(e.description())};
  }
  ApplyOverrides(t, o);

  const Reader r(source);
  Config c;
  bool have_interface = false, have_node = false, have_key = false,
       have_peers = false;
  for (auto&& [k, v] : t) {
    const std::string_view key = k.str();
    if (key == "interface") {
      auto s = r.String(v, key);
      if (!s.ok())
        return Err{s.error()};
      if (s.value().text.size() >= 16 ||
          s.value().text.find('/') != std::string::npos)
        return Err{r.Err(v, key,
                         "\"" + s.value().text +
                             "\" is not an interface name (at most "
                             "15 characters, no '/')")};
      c.interface = s.value().text;
      have_interface = true;
    } else if (key == "listen-address") {
      auto a = r.Addr(v, key);
      if (!a.ok())
        return Err{a.error()};
      c.listen_address = a.value().ToString();
    } else if (key == "listen-port") {
      auto p = r.Integer(v, key, 1, 65535);
      if (!p.ok())
        return Err{p.error()};
      c.listen_port = static_cast<uint16_t>(p.value());
    } else if (key == "node-id") {
      auto n = r.Integer(v, key, 0, INT64_MAX);
      if (!n.ok())
        return Err{n.error()};
      c.node_id = n.value();
      have_node = true;
    } else if (key == "key-file") {
      auto s = r.String(v, key);
      if (!s.ok())
        return Err{s.error()};
      c.key_file = s.value().text;
      have_key = true;
    } else if (key == "peer") {
      auto p = Peers(r, source, v);
      if (!p.ok())
        return Err{p.error()};
      c.peers = std::move(p.value());
      have_peers = true;
    } else if (key == "threshold-recv") {
      auto n = r.Integer(v, key, 0, INT64_MAX);
      if (!n.ok())
        return Err{n.error()};
      c.threshold_recv = n.value();
    } else if (key == "epoch" || key == "hold" || key == "metrics-period") {
      auto d = r.Duration(v, key);
      if (!d.ok())
        return Err{d.error()};
      if (key == "epoch") {
        if (d.value() < wire::kMinEpochUs * kNsPerUs ||
            d.value() > wire::kMaxEpochUs * kNsPerUs ||
            d.value() % kNsPerUs != 0)
          return Err{r.Err(v, key,
                           "is " + FormatDuration(d.value()) +
                               "; give a whole number of "
                               "microseconds from 100us to 60s")};
        c.epoch_ns = d.value();
      } else if (key == "hold") {
        if (d.value() == 0)
          return Err{r.Err(v, key, "must be longer than 0")};
        c.hold_ns = d.value();
      } else {
        if (d.value() < 10 * kNsPerMs || d.value() > 3600 * kNsPerSec)
          return Err{r.Err(v, key,
                           "is " + FormatDuration(d.value()) +
                               "; give a period from 10ms to 1h")};
        c.metrics_period_ns = d.value();
      }
    } else if (key == "lease") {
      auto n = r.Integer(v, key, 1, 65535);
      if (!n.ok())
        return Err{n.error()};
      c.lease = static_cast<uint16_t>(n.value());
    } else if (key == "receiver") {
      const auto* b = v.as_boolean();
      if (!b)
        return Err{r.Err(v, key, "must be true or false (no quotes)")};
      c.receiver = b->get();
    } else if (key == "addresses") {
      const auto* arr = v.as_array();
      if (!arr || arr->empty() || arr->size() > wire::kMaxAddresses)
        return Err{r.Err(v, key,
                         "must be a list of 1 to " +
                             std::to_string(wire::kMaxAddresses) +
                             " addresses, e.g. [\"192.0.2.1\"]")};
      std::set<Address> seen;
      for (const toml::node& an : *arr) {
        auto a = r.Addr(an, key);
        if (!a.ok())
          return Err{a.error()};
        if (!seen.insert(a.value()).second)
          return Err{r.Err(an, key, a.value().ToString() + " is listed twice")};
        c.addresses.push_back(a.value());
      }
    } else if (key == "metrics-file") {
      auto s = r.String(v, key);
      if (!s.ok())
        return Err{s.error()};
      if (s.value().text.back() == '/')
        return Err{r.Err(v, key,
                         "\"" + s.value().text +
                             "\" is a directory; give a file name "
                             "ending in .prom, e.g. "
                             "\"/var/lib/prometheus/node-exporter/"
                             "parqd.prom\"")};
      c.metrics_file = s.value().text;
    } else {
      return Err{r.Err(v, key,
                       "unknown key; the keys are " + KeyList() +
                           " (see Documentation/parqd.md)")};
    }
  }

  const std::string file(source);
  if (!have_interface)
    return Err{file +
               ": 'interface' is missing; name the interface parq "
               "runs on, e.g. interface = \"eth0\""};
  if (!have_node)
    return Err{file +
               ": 'node-id' is missing; give this host's node id "
               "(an integer unique in the cluster), e.g. node-id = 1"};
  if (!have_key)
    return Err{file +
               ": 'key-file' is missing; give the cluster key file, "
               "e.g. key-file = \"/etc/parq/cluster.key\" (make it "
               "with: openssl rand -hex 32)"};
  if (!have_peers || c.peers.empty())
    return Err{file +
               ": no [[peer]] section; list every host that may "
               "grant this host credit, with its id and addresses"};
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
  for (const Address& a : c.addresses)
    for (const PeerConfig& p : c.peers)
      if (std::find(p.addresses.begin(), p.addresses.end(), a) !=
          p.addresses.end())
        return Err{file + ": " + a.ToString() +
                   " is in 'addresses' and "
                   "is also an address of peer " +
                   std::to_string(p.id) + "; an address belongs to one host"};

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
  return ParseConfig(s.str(), path, o);
}

std::string ConfigKeysHelp() {
  return R"(Configuration file (TOML; Documentation/parqd.md).  Command-line options of
the same name replace the file's values.
  interface = "eth0"            required: the interface parq runs on
  node-id = 1                   required: this host's node id (0..2^63-1)
  key-file = "/etc/parq/cluster.key"
                                required: the cluster key (hex or raw, 32 to
                                1024 bytes, mode 0600)
  listen-address = "::"         UDP address credit messages arrive on ("::"
                                takes IPv4 too)
  listen-port = 7207            UDP port
  metrics-file = ""             Prometheus text file, rewritten every
                                metrics-period ("": none)
  metrics-period = "10s"        10ms..1h
  [[peer]]                      one section per host that grants this host
  id = 2                          credit: its node id, and the addresses it
  addresses = ["192.0.2.2"]       sends from and grants for (1..16)
Receiving role (grants credit to the peers sending this host local traffic
while parallel traffic arrives; peers listen on this host's listen-port):
  receiver = false              true: run the receiving role too
  addresses = ["192.0.2.1"]     this host's own addresses, what its grants
                                are for (1..16; required with receiver)
  threshold-recv = 0            bytes per epoch granted (0: stop)
  epoch = "1ms"                 epoch length, 100us..60s, whole microseconds
  hold = "10ms"                 how long traffic counts as arriving
  lease = 3                     epochs a grant lasts, 1..65535
Durations are numbers with a unit: ns, us, ms, s ("250us", "1.5s").)";
}

}  // namespace parq::parqd
