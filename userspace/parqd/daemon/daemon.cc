// SPDX-License-Identifier: GPL-2.0

#include "daemon/daemon.h"

#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "admission/admission_agent.h"
#include "admission/admission_socket.h"
#include "admission/cluster_admission.h"
#include "admission/etcd.h"
#include "admission/incoming.h"
#include "admission/lease_keeper.h"
#include "admission/request_server.h"
#include "admission/reserved_classes.h"
#include "admission/topology.h"
#include "base/dscp.h"
#include "credit/receiving_role.h"
#include "credit/sending_role.h"
#include "daemon/status.h"
#include "jobs/nft.h"
#include "proto/datagrams.h"
#include "proto/inbox.h"
#include "proto/key.h"
#include "proto/metrics.h"
#include "proto/wire.h"

namespace parq::parqd {

namespace {

constexpr uint64_t kTickNs = 1'000'000'000;  // expiry sweep at least this often

uint64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 +
         static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t MonotonicNs() {
  return ClockNs(CLOCK_MONOTONIC);
}
uint64_t RealtimeNs() {
  return ClockNs(CLOCK_REALTIME);
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
  // The credit messages' MAC covers the address they were sent to: each
  // datagram's destination address is needed.
  if (fd >= 0 && rc == 0)
    if (auto r = ReceiveDestinations(fd); !r.ok()) {
      errno = r.error();
      rc = -1;
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
  // The credit messages go ahead of data: on this host's egress by their
  // priority (sch_parq's control queue), in the network by their DSCP.
  // The DSCP first: setting IP_TOS sets the socket's priority from it.
  if (auto r = MarkDscp(fd, c.control_dscp); !r.ok()) {
    spdlog::error("cannot mark the credit messages with control-dscp {}: {}",
                  DscpName(c.control_dscp), std::strerror(r.error()));
    close(fd);
    return -1;
  }
  if (auto r = MarkControlPriority(fd); !r.ok())
    spdlog::warn(
        "credit messages are not served ahead of data on this host: "
        "cannot give them priority 7 (TC_PRIO_CONTROL): {}{}",
        std::strerror(r.error()),
        r.error() == EPERM ? "; parqd needs CAP_NET_ADMIN" : "");
  spdlog::info("listening on UDP {}, credit messages marked {}", where,
               DscpName(c.control_dscp));
  return fd;
}

// A line of the admission role's (its agent's, its watch's or its
// admission's) to the journal at its level; they number their levels alike.
static_assert(int{AdmissionAgent::kInfo} == int{IncomingReservations::kInfo} &&
              int{AdmissionAgent::kWarn} == int{IncomingReservations::kWarn} &&
              int{AdmissionAgent::kError} ==
                  int{IncomingReservations::kError} &&
              int{AdmissionAgent::kWarn} == int{ClusterAdmission::kWarn});

// The admission role's parts, which refer to each other.
struct AdmissionStack {
  // At parqd's stop, each ends the etcd call in flight of its side (the
  // agent's, the watch's) within about a second.
  std::atomic<bool> agent_stop{false};
  std::atomic<bool> watch_stop{false};
  std::atomic<bool> lease_stop{false};
  Topology topology;
  EtcdClient etcd;
  ClusterAdmission admission;
  TcReservedClasses classes;
  // The lease's renewals, on a thread of their own with their own client:
  // no request holds them back (lease_keeper.h).
  EtcdClient lease_etcd;
  LeaseKeeper keeper;
  AdmissionAgent agent;
  AdmissionServer server;
  // The destination's view, on the watch thread with its own client.
  EtcdClient watch_etcd;
  IncomingReservations incoming;

  AdmissionStack(const Config& c, const std::string& host, Topology t,
                 AdmissionServer s)
      : topology(std::move(t)),
        etcd(
            c.admission->etcd_endpoints,
            std::chrono::milliseconds(c.admission->etcd_timeout_ns / 1'000'000),
            CurlPost(c.admission->etcd_tls, &agent_stop,
                     c.admission->etcd_auth)),
        admission(topology, etcd, c.admission->etcd_prefix, LogRoleLine),
        classes(c.interface, RunCommand, RtnlTcLink(c.interface)),
        lease_etcd(
            c.admission->etcd_endpoints,
            std::chrono::milliseconds(c.admission->etcd_timeout_ns / 1'000'000),
            CurlPost(c.admission->etcd_tls, &lease_stop,
                     c.admission->etcd_auth)),
        keeper(lease_etcd,
               static_cast<int64_t>(c.admission->lease_ns / 1'000'000'000),
               MonotonicNs),
        agent(AgentConfig{host,
                          static_cast<int64_t>(c.admission->lease_ns /
                                               1'000'000'000),
                          c.admission->allow, c.admission->adapt},
              topology, admission, etcd, classes, LogRoleLine, MonotonicNs,
              &keeper),
        server(std::move(s)),
        watch_etcd(
            c.admission->etcd_endpoints,
            std::chrono::milliseconds(c.admission->etcd_timeout_ns / 1'000'000),
            CurlPost(c.admission->etcd_tls, &watch_stop,
                     c.admission->etcd_auth)),
        incoming(
            host, c.admission->etcd_prefix, watch_etcd,
            c.admission->etcd_endpoints,
            CurlStream(c.admission->etcd_tls, c.admission->etcd_auth),
            std::chrono::milliseconds(c.admission->etcd_timeout_ns / 1'000'000),
            LogRoleLine) {
    server.set_incoming(&incoming);
    // A reservation made for a Slurm job lasts while the job's cgroup does.
    agent.set_job_alive(
        [dir = c.admission->slurm_cgroup](const std::string& job) {
          std::error_code ec;
          return std::filesystem::is_directory(dir + "/job_" + job, ec);
        });
  }
};

// The admission role as `c.admission` configures it, or null after logging
// why it cannot start.
std::unique_ptr<AdmissionStack> StartAdmission(const Config& c) {
  const AdmissionConfig& a = *c.admission;
  auto t = LoadAgentTopology(a);
  if (!t.ok()) {
    spdlog::error("admission: {}", t.error());
    return nullptr;
  }
  const std::string host = t.value().host;
  auto s = AdmissionServer::Open(a.socket);
  if (!s.ok()) {
    spdlog::error("admission: {}", s.error());
    return nullptr;
  }
  spdlog::info(
      "admission role: host {} in {}, etcd {} (prefix {}), lease {}, "
      "requests on {}",
      host, a.topology_file, a.etcd_endpoints.front(), a.etcd_prefix,
      FormatDuration(a.lease_ns), a.socket);
  return std::make_unique<AdmissionStack>(
      c, host, std::move(t.value().topology), std::move(s.value()));
}

// The admission role on a thread of its own.  Each of its etcd calls may
// take etcd-timeout per endpoint while etcd is slow or away, and the credit
// protocol, whose epochs are milliseconds, must not wait for them.  The
// thread owns the stack: it renews the lease, answers the socket and, at
// Stop(), revokes the lease; the daemon's loop reads only the metrics it
// rendered last.
class AdmissionThread {
 public:
  // Null after logging why (no eventfd).
  static std::unique_ptr<AdmissionThread> Start(
      std::unique_ptr<AdmissionStack> stack) {
    const int fd = eventfd(0, EFD_CLOEXEC);
    if (fd < 0) {
      spdlog::error("admission: eventfd: {}", std::strerror(errno));
      return nullptr;
    }
    return std::unique_ptr<AdmissionThread>(
        new AdmissionThread(std::move(stack), fd));
  }
  ~AdmissionThread() { Stop(); }
  AdmissionThread(const AdmissionThread&) = delete;
  AdmissionThread& operator=(const AdmissionThread&) = delete;

  // Ends the thread's loop, which then revokes the lease (every
  // reservation freed at once), and waits for it; the watch thread stops
  // meanwhile.  Their etcd calls in flight give up at once: a stop waits
  // for the revocation alone, not for etcd-timeout twice over.
  void Stop() {
    if (!thread_.joinable())
      return;
    stack_->agent_stop = true;
    stack_->watch_stop = true;
    stack_->lease_stop = true;
    const uint64_t one = 1;
    if (write(stop_.get(), &one, sizeof(one)) != sizeof(one))
      spdlog::error("admission: cannot wake its thread to stop it: {}",
                    std::strerror(errno));
    thread_.join();
    watch_thread_.join();
  }

  std::string Metrics() const {
    const std::lock_guard lock(mu_);
    return metrics_;
  }

 private:
  // How long a socket connection may wait to be closed when nothing else
  // wakes the thread (AdmissionServer closes those that waited 2 s).
  static constexpr uint64_t kServeNs = 500'000'000;

  AdmissionThread(std::unique_ptr<AdmissionStack> stack, int stop)
      : stack_(std::move(stack)), stop_(stop) {
    Snapshot();
    thread_ = std::thread([this] { Run(); });
    watch_thread_ =
        std::thread([this] { stack_->incoming.Run(stack_->watch_stop); });
  }

  void Run() {
    AdmissionAgent& agent = stack_->agent;
    for (;;) {
      uint64_t now = MonotonicNs();
      if (now >= agent.NextTick()) {
        agent.Tick(now);
        now = MonotonicNs();
      }
      Snapshot();
      const uint64_t wake = std::min(agent.NextTick(), now + kServeNs);
      const int wait_ms =
          wake > now ? static_cast<int>((wake - now + 999'999) / 1'000'000) : 0;
      std::vector<pollfd> p = {{stop_.get(), POLLIN, 0}};
      for (int fd : stack_->server.fds())
        p.push_back({fd, POLLIN, 0});
      if (poll(p.data(), p.size(), wait_ms) < 0 && errno != EINTR) {
        spdlog::error("admission: poll: {}; stopping the admission role",
                      std::strerror(errno));
        break;
      }
      if (p[0].revents & POLLIN)
        break;
      stack_->server.Serve(agent, MonotonicNs());
    }
    // The revocation is a call of its own, within etcd-timeout.
    stack_->agent_stop = false;
    agent.Stop();
    Snapshot();
  }

  void Snapshot() {
    PromText text;
    stack_->agent.Metrics(text);
    stack_->incoming.Metrics(text);
    const std::lock_guard lock(mu_);
    metrics_ = text.text();
  }

  std::unique_ptr<AdmissionStack> stack_;
  Fd stop_;
  mutable std::mutex mu_;
  std::string metrics_;
  std::thread thread_;
  // The watch of the reservations toward this host (IncomingReservations).
  std::thread watch_thread_;
};

void WriteMetrics(const Config& c, const SendingRole& s,
                  const ReceivingRole* role, const AdmissionThread* adm) {
  if (c.metrics_file.empty())
    return;
  PromText text;
  s.Metrics(text);
  if (role)
    role->Metrics(text);
  if (adm)
    text.Append(adm->Metrics());
  if (auto e = WriteFileAtomically(c.metrics_file, text.text()))
    spdlog::warn("metrics: {}", *e);
}

int SocketFamily(int fd) {
  sockaddr_storage ss{};
  socklen_t sl = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &sl) < 0)
    return AF_UNSPEC;
  return ss.ss_family;
}

}  // namespace

void LogRoleLine(int level, const std::string& line) {
  if (level == AdmissionAgent::kError)
    spdlog::error("{}", line);
  else if (level == AdmissionAgent::kWarn)
    spdlog::warn("{}", line);
  else
    spdlog::info("{}", line);
}

socklen_t ToSockaddr(const Address& a, uint16_t port, int socket_family,
                     sockaddr_storage* ss) {
  *ss = {};
  if (socket_family == AF_INET) {
    if (a.family != Family::kIPv4)
      return 0;
    auto* sin = reinterpret_cast<sockaddr_in*>(ss);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    std::memcpy(&sin->sin_addr, a.bytes.data(), 4);
    return sizeof(*sin);
  }
  if (socket_family != AF_INET6)
    return 0;
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(ss);
  sin6->sin6_family = AF_INET6;
  sin6->sin6_port = htons(port);
  if (a.family == Family::kIPv4) {
    sin6->sin6_addr.s6_addr[10] = 0xff;
    sin6->sin6_addr.s6_addr[11] = 0xff;
    std::memcpy(&sin6->sin6_addr.s6_addr[12], a.bytes.data(), 4);
  } else {
    std::memcpy(&sin6->sin6_addr, a.bytes.data(), 16);
  }
  return sizeof(*sin6);
}

namespace {

// The interface's speed in bits/s from sysfs (Mbit/s there), or 0 where
// the kernel does not know it (-1, or no such file).
uint64_t InterfaceSpeed(const std::string& interface) {
  std::ifstream in("/sys/class/net/" + interface + "/speed");
  long long mbps = -1;
  if (!(in >> mbps) || mbps <= 0)
    return 0;
  return static_cast<uint64_t>(mbps) * 1'000'000;
}

}  // namespace

// The key ring of `c`: its key-file's cluster key under key-id, or its
// keys-file's pair keys, which must hold a key of id key-id for every
// peer.  Computes one MAC: the crypto library initialises itself on its
// first use (1 ms on a host, 53 ms under QEMU/TCG), which would otherwise
// delay the first GRANT sent and the first one received.
Result<KeyRing, std::string> LoadKeys(const Config& c) {
  Result<KeyRing, std::string> ring = Err{std::string("no key")};
  if (!c.key_file.empty()) {
    auto key = Key::FromFile(c.key_file);
    if (!key.ok())
      return Err{key.error()};
    ring = KeyRing::Cluster(c.key_id, std::move(key.value()));
  } else {
    auto pairs = PairKeysFromFile(c.keys_file);
    if (!pairs.ok())
      return Err{pairs.error()};
    ring = KeyRing::CreatePairs(std::move(pairs.value()), c.key_id);
  }
  if (!ring.ok())
    return Err{"configuration: " + ring.error()};
  std::vector<uint64_t> peers;
  for (const PeerConfig& p : c.peers)
    peers.push_back(p.id);
  if (auto missing = ring.value().MissingSendKeys(peers); !missing.empty()) {
    std::string list;
    for (uint64_t p : missing)
      list += (list.empty() ? "" : ", ") + std::to_string(p);
    return Err{c.keys_file + ": no key of id " + std::to_string(c.key_id) +
               " (key-id) for peer(s) " + list +
               "; derive them with: parqctl key derive"};
  }
  const std::array<uint8_t, Key::kMinBytes> zero{};
  if (!wire::ComputeMac(Key::FromBytes(zero).value(), {}).ok())
    return Err{
        std::string("cannot compute HMAC-SHA-256: the crypto library failed")};
  return ring;
}

Config Reloaded(const Config& running, const Config& next) {
  Config c = running;
  c.key_file = next.key_file;
  c.keys_file = next.keys_file;
  c.key_id = next.key_id;
  c.max_clock_skew_ns = next.max_clock_skew_ns;
  return c;
}

bool NeedsRestart(const Config& running, const Config& next) {
  return Reloaded(next, running) != running;
}

Config Reload(const Config& running, const ConfigLoader& load,
              SendingRole& sender, ReceivingRole* role) {
  auto next = load();
  if (!next.ok()) {
    spdlog::error("reload: {}; the running configuration stays", next.error());
    return running;
  }
  Config c = Reloaded(running, next.value());
  auto keys = LoadKeys(c);
  if (!keys.ok()) {
    spdlog::error("reload: {}; the running keys stay", keys.error());
    return running;
  }
  if (NeedsRestart(running, next.value()))
    spdlog::warn(
        "reload: the configuration changes settings besides key-file, "
        "keys-file, key-id and max-clock-skew; those apply when parqd "
        "restarts (systemctl restart parqd)");
  if (role)
    role->SetKeys(keys.value());
  sender.Reload(std::move(keys.value()), c.max_clock_skew_ns);
  spdlog::info("reloaded: {}, sending with key id {}, max-clock-skew {}",
               c.key_file.empty() ? "pair keys of " + c.keys_file
                                  : "the cluster key of " + c.key_file,
               c.key_id, FormatDuration(c.max_clock_skew_ns));
  return c;
}

namespace {

// The status socket at `path`, mode 0660 (root and parqd's group).  Its
// directory is made when missing (parqd run by hand; systemd makes
// /run/parqd for the unit).
Result<RequestServer, std::string> OpenStatusSocket(const std::string& path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return Err{"status socket " + path + ": cannot make " + dir.string() +
               ": " + std::strerror(errno) +
               " (set status-socket, or \"\" for none)"};
  return RequestServer::Open(path, 0660, "status socket");
}

std::string StatusLine(const Config& c, bool receiving) {
  return "node " + std::to_string(c.node_id) + ", " +
         std::to_string(c.peers.size()) + " peer(s), " +
         (receiving ? "sending and receiving roles" : "sending role") +
         ", key id " + std::to_string(c.key_id);
}

}  // namespace

int RunDaemon(const Config& config, KernelCreditTable& kernel,
              KernelMonitor* monitor, int signal_fd,
              const ServiceManager& manager, const ConfigLoader& reload) {
  Config c = config;
  if (if_nametoindex(c.interface.c_str()) == 0)
    spdlog::warn(
        "interface {} does not exist (yet): credits apply to the "
        "whole network namespace anyway, but check 'interface'",
        c.interface);
  auto keys = LoadKeys(c);
  if (!keys.ok()) {
    spdlog::error("{}", keys.error());
    return kExitConfig;
  }
  auto rx =
      Inbox::Create(keys.value(), c.peers, {c.max_clock_skew_ns, RealtimeNs()},
                    [](const std::string& line) { spdlog::warn("{}", line); });
  if (!rx.ok()) {
    spdlog::error("configuration: {}", rx.error());
    return kExitConfig;
  }
  SendingRole sender(
      std::move(rx.value()), kernel,
      [](const std::string& line) { spdlog::error("{}", line); });
  const Fd sock(OpenSocket(c));
  if (sock.get() < 0)
    return 1;

  // The admission role before the receiving role: what can fail in it
  // (the topology, the socket) then fails before the kernel's receive
  // monitor is enabled, which an early return would leave on.  Its thread
  // revokes its lease if the receiving role then fails to start.
  std::unique_ptr<AdmissionThread> adm;
  if (c.admission) {
    if (auto stack = StartAdmission(c))
      adm = AdmissionThread::Start(std::move(stack));
    if (!adm)
      return 1;
  }

  // The status socket too, for the same reason.
  StatusSources status{c.node_id, {}, &sender.inbox(), nullptr};
  for (const HostConfig& h : c.hosts)
    if (!h.name.empty())
      status.names[h.id] = h.name;
  std::optional<RequestServer> status_server;
  if (!c.status_socket.empty()) {
    auto s = OpenStatusSocket(c.status_socket);
    if (!s.ok()) {
      spdlog::error("{}", s.error());
      return 1;
    }
    status_server.emplace(std::move(s.value()));
  }

  std::optional<ReceivingRole> role;
  if (c.receiver && monitor) {
    const int family = SocketFamily(sock.get());
    const int fd = sock.get();
    ReceivingRoleConfig rc;
    rc.node_id = c.node_id;
    const auto epoch_us = static_cast<uint32_t>(c.epoch_ns / 1000);
    rc.policy = {c.threshold_recv, c.hold_ns, epoch_us, c.lease};
    uint64_t link = 0;
    if (c.local_floor > 0) {
      link = c.link_rate ? c.link_rate : InterfaceSpeed(c.interface);
      if (link == 0) {
        spdlog::error(
            "local-floor = {}: the speed of {} is unknown (/sys/class/net/"
            "{}/speed): set link-rate to the link's bits/s, or local-floor "
            "= 0 for strict priority",
            c.local_floor, c.interface, c.interface);
        return kExitConfig;
      }
      rc.policy.floor_bytes = FloorBytes(link, c.local_floor, epoch_us);
    }
    const uint64_t rc_floor = rc.policy.floor_bytes;
    rc.own_addresses = c.addresses;
    rc.peers = c.peers;
    rc.peer_port = c.listen_port;
    rc.parallel_dscp = c.parallel_dscp;
    rc.parallel_min_bytes = c.parallel_min_bytes;
    role.emplace(
        std::move(rc), std::move(keys.value()), *monitor,
        [fd, family](std::span<const Outgoing> batch) {
          std::vector<OutDatagram> out(batch.size());
          for (size_t i = 0; i < batch.size(); i++) {
            out[i].to_len =
                ToSockaddr(batch[i].to, batch[i].port, family, &out[i].to);
            out[i].bytes = batch[i].bytes;
          }
          return SendBatch(fd, out);
        },
        RealtimeNs(),
        [](const std::string& line) { spdlog::info("{}", line); });
    if (auto e = role->Start()) {
      spdlog::error("cannot enable the kernel's receive monitor: {}",
                    e->Text());
      return 1;
    }
    spdlog::info(
        "node {}: sending and receiving roles, {} peer(s); while parallel "
        "traffic arrives, the local senders share {} bytes per {} epoch "
        "({}% of {} bit/s), each at least {} (hold {}, lease {} epochs)",
        c.node_id, c.peers.size(), rc_floor, FormatDuration(c.epoch_ns),
        c.local_floor, link, c.threshold_recv, FormatDuration(c.hold_ns),
        c.lease);
  } else {
    spdlog::info(
        "node {}: sending role, {} peer(s) (receiving role off: "
        "receiver = false)",
        c.node_id, c.peers.size());
  }

  ReceivingRole* role_ptr = role ? &*role : nullptr;
  status.role = role_ptr;
  const RequestHandler answer_status = [&status](const Asker&,
                                                 std::string_view request) {
    return HandleStatusRequest(status, request, MonotonicNs());
  };
  WriteMetrics(c, sender, role_ptr, adm.get());
  manager.Ready(StatusLine(c, role_ptr != nullptr));
  const uint64_t watchdog_ns = manager.watchdog_period_ns();
  uint64_t next_watchdog = MonotonicNs();
  uint64_t next_metrics = MonotonicNs() + c.metrics_period_ns;
  uint64_t next_tick = MonotonicNs() + kTickNs;
  uint64_t next_epoch = MonotonicNs();
  // Datagrams handled per wake-up at most: then the timers above run
  // before the socket is read again, however fast datagrams arrive.
  constexpr size_t kMaxPerWake = 256;
  DatagramReader reader;
  const DatagramReader::Handler handle = [&sender](
                                             std::span<const uint8_t> bytes,
                                             const sockaddr_storage& ss,
                                             const std::optional<Address>& to) {
    const auto from = FromSockaddr(reinterpret_cast<const sockaddr&>(ss));
    // ReceiveDestinations() is on: every datagram comes with its
    // destination.
    if (!from || !to)
      return;
    const Outcome o =
        sender.Handle(bytes, *from, *to, MonotonicNs(), RealtimeNs());
    if (o.accepted && o.message)
      spdlog::debug("applied {} from peer {} ({} address(es))",
                    o.message->type == wire::Type::kGrant ? "GRANT" : "RELEASE",
                    o.message->sender, o.message->addresses.size());
  };
  for (;;) {
    uint64_t now = MonotonicNs();
    // From the loop itself: a loop that stops turning stops the pings.
    if (watchdog_ns && now >= next_watchdog) {
      manager.Watchdog();
      next_watchdog = now + watchdog_ns;
    }
    if (now >= next_tick) {
      sender.Expire(now);
      next_tick = now + kTickNs;
    }
    if (now >= next_metrics) {
      WriteMetrics(c, sender, role_ptr, adm.get());
      next_metrics = now + c.metrics_period_ns;
    }
    if (role && now >= next_epoch) {
      role->Ran(now - next_epoch);
      role->Tick(now, RealtimeNs());
      next_epoch = role->NextTick(now);
    }
    uint64_t wake =
        std::min(next_tick, c.metrics_file.empty() ? next_tick : next_metrics);
    if (role)
      wake = std::min(wake, next_epoch);
    if (watchdog_ns)
      wake = std::min(wake, next_watchdog);
    const uint64_t wait = wake > now ? wake - now : 0;
    const timespec timeout{static_cast<time_t>(wait / 1'000'000'000),
                           static_cast<long>(wait % 1'000'000'000)};
    std::vector<pollfd> p = {{sock.get(), POLLIN, 0},
                             {signal_fd, POLLIN, 0},
                             {role ? monitor->event_fd() : -1, POLLIN, 0}};
    if (status_server)
      for (int fd : status_server->fds())
        p.push_back({fd, POLLIN, 0});
    const int n = ppoll(p.data(), p.size(), &timeout, nullptr);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      spdlog::error("poll: {}", std::strerror(errno));
      return 1;
    }
    if (p[1].revents & POLLIN) {
      signalfd_siginfo si{};
      if (read(signal_fd, &si, sizeof(si)) != sizeof(si))
        continue;
      const int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGHUP) {
        spdlog::info("{}: reloading the configuration", strsignal(sig));
        manager.Reloading(MonotonicNs());
        c = Reload(c, reload, sender, role_ptr);
        manager.Ready(StatusLine(c, role_ptr != nullptr));
        continue;
      }
      spdlog::info("{}: stopping", strsignal(sig));
      manager.Stopping();
      break;
    }
    if (role && (p[2].revents & (POLLIN | POLLERR))) {
      now = MonotonicNs();
      role->OnEvents(now, RealtimeNs());
      next_epoch = role->NextTick(now);
    }
    // On input, and at every wake-up while connections wait, so that one
    // that asks nothing is closed after its 2 s (the loop wakes at least
    // every tick).
    if (status_server &&
        (status_server->waiting() ||
         std::any_of(p.begin() + 3, p.end(),
                     [](const pollfd& f) { return f.revents != 0; })))
      status_server->Serve(answer_status, MonotonicNs());
    if (!(p[0].revents & POLLIN))
      continue;
    if (auto r = reader.Drain(sock.get(), kMaxPerWake, handle); !r.ok())
      spdlog::warn("recvmmsg: {}", std::strerror(r.error()));
  }
  if (role) {
    const size_t n = role->granted().size();
    role->Stop(MonotonicNs(), RealtimeNs());
    if (n)
      spdlog::info("released {} peer(s)", n);
    if (auto e = monitor->Disable())
      spdlog::warn("cannot disable the kernel's receive monitor: {}",
                   e->Text());
  }
  if (adm)
    adm->Stop();
  WriteMetrics(c, sender, role_ptr, adm.get());
  return 0;
}

}  // namespace parq::parqd
