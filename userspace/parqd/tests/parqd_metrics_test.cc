// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of metrics.cc: the Prometheus text format, and the atomic
// textfile write.

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "prom_check.h"
#include "proto/metrics.h"
#include "test_util.h"

namespace {

using namespace parq::parqd;
using namespace parq::parqd::test;

std::string Render(const Counters& c, size_t credit_entries) {
  PromText t;
  RenderInbox(t, c, credit_entries);
  return t.text();
}

Counters Sample() {
  Counters c;
  c.received = 12;
  c.accepted = 7;
  c.grants = 6;
  c.releases = 1;
  c.expired = 2;
  c.drop(DropReason::kBadMac) = 3;
  c.drop(DropReason::kMalformed) = 2;
  c.malformed[size_t(wire::WireError::kBadMagic)] = 2;
  return c;
}

TEST(Prometheus, LineChecker) {
  EXPECT_TRUE(WellFormed("a_total 1"));
  EXPECT_TRUE(WellFormed("a{b=\"c\"} 10"));
  EXPECT_TRUE(WellFormed("# TYPE a gauge"));
  EXPECT_TRUE(WellFormed("# HELP a Some text."));
  EXPECT_FALSE(WellFormed("a 1 "));
  EXPECT_FALSE(WellFormed("a{b=c} 1"));
  EXPECT_FALSE(WellFormed("# TYPE a histogram"));
  EXPECT_FALSE(WellFormed("# HELP a"));
  EXPECT_FALSE(WellFormed("a -1"));
}

TEST(Prometheus, EveryLineIsWellFormed) {
  PromText text;
  RenderInbox(text, Sample(), 4);
  size_t families = 0;
  EXPECT_TRUE(PromWellFormed(text.text(), &families));
  EXPECT_EQ(families, 9u);
}

TEST(Prometheus, CheckerCatchesBadFamilies) {
  EXPECT_TRUE(
      PromWellFormed("# HELP a_total A.\n# TYPE a_total counter\n"
                     "a_total 1\n"));
  EXPECT_FALSE(PromWellFormed("a_total 1\n"));
  EXPECT_FALSE(PromWellFormed("# TYPE a_total counter\na_total 1\n"));
  EXPECT_FALSE(
      PromWellFormed("# HELP a_total A.\n# TYPE a_total gauge\n"
                     "a_total 1\n"));
  EXPECT_FALSE(
      PromWellFormed("# HELP a A.\n# TYPE a gauge\na 1\n"
                     "# HELP a A.\n# TYPE a gauge\na 2\n"));
  EXPECT_FALSE(PromWellFormed("# HELP a A.\n# TYPE a gauge\nb 1\n"));
  EXPECT_FALSE(PromWellFormed("# HELP a A.\n# TYPE a gauge\na 1"));
}

TEST(Prometheus, Values) {
  const std::string text = Render(Sample(), 4);
  for (const char* want : {
           "parqd_messages_received_total 12\n",
           "parqd_messages_accepted_total 7\n",
           "parqd_grants_applied_total 6\n",
           "parqd_releases_applied_total 1\n",
           "parqd_messages_dropped_total{reason=\"bad_mac\"} 3\n",
           "parqd_messages_dropped_total{reason=\"malformed\"} 2\n",
           "parqd_messages_dropped_total{reason=\"stale\"} 0\n",
           "parqd_messages_malformed_total{error=\"bad_magic\"} 2\n",
           "parqd_messages_malformed_total{error=\"short\"} 0\n",
           "parqd_credit_expired_total 2\n",
           "# TYPE parqd_credit_entries gauge\n",
           "parqd_credit_entries 4\n",
       })
    EXPECT_NE(text.find(want), std::string::npos) << want;
  // The MAC and libcrypto failures are reasons of their own.
  EXPECT_EQ(text.find("error=\"bad_mac\""), std::string::npos);
}

TEST(Prometheus, EveryReasonAndErrorIsPresent) {
  const std::string text = Render(Counters{}, 0);
  for (size_t i = 0; i < kDropReasonCount; i++)
    EXPECT_NE(
        text.find("{reason=\"" + std::string(Name(static_cast<DropReason>(i))) +
                  "\"} 0\n"),
        std::string::npos)
        << i;
  EXPECT_EQ(Lines(text).size(),
            7 * 3 + 2 + kDropReasonCount + 2 + (wire::kWireErrorCount - 2));
}

TEST(Prometheus, LargeValues) {
  Counters c;
  c.received = UINT64_MAX;
  EXPECT_NE(
      Render(c, 0).find("parqd_messages_received_total 18446744073709551615\n"),
      std::string::npos);
}

class Textfile : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()); }
  void TearDown() override { ASSERT_TRUE(tmp_.Remove()); }
  std::vector<std::string> Entries() {
    std::vector<std::string> out;
    DIR* d = opendir(dir_.c_str());
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.')
        out.push_back(e->d_name);
    closedir(d);
    return out;
  }
  parq::parqd::test::TempDir tmp_{"parqd_metrics_test"};
  const std::string dir_ = tmp_.path();
};

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f),
                     std::istreambuf_iterator<char>());
}

TEST_F(Textfile, WritesAndReplacesLeavingNoTemporaryFile) {
  const std::string path = dir_ + "/parqd.prom";
  ASSERT_FALSE(WriteFileAtomically(path, "a 1\n"));
  EXPECT_EQ(Slurp(path), "a 1\n");
  ASSERT_FALSE(WriteFileAtomically(path, Render(Sample(), 1)));
  EXPECT_EQ(Slurp(path), Render(Sample(), 1));
  EXPECT_EQ(Entries(), std::vector<std::string>{"parqd.prom"});
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(Textfile, MissingDirectoryIsAClearError) {
  const auto e = WriteFileAtomically(dir_ + "/none/parqd.prom", "a 1\n");
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("cannot create a temporary file next to " + dir_ +
                    "/none/parqd.prom"),
            std::string::npos)
      << *e;
}

TEST_F(Textfile, RenameOntoADirectoryFailsAndCleansUp) {
  const std::string path = dir_ + "/parqd.prom";
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((path + "/x").c_str(), 0755), 0);  // not empty
  const auto e = WriteFileAtomically(path, "a 1\n");
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("cannot rename"), std::string::npos) << *e;
  EXPECT_EQ(Entries(), std::vector<std::string>{"parqd.prom"});
}

}  // namespace
