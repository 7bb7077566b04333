// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of cli.cc: parqd's and parqctl's command lines.

#include <gtest/gtest.h>

#include <linux/parq.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>

#include "ctl/cli.h"
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
  EXPECT_TRUE(a.overrides.values.empty());
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
                          "--keys-file",
                          "p.keys",
                          "--key-id",
                          "3",
                          "--max-clock-skew",
                          "2s",
                          "--metrics-file",
                          "m.prom",
                          "--metrics-period",
                          "1s",
                          "--threshold-recv",
                          "10",
                          "--local-floor",
                          "25",
                          "--link-rate",
                          "1000000000",
                          "--epoch",
                          "2ms",
                          "--hold",
                          "5ms",
                          "--parallel-min-bytes",
                          "3000",
                          "--lease",
                          "4",
                          "--receiver",
                          "true",
                          "--status-socket",
                          "/tmp/s.sock"});
  const auto& a = std::get<ParqdArgs>(r.parqd);
  EXPECT_EQ(a.config, "x.toml");
  EXPECT_TRUE(a.check_config);
  EXPECT_EQ(a.log_level, "debug");
  const std::map<std::string, std::string, std::less<>> want = {
      {"interface", "eth1"},
      {"listen-address", "::1"},
      {"listen-port", "9"},
      {"node-id", "4"},
      {"key-file", "k"},
      {"keys-file", "p.keys"},
      {"key-id", "3"},
      {"max-clock-skew", "2s"},
      {"metrics-file", "m.prom"},
      {"metrics-period", "1s"},
      {"threshold-recv", "10"},
      {"local-floor", "25"},
      {"link-rate", "1000000000"},
      {"epoch", "2ms"},
      {"hold", "5ms"},
      {"parallel-min-bytes", "3000"},
      {"lease", "4"},
      {"receiver", "true"},
      {"status-socket", "/tmp/s.sock"}};
  EXPECT_EQ(a.overrides.values, want);
  // Every key with an option was given once above.
  size_t options = 0;
  for (const ConfigKeyInfo& k : ConfigKeys())
    options += k.option;
  EXPECT_EQ(options, want.size());
}

TEST(ParqdCliTest, HelpListsEveryConfigKey) {
  const Parsed r = Parqd({"--help"});
  EXPECT_EQ(std::get<int>(r.parqd), 0);
  for (const ConfigKeyInfo& k : ConfigKeys()) {
    EXPECT_NE(r.out.find("\n  " + std::string(k.example.substr(
                                      0, k.example.find('\n')))),
              std::string::npos)
        << k.name;
    if (k.option) {
      EXPECT_NE(r.out.find("--" + std::string(k.name)), std::string::npos)
          << k.name;
    }
  }
  EXPECT_NE(r.out.find("--check-config"), std::string::npos);
  // No line of the keys' help is wider than a terminal.
  const size_t keys = r.out.find("Configuration file (TOML;");
  ASSERT_NE(keys, std::string::npos);
  for (size_t i = keys, j; i < r.out.size(); i = j + 1) {
    j = std::min(r.out.find('\n', i), r.out.size());
    EXPECT_LE(j - i, 80u) << r.out.substr(i, j - i);
  }
}

