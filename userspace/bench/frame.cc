// SPDX-License-Identifier: GPL-2.0
#include "frame.h"

#include <algorithm>
#include <cstring>

namespace parqbench {

namespace {

void Put16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}

void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = uint8_t(v >> (24 - 8 * i));
}

void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = uint8_t(v >> (56 - 8 * i));
}

uint16_t Get16(const uint8_t* p) {
  return uint16_t(p[0] << 8 | p[1]);
}

uint32_t Get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    v = v << 8 | p[i];
  return v;
}

uint64_t Get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | p[i];
  return v;
}

bool KnownType(uint8_t t) {
  return t >= uint8_t(Type::kData) && t <= uint8_t(Type::kEnd);
}

}  // namespace

const char* TypeName(Type t) {
  switch (t) {
    case Type::kData:
      return "data";
    case Type::kAck:
      return "ack";
    case Type::kBulk:
      return "bulk";
    case Type::kReady:
      return "ready";
    case Type::kHello:
      return "hello";
    case Type::kStart:
      return "start";
    case Type::kDone:
      return "done";
    case Type::kEnd:
      return "end";
  }
  return "unknown";
}

void Encode(const Header& h, uint8_t out[kHeaderSize]) {
  Put32(out, kMagic);
  out[4] = uint8_t(h.type);
  out[5] = 0;
  Put16(out + 6, h.src);
  Put32(out + 8, h.size);
  Put32(out + 12, 0);
  Put64(out + 16, h.seq);
  Put64(out + 24, h.ts_ns);
}

Result<Header, std::string> Decode(const uint8_t in[kHeaderSize],
                                   uint32_t max_size) {
  if (Get32(in) != kMagic)
    return Err{std::string(
        "not a parq-bench message (bad magic); is the peer a parq-bench of the "
        "same version?")};
  if (!KnownType(in[4]))
    return Err{"unknown message type " + std::to_string(in[4])};
  Header h;
  h.type = Type(in[4]);
  h.src = Get16(in + 6);
  h.size = Get32(in + 8);
  h.seq = Get64(in + 16);
  h.ts_ns = Get64(in + 24);
  if (h.size < kHeaderSize || h.size > max_size)
    return Err{"message size " + std::to_string(h.size) + " outside [" +
               std::to_string(kHeaderSize) + ", " + std::to_string(max_size) +
               "]"};
  return h;
}

Result<std::monostate, std::string> FrameDecoder::feed(
    const uint8_t* p, size_t n, std::vector<Header>& out) {
  while (n > 0) {
    if (skip_ > 0) {
      size_t k = size_t(std::min<uint64_t>(skip_, n));
      skip_ -= k;
      p += k;
      n -= k;
      if (skip_ == 0)
        out.push_back(cur_);
      continue;
    }
    size_t k = std::min(n, size_t(kHeaderSize) - have_);
    std::memcpy(hdr_ + have_, p, k);
    have_ += k;
    p += k;
    n -= k;
    if (have_ < kHeaderSize)
      break;
    have_ = 0;
    auto h = Decode(hdr_);
    if (!h.ok())
      return Err{h.error()};
    cur_ = h.value();
    skip_ = cur_.size - kHeaderSize;
    if (skip_ == 0)
      out.push_back(cur_);
  }
  return std::monostate{};
}

}  // namespace parqbench
