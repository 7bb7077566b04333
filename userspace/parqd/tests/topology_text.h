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

}  // namespace parq::parqd::test

#endif
