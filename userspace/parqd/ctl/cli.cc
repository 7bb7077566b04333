// SPDX-License-Identifier: GPL-2.0

#include "ctl/cli.h"

#include <linux/parq.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdlib>
#include <deque>
#include <sstream>
#include <tuple>
#include <utility>

#include "admission/topology.h"
#include "base/cli_parse.h"

namespace parq::parqd {

namespace {

// CLI11 wants argc/argv.
template <typename App>
std::optional<int> Parse(App& app, const std::vector<std::string>& argv,
                         std::ostream& out, std::ostream& err) {
  std::vector<const char*> v;
  v.reserve(argv.size());
  for (const std::string& s : argv)
    v.push_back(s.c_str());
  return ParseCli(app, static_cast<int>(v.size()), v.data(), out, err);
}

// A CLI11 validator for durations.
CLI::Validator DurationValidator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        auto d = ParseDuration(s);
        return d.ok() ? std::string() : d.error();
      },
      "TIME", "duration");
}

// A CLI11 validator for a configuration key's integer (its range is the
// file's check).
CLI::Validator IntegerValidator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        int64_t n = 0;
        const char* end = s.data() + s.size();
        if (s.empty() || std::from_chars(s.data(), end, n).ptr != end)
          return "\"" + s + "\" is not an integer";
        return std::string();
      },
      "INT", "integer");
}

}  // namespace

std::variant<ParqdArgs, int> ParseParqdArgs(
    const std::vector<std::string>& argv, std::ostream& out,
    std::ostream& err) {
  ParqdArgs a;
  ConfigOverrides& o = a.overrides;
  CLI::App app(
      "parqd: the parq credit agent.  Sending role: receives credit messages "
      "from the peers (UDP, HMAC-SHA-256) and applies them to the kernel's "
      "credit table (generic netlink family \"parq\").  Receiving role "
      "(receiver = true): watches arriving traffic with the kernel's receive "
      "monitor and grants credit to the peers sending local traffic while "
      "parallel traffic arrives.",
      "parqd");
  app.footer(ConfigKeysHelp());
  app.set_version_flag("--version", std::string("parqd ") + PARQ_VERSION);
  app.add_option("-c,--config", a.config, "Configuration file (TOML)")
      ->capture_default_str();
  app.add_flag("--check-config", a.check_config,
               "Read and check the configuration and the key file, print "
               "the result and exit");
  app.add_flag("--clean-up", a.clean_up,
               "Remove what a parqd that did not stop cleanly left behind "
               "(the admission role's reserved classes and filters, and its "
               "reservations in etcd) and exit; the unit's ExecStopPost");
  app.add_option("--log-level", a.log_level, "Log level")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  // One option per configuration key that has one (config.h).
  std::vector<std::pair<CLI::Option*, std::string>> given;
  std::deque<std::string> texts;  // CLI11 keeps pointers into these
  for (const ConfigKeyInfo& k : ConfigKeys()) {
    if (!k.option)
      continue;
    std::string help = "Replaces '" + std::string(k.name) + "'";
    if (k.type == ConfigType::kBoolean)
      help += " (true or false)";
    if (k.receiving_role)
      help += " (receiving role)";
    CLI::Option* opt =
        app.add_option("--" + std::string(k.name), texts.emplace_back(), help);
    if (k.type == ConfigType::kDuration)
      opt->check(DurationValidator());
    else if (k.type == ConfigType::kInteger)
      opt->check(IntegerValidator());
    else if (k.type == ConfigType::kBoolean)
      opt->check(CLI::IsMember({"true", "false"}));
    given.emplace_back(opt, k.name);
  }
  if (auto code = Parse(app, argv, out, err))
    return *code;
  for (size_t i = 0; i < given.size(); i++)
    if (given[i].first->count() > 0)
      o.values[given[i].second] = texts[i];
  return a;
}

