// SPDX-License-Identifier: GPL-2.0
//
// Parallel jobs by cgroup (parqctl job add/del/list).  A job is a cgroup v2
// directory: every packet of every socket owned by a process in its subtree
// leaves the host as parallel traffic, with the parallel DSCP, whatever the
// application set; and, unless switched off, any other packet that claims a
// parallel DSCP leaves re-marked CS0, so that an unprivileged process cannot
// make itself parallel.  The packet path is nftables': parq owns one table,
// "inet parq", and touches no other:
//
//   table inet parq {
//     set jobs_N { typeof socket cgroupv2 level N; }  # one per job depth N
//     chain parallel { ip dscp set ef; ip6 dscp set ef; accept; }
//     chain jobs {           # one rule per set, appended with it
//       socket cgroupv2 level N @jobs_N goto parallel
//     }
//     chain egress {
//       type filter hook output priority mangle; policy accept;
//       jump jobs
//       ip dscp { cs5, ef } ip dscp set cs0       # the anti-spoofing rule
//       ip6 dscp { cs5, ef } ip6 dscp set cs0
//     }
//     chain forward {        # routed containers and VMs: no socket, no job
//       type filter hook forward priority mangle; policy accept;
//       ip dscp { cs5, ef } ip dscp set cs0
//       ip6 dscp { cs5, ef } ip6 dscp set cs0
//     }
//   }
//
// nft resolves a cgroup path below /sys/fs/cgroup to the cgroup's id when
// it adds the element, and lists an element whose cgroup is gone as that
// number, which it cannot delete by: a level with such an element is
// refilled (flushed and given its live paths again, in one transaction).
//
// The table must be there before any unprivileged socket sends, and stay:
// the policy is kept in a file (kJobPolicyPath, written by `job policy`),
// the jobs in kJobStatePath (written by job add, del and sweep), and
// `parqctl nft restore` (parq-nft.service, at boot) and `parqctl nft
// watch` (the same unit, for ever after) rebuild from them what is
// missing: after `nft flush ruleset`, within a second.

#ifndef PARQD_JOBS_JOBS_H
#define PARQD_JOBS_JOBS_H

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "base/dscp.h"
#include "base/result.h"
#include "jobs/nft.h"

