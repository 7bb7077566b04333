// SPDX-License-Identifier: GPL-2.0
//
// A checker of the Prometheus text parqd writes, for every test of a
// metrics renderer.

#ifndef PARQD_TESTS_PROM_CHECK_H
#define PARQD_TESTS_PROM_CHECK_H

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace parq::parqd::test {

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

// Consumes a non-empty run of characters from `set` at the front of `s`.
inline bool Eat(std::string_view& s, std::string_view set) {
  const size_t n = std::min(s.find_first_not_of(set), s.size());
  s.remove_prefix(n);
  return n > 0;
}

inline bool Lit(std::string_view& s, std::string_view lit) {
  if (s.substr(0, lit.size()) != lit)
    return false;
  s.remove_prefix(lit.size());
  return true;
}

constexpr std::string_view kName = "abcdefghijklmnopqrstuvwxyz_";

// The subset of the exposition format parqd writes:
//   # HELP name text
//   # TYPE name counter|gauge
//   name[{label="value"}] digits
inline bool WellFormed(std::string_view l) {
  if (Lit(l, "# HELP "))
    return Eat(l, kName) && Lit(l, " ") && !l.empty();
  if (Lit(l, "# TYPE "))
    return Eat(l, kName) && Lit(l, " ") && (l == "counter" || l == "gauge");
  if (!Eat(l, kName))
    return false;
  if (Lit(l, "{") &&
      !(Eat(l, kName) && Lit(l, "=\"") && Eat(l, kName) && Lit(l, "\"}")))
    return false;
  return Lit(l, " ") && Eat(l, "0123456789") && l.empty();
}

// Every line well-formed; each family's HELP just before its TYPE, one
// TYPE per family, its samples right after; a name ending in _total is a
// counter.  Counts the families into *families when given.
inline ::testing::AssertionResult PromWellFormed(const std::string& text,
                                                 size_t* families = nullptr) {
  if (text.empty() || text.back() != '\n')
    return ::testing::AssertionFailure() << "empty, or no final newline";
  std::map<std::string, std::string> types;
  std::string help;     // name of the HELP line just before, if any
  std::string current;  // the family whose samples may follow
  for (const auto& l : Lines(text)) {
    if (!WellFormed(l))
      return ::testing::AssertionFailure() << "malformed line: " << l;
    std::istringstream in(l);
    std::string first, kind, name, type;
    in >> first;
    if (first != "#") {
      if (first.substr(0, first.find('{')) != current)
        return ::testing::AssertionFailure()
               << "sample outside its family: " << l;
      continue;
    }
    in >> kind >> name >> type;
    if (kind == "HELP") {
      help = name;
      continue;
    }
    if (help != name)
      return ::testing::AssertionFailure()
             << "no HELP just before TYPE " << name;
    if (!types.emplace(name, type).second)
      return ::testing::AssertionFailure() << "second TYPE of " << name;
    if (name.ends_with("_total") && type != "counter")
      return ::testing::AssertionFailure() << name << " is not a counter";
    current = name;
    help.clear();
  }
  if (families)
    *families = types.size();
  return ::testing::AssertionSuccess();
}

// The metric families of `text`, by their TYPE lines.
inline std::vector<std::string> PromFamilies(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& l : Lines(text)) {
    std::istringstream in(l);
    std::string hash, kind, name;
    in >> hash >> kind >> name;
    if (hash == "#" && kind == "TYPE")
      out.push_back(name);
  }
  return out;
}

#ifdef PARQ_DOC_DIR
// Whether Documentation/parqd.md or parqd-protocol.md has a table row for
// metric family `name`.
inline bool PromDocumented(const std::string& name) {
  for (const char* doc : {"/parqd.md", "/parqd-protocol.md"}) {
    std::ifstream in(std::string(PARQ_DOC_DIR) + doc);
    for (std::string l; std::getline(in, l);)
      if (l.starts_with("| `" + name + "`") ||
          l.starts_with("| `" + name + "{"))
        return true;
  }
  return false;
}
#endif

}  // namespace parq::parqd::test

#endif
