// SPDX-License-Identifier: GPL-2.0
#include "frame.h"

#include <algorithm>
#include <cstring>

namespace parqbench {

namespace {

void put16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}

void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = uint8_t(v >> (24 - 8 * i));
}

void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = uint8_t(v >> (56 - 8 * i));
}

uint16_t get16(const uint8_t* p) {
  return uint16_t(p[0] << 8 | p[1]);
}

uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    v = v << 8 | p[i];
  return v;
}

uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | p[i];
  return v;
}

bool known_type(uint8_t t) {
  return t >= uint8_t(Type::Data) && t <= uint8_t(Type::End);
}

}  // namespace

const char* type_name(Type t) {
  switch (t) {
    case Type::Data:
      return "data";
    case Type::Ack:
      return "ack";
    case Type::Bulk:
      return "bulk";
    case Type::Ready:
      return "ready";
    case Type::Hello:
      return "hello";
    case Type::Start:
      return "start";
    case Type::Done:
      return "done";
    case Type::End:
      return "end";
  }
  return "unknown";
}

void encode(const Header& h, uint8_t out[kHeaderSize]) {
  put32(out, kMagic);
  out[4] = uint8_t(h.type);
  out[5] = 0;
  put16(out + 6, h.src);
  put32(out + 8, h.size);
  put32(out + 12, 0);
  put64(out + 16, h.seq);
  put64(out + 24, h.ts_ns);
}

Header decode(const uint8_t in[kHeaderSize], uint32_t max_size) {
  if (get32(in) != kMagic)
    throw FrameError(
        "not a parq-bench message (bad magic); is the peer a parq-bench of the "
        "same version?");
  if (!known_type(in[4]))
    throw FrameError("unknown message type " + std::to_string(in[4]));
  Header h;
  h.type = Type(in[4]);
  h.src = get16(in + 6);
  h.size = get32(in + 8);
  h.seq = get64(in + 16);
  h.ts_ns = get64(in + 24);
  if (h.size < kHeaderSize || h.size > max_size)
    throw FrameError("message size " + std::to_string(h.size) + " outside [" +
                     std::to_string(kHeaderSize) + ", " +
                     std::to_string(max_size) + "]");
  return h;
}

void FrameDecoder::feed(const uint8_t* p, size_t n, std::vector<Header>& out) {
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
    cur_ = decode(hdr_);
    skip_ = cur_.size - kHeaderSize;
    if (skip_ == 0)
      out.push_back(cur_);
  }
}

}  // namespace parqbench