std::variant<CtlArgs, int> ParseCtlArgs(const std::vector<std::string>& argv,
                                        std::ostream& out, std::ostream& err) {
  CtlArgs a;
  CLI::App app(
      "parqctl: read and edit parq's credit table, read the parq qdisc's "
      "statistics, name the parallel jobs, and check the cluster's "
      "topology.",
      "parqctl");
  app.set_version_flag("--version", std::string("parqctl ") + PARQ_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Times are numbers with a unit: ns, us, ms, s (\"1ms\", \"1.5s\").  "
      "Errors from the kernel are printed with its message.  With --json, "
      "show commands print JSON and set/clear print {\"ok\": true} or "
      "{\"ok\": false, \"error\": ..., \"errno\": ...}.");

  std::string addr_text, credit_text, epoch_text, lease_text;
  bool json = false;
  auto json_flag = [&json](CLI::App* sub) {
    sub->add_flag("--json", json, "Print JSON");
  };

  CLI::App* credit = app.add_subcommand("credit", "The credit table");
  credit->require_subcommand(1);
  CLI::App* cshow = credit->add_subcommand(
      "show", "Print every entry of this network namespace's table");
  json_flag(cshow);
  CLI::App* cset = credit->add_subcommand(
      "set", "Create or replace the entry of one destination");
  cset->add_option("ADDR", addr_text, "Destination (IPv4 or IPv6)")->required();
  uint64_t credit_bytes = 0;
  cset->add_option("--credit", credit_bytes,
                   "Bytes per epoch (0 stops the destination's local traffic)")
      ->required()
      ->check(CLI::Range(uint64_t{0}, uint64_t{PARQ_CREDIT_MAX}));
  cset->add_option("--epoch", epoch_text,
                   "Epoch length (10us..10s; default: the kernel's, 1ms)")
      ->check(DurationValidator());
  cset->add_option("--lease", lease_text, "How long the entry lives (1ns..1h)")
      ->required()
      ->check(DurationValidator());
  json_flag(cset);
  CLI::App* cclear = credit->add_subcommand(
      "clear", "Delete the entry of ADDR, or every entry");
  cclear->add_option("ADDR", addr_text, "Destination (IPv4 or IPv6)");
  json_flag(cclear);

  CLI::App* monitor = app.add_subcommand(
      "monitor",
      "The kernel's receive monitor (parqd's receiving role): its "
      "configuration, counters and per-source table");
  json_flag(monitor);

  CLI::App* peers = app.add_subcommand(
      "peers",
      "parqd's peers: for each, the newest message accepted from it, the "
      "datagrams dropped by reason, the credit its grants hold and whether "
      "this host grants it credit (from parqd's status socket)");
  peers->add_option("--socket", a.status_socket,
                    std::string("parqd's status socket (default ") +
                        kDefaultStatusSocket + ")");
  json_flag(peers);

  CLI::App* qdisc = app.add_subcommand("qdisc", "The parq qdisc");
  qdisc->require_subcommand(1);
  CLI::App* qshow = qdisc->add_subcommand(
      "show",
      "The parq qdisc on DEV: its options and statistics, as tc -s -j "
      "names them");
  qshow->add_option("DEV", a.dev, "Interface")
      ->required()
      ->check(CLI::Validator(
          [](const std::string& dev) {
            return InterfaceNameProblem(dev).value_or("");
          },
          "INTERFACE"));
  json_flag(qshow);

  CLI::App* job = app.add_subcommand(
      "job",
      "Parallel jobs by cgroup: every socket of a job's cgroup subtree sends "
      "parallel traffic (nftables table inet parq)");
  job->require_subcommand(1);
  CLI::App* jadd = job->add_subcommand(
      "add", "Make the cgroup v2 directory PATH a parallel job");
  jadd->add_option("PATH", a.job_path, "The job's cgroup, below /sys/fs/cgroup")
      ->required();
  json_flag(jadd);
  CLI::App* jdel = job->add_subcommand(
      "del", "PATH is a job no more (harmless if it was not one)");
  jdel->add_option("PATH", a.job_path, "The job's cgroup")->required();
  json_flag(jdel);
  CLI::App* jlist = job->add_subcommand("list", "Print the jobs");
  json_flag(jlist);
  CLI::App* jsweep =
      job->add_subcommand("sweep", "Forget the jobs whose cgroups are gone");
  json_flag(jsweep);
  CLI::App* jpolicy = job->add_subcommand(
      "policy",
      "Set the DSCP job packets leave with and the anti-spoofing rule "
      "(other packets that claim a parallel DSCP leave with CS0)");
  std::string dscp_text, claimed_text, anti_text = "on";
  jpolicy->add_option("--dscp", dscp_text,
                      "DSCP of job packets: a name (EF, CS5, AF41) or 0..63 "
                      "(default EF)");
  jpolicy->add_option("--anti-spoof", anti_text, "on (default) or off")
      ->check(CLI::IsMember({"on", "off"}));
  jpolicy->add_option("--claimed", claimed_text,
                      "Comma-separated DSCPs that only jobs may use (default "
                      "CS5,EF)");
  std::string forward_text = "on";
  jpolicy
      ->add_option("--forward", forward_text,
                   "The anti-spoofing rule for forwarded packets too: on "
                   "(default) or off")
      ->check(CLI::IsMember({"on", "off"}));
  json_flag(jpolicy);

  CLI::App* nft = app.add_subcommand(
      "nft", "Keep nftables table inet parq (jobs, anti-spoofing) in place");
  nft->require_subcommand(1);
  CLI::App* nrestore = nft->add_subcommand(
      "restore",
      "Add what is missing of the table: its policy (/etc/parq/jobs.toml) and "
      "jobs (/run/parq/jobs)");
  json_flag(nrestore);
  CLI::App* nwatch = nft->add_subcommand(
      "watch",
      "Restore the table whenever nftables changes, for ever "
      "(parq-nft.service)");

  CLI::App* key = app.add_subcommand(
      "key", "Credit message keys (Documentation/parqd-protocol.md, Keys)");
  key->require_subcommand(1);
  CLI::App* kderive = key->add_subcommand(
      "derive",
      "Print NODE's pair keys (a keys-file) derived from the cluster "
      "secret: one line per peer. Run it where the secret is kept, not on "
      "the cluster's hosts");
  kderive
      ->add_option("--secret", a.secret_file,
                   "The cluster secret (a key file: hex, 32 to "
                   "1024 bytes, mode 0600)")
      ->required();
  kderive->add_option("--node", a.node, "The host's node id")
      ->required()
      ->check(CLI::Range(uint64_t{0}, uint64_t{INT64_MAX}));
  kderive
      ->add_option("--peer", a.peers,
                   "Its peers' node ids (repeat or separate with commas)")
      ->required()
      ->delimiter(',')
      ->check(CLI::Range(uint64_t{0}, uint64_t{INT64_MAX}));
  kderive
      ->add_option("--key-id", a.key_id,
                   "The keys' id, as the hosts' key-id (default 1)")
      ->check(CLI::Range(uint32_t{1}, uint32_t{UINT32_MAX}));
  kderive->add_option("--output", a.output,
                      "Write FILE (mode 0600, replaced atomically) instead "
                      "of standard output");

  CLI::App* topo = app.add_subcommand(
      "topology",
      "The cluster's topology file (Documentation/admission.md): hosts, "
      "switches, links and their capacities");
  topo->require_subcommand(1);
  CLI::App* tcheck = topo->add_subcommand(
      "check", "Validate FILE and print its hosts, switches and links");
  tcheck->add_option("FILE", a.topology, "The topology (TOML)")->required();
  json_flag(tcheck);
  CLI::App* troles = topo->add_subcommand(
      "etcd-roles",
      "Print the etcdctl commands that give each host of FILE an etcd user "
      "and a role with which it can read parq's keys and write its own only");
  troles->add_option("FILE", a.topology, "The topology (TOML)")->required();
  troles->add_option("--prefix", a.etcd_prefix,
                     "The key prefix of parq's state (default /parq/v1/)");
  troles->add_option("--passwords", a.passwords,
                     "The directory of the hosts' passwords, a file per "
                     "host named as the host (default "
                     "/etc/parq/etcd-passwords)");
  CLI::App* tpath = topo->add_subcommand(
      "path",
      "Print what a reservation from FROM to TO charges: FROM's NIC, the "
      "links on the path, TO's NIC");
  tpath->add_option("FILE", a.topology, "The topology (TOML)")->required();
  tpath->add_option("FROM", a.from, "Source host: a name or an address")
      ->required();
  tpath->add_option("TO", a.to, "Destination host: a name or an address")
      ->required();
  json_flag(tpath);

  auto etcd_options = [&a](CLI::App* sub, bool required = true) {
    sub->add_option("--topology", a.topology, "The cluster's topology (TOML)")
        ->required(required);
    sub->add_option("--etcd", a.etcd,
                    "etcd's client URLs, e.g. http://10.0.0.1:2379 "
                    "(repeat or separate with commas)")
        ->required(required)
        ->delimiter(',');
    sub->add_option("--prefix", a.etcd_prefix,
                    "The key prefix of parq's state (default /parq/v1/)");
    sub->add_option("--cacert", a.etcd_tls.ca_file,
                    "https:// endpoints: the CA that signed etcd's "
                    "certificate (PEM; default: the system's)");
    sub->add_option("--cert", a.etcd_tls.cert_file,
                    "https:// endpoints: this client's certificate (PEM), "
                    "with --key");
    sub->add_option("--key", a.etcd_tls.key_file,
                    "The private key of --cert (PEM)");
    sub->add_option("--user", a.etcd_auth.user,
                    "etcd with authentication on: the etcd user to be, "
                    "with --password-file");
    sub->add_option("--password-file", a.etcd_auth.password_file,
                    "The file of --user's password (0600, or 0640 root:parqd)");
  };
  CLI::App* links = app.add_subcommand(
      "links",
      "What reservations across the cluster hold of every NIC and link, "
      "and what is left for best effort (from etcd)");
  etcd_options(links);
  json_flag(links);
  auto socket_option = [&a](CLI::App* sub) {
    sub->add_option("--socket", a.socket,
                    "parqd's admission socket (default "
                    "/run/parqd/admission.sock)");
  };
  CLI::App* resvs = app.add_subcommand(
      "reservations",
      "With --topology and --etcd: the reservations across the cluster "
      "(from etcd); without: this host's, from its parqd");
  etcd_options(resvs, false);
  socket_option(resvs);
  resvs->add_flag("--incoming", a.incoming,
                  "Those toward this host, as its parqd's watch of etcd "
                  "sees them, instead of those from it");
  resvs->add_option("--job", a.job,
                    "A job admitted as a whole: its hosts, rate, and which "
                    "hosts have joined it (from this host's parqd)");
  json_flag(resvs);
  std::string rate_text;
  CLI::App* reserve = app.add_subcommand(
      "reserve",
      "Ask this host's parqd to reserve bandwidth to a host, admitted "
      "across the cluster; prints the reservation's id");
  CLI::Option* to = reserve->add_option(
      "--to", a.to, "Destination host: a name or an address");
  reserve
      ->add_option("--hosts", a.hosts,
                   "Instead of --to: a job admitted as a whole, --rate for "
                   "every ordered pair of these hosts (comma-separated; "
                   "this host leads it, and each must have joined it)")
      ->delimiter(',')
      ->excludes(to);
  reserve->add_option("--rate", rate_text, "Rate, e.g. 100mbit")->required();
  std::string min_text, max_text;
  reserve->add_option("--min-rate", min_text,
                      "With [admission] adapt on: the least parqd may shrink "
                      "it to when it leaves its rate unused (default: "
                      "adapt-floor of --rate)");
  reserve->add_option("--max-rate", max_text,
                      "With [admission] adapt on: the most parqd may grow it "
                      "to while it is choked (default: --rate)");
  reserve->add_option("--match", a.match,
                      "The traffic it covers: proto=udp|tcp, dport=N, "
                      "sport=N, comma-separated (default: all to the host)");
  reserve->add_option("--job", a.job,
                      "The Slurm job it is for, released when the job ends "
                      "(default: $SLURM_JOB_ID; --job '' for none); with "
                      "--hosts, the job's name");
  socket_option(reserve);
  json_flag(reserve);
  CLI::App* change = app.add_subcommand(
      "change", "Change a reservation's rate, admitted the same way");
  CLI::Option* change_id = change->add_option("ID", a.id, "The reservation");
  change
      ->add_option("--job", a.job,
                   "Instead of ID: the job admitted as a whole that this "
                   "host leads, a new rate for each of its flows")
      ->excludes(change_id);
  change->add_option("--rate", rate_text, "The new rate, e.g. 200mbit")
      ->required();
  socket_option(change);
  json_flag(change);
  CLI::App* release = app.add_subcommand(
      "release", "Release a reservation, or all of a job's (--job)");
  CLI::Option* release_id = release->add_option("ID", a.id, "The reservation");
  release
      ->add_option("--job", a.job,
                   "Release every reservation on this host made for this "
                   "Slurm job instead (the Slurm epilog does)")
      ->excludes(release_id);
  socket_option(release);
  json_flag(release);
  CLI::App* join = app.add_subcommand(
      "join", "Consent to carry this host's part of a job admitted as a whole");
  join->add_option("--leader", a.leader,
                   "The job's leader: the host that will reserve it")
      ->required();
  join->add_option("--job", a.job, "The job's name (default: $SLURM_JOB_ID)");
  join->add_option("--rate", rate_text,
                   "The highest rate a flow of the job may have for this "
                   "host to carry it (default: any)");
  socket_option(join);
  json_flag(join);
  CLI::App* leave = app.add_subcommand(
      "leave", "Withdraw this host's consent to a job: its flows here end");
  leave->add_option("--job", a.job, "The job's name (default: $SLURM_JOB_ID)");
  socket_option(leave);
  json_flag(leave);

  if (auto code = Parse(app, argv, out, err))
    return *code;
  a.json = json;
  // A command's --job is $SLURM_JOB_ID unless given (--job '' for none).
  const auto slurm_default = [&a](const CLI::App* sub) {
    const char* slurm_job = std::getenv("SLURM_JOB_ID");
    if (sub->count("--job") == 0 && slurm_job)
      a.job = slurm_job;
  };
  if (!a.etcd_prefix.empty() && a.etcd_prefix.back() != '/') {
    err << "parqctl: --prefix " << a.etcd_prefix << ": end it with '/'\n";
    return 2;
  }
  for (const std::string& url : a.etcd)
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
      err << "parqctl: --etcd " << url
          << ": give a URL, e.g. http://10.0.0.1:2379\n";
      return 2;
    }

  if (auto e = EtcdAuthProblem(a.etcd_auth)) {
    err << "parqctl: " << *e << "\n";
    return 2;
  }
  const EtcdTlsProblem tls = CheckEtcdTls(a.etcd_tls, a.etcd);
  if (tls.kind == EtcdTlsProblem::kUnpaired) {
    err << "parqctl: give --cert and --key together\n";
    return 2;
  }
  if (tls.kind == EtcdTlsProblem::kPlainEndpoint) {
    err << "parqctl: --cacert, --cert and --key are for https:// "
           "endpoints, not "
        << tls.plain << "\n";
    return 2;
  }

  if (!rate_text.empty()) {
    auto r = ParseRate(rate_text);
    if (!r.ok()) {
      err << "parqctl: --rate " << rate_text << ": " << r.error() << "\n";
      return 2;
    }
    a.rate = r.value();
  }
  for (auto [flag, text, to_set] :
       {std::tuple{"--min-rate", &min_text, &a.min_rate},
        std::tuple{"--max-rate", &max_text, &a.max_rate}}) {
    if (text->empty())
      continue;
    auto r = ParseRate(*text);
    if (!r.ok()) {
      err << "parqctl: " << flag << " " << *text << ": " << r.error() << "\n";
      return 2;
    }
    if (!a.hosts.empty()) {
      err << "parqctl: " << flag
          << " is for a reservation to one host; a job admitted as a whole "
             "keeps its rate\n";
      return 2;
    }
    *to_set = r.value();
  }
  if (*resvs && !a.job.empty() && (a.incoming || !a.etcd.empty())) {
    err << "parqctl: reservations: --job asks this host's parqd; leave out "
           "--incoming, --topology and --etcd\n";
    return 2;
  }
  if (*resvs && a.incoming && !a.etcd.empty()) {
    err << "parqctl: reservations: --incoming asks this host's parqd; "
           "leave out --topology and --etcd\n";
    return 2;
  }
  if (*resvs && a.topology.empty() != a.etcd.empty()) {
    err << "parqctl: reservations: give --topology and --etcd together "
           "(the cluster's, from etcd), or neither (this host's parqd)\n";
    return 2;
  }

  if (*cshow) {
    a.cmd = CtlArgs::Cmd::kCreditShow;
  } else if (*cset) {
    a.cmd = CtlArgs::Cmd::kCreditSet;
    a.credit = static_cast<uint32_t>(credit_bytes);
    a.lease_ns = ParseDuration(lease_text).value();
    if (a.lease_ns == 0 || a.lease_ns > PARQ_LEASE_MAX) {
      err << "parqctl: --lease " << lease_text
          << " is out of range; give 1ns to 1h\n";
      return 2;
    }
    if (!epoch_text.empty()) {
      a.epoch_ns = ParseDuration(epoch_text).value();
      if (*a.epoch_ns < PARQ_EPOCH_MIN || *a.epoch_ns > PARQ_EPOCH_MAX) {
        err << "parqctl: --epoch " << epoch_text
            << " is out of range; give 10us to 10s\n";
        return 2;
      }
    }
  } else if (*cclear) {
    a.cmd = CtlArgs::Cmd::kCreditClear;
  } else if (*qshow) {
    a.cmd = CtlArgs::Cmd::kQdiscShow;
  } else if (*monitor) {
    a.cmd = CtlArgs::Cmd::kMonitor;
  } else if (*peers) {
    a.cmd = CtlArgs::Cmd::kPeers;
  } else if (*jadd) {
    a.cmd = CtlArgs::Cmd::kJobAdd;
  } else if (*jdel) {
    a.cmd = CtlArgs::Cmd::kJobDel;
  } else if (*jlist) {
    a.cmd = CtlArgs::Cmd::kJobList;
  } else if (*jsweep) {
    a.cmd = CtlArgs::Cmd::kJobSweep;
  } else if (*nrestore) {
    a.cmd = CtlArgs::Cmd::kNftRestore;
  } else if (*nwatch) {
    a.cmd = CtlArgs::Cmd::kNftWatch;
  } else if (*tcheck) {
    a.cmd = CtlArgs::Cmd::kTopologyCheck;
  } else if (*troles) {
    a.cmd = CtlArgs::Cmd::kTopologyEtcdRoles;
  } else if (*tpath) {
    a.cmd = CtlArgs::Cmd::kTopologyPath;
  } else if (*links) {
    a.cmd = CtlArgs::Cmd::kLinks;
  } else if (*resvs) {
    a.cmd = CtlArgs::Cmd::kReservations;
  } else if (*reserve) {
    a.cmd = CtlArgs::Cmd::kReserve;
    slurm_default(reserve);
    if (a.to.empty() && a.hosts.empty()) {
      err << "parqctl reserve: give --to HOST, or --hosts A,B,... for a "
             "job admitted as a whole\n";
      return 2;
    }
    if (!a.hosts.empty() && a.job.empty()) {
      err << "parqctl reserve: --hosts needs the job's name: --job NAME "
             "(or $SLURM_JOB_ID)\n";
      return 2;
    }
  } else if (*join || *leave) {
    a.cmd = *join ? CtlArgs::Cmd::kJoin : CtlArgs::Cmd::kLeave;
    slurm_default(*join ? join : leave);
    if (a.job.empty()) {
      err << "parqctl " << (*join ? "join" : "leave")
          << ": give the job's name: --job NAME (or $SLURM_JOB_ID)\n";
      return 2;
    }
  } else if (*change) {
    a.cmd = CtlArgs::Cmd::kChange;
    if (a.id.empty() && a.job.empty()) {
      err << "parqctl change: give the reservation's ID, or --job NAME\n";
      return 2;
    }
  } else if (*release) {
    a.cmd = CtlArgs::Cmd::kRelease;
    if (a.id.empty() && a.job.empty()) {
      err << "parqctl release: give the reservation's ID, or --job N\n";
      return 2;
    }
  } else if (*kderive) {
    a.cmd = CtlArgs::Cmd::kKeyDerive;
  } else {
    a.cmd = CtlArgs::Cmd::kJobPolicy;
    if (!dscp_text.empty()) {
      const auto d = ParseDscp(dscp_text);
      if (!d) {
        err << "parqctl: --dscp " << dscp_text
            << ": give a DSCP name (EF, CS5, AF41) or 0..63\n";
        return 2;
      }
      a.policy.dscp = *d;
    }
    a.policy.anti_spoof = anti_text == "on";
    a.policy.forward = forward_text == "on";
    if (!claimed_text.empty()) {
      a.policy.claimed.clear();
      std::istringstream in(claimed_text);
      std::string item;
      while (std::getline(in, item, ',')) {
        const auto d = ParseDscp(item);
        if (!d) {
          err << "parqctl: --claimed " << claimed_text << ": \"" << item
              << "\" is not a DSCP name (EF, CS5, AF41) or 0..63\n";
          return 2;
        }
        a.policy.claimed.push_back(*d);
      }
    }
  }
  if (!addr_text.empty()) {
    a.address = Address::Parse(addr_text);
    if (!a.address) {
      err << "parqctl: \"" << addr_text
          << "\" is not an IPv4 or IPv6 address (e.g. 192.0.2.1, "
             "2001:db8::1)\n";
      return 2;
    }
  }
  return a;
}

}  // namespace parq::parqd
