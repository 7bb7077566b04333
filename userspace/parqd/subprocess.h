// SPDX-License-Identifier: GPL-2.0
//
// Running another program and collecting what it printed; and
// ProgramOutput, the shape of nft's answers also when libnftables gives
// them (nft.h).  parqd and parqctl themselves run no program.

#ifndef PARQD_SUBPROCESS_H
#define PARQD_SUBPROCESS_H

#include <chrono>
#include <string>
#include <vector>

#include "result.h"

namespace parq::parqd {

struct ProgramOutput {
  int status = 0;  // exit status; 128 + N if killed by signal N
  std::string out;
  std::string err;
};

// How long RunProgram() waits for a program unless told: one that takes
// this long is stuck.
inline constexpr std::chrono::milliseconds kProgramTimeout{10'000};

// Runs argv (argv[0] looked up in PATH) with `input` on its standard input
// and waits for it, `timeout` at most: then it kills the program and its
// children (SIGKILL to its process group), reaps it and returns an error
// ("tc did not finish within 10s and was killed; ...").  The other error
// is for a program that could not be started ("cannot run nft: No such
// file or directory"); a program that ran and failed returns its status
// and output.
Result<ProgramOutput, std::string> RunProgram(
    const std::vector<std::string>& argv, const std::string& input = "",
    std::chrono::milliseconds timeout = kProgramTimeout);

// What it printed on standard error, without the trailing newlines: to
// quote in a message.
std::string ErrorText(const ProgramOutput& o);

}  // namespace parq::parqd

#endif
