// SPDX-License-Identifier: GPL-2.0
//
// parqd's configuration: one TOML file (Documentation/parqd.md has the
// schema and the defaults), optionally overridden key by key from the
// command line.  Parsing is strict: an unknown key, a value of the wrong
// type or out of range is an error that names the file, the line, the key,
// what is wrong and what to write instead.

#ifndef PARQD_CONFIG_CONFIG_H
#define PARQD_CONFIG_CONFIG_H

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <linux/parq.h>

#include "admission/admission_config.h"
#include "base/result.h"
#include "base/units.h"
#include "proto/inbox.h"
#include "proto/wire.h"

namespace parq::parqd {

inline constexpr const char* kDefaultConfigPath = "/etc/parq/parqd.toml";
inline constexpr uint16_t kDefaultPort = 7207;
inline constexpr uint8_t kDefaultControlDscp = 48;  // CS6

// One [[host]] of a cluster file: a host of the cluster, by node id, name
// (optional: its host name) and addresses.
struct HostConfig {
  uint64_t id = 0;
  std::string name;
  std::vector<Address> addresses;

  bool operator==(const HostConfig&) const = default;
};

// How this host is known, to find its own [[host]] entry.
struct Identity {
  std::string hostname;            // gethostname(): "n1" or "n1.example"
  std::vector<Address> addresses;  // the addresses of its interfaces
};

// The system's: gethostname() and getifaddrs().
Identity SystemIdentity();

inline constexpr const char* kDefaultStatusSocket = "/run/parqd/status.sock";

struct Config {
  std::string interface;              // required
  std::string listen_address = "::";  // "::" also takes IPv4 (mapped)
  uint16_t listen_port = kDefaultPort;
  uint64_t node_id = 0;   // required
  std::string key_file;   // the cluster key; or
  std::string keys_file;  // this host's pair keys (one of the two)
  uint32_t key_id = 1;    // the key's id in the messages' header
  uint64_t max_clock_skew_ns = 500 * kNsPerMs;
  std::vector<PeerConfig> peers;  // at least one
  // A cluster file's [[host]] sections, instead of node-id and [[peer]]:
  // this host is the entry of node-id if given, else the one whose name is
  // its host name, else the one holding one of its addresses; its peers
  // are all the others, and its `addresses` (unless given) its entry's.
  std::vector<HostConfig> hosts;
  // The receiving role: on when `receiver`; `addresses` are this host's
  // own (what its grants are for).
  bool receiver = false;
  std::vector<Address> addresses;
  uint64_t threshold_recv = 0;
  unsigned local_floor = 20;  // percent of link_rate
  uint64_t link_rate = 0;     // bits/s; 0: the interface's speed
  uint64_t epoch_ns = kNsPerMs;
  uint64_t hold_ns = 10 * kNsPerMs;
  uint16_t lease = wire::kDefaultLeaseEpochs;
  // Parallel bytes that must arrive within one hold before the receiver
  // declares parallel traffic (the kernel monitor's min-bytes).
  uint32_t parallel_min_bytes = 0;
  // The DSCPs of parallel traffic, for the kernel's receive monitor: bit
  // n is DSCP n (PARQ_DSCP_BIT); by default the kernel's own, CS5 and EF.
  uint64_t parallel_dscp = PARQ_DSCP_DEFAULT;
  // The DSCP of the credit messages parqd sends: by default CS6, network
  // control, which switches that trust DSCP serve ahead of data.
  uint8_t control_dscp = kDefaultControlDscp;
  std::string metrics_file;  // empty: no metrics file
  uint64_t metrics_period_ns = 10 * kNsPerSec;
  // parqd's status socket (status.h); empty: none.
  std::string status_socket = kDefaultStatusSocket;
  std::optional<AdmissionConfig> admission;  // none: no admission role

  bool operator==(const Config&) const = default;
};

// What a key's value is, in the file.
enum class ConfigType {
  kString,
  kInteger,
  kDuration,  // a string: a number with a unit
  kBoolean,
  kAddress,    // a string: IPv4 or IPv6
  kAddresses,  // a list of those
  kDscp,       // a DSCP name ("cs6") or number
  kDscps,      // a list of those
  kPeers,      // [[peer]] sections
  kHosts,      // [[host]] sections
  kAdmission,  // the [admission] section
};

// One configuration key as --help, the command line and the documentation
// see it.  config.cc declares every key once, in one table, with how it is
// read; this is that table without the reading.
struct ConfigKeyInfo {
  std::string_view name;
  ConfigType type;
  bool receiving_role;       // a key of the receiving role
  bool required;             // (addresses: required with receiver)
  bool option;               // has a command-line option --<name>
  std::string_view example;  // as written in the file; the default, when
                             // the key is neither required nor a list
  std::string_view help;
};

std::vector<ConfigKeyInfo> ConfigKeys();

// Command-line values that replace the file's: key name -> the text given
// (an integer or boolean key's text is read as one).
struct ConfigOverrides {
  std::map<std::string, std::string, std::less<>> values;
};

// Why `name` is not a name the kernel gives an interface (dev_valid_name():
// 1 to IFNAMSIZ-1 bytes, not "." or "..", no '/', ':' or white space, and no
// NUL here); nullopt when it is one.  Every interface name parqd and parqctl
// take is checked with it, before it is looked up or printed.
std::optional<std::string> InterfaceNameProblem(std::string_view name);

// `source` names the text in messages (the file name).  `self`: how this
// host is known, for a cluster file's [[host]] sections (none: only
// node-id picks the entry).
Result<Config, std::string> ParseConfig(std::string_view text,
                                        std::string_view source,
                                        const ConfigOverrides& o = {},
                                        const Identity* self = nullptr);
// Reads `path` (this host: SystemIdentity()) and resolves its key paths
// (ResolveKeyPaths, with the environment's $CREDENTIALS_DIRECTORY).
Result<Config, std::string> LoadConfig(const std::string& path,
                                       const ConfigOverrides& o = {});

// A relative key-file or keys-file is the file of that name in the
// configuration file's directory, never a systemd credential: parqd checks
// the owner and mode of the file itself and rereads it on SIGHUP.
// `credentials_dir`: $CREDENTIALS_DIRECTORY, or null; no file uses it.
void ResolveKeyPaths(Config& c, const std::string& config_path,
                     const char* credentials_dir);

// The schema for --help: every key, its type and its default.
std::string ConfigKeysHelp();

}  // namespace parq::parqd

#endif
