// SPDX-License-Identifier: GPL-2.0
//
// Command lines of parqd and parqctl (CLI11), as functions the tests call:
// each returns the parsed arguments, or the exit status when the program
// is done (--help printed, or a usage error explained on `err`).

#ifndef PARQD_CTL_CLI_H
#define PARQD_CTL_CLI_H

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "base/address.h"
#include "config/config.h"
#include "jobs/jobs.h"

namespace parq::parqd {

struct ParqdArgs {
  std::string config = kDefaultConfigPath;
  ConfigOverrides overrides;
  bool check_config = false;  // parse, check, print, exit
  bool clean_up = false;      // remove what a dead parqd left, exit
  std::string log_level = "info";
};

// `argv[0]` is the program name.
std::variant<ParqdArgs, int> ParseParqdArgs(
    const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);

struct CtlArgs {
  enum class Cmd : uint8_t {
    kCreditShow,
    kCreditSet,
    kCreditClear,
    kQdiscShow,
    kJobAdd,
    kJobDel,
    kJobList,
    kJobSweep,
    kJobPolicy,
    kNftRestore,
    kNftWatch,
    kTopologyCheck,
    kTopologyPath,
    kTopologyEtcdRoles,
    kLinks,
    kReservations,  // from etcd (--etcd) or this host's parqd
    kReserve,
    kChange,
    kRelease,
    kJoin,  // a job admitted as a whole: this host's consent
    kLeave,
    kKeyDerive,
    kMonitor,
    kPeers
  };
  Cmd cmd = Cmd::kCreditShow;
  bool json = false;
  std::optional<Address> address;    // set (required), clear (optional)
  uint32_t credit = 0;               // set
  std::optional<uint64_t> epoch_ns;  // set
  uint64_t lease_ns = 0;             // set
  std::string dev;                   // qdisc show
  std::string job_path;              // job add, del
  JobPolicy policy;                  // job policy
  std::string topology;              // topology check, path: the file
  std::string from, to;              // topology path: hosts
  std::vector<std::string> etcd;     // links, reservations: endpoints
  std::string etcd_prefix = "/parq/v1/";
  EtcdTls etcd_tls;                                  // --cacert, --cert, --key
  EtcdAuth etcd_auth;                                // --user, --password-file
  std::string socket = "/run/parqd/admission.sock";  // reserve, change, ...
  std::string status_socket = kDefaultStatusSocket;  // peers
  std::string id;                                    // change, release
  // reserve: for this Slurm job, or the name of a job admitted as a whole
  // (--hosts); release: its reservations; join, leave, change: the job
  std::string job;
  std::vector<std::string> hosts;  // reserve: a job of these hosts, whole
  std::string leader;              // join: the job's leader host
  uint64_t rate = 0;               // reserve, change: bits/s
  // reserve: the bounds of its adaptation (0: the defaults).
  uint64_t min_rate = 0, max_rate = 0;
  std::string match;            // reserve
  bool incoming = false;        // reservations: toward this host, not from it
  std::string secret_file;      // key derive: the cluster secret
  uint64_t node = 0;            // key derive: the host the keys are for
  std::vector<uint64_t> peers;  // key derive: its peers
  uint32_t key_id = 1;          // key derive
  std::string output;           // key derive: "" = standard output
  // topology etcd-roles: a file per host
  std::string passwords = "/etc/parq/etcd-passwords";
};

std::variant<CtlArgs, int> ParseCtlArgs(const std::vector<std::string>& argv,
                                        std::ostream& out, std::ostream& err);

}  // namespace parq::parqd

#endif
