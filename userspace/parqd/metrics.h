// SPDX-License-Identifier: GPL-2.0
//
// parqd's counters in the Prometheus text exposition format (version
// 0.0.4), written for node_exporter's textfile collector: the daemon
// rewrites <dir>/parqd.prom periodically, atomically (a temporary file in
// the same directory, fsync, rename), so the collector never reads half a
// file.  The temporary name does not end in .prom, so the collector never
// picks it up.

#ifndef PARQD_METRICS_H
#define PARQD_METRICS_H

#include <cstddef>
#include <optional>
#include <string>

#include "inbox.h"

namespace parq::parqd {

// Every metric with its HELP and TYPE lines; every label value present,
// zeros included, so that rate() works from the first scrape.
std::string RenderPrometheus(const Counters& c, size_t credit_entries);

// Replaces `path` with `text` atomically.  Returns an error message naming
// the file and the failed step, or nothing on success.
std::optional<std::string> WriteFileAtomically(const std::string& path,
                                               const std::string& text);

}  // namespace parq::parqd

#endif
