// SPDX-License-Identifier: GPL-2.0
//
// parqd: the parq credit agent (Documentation/parqd.md).

#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <string>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>

#include "admission/admission_agent.h"
#include "admission/cluster_admission.h"
#include "admission/etcd.h"
#include "admission/reserved_classes.h"
#include "config/config.h"
#include "ctl/cli.h"
#include "daemon/daemon.h"
#include "daemon/notify.h"
#include "jobs/nft.h"
#include "netlink/kernel.h"
#include "proto/key.h"

using namespace parq::parqd;

namespace {

// Whether standard error is the journal's stream ($JOURNAL_STREAM is its
// device:inode, systemd.exec(5)): then lines go to the journal directly,
// each at its priority (error: 3, warning: 4, info: 6, debug: 7).
bool StderrIsJournal() {
  const char* js = std::getenv("JOURNAL_STREAM");
  struct stat st {};
  if (!js || fstat(STDERR_FILENO, &st) < 0)
    return false;
  return std::string(js) ==
         std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

int Run(int argc, char** argv) {
  auto parsed = ParseParqdArgs(std::vector<std::string>(argv, argv + argc),
                               std::cout, std::cerr);
  if (const int* code = std::get_if<int>(&parsed))
    return *code;
  const ParqdArgs& args = std::get<ParqdArgs>(parsed);

  std::shared_ptr<spdlog::logger> logger;
  if (StderrIsJournal()) {
    logger = spdlog::systemd_logger_mt("parqd", "parqd");
    logger->set_pattern("%v");
  } else {
    logger = spdlog::stderr_logger_mt("parqd");
    // A supervisor's log stamps lines itself.
    logger->set_pattern("%l: %v");
  }
  logger->set_level(spdlog::level::from_str(args.log_level));
  spdlog::set_default_logger(logger);

  auto config = LoadConfig(args.config, args.overrides);
  if (!config.ok()) {
    spdlog::error("{}", config.error());
    return kExitConfig;
  }
  if (args.check_config) {
    auto keys = LoadKeys(config.value());
    if (!keys.ok()) {
      spdlog::error("{}", keys.error());
      return kExitConfig;
    }
    std::string admission;
    if (const auto& a = config.value().admission) {
      auto t = LoadAgentTopology(*a);
      if (!t.ok()) {
        spdlog::error("{}: [admission]: {}", args.config, t.error());
        return kExitConfig;
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

  if (args.clean_up) {
    const auto& a = config.value().admission;
    if (!a)
      return 0;  // no admission role: nothing of it to remove
    auto t = LoadAgentTopology(*a);
    if (!t.ok()) {
      spdlog::error("{}: [admission]: {}", args.config, t.error());
      return kExitConfig;
    }
    EtcdClient etcd(a->etcd_endpoints,
                    std::chrono::milliseconds(a->etcd_timeout_ns / 1'000'000),
                    CurlPost(a->etcd_tls, nullptr, a->etcd_auth));
    ClusterAdmission admission(t.value().topology, etcd, a->etcd_prefix);
    TcReservedClasses classes(config.value().interface, RunCommand,
                              RtnlTcLink(config.value().interface));
    const bool ok = CleanUpAfterParqd(t.value().host, admission, etcd, classes,
                                      LogRoleLine);
    return ok ? 0 : 1;
  }

  // SIGTERM, SIGINT (stop) and SIGHUP (reload) arrive on a signalfd,
  // handled in the loop.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
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
    if (m.value()->event_fd() < 0) {
      spdlog::error("receiving role: {}",
                    m.value()->ReadEvents().error().Text());
      return 1;
    }
    monitor = std::move(m.value());
  }
  const ServiceManager manager = ServiceManager::FromEnvironment();
  const int rc =
      RunDaemon(config.value(), *kernel.value(), monitor.get(), sfd, manager,
                [&args] { return LoadConfig(args.config, args.overrides); });
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
