// SPDX-License-Identifier: GPL-2.0
// The JSON reports: exact format of the latency summary, and that what is
// printed parses back to the same values (escaping included).
#include <gtest/gtest.h>

#include "roles.h"

using namespace parqbench;

TEST(Json, SummaryExact) {
  Summary s;
  s.count = 3;
  s.mean = 2.5;
  s.min = 1;
  s.p50 = 2;
  s.p99 = 4;
  s.p999 = 4;
  s.max = 4;
  EXPECT_EQ(
      SummaryJson(s).dump(),
      R"({"count":3,"max":4,"mean":2.5,"min":1,"p50":2,"p99":4,"p999":4})");
}

TEST(Json, EmptySummaryIsNullNotZero) {
  EXPECT_EQ(
      SummaryJson(Summary{}).dump(),
      R"({"count":0,"max":null,"mean":null,"min":null,"p50":null,"p99":null,"p999":null})");
}

TEST(Json, EscapingRoundTrips) {
  // Strings in reports come from the command line; whatever they hold,
  // the output must be valid JSON that reads back the same.
  const std::string nasty = "a\"b\\c\n\t\x01 \xc3\xa9 </script>";
  json j;
  j["listen"] = nasty;
  std::string text = j.dump(2);
  EXPECT_NE(text.find("\\\"b\\\\c\\n\\t\\u0001"), std::string::npos) << text;
  EXPECT_EQ(json::parse(text)["listen"], nasty);
}

TEST(Json, LargeIntegersStayExact) {
  json j;
  j["completion_ns"] = uint64_t(18446744073709551615ull);
  EXPECT_EQ(j.dump(), R"({"completion_ns":18446744073709551615})");
  EXPECT_EQ(json::parse(j.dump())["completion_ns"].get<uint64_t>(),
            18446744073709551615ull);
}
