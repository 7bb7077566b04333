// SPDX-License-Identifier: GPL-2.0
//
// parqd's status socket: what `parqctl peers` shows.  A Unix socket of type
// SOCK_SEQPACKET (status-socket, default /run/parqd/status.sock, mode
// 0660: root and the parqd group), served by the daemon's loop through a
// RequestServer (request_server.h), one JSON request per connection and
// one JSON reply:
//
//   {"op": "peers"}
//
//   {"ok": true, "node": 1, "receiver": true, "peers": [
//     {"id": 2, "name": "n2", "addresses": ["10.0.0.2"],
//      "accepted": 12,
//      "last_accepted": {"type": "grant", "sequence": 7, "time_ns": ...,
//                        "age_ns": 1200000},
//      "dropped": {"malformed": 0, "wrong_source": 0, ...},
//      "held": [{"address": "10.0.0.2", "credit": 1500,
//                "epoch_ns": 1000000, "expires_in_ns": 2800000}],
//      "granted": true,
//      "last_sent": {"type": "grant", "sequence": 9, "credit": 1500,
//                    "age_ns": 300000}}]}
//
// Per peer: what this host accepted from it (the sending role's inbox),
// the datagrams dropped that named it as their sender by reason (every
// reason but unknown_peer, zeros included), the credit its grants hold on
// this host now, and, with the receiving role ("receiver": true), whether
// this host grants it credit and the newest message sent to it; without
// it, "granted" and "last_sent" are null.  "last_accepted" and
// "last_sent" are null until there is one.  Anything else gets
// {"ok": false, "error": "..."}.

#ifndef PARQD_DAEMON_STATUS_H
#define PARQD_DAEMON_STATUS_H

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "credit/receiving_role.h"
#include "proto/inbox.h"

namespace parq::parqd {

// What the status socket reports from.
struct StatusSources {
  uint64_t node_id = 0;
  std::map<uint64_t, std::string> names;  // peer id -> [[host]] name
  const Inbox* inbox = nullptr;           // the sending role's
  const ReceivingRole* role = nullptr;    // null: no receiving role
};

// The "peers" reply at `now` (CLOCK_MONOTONIC ns).
nlohmann::json PeersJson(const StatusSources& s, uint64_t now);

// The reply to one request (never throws; bad JSON gets an error reply).
std::string HandleStatusRequest(const StatusSources& s,
                                std::string_view request, uint64_t now);

}  // namespace parq::parqd

#endif
