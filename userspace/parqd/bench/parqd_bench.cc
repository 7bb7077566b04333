// SPDX-License-Identifier: GPL-2.0
//
// parq-parqd-bench: what parqd costs a host (Documentation/benchmarks.md,
// "parqd's cost"; make bench-parqd).  Three measurements, printed as they
// are made; nothing is asserted.
//
//   receiving role   the CPU time (user and system, CLOCK_PROCESS_CPUTIME_ID)
//                    of the receiving role per epoch of 1 ms while
//                    parallel traffic arrives and N peers (1 to 1 024) send
//                    local traffic, run when its NextTick() says, as
//                    parqd's loop runs it: the monitor's table when read
//                    (N + 1 sources, from a fake: the kernel's dump is not
//                    included), the Granter, and the GRANTs due, made with
//                    HMAC-SHA-256 and sent with one sendmmsg() to a UDP
//                    socket on 127.0.0.1 that nobody reads; and per
//                    wake-up, what parqd's loop adds (a ppoll() and two
//                    clock reads).  Parallel traffic known from the
//                    kernel's start report (the table read once a second)
//                    or from the table alone (read every epoch: a kernel
//                    without reports of local senders, as before them).
//                    With the default lease (49 epochs: restated every 24
//                    epochs) and a lease of 3 (a GRANT per peer per epoch).
//                    As a share of a core.
//   sending role     the CPU time of one datagram through the inbox:
//                    accepted (a GRANT, applied to a fake kernel table),
//                    forged (a configured peer's id and address, a wrong
//                    MAC: the dearest to reject) and from a stranger (an
//                    unknown sender id: rejected before any MAC).
//   flood            parqd's own loop (RunDaemon with a fake kernel and
//                    monitor: receiving role on, 1 ms epochs, 16 local
//                    senders) for S seconds, first alone, then while
//                    another thread sends forged datagrams at its port as
//                    fast as it can: the epochs run, how many ran more than
//                    an epoch late, the longest lateness (parqd's own
//                    metrics), and the datagrams parqd read.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "../tests/fake_kernel.h"
#include "base/cli_parse.h"
#include "config/config.h"
#include "credit/receiving_role.h"
#include "credit/sending_role.h"
#include "daemon/daemon.h"
#include "daemon/notify.h"
#include "proto/datagrams.h"
#include "proto/inbox.h"
#include "proto/key.h"
#include "proto/wire.h"

namespace {

using namespace parq::parqd;
using parq::parqd::test::FakeKernel;
using parq::parqd::test::FakeMonitor;

constexpr uint64_t kMs = 1'000'000;
constexpr uint32_t kEpochUs = 1000;
constexpr uint64_t kEpochNs = uint64_t{kEpochUs} * 1000;

uint64_t CpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 +
         static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t RealNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 +
         static_cast<uint64_t>(ts.tv_nsec);
}

Key BenchKey() {
  std::vector<uint8_t> b(32);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<uint8_t>(i * 7 + 1);
  return Key::FromBytes(b).value();
}

KeyRing Ring() {
  return KeyRing::Cluster(1, BenchKey()).value();
}

// 127.1.y.x, y * 256 + x = id: peer id's address.
Address PeerAddress(uint64_t id) {
  return Address::Parse("127.1." + std::to_string((id >> 8) & 255) + "." +
                        std::to_string(id & 255))
      .value();
}

// The benchmarked host's address, where the messages are sent (their MAC
// covers it).
const Address kRecipient = Address::Parse("127.0.0.1").value();

// The monitor's table while parallel traffic arrives from peer n + 1 and
// peers 1..n send local traffic, all of it just now.
std::vector<PeerSample> BusyTable(uint64_t n) {
  std::vector<PeerSample> t;
  for (uint64_t i = 1; i <= n; ++i) {
    PeerSample s;
    s.address = PeerAddress(i);
    s.loc_packets = 1;
    s.loc_bytes = 1500;
    s.loc_age_ns = 0;
    t.push_back(s);
  }
  PeerSample par;
  par.address = PeerAddress(n + 1);
  par.par_packets = 1;
  par.par_age_ns = 0;
  t.push_back(par);
  return t;
}

