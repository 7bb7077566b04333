// SPDX-License-Identifier: GPL-2.0
//
// What parqd tells its service manager (sd_notify(3), libsystemd): READY=1
// once it listens and its roles run, RELOADING=1 then READY=1 around a
// reload (SIGHUP), STOPPING=1, a STATUS= line for `systemctl status`, and
// WATCHDOG=1 from the main loop at half the unit's WatchdogSec=.  Outside
// systemd ($NOTIFY_SOCKET unset) every call does nothing.

#ifndef PARQD_DAEMON_NOTIFY_H
#define PARQD_DAEMON_NOTIFY_H

#include <cstdint>
#include <string>
#include <string_view>

namespace parq::parqd {

class ServiceManager {
 public:
  // Reads $NOTIFY_SOCKET and $WATCHDOG_USEC (sd_watchdog_enabled(3)).
  static ServiceManager FromEnvironment();

  // `status`: one line, what `systemctl status parqd` shows.
  void Ready(std::string_view status) const;
  // `monotonic_ns`: CLOCK_MONOTONIC now (systemd 253's notify-reload wants
  // it with RELOADING=1; earlier versions ignore it).
  void Reloading(uint64_t monotonic_ns) const;
  void Stopping() const;
  void Status(std::string_view status) const;
  void Watchdog() const;

  // How often Watchdog() must be called: half the watchdog's timeout; 0
  // when the service manager runs no watchdog.
  uint64_t watchdog_period_ns() const { return watchdog_period_ns_; }

 private:
  explicit ServiceManager(uint64_t watchdog_period_ns)
      : watchdog_period_ns_(watchdog_period_ns) {}
  void Send(const std::string& state) const;

  uint64_t watchdog_period_ns_;
};

}  // namespace parq::parqd

#endif
