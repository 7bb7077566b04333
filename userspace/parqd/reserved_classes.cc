// SPDX-License-Identifier: GPL-2.0

#include "reserved_classes.h"

#include <cstdio>

#include <nlohmann/json.hpp>

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
                         uint32_t minor, uint64_t rate, const Match& match,
                         const std::vector<Address>& to) {
  const std::string cls = handle + Hex(minor);
  std::string b = "class add dev " + dev + " parent " + handle + " classid " +
                  cls + " parq rate " + FormatRate(rate) + "\n";
  for (const Address& a : to) {
    b += "filter add dev " + dev + " parent " + handle + " protocol " +
         (a.family == Family::kIPv4 ? "ip" : "ipv6") + " prio " +
         std::to_string(minor) + " flower dst_ip " + a.ToString();
    if (!match.proto.empty())
      b += " ip_proto " + match.proto;
    if (match.dport)
      b += " dst_port " + std::to_string(match.dport);
    if (match.sport)
      b += " src_port " + std::to_string(match.sport);
    b += " classid " + cls + "\n";
  }
  return b;
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
    const std::vector<Address>& to) {
  std::string h;
  if (auto e = Handle(&h))
    return e;
  if (auto e =
          Tc({"-batch", "-"}, InstallBatch(dev_, h, minor, rate, match, to))) {
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
  // No filter of that priority is not an error: Install() may have failed
  // before adding one.
  (void)Tc({"filter", "del", "dev", dev_, "parent", h, "prio",
            std::to_string(minor)});
  return Tc({"class", "del", "dev", dev_, "classid", h + Hex(minor)});
}

}  // namespace parq::parqd
