// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of config.cc: a valid file, the defaults, every missing or
// invalid key with its message, command-line overrides, durations.

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "daemon/daemon.h"
#include "test_util.h"

namespace {

using namespace parq::parqd;
using parq::parqd::test::A;

const std::string kMinimal = R"(
interface = "eth0"
node-id = 1
key-file = "/etc/parq/cluster.key"

[[peer]]
id = 2
addresses = ["10.0.0.2", "fd00::2"]
)";

Config Ok(const std::string& text, const ConfigOverrides& o = {}) {
  auto r = ParseConfig(text, "parqd.toml", o);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r.value() : Config{};
}

std::string Error(const std::string& text, const ConfigOverrides& o = {}) {
  auto r = ParseConfig(text, "parqd.toml", o);
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.error();
}

// kMinimal with `key = value` replaced or added (value empty: removed).
std::string With(const std::string& key, const std::string& value) {
  std::string out;
  bool replaced = false;
  size_t pos = 0;
  std::string text = kMinimal;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.rfind(key + " =", 0) == 0) {
      replaced = true;
      if (!value.empty())
        out += key + " = " + value + "\n";
      continue;
    }
    if (!replaced && line == "[[peer]]" && !value.empty()) {
      out += key + " = " + value + "\n";
      replaced = true;
    }
    out += line + "\n";
  }
  return out;
}

