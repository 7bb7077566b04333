// SPDX-License-Identifier: GPL-2.0
//
// Topology files for the tests, a section at a time, in the layout of
// Documentation/topology.example.toml: each key on a line of its own, so
// that the tests can tell which line a message names.

#ifndef PARQD_TESTS_TOPOLOGY_TEXT_H
#define PARQD_TESTS_TOPOLOGY_TEXT_H

#include <initializer_list>
#include <string>
#include <string_view>

namespace parq::parqd::test {

inline std::string Quote(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

inline std::string TomlHost(std::string_view name,
                            std::initializer_list<std::string_view> addresses,
                            std::string_view nic) {
  std::string list;
  for (std::string_view a : addresses)
    list += (list.empty() ? "" : ", ") + Quote(a);
  return "[[host]]\nname = " + Quote(name) + "\naddresses = [" + list +
         "]\nnic = " + Quote(nic) + "\n";
}

inline std::string TomlSwitch(std::string_view name) {
  return "[[switch]]\nname = " + Quote(name) + "\n";
}

// One direction: from's output port toward to.
inline std::string TomlLink(std::string_view from, std::string_view to,
                            std::string_view capacity) {
  return "[[link]]\nfrom = " + Quote(from) + "\nto = " + Quote(to) +
         "\ncapacity = " + Quote(capacity) + "\n";
}

// A cable: both directions at one capacity.
inline std::string TomlCable(std::string_view a, std::string_view b,
                             std::string_view capacity) {
  return TomlLink(a, b, capacity) + TomlLink(b, a, capacity);
}

// Hosts a1, a2 on switch tor1 and b1, b2 on tor2, behind 10gbit cables;
// a1 and b1 have 1gbit NICs, a2 and b2 `nic2`; tor1 -> tor2 is 1gbit
// (800mbit reservable), tor2 -> tor1 10gbit.
inline std::string TwoRacks(std::string_view nic2) {
  return TomlHost("a1", {"10.0.1.1"}, "1gbit") +
         TomlHost("a2", {"10.0.1.2"}, nic2) +
         TomlHost("b1", {"10.0.2.1"}, "1gbit") +
         TomlHost("b2", {"10.0.2.2"}, nic2) + TomlSwitch("tor1") +
         TomlSwitch("tor2") + TomlCable("a1", "tor1", "10gbit") +
         TomlCable("a2", "tor1", "10gbit") + TomlCable("b1", "tor2", "10gbit") +
         TomlCable("b2", "tor2", "10gbit") + TomlLink("tor1", "tor2", "1gbit") +
         TomlLink("tor2", "tor1", "10gbit");
}

}  // namespace parq::parqd::test

#endif
