// SPDX-License-Identifier: GPL-2.0
//
// parqd's process: the sending role's event loop.  One UDP socket for
// credit messages, one signalfd (SIGTERM, SIGINT: stop), and a periodic
// tick that forgets expired user-space entries and rewrites the metrics
// file.  Logs go through spdlog's default logger.

#ifndef PARQD_DAEMON_HPP
#define PARQD_DAEMON_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <sys/socket.h>

#include "address.hpp"
#include "config.hpp"
#include "kernel.hpp"

namespace parq::parqd {

// The peer's address of a datagram; an IPv4-mapped IPv6 address (a socket
// bound to "::") becomes the IPv4 address.
std::optional<Address> FromSockaddr(const sockaddr_storage& ss);

// Opens the socket and runs until `signal_fd` is readable.  Returns the
// process exit status (0 on a clean stop); setup errors are logged.
int RunDaemon(const Config& c, KernelCreditTable& kernel, int signal_fd);

}  // namespace parq::parqd

#endif
