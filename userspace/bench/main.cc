// SPDX-License-Identifier: GPL-2.0
//
// parq-bench: message-level load for parq experiments.  Everything but the
// process (signals, printing, exit codes) is in the parqbench library.
#include <csignal>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "options.h"
#include "roles.h"

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) {
  g_stop.store(true);
}

// Runs the role c names; its report, or what went wrong.
parqbench::Result<parqbench::json, std::string> Run(
    const parqbench::Config& c) {
  using namespace parqbench;
  if (c.role == Role::kServe) {
    auto s = Server::Open(c);
    if (!s.ok())
      return Err{s.error()};
    const auto port = s.value().port();
    if (!port.ok())
      return Err{port.error()};
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = OnSignal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    std::cerr << "parq-bench serve: listening on " << c.listen << " ("
              << TransportName(c.transport) << "), port " << port.value()
              << std::endl;
    return s.value().run(g_stop);
  }
  if (c.role == Role::kBulk)
    return RunBulk(c, [](const json& sample) {
      std::cout << sample.dump() << std::endl;  // flushed: read live
    });
  if (c.role == Role::kTimer)
    return RunTimer(c);
  return RunPattern(c);
}

// The role's report on stdout; its error, if any, on stderr, and exit 1.
int RunMain(int argc, char** argv) {
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
  const Result<json, std::string> j = Run(c);
  if (!j.ok()) {
    std::cerr << "parq-bench " << role << ": " << j.error() << std::endl;
    return 1;
  }
  std::cout << j.value().dump(2) << std::endl;
  return 0;
}

}  // namespace

// What escapes RunMain() (an allocation for a --count of billions, a thread
// the library cannot start) is reported, not left to std::terminate.
int main(int argc, char** argv) {
  try {
    return RunMain(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "parq-bench: " << e.what() << '\n';
    return 1;
  }
}
