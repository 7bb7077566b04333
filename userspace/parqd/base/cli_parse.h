// SPDX-License-Identifier: GPL-2.0
//
// CLI11 reports a bad command line only by throwing CLI::ParseError.  This
// is the one place in userspace/ that catches it: every command line
// (parqd, parqctl, parq-bench, parq-sim, parqd's benchmarks) is parsed
// through ParseCli(), which turns the exception into the exit status CLI11
// chose, with --help or the usage error printed on out or err.

#ifndef PARQD_BASE_CLI_PARSE_H
#define PARQD_BASE_CLI_PARSE_H

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>

namespace parq::parqd {

// nullopt when argv parsed and the program goes on; otherwise its exit
// status (0 after --help or --version).
inline std::optional<int> ParseCli(CLI::App& app, int argc,
                                   const char* const* argv, std::ostream& out,
                                   std::ostream& err) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err);
  }
  return std::nullopt;
}

}  // namespace parq::parqd

#endif
