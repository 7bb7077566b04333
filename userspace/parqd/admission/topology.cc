// SPDX-License-Identifier: GPL-2.0

#include "admission/topology.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/toml_read.h"
#include "base/units.h"

namespace parq::parqd {

namespace {

// Largest first, for FormatRate.
constexpr Unit kRateUnits[] = {{"tbit", 1'000'000'000'000},
                               {"gbit", 1'000'000'000},
                               {"mbit", 1'000'000},
                               {"kbit", 1'000},
                               {"bit", 1}};

constexpr const char* kRateHint =
    "write a rate with a unit, e.g. \"10gbit\", \"2.5gbit\", \"100mbit\" "
    "(units: bit, kbit, mbit, gbit, tbit; decimal, as tc's)";

constexpr const char* kTopLevelKeys =
    "reservable, equal-cost, host, switch and link";

size_t LineOf(const toml::node& n) {
  return n.source().begin.line;
}

// Reads the sections of one array of tables ([[host]], [[switch]],
// [[link]]): each key through `read`, which returns an error or nothing.
template <typename Fn>
std::optional<std::string> ForEachSection(const TomlReader& r,
                                          const toml::node& n,
                                          std::string_view key,
                                          std::string_view example, Fn read) {
  const auto* arr = n.as_array();
  if (!arr || !arr->is_array_of_tables())
    return r.Err(n, key,
                 "must be a list of tables: write each as a [[" +
                     std::string(key) + "]] section, e.g. " +
                     std::string(example));
  for (const toml::node& sn : *arr)
    if (auto e = read(sn, *sn.as_table()))
      return e;
  return std::nullopt;
}

}  // namespace

bool ValidName(std::string_view name) {
  constexpr size_t kMaxName = 63;
  if (name.empty() || name.size() > kMaxName)
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

Result<uint64_t, std::string> ParseRate(std::string_view text) {
  auto bps =
      ParseWithUnit(text, kRateUnits, {"rate", kRateHint, "a bit per second"});
  if (!bps.ok())
    return bps;
  const std::string shown = "\"" + std::string(text) + "\"";
  if (bps.value() == 0)
    return Err{shown + " is 0; a capacity or rate must be positive"};
  if (bps.value() > static_cast<uint64_t>(INT64_MAX))
    return Err{shown + " is too large (at most 2^63-1 bit/s)"};
  return bps;
}

std::string FormatRate(uint64_t bps) {
  for (const Unit& u : kRateUnits)
    if (bps != 0 && bps % u.scale == 0)
      return std::to_string(bps / u.scale) + std::string(u.name);
  return std::to_string(bps) + "bit";
}

Result<Topology, std::string> Topology::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return Err{path + ": cannot read the topology file"};
  std::ostringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

Result<Topology, std::string> Topology::Parse(std::string_view text,
                                              std::string_view source) {
  auto doc = ParseToml(text, source);
  if (!doc.ok())
    return Err{doc.error()};
  const TomlReader r(source);
  const std::string file(source);
  Topology t;
  std::map<std::string, size_t, std::less<>> node_of;  // name -> node
  std::map<Address, std::string> address_owner;
  const toml::node* links_node = nullptr;

  // Names first (hosts and switches), links once every node is known.
  auto add_node = [&](const toml::node& at, std::string_view key,
                      const std::string& name,
                      bool is_host) -> std::optional<std::string> {
    if (!ValidName(name))
      return r.Err(at, key,
                   "\"" + name +
                       "\" is not a node name: 1 to 63 letters, digits, "
                       "'-', '_' or '.'");
    if (node_of.count(name))
      return r.Err(at, key,
                   "\"" + name +
                       "\" is defined twice; give every host and switch a "
                       "name of its own");
    node_of.emplace(name, t.nodes_.size());
    t.nodes_.push_back(Node{name, is_host, {}});
    return std::nullopt;
  };

  for (auto&& [k, v] : doc.value().table) {
    const std::string_view key = k.str();
    std::optional<std::string> e;
    if (key == "reservable") {
      auto p = r.Integer(v, "reservable", 1, 100);
      if (!p.ok())
        return Err{p.error() +
                   " (the percent of each capacity that reservations may "
                   "take)"};
      t.reservable_ = static_cast<unsigned>(p.value());
    } else if (key == "equal-cost") {
      const auto* s = v.as_string();
      if (s && s->get() == "charge-all")
        t.equal_cost_ = EqualCost::kChargeAll;
      else if (s && s->get() == "first")
        t.equal_cost_ = EqualCost::kFirst;
      else
        return Err{r.Err(v, "equal-cost",
                         "must be \"charge-all\" (every shortest path's "
                         "links) or \"first\" (the path of the links listed "
                         "first)")};
    } else if (key == "host") {
      e = ForEachSection(
          r, v, "host", "[[host]] name = \"n1\" nic = \"10gbit\"",
          [&](const toml::node& sn,
              const toml::table& st) -> std::optional<std::string> {
            TopologyHost h;
            const toml::node* name_node = nullptr;
            for (auto&& [hk, hv] : st) {
              const std::string_view hkey = hk.str();
              if (hkey == "name") {
                auto s = r.String(hv, "host.name");
                if (!s.ok())
                  return s.error();
                h.name = s.value().text;
                name_node = &hv;
              } else if (hkey == "addresses") {
                const auto* aa = hv.as_array();
                if (!aa || aa->empty())
                  return r.Err(hv, "host.addresses",
                               "must be a non-empty list of address "
                               "strings, e.g. [\"192.0.2.1\"]");
                for (const toml::node& an : *aa) {
                  auto a = r.Addr(an, "host.addresses");
                  if (!a.ok())
                    return a.error();
                  h.addresses.push_back(a.value());
                }
              } else if (hkey == "nic") {
                const auto* s = hv.as_string();
                if (!s)
                  return r.Err(hv, "host.nic",
                               std::string("must be a string: ") + kRateHint);
                auto rate = ParseRate(s->get());
                if (!rate.ok())
                  return r.Err(hv, "host.nic", rate.error());
                h.nic = rate.value();
              } else {
                return r.Err(hv, "host." + std::string(hkey),
                             "unknown key in a [[host]] section; the keys "
                             "are name, addresses and nic");
              }
            }
            const std::string at = TomlWhere(source, sn);
            if (!name_node)
              return at + ": a [[host]] section has no 'name'";
            if (h.nic == 0)
              return at + ": host " + h.name +
                     " has no 'nic'; give its NIC's capacity, e.g. nic = "
                     "\"10gbit\"";
            if (h.addresses.empty())
              return at + ": host " + h.name +
                     " has no 'addresses'; list the addresses its "
                     "reservations come from and go to";
            for (const Address& a : h.addresses) {
              auto [it, fresh] = address_owner.emplace(a, h.name);
              if (!fresh)
                return at + ": address " + a.ToString() + " of host " + h.name +
                       " is also host " + it->second + "'s";
            }
            if (auto ne = add_node(*name_node, "host.name", h.name, true))
              return ne;
            t.host_node_.push_back(t.nodes_.size() - 1);
            const size_t line = LineOf(sn);
            h.send = t.resources_.size();
            t.resources_.push_back(
                Resource{Resource::Kind::kSend, "host/" + h.name + "/send",
                         h.name + "'s NIC (sending)", h.nic, line});
            t.links_.push_back({});
            h.receive = t.resources_.size();
            t.resources_.push_back(Resource{
                Resource::Kind::kReceive, "host/" + h.name + "/receive",
                h.name + "'s NIC (receiving)", h.nic, line});
            t.links_.push_back({});
            t.hosts_.push_back(std::move(h));
            return std::nullopt;
          });
    } else if (key == "switch") {
      e = ForEachSection(
          r, v, "switch", "[[switch]] name = \"tor1\"",
          [&](const toml::node& sn,
              const toml::table& st) -> std::optional<std::string> {
            const toml::node* name_node = nullptr;
            std::string name;
            for (auto&& [sk, sv] : st) {
              if (sk.str() != "name")
                return r.Err(sv, "switch." + std::string(sk.str()),
                             "unknown key in a [[switch]] section; the only "
                             "key is name");
              auto s = r.String(sv, "switch.name");
              if (!s.ok())
                return s.error();
              name = s.value().text;
              name_node = &sv;
            }
            if (!name_node)
              return TomlWhere(source, sn) +
                     ": a [[switch]] section has no 'name'";
            if (auto ne = add_node(*name_node, "switch.name", name, false))
              return ne;
            t.switches_.push_back(name);
            return std::nullopt;
          });
    } else if (key == "link") {
      links_node = &v;
    } else {
      return Err{r.Err(v, key,
                       std::string("unknown key; the keys are ") +
                           kTopLevelKeys +
                           " (see Documentation/admission.md)")};
    }
    if (e)
      return Err{*e};
  }
  if (t.hosts_.empty())
    return Err{file +
               ": no [[host]] section; list every host that reserves or "
               "receives, with its name, addresses and nic"};

  std::set<std::pair<size_t, size_t>> link_set;
  std::vector<size_t> host_links(t.nodes_.size(), 0);
  if (links_node) {
    auto e = ForEachSection(
        r, *links_node, "link",
        "[[link]] from = \"n1\" to = \"tor1\" capacity = \"10gbit\"",
        [&](const toml::node& sn,
            const toml::table& st) -> std::optional<std::string> {
          std::optional<size_t> from, to;
          uint64_t capacity = 0;
          for (auto&& [lk, lv] : st) {
            const std::string_view lkey = lk.str();
            if (lkey == "from" || lkey == "to") {
              const std::string full = "link." + std::string(lkey);
              auto s = r.String(lv, full);
              if (!s.ok())
                return s.error();
              auto it = node_of.find(s.value().text);
              if (it == node_of.end())
                return r.Err(lv, full,
                             "\"" + s.value().text +
                                 "\" is no [[host]] or [[switch]] of this "
                                 "file");
              (lkey == "from" ? from : to) = it->second;
            } else if (lkey == "capacity") {
              const auto* s = lv.as_string();
              if (!s)
                return r.Err(lv, "link.capacity",
                             std::string("must be a string: ") + kRateHint);
              auto rate = ParseRate(s->get());
              if (!rate.ok())
                return r.Err(lv, "link.capacity", rate.error());
              capacity = rate.value();
            } else {
              return r.Err(lv, "link." + std::string(lkey),
                           "unknown key in a [[link]] section; the keys are "
                           "from, to and capacity");
            }
          }
          const std::string at = TomlWhere(source, sn);
          if (!from || !to || capacity == 0)
            return at +
                   ": a [[link]] section needs 'from', 'to' and "
                   "'capacity', e.g. from = \"n1\", to = \"tor1\", "
                   "capacity = \"10gbit\"";
          const std::string& fn = t.nodes_[*from].name;
          const std::string& tn = t.nodes_[*to].name;
          if (*from == *to)
            return at + ": link " + fn + " -> " + tn +
                   " goes nowhere; a link joins two different nodes";
          if (!link_set.insert({*from, *to}).second)
            return at + ": link " + fn + " -> " + tn +
                   " is defined twice; give one [[link]] per direction";
          t.nodes_[*from].out.push_back(t.resources_.size());
          host_links[*from]++;
          host_links[*to]++;
          t.resources_.push_back(
              Resource{Resource::Kind::kLink, "link/" + fn + "/" + tn,
                       "link " + fn + " -> " + tn, capacity, LineOf(sn)});
          t.links_.push_back(Link{*from, *to});
          return std::nullopt;
        });
    if (e)
      return Err{*e};
  }

  for (size_t i = 0; i < t.resources_.size(); i++) {
    const Resource& res = t.resources_[i];
    if (res.kind != Resource::Kind::kLink)
      continue;
    const Link& l = t.links_[i];
    if (!link_set.count({l.to, l.from}))
      return Err{file + ":" + std::to_string(res.line) + ": " + res.name +
                 " has no reverse; add a [[link]] from = \"" +
                 t.nodes_[l.to].name + "\", to = \"" + t.nodes_[l.from].name +
                 "\" (every cable carries both directions)"};
  }
  for (size_t h = 0; h < t.hosts_.size(); h++) {
    const size_t n = t.HostNode(h);
    const std::string at =
        file + ":" + std::to_string(t.resources_[t.hosts_[h].send].line);
    if (host_links[n] == 0)
      return Err{at + ": host " + t.hosts_[h].name +
                 " has no [[link]]; connect it to a switch"};
    const std::vector<size_t> d = t.Distances(n, true);
    for (size_t o = 0; o < t.hosts_.size(); o++)
      if (d[t.HostNode(o)] == SIZE_MAX)
        return Err{at + ": host " + t.hosts_[h].name + " cannot reach host " +
                   t.hosts_[o].name +
                   " through the switches; add the links between them"};
  }
  return t;
}

size_t Topology::HostNode(size_t host) const {
  return host_node_[host];
}

std::vector<size_t> Topology::Distances(size_t n, bool forward) const {
  std::vector<size_t> d(nodes_.size(), SIZE_MAX);
  std::vector<std::vector<size_t>> in(nodes_.size());
  if (!forward)
    for (size_t i = 0; i < links_.size(); i++)
      if (resources_[i].kind == Resource::Kind::kLink)
        in[links_[i].to].push_back(links_[i].from);
  std::deque<size_t> q{n};
  d[n] = 0;
  while (!q.empty()) {
    const size_t u = q.front();
    q.pop_front();
    if (u != n && nodes_[u].is_host)
      continue;  // hosts forward nothing
    auto visit = [&](size_t v) {
      if (d[v] == SIZE_MAX) {
        d[v] = d[u] + 1;
        q.push_back(v);
      }
    };
    if (forward)
      for (size_t li : nodes_[u].out)
        visit(links_[li].to);
    else
      for (size_t v : in[u])
        visit(v);
  }
  return d;
}

uint64_t Topology::Reservable(const Resource& r) const {
  // floor(capacity * reservable / 100) without overflow.
  return r.capacity / 100 * reservable_ + r.capacity % 100 * reservable_ / 100;
}

std::optional<size_t> Topology::FindHost(
    std::string_view name_or_address) const {
  const auto a = Address::Parse(std::string(name_or_address));
  for (size_t h = 0; h < hosts_.size(); h++) {
    if (hosts_[h].name == name_or_address)
      return h;
    if (a && std::find(hosts_[h].addresses.begin(), hosts_[h].addresses.end(),
                       *a) != hosts_[h].addresses.end())
      return h;
  }
  return std::nullopt;
}

std::optional<size_t> Topology::SendingHost(size_t r) const {
  if (r >= resources_.size())
    return std::nullopt;
  for (size_t h = 0; h < hosts_.size(); h++)
    if ((resources_[r].kind == Resource::Kind::kSend && hosts_[h].send == r) ||
        (resources_[r].kind == Resource::Kind::kLink &&
         links_[r].from == host_node_[h]))
      return h;
  return std::nullopt;
}

std::vector<size_t> Topology::Path(size_t from, size_t to) const {
  if (from == to || from >= hosts_.size() || to >= hosts_.size())
    return {};
  const size_t s = HostNode(from), d = HostNode(to);
  const std::vector<size_t> ds = Distances(s, true);
  const std::vector<size_t> dd = Distances(d, false);
  const size_t len = ds[d];
  std::vector<size_t> path{hosts_[from].send};
  if (len == SIZE_MAX)
    return {};  // Parse() rejects such topologies
  // A link u -> v is on a shortest path when ds[u] + 1 + dd[v] == len,
  // u is the source or a switch and v a switch or the destination
  // (Distances() gives hosts a distance but never leaves them).
  auto on_path = [&](size_t li) {
    const Link& l = links_[li];
    if (l.from != s && nodes_[l.from].is_host)
      return false;
    if (l.to != d && nodes_[l.to].is_host)
      return false;
    return ds[l.from] != SIZE_MAX && dd[l.to] != SIZE_MAX &&
           ds[l.from] + 1 + dd[l.to] == len;
  };
  if (equal_cost_ == EqualCost::kFirst) {
    for (size_t u = s; u != d;) {
      for (size_t li : nodes_[u].out)
        if (on_path(li)) {
          path.push_back(li);
          u = links_[li].to;
          break;
        }
    }
  } else {
    std::vector<size_t> links;
    for (size_t li = 0; li < links_.size(); li++)
      if (resources_[li].kind == Resource::Kind::kLink && on_path(li))
        links.push_back(li);
    std::stable_sort(links.begin(), links.end(), [&](size_t a, size_t b) {
      return ds[links_[a].from] < ds[links_[b].from];
    });
    path.insert(path.end(), links.begin(), links.end());
  }
  path.push_back(hosts_[to].receive);
  return path;
}

std::optional<Refusal> Admit(const Topology& t, std::span<const size_t> path,
                             std::span<const uint64_t> reserved,
                             uint64_t rate) {
  for (size_t i : path) {
    const Resource& res = t.resources()[i];
    const uint64_t cap = t.Reservable(res);
    const uint64_t have = i < reserved.size() ? reserved[i] : 0;
    if (have > cap || rate > cap - have)
      return Refusal{i, res.capacity, cap, have, rate};
  }
  return std::nullopt;
}

std::string RefusalMessage(const Topology& t, const Refusal& r) {
  return t.resources()[r.resource].name + " is full: capacity " +
         FormatRate(r.capacity) + ", reservable " + FormatRate(r.reservable) +
         " (" + std::to_string(t.reservable_percent()) + "%), reserved " +
         (r.reserved ? FormatRate(r.reserved) : std::string("0")) +
         ", requested " + FormatRate(r.requested);
}

}  // namespace parq::parqd
