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
  EXPECT_EQ(Decode(b), Sample());
}

TEST(Frame, DecodeRejectsGarbage) {
  uint8_t b[kHeaderSize];
  Encode(Sample(), b);
  b[0] = 'X';
  EXPECT_THROW(Decode(b), FrameError);

  Encode(Sample(), b);
  b[4] = 0;  // type 0
  EXPECT_THROW(Decode(b), FrameError);
  b[4] = 9;  // past End
  EXPECT_THROW(Decode(b), FrameError);

  Encode(Sample(31), b);  // shorter than its own header
  EXPECT_THROW(Decode(b), FrameError);
  Encode(Sample(kMaxTcpSize + 1), b);
  EXPECT_THROW(Decode(b), FrameError);
  Encode(Sample(kMaxUdpSize + 1), b);
  EXPECT_THROW(Decode(b, kMaxUdpSize), FrameError);
  EXPECT_NO_THROW(Decode(b, kMaxTcpSize));
}

TEST(FrameDecoder, WholeFramesInOneRead) {
  Header a = Sample(32), b = Sample(1000);
  b.seq = 7;
  auto wa = Wire(a), wb = Wire(b);
  std::vector<uint8_t> all(wa);
  all.insert(all.end(), wb.begin(), wb.end());
  FrameDecoder d;
  std::vector<Header> out;
  d.feed(all.data(), all.size(), out);
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
      d.feed(all.data() + off, n, out);
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
  d.feed(w.data(), 31, out);
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(d.at_boundary());
  d.feed(w.data() + 31, 1, out);
  ASSERT_EQ(out.size(), 1u);
}

TEST(FrameDecoder, GarbageInTheStreamThrows) {
  auto w = Wire(Sample(40));
  w.resize(w.size() + kHeaderSize, 0xff);  // a second "header" of 0xff
  FrameDecoder d;
  std::vector<Header> out;
  EXPECT_THROW(d.feed(w.data(), w.size(), out), FrameError);
  EXPECT_EQ(out.size(), 1u);  // the good frame before it was delivered
}
