// SPDX-License-Identifier: GPL-2.0

#include "admission/reserved_classes.h"

#include <linux/parq.h>
#include <linux/pkt_sched.h>

#include <charconv>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>

#include "admission/topology.h"
#include "jobs/jobs.h"

namespace parq::parqd {

uint64_t ClassBytes(uint64_t bps) {
  return bps >= 8 ? bps / 8 : 1;
}

std::string ReservedNftChain(uint32_t minor) {
  return "resv_" + Hex(minor);
}

std::string ReservedNftScript(uint32_t minor, uint32_t owner,
                              const Match& match,
                              const std::vector<Address>& to) {
  const std::string chain =
      std::string(kNftTable) + " " + ReservedNftChain(minor);
  std::string l4;
  if (!match.proto.empty()) {
    if (!match.dport && !match.sport)
      l4 = " meta l4proto " + match.proto;
    if (match.dport)
      l4 += " " + match.proto + " dport " + std::to_string(match.dport);
    if (match.sport)
      l4 += " " + match.proto + " sport " + std::to_string(match.sport);
  }
  // The mark's other bits are left as they were.
  const std::string set = " meta mark set meta mark & 0x" +
                          Hex(~kReservedMarkMask) + " | 0x" +
                          Hex(ReservedMark(minor)) + "\n";
  std::string s = "add table " + std::string(kNftTable) + "\n" + "add chain " +
                  chain +
                  " { type filter hook output priority mangle; policy "
                  "accept; }\n" +
                  "flush chain " + chain + "\n";
  for (const Address& a : to)
    s += "add rule " + chain + " meta skuid " + std::to_string(owner) + " " +
         (a.family == Family::kIPv4 ? "ip" : "ip6") + " daddr " + a.ToString() +
         l4 + set;
  return s;
}

TcReservedClasses::TcReservedClasses(std::string dev, Run run,
                                     std::unique_ptr<TcLink> tc)
    : dev_(std::move(dev)), run_(std::move(run)), tc_(std::move(tc)) {}

std::optional<std::string> TcReservedClasses::Nft(const std::string& script) {
  auto r = run_({"nft", "-f", "-"}, script);
  if (!r.ok())
    return "nft: " + r.error();
  if (r.value().status != 0)
    return "nft: " + ErrorText(r.value());
  return std::nullopt;
}

std::optional<std::string> TcReservedClasses::DelChain(uint32_t minor) {
  auto r = run_(
      {"nft", "delete", "chain", "inet", "parq", ReservedNftChain(minor)}, "");
  if (!r.ok())
    return r.error();
  if (r.value().status != 0 &&
      r.value().err.find("No such file or directory") == std::string::npos)
    return "nft delete chain: " + ErrorText(r.value());
  return std::nullopt;
}

std::optional<std::string> TcReservedClasses::Handle(uint32_t* handle) {
  auto qdiscs = tc_->Qdiscs();
  if (!qdiscs.ok())
    return qdiscs.error().Text();
  const std::string add = "; add one with: tc qdisc add dev " +
                          ShellWord(dev_) +
                          " root handle 1: parq linkrate RATE";
  for (const TcObject& q : qdiscs.value()) {
    if (q.parent != TC_H_ROOT)
      continue;
    if (q.kind != "parq")
      return dev_ + "'s root qdisc is " + q.kind + ", not parq" + add;
    *handle = q.handle;
    return std::nullopt;
  }
  return "no root qdisc on " + dev_ + add;
}

std::optional<std::string> TcReservedClasses::Install(
    uint32_t minor, uint64_t rate, const Match& match,
    const std::vector<Address>& to, uint32_t owner) {
  uint32_t h = 0;
  if (auto e = Handle(&h))
    return e;
  if (auto e = Nft(ReservedNftScript(minor, owner, match, to))) {
    (void)DelChain(minor);
    return e;
  }
  auto e = tc_->SetParqClass(h, h | minor, ClassBytes(rate), /*create=*/true);
  if (!e)
    e = tc_->AddFwFilter(h, minor, ReservedMark(minor), kReservedMarkMask,
                         h | minor);
  if (e) {
    (void)RemoveFrom(h, minor);
    return e->Text();
  }
  return std::nullopt;
}

std::optional<std::string> TcReservedClasses::SetRate(uint32_t minor,
                                                      uint64_t rate) {
  uint32_t h = 0;
  if (auto e = Handle(&h))
    return e;
  if (auto e =
          tc_->SetParqClass(h, h | minor, ClassBytes(rate), /*create=*/false))
    return e->Text();
  return std::nullopt;
}

std::optional<std::string> TcReservedClasses::Remove(uint32_t minor) {
  uint32_t h = 0;
  if (auto e = Handle(&h))
    return e;
  return RemoveFrom(h, minor);
}

std::optional<std::string> TcReservedClasses::RemoveFrom(uint32_t h,
                                                         uint32_t minor) {
  // The marking first: no packet is marked for a class that is gone.
  auto chain = DelChain(minor);
  // No filter of that priority is not an error: Install() may have failed
  // before adding one.
  (void)tc_->DelFilters(h, minor);
  if (auto e = tc_->DelClass(h | minor))
    return e->Text();
  return chain;
}

namespace {

// The minor of `handle` if it is a class of the qdisc of handle `h` in
// the agent's range.
std::optional<uint32_t> AgentMinor(uint32_t handle, uint32_t h) {
  const uint32_t minor = TC_H_MIN(handle);
  if (TC_H_MAJ(handle) != TC_H_MAJ(h) || minor < kAgentMinorFirst ||
      minor > kAgentMinorLast)
    return std::nullopt;
  return minor;
}

// What class `o` carried, from its statistics: none without them, or
// from a kernel without the class xstats' backlogged time.
std::optional<ReservedClasses::Use> UseOf(const TcObject& o) {
  constexpr size_t kNeed = offsetof(tc_parq_class_xstats, throttled_ns) +
                           sizeof(tc_parq_class_xstats::throttled_ns);
  if (!o.stats || o.xstats.size() < kNeed)
    return std::nullopt;
  tc_parq_class_xstats xs{};
  std::memcpy(&xs, o.xstats.data(), std::min(sizeof(xs), o.xstats.size()));
  if (!(xs.version & PARQ_XSTATS_CLASS))
    return std::nullopt;
  return ReservedClasses::Use{o.stats->bytes, xs.throttled_ns};
}

}  // namespace

std::optional<std::string> TcReservedClasses::Scan(
    uint32_t h, std::set<uint32_t>* classes, std::set<uint32_t>* filters,
    std::map<uint32_t, Use>* uses) {
  auto c = tc_->Classes();
  if (!c.ok())
    return c.error().Text();
  for (const TcObject& o : c.value()) {
    const auto m = o.kind == "parq" ? AgentMinor(o.handle, h) : std::nullopt;
    if (!m)
      continue;
    classes->insert(*m);
    if (!uses)
      continue;
    if (auto u = UseOf(o))
      (*uses)[*m] = *u;
  }
  auto f = tc_->Filters(h);
  if (!f.ok())
    return f.error().Text();
  for (const TcObject& o : f.value())
    if (o.classid)
      if (auto m = AgentMinor(*o.classid, h))
        filters->insert(*m);
  return std::nullopt;
}

std::optional<std::string> TcReservedClasses::Chains(
    std::set<uint32_t>* marking) {
  auto r = run_({"nft", "list", "table", "inet", "parq"}, "");
  if (!r.ok())
    return "nft: " + r.error();
  if (r.value().status != 0) {
    // No table (flushed): no chain.
    if (r.value().err.find("No such file or directory") != std::string::npos)
      return std::nullopt;
    return "nft list table inet parq: " + ErrorText(r.value());
  }
  // "chain resv_MINOR {" opens a chain; a rule in it that sets the mark
  // ("meta skuid ... meta mark set ...") counts.
  std::optional<uint32_t> in;
  std::istringstream lines(r.value().out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first, name;
    words >> first >> name;
    if (first == "chain") {
      in.reset();
      if (name.starts_with("resv_")) {
        uint32_t minor = 0;
        const auto [p, ec] = std::from_chars(
            name.data() + 5, name.data() + name.size(), minor, 16);
        if (ec == std::errc() && p == name.data() + name.size() &&
            ReservedNftChain(minor) == name)
          in = minor;
      }
    } else if (first == "}") {
      in.reset();
    } else if (in && line.find("meta skuid") != std::string::npos &&
               line.find("meta mark set") != std::string::npos) {
      marking->insert(*in);
    }
  }
  return std::nullopt;
}

Result<std::vector<uint32_t>, std::string> TcReservedClasses::Installed() {
  uint32_t h = 0;
  if (auto e = Handle(&h))
    return Err{*e};
  std::set<uint32_t> classes, filters;
  if (auto e = Scan(h, &classes, &filters))
    return Err{*e};
  classes.insert(filters.begin(), filters.end());
  return std::vector<uint32_t>(classes.begin(), classes.end());
}

Result<ReservedClasses::Parts, std::string>
TcReservedClasses::InstalledParts() {
  uint32_t h = 0;
  if (auto e = Handle(&h))
    return Err{*e};
  std::set<uint32_t> classes, filters, marking;
  std::map<uint32_t, Use> uses;
  if (auto e = Scan(h, &classes, &filters, &uses))
    return Err{*e};
  std::set<uint32_t> any = classes;
  any.insert(filters.begin(), filters.end());
  Parts out{{any.begin(), any.end()}, {}, {}, std::move(uses)};
  if (auto e = Chains(&marking)) {
    out.incomplete_error = *e;
    return out;
  }
  for (uint32_t m : any)
    if (!classes.count(m) || !filters.count(m) || !marking.count(m))
      out.incomplete.push_back(m);
  return out;
}

}  // namespace parq::parqd
