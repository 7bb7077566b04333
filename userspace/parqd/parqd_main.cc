// SPDX-License-Identifier: GPL-2.0
//
// parqd: the parq credit agent (Documentation/parqd.md).

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <iostream>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "admission_agent.h"
#include "cli.h"
#include "config.h"
#include "daemon.h"
#include "kernel.h"
#include "key.h"

using namespace parq::parqd;

namespace {

int Run(int argc, char** argv) {
  auto parsed = ParseParqdArgs(std::vector<std::string>(argv, argv + argc),
                               std::cout, std::cerr);
  if (const int* code = std::get_if<int>(&parsed))
    return *code;
  const ParqdArgs& args = std::get<ParqdArgs>(parsed);

  auto logger = spdlog::stderr_logger_mt("parqd");
  // systemd's journal stamps lines itself.
  logger->set_pattern("%l: %v");
  logger->set_level(spdlog::level::from_str(args.log_level));
  spdlog::set_default_logger(logger);

  auto config = LoadConfig(args.config, args.overrides);
  if (!config.ok()) {
    spdlog::error("{}", config.error());
    return 2;
  }
  if (args.check_config) {
    auto keys = LoadKeys(config.value());
    if (!keys.ok()) {
      spdlog::error("{}", keys.error());
      return 2;
    }
    std::string admission;
    if (const auto& a = config.value().admission) {
      auto t = LoadAgentTopology(*a);
      if (!t.ok()) {
        spdlog::error("{}: [admission]: {}", args.config, t.error());
        return 2;
      }
      admission = "; admission role: host " + t.value().host + " of " +
                  std::to_string(t.value().topology.hosts().size()) + " in " +
                  a->topology_file + ", etcd " + a->etcd_endpoints.front() +
                  (a->etcd_endpoints.size() > 1 ? " and others" : "");
    }
    std::cout << args.config << ": valid; node " << config.value().node_id
              << ", " << config.value().peers.size() << " peer(s), "
              << (config.value().key_file.empty() ? "pair keys"
                                                  : "a cluster key")
              << " of id " << keys.value().send_id() << admission << "\n";
    return 0;
  }

  // SIGTERM and SIGINT arrive on a signalfd, handled in the loop.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  const int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sfd < 0) {
    spdlog::error("signalfd: {}", std::strerror(errno));
    return 1;
  }

  auto kernel = OpenGenlCreditTable();
  if (!kernel.ok()) {
    spdlog::error("{}", kernel.error().Text());
    return 1;
  }
  std::unique_ptr<KernelMonitor> monitor;
  if (config.value().receiver) {
    auto m = OpenGenlMonitor();
    if (!m.ok()) {
      spdlog::error("receiving role: {}", m.error().Text());
      return 1;
    }
    monitor = std::move(m.value());
  }
  const int rc = RunDaemon(config.value(), *kernel.value(), monitor.get(), sfd);
  close(sfd);
  return rc;
}

}  // namespace

// What escapes Run() (an allocation failure, a logger that cannot write) is
// reported, not left to std::terminate.
int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "parqd: " << e.what() << '\n';
    return 1;
  }
}
