// SPDX-License-Identifier: GPL-2.0
// The message header and the TCP frame reassembly.
#include <gtest/gtest.h>

#include <cstring>

#include "frame.h"

using namespace parqbench;

namespace {

Header Sample(uint32_t size = 100) {
  Header h;
  h.type = Type::kData;
  h.src = 0x1234;
  h.size = size;
  h.seq = 0x0102030405060708ull;
  h.ts_ns = 0xfedcba9876543210ull;
  return h;
}

// The header and size - 32 zero bytes.
std::vector<uint8_t> Wire(const Header& h) {
  std::vector<uint8_t> w(h.size, 0);
  Encode(h, w.data());
  return w;
}

}  // namespace

TEST(Frame, EncodeIsBigEndianAtDocumentedOffsets) {
  uint8_t b[kHeaderSize];
  Encode(Sample(), b);
  const uint8_t want[kHeaderSize] = {
      'P', 'Q', 'B',  '1',  1,    0,    0x12, 0x34, 0,    0,    0,
      100, 0,   0,    0,    0,    1,    2,    3,    4,    5,    6,
      7,   8,   0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,
  };
  EXPECT_EQ(0, std::memcmp(b, want, kHeaderSize));
  ASSERT_TRUE(Decode(b).ok());
  EXPECT_EQ(Decode(b).value(), Sample());
}

TEST(Frame, DecodeRejectsGarbage) {
  uint8_t b[kHeaderSize];
  Encode(Sample(), b);
  b[0] = 'X';
  EXPECT_FALSE(Decode(b).ok());

  Encode(Sample(), b);
  b[4] = 0;  // type 0
  EXPECT_FALSE(Decode(b).ok());
  b[4] = 9;  // past End
  EXPECT_FALSE(Decode(b).ok());

  Encode(Sample(31), b);  // shorter than its own header
  EXPECT_FALSE(Decode(b).ok());
  Encode(Sample(kMaxTcpSize + 1), b);
  EXPECT_FALSE(Decode(b).ok());
  Encode(Sample(kMaxUdpSize + 1), b);
  EXPECT_FALSE(Decode(b, kMaxUdpSize).ok());
  EXPECT_TRUE(Decode(b, kMaxTcpSize).ok());
}

TEST(FrameDecoder, WholeFramesInOneRead) {
  Header a = Sample(32), b = Sample(1000);
  b.seq = 7;
  auto wa = Wire(a), wb = Wire(b);
  std::vector<uint8_t> all(wa);
  all.insert(all.end(), wb.begin(), wb.end());
  FrameDecoder d;
  std::vector<Header> out;
  ASSERT_TRUE(d.feed(all.data(), all.size(), out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], a);
  EXPECT_EQ(out[1], b);
  EXPECT_TRUE(d.at_boundary());
}

TEST(FrameDecoder, EveryReadLengthGivesTheSameFrames) {
  // Three frames (header-only, small, larger than one read), fed in
  // chunks of every length from 1 to the whole: reads that end inside a
  // header, inside a payload and exactly on boundaries.
  std::vector<Header> want{Sample(32), Sample(33), Sample(5000)};
  want[1].seq = 1;
  want[2].type = Type::kBulk;
  std::vector<uint8_t> all;
  for (const auto& h : want) {
    auto w = Wire(h);
    all.insert(all.end(), w.begin(), w.end());
  }
  for (size_t chunk = 1; chunk <= all.size(); chunk += (chunk < 70 ? 1 : 97)) {
    FrameDecoder d;
    std::vector<Header> out;
    for (size_t off = 0; off < all.size(); off += chunk) {
      size_t n = std::min(chunk, all.size() - off);
      ASSERT_TRUE(d.feed(all.data() + off, n, out).ok());
      if (off + n < all.size()) {
        // The last frame is complete only with the last byte.
        EXPECT_LT(out.size(), want.size()) << chunk;
      }
    }
    ASSERT_EQ(out, want) << "chunk " << chunk;
    EXPECT_TRUE(d.at_boundary());
  }
}

TEST(FrameDecoder, PartialHeaderIsHeldBack) {
  auto w = Wire(Sample(32));
  FrameDecoder d;
  std::vector<Header> out;
  ASSERT_TRUE(d.feed(w.data(), 31, out).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(d.at_boundary());
  ASSERT_TRUE(d.feed(w.data() + 31, 1, out).ok());
  ASSERT_EQ(out.size(), 1u);
}

TEST(FrameDecoder, GarbageInTheStreamIsAnError) {
  auto w = Wire(Sample(40));
  w.resize(w.size() + kHeaderSize, 0xff);  // a second "header" of 0xff
  FrameDecoder d;
  std::vector<Header> out;
  const auto fed = d.feed(w.data(), w.size(), out);
  ASSERT_FALSE(fed.ok());
  EXPECT_NE(fed.error().find("bad magic"), std::string::npos) << fed.error();
  EXPECT_EQ(out.size(), 1u);  // the good frame before it was delivered
}
