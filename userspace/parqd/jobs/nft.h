// SPDX-License-Identifier: GPL-2.0
//
// nftables through libnftables, in this process: what `nft ARGS` would do,
// without running a program.

#ifndef PARQD_JOBS_NFT_H
#define PARQD_JOBS_NFT_H

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace parq::parqd {

// What nft would have printed, and its status.
struct ProgramOutput {
  int status = 0;  // 0, or 1 when nftables refused
  std::string out;
  std::string err;
};

// libnftables' error buffer (what nft would print on standard error),
// without the trailing newlines: to quote in a message.
std::string ErrorText(const ProgramOutput& o);

// Why nftables cannot be reached, or nullopt.
using NftProbe = std::function<std::optional<std::string>()>;

// Runs what `nft args...` with `input` on its standard input would: the
// arguments are nft's (-j for JSON output, -f - for the commands of
// `input`, else the command itself, such as "list table inet parq").
// Returns what nft would have printed and its status (0, or 1 when nftables
// refused), so that callers read it as they read nft's; an error for
// arguments it does not take, or when `probe` (by default: can this process
// open netfilter's netlink socket?) finds nftables out of reach, before
// libnftables is asked: it ends the process when it cannot open that
// socket.  One call at a time in a process.
Result<ProgramOutput, std::string> RunNft(const std::vector<std::string>& args,
                                          const std::string& input,
                                          const NftProbe& probe = {});

// `nft args...` (argv[0] "nft") through RunNft(); any other program is
// refused: parqd runs none.
Result<ProgramOutput, std::string> RunCommand(
    const std::vector<std::string>& argv, const std::string& input);

}  // namespace parq::parqd

#endif  // PARQD_JOBS_NFT_H