TEST(ConfigTest, MinimalFileTakesTheDefaults) {
  const Config c = Ok(kMinimal);
  EXPECT_EQ(c.interface, "eth0");
  EXPECT_EQ(c.node_id, 1u);
  EXPECT_EQ(c.key_file, "/etc/parq/cluster.key");
  ASSERT_EQ(c.peers.size(), 1u);
  EXPECT_EQ(c.peers[0].id, 2u);
  EXPECT_EQ(c.peers[0].addresses,
            (std::vector<Address>{A("10.0.0.2"), A("fd00::2")}));
  EXPECT_EQ(c.listen_address, "::");
  EXPECT_EQ(c.listen_port, 7207);
  EXPECT_EQ(c.threshold_recv, 0u);
  EXPECT_EQ(c.epoch_ns, 1'000'000u);
  EXPECT_EQ(c.hold_ns, 10'000'000u);
  EXPECT_EQ(c.parallel_min_bytes, 0u);
  EXPECT_EQ(c.lease, 49);
  EXPECT_EQ(c.key_id, 1u);
  EXPECT_EQ(c.max_clock_skew_ns, 500'000'000u);
  EXPECT_EQ(c.metrics_file, "");
  EXPECT_EQ(c.metrics_period_ns, 10'000'000'000u);
  EXPECT_EQ(c.status_socket, "/run/parqd/status.sock");
  EXPECT_EQ(c.parallel_dscp, PARQ_DSCP_DEFAULT);
  EXPECT_EQ(c.control_dscp, 48);  // CS6
}

TEST(ConfigTest, FullFile) {
  const Config c = Ok(R"(
interface = "veth0a"
listen-address = "10.77.0.1"
listen-port = 9000
node-id = 7
key-file = "k"
key-id = 4000000000
max-clock-skew = "50ms"
threshold-recv = 1500
local-floor = 0
link-rate = 10000000000
epoch = "2ms"
hold = "20ms"
parallel-min-bytes = 12500
lease = 5
metrics-file = "/tmp/parqd.prom"
metrics-period = "100ms"
parallel-dscp = ["AF41", 46, "cs5"]
control-dscp = "CS7"
[[peer]]
id = 8
addresses = ["10.77.0.2"]
[[peer]]
id = 9
addresses = ["10.77.0.3"]
)");
  EXPECT_EQ(c.listen_address, "10.77.0.1");
  EXPECT_EQ(c.listen_port, 9000);
  EXPECT_EQ(c.node_id, 7u);
  EXPECT_EQ(c.key_id, 4'000'000'000u);
  EXPECT_EQ(c.max_clock_skew_ns, 50'000'000u);
  EXPECT_EQ(c.threshold_recv, 1500u);
  EXPECT_EQ(c.local_floor, 0u);
  EXPECT_EQ(c.link_rate, 10'000'000'000u);
  EXPECT_EQ(c.epoch_ns, 2'000'000u);
  EXPECT_EQ(c.hold_ns, 20'000'000u);
  EXPECT_EQ(c.parallel_min_bytes, 12'500u);
  EXPECT_EQ(c.lease, 5);
  EXPECT_EQ(c.metrics_file, "/tmp/parqd.prom");
  EXPECT_EQ(c.metrics_period_ns, 100'000'000u);
  EXPECT_EQ(c.parallel_dscp,
            PARQ_DSCP_BIT(34) | PARQ_DSCP_BIT(40) | PARQ_DSCP_BIT(46));
  EXPECT_EQ(c.control_dscp, 56);
  ASSERT_EQ(c.peers.size(), 2u);
  EXPECT_EQ(c.peers[1].id, 9u);
}

TEST(ConfigTest, MissingRequiredKeys) {
  EXPECT_EQ(Error(With("interface", "")),
            "parqd.toml: 'interface' is missing; name the interface parq "
            "runs on, e.g. interface = \"eth0\"");
  EXPECT_NE(Error(With("node-id", "")).find("'node-id' is missing"),
            std::string::npos);
  EXPECT_EQ(Error(With("key-file", "")),
            "parqd.toml: give 'key-file', the cluster key (make it with: "
            "openssl rand -hex 32), or 'keys-file', this host's pair keys "
            "(make them with: parqctl key derive)");
  EXPECT_EQ(Error(With("key-file", "\"k\"\nkeys-file = \"p.keys\"")),
            "parqd.toml: give 'key-file' or 'keys-file', not both");
  std::string pairs_only = With("key-file", "");
  pairs_only.insert(0, "keys-file = \"p.keys\"\n");
  EXPECT_EQ(Ok(pairs_only).keys_file, "p.keys");
  EXPECT_EQ(Ok(pairs_only).key_file, "");
  EXPECT_EQ(Error("interface = \"eth0\"\nnode-id = 1\nkey-file = \"k\"\n"),
            "parqd.toml: no [[peer]] section; list every host that may grant "
            "this host credit, with its id and addresses (or the whole "
            "cluster in [[host]] sections)");
}

struct BadCase {
  std::string key, value, message;
};

TEST(ConfigTest, InvalidValuesSayWhatAndWhere) {
  const BadCase cases[] = {
      {"interface", "3", "'interface': must be a string"},
      {"interface", "\"\"", "'interface': is empty"},
      {"interface", "\"averyveryverylongname\"", "is not an interface name"},
      {"node-id", "\"1\"", "'node-id': must be an integer (no quotes)"},
      {"node-id", "-1", "'node-id': is -1; give a value from 0 to"},
      {"listen-address", "\"nowhere\"",
       "'listen-address': \"nowhere\" is not an IPv4 or IPv6 address"},
      {"listen-port", "0", "'listen-port': is 0; give a value from 1 to 65535"},
      {"listen-port", "70000", "'listen-port': is 70000"},
      {"threshold-recv", "-5", "'threshold-recv': is -5"},
      {"local-floor", "101",
       "'local-floor': is 101; give a value from 0 to 100"},
      {"local-floor", "\"20%\"", "'local-floor': must be an integer"},
      {"link-rate", "-1", "'link-rate': is -1"},
      {"epoch", "1", "'epoch': must be a string: write a number with a unit"},
      {"epoch", "\"1\"", "'epoch': \"1\" has no unit"},
      {"epoch", "\"1 ms\"", "has an unknown unit"},
      {"epoch", "\"50us\"",
       "'epoch': is 50us; give a whole number of "
       "microseconds from 100us to 60s"},
      {"epoch", "\"61s\"", "'epoch': is 61s"},
      {"epoch", "\"1500ns\"", "'epoch': is 1500ns"},
      {"hold", "\"0ms\"", "'hold': must be longer than 0"},
      {"hold", "\"fast\"", "\"fast\" is not a duration"},
      {"parallel-min-bytes", "-1", "'parallel-min-bytes': is -1"},
      {"parallel-min-bytes", "4294967296",
       "'parallel-min-bytes': is 4294967296"},
      {"lease", "0", "'lease': is 0; give a value from 1 to 65535"},
      {"key-id", "0", "'key-id': is 0; give a value from 1 to 4294967295"},
      {"key-id", "4294967296", "'key-id': is 4294967296"},
      {"max-clock-skew", "\"0s\"",
       "'max-clock-skew': is 0ns; give a skew from 1ms to 60s"},
      {"max-clock-skew", "\"61s\"", "from 1ms to 60s"},
      {"lease", "\"3\"", "'lease': must be an integer"},
      {"metrics-file", "\"/var/lib/\"", "is a directory"},
      {"metrics-period", "\"1ms\"", "give a period from 10ms to 1h"},
      {"status-socket", "\"run/s.sock\"",
       "'status-socket': \"run/s.sock\" is not a socket path; give an "
       "absolute path of at most 107 characters"},
      {"status-socket", "\"/" + std::string(120, 's') + "\"",
       "is not a socket path"},
      {"parallel-dscp", "[]", "'parallel-dscp': must be a list of 1 to 64"},
      {"parallel-dscp", "\"ef\"", "'parallel-dscp': must be a list"},
      {"parallel-dscp", "[\"ef\", \"xx\"]", "or numbers 0..63"},
      {"parallel-dscp", "[64]", "or numbers 0..63"},
      {"parallel-dscp", "[-1]", "or numbers 0..63"},
      {"parallel-dscp", "[\"ef\", 46]", "'parallel-dscp': ef is listed twice"},
      {"control-dscp", "\"xx\"", "'control-dscp': must be one DSCP"},
      {"control-dscp", "[\"cs6\"]", "'control-dscp': must be one DSCP"},
      {"control-dscp", "64", "or a number 0..63"},
      {"control-dscp", "-1", "or a number 0..63"},
      {"control-dscp", "\"ef\"",
       "control-dscp ef is one of parallel-dscp: the receivers' monitors"},
      {"colour", "\"blue\"", "'colour': unknown key; the keys are interface"},
  };
  for (const BadCase& c : cases) {
    const std::string e = Error(With(c.key, c.value));
    EXPECT_NE(e.find(c.message), std::string::npos)
        << c.key << " = " << c.value << ": " << e;
    EXPECT_EQ(e.rfind("parqd.toml:", 0), 0u) << e;
  }
}

// A number names a DSCP as well as a name does; the control DSCP may be
// any that is not parallel, whichever parallel-dscp lists.
TEST(ConfigTest, ControlDscpByNumberAndBesideParallelDscp) {
  EXPECT_EQ(Ok(With("control-dscp", "10")).control_dscp, 10);
  EXPECT_EQ(Ok("parallel-dscp = [\"cs5\"]\n" + With("control-dscp", "\"ef\""))
                .control_dscp,
            46);
  EXPECT_NE(Error(With("control-dscp", "40")).find("cs5 is one of parallel"),
            std::string::npos);
}

// A name the kernel would refuse (dev_valid_name()) is refused here, a
// newline first; any name the kernel takes is taken (parqd passes it to
// no program's text input: tc's objects go over netlink).
TEST(ConfigTest, InterfaceNameIsValidatedAsTheKernelDoes) {
  for (const std::string bad :
       {"eth0\\nqdisc del dev eth0 root", "eth0 x", "eth0\\t", ".", "..", "a/b",
        "eth0:1", "sixteen-chars-xx"}) {
    const std::string e = Error(With("interface", "\"" + bad + "\""));
    EXPECT_NE(e.find("is not an interface name"), std::string::npos)
        << bad << ": " << e;
  }
  for (const std::string good :
       {"eth0", "veth0a", "br-lan.10", "fifteen-chars-x", "eth0#1"})
    EXPECT_EQ(Ok(With("interface", "\"" + good + "\"")).interface, good);
  for (const std::string good : {"a\\\"b", "a\\\\b"})
    EXPECT_EQ(Ok(With("interface", "\"" + good + "\"")).interface.size(), 3u);
}

TEST(ConfigTest, ErrorsCarryLineAndColumn) {
  EXPECT_EQ(Error(With("listen-port", "0")).substr(0, 16), "parqd.toml:6:15:");
}

TEST(ConfigTest, BadToml) {
  const std::string e = Error("interface = \"eth0\nnode-id = 1\n");
  EXPECT_EQ(e.rfind("parqd.toml:1:", 0), 0u) << e;
  EXPECT_NE(e.find("not valid TOML"), std::string::npos) << e;
}

TEST(ConfigTest, Peers) {
  const std::string head =
      "interface = \"eth0\"\nnode-id = 1\nkey-file = \"k\"\n";
  EXPECT_NE(Error(head + "peer = 3\n").find("'peer': must be a list of tables"),
            std::string::npos);
  EXPECT_NE(Error(head + "[[peer]]\naddresses = [\"10.0.0.2\"]\n")
                .find("a [[peer]] section has no 'id'"),
            std::string::npos);
  EXPECT_NE(
      Error(head + "[[peer]]\nid = 2\n").find("peer 2 has no 'addresses'"),
      std::string::npos);
  EXPECT_NE(Error(head + "[[peer]]\nid = 2\naddresses = []\n")
                .find("'peer.addresses': must be a non-empty list"),
            std::string::npos);
  EXPECT_NE(Error(head + "[[peer]]\nid = 2\naddresses = [\"x\"]\n")
                .find("\"x\" is not an IPv4 or IPv6 address"),
            std::string::npos);
  // A peer's IPv4-mapped address would be the MAC's recipient as the
  // sender writes it, while the peer sees the datagram arrive on its IPv4
  // address: every message would fail its MAC.
  EXPECT_NE(
      Error(head + "[[peer]]\nid = 2\naddresses = [\"::ffff:10.0.0.2\"]\n")
          .find("is an IPv4-mapped IPv6 address; write it as \"10.0.0.2\""),
      std::string::npos);
  EXPECT_NE(
      Error(head +
            "[[peer]]\nid = 2\naddresses = [\"10.0.0.2\"]\nname = \"b\"\n")
          .find("'peer.name': unknown key in a [[peer]] section"),
      std::string::npos);
  EXPECT_NE(Error(head + "[[peer]]\nid = 1\naddresses = [\"10.0.0.2\"]\n")
                .find("peer 1 has this host's own node-id"),
            std::string::npos);
  EXPECT_NE(Error(head + "[[peer]]\nid = 2\naddresses = [\"10.0.0.2\"]\n"
                         "[[peer]]\nid = 2\naddresses = [\"10.0.0.3\"]\n")
                .find("peer 2 is configured twice"),
            std::string::npos);
  std::string many = head + "[[peer]]\nid = 2\naddresses = [";
  for (int i = 0; i < 17; i++)
    many += std::string(i ? ", " : "") + "\"10.0.1." + std::to_string(i) + "\"";
  many += "]\n";
  EXPECT_NE(
      Error(many).find("has 17 addresses; a credit message carries at most 16"),
      std::string::npos);
  // A receiver gives its monitor every peer address: at most
  // PARQ_MON_PEERS_MAX (4096) of them, 257 peers of 16 here.
  std::string crowd = head + "receiver = true\naddresses = [\"10.9.9.9\"]\n";
  for (int p = 0; p < 257; p++) {
    crowd += "[[peer]]\nid = " + std::to_string(p + 2) + "\naddresses = [";
    for (int i = 0; i < 16; i++)
      crowd += std::string(i ? ", " : "") + "\"10." + std::to_string(p / 256) +
               "." + std::to_string(p % 256) + "." + std::to_string(i) + "\"";
    crowd += "]\n";
  }
  EXPECT_NE(Error(crowd).find("the peers have 4112 addresses; a receiver's "
                              "monitor counts at most 4096 peer addresses"),
            std::string::npos)
      << Error(crowd);
}

TEST(ConfigTest, AdmissionSection) {
  EXPECT_FALSE(Ok(kMinimal).admission.has_value());
  const Config c = Ok(kMinimal + R"(
[admission]
etcd-endpoints = ["http://10.0.0.5:2379", "https://10.0.0.6:2379"]
etcd-insecure = true
etcd-prefix = "/cluster7/parq/"
etcd-timeout = "500ms"
topology-file = "/etc/parq/topology.toml"
host = "n1"
lease = "30s"
socket = "/run/parqd/a.sock"
adapt = true
adapt-after = "60s"
adapt-margin = 10
adapt-floor = 50

[[admission.allow]]
user = "alice"
rate = "2gbit"

[[admission.allow]]
group = "hpc"
rate = "500mbit"
)");
  ASSERT_TRUE(c.admission.has_value());
  const AdmissionConfig& a = *c.admission;
  EXPECT_EQ(a.etcd_endpoints,
            (std::vector<std::string>{"http://10.0.0.5:2379",
                                      "https://10.0.0.6:2379"}));
  EXPECT_TRUE(a.etcd_insecure);
  EXPECT_EQ(a.etcd_prefix, "/cluster7/parq/");
  EXPECT_EQ(a.etcd_timeout_ns, 500 * kNsPerMs);
  EXPECT_EQ(a.topology_file, "/etc/parq/topology.toml");
  EXPECT_EQ(a.host, "n1");
  EXPECT_EQ(a.lease_ns, 30 * kNsPerSec);
  EXPECT_EQ(a.socket, "/run/parqd/a.sock");
  EXPECT_EQ(a.adapt, (AdaptConfig{true, 60 * kNsPerSec, 10, 50}));
  EXPECT_EQ(a.allow, (std::vector<AllowRule>{{"alice", "", 2'000'000'000},
                                             {"", "hpc", 500'000'000}}));
  // The defaults.
  const Config d = Ok(kMinimal +
                      "[admission]\netcd-endpoints = "
                      "[\"http://127.0.0.1:2379\"]\n"
                      "topology-file = \"t.toml\"\n");
  EXPECT_FALSE(d.admission->etcd_insecure);
  EXPECT_EQ(d.admission->etcd_prefix, "/parq/v1/");
  EXPECT_EQ(d.admission->lease_ns, 10 * kNsPerSec);
  EXPECT_EQ(d.admission->socket, "/run/parqd/admission.sock");
  EXPECT_EQ(d.admission->adapt, (AdaptConfig{false, 15 * kNsPerSec, 25, 25}));
  EXPECT_EQ(d.admission->host, "");
  EXPECT_TRUE(d.admission->allow.empty());
  EXPECT_EQ(d.admission->etcd_tls, EtcdTls{});
  // TLS toward etcd.
  const Config t = Ok(kMinimal + R"(
[admission]
etcd-endpoints = ["https://10.0.0.5:2379"]
topology-file = "/etc/parq/topology.toml"
etcd-ca-file = "/etc/parq/etcd-ca.pem"
etcd-cert-file = "/etc/parq/n1.pem"
etcd-key-file = "/etc/parq/n1-key.pem"
)");
  EXPECT_EQ(t.admission->etcd_tls,
            (EtcdTls{"/etc/parq/etcd-ca.pem", "/etc/parq/n1.pem",
                     "/etc/parq/n1-key.pem"}));
}

// etcd holds the cluster's reservations: plain HTTP to it across the
// network lets anyone on the path read and forge them.  Refused unless the
// endpoint is this host's own (a local proxy or TLS terminator) or the
// configuration accepts it in so many words.
TEST(ConfigTest, PlainHttpToAnotherHostNeedsEtcdInsecure) {
  const std::string head = kMinimal + "[admission]\ntopology-file = \"t\"\n";
  for (const std::string& plain : std::vector<std::string>{
           "http://10.0.0.5:2379", "http://etcd.example:2379",
           "http://[fd00::5]:2379", "http://128.0.0.1:2379"}) {
    const std::string text = head +
                             "etcd-endpoints = [\"https://10.0.0.6:2379\", \"" +
                             plain + "\"]\n";
    EXPECT_EQ(Error(text),
              "parqd.toml:9:1: etcd endpoint \"" + plain +
                  "\" is plain HTTP to another host: anyone on the path can "
                  "read and forge the cluster's reservations.  Use https:// "
                  "with etcd-ca-file, etcd-cert-file and etcd-key-file, or an "
                  "endpoint on this host (a local etcd gRPC proxy or TLS "
                  "terminator), or accept it with etcd-insecure = true");
    const Config c = Ok(text + "etcd-insecure = true\n");
    EXPECT_TRUE(c.admission->etcd_insecure);
  }
  for (const std::string& local : std::vector<std::string>{
           "http://127.0.0.1:2379", "http://127.0.3.4:23790",
           "http://[::1]:2379", "http://localhost:2379",
           "https://10.0.0.5:2379"})
    EXPECT_EQ(Ok(head + "etcd-endpoints = [\"" + local + "\"]\n")
                  .admission->etcd_endpoints,
              std::vector<std::string>{local});
  EXPECT_EQ(Error(head + "etcd-endpoints = [\"http://127.0.0.1:2379\"]\n" +
                  "etcd-insecure = \"yes\"\n"),
            "parqd.toml:12:17: 'admission.etcd-insecure': must be true or "
            "false (no quotes)");
}

TEST(ConfigTest, AdmissionErrorsSayWhatAndWhere) {
  const std::string head = kMinimal + "[admission]\n";  // line 9
  const std::string ok =
      "etcd-endpoints = [\"http://e:2379\"]\ntopology-file = \"t.toml\"\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"topology-file = \"t.toml\"\n",
       "parqd.toml:9:1: the [admission] section has no 'etcd-endpoints'; "
       "list the etcd cluster's client URLs"},
      {"etcd-endpoints = [\"http://e:2379\"]\n",
       "parqd.toml:9:1: the [admission] section has no 'topology-file'; give "
       "the cluster's topology (Documentation/admission.md)"},
      {"etcd-endpoints = [\"e:2379\"]\ntopology-file = \"t\"\n",
       "parqd.toml:10:19: 'admission.etcd-endpoints': must be a non-empty "
       "list of etcd client URLs, e.g. [\"http://10.0.0.5:2379\", "
       "\"http://10.0.0.6:2379\"]"},
      {ok + "etcd-prefix = \"parq\"\n",
       "parqd.toml:12:15: 'admission.etcd-prefix': \"parq\" must begin and end "
       "with '/', e.g. \"/parq/v1/\""},
      {ok + "lease = \"2500ms\"\n",
       "parqd.toml:12:9: 'admission.lease': is 2500ms; give whole seconds "
       "from 2s to 1h (etcd's leases count seconds)"},
      {ok + "lease = \"1s\"\n",
       "parqd.toml:12:9: 'admission.lease': is 1s; give whole seconds from 2s "
       "to 1h"},
      {ok + "socket = \"admission.sock\"\n",
       "parqd.toml:12:10: 'admission.socket': \"admission.sock\" must be an "
       "absolute path of at most 107 characters"},
      {ok + "ttl = 3\n",
       "parqd.toml:12:7: 'admission.ttl': unknown key in the [admission] "
       "section; the keys are etcd-endpoints, etcd-prefix, etcd-timeout, "
       "etcd-ca-file, etcd-cert-file, etcd-key-file, etcd-user, "
       "etcd-password-file, etcd-insecure, topology-file, host, lease, "
       "socket, slurm-cgroup, adapt, adapt-after, adapt-margin, adapt-floor "
       "and allow"},
      {ok + "adapt = 1\n",
       "parqd.toml:12:9: 'admission.adapt': must be true or false (no "
       "quotes)"},
      {ok + "adapt-after = \"2s\"\n",
       "parqd.toml:12:15: 'admission.adapt-after': is 2s; give a time from 5s "
       "to 1h"},
      {ok + "adapt-margin = 101\n",
       "parqd.toml:12:16: 'admission.adapt-margin': is 101; give a value from "
       "0 to 100"},
      {ok + "adapt-floor = 0\n",
       "parqd.toml:12:15: 'admission.adapt-floor': is 0; give a value from 1 "
       "to 100"},
      {ok + "etcd-user = \"n1\"\n",
       "parqd.toml:9:1: the [admission] section's etcd-user and "
       "etcd-password-file go together: the user parq is to etcd and the "
       "file of its password"},
      {ok + "etcd-password-file = \"pw\"\n",
       "parqd.toml:12:22: 'admission.etcd-password-file': \"pw\" must be an "
       "absolute path to the file of etcd-user's password"},
      {ok + "etcd-user = \"n 1\"\netcd-password-file = \"/pw\"\n",
       "parqd.toml:9:1: the [admission] section's etcd-user \"n 1\" holds a "
       "space or a control character: give the name of the etcd user "
       "(etcdctl user list)"},
      {ok + "etcd-ca-file = \"ca.pem\"\n",
       "parqd.toml:12:16: 'admission.etcd-ca-file': \"ca.pem\" must be an "
       "absolute path to a PEM file"},
      {"etcd-endpoints = [\"https://e:2379\"]\ntopology-file = \"t\"\n"
       "etcd-cert-file = \"/c.pem\"\n",
       "parqd.toml:9:1: the [admission] section gives one of "
       "'etcd-cert-file' and 'etcd-key-file' without the other; a client "
       "certificate needs its key"},
      {ok + "etcd-ca-file = \"/ca.pem\"\n",
       "parqd.toml:9:1: the [admission] section's TLS files are for https:// "
       "endpoints, but etcd-endpoints has \"http://e:2379\""},
      {ok + "[[admission.allow]]\nrate = \"1gbit\"\n",
       "parqd.toml:12:1: an [[admission.allow]] section names either a user "
       "or a group, e.g. user = \"alice\" or group = \"hpc\""},
      {ok + "[[admission.allow]]\nuser = \"a\"\ngroup = \"g\"\nrate = "
            "\"1gbit\"\n",
       "parqd.toml:12:1: an [[admission.allow]] section names either a user "
       "or a group, e.g. user = \"alice\" or group = \"hpc\""},
      {ok + "[[admission.allow]]\nuser = \"a\"\n",
       "parqd.toml:12:1: an [[admission.allow]] section has no 'rate'; give "
       "what the user or group may reserve in all, e.g. rate = \"1gbit\""},
  };
  for (const auto& [body, want] : cases)
    EXPECT_EQ(Error(head + body), want) << body;
  EXPECT_NE(Error(head + ok +
                  "[[admission.allow]]\nuser = \"a\"\nrate = "
                  "\"fast\"\n")
                .find("'admission.allow.rate'"),
            std::string::npos);
}

TEST(ConfigTest, OverridesReplaceTheFile) {
  ConfigOverrides o;
  o.values = {{"interface", "veth9"},
              {"listen-port", "9999"},
              {"epoch", "5ms"},
              {"metrics-file", "/run/p.prom"},
              {"threshold-recv", "1500"}};
  const Config c = Ok(kMinimal, o);
  EXPECT_EQ(c.interface, "veth9");
  EXPECT_EQ(c.listen_port, 9999);
  EXPECT_EQ(c.epoch_ns, 5'000'000u);
  EXPECT_EQ(c.metrics_file, "/run/p.prom");
  EXPECT_EQ(c.threshold_recv, 1500u);
  // A boolean's text is read as a boolean.
  ConfigOverrides role;
  role.values = {{"receiver", "true"}};
  EXPECT_NE(Error(kMinimal, role)
                .find("'receiver' is true but 'addresses' "
                      "is missing"),
            std::string::npos);
  ConfigOverrides bad;
  bad.values = {{"lease", "0"}};
  EXPECT_EQ(Error(kMinimal, bad),
            "command line: 'lease': is 0; give a value from 1 to 65535");
  bad.values = {{"lease", "x"}};
  EXPECT_EQ(Error(kMinimal, bad),
            "command line: 'lease': must be an integer (no quotes)");
  // An override can supply a key the file lacks.
  ConfigOverrides iface;
  iface.values = {{"interface", "eth1"}};
  EXPECT_EQ(Ok(With("interface", ""), iface).interface, "eth1");
}

TEST(ConfigTest, LoadConfigNamesAMissingFile) {
  auto r = LoadConfig("/nonexistent/parqd.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind("/nonexistent/parqd.toml: cannot open the "
                            "configuration file: No such file",
                            0),
            0u)
      << r.error();
}

// A relative credit key path is the file beside the configuration, with
// or without systemd credentials (parqd checks and rereads the file
// itself); an absolute one stays.
TEST(ConfigTest, RelativeKeyPathsAreBesideTheFile) {
  Config c = Ok(With("key-file", "\"cluster.key\""));
  Config d = c;
  ResolveKeyPaths(c, "/etc/parq/parqd.toml", "/run/credentials/parqd.service");
  EXPECT_EQ(c.key_file, "/etc/parq/cluster.key");
  ResolveKeyPaths(d, "/etc/parq/parqd.toml", nullptr);
  EXPECT_EQ(d.key_file, "/etc/parq/cluster.key");
  Config e =
      Ok("interface = \"eth0\"\nnode-id = 1\nkeys-file = \"keys\"\n"
         "[[peer]]\nid = 2\naddresses = [\"10.0.0.2\"]\n");
  ResolveKeyPaths(e, "conf/parqd.toml", "");
  EXPECT_EQ(e.keys_file, "conf/keys");
  EXPECT_EQ(e.key_file, "");
  Config f = Ok(kMinimal);
  ResolveKeyPaths(f, "/etc/parq/parqd.toml", "/run/credentials/x");
  EXPECT_EQ(f.key_file, "/etc/parq/cluster.key");
}

// The etcd client key is checked as parqd's own keys are: parqd refuses
// one that others can read or that its group can change.
TEST(ConfigTest, TheEtcdKeysModeIsChecked) {
  const std::string dir =
      ::testing::TempDir() + "etcd-key-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string key = dir + "/etcd.key";
  std::ofstream(key) << "-----BEGIN PRIVATE KEY-----\n";
  std::filesystem::permissions(key, std::filesystem::perms::owner_read |
                                        std::filesystem::perms::owner_write);
  EXPECT_EQ(EtcdKeyFileProblem(key), std::nullopt);
  std::filesystem::permissions(key, std::filesystem::perms::others_read,
                               std::filesystem::perm_options::add);
  EXPECT_EQ(EtcdKeyFileProblem(key),
            "admission.etcd-key-file " + key +
                ": its mode 0604 lets others access it; run: chmod 0640 " +
                key + " (or chmod 0600)");
  EXPECT_EQ(EtcdKeyFileProblem(dir),
            "admission.etcd-key-file " + dir + ": it is not a regular file");
  // Its group may read it only when that is parqd's group or root's, as
  // for the credit keys: mode 0640 with another group gives that group
  // this host's etcd identity.
  std::filesystem::permissions(key, std::filesystem::perms::owner_read |
                                        std::filesystem::perms::owner_write |
                                        std::filesystem::perms::group_read);
  ASSERT_EQ(chown(key.c_str(), geteuid(), 65534), 0);
  const auto other_group = EtcdKeyFileProblem(key);
  ASSERT_NE(other_group, std::nullopt);
  EXPECT_NE(other_group->find("lets its group, gid 65534, read it"),
            std::string::npos)
      << *other_group;
  ASSERT_EQ(chown(key.c_str(), geteuid(), getegid()), 0);
  EXPECT_EQ(EtcdKeyFileProblem(key), std::nullopt);
  std::filesystem::remove_all(dir);
}

// A cluster file: the same [[host]] list on every host; each finds its
// own entry by node-id, host name (or its short form) or address, and the
// others are its peers.
const std::string kCluster = R"(
interface = "eth0"
keys-file = "keys"
receiver = true

[[host]]
id = 1
name = "n1"
addresses = ["10.0.0.1", "fd00::1"]

[[host]]
id = 2
name = "n2"
addresses = ["10.0.0.2"]

[[host]]
id = 3
addresses = ["10.0.0.3"]
)";

Config Cluster(const Identity& self, const std::string& extra = "") {
  auto r = ParseConfig(extra + kCluster, "cluster.toml", {}, &self);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r.value() : Config{};
}

std::string ClusterError(const Identity& self, const std::string& extra = "") {
  auto r = ParseConfig(extra + kCluster, "cluster.toml", {}, &self);
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.error();
}

TEST(ConfigTest, AClusterFileFindsThisHost) {
  // By name, and by the short form of a full name.
  Config c = Cluster({"n2", {A("127.0.0.1")}});
  EXPECT_EQ(c.node_id, 2u);
  EXPECT_EQ(c.addresses, std::vector<Address>{A("10.0.0.2")});
  ASSERT_EQ(c.peers.size(), 2u);
  EXPECT_EQ(c.peers[0], (PeerConfig{1, {A("10.0.0.1"), A("fd00::1")}}));
  EXPECT_EQ(c.peers[1], (PeerConfig{3, {A("10.0.0.3")}}));
  EXPECT_EQ(Cluster({"n1.cluster.example", {}}).node_id, 1u);
  // By address (host 3 has no name), IPv6 too.
  EXPECT_EQ(Cluster({"login", {A("127.0.0.1"), A("10.0.0.3")}}).node_id, 3u);
  EXPECT_EQ(Cluster({"x", {A("fd00::1")}}).node_id, 1u);
  // node-id decides, whatever the name.
  EXPECT_EQ(Cluster({"n2", {}}, "node-id = 3\n").node_id, 3u);
  // Without an identity, node-id alone.
  auto r = ParseConfig("node-id = 1\n" + kCluster, "c", {}, nullptr);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().node_id, 1u);
  // Explicit addresses stay.
  EXPECT_EQ(Cluster({"n1", {}}, "addresses = [\"10.0.0.1\"]\n").addresses,
            std::vector<Address>{A("10.0.0.1")});
}

