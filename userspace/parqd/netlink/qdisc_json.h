// SPDX-License-Identifier: GPL-2.0
//
// A parq qdisc's options and statistics, read from what the kernel sends
// (tc_link.h), as JSON under the names tc -s -j gives them: the options by
// the parameter table (<parq/params.h>), the extended statistics by the
// statistics table (<parq/xstats.h>).  For `parqctl qdisc show`, which
// thus depends on no program and on no plugin's printing.

#ifndef PARQD_NETLINK_QDISC_JSON_H
#define PARQD_NETLINK_QDISC_JSON_H

#include <nlohmann/json.hpp>

#include "netlink/tc_link.h"

namespace parq::parqd {

// {"kind", "handle", "root" | "parent", "options": {...}, "bytes", ...,
//  "xstats": {...}}.  An option or statistic the kernel did not send, or
//  sent too short, is left out; attributes the table does not know too.
nlohmann::json QdiscJson(const TcObject& q);

// The options alone; the extended statistics alone.
nlohmann::json ParqOptionsJson(const std::vector<uint8_t>& options);
nlohmann::json ParqXstatsJson(const std::vector<uint8_t>& xstats);

}  // namespace parq::parqd

#endif
