// SPDX-License-Identifier: GPL-2.0
//
// The cluster's topology, for admission control across the cluster
// (Documentation/admission.md): one TOML file names the hosts (their
// addresses and NIC capacity), the switches and the directed links with
// their capacities.  Parse() validates it: every error names the file,
// the line and what to write instead.
//
// A reservation from host S to host D charges, in path order, its
// resources: S's NIC (sending), every directed link on the path, and D's
// NIC (receiving).  Admit() is the rule of the published design (shared
// seed 002, section V-B): admitted only if, after admission, the source
// node, every switch output port on the path and the destination node
// stay within capacity; here within `reservable` percent of it, the rest
// left to best-effort traffic.
//
// Paths go through switches only (a host forwards nothing).  The path is
// a shortest one in links; where several are equally short,
// `equal-cost` says which links are charged: "charge-all" (the default)
// charges every link of every shortest path, so that the reservation
// holds whichever way the switches hash it; "first" charges one path,
// at each hop the link listed first in the file, for a fabric whose
// routing is known to follow it.

#ifndef PARQD_ADMISSION_TOPOLOGY_H
#define PARQD_ADMISSION_TOPOLOGY_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/address.h"
#include "base/result.h"

namespace parq::parqd {

// "10gbit", "100mbit", "2.5gbit", "800kbit", "1000bit", or bits per second
// as a number; units are decimal, as tc's.  Errors: no number, an unknown
// unit, 0, or more than 2^63-1 bits/s.
Result<uint64_t, std::string> ParseRate(std::string_view text);
// Whether `name` may name a host or a switch (and a job admitted as a
// whole): 1 to 63 letters, digits, '-', '_' or '.'.
bool ValidName(std::string_view name);
// The shortest exact text ParseRate reads back: 10000000000 -> "10gbit".
std::string FormatRate(uint64_t bps);

struct Resource {
  enum class Kind : uint8_t { kSend, kLink, kReceive };
  Kind kind = Kind::kLink;
  // Stable and unique, for keys: "host/NAME/send", "link/FROM/TO",
  // "host/NAME/receive".
  std::string id;
  // For people: "n1's NIC (sending)", "link tor1 -> n3".
  std::string name;
  uint64_t capacity = 0;  // bits/s
  size_t line = 0;        // where the file defines it
};

struct TopologyHost {
  std::string name;
  std::vector<Address> addresses;
  uint64_t nic = 0;  // bits/s
  size_t send = 0;   // index of its sending NIC in resources()
  size_t receive = 0;
};

enum class EqualCost : uint8_t { kChargeAll, kFirst };

class Topology {
 public:
  // `source` names the text in messages (the file's path).
  static Result<Topology, std::string> Parse(std::string_view text,
                                             std::string_view source);
  static Result<Topology, std::string> Load(const std::string& path);

  const std::vector<TopologyHost>& hosts() const { return hosts_; }
  const std::vector<std::string>& switches() const { return switches_; }
  const std::vector<Resource>& resources() const { return resources_; }
  unsigned reservable_percent() const { return reservable_; }
  EqualCost equal_cost() const { return equal_cost_; }

  // What reservations may take of `r`: its capacity times reservable.
  uint64_t Reservable(const Resource& r) const;
  // A host by name or by one of its addresses.
  std::optional<size_t> FindHost(std::string_view name_or_address) const;
  // The host whose traffic alone resource `r` carries (its sending NIC, or
  // a link out of it), if there is one.
  std::optional<size_t> SendingHost(size_t r) const;
  // The resources a reservation from host `from` to host `to` charges,
  // indices into resources(): from's send NIC, the links in path order
  // (with charge-all, every link of every shortest path, by distance
  // from `from`), to's receive NIC.  Empty when from == to.
  std::vector<size_t> Path(size_t from, size_t to) const;

 private:
  struct Node {
    std::string name;
    bool is_host = false;
    std::vector<size_t> out;  // link resource indices, in file order
  };
  struct Link {
    size_t from = 0, to = 0;  // node indices
  };

  // Shortest distances in links from `n` (forward) or to `n` (backward),
  // entering hosts other than `n` but never leaving them; SIZE_MAX where
  // unreachable.
  std::vector<size_t> Distances(size_t n, bool forward) const;
  size_t HostNode(size_t host) const;

  std::vector<TopologyHost> hosts_;
  std::vector<std::string> switches_;
  std::vector<Resource> resources_;
  std::vector<Node> nodes_;
  std::vector<size_t> host_node_;  // hosts_[i]'s node
  std::vector<Link> links_;        // parallel to resources_; unused for NICs
  unsigned reservable_ = 80;
  EqualCost equal_cost_ = EqualCost::kChargeAll;
};

// Why a reservation was refused: the first resource on its path that it
// would take beyond what is reservable.
struct Refusal {
  size_t resource = 0;
  uint64_t capacity = 0, reservable = 0, reserved = 0, requested = 0;
};

// `reserved[i]`: the sum of the reservations admitted on resources()[i].
// Admits `rate` bits/s on `path` when every resource stays within its
// Reservable(); otherwise says where it does not.
std::optional<Refusal> Admit(const Topology& t, std::span<const size_t> path,
                             std::span<const uint64_t> reserved, uint64_t rate);
// "link tor1 -> n3 is full: capacity 10gbit, reservable 8gbit, reserved
// 6gbit, requested 3gbit".
std::string RefusalMessage(const Topology& t, const Refusal& r);

}  // namespace parq::parqd

#endif
