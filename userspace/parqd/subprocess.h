// SPDX-License-Identifier: GPL-2.0
//
// Running another program (tc, nft) and collecting what it printed.

#ifndef PARQD_SUBPROCESS_H
#define PARQD_SUBPROCESS_H

#include <string>
#include <vector>

#include "result.h"

namespace parq::parqd {

struct ProgramOutput {
  int status = 0;  // exit status; 128 + N if killed by signal N
  std::string out;
  std::string err;
};

// Runs argv (argv[0] looked up in PATH) with `input` on its standard input
// and waits for it.  The error is only for a program that could not be
// started ("cannot run nft: No such file or directory"); a program that
// ran and failed returns its status and output.
Result<ProgramOutput, std::string> RunProgram(
    const std::vector<std::string>& argv, const std::string& input = "");

// What it printed on standard error, without the trailing newlines: to
// quote in a message.
std::string ErrorText(const ProgramOutput& o);

}  // namespace parq::parqd

#endif
