// SPDX-License-Identifier: GPL-2.0
//
// One-to-one: open loop (--interval > 0) or ping-pong (--interval 0) against
// a Server, which answers every Data message with an Ack carrying its seq.
//
// Collectives: rank 0, the root, starts iteration k with a Start(k) to every
// other rank and ends it when the messages that complete the pattern have
// come back (barrier, many-to-one: a Data(k) from every rank; all-to-all: a
// Data(k) from every rank and a Done(k) from every rank).  All messages carry
// k, so a late UDP message of an abandoned iteration is recognised and
// ignored.  Before the first iteration every rank tells the root it is
// Ready; after the last the root sends End.
#include "roles.h"

#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <utility>

#include "timing.h"

namespace parqbench {

namespace {

constexpr uint64_t kMs = 1000000;
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

json CommonJson(const Config& c) {
  json j;
  j["tool"] = "parq-bench";
  j["format"] = 1;
  j["mode"] = "run";
  j["pattern"] = PatternName(c.pattern);
  j["transport"] = TransportName(c.transport);
  json peers = json::array();
  for (const auto& p : c.peers)
    peers.push_back(p.text);
  j["peers"] = peers;
  j["size"] = c.size;
  j["count"] = c.count;
  j["interval_us"] = c.interval_us;
  j["arrivals"] = c.exponential ? "exponential" : "constant";
  j["seed"] = c.seed;
  j["timeout_ms"] = c.effective_timeout_ms();
  return j;
}

Header Make(Type t, uint16_t src, uint32_t size, uint64_t seq,
            uint64_t ts = 0) {
  Header h;
  h.type = t;
  h.src = src;
  h.size = size;
  h.seq = seq;
  h.ts_ns = ts;
  return h;
}

Result<std::unique_ptr<Mesh>, std::string> MakeMesh(const Config& c,
                                                    bool one_to_one) {
  const uint64_t deadline = NowNs() + c.connect_timeout_ms * kMs;
  if (c.transport == Transport::kTcp) {
    if (one_to_one)
      return MakeTcpMesh({c.peers.at(0)}, 1, c.sock, deadline, false);
    return MakeTcpMesh(c.peers, c.rank, c.sock, deadline, true);
  }
  return MakeUdpMesh(c.peers, one_to_one ? 1 : c.rank, c.sock, !one_to_one);
}

}  // namespace

json SummaryJson(const Summary& s) {
  json j;
  j["count"] = s.count;
  if (s.count == 0) {
    for (const char* k : {"mean", "min", "p50", "p99", "p999", "max"})
      j[k] = nullptr;
    return j;
  }
  j["mean"] = s.mean;
  j["min"] = s.min;
  j["p50"] = s.p50;
  j["p99"] = s.p99;
  j["p999"] = s.p999;
  j["max"] = s.max;
  return j;
}

// --- server ----------------------------------------------------------------

Result<Server, std::string> Server::Open(const Config& c) {
  auto addr = ParseAddr(c.listen);
  if (!addr.ok())
    return Err{addr.error()};
  auto fd = c.transport == Transport::kTcp ? TcpListen(addr.value(), c.sock)
                                           : UdpBind(addr.value(), c.sock);
  if (!fd.ok())
    return Err{fd.error()};
  if (auto r = SetNonblocking(fd.value().get()); !r.ok())
    return Err{r.error()};
  return Server(c, std::move(addr).value(), std::move(fd).value());
}

Result<uint16_t, std::string> Server::port() const {
  return LocalPort(fd_.get());
}

Result<json, std::string> Server::run(const std::atomic<bool>& stop) {
  return c_.transport == Transport::kTcp ? run_tcp(stop) : run_udp(stop);
}

namespace {

// What poll reported for one client of the TCP server: Data is answered,
// Bulk counted, anything else an error (the caller then drops the client).
struct ServedCounts {
  uint64_t data = 0, bulk = 0, bytes = 0;
};

Result<std::monostate, std::string> ServeClient(TcpConn& conn, bool& closing,
                                                bool& drop, short rev,
                                                ServedCounts& n) {
  if (rev & POLLOUT)
    if (auto w = conn.flush_some(); !w.ok())
      return Err{w.error()};
  if (!closing && (rev & (POLLIN | POLLHUP | POLLERR))) {
    std::vector<Header> frames;
    uint64_t before = conn.bytes_in();
    auto open = conn.read_some(frames);
    if (!open.ok())
      return Err{open.error()};
    n.bytes += conn.bytes_in() - before;
    for (const Header& h : frames) {
      if (h.type == Type::kData) {
        n.data++;
        if (auto q =
                conn.queue(Make(Type::kAck, 0, kHeaderSize, h.seq, h.ts_ns));
            !q.ok())
          return Err{q.error()};
      } else if (h.type == Type::kBulk) {
        n.bulk++;
      } else {
        return Err{std::string("unexpected ") + TypeName(h.type) +
                   " message; collective ranks talk to each other, not to "
                   "serve"};
      }
    }
    closing = !open.value();
  } else if (closing && (rev & (POLLHUP | POLLERR))) {
    drop = true;
  }
  if (closing && !conn.want_write())
    drop = true;
  return std::monostate{};
}

}  // namespace

Result<json, std::string> Server::run_tcp(const std::atomic<bool>& stop) {
  struct Client {
    std::unique_ptr<TcpConn> conn;
    std::string name;
    bool closing = false;  // EOF seen, writing the rest
  };
  std::vector<Client> clients;
  uint64_t connections = 0, errors = 0;
  ServedCounts n;

  while (!stop.load()) {
    std::vector<pollfd> fds{{fd_.get(), POLLIN, 0}};
    for (auto& cl : clients)
      fds.push_back({cl.conn->fd(),
                     short((cl.closing ? 0 : POLLIN) |
                           (cl.conn->want_write() ? POLLOUT : 0)),
                     0});
    auto polled = PollUntil(fds, NowNs() + 100 * kMs);
    if (!polled.ok())
      return Err{polled.error()};
    if (polled.value() == 0)
      continue;
    for (size_t i = 0; i < clients.size(); i++) {
      Client& cl = clients[i];
      bool drop = false;
      auto served =
          ServeClient(*cl.conn, cl.closing, drop, fds[i + 1].revents, n);
      if (!served.ok()) {
        std::cerr << "parq-bench serve: " << cl.name << ": " << served.error()
                  << "; closing that connection\n";
        errors++;
        drop = true;
      }
      if (drop)
        cl.conn.reset();
    }
    std::erase_if(clients, [](const Client& cl) { return !cl.conn; });
    if (fds[0].revents & POLLIN) {
      sockaddr_storage ss{};
      socklen_t len = sizeof(ss);
      Fd c(accept4(fd_.get(), reinterpret_cast<sockaddr*>(&ss), &len,
                   SOCK_CLOEXEC));
      if (c) {
        connections++;
        auto conn = TcpConn::Open(std::move(c));
        if (!conn.ok())
          return Err{conn.error()};
        clients.push_back({std::move(conn).value(),
                           FormatAddr(reinterpret_cast<sockaddr*>(&ss)),
                           false});
      }
    }
  }

  json j;
  j["tool"] = "parq-bench";
  j["format"] = 1;
  j["mode"] = "serve";
  j["transport"] = "tcp";
  j["listen"] = c_.listen;
  j["connections"] = connections;
  j["data_messages"] = n.data;
  j["bulk_messages"] = n.bulk;
  j["bytes_received"] = n.bytes;
  j["errors"] = errors;
  return j;
}

Result<json, std::string> Server::run_udp(const std::atomic<bool>& stop) {
  std::vector<uint8_t> buf(kMaxUdpSize + 1);
  uint64_t data = 0, bytes = 0, malformed = 0;
  while (!stop.load()) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    ssize_t r = recvfrom(fd_.get(), buf.data(), buf.size(), MSG_DONTWAIT,
                         reinterpret_cast<sockaddr*>(&ss), &len);
    if (r < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return Err{ErrnoText("recvfrom")};
      std::vector<pollfd> p{{fd_.get(), POLLIN, 0}};
      if (auto polled = PollUntil(p, NowNs() + 100 * kMs); !polled.ok())
        return Err{polled.error()};
      continue;
    }
    bytes += uint64_t(r);
    if (size_t(r) < kHeaderSize) {
      malformed++;
      continue;
    }
    auto decoded = Decode(buf.data(), kMaxUdpSize);
    if (!decoded.ok() || decoded.value().size != size_t(r) ||
        decoded.value().type != Type::kData) {
      malformed++;
      continue;
    }
    const Header& h = decoded.value();
    data++;
    uint8_t ack[kHeaderSize];
    Encode(Make(Type::kAck, 0, kHeaderSize, h.seq, h.ts_ns), ack);
    // A reply that does not fit in the socket buffer is lost, as
    // UDP loses it anywhere else; the client counts it.
    sendto(fd_.get(), ack, sizeof(ack), MSG_DONTWAIT,
           reinterpret_cast<sockaddr*>(&ss), len);
  }
  json j;
  j["tool"] = "parq-bench";
  j["format"] = 1;
  j["mode"] = "serve";
  j["transport"] = "udp";
  j["listen"] = c_.listen;
  j["data_messages"] = data;
  j["bytes_received"] = bytes;
  j["malformed"] = malformed;
  return j;
}

