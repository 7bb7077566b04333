// SPDX-License-Identifier: GPL-2.0
//
// Sockets for parq-bench: addresses, TCP connections that frame messages
// without ever blocking, and the Mesh, which carries messages between the
// ranks of one run (a full mesh of TCP connections, or one UDP socket).
// Every call that can fail returns a Result whose error names what failed.

#ifndef BENCH_NET_H
#define BENCH_NET_H

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "frame.h"

namespace parqbench {

struct Addr {
  sockaddr_storage ss{};
  socklen_t len = 0;
  std::string text;  // as given: "10.0.0.1:5000", "[fd00::1]:5000"

  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&ss); }
  int family() const { return ss.ss_family; }
};

// Parses ADDR:PORT (IPv4) or [ADDR]:PORT (IPv6), numeric only; the error
// names the bad text.
Result<Addr, std::string> ParseAddr(const std::string& text);
std::string FormatAddr(const sockaddr* sa);

// Marking of the sockets, so that a qdisc can classify the traffic:
// IP_TOS / IPV6_TCLASS (parq's dscp-parallel) and SO_PRIORITY (a tc classid).
struct SockOpts {
  int tos = -1;           // -1: leave alone
  int64_t priority = -1;  // -1: leave alone
  bool nodelay = true;    // TCP_NODELAY on message connections
};

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  int release();
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// "what: <strerror(errno)>", the error of a failed system call.
std::string ErrnoText(const std::string& what);

Result<std::monostate, std::string> ApplySockopts(int fd, int family,
                                                  const SockOpts& o, bool tcp);
Result<std::monostate, std::string> SetNonblocking(int fd);
Result<uint16_t, std::string> LocalPort(int fd);

Result<Fd, std::string> TcpListen(const Addr& a, const SockOpts& o,
                                  int backlog = 64);
Result<Fd, std::string> UdpBind(const Addr& a, const SockOpts& o);
// Connects, retrying refused connections (the peer may not listen yet)
// until deadline_ns; the error names the address and the reason.
Result<Fd, std::string> TcpConnect(const Addr& a, const SockOpts& o,
                                   uint64_t deadline_ns);

// ppoll until deadline_ns (CLOCK_MONOTONIC); returns poll's count.
Result<int, std::string> PollUntil(std::vector<pollfd>& fds,
                                   uint64_t deadline_ns);

// One TCP connection carrying framed messages.  Nonblocking: queue()
// never blocks, output is written as the socket takes it.
class TcpConn {
 public:
  // Makes fd nonblocking and wraps it.
  static Result<std::unique_ptr<TcpConn>, std::string> Open(Fd fd);
  int fd() const { return fd_.get(); }

  // Queues a message of h.size bytes (header, then zeros) and writes as
  // much as the socket takes at once.
  Result<std::monostate, std::string> queue(const Header& h);
  bool want_write() const { return !out_.empty(); }
  // Writes queued output; returns bytes written.
  Result<size_t, std::string> flush_some();
  // Reads what is there; appends complete frames.  Returns false at EOF
  // (or a reset: the peer is gone); an error on garbage.
  Result<bool, std::string> read_some(std::vector<Header>& frames);
  uint64_t bytes_in() const { return bytes_in_; }
  uint64_t bytes_out() const { return bytes_out_; }

 private:
  explicit TcpConn(Fd fd) : fd_(std::move(fd)) {}

  struct Pending {
    uint8_t hdr[kHeaderSize];
    uint32_t size;
    uint32_t off;
  };
  Fd fd_;
  FrameDecoder dec_;
  std::deque<Pending> out_;
  uint64_t bytes_in_ = 0, bytes_out_ = 0;
};

struct Msg {
  Header h;
  uint64_t rx_ns = 0;  // when the read that completed it returned
  bool eof = false;    // TCP: rank h.src closed its connection
};

// The messages of one run between ranks 0..n-1.
class Mesh {
 public:
  virtual ~Mesh() = default;
  virtual Result<std::monostate, std::string> send(int to, const Header& h) = 0;
  // Next message, waiting until deadline_ns; false when none came.
  // Queued output is written meanwhile.
  virtual Result<bool, std::string> recv(Msg& m, uint64_t deadline_ns) = 0;
  // Writes all queued output (TCP), waiting until deadline_ns at most; an
  // error when it could not.
  virtual Result<std::monostate, std::string> flush(uint64_t deadline_ns) = 0;
  // CLOCK_MONOTONIC time of the last byte moved (stall detection).
  virtual uint64_t last_progress_ns() const = 0;
  virtual uint64_t malformed() const { return 0; }
};

// TCP: rank i listens on addrs[i], connects to every lower rank (retrying
// until deadline_ns) and accepts every higher one; a Hello frame names the
// connecting rank.  One-to-one: pass listen = false and addrs = {server},
// self = 1; only the connection to rank 0 is made.
Result<std::unique_ptr<Mesh>, std::string> MakeTcpMesh(
    const std::vector<Addr>& addrs, int self, const SockOpts& o,
    uint64_t deadline_ns, bool listen = true);
// UDP: one socket bound to addrs[self] (or to an ephemeral port when
// bind == false); datagrams to addrs[to].  Rank = the header's src.  Any
// datagram up to kMaxUdpSize is received, whatever this rank sends.
Result<std::unique_ptr<Mesh>, std::string> MakeUdpMesh(
    const std::vector<Addr>& addrs, int self, const SockOpts& o,
    bool bind = true);

}  // namespace parqbench

#endif
