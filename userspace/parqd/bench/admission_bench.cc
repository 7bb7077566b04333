// SPDX-License-Identifier: GPL-2.0
//
// parq-admission-bench: admissions per second of ClusterAdmission against
// a running etcd (Documentation/benchmarks.md, "Admission across the
// cluster"; scripts/bench/admission starts etcd and runs the matrix).
//
// K clients, each a thread with its own etcd client and lease, reserve
// 1 mbit and release it again, as fast as etcd answers, for S seconds.
// Every host has a 100gbit NIC and a 100gbit cable to one switch, so that
// nothing is ever full and every admission is a success:
//
//   disjoint  client i reserves s_i -> d_i: the paths share no resource,
//             so no transaction can fail another's compare;
//   shared    every client reserves s_i -> d0: the switch's port toward
//             d0 and d0's NIC are on every path, so concurrent admissions
//             fail each other's compares and retry.
//
// Prints one line (or, with --json, one object): admissions/s, the
// reserve call's latency (median, 99th percentile, nearest rank), and the
// retries per admission.  Asserts nothing.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "admission/cluster_admission.h"
#include "admission/etcd.h"
#include "admission/topology.h"
#include "base/cli_parse.h"
#include "stats.h"

namespace {

using parq::parqd::ClusterAdmission;
using parq::parqd::CurlPost;
using parq::parqd::EtcdClient;
using parq::parqd::Topology;
using Clock = std::chrono::steady_clock;

// 2k hosts (s0.., d0..) on one switch.
std::string TopologyText(int k) {
  std::string t;
  auto host = [&t](const std::string& name, int net, int i) {
    t += "[[host]]\nname = \"" + name + "\"\naddresses = [\"10." +
         std::to_string(net) + "." + std::to_string(i / 250) + "." +
         std::to_string(i % 250 + 1) + "\"]\nnic = \"100gbit\"\n";
    for (const char* dir : {"to", "from"}) {
      const bool out = dir[0] == 't';
      t += "[[link]]\nfrom = \"" + std::string(out ? name : "sw") +
           "\"\nto = \"" + std::string(out ? "sw" : name) +
           "\"\ncapacity = \"100gbit\"\n";
    }
  };
  t += "[[switch]]\nname = \"sw\"\n";
  for (int i = 0; i < k; i++) {
    host("s" + std::to_string(i), 1, i);
    host("d" + std::to_string(i), 2, i);
  }
  return t;
}

struct ClientResult {
  uint64_t admissions = 0, errors = 0, retries = 0;
  std::vector<uint64_t> latency_ns;
  std::string first_error;
};

int Run(int argc, char** argv) {
  CLI::App app{"Admissions per second of parq's cluster admission on etcd"};
  std::vector<std::string> etcd;
  int clients = 4;
  double seconds = 5;
  std::string pattern = "disjoint";
  std::string prefix = "/parq-bench/";
  bool json = false;
  app.add_option("--etcd", etcd, "etcd's client URLs")
      ->required()
      ->delimiter(',');
  app.add_option("--clients", clients, "Concurrent clients (threads)")
      ->check(CLI::Range(1, 256));
  app.add_option("--seconds", seconds, "How long to run")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--pattern", pattern, "disjoint or shared")
      ->check(CLI::IsMember({"disjoint", "shared"}));
  app.add_option("--prefix", prefix, "Key prefix (its keys are deleted)");
  app.add_flag("--json", json, "One JSON object");
  if (const auto code =
          parq::parqd::ParseCli(app, argc, argv, std::cout, std::cerr))
    return *code;

  auto topology = Topology::Parse(TopologyText(clients), "bench.toml");
  if (!topology.ok()) {
    std::cerr << "parq-admission-bench: " << topology.error() << "\n";
    return 1;
  }
  const bool shared = pattern == "shared";
  std::vector<ClientResult> results(static_cast<size_t>(clients));
  std::atomic<bool> failed{false};
  const Clock::time_point end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(clients));
  for (int i = 0; i < clients; i++)
    threads.emplace_back([&, i] {
      ClientResult& r = results[static_cast<size_t>(i)];
      EtcdClient c(etcd, std::chrono::seconds(5), CurlPost());
      ClusterAdmission adm(topology.value(), c, prefix);
      auto lease = c.LeaseGrant(60);
      if (!lease.ok()) {
        r.first_error = lease.error();
        failed = true;
        return;
      }
      const std::string from = "s" + std::to_string(i);
      const std::string to = shared ? "d0" : "d" + std::to_string(i);
      while (Clock::now() < end) {
        const Clock::time_point t0 = Clock::now();
        auto res =
            adm.Reserve({from, to, 1'000'000, "", "bench", std::nullopt, ""},
                        lease.value().id);
        const Clock::time_point t1 = Clock::now();
        if (!res.ok()) {
          if (r.first_error.empty())
            r.first_error = res.error();
          r.errors++;
          continue;
        }
        r.admissions++;
        r.latency_ns.push_back(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0)
                .count()));
        if (auto rel = adm.Release(res.value().id); !rel.ok()) {
          r.first_error = rel.error();
          r.errors++;
        }
      }
      r.retries = adm.retries();
      (void)c.LeaseRevoke(lease.value().id);
    });
  for (std::thread& t : threads)
    t.join();

  ClientResult all;
  for (ClientResult& r : results) {
    all.admissions += r.admissions;
    all.errors += r.errors;
    all.retries += r.retries;
    all.latency_ns.insert(all.latency_ns.end(), r.latency_ns.begin(),
                          r.latency_ns.end());
    if (all.first_error.empty())
      all.first_error = r.first_error;
  }
  if (failed || all.admissions == 0) {
    std::cerr << "parq-admission-bench: " << all.first_error << "\n";
    return 1;
  }
  const double rate = static_cast<double>(all.admissions) / seconds;
  // Nearest-rank percentiles, as parq-bench reports them.
  const parqbench::Summary lat = parqbench::Summarize(all.latency_ns);
  const double p50 = static_cast<double>(lat.p50) / 1e6;
  const double p99 = static_cast<double>(lat.p99) / 1e6;
  const double retries =
      static_cast<double>(all.retries) / static_cast<double>(all.admissions);
  if (json) {
    std::cout << nlohmann::json{{"pattern", pattern},
                                {"clients", clients},
                                {"endpoints", etcd.size()},
                                {"seconds", seconds},
                                {"admissions", all.admissions},
                                {"admissions_per_s", rate},
                                {"reserve_p50_ms", p50},
                                {"reserve_p99_ms", p99},
                                {"retries_per_admission", retries},
                                {"errors", all.errors}}
                     .dump()
              << "\n";
  } else {
    std::printf(
        "%-8s %3d clients: %8.1f admissions/s, reserve %.2f ms median, "
        "%.2f ms p99, %.3f retries/admission, %llu errors\n",
        pattern.c_str(), clients, rate, p50, p99, retries,
        static_cast<unsigned long long>(all.errors));
  }
  if (all.errors)
    std::cerr << "parq-admission-bench: first error: " << all.first_error
              << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "parq-admission-bench: " << e.what() << "\n";
    return 1;
  }
}