// --- run -------------------------------------------------------------------

Result<json, std::string> RunPattern(const Config& c) {
  return c.pattern == Pattern::kOneToOne ? RunOneToOne(c) : RunCollective(c);
}

Result<json, std::string> RunOneToOne(const Config& c) {
  const bool udp = c.transport == Transport::kUdp;
  const bool closed_loop = c.interval_us == 0;
  const uint64_t timeout = c.effective_timeout_ms() * kMs;
  auto made = MakeMesh(c, true);
  if (!made.ok())
    return Err{made.error()};
  const std::unique_ptr<Mesh> mesh = std::move(made).value();
  Arrivals arrivals(c.interval_us * 1000, c.exponential, c.seed);

  enum : uint8_t { kOutstanding, kAnswered, kLost };
  std::vector<uint64_t> sent_at(c.count);
  std::vector<uint8_t> state(c.count, kOutstanding);
  std::vector<uint64_t> lat;
  lat.reserve(c.count);
  uint64_t next_seq = 0, oldest = 0, outstanding = 0, lost = 0, late = 0,
           unexpected = 0;
  uint64_t first = 0, last_event = 0;
  uint64_t next_send = NowNs();

  // UDP: messages whose reply is overdue become lost.
  auto expire = [&](uint64_t now) {
    while (oldest < next_seq && (state[oldest] != kOutstanding ||
                                 sent_at[oldest] + timeout <= now)) {
      if (state[oldest] == kOutstanding) {
        state[oldest] = kLost;
        lost++;
        outstanding--;
        last_event = sent_at[oldest] + timeout;
      }
      oldest++;
    }
  };

  for (;;) {
    uint64_t now = NowNs();
    if (next_seq < c.count &&
        (closed_loop ? outstanding == 0 : now >= next_send)) {
      uint64_t ts = NowNs();
      if (auto r = mesh->send(0, Make(Type::kData, 1, c.size, next_seq, ts));
          !r.ok())
        return Err{r.error()};
      sent_at[next_seq] = ts;
      if (next_seq == 0)
        first = ts;
      next_seq++;
      outstanding++;
      if (!closed_loop)
        next_send += arrivals.next_gap_ns();
      continue;
    }
    if (next_seq == c.count && outstanding == 0)
      break;
    uint64_t deadline = kNever;
    if (next_seq < c.count && !closed_loop)
      deadline = next_send;
    if (outstanding) {
      if (udp) {
        expire(now);
        if (outstanding)
          deadline = std::min(deadline, sent_at[oldest] + timeout);
      } else {
        deadline = std::min(deadline, mesh->last_progress_ns() + timeout);
      }
    }
    Msg m;
    auto got = mesh->recv(m, deadline);
    if (!got.ok())
      return Err{got.error()};
    if (got.value()) {
      if (m.eof)
        return Err{"the server " + c.peers[0].text +
                   " closed the connection during the run"};
      if (m.h.type != Type::kAck || m.h.seq >= next_seq) {
        unexpected++;
        continue;
      }
      uint64_t s = m.h.seq;
      if (state[s] != kOutstanding) {
        late++;  // answered after it was counted lost, or twice
        continue;
      }
      state[s] = kAnswered;
      outstanding--;
      lat.push_back(m.rx_ns - sent_at[s]);
      last_event = std::max(last_event, m.rx_ns);
      continue;
    }
    now = NowNs();
    if (udp)
      expire(now);
    else if (outstanding && now >= mesh->last_progress_ns() + timeout)
      return Err{
          "no data moved to or from the server " + c.peers[0].text + " for " +
          std::to_string(c.effective_timeout_ms()) + " ms with " +
          std::to_string(outstanding) +
          " replies outstanding (raise --timeout if the path is that slow)"};
  }

  json j = CommonJson(c);
  j["role"] = "client";
  j["sent"] = next_seq;
  j["received"] = lat.size();
  j["lost"] = lost;
  j["late"] = late;
  j["unexpected"] = unexpected + mesh->malformed();
  j["completion_ns"] = last_event >= first ? last_event - first : 0;
  // CLOCK_MONOTONIC, as bulk's progress samples: where the run falls in a
  // local job's stream (parq's experiments).
  j["start_ns"] = first;
  j["latency_of"] = "message round trip";
  Summary s = Summarize(lat);
  j["latency_ns"] = SummaryJson(s);
  return j;
}

