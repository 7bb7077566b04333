// SPDX-License-Identifier: GPL-2.0
#include "net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "timing.h"

namespace parqbench {

namespace {

// Zeros for message payloads.
const uint8_t kZeros[65536] = {};

timespec ToTimespec(uint64_t ns) {
  timespec ts;
  ts.tv_sec = time_t(ns / 1000000000u);
  ts.tv_nsec = long(ns % 1000000000u);
  return ts;
}

}  // namespace

std::string ErrnoText(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0)
    ::close(fd_);
}

int Fd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

Result<Addr, std::string> ParseAddr(const std::string& text) {
  Addr a;
  a.text = text;
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() ||
        text[close + 1] != ':')
      return Err{"address '" + text + "': IPv6 is written [ADDR]:PORT"};
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos)
      return Err{"address '" + text +
                 "': no port; write ADDR:PORT, e.g. 10.0.0.2:5001"};
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  char* end = nullptr;
  errno = 0;
  unsigned long p = port.empty() ? 0 : std::strtoul(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || errno || p > 65535)
    return Err{"address '" + text + "': port '" + port +
               "' is not a number 0..65535"};
  auto* in4 = reinterpret_cast<sockaddr_in*>(&a.ss);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.ss);
  if (inet_pton(AF_INET, host.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(uint16_t(p));
    a.len = sizeof(*in4);
  } else if (inet_pton(AF_INET6, host.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(uint16_t(p));
    a.len = sizeof(*in6);
  } else {
    return Err{
        "address '" + text + "': '" + host +
        "' is not a numeric IPv4 or IPv6 address (names are not resolved)"};
  }
  return a;
}

std::string FormatAddr(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET) {
    auto* in4 = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in4->sin_addr, buf, sizeof(buf));
    return std::string(buf) + ":" + std::to_string(ntohs(in4->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
    return "[" + std::string(buf) +
           "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "?";
}

Result<std::monostate, std::string> ApplySockopts(int fd, int family,
                                                  const SockOpts& o, bool tcp) {
  int one = 1;
  if (tcp && o.nodelay &&
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
    return Err{ErrnoText("setsockopt(TCP_NODELAY)")};
  // TOS before SO_PRIORITY: setting IP_TOS also rewrites sk_priority.
  if (o.tos >= 0) {
    int tos = o.tos;
    int r = family == AF_INET6
                ? setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos))
                : setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
    if (r)
      return Err{ErrnoText("setsockopt(IP_TOS " + std::to_string(tos) + ")")};
  }
  if (o.priority >= 0) {
    int prio = int(o.priority);
    if (setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &prio, sizeof(prio)))
      return Err{ErrnoText("setsockopt(SO_PRIORITY " +
                           std::to_string(o.priority) +
                           ") (values above 6 need CAP_NET_ADMIN)")};
  }
  return std::monostate{};
}

Result<std::monostate, std::string> SetNonblocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
    return Err{ErrnoText("fcntl(O_NONBLOCK)")};
  return std::monostate{};
}

