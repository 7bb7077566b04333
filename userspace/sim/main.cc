// SPDX-License-Identifier: GPL-2.0
//
// parq-sim: runs one simulation (cluster_sim.h) and prints its result as JSON.

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/cli_parse.h"
#include "cluster_sim.h"

namespace {

using parq::sim::Config;
using parq::sim::Phase;
using parq::sim::Scheduler;

nlohmann::json ToJson(const Config& c, const parq::sim::Result& r) {
  nlohmann::json j;
  j["hosts"] = c.hosts;
  j["job_hosts"] = c.job_hosts;
  j["parallel"] = c.parallel;
  j["local"] = c.local;
  j["control_first"] = c.control_first;
  j["lease"] = c.lease;
  j["end_ns"] = r.end_ns;
  j["phase_ns"] = r.phase_ns;
  j["parallel_ns"] = r.parallel_ns;
  j["local_bytes"] = r.local_bytes;
  j["local_gbps"] = r.local_gbps;
  j["control_messages"] = r.control_messages;
  j["control_per_host_s"] = r.control_per_host_s;
  j["control_link_mean_pct"] = r.control_link_mean_pct;
  j["control_link_peak_pct"] = r.control_link_peak_pct;
  j["throttle_ns"] = r.throttle_ns;
  j["release_ns"] = r.release_ns;
  j["max_switch_queue"] = r.max_switch_queue;
  j["max_host_queue"] = r.max_host_queue;
  j["cpus"] = c.cpus;
  j["cpu_busy_ns"] = r.cpu_busy_ns;
  j["events"] = r.events;
  return j;
}

int Main(int argc, char** argv) {
  Config c;
  CLI::App app{
      "parq-sim: a discrete-event simulation of parq on a two-level tree "
      "(Documentation/simulation.md).  Prints one JSON object."};
  const std::map<std::string, Scheduler> schedulers{
      {"fifo", Scheduler::kFifo},
      {"parq", Scheduler::kParq},
      {"parqd", Scheduler::kParqd}};
  std::string phases = "alltoall,incast";
  std::vector<std::string> local_flows;
  bool no_parallel = false;
  bool no_local = false;
  app.add_option("--hosts", c.hosts, "hosts in the cluster")
      ->capture_default_str();
  app.add_option("--rack", c.rack, "hosts per top-of-rack switch")
      ->capture_default_str();
  app.add_option("--link-bps", c.link_bps, "host links, bits/s")
      ->capture_default_str();
  app.add_option("--oversubscription", c.oversubscription,
                 "a rack's hosts' links over its uplink")
      ->capture_default_str();
  app.add_option("--prop-ns", c.prop_ns, "propagation delay per link")
      ->capture_default_str();
  app.add_option("--mtu", c.mtu, "bytes per packet at most")
      ->capture_default_str();
  app.add_option("--scheduler", c.scheduler,
                 "fifo, parq (sending side) or parqd (and receiver credits)")
      ->transform(CLI::CheckedTransformer(schedulers, CLI::ignore_case))
      ->capture_default_str();
  app.add_option("--threshold", c.threshold, "sch_parq's threshold")
      ->capture_default_str();
  app.add_option("--epoch-us", c.epoch_us, "parqd's epoch")
      ->capture_default_str();
  app.add_option("--threshold-recv", c.threshold_recv,
                 "parqd: bytes per epoch to each local sender")
      ->capture_default_str();
  app.add_option("--local-floor", c.local_floor_pct,
                 "parqd: percent of the link the local senders share")
      ->capture_default_str();
  app.add_option("--hold-ns", c.hold_ns, "the monitor's and parqd's hold")
      ->capture_default_str();
  app.add_option("--lease", c.lease, "parqd: a GRANT's lease, in epochs")
      ->capture_default_str();
  app.add_option("--react-ns", c.react_ns,
                 "from a monitor's report to parqd's decision")
      ->capture_default_str();
  app.add_flag("--control-first", c.control_first,
               "parqd: GRANT and RELEASE in a network-control class that "
               "hosts and switch ports serve first");
  app.add_option("--job-hosts", c.job_hosts, "hosts of the parallel job")
      ->capture_default_str();
  app.add_option("--message", c.message, "bytes per pair and phase")
      ->capture_default_str();
  app.add_option("--phases", phases,
                 "alltoall, incast and broadcast, comma-separated, in order")
      ->capture_default_str();
  app.add_option("--rounds", c.rounds, "times the phases run")
      ->capture_default_str();
  app.add_option("--gap-ns", c.gap_ns, "between phases")->capture_default_str();
  app.add_option("--local-in", c.local_in,
                 "local flows into each job host, from outside the job")
      ->capture_default_str();
  app.add_option("--local-out", c.local_out,
                 "local flows from each job host, to outside the job")
      ->capture_default_str();
  app.add_option("--local-flow", local_flows,
                 "SRC:DST, a local flow between two hosts (repeat; "
                 "replaces --local-in and --local-out)");
  app.add_option("--window", c.window, "bytes in flight per local flow")
      ->capture_default_str();
  app.add_flag("--no-parallel", no_parallel, "local jobs only");
  app.add_flag("--no-local", no_local, "the parallel job only");
  app.add_option("--local-only-ns", c.local_only_ns,
                 "with --no-parallel: how long to run")
      ->capture_default_str();
  app.add_option("--seed", c.seed, "the local flows' hosts")
      ->capture_default_str();
  app.add_option("--cpus", c.cpus,
                 "CPUs shared by all hosts (0: no CPU model, the costs "
                 "ignored)")
      ->capture_default_str();
  app.add_option("--message-cpu-ns", c.message_cpu_ns,
                 "CPU time of receiving and answering one parallel message")
      ->capture_default_str();
  app.add_option("--local-cpu-ns", c.local_cpu_ns,
                 "CPU time of delivering one local packet")
      ->capture_default_str();
  if (const auto code =
          parq::parqd::ParseCli(app, argc, argv, std::cout, std::cerr))
    return *code;

  c.parallel = !no_parallel;
  c.local = !no_local;
  c.phases.clear();
  for (size_t at = 0; at <= phases.size();) {
    const size_t comma = std::min(phases.find(',', at), phases.size());
    const std::string p = phases.substr(at, comma - at);
    if (p == "alltoall") {
      c.phases.push_back(Phase::kAllToAll);
    } else if (p == "incast") {
      c.phases.push_back(Phase::kIncast);
    } else if (p == "broadcast") {
      c.phases.push_back(Phase::kBroadcast);
    } else {
      std::cerr << "parq-sim: --phases: unknown phase '" << p
                << "' (alltoall, incast, broadcast)\n";
      return 2;
    }
    at = comma + 1;
  }
  for (const std::string& f : local_flows) {
    unsigned src = 0;
    unsigned dst = 0;
    char colon = 0;
    std::istringstream in(f);
    if (!(in >> src >> colon >> dst) || colon != ':' || !in.eof()) {
      std::cerr << "parq-sim: --local-flow: '" << f << "' is not SRC:DST\n";
      return 2;
    }
    c.local_flows.emplace_back(src, dst);
  }
  if (const std::string err = parq::sim::CheckConfig(c); !err.empty()) {
    std::cerr << "parq-sim: " << err << "\n";
    return 2;
  }
  std::cout << ToJson(c, parq::sim::Simulate(c)).dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "parq-sim: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "parq-sim: unknown error\n";
  }
  return 1;
}