namespace {

// The root of a collective: starts and times the iterations.
Result<json, std::string> CollectiveRoot(const Config& c, Mesh& mesh) {
  const bool udp = c.transport == Transport::kUdp;
  const size_t n = c.peers.size();
  const uint64_t timeout = c.effective_timeout_ms() * kMs;
  const Pattern pat = c.pattern;
  uint64_t stale = 0, unexpected = 0, sent = 0, received = 0, lost = 0;

  auto check_src = [&](const Msg& m) { return m.h.src >= 1 && m.h.src < n; };

  // Every rank ready.
  std::vector<uint8_t> ready(n);
  ready[0] = 1;
  size_t nready = 1;
  const uint64_t connect_deadline = NowNs() + c.connect_timeout_ms * kMs;
  while (nready < n) {
    Msg m;
    auto got = mesh.recv(m, connect_deadline);
    if (!got.ok())
      return Err{got.error()};
    if (!got.value()) {
      std::string missing;
      for (size_t r = 1; r < n; r++)
        if (!ready[r])
          missing += (missing.empty() ? "" : ", ") + std::to_string(r) + " (" +
                     c.peers[r].text + ")";
      return Err{"rank(s) " + missing + " not ready within --connect-timeout " +
                 std::to_string(c.connect_timeout_ms) +
                 " ms; are they running?"};
    }
    if (m.eof)
      return Err{"rank " + std::to_string(m.h.src) +
                 " closed its connection before the start"};
    if (m.h.type == Type::kReady && check_src(m) && !ready[m.h.src]) {
      ready[m.h.src] = 1;
      nready++;
    }
  }

  Arrivals arrivals(c.interval_us * 1000, c.exponential, c.seed);
  std::vector<uint64_t> iters;
  iters.reserve(c.count);
  std::vector<uint8_t> got_data(n), got_done(n);
  uint64_t first = 0, last_end = 0;
  uint64_t next_start = NowNs();

  for (uint64_t k = 0; k < c.count; k++) {
    // Wait for the scheduled start, reading (and ignoring) stragglers.
    for (Msg m; NowNs() < next_start;) {
      auto got = mesh.recv(m, next_start);
      if (!got.ok())
        return Err{got.error()};
      if (got.value()) {
        if (m.eof)
          return Err{"rank " + std::to_string(m.h.src) +
                     " closed its connection during the run"};
        stale++;
      }
    }
    std::fill(got_data.begin(), got_data.end(), 0);
    std::fill(got_done.begin(), got_done.end(), 0);
    size_t ndata = 0, ndone = 0;
    const uint64_t t0 = NowNs();
    if (k == 0)
      first = t0;
    const uint32_t start_size = pat == Pattern::kBarrier ? c.size : kHeaderSize;
    for (size_t r = 1; r < n; r++) {
      if (auto s = mesh.send(int(r), Make(Type::kStart, 0, start_size, k, t0));
          !s.ok())
        return Err{s.error()};
      sent++;
      if (pat == Pattern::kAllToAll) {
        if (auto s = mesh.send(int(r), Make(Type::kData, 0, c.size, k, t0));
            !s.ok())
          return Err{s.error()};
        sent++;
      }
    }
    auto complete = [&] {
      return ndata == n - 1 && (pat != Pattern::kAllToAll || ndone == n - 1);
    };
    uint64_t end = 0;
    while (!complete()) {
      uint64_t deadline =
          udp ? t0 + timeout : mesh.last_progress_ns() + timeout;
      Msg m;
      auto got = mesh.recv(m, deadline);
      if (!got.ok())
        return Err{got.error()};
      if (!got.value()) {
        if (udp)
          break;
        if (NowNs() < mesh.last_progress_ns() + timeout)
          continue;
        return Err{"iteration " + std::to_string(k) + ": no data moved for " +
                   std::to_string(c.effective_timeout_ms()) +
                   " ms (raise --timeout if the path is that slow)"};
      }
      if (m.eof)
        return Err{"rank " + std::to_string(m.h.src) + " (" +
                   c.peers[m.h.src].text +
                   ") closed its connection during the run"};
      if (!check_src(m)) {
        unexpected++;
        continue;
      }
      if (m.h.seq != k || m.h.type == Type::kReady) {
        stale++;
        continue;
      }
      if (m.h.type == Type::kData && !got_data[m.h.src]) {
        got_data[m.h.src] = 1;
        ndata++;
      } else if (m.h.type == Type::kDone && pat == Pattern::kAllToAll &&
                 !got_done[m.h.src]) {
        got_done[m.h.src] = 1;
        ndone++;
      } else {
        unexpected++;
        continue;
      }
      received++;
      end = m.rx_ns;
    }
    if (complete()) {
      iters.push_back(end - t0);
      last_end = end;
    } else {
      lost++;
      last_end = t0 + timeout;
    }
    next_start += arrivals.next_gap_ns();
  }

  // The end; TCP: wait until every rank has read it and closed.
  for (int rep = 0; rep < (udp ? 3 : 1); rep++)
    for (size_t r = 1; r < n; r++)
      if (auto s = mesh.send(int(r), Make(Type::kEnd, 0, kHeaderSize, c.count));
          !s.ok())
        return Err{s.error()};
  if (!udp) {
    const uint64_t deadline = NowNs() + timeout;
    if (auto f = mesh.flush(deadline); !f.ok())
      return Err{f.error()};
    size_t closed = 0;
    for (Msg m; closed < n - 1;) {
      auto got = mesh.recv(m, deadline);
      if (!got.ok())
        return Err{got.error()};
      if (!got.value())
        break;
      closed += m.eof;
    }
  }

  json j = CommonJson(c);
  j["role"] = "root";
  j["rank"] = c.rank;
  j["ranks"] = n;
  j["sent"] = sent;
  j["received"] = received;
  j["lost"] = lost;
  j["late"] = stale;
  j["unexpected"] = unexpected + mesh.malformed();
  j["completion_ns"] = last_end - first;
  j["start_ns"] = first;
  j["latency_of"] = "iteration";
  Summary s = Summarize(iters);
  j["latency_ns"] = SummaryJson(s);
  return j;
}

// Any other rank: answers the root's iterations until End.
Result<json, std::string> CollectiveMember(const Config& c, Mesh& mesh) {
  const bool udp = c.transport == Transport::kUdp;
  const size_t n = c.peers.size();
  const uint16_t self = uint16_t(c.rank);
  const uint64_t idle = uint64_t(c.idle_timeout_s) * 1000 * kMs;
  const Pattern pat = c.pattern;
  uint64_t sent = 0, received = 0, stale = 0, unexpected = 0;

  bool heard_root = false;
  uint64_t next_ready = NowNs(), last_heard = NowNs();
  if (!udp) {
    if (auto s = mesh.send(0, Make(Type::kReady, self, kHeaderSize, 0));
        !s.ok())
      return Err{s.error()};
    next_ready = kNever;
  }

  // The iteration this rank is in (all-to-all), and what it has done.
  bool in_iter = false, started = false, done = false;
  uint64_t cur = 0;
  std::vector<uint8_t> got(n);
  size_t ngot = 0;
  auto enter = [&](uint64_t k) {
    in_iter = true;
    cur = k;
    started = done = false;
    std::fill(got.begin(), got.end(), 0);
    ngot = 0;
  };
  auto maybe_done = [&]() -> Result<std::monostate, std::string> {
    if (started && !done && ngot == n - 1) {
      if (auto s = mesh.send(0, Make(Type::kDone, self, kHeaderSize, cur));
          !s.ok())
        return Err{s.error()};
      sent++;
      done = true;
    }
    return std::monostate{};
  };
  uint64_t last_start = kNever;  // barrier, many-to-one: last Start answered

  for (;;) {
    uint64_t now = NowNs();
    if (udp && !heard_root && now >= next_ready) {
      if (auto s = mesh.send(0, Make(Type::kReady, self, kHeaderSize, 0));
          !s.ok())
        return Err{s.error()};
      next_ready = now + 50 * kMs;
    }
    uint64_t deadline = std::min(next_ready, last_heard + idle);
    Msg m;
    auto heard = mesh.recv(m, deadline);
    if (!heard.ok())
      return Err{heard.error()};
    if (!heard.value()) {
      if (NowNs() >= last_heard + idle)
        return Err{std::string("rank ") + std::to_string(self) +
                   ": nothing from the root for --idle-timeout " +
                   std::to_string(c.idle_timeout_s) + " s; is rank 0 running?"};
      continue;
    }
    if (m.eof) {
      if (m.h.src == 0)
        return Err{"the root (" + c.peers[0].text +
                   ") closed its connection before the end"};
      continue;  // another rank is done
    }
    last_heard = m.rx_ns;
    const uint16_t src = m.h.src;
    if (src >= n || src == self) {
      unexpected++;
      continue;
    }
    const uint64_t k = m.h.seq;
    if (src == 0)
      heard_root = true;
    if (src == 0 && m.h.type == Type::kEnd)
      break;
    if (src == 0 && m.h.type == Type::kStart) {
      if (pat != Pattern::kAllToAll) {
        if (last_start != kNever && k <= last_start) {
          stale++;
          continue;
        }
        last_start = k;
        received++;
        if (auto s = mesh.send(0, Make(Type::kData, self, c.size, k)); !s.ok())
          return Err{s.error()};
        sent++;
        continue;
      }
      if (in_iter && k < cur) {
        stale++;
        continue;
      }
      if (!in_iter || k > cur)
        enter(k);
      if (started) {
        stale++;
        continue;
      }
      received++;
      started = true;
      for (size_t r = 0; r < n; r++) {
        if (r == self)
          continue;
        if (auto s = mesh.send(int(r), Make(Type::kData, self, c.size, k));
            !s.ok())
          return Err{s.error()};
        sent++;
      }
      if (auto d = maybe_done(); !d.ok())
        return Err{d.error()};
      continue;
    }
    if (m.h.type == Type::kData && pat == Pattern::kAllToAll) {
      if (in_iter && k < cur) {
        stale++;
        continue;
      }
      if (!in_iter || k > cur)
        enter(k);
      if (got[src]) {
        stale++;
        continue;
      }
      got[src] = 1;
      ngot++;
      received++;
      if (auto d = maybe_done(); !d.ok())
        return Err{d.error()};
      continue;
    }
    if (m.h.type == Type::kReady)
      continue;  // another rank's repeated hello
    unexpected++;
  }

  json j = CommonJson(c);
  // The root decides how many iterations and when; a member's own
  // --count, --interval, --exp and --seed are not used.
  for (const char* k : {"count", "interval_us", "arrivals", "seed"})
    j.erase(k);
  j["role"] = "member";
  j["rank"] = c.rank;
  j["ranks"] = n;
  j["sent"] = sent;
  j["received"] = received;
  j["lost"] = nullptr;
  j["late"] = stale;
  j["unexpected"] = unexpected + mesh.malformed();
  j["completion_ns"] = nullptr;
  j["latency_of"] = "iteration";
  j["latency_ns"] = nullptr;
  return j;
}

}  // namespace