Result<uint16_t, std::string> LocalPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len))
    return Err{ErrnoText("getsockname")};
  if (ss.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

Result<Fd, std::string> TcpListen(const Addr& a, const SockOpts& o,
                                  int backlog) {
  Fd s(socket(a.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s)
    return Err{ErrnoText("socket")};
  int one = 1;
  setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  // Accepted sockets inherit these.
  if (auto r = ApplySockopts(s.get(), a.family(), o, true); !r.ok())
    return Err{r.error()};
  if (bind(s.get(), a.sa(), a.len))
    return Err{ErrnoText("bind " + a.text + " (TCP)")};
  if (listen(s.get(), backlog))
    return Err{ErrnoText("listen " + a.text)};
  return s;
}

Result<Fd, std::string> UdpBind(const Addr& a, const SockOpts& o) {
  Fd s(socket(a.family(), SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s)
    return Err{ErrnoText("socket")};
  if (auto r = ApplySockopts(s.get(), a.family(), o, false); !r.ok())
    return Err{r.error()};
  if (bind(s.get(), a.sa(), a.len))
    return Err{ErrnoText("bind " + a.text + " (UDP)")};
  return s;
}

Result<int, std::string> PollUntil(std::vector<pollfd>& fds,
                                   uint64_t deadline_ns) {
  for (;;) {
    uint64_t now = NowNs();
    timespec ts = ToTimespec(deadline_ns > now ? deadline_ns - now : 0);
    int r = ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (r >= 0)
      return r;
    if (errno != EINTR)
      return Err{ErrnoText("ppoll")};
    if (NowNs() >= deadline_ns)
      return 0;
  }
}

Result<Fd, std::string> TcpConnect(const Addr& a, const SockOpts& o,
                                   uint64_t deadline_ns) {
  for (;;) {
    Fd s(socket(a.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s)
      return Err{ErrnoText("socket")};
    if (auto r = ApplySockopts(s.get(), a.family(), o, true); !r.ok())
      return Err{r.error()};
    int err = 0;
    if (connect(s.get(), a.sa(), a.len) == 0) {
      return s;
    } else if (errno == EINPROGRESS) {
      std::vector<pollfd> p{{s.get(), POLLOUT, 0}};
      auto polled = PollUntil(p, deadline_ns);
      if (!polled.ok())
        return Err{polled.error()};
      if (polled.value() == 0)
        return Err{"connect " + a.text +
                   ": timed out; is parq-bench listening there?"};
      socklen_t len = sizeof(err);
      getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err == 0)
        return s;
    } else {
      err = errno;
    }
    bool retry = err == ECONNREFUSED || err == ECONNRESET || err == ETIMEDOUT;
    if (!retry || NowNs() + 50000000 >= deadline_ns)
      return Err{"connect " + a.text + ": " + std::strerror(err) +
                 (retry ? "; is parq-bench listening there? (--connect-timeout)"
                        : "")};
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// --- TcpConn ---------------------------------------------------------------

Result<std::unique_ptr<TcpConn>, std::string> TcpConn::Open(Fd fd) {
  if (auto r = SetNonblocking(fd.get()); !r.ok())
    return Err{r.error()};
  return std::unique_ptr<TcpConn>(new TcpConn(std::move(fd)));
}

Result<std::monostate, std::string> TcpConn::queue(const Header& h) {
  Pending p;
  Encode(h, p.hdr);
  p.size = h.size;
  p.off = 0;
  out_.push_back(p);
  if (auto w = flush_some(); !w.ok())
    return Err{w.error()};
  return std::monostate{};
}

Result<size_t, std::string> TcpConn::flush_some() {
  size_t total = 0;
  while (!out_.empty()) {
    Pending& p = out_.front();
    iovec iov[2];
    int n = 0;
    if (p.off < kHeaderSize)
      iov[n++] = {p.hdr + p.off, kHeaderSize - p.off};
    uint32_t zeros_done = p.off > kHeaderSize ? p.off - kHeaderSize : 0;
    uint32_t zeros_left = p.size - kHeaderSize - zeros_done;
    if (zeros_left > 0)
      iov[n++] = {const_cast<uint8_t*>(kZeros),
                  std::min<size_t>(zeros_left, sizeof(kZeros))};
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = size_t(n);
    ssize_t w = sendmsg(fd_.get(), &mh, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        break;
      return Err{ErrnoText("send")};
    }
    p.off += uint32_t(w);
    total += size_t(w);
    bytes_out_ += uint64_t(w);
    if (p.off == p.size)
      out_.pop_front();
  }
  return total;
}

Result<bool, std::string> TcpConn::read_some(std::vector<Header>& frames) {
  uint8_t buf[65536];
  for (;;) {
    ssize_t r = ::read(fd_.get(), buf, sizeof(buf));
    if (r > 0) {
      bytes_in_ += uint64_t(r);
      if (auto fed = dec_.feed(buf, size_t(r), frames); !fed.ok())
        return Err{fed.error()};
      if (size_t(r) < sizeof(buf))
        return true;
      continue;
    }
    if (r == 0)
      return false;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return true;
    if (errno == EINTR)
      continue;
    if (errno == ECONNRESET)
      return false;
    return Err{ErrnoText("read")};
  }
}

// --- TCP mesh --------------------------------------------------------------

namespace {

class TcpMesh : public Mesh {
 public:
  TcpMesh(std::vector<std::unique_ptr<TcpConn>> conns,
          std::vector<std::string> names, std::deque<Msg> early = {})
      : conns_(std::move(conns)),
        names_(std::move(names)),
        inbox_(std::move(early)),
        closed_(conns_.size()),
        progress_(NowNs()) {}

  Result<std::monostate, std::string> send(int to, const Header& h) override {
    if (to < 0 || size_t(to) >= conns_.size() || !conns_[size_t(to)])
      return Err{"no connection to rank " + std::to_string(to)};
    TcpConn& c = *conns_[size_t(to)];
    uint64_t before = c.bytes_out();
    if (auto q = c.queue(h); !q.ok())
      return Err{names_[size_t(to)] + ": " + q.error()};
    if (c.bytes_out() != before)
      progress_ = NowNs();
    return std::monostate{};
  }

  Result<bool, std::string> recv(Msg& m, uint64_t deadline_ns) override {
    for (;;) {
      if (!inbox_.empty()) {
        m = inbox_.front();
        inbox_.pop_front();
        return true;
      }
      auto stepped = step(deadline_ns);
      if (!stepped.ok())
        return Err{stepped.error()};
      if (!stepped.value())
        return false;
    }
  }

  Result<std::monostate, std::string> flush(uint64_t deadline_ns) override {
    for (;;) {
      bool pending = false;
      for (size_t i = 0; i < conns_.size(); i++)
        pending |= conns_[i] && !closed_[i] && conns_[i]->want_write();
      if (!pending)
        return std::monostate{};
      auto stepped = step(deadline_ns);
      if (!stepped.ok())
        return Err{stepped.error()};
      if (!stepped.value())
        return Err{std::string(
            "could not write all messages before the timeout; a peer does not "
            "read")};
    }
  }

  uint64_t last_progress_ns() const override { return progress_; }

 private:
  // One poll round; false on timeout.
  Result<bool, std::string> step(uint64_t deadline_ns) {
    std::vector<pollfd> fds;
    std::vector<size_t> rank;
    for (size_t i = 0; i < conns_.size(); i++) {
      if (!conns_[i] || closed_[i])
        continue;
      short ev = POLLIN;
      if (conns_[i]->want_write())
        ev |= POLLOUT;
      fds.push_back({conns_[i]->fd(), ev, 0});
      rank.push_back(i);
    }
    auto polled = PollUntil(fds, deadline_ns);
    if (!polled.ok())
      return Err{polled.error()};
    if (polled.value() == 0)
      return false;
    for (size_t k = 0; k < fds.size(); k++) {
      const size_t r = rank[k];
      if (auto moved = serve(r, fds[k].revents); !moved.ok())
        return Err{names_[r] + ": " + moved.error()};
    }
    return true;
  }

  // What poll reported for rank r's connection.
  Result<std::monostate, std::string> serve(size_t r, short revents) {
    TcpConn& c = *conns_[r];
    if (revents & POLLOUT) {
      auto w = c.flush_some();
      if (!w.ok())
        return Err{w.error()};
      if (w.value())
        progress_ = NowNs();
    }
    if (!(revents & (POLLIN | POLLHUP | POLLERR)))
      return std::monostate{};
    std::vector<Header> frames;
    uint64_t before = c.bytes_in();
    auto open = c.read_some(frames);
    if (!open.ok())
      return Err{open.error()};
    uint64_t rx = NowNs();
    if (c.bytes_in() != before)
      progress_ = rx;
    for (const Header& h : frames)
      inbox_.push_back({h, rx, false});
    if (!open.value()) {
      closed_[r] = true;
      Msg eof;
      eof.h.src = uint16_t(r);
      eof.rx_ns = rx;
      eof.eof = true;
      inbox_.push_back(eof);
    }
    return std::monostate{};
  }

  std::vector<std::unique_ptr<TcpConn>> conns_;
  std::vector<std::string> names_;
  std::deque<Msg> inbox_;
  std::vector<bool> closed_;
  uint64_t progress_;
};

class UdpMesh : public Mesh {
 public:
  UdpMesh(Fd fd, std::vector<Addr> addrs, uint32_t max_size)
      : fd_(std::move(fd)),
        addrs_(std::move(addrs)),
        buf_(max_size),
        progress_(NowNs()) {}

  Result<std::monostate, std::string> send(int to, const Header& h) override {
    if (to < 0 || size_t(to) >= addrs_.size())
      return Err{"no address for rank " + std::to_string(to)};
    if (h.size > buf_.size())
      return Err{std::string("datagram larger than the maximum")};
    std::fill(buf_.begin(), buf_.begin() + h.size, 0);
    Encode(h, buf_.data());
    const Addr& a = addrs_[size_t(to)];
    for (;;) {
      ssize_t w = sendto(fd_.get(), buf_.data(), h.size, 0, a.sa(), a.len);
      if (w >= 0)
        break;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        std::vector<pollfd> p{{fd_.get(), POLLOUT, 0}};
        if (auto polled = PollUntil(p, NowNs() + 1000000000); !polled.ok())
          return Err{polled.error()};
        continue;
      }
      if (errno == EINTR)
        continue;
      // ICMP errors of earlier datagrams (ECONNREFUSED) and a full
      // queue (ENOBUFS) lose this datagram: that is what UDP does.
      if (errno == ECONNREFUSED || errno == ENOBUFS || errno == EHOSTUNREACH ||
          errno == ENETUNREACH)
        break;
      return Err{ErrnoText("sendto " + a.text)};
    }
    progress_ = NowNs();
    return std::monostate{};
  }

  Result<bool, std::string> recv(Msg& m, uint64_t deadline_ns) override {
    for (;;) {
      ssize_t r = ::recv(fd_.get(), buf_.data(), buf_.size(), MSG_DONTWAIT);
      if (r >= 0) {
        m.rx_ns = NowNs();
        progress_ = m.rx_ns;
        if (size_t(r) < kHeaderSize) {
          malformed_++;
          continue;
        }
        auto h = Decode(buf_.data(), uint32_t(buf_.size()));
        if (!h.ok()) {
          malformed_++;
          continue;
        }
        m.h = h.value();
        if (m.h.size != uint32_t(r)) {
          malformed_++;
          continue;
        }
        return true;
      }
      if (errno == EINTR || errno == ECONNREFUSED)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        return Err{ErrnoText("recv")};
      std::vector<pollfd> p{{fd_.get(), POLLIN, 0}};
      auto polled = PollUntil(p, deadline_ns);
      if (!polled.ok())
        return Err{polled.error()};
      if (polled.value() == 0)
        return false;
    }
  }

  Result<std::monostate, std::string> flush(uint64_t) override {
    return std::monostate{};
  }
  uint64_t last_progress_ns() const override { return progress_; }
  uint64_t malformed() const override { return malformed_; }

 private:
  Fd fd_;
  std::vector<Addr> addrs_;
  std::vector<uint8_t> buf_;
  uint64_t progress_;
  uint64_t malformed_ = 0;
};

// Reads the Hello of a connection accepted by rank self; frames that came
// with it (the connecting rank may already have sent Ready) go to early.
Result<int, std::string> ReadHello(TcpConn& c, int self, size_t n,
                                   uint64_t deadline_ns,
                                   std::deque<Msg>& early) {
  std::vector<Header> frames;
  while (frames.empty()) {
    std::vector<pollfd> p{{c.fd(), POLLIN, 0}};
    auto polled = PollUntil(p, deadline_ns);
    if (!polled.ok())
      return Err{polled.error()};
    if (polled.value() == 0)
      return Err{std::string(
          "an accepted connection sent no hello before the connect timeout")};
    auto open = c.read_some(frames);
    if (!open.ok())
      return Err{open.error()};
    if (!open.value() && frames.empty())
      return Err{std::string("an accepted connection closed before its hello")};
  }
  const Header& h = frames.front();
  if (h.type != Type::kHello)
    return Err{
        std::string("an accepted connection did not begin with a hello")};
  const uint64_t rx = NowNs();
  for (size_t i = 1; i < frames.size(); i++)
    early.push_back({frames[i], rx, false});
  if (h.src <= self || h.src >= n)
    return Err{"hello from rank " + std::to_string(h.src) +
               ", expected one of " + std::to_string(self + 1) + ".." +
               std::to_string(n - 1) +
               "; do all ranks have the same --peers list?"};
  return int(h.src);
}

// A connection to addr, made until deadline_ns.
Result<std::unique_ptr<TcpConn>, std::string> Connect(const Addr& addr,
                                                      const SockOpts& o,
                                                      uint64_t deadline_ns) {
  auto fd = TcpConnect(addr, o, deadline_ns);
  if (!fd.ok())
    return Err{fd.error()};
  return TcpConn::Open(std::move(fd).value());
}

}  // namespace

Result<std::unique_ptr<Mesh>, std::string> MakeTcpMesh(
    const std::vector<Addr>& addrs, int self, const SockOpts& o,
    uint64_t deadline_ns, bool listen) {
  std::vector<std::unique_ptr<TcpConn>> conns;
  std::vector<std::string> names;
  if (!listen) {
    conns.resize(2);
    names = {addrs.at(0).text, "self"};
    auto conn = Connect(addrs.at(0), o, deadline_ns);
    if (!conn.ok())
      return Err{conn.error()};
    conns[0] = std::move(conn).value();
    return std::unique_ptr<Mesh>(
        std::make_unique<TcpMesh>(std::move(conns), std::move(names)));
  }
  const size_t n = addrs.size();
  conns.resize(n);
  for (size_t i = 0; i < n; i++)
    names.push_back("rank " + std::to_string(i) + " (" + addrs[i].text + ")");
  auto listening = TcpListen(addrs.at(size_t(self)), o, int(n) + 8);
  if (!listening.ok())
    return Err{listening.error()};
  const Fd ls = std::move(listening).value();
  std::deque<Msg> early;
  for (int r = 0; r < self; r++) {
    auto conn = Connect(addrs[size_t(r)], o, deadline_ns);
    if (!conn.ok())
      return Err{conn.error()};
    conns[size_t(r)] = std::move(conn).value();
    Header h;
    h.type = Type::kHello;
    h.src = uint16_t(self);
    if (auto q = conns[size_t(r)]->queue(h); !q.ok())
      return Err{q.error()};
  }
  for (size_t need = n - size_t(self) - 1; need > 0;) {
    std::vector<pollfd> p{{ls.get(), POLLIN, 0}};
    auto polled = PollUntil(p, deadline_ns);
    if (!polled.ok())
      return Err{polled.error()};
    if (polled.value() == 0)
      return Err{"rank " + std::to_string(self) + ": " + std::to_string(need) +
                 " higher rank(s) did not connect before the "
                 "connect timeout; are they all running?"};
    Fd c(accept4(ls.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!c) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      return Err{ErrnoText("accept")};
    }
    auto conn = TcpConn::Open(std::move(c));
    if (!conn.ok())
      return Err{conn.error()};
    auto r = ReadHello(*conn.value(), self, n, deadline_ns, early);
    if (!r.ok())
      return Err{r.error()};
    if (conns[size_t(r.value())])
      return Err{"two connections claim rank " + std::to_string(r.value())};
    conns[size_t(r.value())] = std::move(conn).value();
    need--;
  }
  return std::unique_ptr<Mesh>(std::make_unique<TcpMesh>(
      std::move(conns), std::move(names), std::move(early)));
}

Result<std::unique_ptr<Mesh>, std::string> MakeUdpMesh(
    const std::vector<Addr>& addrs, int self, const SockOpts& o, bool bind) {
  Fd s;
  if (bind) {
    auto bound = UdpBind(addrs.at(size_t(self)), o);
    if (!bound.ok())
      return Err{bound.error()};
    s = std::move(bound).value();
  } else {
    s = Fd(socket(addrs.at(0).family(), SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!s)
      return Err{ErrnoText("socket")};
    if (auto r = ApplySockopts(s.get(), addrs.at(0).family(), o, false);
        !r.ok())
      return Err{r.error()};
  }
  if (auto r = SetNonblocking(s.get()); !r.ok())
    return Err{r.error()};
  return std::unique_ptr<Mesh>(
      std::make_unique<UdpMesh>(std::move(s), addrs, kMaxUdpSize + 1));
}

}  // namespace parqbench