TEST(ConfigTest, AClusterFileThatDoesNotNameThisHostSaysHowItIsKnown) {
  EXPECT_EQ(ClusterError({"other", {A("10.9.9.9")}}),
            "cluster.toml: this host (name \"other\", addresses 10.9.9.9) is "
            "no [[host]] of the file: add its section, or give node-id");
  EXPECT_EQ(ClusterError({"n1", {}}, "node-id = 7\n"),
            "cluster.toml: node-id 7 is no [[host]]'s id");
  EXPECT_EQ(ClusterError({"x", {A("10.0.0.1"), A("10.0.0.2")}}),
            "cluster.toml: this host has addresses of two [[host]] sections "
            "(1 and 2); give node-id");
  // Both kinds of sections, duplicates, a section without id.
  // kCluster with `tail` after it (no identity: node-id alone picks).
  auto with_tail = [](const std::string& tail) {
    auto r = ParseConfig(kCluster + tail, "cluster.toml", {}, nullptr);
    EXPECT_FALSE(r.ok()) << tail;
    return r.ok() ? std::string() : r.error();
  };
  EXPECT_EQ(with_tail("[[peer]]\nid = 9\naddresses = [\"10.0.0.9\"]\n"),
            "cluster.toml: give [[peer]] sections (this host's peers) or "
            "[[host]] sections (the whole cluster), not both");
  EXPECT_EQ(with_tail("[[host]]\nid = 2\naddresses = [\"10.0.0.4\"]\n"),
            "cluster.toml: host 2 is listed twice; each [[host]] needs its own "
            "id");
  EXPECT_NE(with_tail("[[host]]\naddresses = [\"10.0.0.4\"]\n")
                .find("a [[host]] section has no 'id'"),
            std::string::npos);
  EXPECT_EQ(with_tail("[[host]]\nid = 4\naddresses = [\"10.0.0.3\"]\n"),
            "cluster.toml: 10.0.0.3 is an address of two [[host]] sections; "
            "an address belongs to one host");
  // Neither node-id nor [[host]]; node-id without [[peer]].
  auto none = ParseConfig("interface = \"eth0\"\nkey-file = \"/k\"\n", "f");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().rfind("f: 'node-id' is missing", 0), 0u)
      << none.error();
  auto nopeer = ParseConfig(
      "interface = \"eth0\"\nkey-file = \"/k\"\nnode-id = 1\n", "f");
  ASSERT_FALSE(nopeer.ok());
  EXPECT_EQ(nopeer.error().rfind("f: no [[peer]] section", 0), 0u)
      << nopeer.error();
}