Result<json, std::string> RunCollective(const Config& c) {
  auto mesh = MakeMesh(c, false);
  if (!mesh.ok())
    return Err{mesh.error()};
  return c.rank == 0 ? CollectiveRoot(c, *mesh.value())
                     : CollectiveMember(c, *mesh.value());
}

// --- bulk ------------------------------------------------------------------

namespace {

// Bytes the server has acknowledged: written, less what the socket still
// holds (unsent or unacknowledged).
Result<uint64_t, std::string> BytesAcked(const TcpConn& conn) {
  int queued = 0;
  if (ioctl(conn.fd(), SIOCOUTQ, &queued))
    return Err{ErrnoText("ioctl SIOCOUTQ")};
  return conn.bytes_out() - uint64_t(std::max(queued, 0));
}

}  // namespace

Result<json, std::string> RunBulk(const Config& c, const Progress& progress) {
  const uint64_t timeout = c.effective_timeout_ms() * kMs;
  SockOpts o = c.sock;
  o.nodelay = false;
  const uint64_t t0 = NowNs();
  auto fd = TcpConnect(c.to, o, t0 + c.connect_timeout_ms * kMs);
  if (!fd.ok())
    return Err{fd.error()};
  auto opened = TcpConn::Open(std::move(fd).value());
  if (!opened.ok())
    return Err{opened.error()};
  TcpConn& conn = *opened.value();
  const uint64_t start = NowNs();
  const uint64_t stop = start + uint64_t(c.seconds * 1e9);
  const uint64_t period = uint64_t(c.progress_ms) * kMs;
  uint64_t messages = 0, next_sample = start;

  // A sample when one is due; the time until the next bounds each wait,
  // so that a stream held back (no room in the socket) is sampled too.
  auto sample = [&]() -> Result<uint64_t, std::string> {
    if (!period || !progress)
      return stop;
    const uint64_t now = NowNs();
    if (now >= next_sample) {
      auto acked = BytesAcked(conn);
      if (!acked.ok())
        return Err{acked.error()};
      progress(json{{"t_ns", now}, {"bytes_acked", acked.value()}});
      next_sample = std::max(next_sample + period, now + 1);
    }
    return std::min(stop, next_sample);
  };

  auto wait = [&](short ev, uint64_t deadline) -> Result<short, std::string> {
    std::vector<pollfd> p{{conn.fd(), ev, 0}};
    auto polled = PollUntil(p, deadline);
    if (!polled.ok())
      return Err{polled.error()};
    if (polled.value() == 0)
      return short(0);
    return p[0].revents;
  };
  const std::string server_gone =
      "the server " + c.to.text + " closed the connection during the stream";

  while (NowNs() < stop) {
    const auto until = sample();
    if (!until.ok())
      return Err{until.error()};
    if (!conn.want_write()) {
      if (auto q = conn.queue(Make(Type::kBulk, 1, c.size, messages)); !q.ok())
        return Err{q.error()};
      messages++;
      continue;
    }
    const auto rev = wait(POLLOUT, until.value());
    if (!rev.ok())
      return Err{rev.error()};
    if (rev.value() & (POLLERR | POLLHUP))
      return Err{server_gone};
    if (rev.value() & POLLOUT)
      if (auto w = conn.flush_some(); !w.ok())
        return Err{w.error()};
  }
  // Finish the message in flight, then close our side and wait until the
  // server has read everything and closed its side.
  const uint64_t deadline = NowNs() + timeout;
  while (conn.want_write()) {
    const auto rev = wait(POLLOUT, deadline);
    if (!rev.ok())
      return Err{rev.error()};
    if (rev.value() == 0)
      return Err{"the server " + c.to.text +
                 " stopped reading (no progress for --timeout)"};
    if (rev.value() & (POLLERR | POLLHUP))
      return Err{server_gone};
    if (auto w = conn.flush_some(); !w.ok())
      return Err{w.error()};
  }
  if (shutdown(conn.fd(), SHUT_WR))
    return Err{ErrnoText("shutdown")};
  for (;;) {
    const auto rev = wait(POLLIN, deadline);
    if (!rev.ok())
      return Err{rev.error()};
    if (rev.value() == 0)
      return Err{"the server " + c.to.text +
                 " did not confirm the end of the stream within --timeout"};
    std::vector<Header> frames;
    const auto open = conn.read_some(frames);
    if (!open.ok())
      return Err{open.error()};
    if (!open.value())
      break;
  }
  const uint64_t end = NowNs();
  const double secs = double(end - start) / 1e9;

  json j;
  j["tool"] = "parq-bench";
  j["format"] = 1;
  j["mode"] = "bulk";
  j["transport"] = "tcp";
  j["to"] = c.to.text;
  j["size"] = c.size;
  j["seconds_requested"] = c.seconds;
  j["messages"] = messages;
  j["bytes"] = conn.bytes_out();
  j["seconds"] = secs;
  j["bytes_per_second"] = double(conn.bytes_out()) / secs;
  j["bits_per_second"] = 8.0 * double(conn.bytes_out()) / secs;
  return j;
}

}  // namespace parqbench
