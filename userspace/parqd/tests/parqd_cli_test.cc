// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of cli.cc: parqd's and parqctl's command lines.

#include <gtest/gtest.h>

#include <linux/parq.h>

#include <sstream>

#include "cli.h"
#include "test_util.h"

namespace {

using namespace parq::parqd;
using parq::parqd::test::A;

struct Parsed {
  std::variant<ParqdArgs, int> parqd = 0;
  std::variant<CtlArgs, int> ctl = 0;
  std::string out, err;
};

Parsed Parqd(std::vector<std::string> args) {
  args.insert(args.begin(), "parqd");
  std::ostringstream out, err;
  Parsed r;
  r.parqd = ParseParqdArgs(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

Parsed Ctl(std::vector<std::string> args) {
  args.insert(args.begin(), "parqctl");
  std::ostringstream out, err;
  Parsed r;
  r.ctl = ParseCtlArgs(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

TEST(ParqdCliTest, Defaults) {
  const Parsed r = Parqd({});
  const auto& a = std::get<ParqdArgs>(r.parqd);
  EXPECT_EQ(a.config, "/etc/parq/parqd.toml");
  EXPECT_FALSE(a.check_config);
  EXPECT_EQ(a.log_level, "info");
  EXPECT_FALSE(a.overrides.interface);
}

TEST(ParqdCliTest, EveryOverride) {
  const Parsed r = Parqd({"-c",
                          "x.toml",
                          "--check-config",
                          "--log-level",
                          "debug",
                          "--interface",
                          "eth1",
                          "--listen-address",
                          "::1",
                          "--listen-port",
                          "9",
                          "--node-id",
                          "4",
                          "--key-file",
                          "k",
                          "--metrics-file",
                          "m.prom",
                          "--metrics-period",
                          "1s",
                          "--threshold-recv",
                          "10",
                          "--epoch",
                          "2ms",
                          "--hold",
                          "5ms",
                          "--lease",
                          "4"});
  const auto& a = std::get<ParqdArgs>(r.parqd);
  EXPECT_EQ(a.config, "x.toml");
  EXPECT_TRUE(a.check_config);
  EXPECT_EQ(a.log_level, "debug");
  const ConfigOverrides& o = a.overrides;
  EXPECT_EQ(o.interface, "eth1");
  EXPECT_EQ(o.listen_address, "::1");
  EXPECT_EQ(o.listen_port, 9);
  EXPECT_EQ(o.node_id, 4);
  EXPECT_EQ(o.key_file, "k");
  EXPECT_EQ(o.metrics_file, "m.prom");
  EXPECT_EQ(o.metrics_period, "1s");
  EXPECT_EQ(o.threshold_recv, 10);
  EXPECT_EQ(o.epoch, "2ms");
  EXPECT_EQ(o.hold, "5ms");
  EXPECT_EQ(o.lease, 4);
}

TEST(ParqdCliTest, HelpListsEveryConfigKey) {
  const Parsed r = Parqd({"--help"});
  EXPECT_EQ(std::get<int>(r.parqd), 0);
  for (const char* k :
       {"interface", "node-id", "key-file", "listen-address", "listen-port",
        "metrics-file", "metrics-period", "[[peer]]", "threshold-recv", "epoch",
        "hold", "lease", "--check-config", "receiver", "addresses",
        "--receiver"})
    EXPECT_NE(r.out.find(k), std::string::npos) << k;
}

TEST(ParqdCliTest, Errors) {
  Parsed r = Parqd({"--epoch", "5"});
  EXPECT_NE(std::get<int>(r.parqd), 0);
  EXPECT_NE(r.err.find("has no unit"), std::string::npos) << r.err;
  r = Parqd({"--log-level", "loud"});
  EXPECT_NE(std::get<int>(r.parqd), 0);
  r = Parqd({"--listen-port", "x"});
  EXPECT_NE(std::get<int>(r.parqd), 0);
  r = Parqd({"extra"});
  EXPECT_NE(std::get<int>(r.parqd), 0);
}

TEST(CtlCliTest, CreditShow) {
  Parsed r = Ctl({"credit", "show"});
  auto a = std::get<CtlArgs>(r.ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kCreditShow);
  EXPECT_FALSE(a.json);
  r = Ctl({"credit", "show", "--json"});
  EXPECT_TRUE(std::get<CtlArgs>(r.ctl).json);
}

TEST(CtlCliTest, CreditSet) {
  Parsed r = Ctl({"credit", "set", "10.0.0.2", "--credit", "1500", "--epoch",
                  "2ms", "--lease", "1s", "--json"});
  auto a = std::get<CtlArgs>(r.ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kCreditSet);
  EXPECT_EQ(a.address, A("10.0.0.2"));
  EXPECT_EQ(a.credit, 1500u);
  EXPECT_EQ(a.epoch_ns, 2'000'000u);
  EXPECT_EQ(a.lease_ns, 1'000'000'000u);
  EXPECT_TRUE(a.json);
  r = Ctl({"credit", "set", "fd00::2", "--credit", "0", "--lease", "500ms"});
  a = std::get<CtlArgs>(r.ctl);
  EXPECT_EQ(a.address, A("fd00::2"));
  EXPECT_FALSE(a.epoch_ns);
}

TEST(CtlCliTest, CreditSetErrors) {
  struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"credit", "set", "10.0.0.2", "--credit", "1"}, "--lease is required"},
      {{"credit", "set", "10.0.0.2", "--lease", "1s"}, "--credit is required"},
      {{"credit", "set", "--credit", "1", "--lease", "1s"}, "ADDR is required"},
      {{"credit", "set", "host", "--credit", "1", "--lease", "1s"},
       "\"host\" is not an IPv4 or IPv6 address"},
      {{"credit", "set", "10.0.0.2", "--credit", "4294967296", "--lease", "1s"},
       "--credit"},
      {{"credit", "set", "10.0.0.2", "--credit", "1", "--lease", "3601s"},
       "--lease 3601s is out of range; give 1ns to 1h"},
      {{"credit", "set", "10.0.0.2", "--credit", "1", "--lease", "1"},
       "has no unit"},
      {{"credit", "set", "10.0.0.2", "--credit", "1", "--lease", "1s",
        "--epoch", "20s"},
       "--epoch 20s is out of range; give 10us to 10s"},
      {{"credit"}, "A subcommand is required"},
      {{}, "A subcommand is required"},
      {{"qdisc", "show"}, "DEV is required"},
  };
  for (const auto& c : cases) {
    const Parsed r = Ctl(c.args);
    ASSERT_TRUE(std::holds_alternative<int>(r.ctl)) << c.message;
    EXPECT_NE(std::get<int>(r.ctl), 0) << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos)
        << "expected \"" << c.message << "\" in: " << r.err;
  }
}

TEST(CtlCliTest, CreditClearAndQdiscShow) {
  Parsed r = Ctl({"credit", "clear"});
  auto a = std::get<CtlArgs>(r.ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kCreditClear);
  EXPECT_FALSE(a.address);
  r = Ctl({"credit", "clear", "10.0.0.3", "--json"});
  a = std::get<CtlArgs>(r.ctl);
  EXPECT_EQ(a.address, A("10.0.0.3"));
  EXPECT_TRUE(a.json);
  r = Ctl({"qdisc", "show", "eth0", "--json"});
  a = std::get<CtlArgs>(r.ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kQdiscShow);
  EXPECT_EQ(a.dev, "eth0");
  EXPECT_TRUE(a.json);
}

TEST(CtlCliTest, Help) {
  const Parsed r = Ctl({"credit", "set", "--help"});
  EXPECT_EQ(std::get<int>(r.ctl), 0);
  EXPECT_NE(r.out.find("--lease"), std::string::npos) << r.out;
}

}  // namespace
