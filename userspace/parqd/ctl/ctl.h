// SPDX-License-Identifier: GPL-2.0
//
// What parqctl does with its parsed command line.  The kernel table comes
// from `open` (OpenGenlCreditTable in the binary, a fake in the tests);
// `qdisc show` reads the device's qdiscs over rtnetlink and shows the parq
// ones (FormatQdisc).

#ifndef PARQD_CTL_CTL_H
#define PARQD_CTL_CTL_H

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "ctl/cli.h"
#include "jobs/jobs.h"
#include "netlink/kernel.h"
#include "netlink/tc_link.h"

namespace parq::parqd {

using KernelOpener =
    std::function<Result<std::unique_ptr<KernelCreditTable>, KernelError>()>;
using MonitorOpener =
    std::function<Result<std::unique_ptr<KernelMonitor>, KernelError>()>;

// Returns the exit status: 0, or 1 on any error.  `jobs` serves the job
// commands (SystemCgroupProbe and SystemNft in the binary); `monitor` the
// monitor command (OpenGenlMonitor).
int RunCtl(const CtlArgs& a, const KernelOpener& open, std::ostream& out,
           std::ostream& err, const JobEnv& jobs = {},
           const MonitorOpener& monitor = {});

// Text to print (Result needs value and error types to differ).
struct Output {
  std::string text;
};

// One device's parq qdiscs as parqctl prints them (text, or JSON under
// tc -s -j's names: qdisc_json.h).  Error: no parq qdisc on the device.
Result<Output, std::string> FormatQdisc(const std::vector<TcObject>& qdiscs,
                                        const std::string& dev, bool json);

// The entries as parqctl prints them.
std::string FormatEntries(const std::vector<KernelEntry>& e, bool json);

// The receive monitor as `parqctl monitor` prints it: its state, then one
// line per source host (parallel and local packets, bytes and the age of
// the last, "-" for none).
std::string FormatMonitor(const MonitorState& s,
                          const std::vector<PeerSample>& sources, bool json);

// parqd's status reply to "peers" (status.h) as `parqctl peers` prints
// it: the reply itself with `json`, else a line per peer.  Errors: a reply
// without a list of peers.
Result<Output, std::string> FormatPeers(const nlohmann::json& reply, bool json);

}  // namespace parq::parqd

#endif
