// SPDX-License-Identifier: GPL-2.0

#include "daemon.hpp"

#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "key.hpp"
#include "metrics.hpp"
#include "receiver.hpp"
#include "sender.hpp"

namespace parq::parqd {

namespace {

constexpr uint64_t kTickNs = 1'000'000'000;  // expiry sweep at least this often

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 +
         static_cast<uint64_t>(ts.tv_nsec);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0)
      close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

int OpenSocket(const Config& c) {
  const Address a = Address::Parse(c.listen_address).value();
  const std::string where =
      (a.family == Family::kIPv6 ? "[" + c.listen_address + "]"
                                 : c.listen_address) +
      ":" + std::to_string(c.listen_port);
  int fd = -1;
  int rc = -1;
  if (a.family == Family::kIPv4) {
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(c.listen_port);
    std::memcpy(&sin.sin_addr, a.bytes.data(), 4);
    if (fd >= 0)
      rc = bind(fd, reinterpret_cast<sockaddr*>(&sin), sizeof(sin));
  } else {
    fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(c.listen_port);
    std::memcpy(&sin6.sin6_addr, a.bytes.data(), 16);
    const int zero = 0;
    if (fd >= 0) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      rc = bind(fd, reinterpret_cast<sockaddr*>(&sin6), sizeof(sin6));
    }
  }
  if (fd < 0 || rc < 0) {
    const int e = errno;
    spdlog::error("cannot listen on UDP {}: {}; {}", where, std::strerror(e),
                  e == EADDRINUSE ? "another process (another parqd?) has "
                                    "the port: stop it or set listen-port"
                  : e == EADDRNOTAVAIL
                      ? "the address is not on this host: set "
                        "listen-address to one of its addresses or \"::\""
                      : "check listen-address and listen-port");
    if (fd >= 0)
      close(fd);
    return -1;
  }
  spdlog::info("listening on UDP {}", where);
  return fd;
}

void WriteMetrics(const Config& c, const Sender& s) {
  if (c.metrics_file.empty())
    return;
  if (auto e = WriteFileAtomically(c.metrics_file, s.Metrics()))
    spdlog::warn("metrics: {}", *e);
}

}  // namespace

std::optional<Address> FromSockaddr(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) {
    const auto& sin = reinterpret_cast<const sockaddr_in&>(ss);
    std::array<uint8_t, 4> b;
    std::memcpy(b.data(), &sin.sin_addr, 4);
    return Address::V4(b);
  }
  if (ss.ss_family == AF_INET6) {
    const auto& sin6 = reinterpret_cast<const sockaddr_in6&>(ss);
    const uint8_t* p = sin6.sin6_addr.s6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&sin6.sin6_addr))
      return Address::V4({p[12], p[13], p[14], p[15]});
    std::array<uint8_t, 16> b;
    std::memcpy(b.data(), p, 16);
    return Address::V6(b);
  }
  return std::nullopt;
}

int RunDaemon(const Config& c, KernelCreditTable& kernel, int signal_fd) {
  if (if_nametoindex(c.interface.c_str()) == 0)
    spdlog::warn("interface {} does not exist (yet): credits apply to the "
                 "whole network namespace anyway, but check 'interface'",
                 c.interface);
  auto key = Key::FromFile(c.key_file);
  if (!key.ok()) {
    spdlog::error("{}", key.error());
    return 1;
  }
  auto rx = Receiver::Create(std::move(key.value()), c.peers,
                             [](const std::string& line) {
                               spdlog::warn("{}", line);
                             });
  if (!rx.ok()) {
    spdlog::error("configuration: {}", rx.error());
    return 1;
  }
  Sender sender(std::move(rx.value()), kernel,
                [](const std::string& line) { spdlog::error("{}", line); });
  const Fd sock(OpenSocket(c));
  if (sock.get() < 0)
    return 1;
  spdlog::info("node {}: sending role, {} peer(s); the receiving role "
               "(granting credit) is not implemented yet",
               c.node_id, c.peers.size());

  WriteMetrics(c, sender);
  uint64_t next_metrics = MonotonicNs() + c.metrics_period_ns;
  uint64_t next_tick = MonotonicNs() + kTickNs;
  std::array<uint8_t, 2048> buf{};
  for (;;) {
    const uint64_t now = MonotonicNs();
    if (now >= next_tick) {
      sender.Expire(now);
      next_tick = now + kTickNs;
    }
    if (now >= next_metrics) {
      WriteMetrics(c, sender);
      next_metrics = now + c.metrics_period_ns;
    }
    const uint64_t wake = std::min(next_tick, c.metrics_file.empty()
                                                  ? next_tick
                                                  : next_metrics);
    const int timeout_ms =
        static_cast<int>((wake > now ? wake - now : 0) / 1'000'000 + 1);
    pollfd p[2] = {{sock.get(), POLLIN, 0}, {signal_fd, POLLIN, 0}};
    const int n = poll(p, 2, timeout_ms);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      spdlog::error("poll: {}", std::strerror(errno));
      return 1;
    }
    if (p[1].revents & POLLIN) {
      signalfd_siginfo si{};
      if (read(signal_fd, &si, sizeof(si)) == sizeof(si))
        spdlog::info("{}: stopping", strsignal(static_cast<int>(si.ssi_signo)));
      break;
    }
    if (!(p[0].revents & POLLIN))
      continue;
    for (;;) {  // drain what is queued
      sockaddr_storage ss{};
      socklen_t sl = sizeof(ss);
      const ssize_t len =
          recvfrom(sock.get(), buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC,
                   reinterpret_cast<sockaddr*>(&ss), &sl);
      if (len < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
          spdlog::warn("recvfrom: {}", std::strerror(errno));
        break;
      }
      const auto from = FromSockaddr(ss);
      if (!from)
        continue;
      const size_t got = std::min(static_cast<size_t>(len), buf.size());
      const Outcome o = sender.Handle(std::span(buf.data(), got), *from,
                                      MonotonicNs());
      if (o.accepted && o.message)
        spdlog::debug("applied {} from peer {} ({} address(es))",
                      o.message->type == wire::Type::kGrant ? "GRANT" : "RELEASE",
                      o.message->sender, o.message->addresses.size());
    }
  }
  WriteMetrics(c, sender);
  return 0;
}

}  // namespace parq::parqd