namespace parq::parqd {

// The one nftables table parq owns (reserved_classes.h adds a chain per
// reservation to it).
inline constexpr char kNftTable[] = "inet parq";

// Where nft looks up cgroup paths: jobs must be below it.
inline constexpr char kCgroupRoot[] = "/sys/fs/cgroup";

struct JobCgroup {
  std::string rel;     // below the root: "system.slice/job_7"
  unsigned level = 0;  // its depth, the ancestor level nft matches: 2
  bool operator==(const JobCgroup&) const = default;
};

// What a job path needs from the file system, from the system or a test.
struct CgroupProbe {
  // The canonical absolute path, or nullopt if it does not exist.
  std::function<std::optional<std::string>(const std::string&)> realpath;
  std::function<bool(const std::string&)> is_dir;
  // On a cgroup v2 file system (statfs: CGROUP2_SUPER_MAGIC).
  std::function<bool(const std::string&)> is_cgroup2;
};
CgroupProbe SystemCgroupProbe();

// `job add PATH`: PATH must exist, be a directory of the cgroup v2
// hierarchy mounted at `root`, below it, and have a name nft can quote.
Result<JobCgroup, std::string> ResolveJobToAdd(const std::string& path,
                                               const std::string& root,
                                               const CgroupProbe& probe);

// `job del PATH`: PATH may be gone already (a job whose cgroup was
// removed), so it is only normalized, and must lie below `root`.
Result<JobCgroup, std::string> ResolveJobToDel(const std::string& path,
                                               const std::string& root);

struct JobPolicy {
  uint8_t dscp = 46;  // what job packets leave with (EF)
  bool anti_spoof = true;
  // What other packets may not claim (re-marked CS0): the qdisc's and the
  // monitor's parallel DSCPs.
  std::vector<uint8_t> claimed = {40, 46};  // CS5, EF
  // The anti-spoofing rule for forwarded packets too (off on a host that
  // routes other hosts' parallel traffic).
  bool forward = true;
  bool operator==(const JobPolicy&) const = default;
};

// Where the policy is kept (TOML: parallel-dscp, anti-spoof, claimed,
// anti-spoof-forward), and the jobs (one path below the root a line).
inline constexpr char kJobPolicyPath[] = "/etc/parq/jobs.toml";
inline constexpr char kJobStatePath[] = "/run/parq/jobs";

// The policy file's text; `source` names it in errors.
Result<JobPolicy, std::string> ParseJobPolicy(const std::string& text,
                                              const std::string& source);
std::string FormatJobPolicy(const JobPolicy& policy);

// The scripts given to `nft -f -`.  Each is one transaction.
// The table's fixed part, created or brought to `policy`: the chains
// parallel, egress and forward are (created,) flushed and refilled; jobs,
// the sets and any other chain stay.
std::string PolicyScript(const JobPolicy& policy);
// A new level: its set and its rule in chain jobs.
std::string LevelScript(unsigned level);
std::string AddJobScript(const JobCgroup& job);
std::string DelJobScript(const JobCgroup& job);
// Level `level`'s set holding exactly `live` (paths below the root).
std::string RefillScript(unsigned level, const std::vector<std::string>& live);

// The sets of the table as `nft -j list table inet parq` prints them: per
// level, its elements as nft printed them, a path below the root or, for
// a cgroup that is gone, its id.
struct JobTable {
  std::map<unsigned, std::vector<std::string>> elems;
  std::set<std::string> chains;  // the names of its chains
  bool operator==(const JobTable&) const = default;
};
Result<JobTable, std::string> ParseJobTable(const std::string& nft_json);

// A level's elements split by whether their cgroup still exists.
struct JobLevel {
  std::vector<std::string> live;  // paths below the root
  std::vector<std::string> gone;  // ids, or paths removed since the list
};
std::map<unsigned, JobLevel> SplitJobs(const JobTable& t,
                                       const std::string& root,
                                       const CgroupProbe& probe);

// Runs nft's command with these arguments and standard input (RunNft,
// libnftables in this process, in the binary; a fake in the tests).
using NftRunner = std::function<Result<ProgramOutput, std::string>(
    const std::vector<std::string>& args, const std::string& input)>;
NftRunner SystemNft();

// What is missing from table `t` (nullopt: no table) for `policy` and
// the jobs of `state` whose cgroups exist: "" when nothing is.
std::string RestoreScript(const JobPolicy& policy,
                          const std::optional<JobTable>& t,
                          const std::vector<JobCgroup>& state,
                          const std::string& root, const CgroupProbe& probe);

struct JobEnv {
  std::string root = kCgroupRoot;
  CgroupProbe probe;
  NftRunner nft;
  // Taken around every change: Slurm runs prologs concurrently.
  std::string lock_path = "/run/parq/jobs.lock";
  std::string policy_path = kJobPolicyPath;
  std::string state_path = kJobStatePath;
};

// The commands; each returns the exit status and prints like the other
// parqctl commands (with json: {"ok": ...} or the list as JSON).
// job add makes the table, if missing, with the policy file's policy.
int JobAdd(const JobEnv& env, const std::string& path, bool json,
           std::ostream& out, std::ostream& err);
int JobDel(const JobEnv& env, const std::string& path, bool json,
           std::ostream& out, std::ostream& err);
int JobList(const JobEnv& env, bool json, std::ostream& out, std::ostream& err);
// The table's policy: created with it if missing, else brought to it;
// then saved to the policy file.
int JobPolicySet(const JobEnv& env, const JobPolicy& policy, bool json,
                 std::ostream& out, std::ostream& err);
// Refills every level that holds a job whose cgroup is gone.
int JobSweep(const JobEnv& env, bool json, std::ostream& out,
             std::ostream& err);
// `parqctl nft restore`: adds what is missing of the table (RestoreScript).
int NftRestore(const JobEnv& env, bool json, std::ostream& out,
               std::ostream& err);
// `parqctl nft watch`: NftRestore() now, then whenever nftables changes
// (its netlink notifications; every 0.5 s where they cannot be had) and
// every 5 s; returns only if it cannot go on.
int NftWatch(const JobEnv& env, std::ostream& out, std::ostream& err);

}  // namespace parq::parqd

#endif
