// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of topology.cc: rates, a valid file, paths (a tree, equal-cost
// paths charged both ways, hosts that forward nothing), the three
// conditions of admission each refusing exactly at its bound, and every
// invalid file with the line its message names.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "admission/topology.h"
#include "topology_text.h"

namespace {

using namespace parq::parqd;
using namespace parq::parqd::test;

// Two racks under one or two spines.
std::string Racks(bool two_spines, const std::string& head = "") {
  std::string s = head + "\n" +
                  TomlHost("a1", {"10.0.1.1", "fd00::11"}, "10gbit") +
                  TomlHost("a2", {"10.0.1.2"}, "10gbit") +
                  TomlHost("b1", {"10.0.2.1"}, "10gbit") + TomlSwitch("tor1") +
                  TomlSwitch("tor2") + TomlSwitch("s1");
  if (two_spines)
    s += TomlSwitch("s2");
  s += TomlCable("a1", "tor1", "10gbit") + TomlCable("a2", "tor1", "10gbit") +
       TomlCable("b1", "tor2", "10gbit") + TomlCable("tor1", "s1", "40gbit") +
       TomlCable("tor2", "s1", "40gbit");
  if (two_spines)
    s += TomlCable("tor1", "s2", "40gbit") + TomlCable("tor2", "s2", "40gbit");
  return s;
}

Topology Ok(const std::string& text) {
  auto r = Topology::Parse(text, "topology.toml");
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? std::move(r).value() : Topology{};
}

std::string Error(const std::string& text) {
  auto r = Topology::Parse(text, "topology.toml");
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.error();
}

std::vector<std::string> Ids(const Topology& t, const std::vector<size_t>& p) {
  std::vector<std::string> out;
  out.reserve(p.size());
  for (size_t i : p)
    out.push_back(t.resources()[i].id);
  return out;
}

size_t Host(const Topology& t, const std::string& name) {
  auto h = t.FindHost(name);
  EXPECT_TRUE(h.has_value()) << name;
  return h.value_or(0);
}

std::vector<size_t> PathOf(const Topology& t, const std::string& from,
                           const std::string& to) {
  return t.Path(Host(t, from), Host(t, to));
}

TEST(TopologyRate, ParsesUnitsAndFractions) {
  EXPECT_EQ(ParseRate("10gbit").value(), 10'000'000'000u);
  EXPECT_EQ(ParseRate("2.5gbit").value(), 2'500'000'000u);
  EXPECT_EQ(ParseRate("100mbit").value(), 100'000'000u);
  EXPECT_EQ(ParseRate("0.5kbit").value(), 500u);
  EXPECT_EQ(ParseRate("1bit").value(), 1u);
  EXPECT_EQ(ParseRate("1tbit").value(), 1'000'000'000'000u);
  for (const char* bad : {"", "gbit", "10", "10Gbps", "10 gbit", "0mbit",
                          "0.0001bit", "1.5bit", "99999999999tbit"})
    EXPECT_FALSE(ParseRate(bad).ok()) << bad;
  EXPECT_NE(ParseRate("0mbit").error().find("is 0"), std::string::npos);
  EXPECT_NE(ParseRate("10").error().find("has no unit"), std::string::npos);
}

TEST(TopologyRate, FormatReadsBack) {
  for (uint64_t bps : {uint64_t{1}, uint64_t{999}, uint64_t{8'000'000'000},
                       uint64_t{2'500'000'000}, uint64_t{123'456'789}}) {
    auto back = ParseRate(FormatRate(bps));
    ASSERT_TRUE(back.ok()) << FormatRate(bps);
    EXPECT_EQ(back.value(), bps);
  }
  EXPECT_EQ(FormatRate(10'000'000'000), "10gbit");
  EXPECT_EQ(FormatRate(2'500'000'000), "2500mbit");
}

TEST(Topology, ParsesHostsSwitchesAndLinks) {
  const Topology t = Ok(Racks(false));
  ASSERT_EQ(t.hosts().size(), 3u);
  EXPECT_EQ(t.switches().size(), 3u);
  // Two NIC resources per host and 10 links.
  EXPECT_EQ(t.resources().size(), 3u * 2 + 10);
  EXPECT_EQ(t.reservable_percent(), 80u);
  EXPECT_EQ(t.equal_cost(), EqualCost::kChargeAll);
  EXPECT_EQ(Host(t, "fd00::11"), Host(t, "a1"));
  EXPECT_EQ(Host(t, "10.0.2.1"), Host(t, "b1"));
  EXPECT_FALSE(t.FindHost("10.9.9.9").has_value());
  EXPECT_FALSE(t.FindHost("tor1").has_value());  // a switch
  const Resource& nic = t.resources()[t.hosts()[0].send];
  EXPECT_EQ(nic.id, "host/a1/send");
  EXPECT_EQ(t.Reservable(nic), 8'000'000'000u);
}

TEST(Topology, PathThroughATree) {
  const Topology t = Ok(Racks(false));
  EXPECT_EQ(Ids(t, PathOf(t, "a1", "b1")),
            (std::vector<std::string>{"host/a1/send", "link/a1/tor1",
                                      "link/tor1/s1", "link/s1/tor2",
                                      "link/tor2/b1", "host/b1/receive"}));
  EXPECT_EQ(Ids(t, PathOf(t, "b1", "a2")),
            (std::vector<std::string>{"host/b1/send", "link/b1/tor2",
                                      "link/tor2/s1", "link/s1/tor1",
                                      "link/tor1/a2", "host/a2/receive"}));
  // Within a rack the spine is not charged.
  EXPECT_EQ(Ids(t, PathOf(t, "a1", "a2")),
            (std::vector<std::string>{"host/a1/send", "link/a1/tor1",
                                      "link/tor1/a2", "host/a2/receive"}));
  EXPECT_TRUE(PathOf(t, "a1", "a1").empty());
}

TEST(Topology, EqualCostPathsChargeEveryCandidateOrTheFirst) {
  const Topology all = Ok(Racks(true));
  EXPECT_EQ(
      Ids(all, PathOf(all, "a1", "b1")),
      (std::vector<std::string>{"host/a1/send", "link/a1/tor1", "link/tor1/s1",
                                "link/tor1/s2", "link/s1/tor2", "link/s2/tor2",
                                "link/tor2/b1", "host/b1/receive"}));
  const Topology first = Ok(Racks(true, "equal-cost = \"first\"\n"));
  EXPECT_EQ(first.equal_cost(), EqualCost::kFirst);
  EXPECT_EQ(Ids(first, PathOf(first, "a1", "b1")),
            (std::vector<std::string>{"host/a1/send", "link/a1/tor1",
                                      "link/tor1/s1", "link/s1/tor2",
                                      "link/tor2/b1", "host/b1/receive"}));
}

TEST(Topology, HostsForwardNothing) {
  // a1 - tor1 - a2, and a2 - b1 directly: b1 is reachable only through a
  // host, which is no path.
  const std::string text =
      "\n" + TomlHost("a1", {"10.0.1.1"}, "1gbit") +
      TomlHost("a2", {"10.0.1.2"}, "1gbit") +
      TomlHost("b1", {"10.0.2.1"}, "1gbit") + TomlSwitch("tor1") +
      TomlCable("a1", "tor1", "1gbit") + TomlCable("a2", "tor1", "1gbit") +
      TomlCable("a2", "b1", "1gbit");
  EXPECT_EQ(Error(text),
            "topology.toml:2: host a1 cannot reach host b1 through the "
            "switches; add the links between them");
}

// Reserves `rate` from `from` to `to` when admitted, and returns the
// refusal's message or "".
std::string Reserve(const Topology& t, std::vector<uint64_t>& reserved,
                    const std::string& from, const std::string& to,
                    uint64_t rate) {
  const std::vector<size_t> p = PathOf(t, from, to);
  auto refusal = Admit(t, p, reserved, rate);
  if (refusal)
    return RefusalMessage(t, *refusal);
  for (size_t i : p)
    reserved[i] += rate;
  return "";
}

TEST(TopologyAdmit, TheSourceNicRefusesAtItsBound) {
  std::string text = Racks(false);
  text.replace(text.find("nic = \"10gbit\""), 14, "nic = \"1gbit\"");  // a1
  const Topology t = Ok(text);
  std::vector<uint64_t> r(t.resources().size(), 0);
  EXPECT_EQ(Reserve(t, r, "a1", "b1", 500'000'000), "");
  EXPECT_EQ(Reserve(t, r, "a1", "a2", 300'000'001),
            "a1's NIC (sending) is full: capacity 1gbit, reservable 800mbit "
            "(80%), reserved 500mbit, requested 300000001bit");
  EXPECT_EQ(Reserve(t, r, "a1", "a2", 300'000'000), "");  // exactly full
  // a1 receives on the same NIC's other direction.
  EXPECT_EQ(Reserve(t, r, "a2", "a1", 800'000'000), "");
}

TEST(TopologyAdmit, ASwitchToSwitchPortRefusesAtItsBound) {
  std::string text = Racks(false);
  // The spine's port toward tor2: 1 Gbit/s.
  const std::string port =
      "from = \"s1\"\nto = \"tor2\"\ncapacity = \"40gbit\"";
  text.replace(text.find(port), port.size(),
               "from = \"s1\"\nto = \"tor2\"\ncapacity = \"1gbit\"");
  const Topology t = Ok(text);
  std::vector<uint64_t> r(t.resources().size(), 0);
  EXPECT_EQ(Reserve(t, r, "a1", "b1", 600'000'000), "");
  EXPECT_EQ(Reserve(t, r, "a2", "b1", 600'000'000),
            "link s1 -> tor2 is full: capacity 1gbit, reservable 800mbit "
            "(80%), reserved 600mbit, requested 600mbit");
  // The other direction is another port.
  EXPECT_EQ(Reserve(t, r, "b1", "a2", 5'000'000'000), "");
}

TEST(TopologyAdmit, TheDestinationNicRefusesAtItsBound) {
  std::string text = Racks(false, "reservable = 50\n");
  const size_t b1 = text.find("name = \"b1\"");
  text.replace(text.find("nic = \"10gbit\"", b1), 14, "nic = \"1gbit\"");
  const Topology t = Ok(text);
  std::vector<uint64_t> r(t.resources().size(), 0);
  EXPECT_EQ(Reserve(t, r, "a1", "b1", 300'000'000), "");
  EXPECT_EQ(Reserve(t, r, "a2", "b1", 300'000'000),
            "b1's NIC (receiving) is full: capacity 1gbit, reservable "
            "500mbit (50%), reserved 300mbit, requested 300mbit");
  EXPECT_EQ(Reserve(t, r, "a2", "b1", 200'000'000), "");
  // Sending from b1 is its NIC's other direction.
  EXPECT_EQ(Reserve(t, r, "b1", "a1", 500'000'000), "");
}

TEST(TopologyAdmit, ChargeAllFillsEverySpine) {
  const Topology t = Ok(Racks(true, "reservable = 100\n"));
  std::vector<uint64_t> r(t.resources().size(), 0);
  EXPECT_EQ(Reserve(t, r, "a1", "b1", 10'000'000'000), "");
  size_t checked = 0;
  for (const char* id : {"link/tor1/s1", "link/tor1/s2", "link/s2/tor2"}) {
    for (size_t i = 0; i < t.resources().size(); i++) {
      if (t.resources()[i].id == id) {
        EXPECT_EQ(r[i], 10'000'000'000u) << id;
        checked++;
      }
    }
  }
  EXPECT_EQ(checked, 3u);
  // Full, so a second reservation through either spine is refused.
  EXPECT_NE(Reserve(t, r, "a2", "b1", 1), "");
}

TEST(TopologyError, EveryInvalidFileNamesItsLine) {
  struct Case {
    std::string text, error;
  };
  const std::string host = TomlHost("a", {"10.0.0.1"}, "1gbit");
  const std::string sw = TomlSwitch("t");
  const auto& link = TomlLink;
  const std::vector<Case> cases = {
      {"",
       "topology.toml: no [[host]] section; list every host that "
       "reserves or receives, with its name, addresses and nic"},
      {"colour = 1\n" + host,
       "topology.toml:1:10: 'colour': unknown key; the keys are reservable, "
       "equal-cost, host, switch and link (see Documentation/admission.md)"},
      {"reservable = 0\n" + host,
       "topology.toml:1:14: 'reservable': is 0; give a value from 1 to 100 "
       "(the percent of each capacity that reservations may take)"},
      {"equal-cost = \"ecmp\"\n" + host,
       "topology.toml:1:14: 'equal-cost': must be \"charge-all\" (every "
       "shortest path's links) or \"first\" (the path of the links listed "
       "first)"},
      {host + sw + link("a", "x", "1gbit"),
       "topology.toml:9:6: 'link.to': \"x\" is no [[host]] or [[switch]] of "
       "this file"},
      {host + sw + link("a", "t", "0gbit"),
       "topology.toml:10:12: 'link.capacity': \"0gbit\" is 0; a capacity or "
       "rate must be positive"},
      {host + sw + link("a", "t", "1gbit"),
       "topology.toml:7: link a -> t has no reverse; add a [[link]] from = "
       "\"t\", to = \"a\" (every cable carries both directions)"},
      {host + sw + link("a", "t", "1gbit") + link("a", "t", "1gbit"),
       "topology.toml:11:1: link a -> t is defined twice; give one [[link]] "
       "per direction"},
      {host + sw + link("a", "a", "1gbit"),
       "topology.toml:7:1: link a -> a goes nowhere; a link joins two "
       "different nodes"},
      {host + sw,
       "topology.toml:1: host a has no [[link]]; connect it to a "
       "switch"},
      {host + "[[switch]]\nname = \"a\"\n",
       "topology.toml:6:8: 'switch.name': \"a\" is defined twice; give every "
       "host and switch a name of its own"},
      {host + host,
       "topology.toml:5:1: address 10.0.0.1 of host a is also host a's"},
      {"[[host]]\nname = \"a b\"\naddresses = [\"10.0.0.1\"]\nnic = "
       "\"1gbit\"\n",
       "topology.toml:2:8: 'host.name': \"a b\" is not a node name: 1 to 63 "
       "letters, digits, '-', '_' or '.'"},
      {"[[host]]\nname = \"a\"\naddresses = [\"10.0.0.1\"]\n",
       "topology.toml:1:1: host a has no 'nic'; give its NIC's capacity, e.g. "
       "nic = \"10gbit\""},
      {"[[host]]\nname = \"a\"\nnic = \"1gbps\"\n",
       "topology.toml:3:7: 'host.nic': \"1gbps\" has an unknown unit; write a "
       "rate with a unit, e.g. \"10gbit\", \"2.5gbit\", \"100mbit\" (units: "
       "bit, kbit, mbit, gbit, tbit; decimal, as tc's)"},
      {"host = 3\n",
       "topology.toml:1:8: 'host': must be a list of tables: write each as a "
       "[[host]] section, e.g. [[host]] name = \"n1\" nic = \"10gbit\""},
      {"[[host]\n", ""},  // not TOML: the parser's own message
  };
  for (const Case& c : cases) {
    const std::string e = Error(c.text);
    if (c.error.empty())
      EXPECT_EQ(e.rfind("topology.toml:1:", 0), 0u) << e;
    else
      EXPECT_EQ(e, c.error) << c.text;
  }
}

TEST(Topology, TheDocumentedExampleIsValid) {
  auto r = Topology::Load(PARQ_DOC_DIR "/topology.example.toml");
  ASSERT_TRUE(r.ok()) << r.error();
  const Topology& t = r.value();
  EXPECT_EQ(t.hosts().size(), 3u);
  EXPECT_EQ(t.switches().size(), 4u);
  // n1 and n3 are in different racks: both spines are charged.
  EXPECT_EQ(PathOf(t, "n1", "n3").size(), 8u);
  EXPECT_EQ(PathOf(t, "n1", "n2").size(), 4u);
}

TEST(TopologyError, LoadNamesAMissingFile) {
  auto r = Topology::Load("/nonexistent/topology.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(),
            "/nonexistent/topology.toml: cannot read the topology file");
}

}  // namespace