// A UDP socket bound to 127.0.0.1 that nobody reads: where GRANTs go.
int SinkSocket(uint16_t* port) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::perror("parq-parqd-bench: sink socket");
    std::exit(1);
  }
  *port = ntohs(a.sin_port);
  return fd;
}

// What parqd's loop does per wake-up besides the role: a ppoll() that
// finds nothing and two reads of the clock.
void LoopWakeUp(int fd) {
  pollfd p{fd, POLLIN, 0};
  const timespec zero{0, 0};
  ppoll(&p, 1, &zero, nullptr);
  (void)RealNs();
  (void)CpuNs();
}

// The receiving role, N local senders and one parallel sender (peer N+1),
// `epochs` epochs of 1 ms: CPU ns per epoch and messages sent per epoch.
// `reported`: parallel traffic known from the kernel's start report.
void ReceivingRoleCost(int n, uint16_t lease, int epochs, bool reported) {
  uint16_t port = 0;
  const int sink = SinkSocket(&port);
  const int out = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  FakeMonitor mon;
  ReceivingRoleConfig c;
  c.node_id = 1000;
  c.policy = {1500, 10 * kMs, kEpochUs, lease};
  c.policy.floor_bytes = 25000;  // 20% of 1 Gbit/s per 1 ms
  c.own_addresses = {Address::Parse("127.0.0.1").value()};
  for (int i = 1; i <= n + 1; ++i)
    c.peers.push_back({static_cast<uint64_t>(i), {PeerAddress(i)}});
  c.peer_port = port;
  uint64_t sent = 0;
  ReceivingRole role(
      c, Ring(), mon,
      [out, &sent](std::span<const Outgoing> batch) {
        // Every peer's address is 127.1.y.x: send to the sink instead.
        static const Address sink_address = Address::Parse("127.0.0.1").value();
        std::vector<OutDatagram> d(batch.size());
        for (size_t i = 0; i < batch.size(); ++i) {
          d[i].to_len =
              ToSockaddr(sink_address, batch[i].port, AF_INET, &d[i].to);
          d[i].bytes = batch[i].bytes;
        }
        sent += batch.size();
        return SendBatch(out, d);
      },
      RealNs());
  mon.peers = BusyTable(n);
  mon.state.active = reported;
  uint64_t now = 100 * kMs;
  if (reported) {
    mon.events = {{MonitorEvent::Kind::kStart, PeerAddress(n + 1)}};
    role.OnEvents(now, RealNs());  // the first GRANTs, not counted
  } else {
    role.Tick(now, RealNs());
  }
  sent = 0;
  const uint64_t end = now + uint64_t(epochs) * kEpochNs;
  uint64_t wakes = 0;
  const uint64_t t0 = CpuNs();
  for (;;) {
    now = role.NextTick(now);
    if (now > end)
      break;
    LoopWakeUp(out);
    role.Tick(now, RealNs());
    ++wakes;
  }
  const double per_epoch = static_cast<double>(CpuNs() - t0) / epochs;
  std::printf(
      "receiving role: %3d local senders, lease %2u, parallel %s: %8.2f us "
      "per epoch, %6.2f messages per epoch, %6.1f wake-ups per s, %6.2f%% "
      "of a core at 1 ms epochs\n",
      n, lease, reported ? "reported" : "in table", per_epoch / 1000,
      static_cast<double>(sent) / epochs, wakes * 1000.0 / epochs,
      per_epoch / 1e6 * 100);
  close(out);
  close(sink);
}

