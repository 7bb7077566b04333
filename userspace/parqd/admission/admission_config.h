// SPDX-License-Identifier: GPL-2.0
//
// What the [admission] section of parqd.toml configures: parqd's admission
// role, shared by the configuration's reader and the admission agent.

#ifndef PARQD_ADMISSION_ADMISSION_CONFIG_H
#define PARQD_ADMISSION_ADMISSION_CONFIG_H

#include <cstdint>
#include <string>
#include <vector>

#include "admission/etcd.h"
#include "base/units.h"

namespace parq::parqd {

// One [[admission.allow]]: `user` or `group` (a name) may hold `rate`
// bits/s of reservations in all.
struct AllowRule {
  std::string user, group;
  uint64_t rate = 0;

  bool operator==(const AllowRule&) const = default;
};

// How the admission role adapts reservations to what they carry (the
// [admission] keys adapt, adapt-after, adapt-margin and adapt-floor;
// Documentation/admission.md, "Reservations that adapt").
struct AdaptConfig {
  bool on = false;
  // How long a reservation stays over-allocated, or choked, before its
  // rate is changed.
  uint64_t after_ns = 15 * kNsPerSec;
  // A shrunk reservation keeps what it sent at most, plus this share.
  uint32_t margin_percent = 25;
  // A reservation that named no minimum is not shrunk below this share of
  // the rate it asked.
  uint32_t floor_percent = 25;

  bool operator==(const AdaptConfig&) const = default;
};

// The [admission] section: parqd's admission role (Documentation/
// admission.md, "parqd's admission role").
struct AdmissionConfig {
  std::vector<std::string> etcd_endpoints;  // required: "http(s)://HOST:PORT"
  std::string etcd_prefix = "/parq/v1/";
  uint64_t etcd_timeout_ns = kNsPerSec;
  std::string topology_file;  // required
  std::string host;           // "": the system's host name
  uint64_t lease_ns = 10 * kNsPerSec;
  std::string socket = "/run/parqd/admission.sock";
  // Where Slurm's cgroup/v2 plugin puts job N (job_N): a reservation made
  // for a job ends when that directory is gone.
  std::string slurm_cgroup = "/sys/fs/cgroup/system.slice/slurmstepd.scope";
  std::vector<AllowRule> allow;
  EtcdTls etcd_tls;  // https:// endpoints: etcd-ca-file, -cert-file, -key-file
  EtcdAuth etcd_auth;  // etcd-user, etcd-password-file
  // etcd-insecure: plain http:// endpoints on other hosts are accepted
  // (else only https:// and loopback ones).
  bool etcd_insecure = false;
  AdaptConfig adapt;

  bool operator==(const AdmissionConfig&) const = default;
};

}  // namespace parq::parqd

#endif
