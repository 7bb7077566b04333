// SPDX-License-Identifier: GPL-2.0
//
// parqd's counters in the Prometheus text exposition format (version
// 0.0.4), written for node_exporter's textfile collector: the daemon
// rewrites <dir>/parqd.prom periodically, atomically (a temporary file in
// the same directory, fsync, rename), so the collector never reads half a
// file.  The temporary name does not end in .prom, so the collector never
// picks it up.

#ifndef PARQD_PROTO_METRICS_H
#define PARQD_PROTO_METRICS_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proto/inbox.h"

namespace parq::parqd {

// The one writer of parqd's metrics text: each family's HELP and TYPE
// lines, then its samples.  Names are parqd's own snake_case (nothing to
// escape); HELP is a sentence.  Every label value a family can have is
// written, zeros included, so that rate() works from the first scrape.
class PromText {
 public:
  // Opens a family; `type` is "counter" or "gauge".
  void Family(std::string_view name, std::string_view type,
              std::string_view help);
  // A sample of the family just opened, with at most one label.
  void Sample(std::string_view name, uint64_t value,
              std::string_view label = {}, std::string_view label_value = {});
  // The same, of a share from 0 to 1 (written with 6 significant digits).
  void SampleRatio(std::string_view name, double value,
                   std::string_view label = {},
                   std::string_view label_value = {});
  // A family of one unlabelled sample.
  void Counter(std::string_view name, std::string_view help, uint64_t value);
  void Gauge(std::string_view name, std::string_view help, uint64_t value);

  // Families rendered by another PromText (another thread's).
  void Append(std::string_view rendered) { out_ += rendered; }

  const std::string& text() const { return out_; }

 private:
  // A sample's name and label, and the space before its value.
  void Key(std::string_view name, std::string_view label,
           std::string_view label_value);

  std::string out_;
};

// The inbox's counters and the credit table's size.
void RenderInbox(PromText& out, const Counters& c, size_t credit_entries);

// Replaces `path` with `text` atomically.  Returns an error message naming
// the file and the failed step, or nothing on success.
std::optional<std::string> WriteFileAtomically(const std::string& path,
                                               const std::string& text);

}  // namespace parq::parqd

#endif
