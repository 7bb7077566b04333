// SPDX-License-Identifier: GPL-2.0
//
// The cluster's sections of parqd's configuration: [[peer]], [[host]], and
// which [[host]] this host is.

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

namespace parq::parqd::config_sections {

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
    const std::string at = TomlWhere(source, pn);
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

Result<std::vector<HostConfig>, std::string> Hosts(const Reader& r,
                                                   std::string_view source,
                                                   const toml::node& n) {
  const auto* arr = n.as_array();
  if (!arr || !arr->is_array_of_tables())
    return Err{r.Err(n, "host",
                     "must be a list of tables: write each host of the "
                     "cluster as a [[host]] section with id, name and "
                     "addresses")};
  std::vector<HostConfig> hosts;
  for (const toml::node& hn : *arr) {
    HostConfig h;
    bool have_id = false;
    for (auto&& [k, v] : *hn.as_table()) {
      const std::string_view key = k.str();
      if (key == "id") {
        auto id = r.Integer(v, "host.id", 0, INT64_MAX);
        if (!id.ok())
          return Err{id.error()};
        h.id = id.value();
        have_id = true;
      } else if (key == "name") {
        auto s = r.String(v, "host.name");
        if (!s.ok())
          return Err{s.error()};
        h.name = s.value().text;
      } else if (key == "addresses") {
        const auto* aa = v.as_array();
        if (!aa || aa->empty() || aa->size() > wire::kMaxAddresses)
          return Err{r.Err(v, "host.addresses",
                           "must be a list of 1 to " +
                               std::to_string(wire::kMaxAddresses) +
                               " address strings, e.g. [\"192.0.2.2\"]")};
        for (const toml::node& an : *aa) {
          auto a = r.Addr(an, "host.addresses");
          if (!a.ok())
            return Err{a.error()};
          h.addresses.push_back(a.value());
        }
      } else {
        return Err{r.Err(v, "host." + std::string(key),
                         "unknown key in a [[host]] section; the keys are "
                         "id, name and addresses")};
      }
    }
    const std::string at = TomlWhere(source, hn);
    if (!have_id)
      return Err{at +
                 ": a [[host]] section has no 'id'; give the host's node "
                 "id (an integer unique in the cluster)"};
    if (h.addresses.empty())
      return Err{at + ": host " + std::to_string(h.id) +
                 " has no 'addresses'; list the addresses it sends from "
                 "and receives on"};
    hosts.push_back(std::move(h));
  }
  return hosts;
}

// A cluster file: which [[host]] this host is (node-id, else its host name
// or short name, else one of its addresses), then its peers and, unless
// given, its addresses.  An error says how this host is known.
std::optional<std::string> SelectHost(Config& c, bool have_node_id,
                                      const Identity* self,
                                      const std::string& file) {
  std::set<uint64_t> ids;
  std::set<Address> addrs;
  for (const HostConfig& h : c.hosts) {
    if (!ids.insert(h.id).second)
      return file + ": host " + std::to_string(h.id) +
             " is listed twice; each [[host]] needs its own id";
    for (const Address& a : h.addresses)
      if (!addrs.insert(a).second)
        return file + ": " + a.ToString() +
               " is an address of two [[host]] sections; an address belongs "
               "to one host";
  }
  const HostConfig* me = nullptr;
  if (have_node_id) {
    for (const HostConfig& h : c.hosts)
      if (h.id == c.node_id)
        me = &h;
    if (!me)
      return file + ": node-id " + std::to_string(c.node_id) +
             " is no [[host]]'s id";
  } else if (self) {
    const std::string shortname =
        self->hostname.substr(0, self->hostname.find('.'));
    for (const HostConfig& h : c.hosts)
      if (!h.name.empty() &&
          (h.name == self->hostname || h.name == shortname)) {
        if (me)
          return file + ": two [[host]] sections are named " + h.name;
        me = &h;
      }
    if (!me)
      for (const HostConfig& h : c.hosts)
        for (const Address& a : h.addresses)
          if (std::find(self->addresses.begin(), self->addresses.end(), a) !=
              self->addresses.end()) {
            if (me && me != &h)
              return file +
                     ": this host has addresses of two [[host]] "
                     "sections (" +
                     std::to_string(me->id) + " and " + std::to_string(h.id) +
                     "); give node-id";
            me = &h;
          }
  }
  if (!me) {
    std::string mine;
    if (self)
      for (const Address& a : self->addresses)
        mine += (mine.empty() ? "" : ", ") + a.ToString();
    return file + ": this host (" +
           (self ? "name \"" + self->hostname + "\", addresses " +
                       (mine.empty() ? std::string("none") : mine)
                 : std::string("unknown")) +
           ") is no [[host]] of the file: add its section, or give node-id";
  }
  c.node_id = me->id;
  if (c.addresses.empty())
    c.addresses = me->addresses;
  for (const HostConfig& h : c.hosts)
    if (&h != me)
      c.peers.push_back({h.id, h.addresses});
  return std::nullopt;
}

}  // namespace parq::parqd::config_sections
