// SPDX-License-Identifier: GPL-2.0
//
// parqd's process: one event loop.  One UDP socket for credit messages
// (received by the sending role, sent by the receiving role), one signalfd
// (SIGTERM, SIGINT: stop), with the receiving role the receive monitor's
// event socket and its epoch timer, and a periodic tick that forgets
// expired user-space entries and rewrites the metrics file.  Logs go
// through spdlog's default logger.

#ifndef PARQD_DAEMON_H
#define PARQD_DAEMON_H

#include <sys/socket.h>
#include <cstdint>
#include <optional>
#include <string>

#include "address.h"
#include "config.h"
#include "kernel.h"
#include "key.h"
#include "result.h"

namespace parq::parqd {

// The peer's address of a datagram; an IPv4-mapped IPv6 address (a socket
// bound to "::") becomes the IPv4 address.
std::optional<Address> FromSockaddr(const sockaddr_storage& ss);

// Where a datagram to `a`:`port` goes from a socket of `socket_family`
// (AF_INET or AF_INET6: IPv4 as an IPv4-mapped address); its length, or 0
// when the socket cannot reach that family.
socklen_t ToSockaddr(const Address& a, uint16_t port, int socket_family,
                     sockaddr_storage* ss);

// The key ring `c` names (key-file or keys-file, key-id), with a send key
// for every peer; errors name the file and what to do.
Result<KeyRing, std::string> LoadKeys(const Config& c);

// Opens the socket and runs until `signal_fd` is readable.  Returns the
// process exit status (0 on a clean stop); setup errors are logged.
// `monitor`: the kernel's receive monitor when c.receiver (the receiving
// role runs too), else null.
int RunDaemon(const Config& c, KernelCreditTable& kernel,
              KernelMonitor* monitor, int signal_fd);

}  // namespace parq::parqd

#endif
