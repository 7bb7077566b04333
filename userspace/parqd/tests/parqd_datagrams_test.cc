// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of datagrams.cc on a loopback UDP socket: order, the cap per
// call, an empty queue, a datagram longer than the buffer, errors, each
// datagram's destination address, and a credit message captured on its way
// to one address and replayed to another.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "proto/datagrams.h"
#include "proto/inbox.h"
#include "test_util.h"

namespace {

using parq::parqd::Address;
using parq::parqd::DatagramReader;
using parq::parqd::OutDatagram;
using parq::parqd::ReceiveDestinations;
using parq::parqd::SendBatch;
using parq::parqd::test::A;

class DatagramsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rx_ = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    tx_ = socket(AF_INET, SOCK_DGRAM, 0);
    ASSERT_GE(rx_, 0);
    ASSERT_GE(tx_, 0);
    int size = 4 << 20;
    setsockopt(rx_, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(rx_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    ASSERT_TRUE(ReceiveDestinations(rx_).ok());
    socklen_t len = sizeof(to_);
    ASSERT_EQ(getsockname(rx_, reinterpret_cast<sockaddr*>(&to_), &len), 0);
  }
  void TearDown() override {
    close(rx_);
    close(tx_);
  }

  void Send(const std::vector<uint8_t>& d) {
    ASSERT_EQ(sendto(tx_, d.data(), d.size(), 0,
                     reinterpret_cast<const sockaddr*>(&to_), sizeof(to_)),
              static_cast<ssize_t>(d.size()));
  }

  // Drains with `max`; the first byte of each datagram, in order.
  std::vector<uint8_t> Drain(size_t max) {
    std::vector<uint8_t> got;
    auto r = reader_.Drain(
        rx_, max,
        [&](std::span<const uint8_t> b, const sockaddr_storage& from,
            const std::optional<Address>& to) {
          EXPECT_EQ(from.ss_family, AF_INET);
          EXPECT_EQ(to, A("127.0.0.1"));
          got.push_back(b.empty() ? 0 : b[0]);
        });
    EXPECT_TRUE(r.ok());
    if (r.ok()) {
      EXPECT_EQ(r.value(), got.size());
    }
    return got;
  }

  int rx_ = -1;
  int tx_ = -1;
  sockaddr_in to_{};
  DatagramReader reader_;
};

TEST_F(DatagramsTest, ReadsInOrderAndStopsAtTheCap) {
  for (int i = 0; i < 300; i++)
    Send({static_cast<uint8_t>(i), 1, 2});
  const auto first = Drain(256);
  ASSERT_EQ(first.size(), 256u);
  for (size_t i = 0; i < first.size(); i++)
    EXPECT_EQ(first[i], static_cast<uint8_t>(i));
  const auto rest = Drain(256);
  ASSERT_EQ(rest.size(), 44u);
  EXPECT_EQ(rest.front(), static_cast<uint8_t>(256));
  EXPECT_TRUE(Drain(256).empty());
}

TEST_F(DatagramsTest, ACapBelowTheBatchIsHonoured) {
  for (int i = 0; i < 10; i++)
    Send({static_cast<uint8_t>(i)});
  EXPECT_EQ(Drain(3).size(), 3u);
  EXPECT_EQ(Drain(100).size(), 7u);
}

TEST_F(DatagramsTest, ALongDatagramArrivesCut) {
  Send(std::vector<uint8_t>(3000, 7));
  size_t len = 0;
  ASSERT_TRUE(
      reader_
          .Drain(rx_, 1,
                 [&](std::span<const uint8_t> b, const sockaddr_storage&,
                     const std::optional<Address>&) { len = b.size(); })
          .ok());
  EXPECT_EQ(len, DatagramReader::kMaxBytes);
}

// SendBatch: in order; one without an address is skipped, not the rest;
// so is one the kernel refuses (too long for UDP).
TEST_F(DatagramsTest, SendBatchSendsInOrderAndSkipsWhatFails) {
  const std::vector<uint8_t> a{1}, b{2}, c{3}, d{4};
  const std::vector<uint8_t> huge(70000, 5);
  std::vector<OutDatagram> out(5);
  for (auto& o : out) {
    std::memcpy(&o.to, &to_, sizeof(to_));
    o.to_len = sizeof(to_);
  }
  out[0].bytes = a;
  out[1].bytes = b;
  out[1].to_len = 0;
  out[2].bytes = huge;
  out[3].bytes = c;
  out[4].bytes = d;
  EXPECT_EQ(SendBatch(tx_, out),
            (std::vector<bool>{true, false, false, true, true}));
  EXPECT_EQ(Drain(10), (std::vector<uint8_t>{1, 3, 4}));
  EXPECT_EQ(SendBatch(-1, out),
            (std::vector<bool>{false, false, false, false, false}));
  EXPECT_TRUE(SendBatch(tx_, {}).empty());
}

TEST_F(DatagramsTest, AnErrorIsReturned) {
  auto r = reader_.Drain(-1, 10, [](auto, const auto&, const auto&) {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), EBADF);
}

// A socket bound to `any` (0.0.0.0 or ::) on a free port, with
// ReceiveDestinations() when `destinations`; its port.
int Listen(int family, bool destinations, uint16_t* port) {
  const int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto& sin = reinterpret_cast<sockaddr_in&>(ss);
    sin.sin_family = AF_INET;
    len = sizeof(sin);
  } else {
    const int zero = 0;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    auto& sin6 = reinterpret_cast<sockaddr_in6&>(ss);
    sin6.sin6_family = AF_INET6;
    len = sizeof(sin6);
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
      (destinations && !ReceiveDestinations(fd).ok()) ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    close(fd);
    return -1;
  }
  *port =
      ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in&>(ss).sin_port
                              : reinterpret_cast<sockaddr_in6&>(ss).sin6_port);
  return fd;
}