// One datagram through the sending role's inbox, `count` times.
void SendingRoleCost(int count) {
  FakeKernel kernel;
  std::vector<PeerConfig> peers;
  for (uint64_t i = 1; i <= 128; ++i)
    peers.push_back({i, {PeerAddress(i)}});
  const uint64_t start = RealNs();
  auto rx = Inbox::Create(Ring(), peers, {500 * kMs, start - 10'000 * kMs});
  if (!rx.ok()) {
    std::fprintf(stderr, "parq-parqd-bench: %s\n", rx.error().c_str());
    std::exit(1);
  }
  SendingRole role(std::move(rx.value()), kernel);
  const Key key = BenchKey();
  const Key wrong = Key::FromBytes(std::vector<uint8_t>(32, 0x5a)).value();
  auto grant = [](uint64_t sender, uint64_t seq, uint64_t t) {
    wire::Message m;
    m.sender = sender;
    m.time_ns = t;
    m.sequence = seq;
    m.credit = 1500;
    m.epoch_us = kEpochUs;
    m.lease = 3;
    m.addresses = {PeerAddress(std::min<uint64_t>(sender, 128))};
    return m;
  };
  struct Case {
    const char* what;
    uint64_t sender;
    const Key* key;
    bool fresh_sequence;
  };
  const Case cases[] = {
      {"accepted GRANT (fake kernel table)", 1, &key, true},
      {"forged: a peer's id and address, wrong MAC", 2, &wrong, false},
      {"from a stranger: unknown sender id", 999, &key, false},
  };
  for (const Case& k : cases) {
    std::vector<std::vector<uint8_t>> data;
    data.reserve(static_cast<size_t>(count));
    const uint64_t t = RealNs();
    for (int i = 0; i < count; ++i)
      data.push_back(
          wire::Encode(
              grant(k.sender, k.fresh_sequence ? uint64_t(i) + 1 : 1, t),
              *k.key, kRecipient)
              .value());
    const Address from = PeerAddress(k.sender == 999 ? 3 : k.sender);
    kernel.requests.clear();
    uint64_t accepted = 0;
    const uint64_t t0 = CpuNs();
    for (const auto& d : data)
      accepted += role.Handle(d, from, kRecipient, 200 * kMs, t).accepted;
    const double per = static_cast<double>(CpuNs() - t0) / count;
    std::printf(
        "sending role: %-44s %7.2f us per datagram (%llu of %d accepted)\n",
        k.what, per / 1000, static_cast<unsigned long long>(accepted), count);
  }
}

std::map<std::string, double> ReadMetrics(const std::string& path) {
  std::map<std::string, double> m;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos)
      continue;
    m[line.substr(0, sp)] = std::strtod(line.c_str() + sp + 1, nullptr);
  }
  return m;
}

// parqd's loop for `seconds`, with a flood of forged datagrams at its port
// or without; false when parqd failed or ran no epoch.
bool Flood(const std::filesystem::path& dir, int seconds, bool flood,
           int signal_fd) {
  const std::string prom = (dir / (flood ? "flood.prom" : "quiet.prom"));
  uint16_t port = 0;
  {
    // A free port: bind one, note it, close it.
    const int fd = SinkSocket(&port);
    close(fd);
  }
  Config c;
  c.interface = "lo";
  c.listen_address = "127.0.0.1";
  c.listen_port = port;
  c.node_id = 1000;
  c.key_file = (dir / "cluster.key").string();
  for (uint64_t i = 1; i <= 17; ++i)
    c.peers.push_back({i, {PeerAddress(i)}});
  c.receiver = true;
  c.addresses = {Address::Parse("127.0.0.1").value()};
  c.threshold_recv = 1500;
  c.link_rate = 1'000'000'000;
  c.epoch_ns = kEpochNs;
  c.metrics_file = prom;
  c.metrics_period_ns = 100 * kMs;
  c.status_socket.clear();

  FakeKernel kernel;
  FakeMonitor mon;
  mon.peers = BusyTable(16);

  const ServiceManager manager = ServiceManager::FromEnvironment();
  int rc = -1;
  std::thread daemon([&] {
    rc = RunDaemon(c, kernel, &mon, signal_fd, manager,
                   [&c]() -> Result<Config, std::string> { return c; });
  });
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> flooded{0};
  std::thread flooder;
  if (flood)
    flooder = std::thread([&] {
      // Peer 2's id from peer 2's address with a wrong MAC: every check
      // before the MAC passes, so each costs parqd an HMAC.
      const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      sockaddr_in src{};
      src.sin_family = AF_INET;
      inet_pton(AF_INET, "127.1.0.2", &src.sin_addr);
      if (bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof(src)) != 0)
        std::perror("parq-parqd-bench: bind 127.1.0.2");
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(port);
      to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      const Key wrong = Key::FromBytes(std::vector<uint8_t>(32, 0x5a)).value();
      wire::Message m;
      m.sender = 2;
      m.sequence = 1;
      m.credit = 0;
      m.epoch_us = kEpochUs;
      m.lease = 3;
      m.addresses = {PeerAddress(2)};
      m.time_ns = RealNs();
      const auto d = wire::Encode(m, wrong, kRecipient).value();
      while (!stop.load(std::memory_order_relaxed)) {
        if (sendto(fd, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&to),
                   sizeof(to)) > 0)
          flooded.fetch_add(1, std::memory_order_relaxed);
      }
      close(fd);
    });
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  if (flooder.joinable())
    flooder.join();
  kill(getpid(), SIGTERM);
  daemon.join();
  const auto m = ReadMetrics(prom);
  auto get = [&m](const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? 0.0 : it->second;
  };
  // The fake monitor reports nothing: parallel traffic is in its table
  // alone, and the role runs every epoch.
  const double epochs = get("parqd_ticks_total");
  const double late = get("parqd_epochs_late_total");
  std::printf(
      "flood: %-8s %2d s: %6.0f epochs run (%5.1f%% of 1 ms epochs), %5.0f "
      "late (%5.2f%%), longest lateness %7.0f us; datagrams sent %9llu, read "
      "%9.0f (%7.0f/s), dropped bad_mac %9.0f; exit %d\n",
      flood ? "forged" : "none", seconds, epochs,
      epochs / (seconds * 1000.0) * 100, late,
      epochs > 0 ? late / epochs * 100 : 0.0,
      get("parqd_epoch_lateness_max_microseconds"),
      static_cast<unsigned long long>(flooded.load()),
      get("parqd_messages_received_total"),
      get("parqd_messages_received_total") / seconds,
      get("parqd_messages_dropped_total{reason=\"bad_mac\"}"), rc);
  return rc == 0 && epochs > 0;
}

