// SPDX-License-Identifier: GPL-2.0
//
// The roles of parq-bench.  Each returns its report as JSON, or an error
// that says what went wrong; main() prints either.

#ifndef BENCH_ROLES_H
#define BENCH_ROLES_H

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "net.h"
#include "options.h"
#include "stats.h"

namespace parqbench {

using nlohmann::json;

// Echo server / bulk sink.  Open() binds (so a test can read the port of
// ADDR:0 before run()); run() serves until stop becomes true.
class Server {
 public:
  static Result<Server, std::string> Open(const Config& c);
  Result<uint16_t, std::string> port() const;
  Result<json, std::string> run(const std::atomic<bool>& stop);

 private:
  Server(const Config& c, Addr addr, Fd fd)
      : c_(c), addr_(std::move(addr)), fd_(std::move(fd)) {}
  Result<json, std::string> run_tcp(const std::atomic<bool>& stop);
  Result<json, std::string> run_udp(const std::atomic<bool>& stop);

  Config c_;
  Addr addr_;
  Fd fd_;
};

// run: one-to-one against a server, or this rank's part of a collective.
Result<json, std::string> RunPattern(const Config& c);
Result<json, std::string> RunOneToOne(const Config& c);
Result<json, std::string> RunCollective(const Config& c);

// bulk: a stream of --size messages to a server for --seconds.  With
// --progress-ms, @progress gets a sample every so many ms while it sends:
// {"t_ns": CLOCK_MONOTONIC, "bytes_acked": what the server has
// acknowledged}.
using Progress = std::function<void(const json&)>;
Result<json, std::string> RunBulk(const Config& c,
                                  const Progress& progress = {});

// timer: --count wake-ups at absolute deadlines --interval apart, each
// one's lateness (timer.cc says what it measures).
Result<json, std::string> RunTimer(const Config& c);

// {"count", "mean", "min", "p50", "p99", "p999", "max"}; all null but count
// when there are no samples.
json SummaryJson(const Summary& s);

}  // namespace parqbench

#endif
