// SPDX-License-Identifier: GPL-2.0
//
// The [admission] section of parqd's configuration.

#include "config/config_sections.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <linux/parq.h>
#include <toml++/toml.h>

#include "admission/admission_client.h"
#include "admission/topology.h"
#include "base/dscp.h"
#include "base/satmath.h"
#include "base/toml_read.h"
#include "base/units.h"
#include "proto/grant.h"
#include "proto/wire.h"

namespace parq::parqd::config_sections {

namespace {

Result<std::vector<AllowRule>, std::string> AllowRules(const Reader& r,
                                                       std::string_view source,
                                                       const toml::node& n) {
  const auto* arr = n.as_array();
  if (!arr || !arr->is_array_of_tables())
    return Err{r.Err(n, "admission.allow",
                     "must be a list of tables: write each rule as an "
                     "[[admission.allow]] section with user or group, and "
                     "rate")};
  std::vector<AllowRule> rules;
  for (const toml::node& an : *arr) {
    AllowRule a;
    bool have_rate = false;
    for (auto&& [k, v] : *an.as_table()) {
      const std::string_view key = k.str();
      if (key == "user" || key == "group") {
        auto s = NonEmpty(r, v, "admission.allow." + std::string(key));
        if (!s.ok())
          return Err{s.error()};
        (key == "user" ? a.user : a.group) = s.value().text;
      } else if (key == "rate") {
        const auto* s = v.as_string();
        auto rate = s ? ParseRate(s->get())
                      : Result<uint64_t, std::string>(Err{std::string(
                            "must be a rate string such as \"1gbit\"")});
        if (!rate.ok())
          return Err{r.Err(v, "admission.allow.rate", rate.error())};
        a.rate = rate.value();
        have_rate = true;
      } else {
        return Err{r.Err(v, "admission.allow." + std::string(key),
                         "unknown key in an [[admission.allow]] section; the "
                         "keys are user, group and rate")};
      }
    }
    const std::string at = TomlWhere(source, an);
    if (a.user.empty() == a.group.empty())
      return Err{at +
                 ": an [[admission.allow]] section names either a user or a "
                 "group, e.g. user = \"alice\" or group = \"hpc\""};
    if (!have_rate)
      return Err{at +
                 ": an [[admission.allow]] section has no 'rate'; give what "
                 "the user or group may reserve in all, e.g. rate = \"1gbit\""};
    rules.push_back(std::move(a));
  }
  return rules;
}

// Whether the host of `url` ("http://HOST:PORT/...") is this host's
// loopback: localhost, 127.0.0.0/8 or [::1].
bool IsLoopbackUrl(std::string_view url) {
  url.remove_prefix(std::min(url.find("://"), url.size()));
  if (url.starts_with("://"))
    url.remove_prefix(3);
  std::string_view host;
  if (url.starts_with("[")) {
    host = url.substr(1, url.find(']') - 1);
  } else {
    host = url.substr(0, std::min(url.find_first_of(":/"), url.size()));
  }
  if (host == "localhost" || host == "::1")
    return true;
  const auto a = Address::Parse(std::string(host));
  return a && a->family == Family::kIPv4 && a->bytes[0] == 127;
}

}  // namespace

Result<AdmissionConfig, std::string> Admission(const Reader& r,
                                               std::string_view source,
                                               const toml::node& n) {
  const auto* t = n.as_table();
  if (!t)
    return Err{
        r.Err(n, "admission", "must be a table: write an [admission] section")};
  AdmissionConfig a;
  bool have_endpoints = false, have_topology = false;
  for (auto&& [k, v] : *t) {
    const std::string key(k.str());
    const std::string full = "admission." + key;
    if (key == "etcd-endpoints") {
      const auto* arr = v.as_array();
      const std::string want =
          "must be a non-empty list of etcd client URLs, e.g. "
          "[\"http://10.0.0.5:2379\", \"http://10.0.0.6:2379\"]";
      if (!arr || arr->empty())
        return Err{r.Err(v, full, want)};
      for (const toml::node& e : *arr) {
        const auto* s = e.as_string();
        if (!s || (s->get().rfind("http://", 0) != 0 &&
                   s->get().rfind("https://", 0) != 0))
          return Err{r.Err(e, full, want)};
        a.etcd_endpoints.push_back(s->get());
      }
      have_endpoints = true;
    } else if (key == "etcd-prefix") {
      auto s = NonEmpty(r, v, full);
      if (!s.ok())
        return Err{s.error()};
      if (s.value().text.front() != '/' || s.value().text.back() != '/')
        return Err{r.Err(v, full,
                         "\"" + s.value().text +
                             "\" must begin and end with '/', e.g. "
                             "\"/parq/v1/\"")};
      a.etcd_prefix = s.value().text;
    } else if (key == "etcd-timeout") {
      if (auto e = ReadDuration(r, v, full, 100 * kNsPerMs, 60 * kNsPerSec,
                                "a time from 100ms to 60s", a.etcd_timeout_ns))
        return Err{*e};
    } else if (key == "topology-file") {
      auto s = NonEmpty(r, v, full);
      if (!s.ok())
        return Err{s.error()};
      a.topology_file = s.value().text;
      have_topology = true;
    } else if (key == "host") {
      auto s = NonEmpty(r, v, full);
      if (!s.ok())
        return Err{s.error()};
      a.host = s.value().text;
    } else if (key == "lease") {
      if (auto e = ReadDuration(r, v, full, 2 * kNsPerSec, 3600 * kNsPerSec,
                                "whole seconds from 2s to 1h", a.lease_ns))
        return Err{*e};
      if (a.lease_ns % kNsPerSec != 0)
        return Err{r.Err(v, full,
                         "is " + FormatDuration(a.lease_ns) +
                             "; give whole seconds from 2s to 1h (etcd's "
                             "leases count seconds)")};
    } else if (key == "socket") {
      auto s = NonEmpty(r, v, full);
      if (!s.ok())
        return Err{s.error()};
      if (s.value().text.front() != '/' || s.value().text.size() > 107)
        return Err{r.Err(v, full,
                         "\"" + s.value().text +
                             "\" must be an absolute path of at most 107 "
                             "characters")};
      a.socket = s.value().text;
    } else if (key == "slurm-cgroup") {
      auto s = AbsolutePath(r, v, full,
                            " (a directory of the cgroup v2 file system)");
      if (!s.ok())
        return Err{s.error()};
      a.slurm_cgroup = s.value().text;
    } else if (key == "etcd-ca-file" || key == "etcd-cert-file" ||
               key == "etcd-key-file") {
      auto f = AbsolutePath(r, v, full, " to a PEM file");
      if (!f.ok())
        return Err{f.error()};
      std::string& to = key == "etcd-ca-file"     ? a.etcd_tls.ca_file
                        : key == "etcd-cert-file" ? a.etcd_tls.cert_file
                                                  : a.etcd_tls.key_file;
      to = f.value().text;
    } else if (key == "etcd-user") {
      auto s = NonEmpty(r, v, full);
      if (!s.ok())
        return Err{s.error()};
      a.etcd_auth.user = s.value().text;
    } else if (key == "etcd-password-file") {
      auto f = AbsolutePath(r, v, full, " to the file of etcd-user's password");
      if (!f.ok())
        return Err{f.error()};
      a.etcd_auth.password_file = f.value().text;
    } else if (key == "etcd-insecure") {
      const auto* b = v.as_boolean();
      if (!b)
        return Err{r.Err(v, full, "must be true or false (no quotes)")};
      a.etcd_insecure = b->get();
    } else if (key == "adapt") {
      const auto* b = v.as_boolean();
      if (!b)
        return Err{r.Err(v, full, "must be true or false (no quotes)")};
      a.adapt.on = b->get();
    } else if (key == "adapt-after") {
      if (auto e = ReadDuration(r, v, full, 5 * kNsPerSec, 3600 * kNsPerSec,
                                "a time from 5s to 1h", a.adapt.after_ns))
        return Err{*e};
    } else if (key == "adapt-margin" || key == "adapt-floor") {
      auto n = r.Integer(v, full, key == "adapt-margin" ? 0 : 1, 100);
      if (!n.ok())
        return Err{n.error()};
      (key == "adapt-margin" ? a.adapt.margin_percent : a.adapt.floor_percent) =
          static_cast<uint32_t>(n.value());
    } else if (key == "allow") {
      auto rules = AllowRules(r, source, v);
      if (!rules.ok())
        return Err{rules.error()};
      a.allow = std::move(rules.value());
    } else {
      return Err{r.Err(v, full,
                       "unknown key in the [admission] section; the keys are "
                       "etcd-endpoints, etcd-prefix, etcd-timeout, "
                       "etcd-ca-file, etcd-cert-file, etcd-key-file, "
                       "etcd-user, etcd-password-file, "
                       "etcd-insecure, topology-file, host, lease, socket, "
                       "slurm-cgroup, adapt, adapt-after, adapt-margin, "
                       "adapt-floor and allow")};
    }
  }
  const std::string at = TomlWhere(source, n);
  if (!have_endpoints)
    return Err{at +
               ": the [admission] section has no 'etcd-endpoints'; list "
               "the etcd cluster's client URLs"};
  if (!have_topology)
    return Err{at +
               ": the [admission] section has no 'topology-file'; give the "
               "cluster's topology (Documentation/admission.md)"};
  const EtcdTlsProblem tls = CheckEtcdTls(a.etcd_tls, a.etcd_endpoints);
  if (tls.kind == EtcdTlsProblem::kUnpaired)
    return Err{at +
               ": the [admission] section gives one of 'etcd-cert-file' "
               "and 'etcd-key-file' without the other; a client "
               "certificate needs its key"};
  if (tls.kind == EtcdTlsProblem::kPlainEndpoint)
    return Err{at +
               ": the [admission] section's TLS files are for "
               "https:// endpoints, but etcd-endpoints has \"" +
               tls.plain + "\""};
  if (auto e = EtcdAuthProblem(a.etcd_auth))
    return Err{at + ": the [admission] section's " + *e};
  if (!a.etcd_insecure)
    for (const std::string& e : a.etcd_endpoints)
      if (e.rfind("http://", 0) == 0 && !IsLoopbackUrl(e))
        return Err{at + ": etcd endpoint \"" + e +
                   "\" is plain HTTP to another host: anyone on the path can "
                   "read and forge the cluster's reservations.  Use "
                   "https:// with etcd-ca-file, etcd-cert-file and "
                   "etcd-key-file, or an endpoint on this host (a local etcd "
                   "gRPC proxy or TLS terminator), or accept it with "
                   "etcd-insecure = true"};
  return a;
}

}  // namespace parq::parqd::config_sections
