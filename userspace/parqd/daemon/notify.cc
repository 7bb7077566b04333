// SPDX-License-Identifier: GPL-2.0

#include "daemon/notify.h"

#include <systemd/sd-daemon.h>

#include <cstring>
#include <string>

#include <spdlog/spdlog.h>

namespace parq::parqd {

ServiceManager ServiceManager::FromEnvironment() {
  uint64_t usec = 0;
  // The environment stays: the value is read once, here.
  if (sd_watchdog_enabled(0, &usec) <= 0)
    usec = 0;
  return ServiceManager(usec * 1000 / 2);
}

void ServiceManager::Send(const std::string& state) const {
  const int r = sd_notify(0, state.c_str());
  // r == 0: not run by systemd (no $NOTIFY_SOCKET); nothing to tell.
  if (r < 0)
    spdlog::warn("sd_notify({}): {}", state.substr(0, state.find('\n')),
                 std::strerror(-r));
}

void ServiceManager::Ready(std::string_view status) const {
  Send("READY=1\nSTATUS=" + std::string(status));
}

void ServiceManager::Reloading(uint64_t monotonic_ns) const {
  Send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(monotonic_ns / 1000));
}

void ServiceManager::Stopping() const {
  Send("STOPPING=1");
}

void ServiceManager::Status(std::string_view status) const {
  Send("STATUS=" + std::string(status));
}

void ServiceManager::Watchdog() const {
  Send("WATCHDOG=1");
}

}  // namespace parq::parqd