TEST(ParqdCliTest, Errors) {
  Parsed r = Parqd({"--epoch", "5"});
  EXPECT_NE(std::get<int>(r.parqd), 0);
  EXPECT_NE(r.err.find("has no unit"), std::string::npos) << r.err;
  r = Parqd({"--log-level", "loud"});
  EXPECT_NE(std::get<int>(r.parqd), 0);
  r = Parqd({"--listen-port", "x"});
  EXPECT_NE(std::get<int>(r.parqd), 0);
  EXPECT_NE(r.err.find("\"x\" is not an integer"), std::string::npos) << r.err;
  r = Parqd({"--receiver", "yes"});
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
      {{"qdisc", "show", "eth0\nx"}, "is not an interface name"},
      {{"qdisc", "show", ".."}, "is not an interface name"},
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

TEST(CtlCliTest, Peers) {
  Parsed r = Ctl({"peers"});
  CtlArgs a = std::get<CtlArgs>(r.ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kPeers);
  EXPECT_EQ(a.status_socket, "/run/parqd/status.sock");
  EXPECT_FALSE(a.json);
  a = std::get<CtlArgs>(Ctl({"peers", "--socket", "/tmp/s", "--json"}).ctl);
  EXPECT_EQ(a.status_socket, "/tmp/s");
  EXPECT_TRUE(a.json);
}

TEST(CtlCliTest, ReserveChangeRelease) {
  Parsed r = Ctl({"reserve", "--to", "n2", "--rate", "250mbit", "--match",
                  "proto=udp", "--socket", "/tmp/s"});
  auto a = std::get<CtlArgs>(r.ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kReserve);
  EXPECT_EQ(a.to, "n2");
  EXPECT_EQ(a.rate, 250'000'000u);
  EXPECT_EQ(a.match, "proto=udp");
  EXPECT_EQ(a.socket, "/tmp/s");
  a = std::get<CtlArgs>(Ctl({"change", "n1-00", "--rate", "1gbit"}).ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kChange);
  EXPECT_EQ(a.id, "n1-00");
  EXPECT_EQ(a.rate, 1'000'000'000u);
  EXPECT_EQ(a.socket, "/run/parqd/admission.sock");
  a = std::get<CtlArgs>(Ctl({"release", "n1-00", "--json"}).ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kRelease);
  EXPECT_TRUE(a.json);
  a = std::get<CtlArgs>(Ctl({"reservations"}).ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kReservations);
  EXPECT_TRUE(a.etcd.empty());

  r = Ctl({"reserve", "--to", "n2", "--rate", "fast"});
  EXPECT_EQ(std::get<int>(r.ctl), 2);
  EXPECT_NE(r.err.find("parqctl: --rate fast: "), std::string::npos) << r.err;
  r = Ctl({"reserve", "--rate", "1mbit"});
  EXPECT_EQ(std::get<int>(r.ctl), 2);
  EXPECT_EQ(r.err,
            "parqctl reserve: give --to HOST, or --hosts A,B,... for a job "
            "admitted as a whole\n");

  // Jobs admitted as a whole.
  unsetenv("SLURM_JOB_ID");
  a = std::get<CtlArgs>(
      Ctl({"reserve", "--hosts", "n1,n2,n3", "--rate", "1mbit", "--job", "7"})
          .ctl);
  EXPECT_EQ(a.hosts, (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(a.job, "7");
  r = Ctl({"reserve", "--hosts", "n1,n2", "--to", "n2", "--rate", "1mbit"});
  EXPECT_NE(std::get<int>(r.ctl), 0);
  EXPECT_NE(r.err.find("excludes"), std::string::npos) << r.err;
  r = Ctl({"reserve", "--hosts", "n1,n2", "--rate", "1mbit"});
  EXPECT_EQ(std::get<int>(r.ctl), 2);
  EXPECT_EQ(r.err,
            "parqctl reserve: --hosts needs the job's name: --job NAME (or "
            "$SLURM_JOB_ID)\n");
  r = Ctl({"join", "--leader", "n1"});
  EXPECT_EQ(std::get<int>(r.ctl), 2);
  EXPECT_EQ(r.err,
            "parqctl join: give the job's name: --job NAME (or "
            "$SLURM_JOB_ID)\n");
  setenv("SLURM_JOB_ID", "42", 1);
  a = std::get<CtlArgs>(Ctl({"join", "--leader", "n1"}).ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kJoin);
  EXPECT_EQ(a.job, "42");
  EXPECT_EQ(a.leader, "n1");
  a = std::get<CtlArgs>(Ctl({"leave"}).ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kLeave);
  EXPECT_EQ(a.job, "42");
  unsetenv("SLURM_JOB_ID");
  a = std::get<CtlArgs>(Ctl({"change", "--job", "7", "--rate", "2mbit"}).ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kChange);
  EXPECT_EQ(a.job, "7");
  EXPECT_TRUE(a.id.empty());
  r = Ctl({"change", "--rate", "2mbit"});
  EXPECT_EQ(std::get<int>(r.ctl), 2);
  EXPECT_EQ(r.err,
            "parqctl change: give the reservation's ID, or --job NAME\n");
  r = Ctl({"reservations", "--job", "7", "--topology", "t.toml", "--etcd",
           "http://127.0.0.1:2379"});
  EXPECT_EQ(std::get<int>(r.ctl), 2);
  EXPECT_EQ(r.err,
            "parqctl: reservations: --job asks this host's parqd; leave out "
            "--incoming, --topology and --etcd\n");
  r = Ctl({"reservations", "--topology", "t.toml"});
  EXPECT_EQ(std::get<int>(r.ctl), 2);
  EXPECT_EQ(r.err,
            "parqctl: reservations: give --topology and --etcd together (the "
            "cluster's, from etcd), or neither (this host's parqd)\n");
  r = Ctl({"reservations", "--incoming", "--topology", "t.toml", "--etcd",
           "http://127.0.0.1:2379"});
  EXPECT_EQ(std::get<int>(r.ctl), 2);
  EXPECT_EQ(r.err,
            "parqctl: reservations: --incoming asks this host's parqd; leave "
            "out --topology and --etcd\n");
  r = Ctl({"reservations", "--incoming", "--json"});
  ASSERT_TRUE(std::holds_alternative<CtlArgs>(r.ctl)) << r.err;
  EXPECT_TRUE(std::get<CtlArgs>(r.ctl).incoming);
}

TEST(CtlCliTest, EtcdOverTls) {
  auto a =
      std::get<CtlArgs>(Ctl({"links", "--topology", "t.toml", "--etcd",
                             "https://e1:2379,https://e2:2379", "--cacert",
                             "/ca.pem", "--cert", "/c.pem", "--key", "/k.pem"})
                            .ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kLinks);
  EXPECT_EQ(a.etcd,
            (std::vector<std::string>{"https://e1:2379", "https://e2:2379"}));
  EXPECT_EQ(a.etcd_tls, (EtcdTls{"/ca.pem", "/c.pem", "/k.pem"}));

  Parsed r = Ctl({"links", "--topology", "t.toml", "--etcd", "https://e:2379",
                  "--cert", "/c.pem"});
  EXPECT_EQ(std::get<int>(r.ctl), 2);
  EXPECT_EQ(r.err, "parqctl: give --cert and --key together\n");
  r = Ctl({"reservations", "--topology", "t.toml", "--etcd", "http://e:2379",
           "--cacert", "/ca.pem"});
  EXPECT_EQ(std::get<int>(r.ctl), 2);
  EXPECT_EQ(r.err,
            "parqctl: --cacert, --cert and --key are for https:// endpoints, "
            "not http://e:2379\n");
}

TEST(CtlCliTest, KeyDerive) {
  auto a = std::get<CtlArgs>(
      Ctl({"key", "derive", "--secret", "/s.key", "--node", "7", "--peer",
           "1,2", "--peer", "3", "--key-id", "4", "--output", "o"})
          .ctl);
  EXPECT_EQ(a.cmd, CtlArgs::Cmd::kKeyDerive);
  EXPECT_EQ(a.secret_file, "/s.key");
  EXPECT_EQ(a.node, 7u);
  EXPECT_EQ(a.peers, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(a.key_id, 4u);
  EXPECT_EQ(a.output, "o");
  a = std::get<CtlArgs>(
      Ctl({"key", "derive", "--secret", "s", "--node", "1", "--peer", "2"})
          .ctl);
  EXPECT_EQ(a.key_id, 1u);
  EXPECT_EQ(a.output, "");

  Parsed r = Ctl({"key", "derive", "--node", "1", "--peer", "2"});
  EXPECT_NE(std::get<int>(r.ctl), 0);
  EXPECT_NE(r.err.find("--secret is required"), std::string::npos) << r.err;
  r = Ctl({"key", "derive", "--secret", "s", "--node", "1", "--peer", "2",
           "--key-id", "0"});
  EXPECT_NE(std::get<int>(r.ctl), 0);
  r = Ctl({"key", "derive", "--secret", "s", "--node", "-1", "--peer", "2"});
  EXPECT_NE(std::get<int>(r.ctl), 0);
}

// --version: the release of ../VERSION (CMake's PARQ_VERSION), exit 0,
// even where parqctl requires a subcommand.
TEST(CliTest, Version) {
  const Parsed d = Parqd({"--version"});
  EXPECT_EQ(std::get<int>(d.parqd), 0);
  EXPECT_EQ(d.out, std::string("parqd ") + PARQ_VERSION + "\n");
  const Parsed c = Ctl({"--version"});
  EXPECT_EQ(std::get<int>(c.ctl), 0);
  EXPECT_EQ(c.out, std::string("parqctl ") + PARQ_VERSION + "\n");
  EXPECT_NE(std::string(PARQ_VERSION), "");
}

TEST(CtlCliTest, Help) {
  const Parsed r = Ctl({"credit", "set", "--help"});
  EXPECT_EQ(std::get<int>(r.ctl), 0);
  EXPECT_NE(r.out.find("--lease"), std::string::npos) << r.out;
}

}  // namespace
