// SPDX-License-Identifier: GPL-2.0
//
// Unit tests of datagrams.cc on a loopback UDP socket: order, the cap per
// call, an empty queue, a datagram longer than the buffer, errors.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "datagrams.h"

namespace {

using parq::parqd::DatagramReader;
using parq::parqd::OutDatagram;
using parq::parqd::SendBatch;

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
        [&](std::span<const uint8_t> b, const sockaddr_storage& from) {
          EXPECT_EQ(from.ss_family, AF_INET);
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
  ASSERT_TRUE(reader_
                  .Drain(rx_, 1,
                         [&](std::span<const uint8_t> b,
                             const sockaddr_storage&) { len = b.size(); })
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
  auto r = reader_.Drain(-1, 10, [](auto, const auto&) {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), EBADF);
}

}  // namespace