// Sends `d` to `to`:`port` from a new socket of `to`'s family.
void SendTo(const Address& to, uint16_t port, std::span<const uint8_t> d) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (to.family == parq::parqd::Family::kIPv4) {
    auto& sin = reinterpret_cast<sockaddr_in&>(ss);
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    std::memcpy(&sin.sin_addr, to.bytes.data(), 4);
    len = sizeof(sin);
  } else {
    auto& sin6 = reinterpret_cast<sockaddr_in6&>(ss);
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(port);
    std::memcpy(&sin6.sin6_addr, to.bytes.data(), 16);
    len = sizeof(sin6);
  }
  const int fd = socket(ss.ss_family, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(
      sendto(fd, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&ss), len),
      static_cast<ssize_t>(d.size()));
  close(fd);
}

// The destinations of the datagrams queued on `fd`, in order.
std::vector<std::optional<Address>> Destinations(int fd) {
  DatagramReader reader;
  std::vector<std::optional<Address>> out;
  EXPECT_TRUE(
      reader
          .Drain(fd, 100,
                 [&](auto, const sockaddr_storage&,
                     const std::optional<Address>& to) { out.push_back(to); })
          .ok());
  return out;
}

// The whole 127/8 is this host's: a socket bound to 0.0.0.0 hears each
// datagram with the address it was sent to; one bound to :: (dual-stack)
// hears an IPv4 datagram's as IPv4, not as ::ffff:127.0.0.3.
TEST(DatagramDestinations, EachDatagramComesWithItsDestination) {
  const std::vector<uint8_t> d{1, 2, 3};
  uint16_t port = 0;
  const int v4 = Listen(AF_INET, true, &port);
  ASSERT_GE(v4, 0);
  SendTo(A("127.0.0.2"), port, d);
  SendTo(A("127.0.0.3"), port, d);
  EXPECT_EQ(Destinations(v4), (std::vector<std::optional<Address>>{
                                  A("127.0.0.2"), A("127.0.0.3")}));
  close(v4);

  const int v6 = Listen(AF_INET6, true, &port);
  if (v6 < 0)
    GTEST_SKIP() << "no IPv6 on this host";
  SendTo(A("127.0.0.3"), port, d);
  SendTo(A("::1"), port, d);
  EXPECT_EQ(Destinations(v6),
            (std::vector<std::optional<Address>>{A("127.0.0.3"), A("::1")}));
  close(v6);
}

TEST(DatagramDestinations, NoneWithoutReceiveDestinations) {
  uint16_t port = 0;
  const int fd = Listen(AF_INET, false, &port);
  ASSERT_GE(fd, 0);
  SendTo(A("127.0.0.2"), port, std::vector<uint8_t>{1});
  EXPECT_EQ(Destinations(fd),
            (std::vector<std::optional<Address>>{std::nullopt}));
  close(fd);
}

