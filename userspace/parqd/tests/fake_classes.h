// SPDX-License-Identifier: GPL-2.0
//
// ReservedClasses that record what the agent installs and answer as told:
// `fail_install` and `fail_set` refuse, `incomplete` names the classes
// that lack a part (as after `nft flush ruleset`) until installed again.

#ifndef PARQD_TESTS_FAKE_CLASSES_H
#define PARQD_TESTS_FAKE_CLASSES_H

#include <map>
#include <set>
#include <string>
#include <vector>

#include "admission/admission_agent.h"

namespace parq::parqd::test {

class FakeClasses : public ReservedClasses {
 public:
  std::optional<std::string> Install(uint32_t minor, uint64_t rate,
                                     const Match& match,
                                     const std::vector<Address>& to,
                                     uint32_t owner) override {
    if (fail_install)
      return std::string("tc: no parq qdisc");
    installs++;
    rates[minor] = rate;
    owners[minor] = owner;
    matches[minor] = match;
    dests[minor] = to;
    incomplete.erase(minor);
    return std::nullopt;
  }
  std::optional<std::string> SetRate(uint32_t minor, uint64_t rate) override {
    if (fail_set)
      return std::string("tc: refused");
    rates.at(minor) = rate;
    return std::nullopt;
  }
  std::optional<std::string> Remove(uint32_t minor) override {
    rates.erase(minor);
    incomplete.erase(minor);
    return std::nullopt;
  }
  // The agent's range only, as the interface says.
  Result<std::vector<uint32_t>, std::string> Installed() override {
    listings++;
    return InRange();
  }
  // What each class carried as the kernel would count it: `uses` as set
  // by the test, for the classes installed.
  Result<Parts, std::string> InstalledParts() override {
    listings++;
    if (fail_list)
      return Err{std::string("tc: cannot dump the classes")};
    Parts out{InRange(), {}, {}, {}};
    for (uint32_t minor : incomplete)
      if (rates.count(minor))
        out.incomplete.push_back(minor);
    for (const auto& [minor, use] : uses)
      if (rates.count(minor))
        out.uses[minor] = use;
    return out;
  }

  bool fail_install = false, fail_set = false, fail_list = false;
  uint64_t installs = 0;
  // Looks at the qdisc (each a dump of its classes on a real one).
  uint64_t listings = 0;
  std::map<uint32_t, uint64_t> rates;
  std::map<uint32_t, Match> matches;
  std::map<uint32_t, std::vector<Address>> dests;
  std::map<uint32_t, uint32_t> owners;
  std::set<uint32_t> incomplete;
  std::map<uint32_t, Use> uses;

 private:
  std::vector<uint32_t> InRange() const {
    std::vector<uint32_t> out;
    for (const auto& [minor, rate] : rates)
      if (minor >= kAgentMinorFirst && minor <= kAgentMinorLast)
        out.push_back(minor);
    return out;
  }
};

}  // namespace parq::parqd::test

#endif
