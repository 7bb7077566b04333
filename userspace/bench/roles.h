// SPDX-License-Identifier: GPL-2.0
//
// The roles of parq-bench.  Each returns its report as JSON; main()
// prints it.  Errors are exceptions whose message says what went wrong.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include <nlohmann/json.hpp>

#include "net.h"
#include "options.h"
#include "stats.h"

namespace parqbench {

using nlohmann::json;

// Echo server / bulk sink.  The constructor binds (so a test can read the
// port of ADDR:0 before run()); run() serves until stop becomes true.
class Server {
 public:
  explicit Server(const Config& c);
  uint16_t port() const;
  json run(const std::atomic<bool>& stop);

 private:
  json run_tcp(const std::atomic<bool>& stop);
  json run_udp(const std::atomic<bool>& stop);

  Config c_;
  Addr addr_;
  Fd fd_;
};

// run: one-to-one against a server, or this rank's part of a collective.
json RunPattern(const Config& c);
json RunOneToOne(const Config& c);
json RunCollective(const Config& c);

// bulk: a stream of --size messages to a server for --seconds.  With
// --progress-ms, @progress gets a sample every so many ms while it sends:
// {"t_ns": CLOCK_MONOTONIC, "bytes_acked": what the server has
// acknowledged}.
using Progress = std::function<void(const json&)>;
json RunBulk(const Config& c, const Progress& progress = {});

// timer: --count wake-ups at absolute deadlines --interval apart, each
// one's lateness (timer.cc says what it measures).
json RunTimer(const Config& c);

// {"count", "mean", "min", "p50", "p99", "p999", "max"}; all null but count
// when there are no samples.
json SummaryJson(const Summary& s);

}  // namespace parqbench