// The daemon's receive path on a real socket, with one cluster key: peer 1
// (127.0.0.9) sent credit 0 to host B, 127.0.0.2.  An attacker sends the
// captured datagram to this host, C, at 127.0.0.3 (from any source: the
// inbox is told peer 1's address, as a spoofed source would say).  C
// drops it as bad_mac; the same bytes sent to B's address are accepted.
TEST(DatagramDestinations, AGrantReplayedToAnotherHostIsRefused) {
  using namespace parq::parqd;
  constexpr uint64_t kT0 = 1'800'000'000'000'000'000;
  const Address peer = A("127.0.0.9");
  const std::vector<uint8_t> grant = test::Bytes(
      test::Grant(1, kT0, 5, 0, {peer}), test::TestKey(), A("127.0.0.2"));
  uint16_t port = 0;
  const int fd = Listen(AF_INET, true, &port);
  ASSERT_GE(fd, 0);
  auto inbox = Inbox::Create(test::TestKeys(), {PeerConfig{1, {peer}}},
                             {500'000'000, kT0 - 10'000'000'000});
  ASSERT_TRUE(inbox.ok()) << inbox.error();
  std::vector<Outcome> outcomes;
  DatagramReader reader;
  auto receive = [&] {
    return reader.Drain(
        fd, 10,
        [&](std::span<const uint8_t> b, const sockaddr_storage&,
            const std::optional<Address>& to) {
          ASSERT_TRUE(to);
          outcomes.push_back(inbox.value().Receive(b, peer, *to, 1, kT0));
        });
  };
  SendTo(A("127.0.0.3"), port, grant);
  ASSERT_TRUE(receive().ok());
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_FALSE(outcomes[0].accepted);
  EXPECT_EQ(outcomes[0].reason, DropReason::kBadMac)
      << Name(outcomes[0].reason);
  EXPECT_EQ(inbox.value().counters().drop(DropReason::kBadMac), 1u);
  EXPECT_EQ(inbox.value().table().size(), 0u);

  SendTo(A("127.0.0.2"), port, grant);
  ASSERT_TRUE(receive().ok());
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_TRUE(outcomes[1].accepted);
  close(fd);
}

}  // namespace

namespace {

int IntOption(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof(v);
  EXPECT_EQ(getsockopt(fd, level, name, &v, &len), 0) << std::strerror(errno);
  return v;
}

// The DSCP reaches the wire: the receiver reads CS6 in the datagram's TOS.
TEST(MarkDscpTest, AnIPv4DatagramCarriesIt) {
  const int rx = socket(AF_INET, SOCK_DGRAM, 0);
  const int tx = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(rx, 0);
  ASSERT_GE(tx, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(rx, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t alen = sizeof(a);
  ASSERT_EQ(getsockname(rx, reinterpret_cast<sockaddr*>(&a), &alen), 0);
  const int one = 1;
  ASSERT_EQ(setsockopt(rx, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)), 0);
  ASSERT_TRUE(parq::parqd::MarkDscp(tx, 48).ok());
  EXPECT_EQ(IntOption(tx, IPPROTO_IP, IP_TOS), 48 << 2);
  const char byte = 1;
  ASSERT_EQ(sendto(tx, &byte, 1, 0, reinterpret_cast<sockaddr*>(&a), alen), 1);
  char buf[8];
  alignas(cmsghdr) char control[64];
  iovec iov{buf, sizeof(buf)};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  h.msg_control = control;
  h.msg_controllen = sizeof(control);
  ASSERT_EQ(recvmsg(rx, &h, 0), 1);
  int tos = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
      tos = *reinterpret_cast<const unsigned char*>(CMSG_DATA(c));
  EXPECT_EQ(tos, 48 << 2);
  close(rx);
  close(tx);
}

// An IPv6 socket (parqd's default, "::") marks both families.
TEST(MarkDscpTest, AnIPv6SocketMarksBothFamilies) {
  const int fd = socket(AF_INET6, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(parq::parqd::MarkDscp(fd, 46).ok());
  EXPECT_EQ(IntOption(fd, IPPROTO_IPV6, IPV6_TCLASS), 46 << 2);
  EXPECT_EQ(IntOption(fd, IPPROTO_IP, IP_TOS), 46 << 2);
  close(fd);
}

// Whether this process may set priority 7: CAP_NET_ADMIN (12) or
// CAP_NET_RAW (13) in its effective set.
bool MaySetControlPriority() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("CapEff:", 0) == 0) {
      const uint64_t caps = std::stoull(line.substr(7), nullptr, 16);
      return caps & ((uint64_t{1} << 12) | (uint64_t{1} << 13));
    }
  ADD_FAILURE() << "no CapEff in /proc/self/status";
  return false;
}

// Priority 7 needs the privilege: set with it, after the DSCP as parqd
// sets them (IP_TOS resets the priority); refused (EPERM) without, and
// the priority stays what the DSCP gave.
TEST(MarkControlPriorityTest, AfterTheDscpWithThePrivilegeRefusedWithout) {
  const int fd = socket(AF_INET6, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(parq::parqd::MarkDscp(fd, 48).ok());
  const auto r = parq::parqd::MarkControlPriority(fd);
  if (MaySetControlPriority()) {
    ASSERT_TRUE(r.ok()) << std::strerror(r.error());
    EXPECT_EQ(IntOption(fd, SOL_SOCKET, SO_PRIORITY), 7);
  } else {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error(), EPERM);
    EXPECT_EQ(IntOption(fd, SOL_SOCKET, SO_PRIORITY), 0);
  }
  close(fd);
}

}  // namespace
