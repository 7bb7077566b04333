// SPDX-License-Identifier: GPL-2.0
//
// What config.cc's key table shares with the parsers of the configuration's
// sections: config_cluster.cc ([[peer]], [[host]] and which host this is)
// and config_admission.cc ([admission]).  Private to the parser.

#ifndef PARQD_CONFIG_CONFIG_SECTIONS_H
#define PARQD_CONFIG_CONFIG_SECTIONS_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "base/result.h"
#include "base/toml_read.h"
#include "config/config.h"

namespace parq::parqd::config_sections {

using Reader = TomlReader;

// A duration within [min, max] ns; else an error that gives `range`.
std::optional<std::string> ReadDuration(const Reader& r, const toml::node& v,
                                        std::string_view key, uint64_t min,
                                        uint64_t max, std::string_view range,
                                        uint64_t& out);
// A string that is not empty, or an error naming `key`.
Result<Str, std::string> NonEmpty(const Reader& r, const toml::node& v,
                                  std::string_view key);
// A string that is an absolute path; else the error says that it "must be
// an absolute path" followed by `what`.
Result<Str, std::string> AbsolutePath(const Reader& r, const toml::node& v,
                                      std::string_view key,
                                      std::string_view what);

// [[peer]] sections.
Result<std::vector<PeerConfig>, std::string> Peers(const Reader& r,
                                                   std::string_view source,
                                                   const toml::node& n);
// [[host]] sections (a cluster file).
Result<std::vector<HostConfig>, std::string> Hosts(const Reader& r,
                                                   std::string_view source,
                                                   const toml::node& n);
// A cluster file: which [[host]] this host is (node-id, else its host name
// or short name, else one of its addresses), then its peers and, unless
// given, its addresses.  An error says how this host is known.
std::optional<std::string> SelectHost(Config& c, bool have_node_id,
                                      const Identity* self,
                                      const std::string& file);

// The [admission] section.
Result<AdmissionConfig, std::string> Admission(const Reader& r,
                                               std::string_view source,
                                               const toml::node& n);

}  // namespace parq::parqd::config_sections

#endif  // PARQD_CONFIG_CONFIG_SECTIONS_H
