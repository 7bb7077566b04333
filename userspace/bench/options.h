// SPDX-License-Identifier: GPL-2.0
//
// The command line of parq-bench (CLI11).  parse_command_line() never
// exits and never prints: it returns what to print and the exit code, so
// the tests can check every error message.

#ifndef BENCH_OPTIONS_H
#define BENCH_OPTIONS_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "net.h"

namespace parqbench {

enum class Role { kServe, kRun, kBulk, kTimer };
enum class Pattern { kOneToOne, kBarrier, kManyToOne, kAllToAll };
enum class Transport { kTcp, kUdp };

const char* PatternName(Pattern p);
const char* TransportName(Transport t);

struct Config {
  Role role = Role::kRun;
  Transport transport = Transport::kTcp;
  Pattern pattern = Pattern::kOneToOne;

  std::string listen;       // serve
  std::vector<Addr> peers;  // run
  int rank = 0;             // run, collectives
  Addr to;                  // bulk

  uint32_t size = 64;        // bytes per message, header included
  uint64_t count = 1000;     // messages (one-to-one) or iterations
  uint64_t interval_us = 0;  // mean gap between starts; 0: back to back
  bool exponential = false;
  uint64_t seed = 0;
  double seconds = 10;       // bulk
  uint32_t progress_ms = 0;  // bulk: 0, or a sample every so many ms
  uint32_t timeout_ms = 0;   // 0: transport default
  uint32_t connect_timeout_ms = 10000;
  uint32_t idle_timeout_s = 60;
  uint64_t slack_ns = 10000;  // timer: PR_SET_TIMERSLACK
  bool realtime = false;      // timer: SCHED_FIFO
  SockOpts sock;

  uint32_t effective_timeout_ms() const {
    return timeout_ms                     ? timeout_ms
           : transport == Transport::kUdp ? 1000
                                          : 10000;
  }
};

struct ParseResult {
  std::optional<Config> config;  // set when there is something to run
  int exit_code = 0;             // otherwise: exit with this
  std::string out, err;          // and print these (help, errors)
};

ParseResult ParseCommandLine(int argc, const char* const* argv);
ParseResult ParseCommandLine(const std::vector<std::string>& args);

// "1:1" (a tc classid, hex, as SO_PRIORITY 0x10001) or a plain number.
std::optional<int64_t> ParsePriority(const std::string& s);

}  // namespace parqbench

#endif