int Run(int argc, char** argv) {
  CLI::App app{
      "parq-parqd-bench: what parqd costs a host (CPU per epoch, "
      "per datagram, and its epochs under a flood)"};
  int epochs = 3000;
  int datagrams = 20000;
  int seconds = 3;
  app.add_option("--epochs", epochs, "epochs per receiving-role figure")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--datagrams", datagrams, "datagrams per sending-role figure")
      ->check(CLI::Range(1, 10000000));
  app.add_option("--seconds", seconds, "seconds of each flood run")
      ->check(CLI::Range(1, 600));
  std::vector<int> senders = {1, 16, 128, 512, 1024};
  app.add_option("--senders", senders,
                 "numbers of local senders of the receiving-role figures")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  std::vector<uint16_t> leases = {wire::kDefaultLeaseEpochs, 3};
  app.add_option("--leases", leases, "leases, in epochs, of those figures")
      ->delimiter(',')
      ->check(CLI::Range(1, 65535));
  std::vector<std::string> known = {"reported", "in-table"};
  app.add_option("--parallel", known,
                 "how the receiving role knows of parallel traffic")
      ->delimiter(',')
      ->check(CLI::IsMember({"reported", "in-table"}));
  std::vector<std::string> parts = {"receiving", "sending", "flood"};
  app.add_option("--parts", parts, "which measurements to make")
      ->delimiter(',')
      ->check(CLI::IsMember({"receiving", "sending", "flood"}));
  if (const auto code =
          parq::parqd::ParseCli(app, argc, argv, std::cout, std::cerr))
    return *code;
  spdlog::set_level(spdlog::level::err);

  // SIGTERM goes to a signalfd, for RunDaemon: blocked before any thread.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  const int signal_fd = signalfd(-1, &set, SFD_CLOEXEC);

  const auto listed = [](const std::vector<std::string>& list,
                         const char* name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  if (listed(parts, "receiving"))
    for (bool reported : {true, false})
      for (int n : senders)
        if (listed(known, reported ? "reported" : "in-table"))
          for (uint16_t lease : leases)
            ReceivingRoleCost(n, lease, epochs, reported);
  if (listed(parts, "sending"))
    SendingRoleCost(datagrams);
  if (!listed(parts, "flood"))
    return 0;

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("parq-parqd-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    const std::string key = (dir / "cluster.key").string();
    std::ofstream(key) << std::string(64, 'a') << "\n";
    chmod(key.c_str(), 0600);
  }
  const bool ok = Flood(dir, seconds, false, signal_fd) &&
                  Flood(dir, seconds, true, signal_fd);
  std::filesystem::remove_all(dir);
  return ok ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parq-parqd-bench: %s\n", e.what());
    return 1;
  }
}