TEST(ConfigTest, TheSystemIdentityHasLoopback) {
  const Identity self = SystemIdentity();
  EXPECT_FALSE(self.hostname.empty());
  EXPECT_NE(
      std::find(self.addresses.begin(), self.addresses.end(), A("127.0.0.1")),
      self.addresses.end());
}

// SIGHUP applies the keys and max-clock-skew and nothing else; any other
// change waits for a restart, and says so.
TEST(ConfigTest, AReloadTakesTheKeysAndTheSkew) {
  const Config running = Ok(kMinimal);
  Config next = Ok(With("key-id", "2"));
  next.keys_file = "/etc/parq/keys";
  next.key_file.clear();
  next.max_clock_skew_ns = 2'000'000'000;
  EXPECT_FALSE(NeedsRestart(running, next));
  const Config c = Reloaded(running, next);
  EXPECT_EQ(c.key_id, 2u);
  EXPECT_EQ(c.keys_file, "/etc/parq/keys");
  EXPECT_EQ(c.key_file, "");
  EXPECT_EQ(c.max_clock_skew_ns, 2'000'000'000u);
  EXPECT_EQ(Reloaded(c, running), running);

  next.peers.push_back(PeerConfig{3, {A("10.0.0.3")}});
  next.epoch_ns = 2'000'000;
  EXPECT_TRUE(NeedsRestart(running, next));
  // The peers and the epoch stay as they run.
  EXPECT_EQ(Reloaded(running, next).peers, running.peers);
  EXPECT_EQ(Reloaded(running, next).epoch_ns, running.epoch_ns);
}

TEST(DurationTest, Parse) {
  EXPECT_EQ(ParseDuration("1ms").value(), 1'000'000u);
  EXPECT_EQ(ParseDuration("250us").value(), 250'000u);
  EXPECT_EQ(ParseDuration("1.5s").value(), 1'500'000'000u);
  EXPECT_EQ(ParseDuration("0.001s").value(), 1'000'000u);
  EXPECT_EQ(ParseDuration("100ns").value(), 100u);
  EXPECT_EQ(ParseDuration(".5ms").value(), 500'000u);
  EXPECT_FALSE(ParseDuration("1.5ns").ok());
  EXPECT_FALSE(ParseDuration("").ok());
  EXPECT_FALSE(ParseDuration("ms").ok());
  EXPECT_FALSE(ParseDuration("-1ms").ok());
  EXPECT_FALSE(ParseDuration("1h").ok());
  EXPECT_FALSE(ParseDuration("99999999999999999999s").ok());
}

TEST(DurationTest, FormatRoundTrips) {
  EXPECT_EQ(FormatDuration(1'000'000), "1ms");
  EXPECT_EQ(FormatDuration(1'500'000'000), "1500ms");
  EXPECT_EQ(FormatDuration(7), "7ns");
  EXPECT_EQ(FormatDuration(0), "0ns");
  for (uint64_t ns : {1ull, 999ull, 1000ull, 123456789ull, 3600000000000ull})
    EXPECT_EQ(ParseDuration(FormatDuration(ns)).value(), ns);
}

// Every key that has a default shows it as its example in --help: the file
// of the minimal keys plus that example reads as the minimal file alone.
// key-file and keys-file: one of the two is required, neither has a
// default.
// Keys of which one is required: key-file or keys-file; [[peer]] or
// [[host]]; node-id, or [[host]] sections to find it in.
bool OneOfTwo(std::string_view name) {
  return name == "key-file" || name == "keys-file" || name == "peer" ||
         name == "host" || name == "node-id";
}

TEST(ConfigTest, ExamplesAreTheDefaults) {
  const Config plain = Ok(kMinimal);
  for (const ConfigKeyInfo& k : ConfigKeys()) {
    if (k.required || OneOfTwo(k.name) || k.type == ConfigType::kAddresses ||
        k.type == ConfigType::kPeers || k.type == ConfigType::kHosts ||
        k.type == ConfigType::kAdmission)
      continue;
    // Keys before the [[peer]] table, so that they stay top-level.
    const Config c = Ok(std::string(k.example) + "\n" + kMinimal);
    EXPECT_TRUE(c == plain) << k.example;
  }
}

// The configuration table of Documentation/parqd.md: `key` -> the default
// column.
std::map<std::string, std::string> DocumentedKeys() {
  std::ifstream in(PARQ_DOC_DIR "/parqd.md");
  EXPECT_TRUE(in) << PARQ_DOC_DIR "/parqd.md";
  std::map<std::string, std::string> keys;
  bool in_section = false;
  for (std::string l; std::getline(in, l);) {
    if (l.starts_with("## "))
      in_section = l == "## Configuration";
    if (!in_section || !l.starts_with("| `"))
      continue;
    std::vector<std::string> cells;
    for (size_t i = 1, j; (j = l.find(" |", i)) != std::string::npos; i = j + 2)
      cells.push_back(l.substr(i + 1, j - i - 1));
    if (cells.size() < 3)
      continue;
    keys[cells[0].substr(1, cells[0].size() - 2)] = cells[2];
  }
  return keys;
}

// A key as parqd.md and parqd.toml(5) write it: [[peer]], [[host]],
// [admission], or its name.
std::string DocName(const ConfigKeyInfo& k) {
  if (k.type == ConfigType::kPeers || k.type == ConfigType::kHosts)
    return "[[" + std::string(k.name) + "]]";
  if (k.type == ConfigType::kAdmission)
    return "[" + std::string(k.name) + "]";
  return std::string(k.name);
}

// A key's name: lower-case letters, digits and '-', with '.' between a
// section's name and its key.
bool IsKeyName(std::string_view name) {
  return !name.empty() && name[0] >= 'a' && name[0] <= 'z' &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") ==
             std::string_view::npos;
}

// Whether the parser takes `name`, a key of a section as the documents
// write it ("peer.id", "admission.etcd-prefix", "[[admission.allow]]"):
// kKeys has the sections, each section's reader its keys.  A file of the
// section with only this key fails, if at all, for another reason than an
// unknown key.
bool IsSectionKey(std::string name) {
  std::erase(name, '[');
  std::erase(name, ']');
  const size_t dot = name.rfind('.');
  if (!IsKeyName(name) || dot == std::string::npos)
    return false;
  const std::string section = name.substr(0, dot);
  const std::string header =
      section == "admission" ? "[admission]" : "[[" + section + "]]";
  auto c = ParseConfig(header + "\n" + name.substr(dot + 1) + " = 0\n", "doc");
  return c.ok() || c.error().find("unknown key") == std::string::npos;
}

TEST(ConfigTest, DocumentationListsEveryKeyAndItsDefault) {
  std::map<std::string, std::string> doc = DocumentedKeys();
  ASSERT_FALSE(doc.empty());
  for (const ConfigKeyInfo& k : ConfigKeys()) {
    const std::string name = DocName(k);
    auto it = doc.find(name);
    if (it == doc.end()) {
      ADD_FAILURE() << name << " is not in parqd.md's table";
      continue;
    }
    if (k.required)
      EXPECT_EQ(it->second, "required") << name;
    else if (OneOfTwo(k.name))
      EXPECT_EQ(it->second.rfind("this or ", 0), 0u) << name;
    else if (k.type != ConfigType::kAddresses &&
             k.type != ConfigType::kAdmission) {
      const std::string value(k.example.substr(k.example.find(" = ") + 3));
      EXPECT_NE(it->second.find("`" + value + "`"), std::string::npos)
          << name << ": parqd.md says " << it->second << ", the code " << value;
    }
    doc.erase(it);
  }
  for (const auto& [name, value] : doc)
    EXPECT_TRUE(IsSectionKey(name))
        << "parqd.md documents a key the code lacks: " << name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// parqd.toml(5) has an entry (".TP", ".B name") for every key, and none
// for a key the code lacks.
TEST(ConfigTest, ManPageListsEveryKey) {
  const std::string man = ReadFile(PARQ_DOC_DIR "/parqd.toml.5");
  std::set<std::string> listed;
  for (size_t i = 0; (i = man.find(".TP\n.B ", i)) != std::string::npos;) {
    i += 7;
    std::string name = man.substr(i, man.find('\n', i) - i);
    std::erase(name, '\\');
    listed.insert(name);
  }
  for (const ConfigKeyInfo& k : ConfigKeys()) {
    const std::string name = DocName(k);
    EXPECT_EQ(listed.erase(name), 1u) << name << " is not in parqd.toml.5";
  }
  for (const std::string& name : listed)
    EXPECT_TRUE(IsSectionKey(name) || name.starts_with("/"))
        << "parqd.toml.5 lists a key the code lacks: " << name;
}

// The example `make install` puts in /usr/share/doc/parq/examples.
const std::string kExample =
    PARQ_DOC_DIR "/../userspace/parqd/parqd.toml.example";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    lines.push_back(l);
  return lines;
}

std::string Unlines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines)
    text += l + "\n";
  return text;
}

// A key of the example, set or commented out ("# key = ..."): a top-level
// key by its name, a section by its header ("[[peer]]", "[admission]"), a
// key of a section as "section.key".
struct ExampleKey {
  std::string name;
  size_t line;                // its index in the file's lines
  bool commented;             // the line starts with "# "
  bool in_commented_section;  // under a header that is commented out
};

std::vector<ExampleKey> ExampleKeys(const std::vector<std::string>& lines) {
  std::vector<ExampleKey> keys;
  std::string section;
  bool section_commented = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    const bool commented = l.starts_with("# ");
    if (commented)
      l.remove_prefix(2);
    if (l.starts_with('[') && l.ends_with(']')) {
      std::string name(l);
      std::erase(name, '[');
      std::erase(name, ']');
      if (!IsKeyName(name))
        continue;
      section = name;
      section_commented = commented;
      keys.push_back({std::string(l), i, commented, commented});
      continue;
    }
    const std::string key(l.substr(0, l.find(" = ")));
    if (key.size() == l.size() || !IsKeyName(key))
      continue;
    keys.push_back({section.empty() ? key : section + "." + key, i, commented,
                    section_commented});
  }
  return keys;
}

// The example shows every key, a top-level one before the first section,
// and no key the code lacks.
TEST(ConfigTest, TheInstalledExampleShowsEveryKey) {
  std::multiset<std::string> shown;
  for (const ExampleKey& k : ExampleKeys(Lines(ReadFile(kExample))))
    shown.insert(k.name);
  for (const ConfigKeyInfo& k : ConfigKeys()) {
    const std::string name = DocName(k);
    if (shown.erase(name) == 0)
      ADD_FAILURE() << name << " is not in parqd.toml.example"
                    << (name.starts_with("[") ? ""
                                              : " (before its first section)");
  }
  for (const std::string& name : shown)
    EXPECT_TRUE(IsSectionKey(name))
        << "parqd.toml.example has a key the code lacks: " << name;
}

// Each commented-out key of the example, uncommented alone, still makes a
// valid file and shows its default; admission.host has none.  Not the
// alternatives (key-file for keys-file, [[host]] for [[peer]]), which
// replace what is set.
TEST(ConfigTest, TheInstalledExamplesCommentedKeysAreValid) {
  const std::vector<std::string> lines = Lines(ReadFile(kExample));
  auto as_is = ParseConfig(Unlines(lines), "parqd.toml.example");
  ASSERT_TRUE(as_is.ok()) << as_is.error();
  for (const ExampleKey& k : ExampleKeys(lines)) {
    if (!k.commented || k.in_commented_section || OneOfTwo(k.name))
      continue;
    std::vector<std::string> changed = lines;
    changed[k.line].erase(0, 2);
    auto c = ParseConfig(Unlines(changed), "parqd.toml.example");
    ASSERT_TRUE(c.ok()) << lines[k.line] << ", uncommented: " << c.error();
    if (k.name != "admission.host") {
      EXPECT_TRUE(c.value() == as_is.value())
          << lines[k.line] << " is not " << k.name << "'s default";
    }
  }
}

// The example is a valid configuration, as it is.
TEST(ConfigTest, TheInstalledExampleIsValid) {
  auto c = ParseConfig(ReadFile(kExample), "parqd.toml.example");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c.value().keys_file, "keys");
  EXPECT_TRUE(c.value().receiver);
  EXPECT_EQ(c.value().peers.size(), 2u);
  EXPECT_TRUE(c.value().admission.has_value());
}

}  // namespace
