// SPDX-License-Identifier: GPL-2.0

#include "reserved_classes.h"

#include <charconv>
#include <cstdio>
#include <iterator>
#include <set>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "jobs.h"
#include "topology.h"

namespace parq::parqd {

namespace {

std::string Hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof(b), "%x", v);
  return b;
}

}  // namespace

std::string InstallBatch(const std::string& dev, const std::string& handle,
                         uint32_t minor, uint64_t rate) {
  const std::string cls = handle + Hex(minor);
  return "class add dev " + dev + " parent " + handle + " classid " + cls +
         " parq rate " + FormatRate(rate) + "\n" + "filter add dev " + dev +
         " parent " + handle + " protocol all prio " + std::to_string(minor) +
         " handle 0x" + Hex(ReservedMark(minor)) + "/0x" +
         Hex(kReservedMarkMask) + " fw classid " + cls + "\n";
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
TcReservedClasses::TcReservedClasses(std::string dev, Run run)
    : dev_(std::move(dev)), run_(std::move(run)) {}

std::optional<std::string> TcReservedClasses::Tc(
    const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv = {"tc"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_(argv, input);
  if (!r.ok())
    return r.error();
  if (r.value().status != 0)
    return "tc " + args.front() + " " + args[1] + ": " + ErrorText(r.value());
  return std::nullopt;
}

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

std::optional<std::string> TcReservedClasses::Handle(std::string* handle) {
  auto r = run_({"tc", "-j", "qdisc", "show", "dev", dev_, "root"}, "");
  if (!r.ok())
    return r.error();
  if (r.value().status != 0)
    return "tc qdisc show dev " + dev_ + ": " + ErrorText(r.value());
  const auto j = nlohmann::json::parse(r.value().out, nullptr, false);
  const std::string add = "; add one with: tc qdisc add dev " + dev_ +
                          " root handle 1: parq linkrate RATE";
  if (j.is_discarded() || !j.is_array() || j.empty() || !j[0].is_object())
    return "no root qdisc on " + dev_ + add;
  const std::string kind = j[0].value("kind", "");
  if (kind != "parq")
    return dev_ + "'s root qdisc is " + kind + ", not parq" + add;
  *handle = j[0].value("handle", "");
  return std::nullopt;
}

std::optional<std::string> TcReservedClasses::Install(
    uint32_t minor, uint64_t rate, const Match& match,
    const std::vector<Address>& to, uint32_t owner) {
  std::string h;
  if (auto e = Handle(&h))
    return e;
  if (auto e = Nft(ReservedNftScript(minor, owner, match, to))) {
    (void)DelChain(minor);
    return e;
  }
  if (auto e = Tc({"-batch", "-"}, InstallBatch(dev_, h, minor, rate))) {
    (void)RemoveFrom(h, minor);
    return e;
  }
  return std::nullopt;
}

std::optional<std::string> TcReservedClasses::SetRate(uint32_t minor,
                                                      uint64_t rate) {
  std::string h;
  if (auto e = Handle(&h))
    return e;
  return Tc({"class", "change", "dev", dev_, "classid", h + Hex(minor), "parq",
             "rate", FormatRate(rate)});
}

std::optional<std::string> TcReservedClasses::Remove(uint32_t minor) {
  std::string h;
  if (auto e = Handle(&h))
    return e;
  return RemoveFrom(h, minor);
}

std::optional<std::string> TcReservedClasses::RemoveFrom(const std::string& h,
                                                         uint32_t minor) {
  // The marking first: no packet is marked for a class that is gone.
  const auto chain = DelChain(minor);
  // No filter of that priority is not an error: Install() may have failed
  // before adding one.
  (void)Tc({"filter", "del", "dev", dev_, "parent", h, "prio",
            std::to_string(minor)});
  auto cls = Tc({"class", "del", "dev", dev_, "classid", h + Hex(minor)});
  return cls ? cls : chain;
}

namespace {

// The minor of `classid` ("1:1000") if it is a class of the qdisc of
// handle `h` ("1:") in the agent's range.
std::optional<uint32_t> AgentMinor(std::string_view classid,
                                   const std::string& h) {
  if (!classid.starts_with(h))
    return std::nullopt;
  classid.remove_prefix(h.size());
  uint32_t minor = 0;
  const auto [p, ec] = std::from_chars(
      classid.data(), classid.data() + classid.size(), minor, 16);
  if (ec != std::errc() || p != classid.data() + classid.size() ||
      minor < kAgentMinorFirst || minor > kAgentMinorLast)
    return std::nullopt;
  return minor;
}

}  // namespace

std::optional<std::string> TcReservedClasses::Scan(
    const std::string& h, std::set<uint32_t>* classes,
    std::set<uint32_t>* filters) {
  // Text, not -j: tc has printed classes as JSON only since 6.x.  Lines
  // "class parq H:MINOR ..." and "filter ... classid|flowid H:MINOR ...".
  const auto scan =
      [&](const std::vector<std::string>& argv, const char* first,
          std::set<uint32_t>* found) -> std::optional<std::string> {
    auto r = run_(argv, "");
    if (!r.ok())
      return r.error();
    if (r.value().status != 0)
      return argv[0] + " " + argv[1] + " " + argv[2] + " dev " + dev_ + ": " +
             ErrorText(r.value());
    std::istringstream lines(r.value().out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::vector<std::string> w{std::istream_iterator<std::string>(words),
                                 std::istream_iterator<std::string>()};
      if (w.empty() || w[0] != first)
        continue;
      for (size_t i = 0; i + 1 < w.size(); i++) {
        const bool is_class = w[0] == "class" && i == 1 && w[1] == "parq";
        if (is_class || w[i] == "classid" || w[i] == "flowid")
          if (auto m = AgentMinor(w[i + 1], h))
            found->insert(*m);
      }
    }
    return std::nullopt;
  };
  if (auto e = scan({"tc", "class", "show", "dev", dev_}, "class", classes))
    return e;
  return scan({"tc", "filter", "show", "dev", dev_, "parent", h}, "filter",
              filters);
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
  std::string h;
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
  std::string h;
  if (auto e = Handle(&h))
    return Err{*e};
  std::set<uint32_t> classes, filters, marking;
  if (auto e = Scan(h, &classes, &filters))
    return Err{*e};
  std::set<uint32_t> any = classes;
  any.insert(filters.begin(), filters.end());
  Parts out{{any.begin(), any.end()}, {}, {}};
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
