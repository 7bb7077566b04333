// SPDX-License-Identifier: GPL-2.0
//
// parqd's process: one event loop.  One UDP socket for credit messages
// (received by the sending role, sent by the receiving role), one signalfd
// (SIGTERM, SIGINT: stop; SIGHUP: reload), with the receiving role the
// receive monitor's event socket and its epoch timer, a periodic tick that
// forgets expired user-space entries and rewrites the metrics file, and
// the service manager's watchdog (notify.h).  Logs go through spdlog's
// default logger.

#ifndef PARQD_DAEMON_DAEMON_H
#define PARQD_DAEMON_DAEMON_H

#include <sys/socket.h>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/address.h"
#include "base/result.h"
#include "config/config.h"
#include "daemon/notify.h"
#include "netlink/kernel.h"
#include "proto/key.h"

namespace parq::parqd {

// parqd's exit status when its configuration or a key file is wrong:
// restarting cannot help (the unit's RestartPreventExitStatus=).  Other
// failures to start (the kernel's module not loaded, an address not yet
// up) exit 1.
inline constexpr int kExitConfig = 2;

// Where a datagram to `a`:`port` goes from a socket of `socket_family`
// (AF_INET or AF_INET6: IPv4 as an IPv4-mapped address); its length, or 0
// when the socket cannot reach that family.
socklen_t ToSockaddr(const Address& a, uint16_t port, int socket_family,
                     sockaddr_storage* ss);

// The key ring `c` names (key-file or keys-file, key-id), with a send key
// for every peer; errors name the file and what to do.
Result<KeyRing, std::string> LoadKeys(const Config& c);

// A line of the admission role's (its agent's, its watch's, its
// admission's or parqd --clean-up's) to the journal at its level.
void LogRoleLine(int level, const std::string& line);

// What a reload applies: the keys (key-file, keys-file, key-id) and
// max-clock-skew, taken from `next`; the rest of `running` stays.  A
// reload keeps the replay windows and the credit entries.
Config Reloaded(const Config& running, const Config& next);

// Whether `next` changes any setting besides those Reloaded() takes: those
// apply at the next restart only.
bool NeedsRestart(const Config& running, const Config& next);

// Reads the configuration again, for a reload.
using ConfigLoader = std::function<Result<Config, std::string>()>;

class SendingRole;
class ReceivingRole;

// What SIGHUP runs: the configuration `load` reads, its keys (LoadKeys(),
// from the key files themselves) and max-clock-skew applied to `sender`
// and `role` (null: no receiving role); on any error nothing changes.
// Returns the configuration now running.
Config Reload(const Config& running, const ConfigLoader& load,
              SendingRole& sender, ReceivingRole* role);

// Opens the socket and runs until `signal_fd` delivers SIGTERM or SIGINT;
// SIGHUP reloads (Reloaded(): a configuration `reload` cannot read, or
// whose keys do not load, changes nothing).  Returns the process exit
// status (0 on a clean stop); setup errors are logged.  `monitor`: the
// kernel's receive monitor when c.receiver (the receiving role runs too),
// else null.  `manager` hears READY=1 once the roles run, the watchdog's
// pings and the reloads.
int RunDaemon(const Config& c, KernelCreditTable& kernel,
              KernelMonitor* monitor, int signal_fd,
              const ServiceManager& manager, const ConfigLoader& reload);

}  // namespace parq::parqd

#endif
