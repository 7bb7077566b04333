// SPDX-License-Identifier: GPL-2.0
//
// parq-bench: message-level load for parq experiments.  Everything but the
// process (signals, printing, exit codes) is in the parqbench library.
#include <csignal>
#include <cstring>
#include <iostream>

#include "options.h"
#include "roles.h"

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) {
  g_stop.store(true);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace parqbench;
  ParseResult p = ParseCommandLine(argc, argv);
  std::cout << p.out;
  std::cerr << p.err;
  if (!p.config)
    return p.exit_code;
  const Config& c = *p.config;
  const char* role = c.role == Role::kServe   ? "serve"
                     : c.role == Role::kBulk  ? "bulk"
                     : c.role == Role::kTimer ? "timer"
                                              : "run";
  try {
    json j;
    if (c.role == Role::kServe) {
      Server s(c);
      struct sigaction sa;
      std::memset(&sa, 0, sizeof(sa));
      sa.sa_handler = OnSignal;
      sigaction(SIGINT, &sa, nullptr);
      sigaction(SIGTERM, &sa, nullptr);
      std::cerr << "parq-bench serve: listening on " << c.listen << " ("
                << TransportName(c.transport) << "), port " << s.port()
                << std::endl;
      j = s.run(g_stop);
    } else if (c.role == Role::kBulk) {
      j = RunBulk(c, [](const json& sample) {
        std::cout << sample.dump() << std::endl;  // flushed: read live
      });
    } else if (c.role == Role::kTimer) {
      j = RunTimer(c);
    } else {
      j = RunPattern(c);
    }
    std::cout << j.dump(2) << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "parq-bench " << role << ": " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
